"""MS302: `grad(fn[, grad_position][, weights][, has_aux][, sens_param])` for a MindSpore older than
1.8, and `grad(..., sens_param=True)` for one older than 2.8."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional, Union

from ms_migrate.analysis.arguments import STARRED, bind, sets_flag
from ms_migrate.analysis.names import (
    FUNCTION_TYPES,
    ModuleReference,
    all_names,
    bindings_in,
    compiled_function,
    dotted_name,
    enclosing_scopes,
    free_name,
    module_reference,
    own_returns,
)
from ms_migrate.analysis.project import last_name
from ms_migrate.analysis.walk import walk
from ms_migrate.analysis.weights import known_parameter_tuple, parameter_argument, written_as_parameter_tuple
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.cell_init import after_super_init, free_attribute, own_init, super_init
from ms_migrate.rewrite.import_changes import released_name
from ms_migrate.rewrite.text_edits import (
    column,
    generated_blocks,
    line_limit,
    newline_of,
    width,
)
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

GRAD = frozenset({"mindspore.grad", "mindspore.ops.grad"})

REASONS = registry(
    Reason(
        "MSR021",
        "downgrade-grad-shape",
        "this grad has no GradOperation form that returns the same structure",
        "Below MindSpore 1.8 only GradOperation exists. `grad(fn)` and `grad(fn, 0)` (the first "
        "input's gradient), `grad(fn, None, weights)` (the weights' gradients) and "
        "`grad(fn, (0, ..., n-1))` for a `def` of n plain parameters (every input's gradient) map "
        "to a GradOperation returning exactly what grad returned. Other positions and has_aux "
        "become a generated `def` that selects from every input's gradient (see MSR022 for where "
        "that is not done). `sens_param=True` maps to GradOperation's `sens_param=True` on those "
        "first three forms, the sens staying the last call argument. Input and weight gradients "
        "together, return_ids, sens_param with other positions or with has_aux, and a grad of a grad "
        "(`grad(grad(f))`) are left for a hand conversion, and so is a grad called inside "
        "`construct` or a jit function: "
        "MindSpore 1.7's GRAPH mode cannot compile a GradOperation built there.",
    ),
    Reason(
        "MSR022",
        "downgrade-grad-selection",
        "this grad's positions or has_aux need a generated function that cannot be placed or proven here",
        "`grad(fn, positions[, has_aux=True])` becomes a `def` next to the call that takes every "
        "input's gradient (`GradOperation(get_all=True)`) and selects the positions, keeping the "
        "structure: one position (`1` or `(1,)`) gives a bare tensor, several a tuple in the "
        "order written. That needs `fn` to be one `def` of plain parameters, or a name bound once "
        "to an instance of a module-level Cell class, visible from the call; positions that are "
        "distinct literal ints below the parameter count (MindSpore 2.x raises on duplicates); "
        "and a call in a statement of its own, outside a class body, `construct` or a jit "
        "function (the def would be compiled). With has_aux, the auxiliary outputs come from a "
        "second call of `fn`: it is converted only where `fn` is a `def` that returns a tuple of "
        "two or more everywhere and calls only MindSpore operators (no Cell, no randomness) or "
        "methods of its own parameters, so that a second forward computes the same values.",
    ),
)

_NESTED_REFUSED = (
    "a gradient of a gradient (`grad(grad(f))`): the sites are nested, and each one's GradOperation "
    "would be written over the other's; converted by hand, they are one GradOperation applied to another"
)


SINCE_1_8 = Version(1, 8)


def _nested(calls: list[ast.Call]) -> set[ast.Call]:
    """The grad calls that hold another one, or are held by one (`grad(grad(f))(x)`)."""
    found: set[ast.Call] = set()
    wanted = set(calls)
    for call in calls:
        inner = [node for node in walk(call) if node is not call and node in wanted]
        if inner:
            found.update([call, *inner])
    return found


# Operators whose result depends on a random state that a second forward would advance.
_RANDOM = re.compile(r"dropout|random|rand|uniform|normal|bernoulli|multinomial|shuffle|gamma|poisson|choice")
_BUILTINS = frozenset({"len", "range", "tuple", "list", "float", "int", "abs", "min", "max", "sum"})


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = """\
import mindspore as ms


_grad_by_list = ms.ops.GradOperation(get_by_list=True)


def step(net, weights, x):
    return _grad_by_list(net, ms.ParameterTuple(weights))(x)
"""

FIXED_2 = '''\
import mindspore as ms


def f(x, y):
    return x * y


def _f_grad(x, y):
    """ms.grad(f, 1) before MindSpore 1.8."""
    grads = ms.ops.GradOperation(get_all=True)(f)(x, y)
    return grads[1]


dy = _f_grad(1.0, 2.0)
'''

FIXED_3 = """\
import mindspore as ms


_grad_by_list_sens = ms.ops.GradOperation(get_by_list=True, sens_param=True)


