"""Whether MindSpore may have run a kernel before a statement: what `mindspore.set_device` needs.

`set_device` raises once the runtime is initialised ("The runtime has been initialized, please
set it before the kernel is executed, or before calling 'mindspore.communication.init()'"),
where `set_context(device_target=..., device_id=...)` was accepted there: measured on 2.7, 2.8,
2.9 and 2.10 with `print(ms.Tensor([1.0, 2.0]) + 1)` before it. Building a network, a Parameter,
a dataset (and iterating it) or a Tensor does not start it. A program that ran a kernel and then
set the device ran before a rewrite to `set_device`, and stops after it (a ReID trainer set the
device in its `__init__` after building a model whose `__init__` computed with a Tensor).

Nothing short of running the program says whether a kernel runs first, so the answer here is
conservative: the statements that run before the one asked about, in its function (or the
module) and, for a module-level function, before each call of it in the file, must call only
what cannot start the runtime: argument parsing, environment and path helpers, logging, the
context setters, seeds, and the file's own functions made only of those. Anything else (a
dataset, a network, `init()`, a function of another module) may, and is named as the reason.
Imports and definitions are taken to run nothing, and a decorator of the function to prepare,
not compute (ModelArts' `moxing_wrapper` copies data).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Optional

from ms_migrate.analysis.names import FUNCTION_TYPES
from ms_migrate.diagnostics import line_of, line_starts

# Callables (by the last part of their name) that do not start MindSpore's runtime.
SAFE_CALLS = frozenset(
    {
        # arguments and configuration
        "ArgumentParser", "add_argument", "add_argument_group", "add_mutually_exclusive_group",
        "parse_args", "parse_known_args", "set_defaults", "safe_load", "loads", "dumps", "dump",
        # the environment, paths and files
        "getenv", "get", "setdefault", "environ", "exists", "isdir", "isfile", "makedirs", "mkdir",
        "basename", "dirname", "abspath", "realpath", "expanduser", "join", "listdir", "getcwd",
        "chdir", "system", "open", "read", "write", "close", "readlines", "Path", "cpu_count",
        "mkdtemp", "gettempdir",
        # values
        "int", "float", "str", "bool", "len", "list", "dict", "tuple", "set", "range", "enumerate",
        "zip", "map", "filter", "sorted", "min", "max", "abs", "round", "isinstance", "hasattr",
        "getattr", "setattr", "copy", "deepcopy", "format", "split", "rsplit", "splitext", "lower",
        "upper", "strip", "replace", "startswith", "endswith", "append", "extend", "update",
        "items", "keys", "values", "splitlines",
        # time, output, logging, warnings, exits
        "time", "now", "strftime", "perf_counter", "print", "getLogger", "basicConfig", "setLevel",
        "addHandler", "info", "warning", "warn", "debug", "error", "filterwarnings",
        "simplefilter", "exit", "Exception", "ValueError", "TypeError", "RuntimeError",
        "KeyError", "NotImplementedError", "AssertionError",
        # MindSpore's settings, which start nothing
        "set_context", "get_context", "set_auto_parallel_context", "reset_auto_parallel_context",
        "set_seed", "seed",
        # the model zoos' device helpers: each reads an environment variable
        "get_device_id", "get_device_num", "get_rank_id", "get_job_id",
        # ModelArts' file copies (moxing), and other libraries' settings
        "copy_parallel", "list_directory", "make_dirs", "localtime", "namedtuple",
        "setUseOpenCL", "setNumThreads",
    }
)  # fmt: skip
Steps = list[tuple[ast.AST, str]]  # the (node, field) pairs from the module down to a statement
_DEPTH = 3  # a function called by a function called by main(): enough to follow


class _Search:
    """One module's answers, with its top-level functions found once."""

    def __init__(self, tree: ast.Module, text: str, builds: Callable[[ast.expr], bool]) -> None:
        self.tree, self.text, self.builds = tree, text, builds
        self.functions = {
            node.name: node for node in _top_level(tree.body) if isinstance(node, FUNCTION_TYPES)
        }
        self._safe_functions: dict[str, bool] = {}
        self._line_starts: Optional[list[int]] = None

    def first_risk(self, path: Steps, statement: ast.AST, depth: int = 0) -> Optional[str]:
        """Why a kernel may run before ``statement``, reached by ``path`` ((node, field) pairs
        from the module down): in its function, and before the function's calls in the file."""
        chain = [node for node, _ in path] + [statement]
        scope = max((index for index, (node, _) in enumerate(path) if isinstance(node, _SCOPES)), default=0)
        for index in range(scope, len(path)):
            node, field = path[index]
            for earlier in _run_before(node, field, chain[index + 1]):
                call = self._unsafe_call(earlier, depth)
                if call is not None:
                    return f"line {call.lineno} calls `{_shown(call.func)}` before it"
        function = path[scope][0]
        if isinstance(function, ast.Module):
            return None
        name = getattr(function, "name", "lambda")
        if not isinstance(function, FUNCTION_TYPES) or self.functions.get(function.name) is not function:
            return f"it is in `{name}`, which is not a module-level function"
        if depth >= _DEPTH:
            return f"`{name}` is called too many calls deep to follow"
        calls = list(self._calls_of(function.name))
        if not calls:
            return f"`{name}` is called from another file"
        for call_path, call_statement in calls:
            found = self.first_risk(call_path, call_statement, depth + 1)
            if found is not None:
                return found
        return None

    def _calls_of(self, name: str) -> Iterator[tuple[Steps, ast.stmt]]:
        """The statements of the module that call ``name``, with their paths."""
        if self._line_starts is None:  # `\r\n`, `\r` and `\n` each end a line, as ast counts
            self._line_starts = line_starts(self.text)
        found = _called(name).finditer(self.text)
        lines = sorted({line_of(self._line_starts, match.start()) for match in found})
        for line in lines:
            found = _statement_at(self.tree, line)
            if found is not None and any(
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
                for node in _executed(found[1])
            ):
                yield found

    def _unsafe_call(self, node: ast.AST, depth: int) -> Optional[ast.Call]:
        """The first call running ``node`` (a statement or an expression) makes that may start
        MindSpore's runtime; None if none may."""
        for item in _executed(node):
            if isinstance(item, ast.Call) and not self._safe_call(item, depth):
                return item
        return None

    def _safe_call(self, call: ast.Call, depth: int) -> bool:
        func = call.func
        name = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        )
        if name is None:
            return False
        if name in SAFE_CALLS or self.builds(func):
            return True
        function = self.functions.get(name) if isinstance(func, ast.Name) else None
        if function is None or depth >= _DEPTH:
            return False
        if name not in self._safe_functions:
            self._safe_functions[name] = False  # recursion: not known safe while it is looked at
            unsafe = (self._unsafe_call(item, depth + 1) for item in function.body)
            self._safe_functions[name] = all(item is None for item in unsafe)
        return self._safe_functions[name]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def first_risk(
    tree: ast.Module, text: str, statement: ast.stmt, builds: Callable[[ast.expr], bool]
) -> Optional[str]:
    """Why a MindSpore kernel may run before ``statement`` (a statement of ``tree``, parsed from
    ``text``); None when nothing may. ``builds(callee)``: whether a call of it only builds one of
    MindSpore's own objects (`ops.Argmax(axis=1)`, `nn.Dense(2, 3)`, a dataset), which starts no
    runtime (measured on 2.7-2.10). It must not answer yes for a Tensor: operators are not
    calls, and `Tensor(x) + 1` runs a kernel that only the call building the Tensor shows."""
    found = _statement_at(tree, statement.lineno, statement)
    if found is None:
        return f"line {statement.lineno} was not found in its file"  # not seen: a bug of ours, said
    return _Search(tree, text, builds).first_risk(found[0], statement)


