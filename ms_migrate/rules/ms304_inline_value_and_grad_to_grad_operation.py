"""MS304: `loss, grads = value_and_grad(self.net, None, weights)(*args)` inside `construct`, below 1.8."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional, Union

from ms_migrate.analysis.names import all_names, enclosing_scopes, module_reference
from ms_migrate.analysis.walk import walk
from ms_migrate.analysis.weights import known_parameter_tuple
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.cell_init import (
    after_super_init,
    free_attribute,
    is_self_attribute,
    own_init,
    super_init,
)
from ms_migrate.rewrite.import_changes import released_name
from ms_migrate.rewrite.text_edits import column, newline_of
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

VALUE_AND_GRAD = frozenset({"mindspore.value_and_grad", "mindspore.ops.value_and_grad"})

REASONS = registry(
    Reason(
        "MSR025",
        "downgrade-inline-value-and-grad",
        "this value_and_grad applied in place has no GradOperation form known to run the same",
        "Below MindSpore 1.8 the train step is written the 1.x way: a GradOperation created in "
        "`__init__` and, in `construct`, the forward followed by the gradients "
        "(`loss = self.net(*args)`, `grads = self.grad(self.net, weights)(*args)`). That is what "
        "`value_and_grad(self.net, None, weights)(*args)` computes only when the network had "
        "`set_grad()` called on it (`self.net.set_grad()` in `__init__`, or on the network "
        "argument it holds), since otherwise PYNATIVE mode runs the forward a second time for the "
        "gradients (BatchNorm statistics and Dropout masks then change); when the weights are a "
        "ParameterTuple (an optimizer's `parameters`, or an attribute `__init__` sets to "
        "`ParameterTuple(...)`), since 1.7 given a list returns the gradients of every Parameter "
        "the network uses; and without has_aux or sens_param. Other shapes are left alone: add "
        "`set_grad()`, hold the weights as a ParameterTuple, or convert by hand.",
    ),
)


# What each invalid example below is fixed to (run alone, on its target).
FIXED = """\
import mindspore as ms
from mindspore import nn


class Step(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.grad = ms.ops.GradOperation(get_by_list=True)
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.weights)(x, y)
        self.optimizer(grads)
        return loss
