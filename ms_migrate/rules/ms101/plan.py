"""Deciding, per GradOperation site, the exact functional form to emit or the reason to refuse.

The decision depends on the flags, on how the op is applied, and on the target version (see
``rules/autodiff_spellings.json``). Every refusal is a diagnostic with a code from
``ms_migrate.rules.ms101.reasons.REASONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from ms_migrate.analysis.names import dotted_name, variable_names
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.rules.ms101.analysis import (
    Application,
    GradOpSite,
    ModuleAnalysis,
    Statement,
    code_of,
    implicit_set_grad,
    other_set_grad,
    same_arguments,
    same_code,
    set_grad_on,
)
from ms_migrate.rules.ms101.reasons import left_alone
from ms_migrate.versions import Version, spelling_for

# How grad_position is written: omitted (default 0), None (weights only), or explicit positions.
GradPosition = Union[None, int, tuple[int, ...], str]
DEFAULT_POSITION = "default"


@dataclass(frozen=True)
class ForwardMatch:
    """A forward call that can move to the grad call, and the statements that move with it."""

    statement: Statement
    carried: tuple[Statement, ...] = ()

    @property
    def target(self) -> cst.BaseAssignTargetExpression:
        return self.statement.small.targets[0].target  # type: ignore[attr-defined]


@dataclass
class Plan:
    """An exact functional replacement for one GradOperation site.

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
    net: cst.BaseExpression
    grad_position: GradPosition
    weights: Optional[cst.BaseExpression]
    args: list[cst.Arg]  # the arguments the new function is called with
    sens_param: bool = False
    scaled_by: Optional[cst.Name] = None  # sens applied by scaling the forward output
    aux: str = "has_aux"  # scaled form: "has_aux" (2.0+) or "stop_gradient" (1.8-1.10)
    forward: Optional[ForwardMatch] = None  # a forward call merged into value_and_grad
    wrapper: bool = False  # differentiate a def around the network (construct takes *inputs)
    wrap_single: bool = False  # get_all on one input: GradOperation returns a 1-tuple
    removals: list[Statement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def function_name(self) -> str:
        return "value_and_grad" if self.forward is not None else "grad"

    @property
    def touched(self) -> list[Statement]:
        statements = [*self.removals]
        if self.application.statement is not None:
            statements.append(self.application.statement)
        return statements


def _assign_target(statement: Statement) -> Optional[cst.BaseAssignTargetExpression]:
    small = statement.small
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return small.targets[0].target
    return None


def _has_call(node: cst.CSTNode) -> bool:
    found = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Calls())
    return bool(found)


def _simple_target(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_simple_target(element.value) for element in target.elements)
    return False


def _single_assign(candidate: cst.BaseStatement) -> Optional[cst.Assign]:
    if not isinstance(candidate, cst.SimpleStatementLine) or len(candidate.body) != 1:
        return None
    small = candidate.body[0]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    return small


