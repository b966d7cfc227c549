"""Test functions that take no inputs: run as written, and compared by what they compute.

A test suite builds its networks, inputs and grad calls inside the test (`def test_x():` with its
Cells defined in its body), so no harness can seed it: 96 converted sites of a public copy of
MindSpore's own tests could not run for that alone. pytest runs such a function as it is; so does
verify, where pytest would collect it (a module-level ``test*`` function whose parameters without
a default all get their values from ``pytest.mark.parametrize``, decorated with pytest's marks at
most), in both versions and both modes, once per case (the first ``MAX_CASES``).

What is compared, since a test returns nothing and often discards what it computes
(``net2(x, i)``): the function's return value, the value of each call whose result it discards
(in order), and the values the function's local names hold at its end, for the names both
versions bind. Only numbers are compared (Tensors, numpy arrays, Python numbers, and sequences
of them); any other value (a Cell, a grad function) counts as nothing. A run is `equal` only if
something was compared and, in PYNATIVE mode, the rewritten lines ran: a rewrite in a class the
test never uses is not proven by the test's numbers (GRAPH mode compiles a construct instead of
running it: ``Run.body``, the test's own lines that ran, lets the parent hold that row to the
PYNATIVE one, ``verifier.reconciled_rows``). The code's own ``set_context(mode=...)`` is left
out while it runs (see ``device_guard``): each row runs in its own mode.

``plan`` is pure (two function definitions in, what to compare out); the rest runs in the worker.
"""

from __future__ import annotations

import ast
import difflib
import sys
from dataclasses import dataclass
from types import CodeType, FrameType, ModuleType
from typing import Any, Callable, Optional, Union

RECORD = "__ms_migrate_record__"  # the name a discarded call's value is handed to
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, *_SCOPES)


