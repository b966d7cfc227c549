"""MS102: auxiliary outputs kept out of the gradient with ops.stop_gradient become has_aux=True."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional, Union

from ms_migrate.analysis.autodiff import (
    GRAD_FUNCTIONS,
    STOP_GRADIENT,
    UNKNOWN,
    AutodiffFile,
    GradSite,
    describe,
    literal,
    returned,
)
from ms_migrate.analysis.names import NameResolver, enclosing_scopes
from ms_migrate.analysis.project import last_name
from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.import_changes import released_name
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

REASONS = registry(
    Reason(
        "MSR030",
        "stop-gradient-grad-call",
        "the grad call is not in the shape MS102 converts",
        "MS102 converts `grad_fn = grad(f, ...)` or `value_and_grad(f, ...)` assigned once to a name "
        "or to `self.<name>`, given only grad_position and weights (positionally or by keyword) and "
        "no has_aux. A grad function applied inline (`grad(f)(x)`), or given return_ids, sens_param, "
        "a non-literal has_aux or `*args`/`**kwargs`, is left for a hand conversion; the detail says "
        "which condition failed.",
    ),
    Reason(
        "MSR031",
        "stop-gradient-function",
        "the differentiated function is not in the shape MS102 converts",
        "MS102 converts a plain `def` (no decorator, not async, not a lambda) every return of which "
        "is a tuple literal of the same length whose elements after the first are all "
        "`ops.stop_gradient(x)` with one argument. A function that mixes other auxiliary outputs in, "
        "returns something else on some path, or returns tuples of different lengths keeps its "
        "stop_gradient calls; the detail says which return differs.",
    ),
    Reason(
        "MSR032",
        "stop-gradient-other-uses",
        "the function or the grad function is used elsewhere",
        "Dropping stop_gradient from a function changes the gradient of every other use of it (a "
        "second grad, a call inside another differentiated function), and `grad(..., has_aux=True)` "
        "returns `(gradients, aux)` where `grad` returned the gradients: so the differentiated "
        "function must be used only by this one grad call, and a `grad` function only called (each "
        "call then gets `[0]`). A function or grad function that is mentioned anywhere else in the "
        "file, re-bound through `global`, or reachable from a same-file subclass is left alone; so "
        "is a value_and_grad result unpacked into three names or more, which raises already (it is "
        "two values, `((out0, *aux), gradients)`) and which MS204 would then rewrite.",
    ),
)

FORWARD = """\
import mindspore as ms
from mindspore import ops


def forward_fn(x, y):
    logits = net(x)
    return loss_fn(logits, y), ops.stop_gradient(logits)

"""


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = """\
import mindspore as ms


def forward_fn(x, y):
    logits = net(x)
    return loss_fn(logits, y), logits

grad_fn = ms.value_and_grad(forward_fn, None, weights, has_aux=True)
(loss, logits), grads = grad_fn(x, y)
"""

FIXED_2 = """\
import mindspore as ms


def forward_fn(x, y):
    logits = net(x)
    return loss_fn(logits, y), logits

grad_fn = ms.grad(forward_fn, (0, 1), has_aux=True)
dx, dy = grad_fn(x, y)[0]
"""

FIXED_3 = """\
import mindspore
from mindspore import nn


class TrainStep(nn.Cell):
    def __init__(self, net, optimizer):
        super().__init__()
        self.net = net
        self.optimizer = optimizer
        self.grad_fn = mindspore.grad(self.forward, None, optimizer.parameters, has_aux=True)

    def forward(self, x, y):
        out = self.net(x)
        return self.loss(out, y), out

    def construct(self, x, y):
        return self.optimizer(self.grad_fn(x, y)[0])