def step(net, weights, x, scale):
    sens = ms.ops.fill(ms.float32, (), scale)
    return _grad_by_list_sens(net, ms.ParameterTuple(weights))(x, sens)
"""


class GradToGradOperation(Rule):
    """`mindspore.grad` does not exist before MindSpore 1.8, nor `mindspore.ops.grad` as 1.8 has it.

    1.7 has an `ops.grad(fn, grad_position=0, sens_param=False)` of its own (input gradients
    only, no weights and no has_aux); the rewrite writes GradOperation, which every 1.x has.

    The GradOperation that returns the same structure replaces the call where there is one:
    `grad(fn)` / `grad(fn, 0)` is `GradOperation()(fn)` (a bare tensor), `grad(fn, None, w)` is
    `GradOperation(get_by_list=True)(fn, ParameterTuple(w))` (a tuple per weight; 1.7 given a
    list returns the gradients of every Parameter `fn` uses, measured on 1.7.0; an optimizer's
    `parameters` is one already and stays as written) and `grad(fn, (0, 1))` on a
    two-parameter `def` is `GradOperation(get_all=True)(fn)` (a tuple per input). Neither form
    runs a separate forward, so there is nothing to merge: measured on MindSpore 2.10 CPU, with a
    BatchNorm network for the weights, bit-identical in PYNATIVE and GRAPH mode.

    `sens_param=True` (the sensitivity, a loss scale say, passed after the inputs) adds
    `sens_param=True` to those GradOperations, the call unchanged: measured on 2.10 CPU with
    Dense and BatchNorm over three optimizer steps and a scalar sens (`ops.fill(ms.float32, (),
    1024.0)`), and with a two-output function and a tuple sens for the weights, gradients,
    parameters and BatchNorm statistics are bit-identical in both modes. With other positions or
    has_aux it is left alone: the generated def would need the sens too, and with has_aux 2.10
    wants a sens for output 0 only in PYNATIVE mode and one per output in GRAPH mode.

    Other positions become a generated `def` placed right above the statement of the call: it
    takes `GradOperation(get_all=True)`, which returns a tuple of every input's gradient (also
    for a one-input function, measured on 2.10), and returns the positions asked for with the
    structure grad has: measured on 2.10 in both modes, `grad(fn, 1)` and `grad(fn, (1,))` return
    a bare tensor, `grad(fn, (2, 1))` a tuple in that order, duplicates raise ValueError.

    `has_aux=True` differentiates output 0 only and returns `(gradients, aux)` with `aux` always a
    tuple (`grads, (z,) = ...`). The generated code differentiates a `def` wrapper returning
    `out[0]` and each auxiliary through its own `stop_gradient` (a Primitive on 1.7, which a tuple
    makes raise in PYNATIVE; a HyperMap, which maps over nested tuples, cannot be built inside the
    def when 1.7 compiles it in GRAPH mode; GRAPH mode cannot parse an inline lambda; the
    auxiliaries add nothing to the gradient) and takes `aux` from a second call of `fn`, as
    MindSpore 1.8's own `ops.grad` did: converted only for a `def` whose second call computes the
    same values (MindSpore operators without randomness, no Cell). The mindspore.grad API page's
    example (`grad(net, grad_position=(1, 2))`, and with has_aux) is exact in both modes.
    On 1.7 a GradOperation cannot be built inside code GRAPH mode compiles ("This may be not
    defined, or it can't be a operator", measured on 1.7.0; 1.8 and later can): a grad in a
    Cell's `construct` gets its GradOperation made once in `__init__`; one inside a jit function
    is left alone (MSR021); in any other function each GradOperation is made once at module level,
    above the first statement that applies it, so a plain function holding the rewritten call
    still compiles when a `construct` calls it (measured on 1.7.0 in both modes; `downgrade --verify`
    runs such a function compiled in its GRAPH rows). Where mindspore has no module-level name
    above that statement, the GradOperation is built in place, as before.
    https://www.mindspore.cn/docs/en/r1.8/api_python/ops/mindspore.ops.grad.html

    From 1.8 to 2.7 grad exists but takes no `sens_param` (added in 2.8: TypeError "got an
    unexpected keyword argument" before), and GradOperation, which every release has, does: a
    grad that passes `sens_param=True` gets the same GradOperation form there, and the others are
    left to MS201 (1.8-1.10) or are already right. Proven as on 1.7, by running the call on 2.10
    and the GradOperation on the real 1.9 and 2.7, in both modes. From 1.10 a list of weights is
    what GradOperation differentiates, as a ParameterTuple is (measured on 1.10.0, 2.7.2 and 2.10.0
    in both modes; 1.7-1.9 in PYNATIVE mode take every Parameter the function uses), so a grad in
    `construct` whose weights are `trainable_params()` gets its GradOperation in `__init__` there.
    https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.grad.html
    """

    code = "MS302"
    title = "grad before MindSpore 1.8 (with sens_param: 2.8) becomes the GradOperation that returns the same"
    kind = "downgrade"
    severity = Severity.ERROR
    targets = VersionRange(high="2.8")
    prefilter = ("grad",)
    reasons = REASONS
    examples = Examples(
        valid=(Example("import mindspore as ms\ng = ms.ops.GradOperation()(fn)\n", "1.7"),),
        invalid=(
            Example(
                "import mindspore as ms\n\n\ndef step(net, weights, x):\n"
                "    return ms.grad(net, None, weights)(x)\n",
                "1.7",
                fixed=FIXED_1,
            ),
            Example(
                "import mindspore as ms\n\n\ndef f(x, y):\n    return x * y\n\n\n"
                "dy = ms.grad(f, 1)(1.0, 2.0)\n",
                "1.7",
                fixed=FIXED_2,
            ),
            Example(
                "import mindspore as ms\n\n\ndef step(net, weights, x, scale):\n"
                "    sens = ms.ops.fill(ms.float32, (), scale)\n"
                "    return ms.grad(net, None, weights, sens_param=True)(x, sens)\n",
                "1.7",
                fixed=FIXED_3,
            ),
            Example(
                "import mindspore as ms\n\n\ndef step(net, weights, x, scale):\n"
                "    sens = ms.ops.fill(ms.float32, (), scale)\n"
                "    return ms.grad(net, None, weights, sens_param=True)(x, sens)\n",
                "2.7",
                fixed=FIXED_3,
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        resolver = ctx.resolver
        parents = ctx.parents
        taken = all_names(ctx.tree)
        lines = source_lines(ctx.text)
        found: list[Diagnostic] = []
        converted: list[ast.Call] = []
        edits: list[Edit] = []
        generated = _Generated(parents, taken)
        made_once = _ModuleOperations(ctx.tree, parents, taken)
        hoists: dict[int, _Hoisted] = {}  # by class: the GradOperations made in its __init__
        new_import: Optional[str] = None
        calls = list(ctx.calls_to(GRAD))
        if ctx.target >= SINCE_1_8:  # grad is there: only what it does not take yet is converted
            calls = [call for call in calls if sets_flag(call, "sens_param")]
        nested = _nested(calls)
        for call in calls:
            if ctx.suppressed(self.code, call.func.lineno):
                continue  # a suppressed site is not part of the fix the converted ones share
            if call in nested:
                found.append(REASONS["MSR021"].at(call.lineno, _NESTED_REFUSED))
                continue
            arguments = _arguments(call)
            if isinstance(arguments, str):
                found.append(REASONS["MSR021"].at(call.lineno, arguments))
                continue
            passed = parameter_argument(ctx.tree, parents, call)
            if passed is not None:
                found.append(REASONS["MSR021"].at(call.lineno, _PARAMETER_REFUSED.format(passed)))
                continue
            form = _inline_form(parents, call, arguments)
            compiled = _compiled_scope(parents, call)
            hoisted: Optional[_Hoisted] = None
            if form is not None and compiled:
                place = _hoisted(parents, call, arguments, hoists, ctx.target >= LISTS_ARE_WEIGHTS)
                if isinstance(place, str):
                    refusal = _COMPILED_REFUSED.format(compiled, place)
                    found.append(REASONS["MSR021"].at(call.lineno, refusal))
                    continue
                hoisted = place
            helper: Optional[_Helper] = None
            if form is None and arguments.sens:
                found.append(REASONS["MSR021"].at(call.lineno, _SENS_REFUSED))
                continue
            if form is None:
                selection = _selection_site(ctx, parents, call, arguments, lines)
                if isinstance(selection, tuple):
                    code, detail = selection
                    found.append(REASONS[code].at(call.lineno, detail))
                    continue
                helper = selection
            # Outside `construct`, in a function, the GradOperation is made once at module level.
            planned: Optional[_Planned] = None
            if hoisted is None and _in_function(parents, call):
                flags = form[0] if form is not None else "get_all=True"
                top = module_reference(resolver, taken, "mindspore", (), new_import)
                planned = made_once.plan(call, flags, top)
            pending = new_import or (planned.new_import if planned is not None else None)
            # A local `ms` in the function around the call must not be taken for the module.
            scopes = enclosing_scopes(parents, call)
            reference = module_reference(resolver, taken, "mindspore", scopes, pending)
            needs_local = (
                planned is None
                or (helper is not None and helper.has_aux)
                or (
                    helper is None
                    and arguments.weights is not None
                    and not written_as_parameter_tuple(arguments.weights)
                )
            )
            if reference is None and needs_local:
                found.append(REASONS["MSR021"].at(call.lineno, "no free name for mindspore"))
                continue
            if reference is not None and needs_local:
                new_import = reference.new_import or new_import
            operation: Optional[str] = None  # the module-level GradOperation this site applies
            if planned is not None:
                operation = made_once.commit(planned)
                new_import = new_import or planned.new_import
            ms = reference.expression if reference is not None else ""
            if hoisted is not None:
                flags, operands = form  # type: ignore[misc]
                name = hoisted.attribute(flags, ms)
                applied = ", ".join(_source(ctx.text, item) for item in operands)
                replacement = f"self.{name}({applied})"
            elif helper is None:
                flags, operands = form  # type: ignore[misc]
                written = [_source(ctx.text, item) for item in operands]
                if arguments.weights is not None and not written_as_parameter_tuple(arguments.weights):
                    # Given a list, 1.7's GradOperation returns the gradients of every Parameter
                    # the function uses (measured on 1.7.0); a ParameterTuple, just the list's.
                    written[-1] = f"{ms}.ParameterTuple({written[-1]})"
                applied = ", ".join(written)
                head = operation or f"{ms}.ops.GradOperation({flags})"
                replacement = _fitted(lines, call, head, applied, line_limit(ctx.text))
            else:
                grad_all = operation or f"{ms}.ops.GradOperation(get_all=True)"
                replacement = _helper_defs(helper, ms, grad_all, ctx.text, generated)
            end = call.end_lineno or call.lineno
            edits.append(
                Edit(
                    (call.lineno, column(lines, call.lineno, call.col_offset)),
                    (end, column(lines, end, call.end_col_offset or 0)),
                    replacement,
                )
            )
            converted.append(call)
        if converted:
            edits += [place.edit(lines, newline_of(lines)) for place in hoists.values() if place.made]
            made_once.queue(generated)
            edits += _insertions(generated.inserted, lines, ctx.tree)
            unused = tuple(dict.fromkeys(name for call in converted for name in released_name(call.func)))
            imports = (new_import,) if new_import is not None else ()
            description = "the GradOperation that returns the same structure"
            fix = Fix(tuple(edits), "exact", description, imports=imports, unused=unused)
            missing = "does not exist before MindSpore 1.8"
            if ctx.target >= SINCE_1_8:
                missing = "takes no sens_param before MindSpore 2.8"
            for call in converted:
                message = f"grad {missing} (target {ctx.target}): {ast.unparse(call)} -> GradOperation"
                found.append(self.diagnostic(call.func, message, fix))
        yield from sorted(found, key=lambda item: (item.line, item.col))


@dataclass(frozen=True)
class _Arguments:
    fn: ast.expr
    position: ast.expr
    weights: Optional[ast.expr]  # None: no weights (absent or a literal None)
    has_aux: bool
    sens: bool  # sens_param=True: the gradient function takes the sensitivity after the inputs


_SENS_REFUSED = (
    "sens_param=True with has_aux or positions other than 0, None (with weights) or every input "
    "(the generated def would need the sens; with has_aux 2.10 wants a sens for output 0 only in "
    "PYNATIVE mode and one per output in GRAPH mode)"
)


def _fitted(lines: list[str], call: ast.Call, head: str, applied: str, limit: int) -> str:
    """`head(applied)` in place of ``call``, its arguments on a line of their own (as black splits
    it) where the line would pass the file's limit: a ParameterTuple around the weights makes it
    longer than the grad call was."""
    replacement = f"{head}({applied})"
    if call.end_lineno != call.lineno:
        return replacement
    line = lines[call.lineno - 1].rstrip("\r\n")
    start, end = (
        column(lines, call.lineno, call.col_offset),
        column(lines, call.lineno, call.end_col_offset or 0),
    )
    if width(line[:start] + replacement + line[end:]) <= limit:
        return replacement
    indent = line[: len(line) - len(line.lstrip())]
    newline = newline_of(lines)
    return f"{head}({newline}{indent}    {applied}{newline}{indent})"


_PARAMETER_REFUSED = (
    "the Parameter `{}` is passed as an input: 1.7's GradOperation takes only tensors and numbers "
    "as inputs (measured on 1.7.0); differentiate it as a weight (grad(fn, None, weights)) instead"
)

_COMPILED_REFUSED = (
    "inside `{}`, which GRAPH mode compiles: the GradOperation is made once in `__init__` (1.7 "
    "cannot compile one built there, measured on 1.7.0), which cannot be done here: {}"
)


@dataclass
class _Hoisted:
    """The GradOperations a Cell's `construct` applies, made once each in its `__init__`, right
    after `super().__init__()`: one attribute per set of flags."""

    class_def: ast.ClassDef
    super_call: ast.stmt
    names: dict[str, str] = field(default_factory=dict)  # flags -> attribute
    made: list[str] = field(default_factory=list)  # `grad_op = ms.ops.GradOperation(...)`

    def attribute(self, flags: str, ms: str) -> str:
        if flags not in self.names:
            name = free_attribute(self.class_def, "grad_op", list(self.names.values()))
            self.names[flags] = name
            self.made.append(f"{name} = {ms}.ops.GradOperation({flags})")
        return self.names[flags]

    def edit(self, lines: list[str], newline: str) -> Edit:
        return after_super_init(lines, self.super_call, self.made, newline)


# From 1.10, GradOperation(get_by_list=True) given a list of weights returns their gradients, as
# given a ParameterTuple (measured on 1.10.0, 2.7.2 and 2.10.0, in both modes, with a BatchNorm
# network and a Parameter left out of the list); 1.7, 1.8 and 1.9 in PYNATIVE mode return one for
# every Parameter the function uses.
LISTS_ARE_WEIGHTS = Version(1, 10)


def _hoisted(
    parents: dict[ast.AST, ast.AST],
    call: ast.Call,
    arguments: _Arguments,
    hoists: dict[int, _Hoisted],
    lists_are_weights: bool,
) -> Union[_Hoisted, str]:
    """Where a GradOperation applied in `construct` can be made instead, or why nowhere."""
    construct = next(
        (scope for scope in enclosing_scopes(parents, call) if isinstance(scope, FUNCTION_TYPES)), None
    )
    class_def = parents.get(construct) if construct is not None else None
    if construct is None or construct.name != "construct" or not isinstance(class_def, ast.ClassDef):
        return "not directly in a Cell's construct"
    init = own_init(class_def)
    super_call = super_init(init) if init is not None else None
    if init is None or super_call is None:
        return "the class has no __init__ calling super().__init__() as a statement of its own"
    weights = arguments.weights
    if (
        weights is not None and not lists_are_weights and not known_parameter_tuple(construct, init, weights)  # type: ignore[arg-type]
    ):
        return (
            "the weights are not known to be a ParameterTuple (before 1.10, given a list, "
            "GradOperation differentiates every Parameter the function uses)"
        )
    return hoists.setdefault(id(class_def), _Hoisted(class_def, super_call))


def _arguments(call: ast.Call) -> Union[_Arguments, str]:
    """What the call passes, or why it is not plain (MSR021's detail)."""
    bound = bind(call, ("fn", "grad_position", "weights", "has_aux"), ("sens_param",))
    if bound.problem == STARRED:
        return bound.problem
    if bound.problem:
        return f"{bound.problem} (return_ids: by hand)"
    given = bound.given
    sens = given.get("sens_param", ast.Constant(False))
    fn = given.get("fn")
    if fn is None:
        return "no function"
    aux = given.get("has_aux", ast.Constant(False))
    if not (isinstance(aux, ast.Constant) and aux.value in (True, False) and type(aux.value) is bool):
        return "has_aux is not a literal True or False"
    if not (isinstance(sens, ast.Constant) and type(sens.value) is bool):
        return "sens_param is not a literal True or False"
    weights = given.get("weights")
    if isinstance(weights, ast.Constant) and weights.value is None:
        weights = None
    return _Arguments(fn, given.get("grad_position", ast.Constant(0)), weights, aux.value, sens.value)


def _inline_form(
    parents: dict[ast.AST, ast.AST], call: ast.Call, arguments: _Arguments
) -> Optional[tuple[str, tuple[ast.expr, ...]]]:
    """(GradOperation flags, what it is applied to) where GradOperation alone returns the same."""
    form = _plain_inline_form(parents, call, arguments)
    if form is None or not arguments.sens:
        return form
    flags, operands = form
    # The sens stays the call's last argument: GradOperation(sens_param=True) takes it there too.
    return ", ".join(item for item in (flags, "sens_param=True") if item), operands


def _plain_inline_form(
    parents: dict[ast.AST, ast.AST], call: ast.Call, arguments: _Arguments
) -> Optional[tuple[str, tuple[ast.expr, ...]]]:
    if arguments.has_aux:
        return None
    positions = _positions(arguments.position)
    fn = arguments.fn
    if arguments.weights is not None:
        return ("get_by_list=True", (fn, arguments.weights)) if positions == "none" else None
    if positions == (0,):
        return "", (fn,)
    target = _differentiated(parents, call, fn)
    count = len(target[1]) if isinstance(target, tuple) else None
    if isinstance(positions, tuple) and count is not None and count > 1 and positions == tuple(range(count)):
        return "get_all=True", (fn,)
    return None


@dataclass(frozen=True)
class _Helper:
    call: ast.Call
    statement: ast.stmt  # the generated defs go right above it
    fn: str
    params: tuple[str, ...]
    positions: tuple[int, ...]
    has_aux: bool


def _selection_site(
    ctx: FileContext, parents: dict[ast.AST, ast.AST], call: ast.Call, arguments: _Arguments, lines: list[str]
) -> Union[_Helper, tuple[str, str]]:
    """The generated-def site, or (reason code, detail)."""
    if arguments.weights is not None:
        what = "has_aux with weights" if arguments.has_aux else "input and weight gradients together"
        return "MSR021", f"{what} (the result needs index selection across both)"
    positions = _positions(arguments.position)
    if not isinstance(positions, tuple):
        return "MSR022", "grad_position is not a literal int or tuple of ints"
    if len(set(positions)) != len(positions) or not positions:
        return "MSR022", "grad_position is empty or repeats a position (MindSpore 2.x raises ValueError)"
    if not isinstance(arguments.fn, ast.Name):
        return "MSR022", "the differentiated function is not a name"
    target = _differentiated(parents, call, arguments.fn)
    if isinstance(target, str):
        return "MSR022", target
    function, params = target
    if max(positions) >= len(params):
        return "MSR022", f"a position is not below `{arguments.fn.id}`'s {len(params)} parameter(s)"
    if arguments.has_aux:
        if function is None:
            cell = arguments.fn.id
            return "MSR022", f"has_aux=True on the Cell `{cell}` (a second forward may change its state)"
        problem = _aux_problem(ctx, function)
        if problem:
            return "MSR022", problem
    statement = _statement(parents, call, lines)
    if isinstance(statement, str):
        return "MSR022", statement
    reserved = {"grads", "out"} & set(params)
    if reserved:
        clash = sorted(reserved)[0]
        return "MSR022", f"`{arguments.fn.id}` has a parameter `{clash}`, a local of the generated def"
    return _Helper(call, statement, arguments.fn.id, params, positions, arguments.has_aux)


def _differentiated(
    parents: dict[ast.AST, ast.AST], call: ast.Call, fn: ast.expr
) -> Union[tuple[Optional[ast.FunctionDef], tuple[str, ...]], str]:
    """(the def or None for a Cell instance, its plain parameters) that ``fn`` names at the call,
    or why that is not known."""
    if not isinstance(fn, ast.Name):
        return "the differentiated function is not a name"
    module = _module(parents, call)
    for scope in [*enclosing_scopes(parents, call), module]:
        if isinstance(scope, ast.Lambda):
            if fn.id in {arg.arg for arg in scope.args.args} | {a.arg for a in scope.args.kwonlyargs}:
                return f"`{fn.id}` is a lambda's parameter"
            continue
        params = (
            {arg.arg for arg in (*scope.args.args, *scope.args.kwonlyargs)}
            if isinstance(scope, FUNCTION_TYPES)
            else set()
        )
        if fn.id in params:
            return f"`{fn.id}` is a parameter of `{scope.name}`"  # type: ignore[union-attr]
        bindings = bindings_in(scope, fn.id)  # type: ignore[arg-type]
        if not bindings:
            continue
        if len(bindings) != 1:
            return f"`{fn.id}` is bound more than once"
        binding = bindings[0]
        if isinstance(binding, ast.FunctionDef):
            count = _plain_parameters(binding)
            if count is None:
                return f"`{fn.id}` takes more than plain positional parameters"
            return binding, tuple(arg.arg for arg in binding.args.args)
        statement = parents.get(binding) if isinstance(binding, ast.Name) else binding
        return _cell_instance(module, statement, fn.id)
    return f"`{fn.id}` is not defined in this file"


def _cell_instance(
    module: ast.Module, binding: Optional[ast.AST], name: str
) -> Union[tuple[None, tuple[str, ...]], str]:
    """`net = Net(...)` with Net a module-level class whose construct takes plain parameters."""
    assigned = isinstance(binding, ast.Assign) and len(binding.targets) == 1
    if not (assigned and isinstance(binding.value, ast.Call)):  # type: ignore[attr-defined]
        return f"`{name}` is neither a def nor bound to `SomeCell(...)`"
    class_name = dotted_name(binding.value.func)  # type: ignore[attr-defined]
    classes = [node for node in module.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    if len(classes) != 1 or not any(last_name(base) == "Cell" for base in classes[0].bases):
        return f"`{name}` is not an instance of a Cell class defined at module level here"
    constructs = [
        item for item in classes[0].body if isinstance(item, ast.FunctionDef) and item.name == "construct"
    ]
    if len(constructs) != 1 or _plain_parameters(constructs[0]) is None or not constructs[0].args.args:
        return f"`{class_name}.construct` is not one method of plain parameters"
    return None, tuple(arg.arg for arg in constructs[0].args.args[1:])


def _module(parents: dict[ast.AST, ast.AST], node: ast.AST) -> ast.Module:
    while not isinstance(node, ast.Module):
        node = parents[node]
    return node


def _aux_problem(ctx: FileContext, function: ast.FunctionDef) -> Optional[str]:
    """Why a second call of ``function`` may not compute the auxiliaries the first one did."""
    returned = [item.value for item in own_returns(function)]
    if not returned or not all(isinstance(value, ast.Tuple) and len(value.elts) >= 2 for value in returned):
        return f"has_aux=True, and `{function.name}` does not always return a tuple of two or more"
    params = {arg.arg for arg in function.args.args}
    calls = [node for node in walk(function) if isinstance(node, ast.Call)]
    for node in calls:
        spelled = dotted_name(node.func) or ast.unparse(node.func)
        if _RANDOM.search(spelled.rsplit(".", 1)[-1].lower()):
            return f"has_aux=True, and `{function.name}` calls `{spelled}`, which draws random numbers"
    for node in calls:
        operator = (ctx.qualified_name(node.func) or "").startswith(("mindspore.ops.", "mindspore.numpy."))
        # A tensor method: on a parameter or on a value computed here, never on a closure's name.
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        method = receiver is not None and (
            not isinstance(receiver, (ast.Name, ast.Attribute)) or getattr(receiver, "id", None) in params
        )
        builtin = isinstance(node.func, ast.Name) and node.func.id in _BUILTINS
        if not (operator or method or builtin):
            return (
                f"has_aux=True: the auxiliaries come from a second call of `{function.name}`, which calls "
                f"`{ast.unparse(node.func)}` (a Cell may change state in a forward)"
            )
    return None


def _compiled_scope(parents: dict[ast.AST, ast.AST], node: ast.AST) -> Optional[str]:
    """The name of the `construct` or jit function around ``node``, which GRAPH mode compiles."""
    scope = compiled_function(parents, node)
    return scope.name if scope is not None else None


def _statement(parents: dict[ast.AST, ast.AST], node: ast.AST, lines: list[str]) -> Union[ast.stmt, str]:
    """The statement around ``node``, where a def can go right above it, or why not."""
    current = parents.get(node)
    while current is not None and not isinstance(current, ast.stmt):
        current = parents.get(current)
    if current is None:
        return "not inside a statement"
    owner = parents.get(current)
    while owner is not None and not isinstance(owner, (*FUNCTION_TYPES, ast.ClassDef, ast.Module)):
        owner = parents.get(owner)
    if isinstance(owner, ast.ClassDef):
        return "in a class body"
    compiled = _compiled_scope(parents, node)
    if compiled:
        return f"inside `{compiled}`, which GRAPH mode compiles together with the generated def"
    first = _first_line_node(current)
    line = lines[first.lineno - 1]
    before = line.encode("utf-8")[: first.col_offset].decode("utf-8", "replace")
    if before.strip() or line.lstrip().startswith("elif"):
        return "the statement does not start its own line"
    return current


@dataclass
class _Generated:
    """The defs generated for a file, by the statement they go above; one is reused by a later
    statement of the same block that needs the same def."""

    parents: dict[ast.AST, ast.AST]
    taken: set[str]
    inserted: dict[int, tuple[ast.stmt, list[str]]] = field(default_factory=dict)
    names: dict[tuple[object, ...], tuple[str, ast.stmt]] = field(default_factory=dict)

    def define(self, helper: _Helper, key: tuple[object, ...], stem: str, block: str) -> str:
        """The name of the def ``block`` (written with NAME for its name) above the site."""
        earlier = self.names.get(key)
        if earlier is not None:
            name, statement = earlier
            same_block = self.parents.get(statement) is self.parents.get(helper.statement)
            if same_block and statement.lineno <= helper.statement.lineno:
                return name
        name = free_name(stem, self.taken)
        self.names[key] = (name, helper.statement)
        self.inserted.setdefault(id(helper.statement), (helper.statement, []))[1].append(
            block.replace("NAME", name)
        )
        return name


def _helper_defs(helper: _Helper, ms: str, grad_all: str, text: str, generated: _Generated) -> str:
    """Queue the generated defs above the call's statement; return what replaces the call."""
    params = ", ".join(helper.params)
    chosen = ", ".join(f"grads[{index}]" for index in helper.positions)
    # One position is a bare tensor (`grad(fn, 1)` and `grad(fn, (1,))` alike), several a tuple.
    selected = chosen if len(helper.positions) == 1 else f"({chosen})"
    stem = helper.fn.strip("_") or "fn"
    written = " ".join((ast.get_source_segment(text, helper.call) or ast.unparse(helper.call)).split())
    differentiated, result = helper.fn, selected
    if helper.has_aux:
        differentiated = generated.define(
            helper,
            ("aux", helper.fn, ms),
            f"_{stem}_with_aux",
            f"def NAME({params}):\n"
            f"    out = {helper.fn}({params})\n"
            "    aux = ()\n"
            "    for item in out[1:]:\n"
            f"        aux = aux + ({ms}.ops.stop_gradient(item),)\n"
            "    return (out[0],) + aux\n",
        )
        result = f"{selected}, {helper.fn}({params})[1:]"
    doc = f"{written} before MindSpore 1.8."
    if len(doc) > 80 or '"' in doc or "\\" in doc:
        doc = "grad before MindSpore 1.8: the positions' gradients out of every input's."
    return generated.define(
        helper,
        ("grad", helper.fn, helper.positions, helper.has_aux, ms, grad_all),
        f"_{stem}_grad",
        f"def NAME({params}):\n"
        f'    """{doc}"""\n'
        f"    grads = {grad_all}({differentiated})({params})\n"
        f"    return {result}\n",
    )


_FLAG_NAMES = (("get_all", "all"), ("get_by_list", "by_list"), ("sens_param", "sens"))


@dataclass(frozen=True)
class _Planned:
    key: tuple[str, str]  # (flags, how mindspore is spelled at module level)
    statement: ast.stmt  # the top-level statement of the site
    new_import: Optional[str]


def _in_function(parents: dict[ast.AST, ast.AST], node: ast.AST) -> bool:
    """Whether ``node`` is inside a def (module-level code is never compiled: built in place)."""
    return any(isinstance(scope, FUNCTION_TYPES) for scope in enclosing_scopes(parents, node))


@dataclass
class _ModuleOperations:
    """The GradOperations the converted sites outside `construct` apply, made once each at module
    level above the first statement that needs them. MindSpore 1.7's GRAPH mode cannot compile a
    GradOperation built inside a function it compiles ("This may be not defined, or it can't be a
    operator", measured on 1.7.0), and a plain function may be called from a `construct`; one made
    at import time compiles there and runs the same when the function is called eagerly."""

    tree: ast.Module
    parents: dict[ast.AST, ast.AST]
    taken: set[str]
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (flags, mindspore) -> name
    anchor: Optional[ast.stmt] = None

    def plan(self, call: ast.Call, flags: str, top: Optional[ModuleReference]) -> Optional[_Planned]:
        """Where the GradOperation with ``flags`` would be made for ``call``; None where mindspore
        has no module-level name bound above the call's top-level statement (it is then built
        in place)."""
        statement = _top_statement(self.parents, call)
        if top is None or statement is None:
            return None
        if top.new_import is None and not _imported_above(self.tree, top.expression.split(".")[0], statement):
            return None
        return _Planned((flags, top.expression), statement, top.new_import)

    def commit(self, planned: _Planned) -> str:
        """The module-level name of the planned GradOperation, made above its statement."""
        if planned.key not in self.names:
            flags = planned.key[0]
            parts = [part for flag, part in _FLAG_NAMES if flag in flags]
            stem = "_".join(["_grad", *parts]) if parts else "_grad_op"
            self.names[planned.key] = free_name(stem, self.taken)
        if self.anchor is None or planned.statement.lineno < self.anchor.lineno:
            self.anchor = planned.statement
        return self.names[planned.key]

    def queue(self, generated: _Generated) -> None:
        """Put the module-level definitions above the first statement that uses one."""
        if self.anchor is None:
            return
        block = "".join(
            f"{name} = {ms}.ops.GradOperation({flags})\n" for (flags, ms), name in self.names.items()
        )
        generated.inserted.setdefault(id(self.anchor), (self.anchor, []))[1].insert(0, block)


def _top_statement(parents: dict[ast.AST, ast.AST], node: ast.AST) -> Optional[ast.stmt]:
    """The statement of the module's body that holds ``node``."""
    current, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, ast.Module):
        current, parent = parent, parents.get(parent)
    return current if parent is not None and isinstance(current, ast.stmt) else None


def _imported_above(tree: ast.Module, name: str, statement: ast.stmt) -> bool:
    """Whether a module-level import binds ``name`` before ``statement``, and nothing rebinds it."""
    for item in tree.body:
        if item is statement or item.lineno >= statement.lineno:
            return False
        if isinstance(item, (ast.Import, ast.ImportFrom)):
            bound = [alias.asname or alias.name.split(".")[0] for alias in item.names]
            if name in bound:
                return True
    return False


def _insertions(
    inserted: dict[int, tuple[ast.stmt, list[str]]], lines: list[str], tree: ast.Module
) -> list[Edit]:
    """One edit per statement: its generated defs, indented like it, with PEP 8's blank lines."""
    edits: list[Edit] = []
    newline = newline_of(lines)
    for statement, blocks in inserted.values():
        first = _first_line_node(statement)
        line = lines[first.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        blank = 2 if statement in tree.body else 1  # pycodestyle: E302/E305 at module level, E306 in a def
        body = generated_blocks(blocks, indent, blank, newline)
        previous = lines[first.lineno - 2] if first.lineno > 1 else ""
        if previous.strip() and not previous.rstrip().endswith(":"):
            body = newline * blank + body
        edits.append(Edit((first.lineno, 0), (first.lineno, 0), body))
    return edits


def _first_line_node(statement: ast.stmt) -> ast.AST:
    decorators = getattr(statement, "decorator_list", None)
    return decorators[0] if decorators else statement


def _source(text: str, node: ast.expr) -> str:
    return ast.get_source_segment(text, node) or ast.unparse(node)


def _positions(node: ast.expr) -> Union[tuple[int, ...], str, None]:
    """(0,) for 0 or (0,); the tuple for a literal tuple of ints; "none" for None; else None."""
    if isinstance(node, ast.Constant) and node.value is None:
        return "none"
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return (node.value,)
    if isinstance(node, ast.Tuple) and all(
        isinstance(item, ast.Constant) and type(item.value) is int for item in node.elts
    ):
        return tuple(item.value for item in node.elts)  # type: ignore[attr-defined]
    return None


def _plain_parameters(function: Optional[ast.FunctionDef]) -> Optional[int]:
    if function is None:
        return None
    arguments = function.args
    if arguments.posonlyargs or arguments.kwonlyargs or arguments.vararg or arguments.kwarg:
        return None
    if arguments.defaults:
        return None
    return len(arguments.args)
