"""Deciding, per GradOperation site, the exact functional form to emit or the reason to refuse.

The decision depends on the flags, on how the op is applied, and on the target version (see
``rules/autodiff_spellings.json``). Every refusal is a diagnostic with a code from
``ms_migrate.rules.ms101.reasons.REASONS``. Pure and ``ast`` only: a plan names the statements
and calls it rewrites, and ``rewrite`` finds them in the libcst tree of a file that changes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

from ms_migrate.analysis.names import dotted_name, variable_names
from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.facts.versions import Version, spelling_for
from ms_migrate.rules.ms101.analysis import (
    Application,
    Argument,
    Function,
    GradOpSite,
    ModuleAnalysis,
    Statement,
    arguments,
    assigned_target,
    code_of,
    implicit_set_grad,
    other_set_grad,
    same_arguments,
    same_code,
    set_grad_on,
)
from ms_migrate.rules.ms101.bases import Flags
from ms_migrate.rules.ms101.reasons import left_alone

# How grad_position is written: omitted (default 0), None (weights only), or explicit positions.
GradPosition = Union[None, int, tuple[int, ...], str]
DEFAULT_POSITION = "default"


@dataclass(frozen=True)
class ForwardMatch:
    """A forward call that can move to the grad call, and the statements that move with it."""

    statement: Statement
    carried: tuple[Statement, ...] = ()

    @property
    def target(self) -> ast.expr:
        target = assigned_target(self.statement)
        assert target is not None
        return target


@dataclass
class Plan:
    """An exact functional replacement for one GradOperation application.

    Three shapes are emitted:

    - direct: `grads = grad(net, position, weights[, sens_param=True])(args)`, the forward call (if
      any) left where it is; or `loss, grads = value_and_grad(...)` when a forward merges;
    - wrapped (``wrapper``): the same over a `def` that calls the network, for a network whose
      `construct(*inputs)` GRAPH mode cannot differentiate directly;
    - scaled (``scaled_by``): below 2.8, where there is no `sens_param`, a `def` runs the forward
      once, builds the loss-scale fill from its output, and returns `loss * sens` with the loss and
      sens as auxiliaries; `value_and_grad` of it seeds backprop with exactly `sens`.
    """

    site: GradOpSite
    application: Application
    module: str  # "mindspore" or "mindspore.ops": where value_and_grad/grad live for the target
    net: ast.expr
    grad_position: GradPosition
    weights: Optional[ast.expr]
    args: list[Argument]  # the arguments the new function is called with
    sens_param: bool = False
    scaled_by: Optional[ast.Name] = None  # sens applied by scaling the forward output
    aux: str = "has_aux"  # scaled form: "has_aux" (2.0+) or "stop_gradient" (1.8-1.10)
    forward: Optional[ForwardMatch] = None  # a forward call merged into value_and_grad
    # Differentiate a def around the network, which GRAPH mode cannot differentiate directly:
    # "varargs" (construct takes *inputs) or "defaults" (the call leaves out defaulted ones).
    wrapper_for: str = ""
    wrap_single: bool = False  # get_all on one input: GradOperation returns a 1-tuple
    removals: list[Statement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def wrapper(self) -> bool:
        return bool(self.wrapper_for)

    @property
    def function_name(self) -> str:
        return "value_and_grad" if self.forward is not None else "grad"

    @property
    def network_on_self(self) -> bool:
        """The network is ``self.<attribute>``, as in a train step Cell; else a name, as in a
        function-style step."""
        owner = self.net.value if isinstance(self.net, ast.Attribute) else None
        return isinstance(owner, ast.Name) and owner.id == "self"

    @property
    def touched(self) -> list[Statement]:
        statements = [*self.removals]
        if self.application.statement is not None:
            statements.append(self.application.statement)
        return statements


def _has_call(node: ast.AST) -> bool:
    return any(isinstance(child, ast.Call) for child in walk(node))


def _simple_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_simple_target(element) for element in target.elts)
    return False


def _single_assign(analysis: ModuleAnalysis, block: Sequence[ast.stmt], index: int) -> Optional[ast.Assign]:
    """``block[index]`` when it is `target = value` alone on its line."""
    candidate = block[index]
    if not isinstance(candidate, ast.Assign) or len(candidate.targets) != 1:
        return None
    return candidate if analysis.alone(block, index) else None


def _names_of(nodes: Sequence[ast.AST]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        found |= variable_names(node)
    return found


def find_forward(
    analysis: ModuleAnalysis,
    application: Application,
    net: ast.expr,
    inputs: Sequence[Argument],
    call_args: Sequence[Argument],
    carry: Optional[str] = None,
) -> Optional[ForwardMatch]:
    """The `loss = net(inputs)` before the grad call that can move to where the grad call is.

    Statements between the two are allowed only when they call nothing and touch neither the
    forward's result nor its inputs: moving the forward past them changes nothing they compute.
    ``carry`` names one assignment between them that moves with the forward (the loss-scale fill
    built from the forward's output). The grad call's own arguments (``call_args``) must not read
    what the moved statements write: `y = net(x, y)` then `grad(...)(x, y)` differentiates at the
    old `y`, and merging would hand it the new one.
    """
    statement = application.statement
    assert statement is not None
    block = statement.block
    skipped: list[ast.Assign] = []
    carried: list[Statement] = []
    for index in range(statement.index - 1, -1, -1):
        candidate = block[index]
        if application.binder is not None and candidate is application.binder.node:
            continue
        assign = _single_assign(analysis, block, index)
        if assign is None:
            return None
        target = assign.targets[0]
        value = assign.value
        if (
            isinstance(value, ast.Call)
            and same_code(value.func, net)
            and same_arguments(arguments(value), inputs)
            and _simple_target(target)
        ):
            moved = [assign, *(item.node for item in carried)]
            reads = _names_of([item.value for item in moved])  # type: ignore[attr-defined]
            writes = _names_of([item.targets[0] for item in moved])  # type: ignore[attr-defined]
            for other in skipped:
                if variable_names(other.targets[0]) & reads or variable_names(other.value) & writes:
                    return None
            if any(variable_names(arg.value) & writes for arg in call_args):
                return None
            return ForwardMatch(Statement(assign, block, index), tuple(carried))
        if carry is not None and not carried and isinstance(target, ast.Name) and target.id == carry:
            carried.append(Statement(assign, block, index))
            continue
        if _has_call(assign) or not isinstance(target, ast.Name):
            return None
        skipped.append(assign)
    return None


def _assigned_names(statement: ast.AST) -> set[str]:
    """Names a statement binds: assignment, augmented and annotated targets, for, with, except,
    import aliases and walrus."""
    found: set[str] = set()
    for node in walk(statement):
        if isinstance(node, ast.Assign):
            found |= _names_of(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            found |= variable_names(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            found |= variable_names(node.optional_vars)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.alias) and node.asname:
            found.add(node.asname)
    return found


def _forward_feeds_grad(
    analysis: ModuleAnalysis, application: Application, net: ast.expr, inputs: Sequence[Argument]
) -> bool:
    """True if the network's last forward before the grad call ran on the grad call's own inputs.

    With set_grad(), PYNATIVE GradOperation reuses that recorded forward, and so does grad: the
    two agree (measured on 2.10, sens_param included). When the forward ran on other inputs, or
    overwrote one of them, they do not.
    """
    statement = application.statement
    assert statement is not None
    reads = _names_of([arg.value for arg in inputs])
    written: set[str] = set()
    for index in range(statement.index - 1, -1, -1):
        candidate = statement.block[index]
        if _calls_network_in([candidate], net):
            assign = _single_assign(analysis, statement.block, index)
            if (
                assign is None
                or not isinstance(assign.value, ast.Call)
                or not same_code(assign.value.func, net)
                or not same_arguments(arguments(assign.value), inputs)
                or _calls_network_in([arg.value for arg in arguments(assign.value)], net)
            ):
                return False
            written |= variable_names(assign.targets[0])
            return not written & reads
        written |= _assigned_names(candidate)
    return False  # the forward is in another block: which one ran last is not visible


def _calls_network_in(nodes: Sequence[ast.AST], net: ast.expr, skip: Optional[ast.Call] = None) -> bool:
    """True if ``nodes`` call ``net`` itself (a forward pass), not counting the call ``skip``."""
    net_code = code_of(net)
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node is skip:
            continue
        if isinstance(node, ast.Call) and code_of(node.func) == net_code:
            return True
        stack.extend(child_nodes(node))
    return False


def _assignment_before(block: Sequence[ast.stmt], index: int, name: str) -> tuple[Optional[ast.expr], int]:
    """The nearest `name = value` above ``index`` in the same block, with its index."""
    for position in range(index - 1, -1, -1):
        candidate = block[position]
        if (
            isinstance(candidate, ast.Assign)
            and len(candidate.targets) == 1
            and isinstance(candidate.targets[0], ast.Name)
            and candidate.targets[0].id == name
        ):
            return candidate.value, position
    return None, -1


def _is_tuple_valued(function: Optional[Function], name: str) -> bool:
    """True if ``name`` is ever built as a tuple or list (one sens per output) in ``function``."""
    if function is None:
        return False
    for node in walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, (ast.Tuple, ast.List))
            and any(isinstance(target, ast.Name) and target.id == name for target in node.targets)
        ):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
    return False


def _sens_problem(
    application: Application, sens: ast.expr, net: ast.expr, inputs: Sequence[Argument]
) -> Optional[str]:
    """Why scaling the forward by this sens might not be exact, or None when it is.

    Exact means: sens is a uniform fill whose shape and dtype come from this very network's
    output on these very inputs, so `net(inputs) * sens` seeds backprop exactly as GradOperation
    did.
    """
    function = application.function
    if not isinstance(sens, ast.Name):
        return "sens is an expression, not a variable built from the loss"
    parameters = (*function.args.args, *function.args.kwonlyargs) if function is not None else ()
    if sens.id in {parameter.arg for parameter in parameters}:
        return "MSR007"
    statement = application.statement
    assert statement is not None
    value, position = _assignment_before(statement.block, statement.index, sens.id)
    if value is None:
        return "sens is not assigned in this function"
    if not _is_fill_like(value):
        return "sens is not built with fill/ones_like"
    for name in variable_names(value) - {"self"}:
        source, _ = _assignment_before(statement.block, position, name)
        if (
            isinstance(source, ast.Call)
            and same_code(source.func, net)
            and same_arguments(arguments(source), inputs)
        ):
            return None
    return "the shape of sens does not come from this network's output"


_FILL_FUNCTIONS = {"fill", "Fill", "ones_like", "OnesLike", "full_like", "fill_", "full"}


def _is_fill_like(value: ast.expr) -> bool:
    """`fill(dtype(loss), shape(loss), scale)` and its spellings, possibly cast or scaled."""
    if isinstance(value, ast.BinOp):
        return _is_fill_like(value.left) or _is_fill_like(value.right)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Call):  # P.Fill()(...), P.Cast()(fill(...), dtype)
        func = func.func
    name = dotted_name(func) or ""
    last = name.rsplit(".", 1)[-1]
    if last in _FILL_FUNCTIONS:
        return True
    given = arguments(value)
    if last in ("cast", "Cast") and given:
        return _is_fill_like(given[0].value)
    return False


# Why GRAPH mode cannot differentiate the network called with N positional arguments (None: a
# starred one) directly: "varargs", "defaults", "" (it can), or None (its class is not known).
NetworkShape = Callable[[GradOpSite, Application, ast.expr, Optional[int]], Optional[str]]
INDIRECT = ("varargs", "defaults")
# Why a network is differentiated through a def, as messages say it.
WRAPPER_WHY = {"varargs": "construct takes *args", "defaults": "the call leaves out defaulted parameters"}


def plan_site(
    analysis: ModuleAnalysis,
    site: GradOpSite,
    target: Version,
    network_shape: Optional[NetworkShape] = None,
) -> Union[list[Plan], Diagnostic]:
    """One plan per application of the op, or the reason the site is left alone.

    All or nothing: the creation is removed only when every application is rewritten. Each
    application gets its own form (a GAN's generator and discriminator steps differ).
    """
    line = site.line
    if site.flags is None:
        return left_alone(line, "MSR002", site.flag_problem or "")
    spelling = spelling_for(target)
    if spelling.module is None:
        return left_alone(line, "MSR001", f"target {target}")
    if site.inherited_use:
        where = f" ({', '.join(site.subclass_uses)})" if site.subclass_uses else ""
        return left_alone(line, "MSR003", f"a subclass uses the op too{where}")
    if site.escapes:
        lines = ", ".join(str(number) for number in sorted(set(site.escapes)))
        return left_alone(line, "MSR003", f"line {lines}")
    if site.rebound:
        lines = ", ".join(str(number) for number in sorted(set(site.rebound)))
        return left_alone(line, "MSR027", f"{site.name} is bound again at line {lines}")
    if site.placement == "other":
        return left_alone(line, "MSR003", "created inside an expression")
    if not site.applications:
        return left_alone(line, "MSR012")
    plans: list[Plan] = []
    for application in site.applications:
        outcome = _plan_application(analysis, site, application, target, network_shape)
        if isinstance(outcome, Diagnostic):
            if len(site.applications) > 1:
                detail = outcome.message.split(": ", 1)[-1] if ": " in outcome.message else ""
                where = f"the application at line {application.line}"
                return left_alone(line, outcome.code, f"{where}: {detail}" if detail else where)
            return outcome
        plans.append(outcome)
    if site.placement in ("attribute", "module", "local") and site.statement is not None:
        plans[0].removals.append(site.statement)
    return plans


@dataclass(frozen=True)
class Refusal:
    """Why one step of planning an application leaves the site alone: a reason code and detail."""

    code: str
    detail: str = ""


@dataclass(frozen=True)
class _Call:
    """What the grad function is called with, split into the network's inputs and the sens."""

    args: list[Argument]
    inputs: list[Argument]
    sens: Optional[ast.expr]
    sens_in_star: bool  # the sens is the last element of a trailing `*args`
    tuple_sens: bool  # one seed per output


def _plan_application(
    analysis: ModuleAnalysis,
    site: GradOpSite,
    application: Application,
    target: Version,
    network_shape: Optional[NetworkShape],
) -> Union[Plan, Diagnostic]:
    """The pipeline, each step a question whose answer is a value or a Refusal: where the op is
    applied, what it differentiates, what the grad function is called with, which positions it
    returns, whether the loss scale moves into the forward, which forward merges, and whether a
    `*inputs` network needs a def around it."""
    outcome = _planned(analysis, site, application, target, network_shape)
    if isinstance(outcome, Refusal):
        return left_alone(site.line, outcome.code, outcome.detail)
    return outcome


def _planned(
    analysis: ModuleAnalysis,
    site: GradOpSite,
    application: Application,
    target: Version,
    network_shape: Optional[NetworkShape],
) -> Union[Plan, Refusal]:
    spelling = spelling_for(target)
    flags = site.flags
    assert flags is not None and spelling.module is not None
    problem = _placement_problem(analysis, site, application)
    if problem is not None:
        return problem
    operands = _operands(application, flags.get_by_list)
    if isinstance(operands, Refusal):
        return operands
    net, weights = operands
    call = _call_arguments(application, flags, spelling.sens)
    if isinstance(call, Refusal):
        return call
    positions = _positions(flags, call.inputs)
    if isinstance(positions, Refusal):
        return positions
    numbers = _numbers_given(analysis, application, call.inputs) if flags.get_all else set()
    if numbers and len(call.inputs) - len(numbers) <= 1:
        shown = ", ".join(ast.unparse(call.inputs[index].value) for index in sorted(numbers))
        return Refusal("MSR026", f"{shown} given a Python number")
    position, wrap_single = positions
    set_grad = set_grad_on(analysis, net, application.function)
    # With the sens inside *args, the inputs are that starred argument less its last: a count unknown here.
    given = None if call.sens_in_star or any(arg.star for arg in call.inputs) else len(call.inputs)
    shape = network_shape(site, application, net, given) if network_shape is not None else None
    scaled = _scaled(application, flags, spelling.sens, call, net, shape, target)
    if isinstance(scaled, Refusal):
        return scaled
    merged = _merged_forward(analysis, application, net, call, scaled, wrap_single, set_grad, shape, target)
    if isinstance(merged, Refusal):
        return merged
    forward, notes, separate_forward = merged
    wrapped = _wrapped(application, net, call, shape, scaled, set_grad, separate_forward, forward, position)
    if isinstance(wrapped, Refusal):
        return wrapped
    plan = Plan(
        site=site,
        application=application,
        module=spelling.module,
        net=net,
        grad_position=position,
        weights=weights,
        args=[*call.inputs] if scaled else call.args,
        sens_param=flags.sens_param and not scaled,
        scaled_by=call.sens if scaled else None,  # type: ignore[arg-type]
        aux="has_aux" if spelling.module == "mindspore" else "stop_gradient",
        forward=forward,
        wrapper_for=wrapped,
        wrap_single=wrap_single,
        notes=notes,
    )
    if forward is not None and isinstance(forward.target, (ast.Tuple, ast.List)):
        plan.notes.append("MSN002")
    in_construct = application.function is not None and application.function.name == "construct"
    if site.placement == "attribute" and not in_construct and (forward is not None or scaled or wrapped):
        # A helper method's call path and mode are not visible here; only the direct form, which
        # is exact in both modes, is written there.
        return Refusal("MSR005", f"applied in {application.function.name}()")  # type: ignore[union-attr]
    if application.binder is not None:
        plan.removals.append(application.binder)
    if forward is not None:
        plan.removals.extend([forward.statement, *forward.carried])
    return plan


def _placement_problem(
    analysis: ModuleAnalysis, site: GradOpSite, application: Application
) -> Optional[Refusal]:
    """Whether the application sits where a rewrite can reach it: in a function of the class
    that holds the op, as a plain statement, in the block that binds the op."""
    if application.function is None:
        return Refusal("MSR005", "applied at module level")
    if site.placement == "attribute" and analysis.enclosing_class(application.function) is not site.class_def:
        return Refusal("MSR005", f"applied in {application.function.name}() of another class")
    statement = application.statement
    if statement is None or not isinstance(
        statement.node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr)
    ):
        return Refusal("MSR009", "the grad call is not part of a plain statement")
    if application.binder is not None and application.binder.block is not statement.block:
        return Refusal("MSR009", "the op is bound and called in different blocks")
    return None


def _operands(application: Application, by_list: bool) -> Union[tuple[ast.expr, Optional[ast.expr]], Refusal]:
    """The network and the weights the op is applied to: `op(net, weights)` or `op(net)`."""
    inner_args = arguments(application.inner)
    if any(arg.keyword or arg.star for arg in inner_args):
        return Refusal("MSR009", "the op is called with keyword or starred arguments")
    if len(inner_args) != (2 if by_list else 1):
        return Refusal("MSR009", f"expected op{'(net, weights)' if by_list else '(net)'}")
    net = inner_args[0].value
    if isinstance(net, ast.Lambda):
        return Refusal("MSR009", "a lambda network (GRAPH mode cannot parse it in grad)")
    return net, inner_args[1].value if by_list else None


def _call_arguments(
    application: Application, flags: Flags, sens_spelling: Optional[str]
) -> Union[_Call, Refusal]:
    """The grad function's arguments; with sens_param the last positional one, or the end of a
    trailing `*args` (2.8+ only), is the sens."""
    args = arguments(application.outer)
    if any(arg.keyword for arg in args):
        return Refusal("MSR009", "keyword arguments to the grad function")
    sens: Optional[ast.expr] = None
    sens_in_star = False
    if flags.sens_param:
        if args and args[-1].star:
            if sens_spelling != "sens_param":
                return Refusal("MSR007", "sens is hidden in *args")
            if flags.get_all:
                return Refusal("MSR013", "get_all with sens inside *args")
            sens_in_star = True
        elif not args:
            return Refusal("MSR007", "no sens argument")
        else:
            sens = args[-1].value
    tuple_sens = sens is not None and (
        isinstance(sens, (ast.Tuple, ast.List))
        or (isinstance(sens, ast.Name) and _is_tuple_valued(application.function, sens.id))
    )
    return _Call(args, args[:-1] if flags.sens_param else args, sens, sens_in_star, tuple_sens)


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, complex))


