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
not compute (ModelArts' `moxing_wrapper` copies data). A call into a library that does not import
MindSpore (Python's own modules but those that run the caller's code, numpy, easydict, yaml,
moxing) starts nothing; a function or class of another file of the run (`get_config()` of
`src/config.py`, `Config(...)`) is read there, through ``definitions``, as one of the file's own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional, Union

from ms_migrate.analysis.names import FUNCTION_TYPES, NameResolver, dotted_name
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
# Libraries (by top-level package) that do not import MindSpore, so that no call into them can
# start its runtime: Python's modules that run no code of the caller's (not threading, pickle,
# importlib, functools), and what model zoos call before they set the device.
OTHER_LIBRARIES = frozenset(
    {
        "argparse", "ast", "base64", "calendar", "codecs", "collections", "configparser", "copy",
        "csv", "datetime", "distutils", "enum", "errno", "fnmatch", "getpass", "glob", "hashlib",
        "io", "json", "locale", "logging", "math", "numbers", "os", "pathlib", "platform",
        "pprint", "random", "re", "shlex", "shutil", "socket", "stat", "string", "struct",
        "subprocess", "sys", "tarfile", "tempfile", "textwrap", "time", "traceback", "typing",
        "urllib", "uuid", "warnings", "zipfile",
        "addict", "cv2", "easydict", "h5py", "matplotlib", "moxing", "numpy", "omegaconf",
        "pandas", "PIL", "psutil", "scipy", "sklearn", "toml", "tqdm", "yaml",
    }
)  # fmt: skip
# A class whose instances these bases make runs no code of its own but its methods'.
_PLAIN_BASES = frozenset({"object", "dict", "list", "Exception"})
# What calling a class runs of it.
_BUILDING = ("__new__", "__init__", "__post_init__")
Steps = list[tuple[ast.AST, str]]  # the (node, field) pairs from the module down to a statement
Definition = Union[ast.FunctionDef, ast.ClassDef]
# name, the file naming it (None: the file asked about) -> the file that defines it, its tree and
# text, and the definition; None where the run has no one such definition
Definitions = Callable[[str, Optional[Path]], Optional[tuple[Optional[Path], ast.Module, str, Definition]]]
_DEPTH = 3  # a function called by a function called by main(): enough to follow


class _Search:
    """One module's answers, with its top-level functions found once."""

    def __init__(
        self,
        tree: ast.Module,
        text: str,
        resolver: NameResolver,
        definitions: Optional[Definitions] = None,
        where: Optional[Path] = None,
        others: Optional[dict[Optional[Path], _Search]] = None,
    ) -> None:
        self.tree, self.text, self.resolver = tree, text, resolver
        self.definitions, self.where = definitions, where
        self.others: dict[Optional[Path], _Search] = {} if others is None else others  # by file
        self.others.setdefault(where, self)
        self.functions = {
            node.name: node for node in _top_level(tree.body) if isinstance(node, FUNCTION_TYPES)
        }
        self.classes = {node.name: node for node in _top_level(tree.body) if isinstance(node, ast.ClassDef)}
        self.from_imported = {  # what may be a function or class of another file of the run
            alias.asname or alias.name
            for node in _top_level(tree.body)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        self._safe: dict[int, bool] = {}  # by id of a definition
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
            return f"`{name}` is not called in this file, so another file may call it after one"
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
        if name in SAFE_CALLS or _builds_the_base(func):
            return True
        qualified = self.resolver.qualified_name(func)
        if qualified is not None and (builds(qualified) or qualified.partition(".")[0] in OTHER_LIBRARIES):
            return True
        return isinstance(func, ast.Name) and depth < _DEPTH and self._safe_definition(name, depth)

    def _safe_definition(self, name: str, depth: int) -> bool:
        """Whether calling ``name``, a function or class of this file or one it imports from
        another file of the run, may start no runtime."""
        search: _Search = self
        node: Optional[Definition] = self.functions.get(name) or self.classes.get(name)
        if node is None:
            if self.definitions is None or name not in self.from_imported:
                return False
            found = self.definitions(name, self.where)
            if found is None:
                return False
            where, tree, text, node = found
            if where not in self.others:
                _Search(tree, text, NameResolver.for_module(tree, text), self.definitions, where, self.others)
            search = self.others[where]
        return search._safe_node(node, depth)

    def _safe_node(self, node: Definition, depth: int) -> bool:
        if id(node) not in self._safe:
            self._safe[id(node)] = False  # recursion: not known safe while it is looked at
            self._safe[id(node)] = self._runs_safely(node, depth + 1)
        return self._safe[id(node)]

    def _runs_safely(self, node: Definition, depth: int) -> bool:
        if isinstance(node, ast.FunctionDef):
            return all(self._unsafe_call(item, depth) is None for item in node.body)
        # A class: its bases build nothing of their own, nothing but `dataclass` decorates it, and
        # what an instantiation runs of it (`__init__`, ...) may start nothing.
        if node.keywords or any(dotted_name(item) != "dataclass" for item in node.decorator_list):
            return False
        for base in node.bases:
            qualified = self.resolver.qualified_name(base) or ""
            if qualified.partition(".")[0] in OTHER_LIBRARIES:
                continue
            if not isinstance(base, ast.Name) or depth >= _DEPTH:
                return False
            if base.id not in _PLAIN_BASES and not self._safe_definition(base.id, depth):
                return False
        built = (item for item in node.body if isinstance(item, FUNCTION_TYPES) and item.name in _BUILDING)
        return all(self._runs_safely(item, depth) for item in built)  # type: ignore[arg-type]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def first_risk(
    tree: ast.Module,
    text: str,
    statement: ast.stmt,
    resolver: NameResolver,
    definitions: Optional[Definitions] = None,
) -> Optional[str]:
    """Why a MindSpore kernel may run before ``statement`` (a statement of ``tree``, parsed from
    ``text``, whose imports ``resolver`` knows); None when nothing may. ``definitions`` finds what
    a name the file imports from another file of the run is there; without it such a call may
    start the runtime."""
    found = _statement_at(tree, statement.lineno, statement)
    if found is None:
        return f"line {statement.lineno} was not found in its file"  # not seen: a bug of ours, said
    return _Search(tree, text, resolver, definitions).first_risk(found[0], statement)


def builds(qualified: str) -> bool:
    """Whether calling ``qualified`` only builds one of MindSpore's own objects
    (`mindspore.ops.Argmax`, `mindspore.nn.Dense`, a dataset), which starts no runtime (measured
    on 2.7-2.10). Not a Tensor: operators are not calls, and `Tensor(x) + 1` runs a kernel that
    only the call building the Tensor shows."""
    last = qualified.rpartition(".")[2]
    return qualified.startswith("mindspore.") and last[:1].isupper() and not last.endswith(_TENSORS)


_TENSORS = ("Tensor", "Parameter", "ParameterTuple")


def _executed(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what running it evaluates: not the bodies of the functions it defines."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(item))))


def _builds_the_base(func: ast.expr) -> bool:
    """`super()` or `super().__init__`: only a class's building runs these here, and the check of
    the class reads its bases' building too."""
    if isinstance(func, ast.Attribute) and func.attr in _BUILDING:
        func = func.value.func if isinstance(func.value, ast.Call) else func
    return isinstance(func, ast.Name) and func.id == "super"


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