@dataclass(frozen=True)
class Contained:
    """What to compare of a test function, and which lines of each version the rewrite changed
    (the first line of each simple statement it touched)."""

    compared_locals: tuple[str, ...]
    changed_before: tuple[int, ...]
    changed_after: tuple[int, ...]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _walk_scope(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s own scope: not those of the classes and functions it defines."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _bound_names(function: ast.FunctionDef) -> set[str]:
    nodes = _walk_scope(function)
    declared = {name for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    stored = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return stored - declared


def _changed_lines(texts: tuple[str, str], versions: list[ast.FunctionDef]) -> tuple[tuple[int, ...], ...]:
    """Per version, the first line of each simple statement of the function that the rewrite
    changed (a line event reports it when the statement runs)."""
    spans = [(node.lineno, node.end_lineno or node.lineno) for node in versions]
    lines = [text.splitlines()[start - 1 : end] for text, (start, end) in zip(texts, spans)]
    touched: list[set[int]] = [set(), set()]
    matcher = difflib.SequenceMatcher(None, lines[0], lines[1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            touched[0].update(range(spans[0][0] + i1, spans[0][0] + i2))
            touched[1].update(range(spans[1][0] + j1, spans[1][0] + j2))
    result = []
    for version, lines_touched in zip(versions, touched):
        firsts = {
            node.lineno
            for node in ast.walk(version)
            if isinstance(node, ast.stmt)
            and not isinstance(node, _COMPOUND)
            and node is not version
            and not lines_touched.isdisjoint(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        }
        result.append(tuple(sorted(firsts)))
    return tuple(result)


def _parametrized(decorator: ast.expr) -> list[str]:
    """The parameter names ``@pytest.mark.parametrize("a, b", [...])`` gives values for."""
    if not (isinstance(decorator, ast.Call) and _dotted(decorator.func) == "pytest.mark.parametrize"):
        return []
    names = decorator.args[0] if decorator.args else None
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        return [part.strip() for part in names.value.split(",") if part.strip()]
    if isinstance(names, (ast.List, ast.Tuple)):
        return [
            item.value
            for item in names.elts
            if isinstance(item, ast.Constant) and isinstance(item.value, str)
        ]
    return []


def is_test(name: str, function: ast.FunctionDef) -> bool:
    """A function pytest runs as it is: a ``test*`` function whose every parameter without a
    default gets its values from ``pytest.mark.parametrize`` (none at all, mostly)."""
    if not name.startswith("test"):
        return False
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    required = [arg.arg for arg in positional[: len(positional) - len(arguments.defaults)]]
    required += [
        arg.arg for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is None
    ]
    given = {name for decorator in function.decorator_list for name in _parametrized(decorator)}
    return not arguments.vararg and not arguments.kwarg and set(required) <= given


def plan(name: str, versions: list[ast.FunctionDef], texts: tuple[str, str]) -> Union[Contained, str]:
    """What to compare of a test function pytest runs as it is, or why it is not one to run."""
    if not name.startswith("test"):
        return "it takes no inputs to seed, and is not a test function that pytest runs as it is"
    for version in versions:
        if not is_test(name, version):
            return "it is a test function that takes inputs (a pytest fixture)"
        others = [_dotted(node) for node in version.decorator_list if not _dotted(node).startswith("pytest.")]
        if others:
            return f"it is a test function decorated with {others[0]}, which verify cannot run as pytest does"
    compared = sorted(_bound_names(versions[0]) & _bound_names(versions[-1]))
    before, after = _changed_lines(texts, [versions[0], versions[-1]])
    return Contained(tuple(compared), before, after)


# ---------------------------------------------------------------------------------------------
# In the worker


class _RecordDiscarded(ast.NodeTransformer):
    """`f(x)` as a statement (any expression) becomes `__ms_migrate_record__(f(x))`, in the
    function's own scope."""

    def visit_Expr(self, node: ast.Expr) -> ast.Expr:
        # Any value but a docstring's (a rewrite may leave `(ms.grad(net, 0)(x),)` where
        # `grad_all(net)(x)` was: the same value, in the tuple GradOperation returned).
        if not isinstance(node.value, (ast.Constant, ast.Yield, ast.YieldFrom, ast.Await)):
            record = ast.copy_location(ast.Name(RECORD, ast.Load()), node.value)
            node.value = ast.copy_location(ast.Call(record, [node.value], []), node.value)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node  # a nested function's statements are its own

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef  # type: ignore[assignment]


MAX_CASES = 4  # of a parametrized test's cases, the first ones: each runs the whole test


def recording_function(module: ModuleType, name: str) -> tuple[Callable[..., Any], list[dict[str, Any]]]:
    """``module``'s test function ``name``, compiled again from its file with each discarded
    call's value recorded and its pytest marks left out (lines and globals are the module's),
    and the arguments of each case its ``pytest.mark.parametrize`` marks make, as pytest does
    (one case, with none)."""
    path = module.__file__ or ""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    definition = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)
    cases: list[dict[str, Any]] = [{}]
    for decorator in reversed(definition.decorator_list):  # the innermost mark varies fastest
        names = _parametrized(decorator)
        if not names:
            continue
        assert isinstance(decorator, ast.Call)
        values = eval(  # the mark's own expression, as the import evaluated it
            compile(ast.Expression(decorator.args[1]), path, "eval"), vars(module)
        )
        rows = [dict(zip(names, value if len(names) > 1 else (value,))) for value in values]
        cases = [{**row, **case} for row in rows for case in cases][:MAX_CASES]
    definition.decorator_list = []
    definition.body = [_RecordDiscarded().visit(statement) for statement in definition.body]
    code = compile(ast.fix_missing_locations(ast.Module([definition], [])), path, "exec")
    namespace: dict[str, Any] = {}
    exec(code, vars(module), namespace)  # the user's own function, as the import ran it
    return namespace[name], cases


class Run:
    """One run of a test function: what it computed, and which lines of its file ran."""

    def __init__(self, function: Callable[..., Any], watched: tuple[int, ...]) -> None:
        self.function = function
        self.watched = set(watched)
        self.ran: set[int] = set()
        self.body: set[int] = set()  # the lines of the test function itself that ran
        self.discarded: list[Any] = []
        self.locals: dict[str, Any] = {}

    def _local(self, frame: FrameType, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        if event == "line":
            if frame.f_lineno in self.watched:
                self.ran.add(frame.f_lineno)
            if frame.f_code is self._code:
                self.body.add(frame.f_lineno)
        elif event == "return" and frame.f_code is self._code:
            self.locals = dict(frame.f_locals)
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        return self._local if frame.f_code.co_filename == self._code.co_filename else None

    def __call__(self, **arguments: Any) -> Any:
        self._code: CodeType = self.function.__code__
        self.discarded = []
        self.locals = {}
        self.function.__globals__[RECORD] = self.discarded.append
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            return self.function(**arguments)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except Exception:
            raise
        except BaseException as error:
            # pytest.fail, pytest.skip and a pytest.raises that saw nothing raise pytest's own
            # outcomes, which are not Exceptions: a failure of the test, not of the worker (one
            # had ended a worker, and every site it had left).
            raise RuntimeError(f"{type(error).__name__}: {error}") from error
        finally:
            sys.settrace(previous)


def numbers(value: Any) -> Any:
    """``value`` with everything but numbers left out (None in their place); numpy arrays as
    Tensors, as the harness compares them."""
    import numpy as np
    from mindspore import Tensor

    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor(value) if value.dtype.kind in "biuf" else None
    if isinstance(value, (bool, int, float, np.number)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(numbers(item) for item in value)
    return None


def has_numbers(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(has_numbers(item) for item in value)
    return value is not None