"""


class StopGradientToHasAux(Rule):
    """`return loss, ops.stop_gradient(logits)` under grad or value_and_grad: say has_aux=True instead.

    The function becomes `return loss, logits`, and the grad call gets `has_aux=True`.

    Without has_aux, `grad` and `value_and_grad` differentiate the sum of all outputs, so code
    written for MindSpore 1.x (and GradOperation) keeps logits and other logged values out of the
    gradient by wrapping them in `ops.stop_gradient`. From MindSpore 2.0, `has_aux=True` says the
    same thing at the call: only the first output is differentiated, the others come back as
    auxiliary values, and MS203 can tell an intended auxiliary output from a forgotten one.

    Measured on MindSpore 2.10 CPU, in PYNATIVE and GRAPH mode, for grad_position 0, (0, 1) and
    None with weights absent, a list, a tuple or one Parameter, held in a Cell or not: the numbers
    are bit-identical, and so is the structure of `value_and_grad`'s result,
    `((out0, *aux), gradients)`, with or without has_aux. `grad` differs in structure: without
    has_aux it returns the gradients, with it `(gradients, aux_tuple)`, so every call of a `grad`
    function gets `[0]`.

    Converted: `grad_fn = grad(f, ...)` or `value_and_grad(f, ...)` (mindspore or mindspore.ops,
    under any import alias) assigned once to a name or to `self.<name>`, with only grad_position
    and weights given; `f` a plain `def` of the file, or a method named `self.f`, every return of
    which is a tuple literal of one length whose elements after the first are all
    `ops.stop_gradient(x)` (under any alias of ops or stop_gradient); `f` mentioned nowhere else,
    since dropping stop_gradient would change the gradient of any other use; for `grad`, its grad
    function only ever called. What the file does not show is not known: a module-level name or a
    class attribute may still be imported or reached from another file.

    Never converted: a grad function applied inline, `grad(f)(x)`. That is the form MS101 writes
    for GradOperation, and the engine applies all fixes in one pass and then requires a fixed
    point; the inline form is left alone (MSR030), so MS101's output is never rewritten again.
    Targets MindSpore 2.0 and later, where `mindspore.grad`/`value_and_grad` take has_aux (1.8's
    was experimental).

    Fix safety: exact.
    See https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.value_and_grad.html
    and https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.grad.html
    """

    code = "MS102"
    title = "stop_gradient on auxiliary outputs becomes has_aux=True"
    kind = "upgrade"
    severity = Severity.WARNING
    targets = VersionRange(low="2.0")
    prefilter = ("stop_gradient",)
    reasons = REASONS
    examples = Examples(
        valid=(
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n", "1.10"),
            Example(FORWARD + "grads = ms.grad(forward_fn, None, weights)(x, y)\n"),
            Example(FORWARD + "grad_fn = ms.grad(forward_fn, None, weights)\nrun(grad_fn)\n"),
            Example(FORWARD + "grad_fn = ms.grad(forward_fn)\nloss, _ = forward_fn(x, y)\n"),
            Example(
                "import mindspore as ms\nfrom mindspore import ops\n\n\ndef forward_fn(x):\n"
                "    return x.sum(), ops.stop_gradient(x), x * 2\n\n\n"
                "grad_fn = ms.value_and_grad(forward_fn)\n"
            ),
        ),
        invalid=(
            Example(
                FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n"
                "(loss, logits), grads = grad_fn(x, y)\n",
                fixed=FIXED_1,
            ),
            Example(
                FORWARD + "grad_fn = ms.grad(forward_fn, (0, 1))\ndx, dy = grad_fn(x, y)\n", fixed=FIXED_2
            ),
            Example(
                "import mindspore\nfrom mindspore import nn\n"
                "from mindspore.ops import stop_gradient as sg\n\n\n"
                "class TrainStep(nn.Cell):\n"
                "    def __init__(self, net, optimizer):\n"
                "        super().__init__()\n"
                "        self.net = net\n"
                "        self.optimizer = optimizer\n"
                "        self.grad_fn = mindspore.grad(self.forward, None, optimizer.parameters)\n\n"
                "    def forward(self, x, y):\n"
                "        out = self.net(x)\n"
                "        return self.loss(out, y), sg(out)\n\n"
                "    def construct(self, x, y):\n"
                "        return self.optimizer(self.grad_fn(x, y))\n",
                fixed=FIXED_3,
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        """A refusal per site whose function has the shape but is not converted; a fix per site
        that is, which lets the engine drop an import of stop_gradient nothing uses any more."""
        analysis = AutodiffFile.of(ctx)
        resolver = ctx.resolver
        found: list[Diagnostic] = []
        converted: list[_Site] = []
        for site in analysis.sites():
            if site.api == "GradOperation" or site.fn is None:
                continue
            scopes = enclosing_scopes(analysis.parents, site.call)
            if resolver.qualified_name(site.call.func, scopes) not in GRAD_FUNCTIONS:
                continue  # the module's name for mindspore is shadowed here
            result = _Site.of(analysis, resolver, site)
            if isinstance(result, Diagnostic):
                found.append(result)
            elif result is not None:
                converted.append(result)
        lines = source_lines(ctx.text)
        for item in converted:
            released = (name for call in item.unwrapped for name in released_name(call.func))
            unused = tuple(dict.fromkeys(released))
            fix = Fix(tuple(item.edits(lines)), "exact", _FIXED, unused=unused)
            found.append(self.diagnostic(item.site.call.func, item.message(ctx), fix))
        yield from sorted(found, key=lambda item: (item.line, item.col))


_FIXED = "has_aux=True on the grad call; stop_gradient dropped from the returns"
_OPTIONS = frozenset({"grad_position", "weights", "has_aux"})
Defined = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]


@dataclass(frozen=True)
class _Site:
    """One grad call that converts, and what its fix touches."""

    site: GradSite
    function: ast.FunctionDef
    returns: tuple[ast.Tuple, ...]
    calls: tuple[ast.Call, ...]  # calls of a `grad` function: each gets `[0]`

    @classmethod
    def of(
        cls, analysis: AutodiffFile, resolver: NameResolver, site: GradSite
    ) -> Union[_Site, Diagnostic, None]:
        """The site if it converts, a refusal if its function has the shape but something else
        does not, None if its function is not one MS102 is about."""
        function = _defined(analysis, site.fn)  # type: ignore[arg-type]
        if function is None or not _has_stop_gradient_tuple(analysis, resolver, function):
            return None
        if site.option("has_aux") is True:
            return None  # the author has said it already; the stop_gradient is redundant, not wrong
        line = site.call.lineno
        problem = _call_problem(analysis, site)
        if problem:
            return REASONS["MSR030"].at(line, problem)
        problem = _function_problem(analysis, resolver, function)
        if problem:
            return REASONS["MSR031"].at(line, problem)
        problem = _function_uses(analysis, site, function)  # type: ignore[arg-type]
        if problem:
            return REASONS["MSR032"].at(line, problem)
        calls: list[ast.Call] = []
        if site.api == "grad":
            uses = _grad_function_calls(analysis, site)
            if isinstance(uses, str):
                return REASONS["MSR032"].at(line, uses)
            calls = uses
        else:
            problem = _unpacked_flat(analysis, site)
            if problem:
                return REASONS["MSR032"].at(line, problem)
        tuples = [value for value in returned(function) or () if isinstance(value, ast.Tuple)]
        return cls(site, function, tuple(tuples), tuple(calls))  # type: ignore[arg-type]

    def message(self, ctx: FileContext) -> str:
        name = describe(self.site.fn, ctx)  # type: ignore[arg-type]
        count = len(self.returns[0].elts) - 1
        outputs = "auxiliary output" if count == 1 else f"{count} auxiliary outputs"
        head = (
            f"`{name}` keeps its {outputs} out of the gradient with stop_gradient: "
            f"{self.site.api}(..., has_aux=True) says so at the call (exactly the same numbers)"
        )
        if self.calls:
            head += f"; its {len(self.calls)} call(s) take [0], as grad with has_aux returns (gradients, aux)"
        return head

    @property
    def unwrapped(self) -> list[ast.Call]:
        """The stop_gradient calls the fix takes away."""
        return [item for value in self.returns for item in value.elts[1:]]  # type: ignore[misc]

    def edits(self, lines: list[str]) -> list[Edit]:
        found = [_has_aux_edit(lines, self.site)]
        for call in self.unwrapped:
            edit = _unwrap(lines, call)
            assert edit is not None  # checked in _auxiliary_problem
            found.append(edit)
        for call in self.calls:
            end = _end(lines, call)
            found.append(Edit(end, end, "[0]"))
        return found


# --- the function --------------------------------------------------------------------------------


def _defined(analysis: AutodiffFile, fn: ast.expr) -> Optional[Defined]:
    """The same-file def, method (`self.f`) or lambda ``fn`` names."""
    if isinstance(fn, ast.Lambda):
        return fn
    if isinstance(fn, ast.Name):
        found = analysis.binding(fn.id, fn)
    elif isinstance(fn, ast.Attribute):
        found = analysis.attribute_value(fn)
    else:
        return None
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else None


def _stop_gradient_call(resolver: NameResolver, analysis: AutodiffFile, node: ast.expr) -> bool:
    """`ops.stop_gradient(x)` through any alias, not shadowed where it is."""
    if not isinstance(node, ast.Call):
        return False
    scopes = enclosing_scopes(analysis.parents, node)
    return resolver.qualified_name(node.func, scopes) in STOP_GRADIENT


def _return_values(function: Defined) -> list[ast.expr]:
    if isinstance(function, ast.Lambda):
        return [function.body]
    return [
        node.value
        for node in walk(function)
        if isinstance(node, ast.Return) and node.value is not None and _owner(function, node)
    ]


def _owner(function: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` is in ``function`` itself, not in a function nested in it."""
    stack = list(child_nodes(function))
    while stack:
        item = stack.pop()
        if item is node:
            return True
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(child_nodes(item))
    return False