def _executed(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what running it evaluates: not the bodies of the functions it defines."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(item))))


def _shown(func: ast.expr) -> str:
    text = ast.unparse(func)
    return text if len(text) <= 40 else text[:37] + "..."


def _run_before(node: ast.AST, field: str, child: ast.AST) -> list[ast.AST]:
    """What ``node`` runs before reaching ``child`` in its ``field``: the statements before it in
    that block, and the headers and blocks that run first (an `if`'s test, a `try`'s body)."""
    value = getattr(node, field)
    before: list[ast.AST] = []
    if isinstance(node, (ast.If, ast.While)):
        before.append(node.test)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        before.append(node.iter)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        before += [item.context_expr for item in node.items]
    elif isinstance(node, ast.Match):
        before.append(node.subject)
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and field == "orelse":
        before += node.body
    if isinstance(node, ast.Try) and field != "body":
        before += node.body
        if field == "finalbody":
            before += [*node.handlers, *node.orelse]
    if isinstance(value, list):
        before += value[: next(index for index, item in enumerate(value) if item is child)]
    return before


def _top_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements, and those of its top-level `if`, `try` and `with` blocks."""
    for statement in statements:
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(statement, field, []))


def _statement_at(
    tree: ast.Module, line: int, wanted: Optional[ast.stmt] = None
) -> Optional[tuple[Steps, ast.stmt]]:
    """The innermost statement spanning ``line`` (or ``wanted``, on the way to it), and its path
    of (node, field) pairs from the module."""
    path: Steps = []
    node: ast.AST = tree
    while node is not wanted:
        inner = None
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                spanning = (
                    item for item in block if item is wanted or item.lineno <= line <= _last_line(item)
                )
                inner = next((item for item in block if item is wanted), None) or next(spanning, None)
                if inner is not None:
                    break
        if inner is None:
            return (path, node) if wanted is None and isinstance(node, ast.stmt) else None
        path.append((node, field))
        node = inner
    return path, node  # type: ignore[return-value]


def _last_line(node: ast.AST) -> int:
    return getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]


def _called(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(name)}\s*\(")