def _scope_numbers(scope: ast.AST) -> set[str]:
    """The names a function (or the module) binds to a Python number literal somewhere."""
    return {
        target.id
        for node in walk(scope)
        if isinstance(node, ast.Assign) and _is_number(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _numbers_given(analysis: ModuleAnalysis, application: Application, inputs: list[Argument]) -> set[int]:
    """The inputs of a grad call that this file shows given a Python number: a literal in the call
    itself, or, for construct's parameters, in a call of the Cell (`grad_net(x1, 1, dy)`, or
    `x2 = 1` then `grad_net(x1, x2, dy)`), as a test suite calls its grad Cells."""
    found = {index for index, arg in enumerate(inputs) if _is_number(arg.value)}
    function = application.function
    owner = analysis.enclosing_class(function)
    if function is None or owner is None or function.name != "construct":
        return found
    parameters = [arg.arg for arg in function.args.args[1:]]
    wanted = {
        parameters.index(arg.value.id): index
        for index, arg in enumerate(inputs)
        if isinstance(arg.value, ast.Name) and arg.value.id in parameters
    }
    if not wanted:
        return found
    # Each scope that builds the Cell and calls it (a test function, or the module), nested ones
    # included: a wider look refuses more, never less.
    scopes = [analysis.tree, *(node for node in walk(analysis.tree) if isinstance(node, ast.FunctionDef))]
    for scope in scopes:
        cells = {
            target.id
            for node in walk(scope)
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and (dotted_name(node.value.func) or "").rsplit(".", 1)[-1] == owner.name
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        if not cells:
            continue
        numbers = _scope_numbers(scope)
        for node in walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in cells:
                for position, arg in enumerate(node.args):
                    given = _is_number(arg) or (isinstance(arg, ast.Name) and arg.id in numbers)
                    if given and position in wanted:
                        found.add(wanted[position])
    return found


def _positions(flags: Flags, inputs: list[Argument]) -> Union[tuple[GradPosition, bool], Refusal]:
    """grad_position for the flags, and whether get_all's 1-tuple must be rebuilt around one
    input's gradient."""
    if flags.get_all:
        if any(arg.star for arg in inputs):
            return Refusal("MSR013")
        if len(inputs) == 1:
            if flags.get_by_list:
                return Refusal("MSR010", "get_all and get_by_list on a one-input network")
            return 0, True
        return tuple(range(len(inputs))), False
    return (None if flags.get_by_list else DEFAULT_POSITION), False


def _scaled(
    application: Application,
    flags: Flags,
    sens_spelling: Optional[str],
    call: _Call,
    net: ast.expr,
    shape: Optional[str],
    target: Version,
) -> Union[bool, Refusal]:
    """Whether the loss scale moves into a def that scales the forward's output. Below 2.8 there
    is no sens_param, so every sens does; a network GRAPH mode cannot differentiate directly
    (`*inputs`, defaulted parameters left out) also needs a def, and takes it when its sens is
    the fill of its own output."""
    sens = call.sens
    scaled = flags.sens_param and sens_spelling != "sens_param"
    if (
        flags.sens_param
        and shape in INDIRECT
        and isinstance(sens, ast.Name)
        and not call.tuple_sens
        and _sens_problem(application, sens, net, call.inputs) is None
    ):
        scaled = True
    if not scaled:
        return False
    assert sens is not None
    if call.tuple_sens:
        return Refusal("MSR008", f"a tuple sens (one seed per output) (target {target})")
    problem = _sens_problem(application, sens, net, call.inputs)  # type: ignore[arg-type]
    if problem == "MSR007":
        return Refusal("MSR007", f"target {target} has no sens_param")
    if problem:
        return Refusal("MSR008", f"{problem} (target {target})")
    inputs = call.inputs
    starred = [arg for arg in inputs if arg.star]
    if starred and (len(inputs) != 1 or inputs[0].star != "*" or not flags.get_by_list or flags.get_all):
        return Refusal("MSR013", "starred inputs with forward scaling")
    return True


def _merged_forward(
    analysis: ModuleAnalysis,
    application: Application,
    net: ast.expr,
    call: _Call,
    scaled: bool,
    wrap_single: bool,
    set_grad: bool,
    shape: Optional[str],
    target: Version,
) -> Union[tuple[Optional[ForwardMatch], list[str], bool], Refusal]:
    """The forward call that merges into value_and_grad (None: none does), the notes that says,
    and whether the function runs the network elsewhere too. A merge changes how often the
    forward runs, so it needs set_grad() on exactly the differentiated network (PYNATIVE) and
    arguments that are one tensor in both calls (GRAPH)."""
    statement = application.statement
    assert statement is not None
    forward: Optional[ForwardMatch] = None
    assign = isinstance(statement.node, ast.Assign) and statement.node.value is application.outer
    if assign and not wrap_single and not call.sens_in_star:
        sens = call.sens
        carry = sens.id if scaled and isinstance(sens, ast.Name) else None
        forward = find_forward(
            analysis, application, net, call.inputs, call.inputs if scaled else call.args, carry
        )
    notes: list[str] = []
    unshared = unshared_argument(application.function, call.inputs) if forward is not None else None
    if unshared is not None and scaled:
        return Refusal(
            "MSR018", f"the forward's argument `{unshared}` is not one tensor shared with the grad call"
        )
    if unshared is not None and set_grad:
        forward = None
        notes.append("MSN005")
    other = other_set_grad(analysis, net, application.function)
    if other is not None:
        return Refusal("MSR016", f"set_grad() is called on {code_of(other)}, not on {code_of(net)}")
    base = implicit_set_grad(analysis, application.function)
    if base is not None and code_of(net) != "self.network":
        # The base's __init__ calls self.network.set_grad(): perhaps on a part of this network.
        return Refusal(
            "MSR016", f"{base}.__init__ calls self.network.set_grad(), not {code_of(net)}.set_grad()"
        )
    separate_forward = _calls_network_in([application.function], net, skip=application.outer)
    if (
        set_grad
        and forward is None
        and not scaled
        and separate_forward
        and not _forward_feeds_grad(analysis, application, net, call.inputs)
    ):
        return Refusal("MSR016", f"{code_of(net)} runs a forward here that cannot merge with the grad")
    if scaled:
        if not set_grad:
            return Refusal("MSR014", f"set_grad() is not called on {code_of(net)} (target {target})")
        if forward is None or not forward.carried or not isinstance(forward.target, ast.Name):
            indirect = spelling_for(target).sens == "sens_param" and shape in INDIRECT
            why = f" ({code_of(net)}: {WRAPPER_WHY[shape]})" if indirect and shape else ""
            return Refusal(
                "MSR014", f"the forward call and the sens fill cannot move next to the grad call{why}"
            )
    elif forward is not None and not set_grad:
        forward = None
        notes.append("MSN001")
    return forward, notes, separate_forward


def _wrapped(
    application: Application,
    net: ast.expr,
    call: _Call,
    shape: Optional[str],
    scaled: bool,
    set_grad: bool,
    separate_forward: bool,
    forward: Optional[ForwardMatch],
    position: GradPosition,
) -> Union[str, Refusal]:
    """Why the network is differentiated through a def around it ("varargs", "defaults"; "": it
    is not); a network whose signature is not known and may take *args is left alone (MSR019)."""
    inputs = call.inputs
    if shape in INDIRECT and not scaled:
        assert shape is not None
        code = "MSR015" if shape == "varargs" else "MSR017"
        if call.sens_in_star:
            # The def would have to name the network's inputs, and they are *args less its last.
            return Refusal("MSR013", "the sens is the last of *args: no def can name the network's inputs")
        if separate_forward and forward is None:
            why = "that cannot merge with the grad" if set_grad else "without set_grad() on it"
            return Refusal(code, f"{code_of(net)} also runs a separate forward here, {why}")
        packed = len(inputs) == 1 and inputs[0].star == "*"
        if any(arg.star for arg in inputs) and not packed:
            return Refusal(code, "mixed starred and plain inputs")
        if packed and position is not None:
            return Refusal(code, "input gradients through packed *inputs")
        return shape
    if (
        shape is None
        and not scaled
        and (any(arg.star for arg in call.args) or _takes_varargs(application.function))
    ):
        return Refusal("MSR019")
    return ""


def unshared_argument(function: Optional[Function], inputs: Sequence[Argument]) -> Optional[str]:
    """The first of ``inputs`` that may not be one tensor both the forward and the grad call
    get, as code; None when each is.

    In GRAPH mode the legacy forward and the forward GradOperation runs are one computation only
    when each argument is the same tensor: with a None, a number, a tuple, an attribute or an
    expression written out in both calls, the legacy step runs the network twice (measured on
    MindSpore 2.10: BatchNorm statistics and dropout then differ from one merged
    value_and_grad). A tensor here is a parameter without a default (or the `*inputs` it
    unpacks), or a local that every assignment in the function gives a computed value."""
    if function is None:
        return code_of(inputs[0].value) if inputs else None
    arguments_ = function.args
    positional = [*arguments_.posonlyargs, *arguments_.args]
    defaulted = {item.arg for item in positional[len(positional) - len(arguments_.defaults) :]}
    defaulted |= {
        item.arg
        for item, default in zip(arguments_.kwonlyargs, arguments_.kw_defaults)
        if default is not None
    }
    parameters = {item.arg for item in [*positional, *arguments_.kwonlyargs]} - defaulted
    assigned = _computed_locals(function)
    for argument in inputs:
        value = argument.value
        if argument.star:
            vararg = arguments_.vararg
            unpacked = isinstance(value, ast.Name) and vararg is not None and value.id == vararg.arg
            if argument.star == "*" and unpacked and value.id not in assigned:  # type: ignore[attr-defined]
                continue
            return code_of(value)
        if not isinstance(value, ast.Name) or value.id in defaulted:
            return code_of(value)
        computed = assigned.get(value.id, value.id in parameters)
        if not computed:
            return code_of(value)
    return None


# What a local assigned from one of these holds is a tensor the function computed.
_COMPUTED = (ast.Call, ast.Subscript, ast.BinOp, ast.UnaryOp)


def _computed_locals(function: Function) -> dict[str, bool]:
    """Each name bound in ``function`` -> whether every binding gives it a computed value
    (`x = f(x)`, `x = inputs[0]`, `x, y = inputs`), not a literal, an attribute, a loop variable."""
    found: dict[str, bool] = {}

    def bind(target: ast.AST, computed: bool) -> None:
        for name in variable_names(target):
            found[name] = found.get(name, True) and computed

    for node in walk(function):
        if isinstance(node, ast.Assign):
            unpacks = isinstance(node.value, (ast.Call, ast.Subscript, ast.Name))
            for target in node.targets:
                bind(target, isinstance(node.value, _COMPUTED) if isinstance(target, ast.Name) else unpacks)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            bind(node.target, False)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, False)
    return found


def _takes_varargs(function: Optional[Function]) -> bool:
    return function is not None and function.args.vararg is not None