def _has_stop_gradient_tuple(analysis: AutodiffFile, resolver: NameResolver, function: Defined) -> bool:
    """Some return of ``function`` is `(out0, stop_gradient(a), ...)`: the shape MS102 is about."""
    return any(
        isinstance(value, ast.Tuple)
        and len(value.elts) >= 2
        and all(_stop_gradient_call(resolver, analysis, item) for item in value.elts[1:])
        for value in _return_values(function)
    )


def _function_problem(analysis: AutodiffFile, resolver: NameResolver, function: Defined) -> Optional[str]:
    if isinstance(function, ast.Lambda):
        return "it is a lambda (GRAPH mode cannot parse a lambda passed to grad; write a def)"
    name = function.name
    if isinstance(function, ast.AsyncFunctionDef):
        return f"`{name}` is async"
    if function.decorator_list:
        return f"`{name}` is decorated, and the decorator may change what it returns"
    values = returned(function)
    if values is None:
        return f"`{name}` may return something other than a tuple (a bare return, the end of its body)"
    lengths: set[int] = set()
    for value in values:
        if not isinstance(value, ast.Tuple) or any(isinstance(item, ast.Starred) for item in value.elts):
            return f"`{name}` returns something other than a tuple literal (line {value.lineno})"
        lengths.add(len(value.elts))
        for item in value.elts[1:]:
            problem = _auxiliary_problem(resolver, analysis, item)
            if problem:
                return f"`{name}` returns {problem} (line {item.lineno})"
    if len(lengths) != 1:
        return f"the returns of `{name}` have different lengths ({', '.join(map(str, sorted(lengths)))})"
    return None


