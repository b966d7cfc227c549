"""MS301: `value_and_grad(fn, None, weights[, has_aux=True | sens_param=True])` for a MindSpore older
than 1.8, and with `sens_param=True` for one older than 2.8."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Optional, Union

from ms_migrate.analysis.arguments import bind, sets_flag
from ms_migrate.analysis.names import (
    FUNCTION_TYPES,
    NameResolver,
    all_names,
    bindings_in,
    enclosing_scopes,
    free_name,
    module_reference,
    own_returns,
)
from ms_migrate.analysis.project import last_name
from ms_migrate.analysis.walk import walk
from ms_migrate.analysis.weights import parameter_argument, written_as_several
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.reasons import Note, Reason, registry
from ms_migrate.rewrite.import_changes import released_name
from ms_migrate.rewrite.text_edits import column, generated_blocks, newline_of
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

VALUE_AND_GRAD = frozenset({"mindspore.value_and_grad", "mindspore.ops.value_and_grad"})
Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef]

REASONS = registry(
    Reason(
        "MSR020",
        "downgrade-shape",
        "this value_and_grad is not in a shape the downgrade converts",
        "Below MindSpore 1.8 only GradOperation exists. The downgrade converts "
        "`grad_fn = value_and_grad(fn, None, weights[, has_aux=True | sens_param=True])` where `fn` "
        "is a `def` of the same scope with plain positional parameters, and `grad_fn` is only called, "
        "with those parameters (and the sensitivity last, with sens_param), positionally; and "
        "`self.grad_fn = value_and_grad(self.method, None, weights)` in `__init__` of a plain class "
        "or of a direct subclass of `mindspore.nn.Cell`. Other shapes (input gradients, return_ids, "
        "has_aux together with sens_param, a grad function passed around, a Cell on which this file "
        "calls set_grad(), where PYNATIVE would run GradOperation's forward twice) are left for a "
        "hand conversion, with the detail saying which condition failed.",
    ),
)

NOTES = {
    "MSN004": Note(
        "MSN004",
        "the Cell holding value_and_grad now holds a generated Cell (its parameter names unchanged): "
        "do not call set_grad() on the holding Cell, or in PYNATIVE mode GradOperation runs the "
        "forward a second time per step (BatchNorm statistics and Dropout masks then change); its "
        "cells_and_names() lists the two generated Cells.",
    ),
}

BEFORE = """\
import mindspore as ms


def train(model, loss_fn, optimizer, data, label):
    def forward_fn(x, y):
        logits = model(x)
        return loss_fn(logits, y), logits

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
    (loss, _), grads = grad_fn(data, label)
    optimizer(grads)
    return loss
"""

BEFORE_SENS = """\
import mindspore as ms


def train(network, optimizer, scale, data, label):
    def forward_fn(x, y):
        return network(x, y)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, sens_param=True)
    sens = ms.ops.fill(ms.float32, (), scale)
    loss, grads = grad_fn(data, label, sens)
    optimizer(tuple(grad / scale for grad in grads))
    return loss