def find_forward(
    application: Application,
    net: cst.BaseExpression,
    inputs: Sequence[cst.Arg],
    call_args: Sequence[cst.Arg],
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
    skipped: list[cst.Assign] = []
    carried: list[Statement] = []
    for index in range(statement.index - 1, -1, -1):
        candidate = statement.block.body[index]
        if application.binder is not None and candidate is application.binder.line:
            continue
        small = _single_assign(candidate)
        if small is None:
            return None
        target = small.targets[0].target
        value = small.value
        if (
            isinstance(value, cst.Call)
            and same_code(value.func, net)
            and same_arguments(value.args, inputs)
            and _simple_target(target)
        ):
            moved = [small, *(item.small for item in carried)]
            reads = set().union(*(variable_names(item.value) for item in moved))  # type: ignore[attr-defined]
            writes = set().union(*(variable_names(item.targets[0].target) for item in moved))  # type: ignore[attr-defined]
            for other in skipped:
                if variable_names(other.targets[0].target) & reads or variable_names(other.value) & writes:
                    return None
            if any(variable_names(arg.value) & writes for arg in call_args):
                return None
            assert isinstance(candidate, cst.SimpleStatementLine)
            return ForwardMatch(Statement(candidate, statement.block, index), tuple(carried))
        if (
            carry is not None
            and not carried
            and isinstance(target, cst.Name)
            and target.value == carry
        ):
            assert isinstance(candidate, cst.SimpleStatementLine)
            carried.append(Statement(candidate, statement.block, index))
            continue
        if _has_call(small) or not isinstance(target, cst.Name):
            return None
        skipped.append(small)
    return None


def _assigned_names(statement: cst.CSTNode) -> set[str]:
    """Names a statement binds: assignment, augmented and annotated targets, for, with, walrus."""
    found: set[str] = set()

    class _Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            found.update(variable_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            found.update(variable_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            found.update(variable_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            found.update(variable_names(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            found.update(variable_names(node.name))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            found.update(variable_names(node.target))

    statement.visit(_Targets())
    return found


def _forward_feeds_grad(application: Application, net: cst.BaseExpression, inputs: Sequence[cst.Arg]) -> bool:
    """True if the network's last forward before the grad call ran on the grad call's own inputs.

    With set_grad(), PYNATIVE GradOperation reuses that recorded forward, and so does grad: the
    two agree (measured on 2.10, sens_param included). When the forward ran on other inputs, or
    overwrote one of them, they do not.
    """
    statement = application.statement
    assert statement is not None
    reads = set().union(*(variable_names(arg.value) for arg in inputs)) if inputs else set()
    written: set[str] = set()
    for index in range(statement.index - 1, -1, -1):
        candidate = statement.block.body[index]
        if _calls_network_in(candidate, net):
            small = _single_assign(candidate)
            if (
                small is None
                or not isinstance(small.value, cst.Call)
                or not same_code(small.value.func, net)
                or not same_arguments(small.value.args, inputs)
                or _calls_network_in(small.value.args, net)  # type: ignore[arg-type]
            ):
                return False
            written |= variable_names(small.targets[0].target)
            return not written & reads
        written |= _assigned_names(candidate)
    return False  # the forward is in another block: which one ran last is not visible


def _calls_network_in(
    node: Union[cst.CSTNode, Sequence[cst.Arg], None],
    net: cst.BaseExpression,
    skip: Optional[cst.Call] = None,
) -> bool:
    """True if ``node`` calls ``net`` itself (a forward pass), not counting the call ``skip``."""
    found = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            if call is skip:
                return False
            if same_code(call.func, net):
                found.append(call)
            return True

    for item in [] if node is None else node if isinstance(node, Sequence) else [node]:
        item.visit(_Calls())
    return bool(found)


def _assignment_before(block_body: Sequence[cst.BaseStatement], index: int, name: str):  # type: ignore[no-untyped-def]
    """The nearest `name = value` above ``index`` in the same block, with its index."""
    for position in range(index - 1, -1, -1):
        candidate = block_body[position]
        if not isinstance(candidate, cst.SimpleStatementLine):
            continue
        for small in candidate.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and small.targets[0].target.value == name
            ):
                return small.value, position
    return None, -1


def _is_tuple_valued(function: Optional[cst.FunctionDef], name: str) -> bool:
    """True if ``name`` is ever built as a tuple or list (one sens per output) in ``function``."""
    if function is None:
        return False
    found = []

    class _Bindings(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if (
                    isinstance(target.target, cst.Name)
                    and target.target.value == name
                    and isinstance(node.value, (cst.Tuple, cst.List))
                ):
                    found.append(node)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and node.target.value == name:
                found.append(node)

    function.visit(_Bindings())
    return bool(found)


def _sens_problem(
    application: Application,
    sens: cst.BaseExpression,
    net: cst.BaseExpression,
    inputs: Sequence[cst.Arg],
) -> Optional[str]:
    """Why scaling the forward by this sens might not be exact, or None when it is.

    Exact means: sens is a uniform fill whose shape and dtype come from this very network's
    output on these very inputs, so `net(inputs) * sens` seeds backprop exactly as GradOperation
    did.
    """
    function = application.function
    if not isinstance(sens, cst.Name):
        return "sens is an expression, not a variable built from the loss"
    if function is not None and sens.value in {
        param.name.value for param in (*function.params.params, *function.params.kwonly_params)
    }:
        return "MSR007"
    statement = application.statement
    assert statement is not None
    body = statement.block.body
    value, position = _assignment_before(body, statement.index, sens.value)
    if value is None:
        return "sens is not assigned in this function"
    if not _is_fill_like(value):
        return "sens is not built with fill/ones_like"
    for name in variable_names(value) - {"self"}:
        source, _ = _assignment_before(body, position, name)
        if (
            isinstance(source, cst.Call)
            and same_code(source.func, net)
            and same_arguments(source.args, inputs)
        ):
            return None
    return "the shape of sens does not come from this network's output"


_FILL_FUNCTIONS = {"fill", "Fill", "ones_like", "OnesLike", "full_like", "fill_", "full"}


def _is_fill_like(value: cst.BaseExpression) -> bool:
    """`fill(dtype(loss), shape(loss), scale)` and its spellings, possibly cast or scaled."""
    if isinstance(value, cst.BinaryOperation):
        return _is_fill_like(value.left) or _is_fill_like(value.right)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Call):  # P.Fill()(...), P.Cast()(fill(...), dtype)
        func = func.func
    name = dotted_name(func) or ""
    last = name.rsplit(".", 1)[-1]
    if last in _FILL_FUNCTIONS:
        return True
    if last in ("cast", "Cast") and value.args:
        return _is_fill_like(value.args[0].value)
    return False


# Whether the differentiated network's construct takes *args: True, False, or None (unknown).
NetworkVarargs = Callable[[GradOpSite, Application, cst.BaseExpression], Optional[bool]]


def plan_site(
    analysis: ModuleAnalysis,
    site: GradOpSite,
    target: Version,
    network_varargs: Optional[NetworkVarargs] = None,
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
        return left_alone(line, "MSR003", "a subclass uses the op too")
    if site.escapes:
        lines = ", ".join(str(number) for number in sorted(set(site.escapes)))
        return left_alone(line, "MSR003", f"line {lines}")
    if site.placement == "other":
        return left_alone(line, "MSR003", "created inside an expression")
    if not site.applications:
        return left_alone(line, "MSR012")
    plans: list[Plan] = []
    for application in site.applications:
        outcome = _plan_application(analysis, site, application, target, network_varargs)
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


def _plan_application(
    analysis: ModuleAnalysis,
    site: GradOpSite,
    application: Application,
    target: Version,
    network_varargs: Optional[NetworkVarargs],
) -> Union[Plan, Diagnostic]:
    line = site.line
    spelling = spelling_for(target)
    assert site.flags is not None and spelling.module is not None
    if application.function is None:
        return left_alone(line, "MSR005", "applied at module level")
    in_construct = application.function.name.value == "construct"
    if site.placement == "attribute" and (
        analysis.enclosing(application.function, cst.ClassDef) is not site.class_def
    ):
        return left_alone(line, "MSR005", f"applied in {application.function.name.value}() of another class")
    statement = application.statement
    if statement is None or not isinstance(
        statement.small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr)
    ):
        return left_alone(line, "MSR009", "the grad call is not part of a plain statement")
    if application.binder is not None and application.binder.block is not statement.block:
        return left_alone(line, "MSR009", "the op is bound and called in different blocks")

    flags = site.flags
    inner_args = application.inner.args
    if any(arg.keyword or arg.star for arg in inner_args):
        return left_alone(line, "MSR009", "the op is called with keyword or starred arguments")
    if len(inner_args) != (2 if flags.get_by_list else 1):
        expected = "(net, weights)" if flags.get_by_list else "(net)"
        return left_alone(line, "MSR009", f"expected op{expected}")
    net = inner_args[0].value
    if isinstance(net, cst.Lambda):
        return left_alone(line, "MSR009", "a lambda network (GRAPH mode cannot parse it in grad)")
    weights = inner_args[1].value if flags.get_by_list else None

    args = list(application.outer.args)
    if any(arg.keyword for arg in args):
        return left_alone(line, "MSR009", "keyword arguments to the grad function")

    # sens: the last positional argument, or inside a trailing *args (2.8+ only)
    sens: Optional[cst.BaseExpression] = None
    sens_in_star = False
    if flags.sens_param:
        if args and args[-1].star:
            if spelling.sens != "sens_param":
                return left_alone(line, "MSR007", "sens is hidden in *args")
            if flags.get_all:
                return left_alone(line, "MSR013", "get_all with sens inside *args")
            sens_in_star = True
        elif not args:
            return left_alone(line, "MSR007", "no sens argument")
        else:
            sens = args[-1].value
    inputs = args[:-1] if flags.sens_param else args
    tuple_sens = sens is not None and (
        isinstance(sens, (cst.Tuple, cst.List))
        or (isinstance(sens, cst.Name) and _is_tuple_valued(application.function, sens.value))
    )

    wrap_single = False
    position: GradPosition
    if flags.get_all:
        if any(arg.star for arg in inputs):
            return left_alone(line, "MSR013")
        if len(inputs) == 1:
            if flags.get_by_list:
                return left_alone(line, "MSR010", "get_all and get_by_list on a one-input network")
            position, wrap_single = 0, True
        else:
            position = tuple(range(len(inputs)))
    elif flags.get_by_list:
        position = None
    else:
        position = DEFAULT_POSITION

    set_grad = set_grad_on(analysis, net, application.function)
    varargs = network_varargs(site, application, net) if network_varargs is not None else None
    # Below 2.8 there is no sens_param: the loss scale is applied inside a def (the scaled form).
    # A network GRAPH mode cannot differentiate directly also needs a def; when its sens is the
    # fill of its own output, the scaled form is that def at any target.
    scaled = flags.sens_param and spelling.sens != "sens_param"
    if (
        flags.sens_param
        and varargs is True
        and isinstance(sens, cst.Name)
        and not tuple_sens
        and _sens_problem(application, sens, net, inputs) is None
    ):
        scaled = True
    if scaled:
        assert sens is not None
        if tuple_sens:
            return left_alone(line, "MSR008", f"a tuple sens (one seed per output) (target {target})")
        problem = _sens_problem(application, sens, net, inputs)  # type: ignore[arg-type]
        if problem == "MSR007":
            return left_alone(line, "MSR007", f"target {target} has no sens_param")
        if problem:
            return left_alone(line, "MSR008", f"{problem} (target {target})")
        starred = [arg for arg in inputs if arg.star]
        if starred and (len(inputs) != 1 or inputs[0].star != "*" or not flags.get_by_list or flags.get_all):
            return left_alone(line, "MSR013", "starred inputs with forward scaling")

    assign = isinstance(statement.small, cst.Assign) and statement.small.value is application.outer
    forward: Optional[ForwardMatch] = None
    if assign and not wrap_single and not sens_in_star:
        carry = sens.value if scaled and isinstance(sens, cst.Name) else None
        forward = find_forward(application, net, inputs, inputs if scaled else args, carry)
    notes: list[str] = []
    other = other_set_grad(analysis, net, application.function)
    if other is not None:
        return left_alone(line, "MSR016", f"set_grad() is called on {code_of(other)}, not on {code_of(net)}")
    base = implicit_set_grad(analysis, application.function)
    if base is not None and code_of(net) != "self.network":
        # The base's __init__ calls self.network.set_grad(): perhaps on a part of this network.
        detail = f"{base}.__init__ calls self.network.set_grad(), not {code_of(net)}.set_grad()"
        return left_alone(line, "MSR016", detail)
    separate_forward = _calls_network_in(application.function, net, skip=application.outer)
    if set_grad and forward is None and not scaled and separate_forward and not _forward_feeds_grad(
        application, net, inputs
    ):
        detail = f"{code_of(net)} runs a forward here that cannot merge with the grad"
        return left_alone(line, "MSR016", detail)
    if scaled:
        if not set_grad:
            return left_alone(line, "MSR014", f"set_grad() is not called on {code_of(net)} (target {target})")
        if forward is None or not forward.carried or not isinstance(forward.target, cst.Name):
            why = f" ({code_of(net)} takes *inputs)" if spelling.sens == "sens_param" else ""
            return left_alone(
                line, "MSR014", f"the forward call and the sens fill cannot move next to the grad call{why}"
            )
    elif forward is not None and not set_grad:
        forward = None
        notes.append("MSN001")

    wrapper = False
    if varargs is True and not scaled:
        if separate_forward and forward is None:
            why = "that cannot merge with the grad" if set_grad else "without set_grad() on it"
            return left_alone(line, "MSR015", f"{code_of(net)} also runs a separate forward here, {why}")
        packed = len(inputs) == 1 and inputs[0].star == "*"
        if any(arg.star for arg in inputs) and not packed:
            return left_alone(line, "MSR015", "mixed starred and plain inputs")
        if packed and position is not None:
            return left_alone(line, "MSR015", "input gradients through packed *inputs")
        wrapper = True
    elif varargs is None and not scaled and (
        any(arg.star for arg in args) or _takes_varargs(application.function)
    ):
        notes.append("MSN003")

    call_args = args
    if scaled:
        call_args = [*inputs]
        call_args[-1] = call_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    plan = Plan(
        site=site,
        application=application,
        module=spelling.module,
        net=net,
        grad_position=position,
        weights=weights,
        args=call_args,
        sens_param=flags.sens_param and not scaled,
        scaled_by=sens if scaled else None,  # type: ignore[arg-type]
        aux="has_aux" if spelling.module == "mindspore" else "stop_gradient",
        forward=forward,
        wrapper=wrapper,
        wrap_single=wrap_single,
        notes=notes,
    )
    if forward is not None and isinstance(forward.target, (cst.Tuple, cst.List)):
        plan.notes.append("MSN002")
    if site.placement == "attribute" and not in_construct and (forward is not None or scaled or wrapper):
        # A helper method's call path and mode are not visible here; only the direct form, which
        # is exact in both modes, is written there.
        return left_alone(line, "MSR005", f"applied in {application.function.name.value}()")
    if application.binder is not None:
        plan.removals.append(application.binder)
    if forward is not None:
        plan.removals.extend([forward.statement, *forward.carried])
    return plan


def _takes_varargs(function: Optional[cst.FunctionDef]) -> bool:
    return function is not None and isinstance(function.params.star_arg, cst.Param)