def _auxiliary_problem(resolver: NameResolver, analysis: AutodiffFile, item: ast.expr) -> Optional[str]:
    if not _stop_gradient_call(resolver, analysis, item):
        return "an auxiliary output without stop_gradient"
    call: ast.Call = item  # type: ignore[assignment]
    if call.keywords or len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return "stop_gradient with other than one positional argument"
    if isinstance(call.args[0], ast.Constant):
        return "stop_gradient of a constant (has_aux returns tensors)"
    if _unwrap(source_lines(analysis.ctx.text), call) is None:
        return "stop_gradient over several lines with a trailing comma"
    return None


def _function_uses(analysis: AutodiffFile, site: GradSite, function: ast.FunctionDef) -> Optional[str]:
    """Where the differentiated function is used other than by this grad call."""
    fn = site.fn
    name = function.name
    if isinstance(fn, ast.Name):
        problem = _rebound_globally(analysis, name)
        if problem:
            return problem
        for node in walk(analysis.tree):
            if not isinstance(node, ast.Name) or node.id != name or node is fn:
                continue
            if analysis.binding(name, node) is function:
                return f"`{name}` is also used on line {node.lineno}"
        return None
    owner = analysis.parents.get(function)
    assert isinstance(owner, ast.ClassDef)
    subclass = _subclass(analysis, owner)
    if subclass:
        return f"{subclass} subclasses {owner.name} and may call or override `{name}`"
    for node in walk(analysis.tree):
        if isinstance(node, ast.Attribute) and node.attr == name and node is not fn:
            return f"`.{name}` is also used on line {node.lineno}"
    return None


