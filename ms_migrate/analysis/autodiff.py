"""What one file's `ast` shows about its autodiff calls, for the lint rules that read them.

A *grad site* is a place where a function is handed to the autodiff API: `grad(fn, ...)`,
`value_and_grad(fn, ...)` (through `mindspore`, `mindspore.ops` or `ops.functional`, under any
import alias) or a GradOperation applied to it, `GradOperation(...)(fn, ...)`, inline or through a
name or a `self.x` the op was bound to. For a site this module answers: which options were given,
which function of the same file it differentiates (a `def`, a lambda, a method, or a Cell class's
`construct`), what that function returns and which parameters it reads, and where the gradient
function it builds is called.

Every answer is conservative: None (or an empty list) unless the file shows it. A name bound more
than once, a class from another file, a decorator that may change the function: all "unknown".
Only ``ast`` is used (no libcst), and names resolve through ``FileContext.qualified_name``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Optional, Union

from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.context import FileContext

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

_FUNCTIONAL_MODULES = (
    "mindspore",
    "mindspore.ops",
    "mindspore.ops.functional",
    "mindspore.ops.function",
    "mindspore.ops.function.grad",
    "mindspore.ops.function.grad.grad_func",
)
GRAD_FUNCTIONS = {
    f"{module}.{name}": name for module in _FUNCTIONAL_MODULES for name in ("grad", "value_and_grad")
}
GRAD_OPERATION = frozenset(
    {
        "mindspore.ops.GradOperation",
        "mindspore.ops.composite.GradOperation",
        "mindspore.ops.composite.base.GradOperation",
    }
)
# Parameters after `fn`, in order, and their defaults.
FUNCTIONAL_PARAMETERS = ("grad_position", "weights", "has_aux", "return_ids", "sens_param")
FUNCTIONAL_DEFAULTS = {"grad_position": 0, "weights": None, "has_aux": False, "sens_param": False}
GRAD_OPERATION_PARAMETERS = ("get_all", "get_by_list", "sens_param")
# The bytes a file with a grad site holds, for a lint rule's prefilter: `grad(` and
# `value_and_grad(`, a GradOperation, and `grad as g` for an aliased import.
GRAD_SITE_TOKENS = ("grad(", "GradOperation", "grad as")
# Inputs that hold the labels by their name; `y` is as often a second variable (`f(x, y) = x * y`)
# as a label: it counts as the labels only where the function hands it to a loss.
LABEL_NAMES = frozenset({"label", "labels", "target", "targets", "gt"})
AMBIGUOUS_LABEL_NAMES = frozenset({"y"})
# Ops that take integer indices: their name lower-case without underscores, and the position
# of the indices among their arguments (`ops.gather(params, indices, axis)`).
INDEX_OPS = {"onehot": 0, "gather": 1, "gatherd": 2, "gathernd": 1, "embeddinglookup": 1, "sparsegatherv2": 1}
INDEX_KEYWORDS = frozenset({"indices", "index"})

STOP_GRADIENT = frozenset(
    {f"{module}.stop_gradient" for module in _FUNCTIONAL_MODULES[1:]}
    | {"mindspore.ops.composite.stop_gradient"}
)
STOP_GRADIENT_PRIMITIVE = frozenset({"mindspore.ops.StopGradient", "mindspore.ops.operations.StopGradient"})
SET_CONTEXT = frozenset({"mindspore.set_context", "mindspore.context.set_context"})
GRAPH_MODE = frozenset({"mindspore.GRAPH_MODE", "mindspore.context.GRAPH_MODE"})
PYNATIVE_MODE = frozenset({"mindspore.PYNATIVE_MODE", "mindspore.context.PYNATIVE_MODE"})
JIT = frozenset(
    {
        "mindspore.jit",
        "mindspore.common.api.jit",
        "mindspore.ms_function",
        "mindspore.common.api.ms_function",
    }
)
CELL = frozenset({"mindspore.nn.Cell", "mindspore.nn.cell.Cell"})
PARAMETER_TUPLE = frozenset({"mindspore.ParameterTuple", "mindspore.common.parameter.ParameterTuple"})

UNKNOWN = object()  # a literal option whose value the file does not show
_SHARED = "_autodiff_file"


# --- walking ---------------------------------------------------------------------------------


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """Nodes of ``scope`` outside the functions, lambdas and classes nested in it."""
    stack = list(child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(child_nodes(node))


def _body(scope: Scope) -> list[ast.AST]:
    if isinstance(scope, ast.Lambda):
        return [scope.args, scope.body]
    return list(scope.body)


def _own_statements(scope: Scope) -> Iterator[ast.AST]:
    """The nodes of ``scope``'s body (not its decorators or defaults), outside nested scopes."""
    for node in _body(scope):
        yield node
        if not isinstance(node, SCOPES):
            yield from own_nodes(node)