"""


class InlineValueAndGradToGradOperation(Rule):
    """`value_and_grad` applied where it is made, inside a Cell's `construct`, for MindSpore
    before 1.8: the train step becomes the 1.x one.

    This is the form `ms-migrate upgrade` writes for a legacy train step whose network has
    `set_grad()` (`loss, grads = ms.value_and_grad(self.network, None, weights)(data, label)`),
    so this rule is what brings such a step back to a 1.7 runtime. MindSpore 1.7 has no
    value_and_grad, and its GRAPH mode cannot compile a GradOperation (or a Cell) built inside
    `construct`, so the GradOperation goes into `__init__` as `self.grad` (or a free name):

        loss = self.network(data, label)
        grads = self.grad(self.network, weights)(data, label)

    With `set_grad()` on the network, PYNATIVE mode reuses the recorded forward for the
    gradients and GRAPH mode compiles one forward, as value_and_grad runs it: measured on 1.7.0
    in both modes with BatchNorm and a counted dropout, against the value_and_grad step on 2.10.
    Without a visible `set_grad()`, weights not known to be a ParameterTuple, has_aux or
    sens_param, the site is left alone (MSR025).
    https://www.mindspore.cn/docs/en/r1.7/api_python/ops/mindspore.ops.GradOperation.html
    """

    code = "MS304"
    title = "value_and_grad applied in construct for MindSpore before 1.8 becomes the 1.x train step"
    kind = "downgrade"
    severity = Severity.ERROR
    targets = VersionRange(high="1.8")
    prefilter = ("value_and_grad",)
    reasons = REASONS
    examples = Examples(
        valid=(Example("import mindspore as ms\ngrad = ms.ops.GradOperation(get_by_list=True)\n", "1.7"),),
        invalid=(
            Example(
                "import mindspore as ms\nfrom mindspore import nn\n\n\nclass Step(nn.Cell):\n"
                "    def __init__(self, network, optimizer):\n        super().__init__()\n"
                "        self.network = network\n        self.network.set_grad()\n"
                "        self.optimizer = optimizer\n        self.weights = optimizer.parameters\n\n"
                "    def construct(self, x, y):\n"
                "        loss, grads = ms.value_and_grad(self.network, None, self.weights)(x, y)\n"
                "        self.optimizer(grads)\n        return loss\n",
                "1.7",
                fixed=FIXED,
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        parents = ctx.parents
        resolver = ctx.resolver
        taken = all_names(ctx.tree)
        lines = source_lines(ctx.text)
        newline = newline_of(lines)
        found: list[Diagnostic] = []
        # Per class: the attribute its GradOperation gets, the edit that makes it in `__init__`,
        # and the import that edit uses. Each site's fix carries them; the engine applies them once.
        hoists: dict[int, tuple[str, Edit, Optional[str]]] = {}
        new_import: Optional[str] = None
        for call in inline_applications(ctx):
            site = _site(parents, call)
            if isinstance(site, str):
                found.append(REASONS["MSR025"].at(call.lineno, site))
                continue
            reference = module_reference(
                resolver, taken, "mindspore", enclosing_scopes(parents, call), new_import
            )
            if reference is None:
                found.append(REASONS["MSR025"].at(call.lineno, "no free name for mindspore"))
                continue
            new_import = reference.new_import or new_import
            if id(site.class_def) not in hoists:
                name = free_attribute(site.class_def, "grad")
                made = f"{name} = {reference.expression}.ops.GradOperation(get_by_list=True)"
                edit = after_super_init(lines, site.super_call, [made], newline)
                hoists[id(site.class_def)] = (name, edit, reference.new_import)
            name, hoist, needed = hoists[id(site.class_def)]
            fix = Fix(
                (hoist, _step(ctx.text, lines, site, name, newline)),
                "exact",
                "the 1.x train step: GradOperation in __init__, forward then grads",
                imports=(needed,) if needed is not None else (),
                unused=released_name(call.func),
            )
            message = (
                f"value_and_grad does not exist before MindSpore 1.8 (target {ctx.target}): "
                f"{ast.unparse(call)} -> the forward, then GradOperation(get_by_list=True) made in "
                "__init__"
            )
            found.append(self.diagnostic(call.func, message, fix))
        yield from sorted(found, key=lambda item: (item.line, item.col))


def inline_applications(ctx: FileContext) -> Iterable[ast.Call]:
    """The `value_and_grad(...)` calls applied where they are made: `value_and_grad(...)(...)`."""
    for node in ctx.nodes:
        applied = isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
        if applied and ctx.qualified_name(node.func.func) in VALUE_AND_GRAD:  # type: ignore[attr-defined]
            yield node.func  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Site:
    statement: ast.Assign  # loss, grads = value_and_grad(...)(...)
    application: ast.Call  # value_and_grad(...)(...)
    net: ast.expr  # self.<attribute>
    weights: ast.expr
    class_def: ast.ClassDef
    super_call: ast.stmt  # super().__init__() in __init__: the GradOperation goes after it


def _site(parents: dict[ast.AST, ast.AST], call: ast.Call) -> Union[_Site, str]:
    """The site, or why it is not in the shape converted (MSR025's detail)."""
    application = parents.get(call)
    statement = parents.get(application) if isinstance(application, ast.Call) else None
    if not (
        isinstance(statement, ast.Assign) and statement.value is application and len(statement.targets) == 1
    ):
        return "not assigned as `loss, grads = value_and_grad(...)(...)`"
    if call.keywords or len(call.args) != 3 or any(isinstance(arg, ast.Starred) for arg in call.args):
        return "arguments other than (net, None, weights): has_aux, sens_param or grad_position by keyword"
    target = statement.targets[0]
    names = isinstance(target, ast.Tuple) and all(isinstance(item, ast.Name) for item in target.elts)
    if not (names and len(target.elts) == 2):  # type: ignore[attr-defined]
        return "not unpacked into two names (`loss, grads = ...`)"
    net, position, weights = call.args
    if not (isinstance(position, ast.Constant) and position.value is None):
        return "input gradients (grad_position is not None)"
    if not is_self_attribute(net):
        return "the network is not an attribute of self"
    if application.keywords:  # type: ignore[union-attr]
        return "keyword arguments in the application"
    method = _enclosing_function(parents, statement)
    class_def = parents.get(method) if method is not None else None
    if method is None or method.name != "construct" or not isinstance(class_def, ast.ClassDef):
        return "not inside a Cell's construct"
    init = own_init(class_def)
    if init is None:
        return "the class has no __init__ of its own for the GradOperation"
    super_call = super_init(init)
    if super_call is None:
        return "its __init__ does not call super().__init__() as a statement of its own"
    attribute = net.attr  # type: ignore[attr-defined]
    if not _set_grad_in(init, attribute):
        return (
            f"`self.{attribute}` has no visible set_grad(): PYNATIVE mode would run its forward a second "
            f"time for the gradients (call self.{attribute}.set_grad() in __init__, as 1.x train steps do)"
        )
    if not known_parameter_tuple(method, init, weights):
        return "the weights are not known to be a ParameterTuple (1.7 given a list differentiates them all)"
    return _Site(statement, application, net, weights, class_def, super_call)  # type: ignore[arg-type]


def _enclosing_function(parents: dict[ast.AST, ast.AST], node: ast.AST) -> Optional[ast.FunctionDef]:
    current = parents.get(node)
    while current is not None and not isinstance(
        current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    ):
        current = parents.get(current)
    return current if isinstance(current, ast.FunctionDef) else None


def _set_grad_in(init: ast.FunctionDef, attribute: str) -> bool:
    """`self.<attribute>.set_grad()` in __init__, or `<arg>.set_grad()` on the __init__ argument
    that `self.<attribute>` is set to."""
    held = {
        node.value.id
        for node in walk(init)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Name)
        and any(is_self_attribute(target) and target.attr == attribute for target in node.targets)  # type: ignore[attr-defined]
    }
    for node in walk(init):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "set_grad"
        ):
            continue
        if node.args and not (isinstance(node.args[0], ast.Constant) and node.args[0].value is True):
            continue
        owner = node.func.value
        if is_self_attribute(owner) and owner.attr == attribute:  # type: ignore[attr-defined]
            return True
        if isinstance(owner, ast.Name) and owner.id in held:
            return True
    return False


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _source(text: str, node: ast.AST) -> str:
    return ast.get_source_segment(text, node) or ast.unparse(node)


def _step(text: str, lines: list[str], site: _Site, name: str, newline: str) -> Edit:
    """`loss, grads = value_and_grad(net, None, w)(args)` as the forward, then the gradients."""
    statement = site.statement
    loss, grads = (element.id for element in site.statement.targets[0].elts)  # type: ignore[attr-defined]
    arguments = ", ".join(_source(text, argument) for argument in site.application.args)
    net, weights = _source(text, site.net), _source(text, site.weights)
    indent = _indent(lines[statement.lineno - 1])
    replacement = (
        f"{loss} = {net}({arguments}){newline}{indent}{grads} = self.{name}({net}, {weights})({arguments})"
    )
    end = statement.end_lineno or statement.lineno
    return Edit(
        (statement.lineno, column(lines, statement.lineno, statement.col_offset)),
        (end, column(lines, end, statement.end_col_offset or 0)),
        replacement,
    )