def _rebound_globally(analysis: AutodiffFile, name: str) -> Optional[str]:
    for node in walk(analysis.tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return f"`{name}` is declared {type(node).__name__.lower()} on line {node.lineno}"
    return None


def _subclass(analysis: AutodiffFile, cls: ast.ClassDef) -> Optional[str]:
    for node in walk(analysis.tree):
        if isinstance(node, ast.ClassDef) and cls.name in {last_name(base) for base in node.bases}:
            return node.name
    return None


# --- the grad call and its grad function ---------------------------------------------------------


def _call_problem(analysis: AutodiffFile, site: GradSite) -> Optional[str]:
    call = site.call
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return "the grad call takes *args or **kwargs"
    extra = sorted(set(site.options) - _OPTIONS)
    if extra:
        return f"the grad call is given {', '.join(extra)}"
    if site.option("has_aux") is UNKNOWN or literal(site.options.get("has_aux"), False) is not False:
        return "has_aux is not a literal False"
    statement = analysis.parents.get(call)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
        return f"the grad function is not assigned to a name or self.<name> (`{site.api}(f)(x)` inline stays)"
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        if isinstance(analysis.scopes(statement)[0], ast.ClassDef):
            return f"`{target.id}` is a class attribute, reached as self.{target.id}"
        if analysis.binding(target.id, statement) is not statement:
            return f"`{target.id}` is bound more than once"
        return _rebound_globally(analysis, target.id)
    owner = analysis.method_of(statement)
    if not (isinstance(target, ast.Attribute) and owner is not None and _is_self(target.value, owner[1])):
        return "the grad function is not assigned to a name or self.<name>"
    if len(analysis.self_assignments(owner[0], target.attr)) != 1:
        return f"`self.{target.attr}` is assigned more than once"
    subclass = _subclass(analysis, owner[0])
    if subclass:
        return f"{subclass} subclasses {owner[0].name} and may use `self.{target.attr}`"
    return None


def _is_self(node: ast.AST, method: ast.AST) -> bool:
    if not isinstance(node, ast.Name) or not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    positional = [*method.args.posonlyargs, *method.args.args]
    return bool(positional) and node.id == positional[0].arg


def _grad_function_calls(analysis: AutodiffFile, site: GradSite) -> Union[list[ast.Call], str]:
    """Every call of the grad function `grad(...)` was assigned to, or where it is used otherwise."""
    statement: ast.Assign = analysis.parents[site.call]  # type: ignore[assignment]
    target = statement.targets[0]
    cls = analysis.method_of(statement)
    calls: list[ast.Call] = []
    for node in walk(analysis.tree):
        if node is target:
            continue
        if isinstance(target, ast.Name):
            if not (isinstance(node, ast.Name) and node.id == target.id):
                continue
            if analysis.binding(target.id, node) is not statement:
                continue
            spelled = target.id
        else:
            if not (isinstance(node, ast.Attribute) and node.attr == target.attr):  # type: ignore[attr-defined]
                continue
            spelled = f"self.{node.attr}"
            owner = analysis.method_of(node)
            if owner is None or cls is None or owner[0] is not cls[0] or not _is_self(node.value, owner[1]):
                return f"`.{node.attr}` is used outside the methods of its class (line {node.lineno})"
        parent = analysis.parents.get(node)
        if not (isinstance(parent, ast.Call) and parent.func is node):
            return (
                f"`{spelled}` is used other than called (line {node.lineno}); "
                "grad with has_aux returns (gradients, aux)"
            )
        calls.append(parent)
    return calls


def _unpacked_flat(analysis: AutodiffFile, site: GradSite) -> Optional[str]:
    """A value_and_grad result unpacked into three names or more: `((out0, *aux), grads)` is two
    values, so that raises already, and with has_aux MS204 would rewrite the unpacking (the engine
    wants a fixed point after one pass)."""
    for call in analysis.calls_of(site.call):
        statement = analysis.parents.get(call)
        if isinstance(statement, ast.Assign) and statement.value is call:
            for target in statement.targets:
                if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) >= 3:
                    return (
                        f"its result is unpacked into {len(target.elts)} names (line {call.lineno}), "
                        "but value_and_grad returns two values, ((out0, *aux), gradients)"
                    )
    return None


# --- edits ---------------------------------------------------------------------------------------


def _start(lines: list[str], node: ast.AST) -> tuple[int, int]:
    return (node.lineno, column(lines, node.lineno, node.col_offset))  # type: ignore[attr-defined]


def _end(lines: list[str], node: ast.AST) -> tuple[int, int]:
    line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return (line, column(lines, line, node.end_col_offset or 0))  # type: ignore[attr-defined]


def _has_aux_edit(lines: list[str], site: GradSite) -> Edit:
    given = site.options.get("has_aux")
    if given is not None:  # a literal False
        return Edit(_start(lines, given), _end(lines, given), "True")
    arguments: list[ast.AST] = [*site.call.args, *site.call.keywords]
    last = max(arguments, key=lambda node: (node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]
    end = _end(lines, last)
    return Edit(end, end, ", has_aux=True")


def _unwrap(lines: list[str], call: ast.Call) -> Optional[Edit]:
    """`ops.stop_gradient(x)` -> `x`. An argument over several lines, or one that a tuple would
    take apart (`a := b`, `yield`), keeps its parentheses: only the callee goes. None where
    that would leave a tuple behind (a trailing comma)."""
    argument = call.args[0]
    start, end = _start(lines, argument), _end(lines, argument)
    if argument.lineno == argument.end_lineno and not isinstance(argument, _NEEDS_PARENTHESES):
        return Edit(_start(lines, call), _end(lines, call), lines[start[0] - 1][start[1] : end[1]])
    call_end = _end(lines, call)
    after = "".join(lines[end[0] - 1 : call_end[0]])
    after = after[end[1] : len(after) - len(lines[call_end[0] - 1]) + call_end[1]]
    if "," in after:
        return None
    return Edit(_start(lines, call.func), _end(lines, call.func), "")


_NEEDS_PARENTHESES = (ast.NamedExpr, ast.Yield, ast.YieldFrom)