def _is_self(node: ast.AST, method: Optional[Function]) -> bool:
    """``node`` is the first parameter of ``method`` (``self``)."""
    if method is None or isinstance(method, ast.Lambda) or not isinstance(node, ast.Name):
        return False
    positional = [*method.args.posonlyargs, *method.args.args]
    return bool(positional) and node.id == positional[0].arg


def literal(node: Optional[ast.AST], default: object = None) -> object:
    """The Python value of a literal argument, ``default`` when absent, UNKNOWN otherwise."""
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def _positional(function: Function) -> list[str]:
    return [arg.arg for arg in [*function.args.posonlyargs, *function.args.args]]


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Differentiated:
    """The same-file function a site differentiates."""

    function: Function
    name: str  # for messages: `forward_fn`, `Net.construct`, `lambda`
    params: tuple[str, ...]  # the inputs, in order (a method's `self` dropped)
    varargs: bool
    cell: bool  # a Cell's construct

    def reads(self, name: str) -> bool:
        """Whether the body may read ``name`` (a nested function's read counts too)."""
        body = _body(self.function)
        for root in body:
            for node in walk(root):
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                    return True
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in {"locals", "vars", "eval", "exec"}
                ):
                    return True
        return False

    def given_to_loss(self, name: str) -> bool:
        """Whether the body passes ``name`` straight to a call whose callee is named like a loss
        (`loss_fn(logits, y)`, `self.criterion(out, y)`, `ops.cross_entropy(logits, y)`)."""
        for call in self._calls_passing(name):
            if any(word in _callee(call).lower() for word in ("loss", "criterion", "cross_entropy")):
                return True
        return False

    def is_labels(self, name: str) -> bool:
        """Whether input ``name`` holds the labels: named so (`label(s)`, `target(s)`, `gt`), or
        `y` handed to a loss."""
        return name in LABEL_NAMES or (name in AMBIGUOUS_LABEL_NAMES and self.given_to_loss(name))

    def integer_use(self, name: str) -> Optional[str]:
        """How the body shows input ``name`` to be integers, if it does: `an index` where it
        indexes with it (`table[name]`), the indices of a one-hot or gather op it hands it to."""
        for root in _body(self.function):
            for node in walk(root):
                if isinstance(node, ast.Subscript):
                    index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                    if any(isinstance(item, ast.Name) and item.id == name for item in index):
                        return "an index"
        for call in self._calls_passing(name):
            callee = _callee(call)
            position = INDEX_OPS.get(callee.lower().replace("_", ""))
            if position is None:
                continue
            given = [*call.args[position : position + 1]]
            given += [keyword.value for keyword in call.keywords if keyword.arg in INDEX_KEYWORDS]
            if any(isinstance(item, ast.Name) and item.id == name for item in given):
                return f"the indices of `{callee}`"
        return None

    def _calls_passing(self, name: str) -> Iterator[ast.Call]:
        for root in _body(self.function):
            for node in walk(root):
                if not isinstance(node, ast.Call):
                    continue
                arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
                if any(isinstance(item, ast.Name) and item.id == name for item in arguments):
                    yield node