"""


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = '''\
import mindspore as ms


def train(model, loss_fn, optimizer, data, label):
    def forward_fn(x, y):
        logits = model(x)
        return loss_fn(logits, y), logits

    class _Forward(ms.nn.Cell):
        """The function as a Cell: GradOperation reuses its recorded forward."""

        def __init__(self, fn):
            super().__init__()
            self.fn = fn
            self.hyper_map = ms.ops.HyperMap()

        def construct(self, x, y):
            out = self.fn(x, y)
            return (out[0],) + self.hyper_map(ms.ops.stop_gradient, out[1:])

    class _ValueAndGrad(ms.nn.Cell):
        """value_and_grad(fn, None, weights) before MindSpore 1.8."""

        def __init__(self, forward, weights):
            super().__init__()
            self.forward = forward
            self.forward.set_grad()
            weights = ms.ParameterTuple(weights)
            self.weights = weights
            self.grad = ms.ops.GradOperation(get_by_list=True)

        def construct(self, x, y):
            outputs = self.forward(x, y)
            grads = self.grad(self.forward, self.weights)(x, y)
            return outputs, grads

    grad_fn = _ValueAndGrad(_Forward(forward_fn), optimizer.parameters)
    (loss, _), grads = grad_fn(data, label)
    optimizer(grads)
    return loss
'''

FIXED_2 = '''\
import mindspore as ms


def train(network, optimizer, scale, data, label):
    def forward_fn(x, y):
        return network(x, y)

    class _Forward(ms.nn.Cell):
        """The function as a Cell: GradOperation reuses its recorded forward."""

        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def construct(self, x, y):
            return self.fn(x, y)

    class _ValueAndGrad(ms.nn.Cell):
        """value_and_grad(fn, None, weights, sens_param=True) before MindSpore 1.8."""

        def __init__(self, forward, weights):
            super().__init__()
            self.forward = forward
            self.forward.set_grad()
            weights = ms.ParameterTuple(weights)
            self.weights = weights
            self.grad = ms.ops.GradOperation(get_by_list=True, sens_param=True)

        def construct(self, x, y, sens):
            outputs = self.forward(x, y)
            grads = self.grad(self.forward, self.weights)(x, y, sens)
            return outputs, grads

    grad_fn = _ValueAndGrad(_Forward(forward_fn), optimizer.parameters)
    sens = ms.ops.fill(ms.float32, (), scale)
    loss, grads = grad_fn(data, label, sens)
    optimizer(tuple(grad / scale for grad in grads))
    return loss
'''


class ValueAndGradToGradOperation(Rule):
    """`mindspore.value_and_grad` and `mindspore.ops.value_and_grad` do not exist before 1.8.

    The exact 1.x form is the one `nn.TrainOneStepCell` uses: a Cell that runs the forward and
    then `GradOperation(get_by_list=True)` on the same forward Cell, with `set_grad()` called on
    it. Measured on MindSpore 2.10 CPU, where both APIs exist, with BatchNorm and Dropout, over
    three steps in PYNATIVE and GRAPH mode: losses, gradients, parameters, optimizer moments and
    BatchNorm statistics are bit-identical. Any other form runs the forward twice in one of the
    modes: two separate calls from Python compile two graphs in GRAPH mode, and PYNATIVE reuses
    the recorded forward only of a `set_grad()` Cell.

    A Cell that holds it (`self.grad_fn = value_and_grad(self.forward, None, weights)` in a train
    step's `__init__`) gets the same two Cells, with the weights held by plain attribute, not
    registered: Cell registers a Parameter set as its attribute, and the Cell holding the generated
    one then prefixes their names with `grad_fn.`, which changes checkpoint keys. Held that way,
    every parameter name, `parameters_and_names()` and `trainable_params()` stay as they were, and
    the numbers (BatchNorm and Dropout included) are bit-identical in GRAPH mode, and in PYNATIVE
    unless set_grad() is called on the holding Cell itself: PYNATIVE then records that Cell's
    whole step, GradOperation finds no forward recorded for its own Cell and runs it again. Such a
    Cell is left alone when this file calls its set_grad() (MSN004 says so for other files). Its
    `cells_and_names()` gains the two generated Cells.

    `has_aux=True` becomes a forward Cell returning `out[0]` and the auxiliaries through
    `HyperMap()(stop_gradient, out[1:])`: GradOperation differentiates the sum of all outputs, and
    the auxiliaries then add nothing, as with has_aux. Mapped, because on 1.7 `stop_gradient` is a
    Primitive, and a tuple (of the outputs, or one output that is itself a tuple, as a multi-task
    model returns) makes it raise in PYNATIVE (measured on 1.7.0). The call's result
    keeps its structure, `(outputs, grads)`.

    The weights become a `ParameterTuple`: given a Python list (`trainable_params()`, the 2.x
    tutorials' GAN shape) 1.7's GradOperation returns the gradients of every Parameter the
    function uses, and one bare Parameter a tuple of them all (measured on 1.7.0). Where the
    weights may be one bare Parameter, the generated Cell returns its gradient bare, as
    value_and_grad does.

    `sens_param=True` (a loss scale, say) becomes `GradOperation(get_by_list=True, sens_param=True)`,
    and the sensitivity stays the grad function's last argument, as in `nn.TrainOneStepWithLossScaleCell`.
    Measured on 2.10 CPU with Dense and BatchNorm over three optimizer steps, in PYNATIVE and GRAPH
    mode, with a scalar sens (`ops.fill(ms.float32, (), 1024.0)`) and with a two-output function and
    a tuple sens: value_and_grad's value is the forward output, unscaled, and the value, gradients,
    parameters, BatchNorm statistics and optimizer moments are bit-identical. has_aux together with
    sens_param is left alone: 2.10 wants a sens for output 0 only in PYNATIVE and one per output in
    GRAPH mode (each raises in the other mode), so no single GradOperation form matches both.
    The functional API: https://www.mindspore.cn/docs/en/r1.8/api_python/ops/mindspore.ops.value_and_grad.html

    From 1.8 to 2.7 value_and_grad exists but takes no `sens_param` (added in 2.8: TypeError
    "got an unexpected keyword argument" before): a call that passes it gets the same Cells there,
    the others are left to MS201 (1.8-1.10) or are already right. Proven as on 1.7, by running the
    call on 2.10 and the Cells on the real 1.9 and 2.7, in both modes.
    https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.value_and_grad.html
    """

    code = "MS301"
    title = "value_and_grad before MindSpore 1.8 (with sens_param: 2.8) becomes GradOperation in a Cell"
    kind = "downgrade"
    severity = Severity.ERROR
    targets = VersionRange(high="2.8")
    prefilter = ("value_and_grad",)
    reasons = REASONS
    notes = NOTES
    examples = Examples(
        valid=(Example("import mindspore as ms\ngrad = ms.ops.GradOperation(get_by_list=True)\n", "1.7"),),
        invalid=(
            Example(BEFORE, "1.7", fixed=FIXED_1),
            Example(BEFORE_SENS, "1.7", fixed=FIXED_2),
            Example(BEFORE_SENS, "2.7", fixed=FIXED_2),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        """A refusal per site that is not in the converted shape; a fix per site that is, which
        also lets the engine drop a `from mindspore import value_and_grad` nothing uses any more."""
        parents = ctx.parents
        resolver = ctx.resolver
        taken = all_names(ctx.tree)
        found: list[Diagnostic] = []
        new_import: Optional[str] = None
        for call in _value_and_grad_calls(ctx):
            applied = parents.get(call)
            if isinstance(applied, ast.Call) and applied.func is call:
                continue  # `value_and_grad(...)(...)`: MS304's
            if ctx.suppressed(self.code, call.func.lineno):
                continue  # its generated names must not be taken from the sites that convert
            passed = parameter_argument(ctx.tree, parents, call)
            site = _site(ctx, parents, call) if passed is None else _PARAMETER_REFUSED.format(passed)
            if isinstance(site, str):
                found.append(REASONS["MSR020"].at(call.lineno, site))
                continue
            rewritten = _rewrite(ctx, resolver, parents, site, taken, new_import)
            if isinstance(rewritten, str):
                found.append(REASONS["MSR020"].at(call.lineno, rewritten))
                continue
            edits, needed = rewritten
            new_import = needed or new_import
            fix = Fix(
                tuple(edits),
                "exact",
                "GradOperation in a Cell that runs the forward once",
                imports=(needed,) if needed else (),
                unused=released_name(call.func),
            )
            aux = ", has_aux=True" if site.has_aux else ", sens_param=True" if site.sens else ""
            missing = "does not exist before MindSpore 1.8"
            if ctx.target >= SINCE_1_8:
                missing = "takes no sens_param before MindSpore 2.8"
            message = (
                f"value_and_grad {missing} (target {ctx.target}): "
                f"value_and_grad({ast.unparse(site.fn)}, None, weights{aux}) -> GradOperation in a Cell "
                "that runs the forward once"
            )
            found.append(self.diagnostic(call.func, message, fix))
            if site.in_cell:
                found.append(NOTES["MSN004"].at(call.lineno))
        yield from sorted(found, key=lambda item: (item.line, item.col))


_PARAMETER_REFUSED = (
    "the Parameter `{}` is passed as an input: 1.7 takes only tensors and numbers as the inputs of "
    "the generated Cell (measured on 1.7.0); differentiate it as a weight instead"
)


SINCE_1_8 = Version(1, 8)


def _value_and_grad_calls(ctx: FileContext) -> Iterator[ast.Call]:
    """The calls to convert: every one before 1.8; from 1.8, where value_and_grad is there, only
    those that pass the `sens_param` it does not take yet."""
    for node in ctx.nodes:
        if (
            isinstance(node, ast.Call)
            and ctx.qualified_name(node.func) in VALUE_AND_GRAD
            and (ctx.target < SINCE_1_8 or sets_flag(node, "sens_param"))
        ):
            yield node


@dataclass(frozen=True)
class _Site:
    statement: ast.Assign  # grad_fn = value_and_grad(...) or self.grad_fn = ... in __init__
    call: ast.Call
    function: Union[ast.FunctionDef, ast.AsyncFunctionDef]  # fn, or the method self.fn names
    fn: ast.expr  # `forward_fn` or `self.forward`
    params: tuple[str, ...]  # what the grad function is called with (a method's, less self)
    weights: ast.expr
    has_aux: bool
    sens: bool  # sens_param=True: the grad function takes the sensitivity after the params
    before: ast.stmt  # the generated classes go right above this statement, at its indentation
    scope: Optional[Union[ast.FunctionDef, ast.AsyncFunctionDef]]  # where they go; None: module level
    in_cell: bool = False  # self.grad_fn of a Cell: the generated Cell must not register the weights


def _scope_of(parents: dict[ast.AST, ast.AST], node: ast.AST) -> Optional[Scope]:
    current = parents.get(node)
    while current is not None and not isinstance(current, (ast.Module, *FUNCTION_TYPES)):
        if isinstance(current, (ast.ClassDef, ast.Lambda)):
            return None
        current = parents.get(current)
    return current


def _arguments(call: ast.Call) -> Optional[tuple[ast.expr, ast.expr, ast.expr, bool, bool]]:
    """(fn, grad_position, weights, has_aux, sens_param) as written, or None when they are not plain."""
    names = ("fn", "grad_position", "weights")
    bound = bind(call, names, ("has_aux", "sens_param"))
    if bound.problem or not all(name in bound.given for name in names):
        return None
    flags = {"has_aux": False, "sens_param": False}
    for flag in flags:
        value = bound.given.get(flag, ast.Constant(False))
        if not (isinstance(value, ast.Constant) and type(value.value) is bool):
            return None
        flags[flag] = value.value
    given = bound.given
    return given["fn"], given["grad_position"], given["weights"], flags["has_aux"], flags["sens_param"]


def _site(ctx: FileContext, parents: dict[ast.AST, ast.AST], call: ast.Call) -> Union[_Site, str]:
    """The site, or why it is not in the shape converted (MSR020's detail)."""
    statement = parents.get(call)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
        return "not assigned to a name (`grad_fn = value_and_grad(...)`)"
    arguments = _arguments(call)
    if arguments is None:
        return "arguments other than fn, grad_position=None, weights, a literal has_aux and sens_param"
    fn, position, weights, has_aux, sens = arguments
    if not (isinstance(position, ast.Constant) and position.value is None):
        return "input gradients (grad_position is not None)"
    if has_aux and sens:
        # Measured on 2.10: PYNATIVE takes a sens for output 0 only, GRAPH one per output.
        return (
            "has_aux=True with sens_param=True: MindSpore 2.10 takes a sens for output 0 only in "
            "PYNATIVE mode and one per output in GRAPH mode, so no one GradOperation form matches"
        )
    target = statement.targets[0]
    if isinstance(target, ast.Name):
        return _function_site(parents, statement, call, fn, weights, has_aux, sens)
    if _is_self_attribute(target):
        return _attribute_site(ctx, parents, statement, call, fn, weights, has_aux, sens)
    return "not assigned to a name or to self.<name>"


def _is_self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _function_site(
    parents: dict[ast.AST, ast.AST],
    statement: ast.Assign,
    call: ast.Call,
    fn: ast.expr,
    weights: ast.expr,
    has_aux: bool,
    sens: bool,
) -> Union[_Site, str]:
    """`grad_fn = value_and_grad(forward_fn, None, weights)`, forward_fn a def of the same scope."""
    scope = _scope_of(parents, statement)
    if scope is None:
        return "inside a class body or a lambda"
    if not isinstance(fn, ast.Name):
        return "the differentiated function is not a name or self.<method>"
    definitions = bindings_in(scope, fn.id)
    function = definitions[0] if len(definitions) == 1 else None
    if not isinstance(function, ast.FunctionDef):
        return f"`{fn.id}` is not one `def` of this scope"
    problem = _signature_problem(function, fn.id, has_aux, method=False)
    if problem:
        return problem
    if sens and any(isinstance(item.value, ast.Tuple) for item in own_returns(function)):
        # The generated Cell is called from Python here, so its sens is a graph input.
        return (
            f"sens_param=True on `{fn.id}`, which returns several outputs, with the grad function "
            "called from Python: MindSpore 1.7's GRAPH mode cannot take the tuple of sens as the "
            'generated Cell\'s input ("Parameter[2] has no default param", measured on 1.7.0)'
        )
    params = tuple(arg.arg for arg in function.args.args)
    grad_fn = statement.targets[0].id  # type: ignore[attr-defined]
    if len(bindings_in(scope, grad_fn)) != 1:
        return f"`{grad_fn}` is bound more than once"
    mentions = [node for node in walk(scope) if isinstance(node, ast.Name) and node.id == grad_fn]
    problem = _calls_only(parents, mentions, statement.targets[0], f"`{grad_fn}`", len(params), sens)
    if problem:
        return problem
    local = scope if isinstance(scope, FUNCTION_TYPES) else None
    return _Site(statement, call, function, fn, params, weights, has_aux, sens, statement, local)


def _attribute_site(
    ctx: FileContext,
    parents: dict[ast.AST, ast.AST],
    statement: ast.Assign,
    call: ast.Call,
    fn: ast.expr,
    weights: ast.expr,
    has_aux: bool,
    sens: bool,
) -> Union[_Site, str]:
    """`self.grad_fn = value_and_grad(self.forward, None, weights)` in `__init__` of a plain class
    (a trainer) or of a direct subclass of `mindspore.nn.Cell` (a train step), forward a method of
    that class, and `self.grad_fn` only called there."""
    init = parents.get(statement)
    class_def = parents.get(init) if init is not None else None
    if not (
        isinstance(init, ast.FunctionDef)
        and init.name == "__init__"
        and isinstance(class_def, ast.ClassDef)
        and isinstance(parents.get(class_def), ast.Module)
    ):
        return "self.<name> assigned outside the __init__ of a module-level class"
    in_cell = _is_cell_class(ctx, class_def)
    if not in_cell and (any(last_name(base) != "object" for base in class_def.bases) or class_def.keywords):
        return f"{class_def.name} has a base class other than object or mindspore.nn.Cell"
    if not _is_self_attribute(fn):
        return "the differentiated function is not a name or self.<method>"
    method_name = fn.attr  # type: ignore[attr-defined]
    methods = [item for item in class_def.body if isinstance(item, FUNCTION_TYPES)]
    named = [item for item in methods if item.name == method_name]
    function = named[0] if len(named) == 1 else None
    if not isinstance(function, ast.FunctionDef) or _assigned_on_self(class_def, method_name):
        return f"`self.{method_name}` is not one method of {class_def.name}"
    problem = _signature_problem(function, f"self.{method_name}", has_aux, method=True)
    if problem:
        return problem
    params = tuple(arg.arg for arg in function.args.args[1:])
    grad_fn = statement.targets[0].attr  # type: ignore[attr-defined]
    if _assigned_on_self(class_def, grad_fn) > 1:
        return f"`self.{grad_fn}` is assigned more than once"
    module = parents[class_def]
    subclasses = [
        node.name
        for node in walk(module)
        if isinstance(node, ast.ClassDef) and class_def.name in {last_name(base) for base in node.bases}
    ]
    if subclasses:
        return f"{subclasses[0]} subclasses {class_def.name} and may use `self.{grad_fn}`"
    mentions = [
        node
        for node in walk(class_def)
        if _is_self_attribute(node) and node.attr == grad_fn  # type: ignore[attr-defined]
    ]
    problem = _calls_only(parents, mentions, statement.targets[0], f"`self.{grad_fn}`", len(params), sens)
    if problem:
        return problem
    if in_cell:
        problem = _cell_problem(parents, class_def, init, statement)
        if problem:
            return problem
    before = class_def.decorator_list[0] if class_def.decorator_list else class_def
    return _Site(statement, call, function, fn, params, weights, has_aux, sens, before, None, in_cell)  # type: ignore[arg-type]


def _is_cell_class(ctx: FileContext, class_def: ast.ClassDef) -> bool:
    """A direct subclass of `mindspore.nn.Cell` and nothing else: a base of the user's own could
    hold or call what the analysis does not see."""
    return (
        len(class_def.bases) == 1
        and not class_def.keywords
        and ctx.qualified_name(class_def.bases[0]) in {"mindspore.nn.Cell", "mindspore.nn.cell.Cell"}
    )


def _cell_problem(
    parents: dict[ast.AST, ast.AST], class_def: ast.ClassDef, init: ast.FunctionDef, statement: ast.Assign
) -> Optional[str]:
    """Why a Cell's `self.grad_fn = value_and_grad(...)` cannot become the generated Cell.

    Assigning a Cell attribute before `Cell.__init__` raises, where the function did not. And
    measured on MindSpore 2.10 CPU: with set_grad() on the Cell that holds it, PYNATIVE records
    that Cell's whole step, GradOperation finds no recorded forward of its own and runs the
    forward a second time (BatchNorm statistics and Dropout masks then differ); value_and_grad
    runs it once whatever set_grad() says. On the network inside, set_grad() changes nothing.
    """
    initialised = False
    for item in init.body:
        if item is statement:
            break
        initialised = initialised or _is_init_call(item)
    if not initialised:
        target = ast.unparse(statement.targets[0])
        return f"`{target}` is assigned before {class_def.name}'s super().__init__()"
    module = parents[class_def]
    instances = {
        target.id
        for node in walk(module)
        if isinstance(node, ast.Assign) and _constructs(node.value, class_def.name)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in walk(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        named = receiver.id if isinstance(receiver, ast.Name) else None
        on_self = named == "self" and _inside(parents, node, class_def)
        on_instance = named in instances or _constructs(receiver, class_def.name)
        if node.func.attr == "set_grad" and (on_self or on_instance):
            return (
                f"set_grad() is called on the Cell {class_def.name} (line {node.lineno}): in PYNATIVE "
                "mode GradOperation would then run its forward a second time"
            )
    return None


def _is_init_call(statement: ast.stmt) -> bool:
    """`super().__init__(...)`, `super(Step, self).__init__(...)` or `nn.Cell.__init__(self, ...)`."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "__init__"
    )


def _constructs(node: ast.AST, class_name: str) -> bool:
    return isinstance(node, ast.Call) and last_name(node.func) == class_name


def _inside(parents: dict[ast.AST, ast.AST], node: ast.AST, ancestor: ast.AST) -> bool:
    current = parents.get(node)
    while current is not None and current is not ancestor:
        current = parents.get(current)
    return current is ancestor


def _assigned_on_self(class_def: ast.ClassDef, name: str) -> int:
    return sum(
        1
        for node in walk(class_def)
        if _is_self_attribute(node) and node.attr == name and isinstance(node.ctx, ast.Store)  # type: ignore[attr-defined]
    )


def _signature_problem(function: ast.FunctionDef, spelled: str, has_aux: bool, method: bool) -> Optional[str]:
    """Why the differentiated function's parameters or returns are not in the converted shape."""
    parameters = function.args
    if parameters.posonlyargs or parameters.kwonlyargs or parameters.vararg or parameters.kwarg:
        return f"`{spelled}` takes more than plain positional parameters"
    plain = parameters.args[1:] if method else parameters.args
    if parameters.defaults or not plain or (method and parameters.args[0].arg != "self"):
        return f"`{spelled}` has defaults or no parameters"
    if {arg.arg for arg in plain} & _RESERVED:
        return f"`{spelled}` has a parameter named like the generated Cell's attributes"
    keyed = _indexed_by_a_string(function, {arg.arg for arg in plain})
    if keyed:
        return (
            f"`{spelled}` reads its input `{keyed}` by a string key (a dict, as a dataset's "
            "create_dict_iterator() gives): with a dict input the generated Cell runs the forward "
            "twice per step (measured on 2.10 in GRAPH mode and on 1.7.0)"
        )
    if not has_aux:
        return None
    returned = [item.value for item in own_returns(function)]
    if not returned or not all(isinstance(value, ast.Tuple) and len(value.elts) >= 2 for value in returned):
        return f"has_aux=True, and `{spelled}` does not always return a tuple of two or more"
    if any(isinstance(element, ast.Constant) for value in returned for element in value.elts[1:]):  # type: ignore[union-attr]
        return f"has_aux=True, and `{spelled}` returns a constant auxiliary output (not a tensor)"
    return None


def _indexed_by_a_string(function: ast.FunctionDef, params: set[str]) -> Optional[str]:
    """A parameter that ``function`` subscripts with a string constant (`batch['img']`), if any."""
    for node in walk(function):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in params:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return node.value.id
    return None


_RESERVED = frozenset({"self", "fn", "forward", "weights", "out", "outputs", "grads"})


def _calls_only(
    parents: dict[ast.AST, ast.AST],
    mentions: list[ast.AST],
    target: ast.AST,
    spelled: str,
    params: int,
    sens: bool,
) -> Optional[str]:
    """Why a mention of the grad function is not a call with the function's ``params`` positional
    arguments (and the sensitivity after them, with ``sens``)."""
    count = params + 1 if sens else params
    for node in mentions:
        if node is target:
            continue
        use = parents.get(node)
        if not (
            isinstance(use, ast.Call)
            and use.func is node
            and not use.keywords
            and len(use.args) == count
            and not any(isinstance(arg, ast.Starred) for arg in use.args)
        ):
            called = f"called with {count} positional argument(s)" + (", the sens last" if sens else "")
            return f"{spelled} is used other than {called} (line {node.lineno})"  # type: ignore[attr-defined]
    return None


def _rewrite(
    ctx: FileContext,
    resolver: NameResolver,
    parents: dict[ast.AST, ast.AST],
    site: _Site,
    taken: set[str],
    pending: Optional[str],
) -> Union[tuple[list[Edit], Optional[str]], str]:
    """The edits for one site and the `import mindspore [as x]` they use, or why not."""
    scopes = [site.scope, *enclosing_scopes(parents, site.scope)] if site.scope is not None else []
    reference = module_reference(resolver, taken, "mindspore", scopes, pending)
    if reference is None:
        return "no free name for mindspore"
    if site.in_cell and _binds_object(ctx.tree):
        return "the file binds `object`, which the generated Cell calls"
    params = list(site.params)
    forward, step = free_name("_Forward", taken), free_name("_ValueAndGrad", taken)
    lines = source_lines(ctx.text)
    first = lines[site.before.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    newline = newline_of(lines)
    sens = free_name("sens", set(params) | _RESERVED) if site.sens else None
    classes = _classes(
        reference.expression,
        forward,
        step,
        ", ".join(params),
        site.has_aux,
        site.in_cell,
        sens,
        maybe_single=not written_as_several(site.weights),
    )
    blank = 1 if site.scope is not None else 2  # pycodestyle: E306 in a function, E302/E305 at module level
    text = generated_blocks(classes, indent, blank, newline)
    previous = lines[site.before.lineno - 2] if site.before.lineno > 1 else ""
    if previous.strip() and not previous.rstrip().endswith(":"):
        text = newline * blank + text
    weights = ast.get_source_segment(ctx.text, site.weights) or ""
    fn = ast.get_source_segment(ctx.text, site.fn) or ""
    call = site.call
    end = call.end_lineno or call.lineno
    edits = [
        Edit((site.before.lineno, 0), (site.before.lineno, 0), text),
        Edit(
            (call.lineno, column(lines, call.lineno, call.col_offset)),
            (end, column(lines, end, call.end_col_offset or 0)),
            f"{step}({forward}({fn}), {weights})",
        ),
    ]
    return edits, reference.new_import


def _binds_object(tree: ast.Module) -> bool:
    """Whether the file binds the name `object` anywhere (the generated Cell calls the builtin's
    `object.__setattr__`); using it, as `class A(object)` and that generated Cell do, is fine."""
    for node in walk(tree):
        if isinstance(node, ast.Name) and node.id == "object" and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.arg) and node.arg == "object":
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == "object":
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "object":
            return True
    return False


def _classes(
    ms: str,
    forward: str,
    step: str,
    params: str,
    has_aux: bool,
    in_cell: bool,
    sens: Optional[str],
    maybe_single: bool = True,
) -> list[str]:
    """The forward Cell and the step Cell; ``sens``: the name of the step's sensitivity parameter,
    passed to a `sens_param=True` GradOperation after the inputs (None: no sens_param);
    ``maybe_single``: the weights may be one bare Parameter, whose gradient is a bare tensor."""
    if has_aux:
        # GradOperation differentiates the sum of the outputs: the auxiliaries must add nothing.
        # stop_gradient mapped over the auxiliaries, nested tuples too: on 1.7 it is a Primitive,
        # which a tuple makes raise in PYNATIVE mode.
        body = (
            f"out = self.fn({params})\n"
            f"        return (out[0],) + self.hyper_map({ms}.ops.stop_gradient, out[1:])\n"
        )
    else:
        body = f"return self.fn({params})\n"
    hyper_map = f"        self.hyper_map = {ms}.ops.HyperMap()\n" if has_aux else ""
    if in_cell:
        # Cell.__setattr__ would register the weights here, and the Cell holding this one would
        # then prefix their names with its attribute's (`grad_fn.`): checkpoint keys would change.
        weights = (
            "        # Held, not registered: a Cell holding this one would prefix the weights' names.\n"
            '        object.__setattr__(self, "weights", weights)\n'
        )
    else:
        weights = "        self.weights = weights\n"
    # GradOperation wants a ParameterTuple: given a list (trainable_params()), 1.7 returns the
    # gradients of every Parameter the function uses (measured on 1.7.0), and one bare Parameter
    # gives a tuple of them all instead of its own gradient.
    collect = f"        weights = {ms}.ParameterTuple(weights)\n"
    single = ""
    if maybe_single:
        collect = (
            f"        self.single = isinstance(weights, {ms}.Parameter)\n"
            f"        weights = {ms}.ParameterTuple((weights,) if self.single else weights)\n"
        )
        single = "        if self.single:\n            grads = grads[0]\n"
    weights = collect + weights
    flags, doc = "get_by_list=True", "value_and_grad(fn, None, weights)"
    step_params = grad_args = params
    if sens is not None:
        flags += ", sens_param=True"
        doc = "value_and_grad(fn, None, weights, sens_param=True)"
        step_params = grad_args = f"{params}, {sens}"
    return [
        f"class {forward}({ms}.nn.Cell):\n"
        '    """The function as a Cell: GradOperation reuses its recorded forward."""\n'
        "\n"
        "    def __init__(self, fn):\n"
        "        super().__init__()\n"
        "        self.fn = fn\n"
        f"{hyper_map}"
        "\n"
        f"    def construct(self, {params}):\n"
        f"        {body}",
        f"class {step}({ms}.nn.Cell):\n"
        f'    """{doc} before MindSpore 1.8."""\n'
        "\n"
        "    def __init__(self, forward, weights):\n"
        "        super().__init__()\n"
        "        self.forward = forward\n"
        "        self.forward.set_grad()\n"
        f"{weights}"
        f"        self.grad = {ms}.ops.GradOperation({flags})\n"
        "\n"
        f"    def construct(self, {step_params}):\n"
        f"        outputs = self.forward({params})\n"
        f"        grads = self.grad(self.forward, self.weights)({grad_args})\n"
        f"{single}"
        "        return outputs, grads\n",
    ]
