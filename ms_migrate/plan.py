"""Deciding, per GradOperation site, the exact functional form to emit or the reason to refuse.

The decision depends on the flags, on how the op is applied, and on the target version (see
``rules/autodiff_spellings.json``). Every refusal is a ``Finding`` with a code from
``ms_migrate.findings.REASONS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from ms_migrate.analysis.grad_ops import (
    Application,
    GradOpSite,
    ModuleAnalysis,
    Statement,
    same_arguments,
    same_code,
)
from ms_migrate.analysis.names import dotted_name, variable_names
from ms_migrate.findings import Finding, left_alone
from ms_migrate.versions import Version, spelling_for

# How grad_position is written: omitted (default 0), None (weights only), or explicit positions.
GradPosition = Union[None, int, tuple[int, ...], str]
DEFAULT_POSITION = "default"


@dataclass
class Plan:
    """An exact functional replacement for one GradOperation site."""

    site: GradOpSite
    application: Application
    module: str  # "mindspore" or "mindspore.ops": where value_and_grad/grad live for the target
    net: cst.BaseExpression
    grad_position: GradPosition
    weights: Optional[cst.BaseExpression]
    args: list[cst.Arg]  # the arguments the new function is called with
    sens_param: bool = False
    scaled_by: Optional[cst.BaseExpression] = None  # sens applied by scaling the forward output
    forward: Optional[Statement] = None  # a forward call merged into value_and_grad
    wrap_single: bool = False  # get_all on one input: GradOperation returns a 1-tuple
    removals: list[Statement] = field(default_factory=list)

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


def find_forward(
    application: Application, net: cst.BaseExpression, args: list[cst.Arg]
) -> Optional[Statement]:
    """The `loss = net(args)` just before the grad call that value_and_grad can absorb.

    Statements between the two are allowed only when they call nothing and touch neither the
    forward's result nor its inputs: merging moves the forward past them.
    """
    statement = application.statement
    assert statement is not None
    skipped: list[cst.BaseStatement] = []
    for index in range(statement.index - 1, -1, -1):
        candidate = statement.block.body[index]
        if application.binder is not None and candidate is application.binder.line:
            continue
        if not isinstance(candidate, cst.SimpleStatementLine) or len(candidate.body) != 1:
            return None
        small = candidate.body[0]
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        value = small.value
        if (
            isinstance(value, cst.Call)
            and same_code(value.func, net)
            and same_arguments(value.args, args)
            and _simple_target(small.targets[0].target)
        ):
            # Moving the forward past the skipped lines must not change what either computes.
            reads, writes = variable_names(value), variable_names(small.targets[0].target)
            for other in skipped:
                other_small = other.body[0]  # type: ignore[attr-defined]
                other_writes = variable_names(other_small.targets[0].target)
                if other_writes & reads or variable_names(other_small.value) & writes:
                    return None
            return Statement(candidate, statement.block, index)
        if _has_call(small) or not isinstance(small.targets[0].target, cst.Name):
            return None
        skipped.append(candidate)
    return None


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


def plan_site(analysis: ModuleAnalysis, site: GradOpSite, target: Version) -> Union[Plan, Finding]:
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
    if len(site.applications) > 1:
        lines = ", ".join(str(app.line) for app in site.applications)
        return left_alone(line, "MSR004", f"applied at lines {lines}")
    application = site.applications[0]
    if application.function is None:
        return left_alone(line, "MSR005", "applied at module level")
    if site.placement == "attribute" and (
        application.function.name.value != "construct"
        or analysis.enclosing(application.function, cst.ClassDef) is not site.class_def
    ):
        return left_alone(line, "MSR005", f"applied in {application.function.name.value}()")
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
    sens_param = False
    scaled_by = None
    if flags.sens_param and spelling.sens == "sens_param" and args and args[-1].star:
        # From 2.8 the functional form takes sens from the last argument at run time, exactly
        # as GradOperation did, so sens inside *args needs no knowing.
        if flags.get_all:
            return left_alone(line, "MSR013", "get_all with sens inside *args")
        sens_param = True
    elif flags.sens_param:
        if not args or args[-1].star:
            return left_alone(line, "MSR007", "sens is hidden in *args")
        sens = args[-1].value
        if isinstance(sens, (cst.Tuple, cst.List)) or (
            isinstance(sens, cst.Name) and _is_tuple_valued(application.function, sens.value)
        ):
            return left_alone(line, "MSR008", "a tuple sens (one seed per output)")
        if spelling.sens == "sens_param":
            sens_param = True
        else:
            problem = _sens_problem(application, sens, net, args[:-1])
            if problem == "MSR007":
                return left_alone(line, "MSR007", f"target {target} has no sens_param")
            if problem:
                return left_alone(line, "MSR008", f"{problem} (target {target})")
            scaled_by = sens
            args = args[:-1]
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            starred = [arg for arg in args if arg.star]
            if starred and (len(args) != 1 or args[0].star != "*" or not flags.get_by_list or flags.get_all):
                return left_alone(line, "MSR013", "starred inputs with forward scaling")

    wrap_single = False
    position: GradPosition
    inputs = args[:-1] if sens_param else args
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

    plan = Plan(
        site=site,
        application=application,
        module=spelling.module,
        net=net,
        grad_position=position,
        weights=weights,
        args=args,
        sens_param=sens_param,
        scaled_by=scaled_by,
        wrap_single=wrap_single,
    )
    if (
        not flags.sens_param
        and not wrap_single
        and isinstance(statement.small, cst.Assign)
        and statement.small.value is application.outer
    ):
        plan.forward = find_forward(application, net, args)
    if site.placement in ("attribute", "module", "local") and site.statement is not None:
        plan.removals.append(site.statement)
    if application.binder is not None:
        plan.removals.append(application.binder)
    if plan.forward is not None:
        plan.removals.append(plan.forward)
    return plan