def _callee(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


@dataclass(frozen=True)
class GradSite:
    """One function handed to grad, value_and_grad or a GradOperation."""

    call: ast.Call  # the call that receives the function
    api: str  # "grad", "value_and_grad" or "GradOperation"
    fn: Optional[ast.expr]
    options: dict[str, ast.expr]  # given arguments by parameter name; for GradOperation its flags
    applied_weights: Optional[ast.expr] = None  # GradOperation(get_by_list=True)(fn, weights)

    def option(self, name: str) -> object:
        """A literal option's value (its default when absent), or UNKNOWN."""
        default = FUNCTIONAL_DEFAULTS.get(name, False)
        return literal(self.options.get(name), default)

    @property
    def weights(self) -> Optional[ast.expr]:
        return self.applied_weights if self.api == "GradOperation" else self.options.get("weights")


# --- the file --------------------------------------------------------------------------------


class AutodiffFile:
    """The autodiff facts of one file; built from ``ctx.tree`` on demand."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self._binders: dict[int, dict[str, list[ast.AST]]] = {}
        self._assignments: dict[int, dict[str, list[ast.AST]]] = {}
        self._sites: Optional[list[GradSite]] = None
        self._compiled: Optional[tuple[list[Function], set[str]]] = None
        self._calls_meaning: dict[tuple[str, bool], dict[ast.AST, list[ast.Call]]] = {}

    @classmethod
    def of(cls, ctx: FileContext) -> AutodiffFile:
        """The one analysis of ``ctx``'s file, shared by every rule that asks for it (kept in the
        context's ``__dict__``, as its own cached properties are)."""
        found = ctx.__dict__.get(_SHARED)
        if not isinstance(found, cls):
            found = ctx.__dict__[_SHARED] = cls(ctx)
        return found

    @cached_property
    def _index(self) -> tuple[dict[ast.AST, ast.AST], dict[str, list[ast.Call]]]:
        """One walk of the tree: each node's parent, and the calls by the name they call."""
        parents: dict[ast.AST, ast.AST] = {}
        calls: dict[str, list[ast.Call]] = {}
        stack: list[ast.AST] = [self.tree]
        while stack:
            node = stack.pop()
            for child in child_nodes(node):
                parents[child] = node
                stack.append(child)
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name):
                    calls.setdefault(node.func.id, []).append(node)
                elif isinstance(node.func, ast.Attribute):
                    calls.setdefault(node.func.attr, []).append(node)
        return parents, calls

    @property
    def parents(self) -> dict[ast.AST, ast.AST]:
        return self._index[0]

    @property
    def calls_named(self) -> dict[str, list[ast.Call]]:
        """Calls by the name they call: `f(...)` under "f", `self.g(...)` and `a.g(...)` under "g"."""
        return self._index[1]

    # -- scopes and names

    def scopes(self, node: ast.AST) -> list[Scope]:
        """The scopes ``node`` is in, innermost first, the module last."""
        found: list[Scope] = []
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, SCOPES):
                found.append(current)
            current = self.parents.get(current)
        found.append(self.tree)
        return found

    def enclosing_function(self, node: ast.AST) -> Optional[Function]:
        for scope in self.scopes(node):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return scope
            if isinstance(scope, ast.ClassDef):
                return None
        return None

    def method_of(self, node: ast.AST) -> Optional[tuple[ast.ClassDef, Function]]:
        """The class and method ``node`` is in, when its innermost function is a method."""
        function = self.enclosing_function(node)
        if function is None or isinstance(function, ast.Lambda):
            return None
        owner = self.parents.get(function)
        return (owner, function) if isinstance(owner, ast.ClassDef) else None

    def binders(self, scope: Scope) -> dict[str, list[ast.AST]]:
        """Name -> what binds it directly in ``scope``: a def or class node, an Assign whose one
        target is that name, or the node of any other binding (a parameter, an import, a loop)."""
        cached = self._binders.get(id(scope))
        if cached is not None:
            return cached
        bound: dict[str, list[ast.AST]] = {}

        def bind(name: str, node: ast.AST) -> None:
            bound.setdefault(name, []).append(node)

        def bind_target(target: ast.AST, node: ast.AST) -> None:
            for item in walk(target):
                if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                    bind(item.id, node)

        if not isinstance(scope, (ast.Module, ast.ClassDef)):
            arguments = scope.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                bind(arg.arg, arg)
            for star in (arguments.vararg, arguments.kwarg):
                if star is not None:
                    bind(star.arg, star)
        for node in _body(scope):
            for item in [node, *(() if isinstance(node, SCOPES) else own_nodes(node))]:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bind(item.name, item)
                elif isinstance(item, ast.Assign):
                    if len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                        bind(item.targets[0].id, item)
                    else:
                        for target in item.targets:
                            bind_target(target, item)
                elif isinstance(item, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                    bind_target(item.target, item)
                elif isinstance(item, (ast.With, ast.AsyncWith)):
                    for with_item in item.items:
                        if with_item.optional_vars is not None:
                            bind_target(with_item.optional_vars, item)
                elif isinstance(item, (ast.Import, ast.ImportFrom)):
                    for alias in item.names:
                        bind((alias.asname or alias.name).split(".")[0], item)
                elif isinstance(item, (ast.Global, ast.Nonlocal)):
                    for name in item.names:
                        bind(name, item)
                elif isinstance(item, ast.ExceptHandler) and item.name:
                    bind(item.name, item)
                elif isinstance(item, ast.Delete):
                    for target in item.targets:
                        if isinstance(target, ast.Name):
                            bind(target.id, item)
        self._binders[id(scope)] = bound
        return bound

    def binding(self, name: str, at: ast.AST) -> Optional[ast.AST]:
        """The one node that binds ``name`` as seen from ``at``; None if unbound or bound more than
        once in the scope that owns it (class bodies are not seen from their methods)."""
        scopes = self.scopes(at)
        for index, scope in enumerate(scopes):
            if isinstance(scope, ast.ClassDef) and index > 0:
                continue
            found = self.binders(scope).get(name)
            if found:
                return found[0] if len(found) == 1 else None
        return None

    def assigned_value(self, name: str, at: ast.AST) -> Optional[ast.AST]:
        """What ``name`` means at ``at``: the def or class it names, or the value of its one
        assignment; None when the file does not show one."""
        binder = self.binding(name, at)
        if isinstance(binder, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return binder
        if isinstance(binder, ast.Assign) and len(binder.targets) == 1:
            return binder.value
        return None

    def self_assignments(self, cls: ast.ClassDef, attribute: str) -> list[ast.AST]:
        """Every value assigned to ``self.<attribute>`` in ``cls``'s methods (an opaque node for an
        augmented or unpacking assignment)."""
        cached = self._assignments.get(id(cls))
        if cached is None:
            cached = self._assignments[id(cls)] = _self_assignments(cls)
        return cached.get(attribute, [])

    def attribute_value(self, node: ast.Attribute) -> Optional[ast.AST]:
        """What ``self.x`` means inside a method: the method ``x`` of the class, or the one value
        the class assigns to ``self.x``."""
        owner = self.method_of(node)
        if owner is None or not _is_self(node.value, owner[1]):
            return None
        cls = owner[0]
        methods = [item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
        named = [item for item in methods if item.name == node.attr]
        values = self.self_assignments(cls, node.attr)
        if named and not values:
            return named[0] if len(named) == 1 else None
        if len(values) == 1 and not named:
            return values[0]
        return None

    def meaning(self, node: ast.AST) -> Optional[ast.AST]:
        """One step of what an expression stands for: a name or ``self.x`` resolved once."""
        if isinstance(node, ast.Name):
            return self.assigned_value(node.id, node)
        if isinstance(node, ast.Attribute):
            return self.attribute_value(node)
        return None

    def same_file_class(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """The class a name refers to, when the class is defined in this file."""
        if isinstance(node, ast.Name):
            found = self.assigned_value(node.id, node)
            return found if isinstance(found, ast.ClassDef) else None
        return None

    def instance_class(self, node: ast.AST) -> Optional[ast.ClassDef]:
        """The same-file class of an instance: `Net()`, or a name / `self.x` bound to it once."""
        if not isinstance(node, ast.Call):
            node = self.meaning(node)  # type: ignore[assignment]
        if isinstance(node, ast.Call):
            return self.same_file_class(node.func)
        return None

    def method(self, cls: ast.ClassDef, name: str, depth: int = 0) -> Optional[ast.FunctionDef]:
        """``cls.name`` defined in ``cls`` or in a same-file base (first base first)."""
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        if depth < 3:
            for base in cls.bases:
                base_class = self.same_file_class(base)
                if base_class is not None:
                    found = self.method(base_class, name, depth + 1)
                    if found is not None:
                        return found
        return None

    # -- grad sites

    def sites(self) -> list[GradSite]:
        if self._sites is None:
            self._sites = list(self._find_sites())
        return self._sites

    def _find_sites(self) -> Iterator[GradSite]:
        api_names = {qualified.rsplit(".", 1)[1] for qualified in (*GRAD_FUNCTIONS, *GRAD_OPERATION)}
        aliases = {
            local
            for local, binding in self.ctx.resolver.imports.items()
            if binding.qualified.rsplit(".", 1)[-1] in api_names
        }
        candidates = [call for name in sorted(api_names | aliases) for call in self.calls_named.get(name, ())]
        for node in sorted(candidates, key=lambda call: (call.lineno, call.col_offset)):
            qualified = self.ctx.qualified_name(node.func) or ""
            if qualified in GRAD_FUNCTIONS:
                options = _arguments(node, ("fn", *FUNCTIONAL_PARAMETERS))
                fn = options.pop("fn", None)
                yield GradSite(node, GRAD_FUNCTIONS[qualified], fn, options)
            elif qualified in GRAD_OPERATION:
                flags = _arguments(node, GRAD_OPERATION_PARAMETERS)
                for application in self.calls_of(node):
                    applied = _arguments(application, ("fn", "weights"))
                    by_list = literal(flags.get("get_by_list"), False)
                    weights = applied.get("weights") if by_list is True else None
                    yield GradSite(application, "GradOperation", applied.get("fn"), flags, weights)

    def calls_of(self, value: ast.expr) -> list[ast.Call]:
        """Where the object ``value`` evaluates to is called: `value(...)` itself, or calls of the
        name or `self.x` it is assigned to (once), where the file shows them."""
        parent = self.parents.get(value)
        if isinstance(parent, ast.Call) and parent.func is value:
            return [parent]
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is value):
            return []
        target = parent.targets[0]
        if isinstance(target, ast.Name):
            return list(self._calls_by_meaning(target.id).get(parent, ()))
        if isinstance(target, ast.Attribute):
            owner = self.method_of(parent)
            if owner is None or not _is_self(target.value, owner[1]):
                return []
            if len(self.self_assignments(owner[0], target.attr)) != 1:
                return []
            return list(self._calls_by_meaning(target.attr, attribute=True).get(value, ()))
        return []

    def _calls_by_meaning(self, name: str, attribute: bool = False) -> dict[ast.AST, list[ast.Call]]:
        """The calls of ``name`` (`self.name(...)` when ``attribute``), in file order, by what they
        call: the binding of the name, or the value of `self.name`. Resolved once per name, not
        once per site: a file of N train steps has N `self.grad(...)` calls for each of its N
        `self.grad = GradOperation(...)`."""
        key = (name, attribute)
        cached = self._calls_meaning.get(key)
        if cached is not None:
            return cached
        found: dict[ast.AST, list[ast.Call]] = {}
        for node in self.calls_named.get(name, ()):
            meant: Optional[ast.AST] = None
            if attribute and isinstance(node.func, ast.Attribute):
                meant = self.attribute_value(node.func)
            elif not attribute and isinstance(node.func, ast.Name):
                meant = self.binding(name, node)
            if meant is not None:
                found.setdefault(meant, []).append(node)
        self._calls_meaning[key] = found
        return found

    def differentiated(self, site: GradSite) -> Optional[Differentiated]:
        """The same-file function the site differentiates, if the file shows which."""
        return self.function_of(site.fn) if site.fn is not None else None

    def function_of(self, expr: ast.expr) -> Optional[Differentiated]:
        if isinstance(expr, ast.Lambda):
            return _differentiated(expr, "lambda", drop_self=False, cell=False)
        cls = self.instance_class(expr)
        if cls is not None:
            construct = self.method(cls, "construct")
            if construct is None or not _plain(construct, self.ctx):
                return None
            return _differentiated(construct, f"{cls.name}.construct", drop_self=True, cell=True)
        target = self.meaning(expr)
        if isinstance(target, ast.Lambda):
            return _differentiated(target, getattr(expr, "id", "lambda"), drop_self=False, cell=False)
        if not isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _plain(target, self.ctx):
            return None
        is_method = isinstance(self.parents.get(target), ast.ClassDef)
        if is_method and not isinstance(expr, ast.Attribute):
            return None  # a method named from its class body: unusual, leave it
        return _differentiated(target, target.name, drop_self=is_method, cell=False)

    # -- modes

    def selected_modes(self) -> list[tuple[ast.Call, Optional[str]]]:
        """Every `set_context(mode=...)` in the file, through any alias, with the mode it selects:
        "graph" (`GRAPH_MODE` or 0), "pynative" (`PYNATIVE_MODE` or 1) or None (not a literal)."""
        found: list[tuple[ast.Call, Optional[str]]] = []
        for node in self.ctx.calls:
            if self.ctx.qualified_name(node.func) not in SET_CONTEXT:
                continue
            for keyword in node.keywords:
                if keyword.arg == "mode":
                    found.append((node, self._mode(keyword.value)))
        return sorted(found, key=lambda item: (item[0].lineno, item[0].col_offset))

    def _mode(self, value: ast.expr) -> Optional[str]:
        qualified = self.ctx.qualified_name(value) or ""
        if isinstance(value, ast.Constant) and type(value.value) is int:
            return {0: "graph", 1: "pynative"}.get(value.value)
        if qualified in GRAPH_MODE:
            return "graph"
        if qualified in PYNATIVE_MODE:
            return "pynative"
        return None

    def is_jit(self, function: Function) -> bool:
        if isinstance(function, ast.Lambda):
            return False
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.ctx.qualified_name(target) in JIT:
                return True
        return False

    def compiled_bodies(self) -> tuple[list[Function], set[str]]:
        """Functions MindSpore compiles as a whole in GRAPH mode (Cell ``construct``s and
        ``@jit`` functions), and every name or attribute they mention."""
        if self._compiled is None:
            found: list[Function] = []
            for node in self.ctx.nodes:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    self.is_jit(node)
                    or (node.name == "construct" and isinstance(self.parents.get(node), ast.ClassDef))
                ):
                    found.append(node)
            mentioned = {
                item.id if isinstance(item, ast.Name) else item.attr
                for body in found
                for item in walk(body)
                if isinstance(item, (ast.Name, ast.Attribute))
            }
            self._compiled = (found, mentioned)
        return self._compiled

    def may_be_compiled(self, node: ast.AST) -> bool:
        """Whether the code at ``node`` may run inside a graph MindSpore compiles: inside a
        construct or @jit function, a method of a class with a construct (not ``__init__``), or a
        function whose name a compiled body mentions."""
        compiled, mentioned = self.compiled_bodies()
        for scope in self.scopes(node):
            if isinstance(scope, (ast.Lambda, ast.Module)):
                continue
            if isinstance(scope, ast.ClassDef):
                return False
            if scope in compiled or scope.name in mentioned:
                return True
            owner = self.parents.get(scope)
            if (
                isinstance(owner, ast.ClassDef)
                and scope.name != "__init__"
                and self.method(owner, "construct") is not None
            ):
                return True
        return False


def _self_assignments(cls: ast.ClassDef) -> dict[str, list[ast.AST]]:
    """Attribute -> the values ``cls``'s methods assign to ``self.<attribute>``."""
    values: dict[str, list[ast.AST]] = {}
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in _own_statements(method):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                for item in walk(target):
                    if (
                        isinstance(item, ast.Attribute)
                        and _is_self(item.value, method)
                        and isinstance(item.ctx, ast.Store)
                    ):
                        simple = isinstance(node, ast.Assign) and item is target
                        values.setdefault(item.attr, []).append(node.value if simple else node)  # type: ignore[union-attr]
    return values


def _arguments(call: ast.Call, names: Sequence[str]) -> dict[str, ast.expr]:
    """The call's arguments by parameter name; positional ones in ``names`` order. A ``*args`` or
    ``**kwargs`` stops the mapping where it starts."""
    given: dict[str, ast.expr] = {}
    for name, arg in zip(names, call.args):
        if isinstance(arg, ast.Starred):
            break
        given[name] = arg
    for keyword in call.keywords:
        if keyword.arg is not None:
            given[keyword.arg] = keyword.value
    return given


def _plain(function: ast.AST, ctx: FileContext) -> bool:
    """No decorator that may change what the function computes (``@jit`` does not)."""
    if isinstance(function, ast.Lambda):
        return True
    for decorator in function.decorator_list:  # type: ignore[attr-defined]
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ctx.qualified_name(target) not in JIT:
            return False
    return True


def _differentiated(function: Function, name: str, drop_self: bool, cell: bool) -> Differentiated:
    params = _positional(function)
    if drop_self:
        params = params[1:]
    return Differentiated(function, name, tuple(params), function.args.vararg is not None, cell)


# --- what a function returns -----------------------------------------------------------------


def _always_returns(body: Sequence[ast.stmt]) -> bool:
    """The end of ``body`` is never reached (it returns or raises on every path it shows)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _always_returns(last.body)
    return False


def returned(function: Function) -> Optional[list[ast.expr]]:
    """Every expression ``function`` returns, or None where a path may return something else
    (a bare return, the end of the body, a generator)."""
    if isinstance(function, ast.Lambda):
        return [function.body]
    nodes = list(_own_statements(function))
    if any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in nodes):
        return None
    returns = [node for node in nodes if isinstance(node, ast.Return)]
    if not returns or any(node.value is None for node in returns) or not _always_returns(function.body):
        return None
    return [node.value for node in returns if node.value is not None]


def local_value(function: Function, name: str) -> Optional[ast.expr]:
    """The value of ``name``'s one binding in ``function``, when that is a plain assignment."""
    if isinstance(function, ast.Lambda) or name in _positional(function):
        return None
    found: list[ast.AST] = []
    for node in _own_statements(function):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            found.append(node)
    if len(found) != 1:
        return None
    statement = next(
        (
            node
            for node in _own_statements(function)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and node.targets[0] is found[0]
        ),
        None,
    )
    return statement.value if statement is not None else None


def tuple_items(expr: ast.expr, function: Function) -> Optional[list[ast.expr]]:
    """The items of a returned tuple: a tuple literal without `*`, or a local name assigned one."""
    if isinstance(expr, ast.Name):
        value = local_value(function, expr.id)
        if value is None:
            return None
        expr = value
    if isinstance(expr, ast.Tuple) and not any(isinstance(item, ast.Starred) for item in expr.elts):
        return list(expr.elts)
    return None


def output_tuples(function: Function) -> Optional[list[list[ast.expr]]]:
    """The outputs of each return, when every return gives a tuple of two or more."""
    values = returned(function)
    if values is None:
        return None
    tuples = [tuple_items(value, function) for value in values]
    if any(items is None or len(items) < 2 for items in tuples):
        return None
    return tuples  # type: ignore[return-value]


def output_count(function: Function) -> Optional[int]:
    """How many outputs the function returns, when every return agrees on a tuple size."""
    tuples = output_tuples(function)
    if tuples is None or len({len(items) for items in tuples}) != 1:
        return None
    return len(tuples[0])


def is_stop_gradient(expr: ast.expr, function: Function, ctx: FileContext) -> bool:
    """`ops.stop_gradient(x)` or `StopGradient()(x)`, directly or through a local name."""
    if isinstance(expr, ast.Name):
        value = local_value(function, expr.id)
        if value is None:
            return False
        expr = value
    if not isinstance(expr, ast.Call):
        return False
    if ctx.qualified_name(expr.func) in STOP_GRADIENT:
        return True
    return isinstance(expr.func, ast.Call) and ctx.qualified_name(expr.func.func) in STOP_GRADIENT_PRIMITIVE


# Tensor methods that return one tensor.
SINGLE_METHODS = frozenset(
    {"sum", "mean", "prod", "std", "var", "norm", "square", "sqrt", "exp", "log", "abs", "item"}
)
# mindspore.ops functions that return one tensor (the common losses and reductions).
SINGLE_OPS = frozenset(
    {
        "reduce_sum", "reduce_mean", "sum", "mean", "square", "sqrt", "exp", "log", "abs", "matmul",
        "mul", "add", "sub", "div", "pow", "norm", "cross_entropy", "mse_loss", "l1_loss",
        "smooth_l1_loss", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
        "kl_div", "sin", "cos", "tanh", "sigmoid", "relu", "dot", "tensor_dot",
    }
)  # fmt: skip
_SINGLE_BINARY = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult)


def is_single(expr: ast.expr, function: Function, analysis: AutodiffFile, depth: int = 0) -> bool:
    """Whether ``expr`` provably is one value, not a tuple: arithmetic a tuple does not support, a
    reduction method, a loss or reduction from mindspore.ops, an `nn.*Loss` instance called, or a
    local name assigned one of these once."""
    ctx = analysis.ctx
    if depth > 3:
        return False
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, (ast.UnaryOp, ast.Compare)):
        return True
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, _SINGLE_BINARY):
            return True
        if isinstance(expr.op, (ast.Add, ast.Mult)):
            # A constant never extends a tuple, a float never repeats one, and a tensor operand
            # makes a tensor.
            return any(
                (isinstance(side, ast.Constant) and isinstance(expr.op, ast.Add))
                or (isinstance(side, ast.Constant) and isinstance(side.value, float))
                or (not isinstance(side, ast.Constant) and is_single(side, function, analysis, depth + 1))
                for side in (expr.left, expr.right)
            )
        return False
    if isinstance(expr, ast.Name):
        value = local_value(function, expr.id)
        return value is not None and is_single(value, function, analysis, depth + 1)
    if not isinstance(expr, ast.Call):
        return False
    qualified = ctx.qualified_name(expr.func) or ""
    if qualified.startswith("mindspore.ops.") and qualified.rsplit(".", 1)[1] in SINGLE_OPS:
        return True
    method = expr.func
    if isinstance(method, ast.Attribute) and method.attr in SINGLE_METHODS and not qualified:
        # `x.sum()`, but not `self.sum()`: a method of the file's own class may return anything.
        return not (isinstance(method.value, ast.Name) and method.value.id == "self")
    return _is_loss_instance(expr.func, function, analysis)


def _is_loss_instance(callee: ast.expr, function: Function, analysis: AutodiffFile) -> bool:
    """`loss_fn(...)` where `loss_fn` is bound once to `nn.SomethingLoss(...)`."""
    if isinstance(callee, ast.Call):
        created: Optional[ast.AST] = callee
    elif isinstance(callee, ast.Name) and not isinstance(function, ast.Lambda):
        created = local_value(function, callee.id) or analysis.meaning(callee)
    else:
        created = analysis.meaning(callee)
    if not isinstance(created, ast.Call):
        return False
    qualified = analysis.ctx.qualified_name(created.func) or ""
    return qualified.startswith("mindspore.nn.") and qualified.endswith("Loss")


def describe(expr: ast.AST, ctx: FileContext, limit: int = 40) -> str:
    """Short source text of ``expr`` for a message."""
    text = " ".join((ast.get_source_segment(ctx.text, expr) or ast.unparse(expr)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


ALL_INPUTS = "all"


def positions_differentiated(site: GradSite) -> Union[tuple[int, ...], str, None]:
    """The positions of the inputs the site takes the gradient with respect to (() for the
    weights alone), ALL_INPUTS for every input (`get_all=True`), or None where its options are
    not literals."""
    if site.api == "GradOperation":
        get_all, by_list = site.option("get_all"), site.option("get_by_list")
        if get_all is True:
            return ALL_INPUTS
        if get_all is not False or by_list not in (True, False):
            return None
        return () if by_list else (0,)
    positions = site.option("grad_position")
    if positions is None:
        return ()
    chosen = positions if isinstance(positions, tuple) else (positions,)
    if not all(isinstance(item, int) and not isinstance(item, bool) and item >= 0 for item in chosen):
        return None
    return chosen  # type: ignore[return-value]


def sites_with_functions(analysis: AutodiffFile) -> Iterable[tuple[GradSite, Differentiated]]:
    for site in analysis.sites():
        function = analysis.differentiated(site)
        if function is not None:
            yield site, function
