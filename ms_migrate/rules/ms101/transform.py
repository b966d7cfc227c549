"""MS101's new statements: the value_and_grad / grad call, and the defs some forms need.

A plan (``ast``) says what to write; ``Located`` holds the libcst nodes it is written from, so the
arguments keep their spelling, comments and layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from ms_migrate.analysis.names import variable_names
from ms_migrate.rewrite.text_edits import width
from ms_migrate.rules.ms101.plan import DEFAULT_POSITION, Plan


@dataclass(frozen=True)
class Located:
    """One plan's nodes in the libcst tree that is rewritten."""

    line: cst.SimpleStatementLine  # holds the grad call
    inner: cst.Call  # op(net[, weights])
    outer: cst.Call  # (...)(args)
    forward: Optional[cst.SimpleStatementLine] = None  # the forward call merged into the grad call
    carried: tuple[cst.SimpleStatementLine, ...] = ()  # moved with the forward

    @property
    def net(self) -> cst.BaseExpression:
        return self.inner.args[0].value

    @property
    def forward_target(self) -> cst.BaseAssignTargetExpression:
        assert self.forward is not None
        return self.forward.body[0].targets[0].target  # type: ignore[attr-defined]

    def call_args(self, plan: Plan) -> list[cst.Arg]:
        """The new function's arguments: the grad call's, less the sens a scaled form applies."""
        args = list(self.outer.args)
        if plan.scaled_by is None:
            return args
        inputs = args[:-1]
        inputs[-1] = inputs[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return inputs


def _position_expression(position: object) -> cst.BaseExpression:
    if position is None:
        return cst.Name("None")
    if isinstance(position, int):
        return cst.Integer(str(position))
    assert isinstance(position, tuple)
    return cst.parse_expression("(" + ", ".join(str(index) for index in position) + ")")


def _parenthesize(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, cst.Tuple) and not node.lpar:
        return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return node


def _keyword(name: str, value: str) -> cst.Arg:
    return cst.Arg(
        cst.Name(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


def build_call(
    plan: Plan, located: Located, function: str, fn: cst.BaseExpression, args: Sequence[cst.Arg]
) -> cst.Call:
    """`<function>(fn, position, weights[, sens_param=True][, has_aux=True])(args)`."""
    inner_args = [cst.Arg(fn)]
    if plan.grad_position != DEFAULT_POSITION or plan.weights is not None:
        inner_args.append(cst.Arg(_position_expression(plan.grad_position)))
    if plan.weights is not None:
        inner_args.append(cst.Arg(located.inner.args[1].value))
    if plan.sens_param:
        inner_args.append(_keyword("sens_param", "True"))
    if plan.scaled_by is not None and plan.aux == "has_aux":
        inner_args.append(_keyword("has_aux", "True"))
    inner = located.inner.with_changes(func=cst.parse_expression(function), args=inner_args)
    return located.outer.with_changes(func=inner, args=args)


def _parameter_names(args: Sequence[cst.Arg], taken: set[str]) -> list[str]:
    names: list[str] = []
    for index, arg in enumerate(args):
        value = arg.value
        name = value.value if isinstance(value, cst.Name) else f"input_{index}"
        while name in names or name in taken:
            name = f"{name}_"
        names.append(name)
    return names


def _signature(inputs: Sequence[cst.Arg], taken: set[str]) -> tuple[str, str, list[cst.Arg]]:
    """The def's parameters, the network call's arguments inside it, and the def's call arguments.

    Parameters are explicit because GRAPH mode rejects `*args` in a differentiated function;
    `*inputs` travels as one tuple argument instead.
    """
    if len(inputs) == 1 and inputs[0].star == "*":
        packed = _parameter_names([inputs[0].with_changes(star="")], taken)[0]
        return packed, f"*{packed}", [inputs[0].with_changes(star="")]
    params = ", ".join(_parameter_names(inputs, taken))
    return params, params, list(inputs)


def _with_commas(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    return [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in args]


def _bare(line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """A statement without its own comments: those stay behind with the removed original."""
    return line.with_changes(leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())


def _function(name: str, params: str, body: Sequence[cst.BaseStatement]) -> cst.FunctionDef:
    definition = cst.parse_statement(f"def {name}({params}):\n    pass\n")
    assert isinstance(definition, cst.FunctionDef)
    return definition.with_changes(body=cst.IndentedBlock(body=list(body)))


def wrapper_def(
    plan: Plan, located: Located, name: str, module: cst.Module
) -> tuple[cst.FunctionDef, list[cst.Arg]]:
    """`def _forward(x, y): return net(x, y)`, for a network GRAPH mode cannot differentiate."""
    args = located.call_args(plan)
    inputs = args[:-1] if plan.sens_param else args
    taken = {name} | variable_names(plan.net)
    params, inner, call_args = _signature(inputs, taken)
    body = cst.parse_statement(f"return {module.code_for_node(located.net)}({inner})\n")
    if plan.sens_param:
        call_args.append(args[-1])
    return _function(name, params, [body]), _with_commas(call_args)


def scaled_forward(
    plan: Plan, located: Located, name: str, module: cst.Module, stop_gradient: str
) -> tuple[cst.FunctionDef, list[cst.Arg]]:
    """A def that runs the forward once and returns `(loss * sens, loss, sens)`.

    Seeded with ones, d(loss * sens)/dw is exactly J^T sens: the numbers GradOperation computes
    when seeded with sens. The loss and the sens fill come back as auxiliaries (has_aux, or
    stop_gradient before 2.0), so the network runs once per step, as the legacy code did with
    set_grad() or in GRAPH mode, and BatchNorm statistics and Dropout masks stay the same.
    A def, not a lambda: GRAPH mode cannot parse lambdas passed to grad.
    """
    assert plan.forward is not None and plan.scaled_by is not None
    loss = module.code_for_node(located.forward_target)
    sens = plan.scaled_by.id
    taken = {name, loss, sens} | variable_names(plan.net)
    for statement in plan.forward.carried:
        taken |= variable_names(statement.node)
    params, inner, call_args = _signature(located.call_args(plan), taken)
    forward = cst.parse_statement(f"{loss} = {module.code_for_node(located.net)}({inner})\n")
    if plan.aux == "has_aux":
        result = f"return {loss} * {sens}, {loss}, {sens}\n"
    else:
        result = f"return {loss} * {sens}, {stop_gradient}({loss}), {stop_gradient}({sens})\n"
    body = [forward, *(_bare(line) for line in located.carried), cst.parse_statement(result)]
    return _function(name, params, body), _with_commas(call_args)


def _discard_name(plan: Plan) -> str:
    used = variable_names(plan.application.function) if plan.application.function is not None else set()
    name = "_"
    while name in used:
        name = f"{name}_"
    return name


def _split_arguments(call: cst.Call, step: str) -> Optional[cst.Call]:
    """``call`` with its arguments on a line of their own and the closing paren on the next."""
    if not call.args:
        return None
    opening = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(step))
    closing = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(""))
    last = call.args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing)
    args = [*call.args[:-1], last]
    return call.with_changes(whitespace_before_args=opening, args=args)


def _fitted(
    line: cst.SimpleStatementLine, call: cst.Call, module: cst.Module, indent: str, limit: int
) -> cst.SimpleStatementLine:
    """``line`` as is when it fits in ``limit`` columns, else with the grad call split the way
    black splits it: the application's arguments first, then the grad function's, then both."""

    def fits(candidate: cst.SimpleStatementLine) -> bool:
        code = module.code_for_node(candidate)
        return all(width(indent + text) <= limit for text in code.splitlines())

    if fits(line) or not isinstance(call.func, cst.Call):
        return line
    step = module.default_indent
    outer = _split_arguments(call, step)
    inner = _split_arguments(call.func, step)
    candidates = []
    if outer is not None:
        candidates.append(outer)
    if inner is not None:
        candidates.append(call.with_changes(func=inner))
        if outer is not None:
            candidates.append(outer.with_changes(func=inner))
    for candidate in candidates:
        fitted = line.deep_replace(call, candidate)
        if fits(fitted):  # type: ignore[arg-type]
            return fitted  # type: ignore[return-value]
    return line


def new_statements(
    plan: Plan,
    located: Located,
    function_expression: str,
    module: cst.Module,
    helper_name: str,
    indent: str = "",
    limit: int = 0,
    first_in_block: bool = True,
) -> list[cst.BaseStatement]:
    """The statements that replace the line holding the grad call; the grad call's line is split
    when it would be longer than ``limit`` columns at ``indent`` (no limit when 0)."""
    line = located.line
    small = line.body[0]
    produced: list[cst.BaseStatement] = []
    fn = located.net
    args = located.call_args(plan)
    if plan.scaled_by is not None:
        stop_gradient = function_expression.rsplit(".", 1)[0] + ".stop_gradient"
        definition, args = scaled_forward(plan, located, helper_name, module, stop_gradient)
        produced.append(definition)
        fn = cst.Name(helper_name)
    elif plan.wrapper:
        definition, args = wrapper_def(plan, located, helper_name, module)
        produced.append(definition)
        fn = cst.Name(helper_name)
    call = build_call(plan, located, function_expression, fn, args)
    if plan.forward is not None:
        forward_target = located.forward_target
        assert isinstance(small, cst.Assign)
        grads_target = small.targets[0].target
        value: cst.BaseExpression = _parenthesize(forward_target)
        if plan.scaled_by is not None:
            value = cst.Tuple(
                [
                    cst.Element(cst.Name(_discard_name(plan))),
                    cst.Element(forward_target),
                    cst.Element(cst.Name(plan.scaled_by.id)),
                ]
            )
        merged = cst.Tuple(
            [cst.Element(value), cst.Element(_parenthesize(grads_target))],
            lpar=[],
            rpar=[],
        )
        new_small = small.with_changes(targets=[cst.AssignTarget(merged)], value=call)
    else:
        replacement: cst.BaseExpression = call
        if plan.wrap_single:
            replacement = cst.Tuple([cst.Element(call, comma=cst.Comma())])
        new_small = small.deep_replace(located.outer, replacement)
    new_line = line.with_changes(body=[new_small], leading_lines=[])
    produced.append(_fitted(new_line, call, module, indent, limit) if limit else new_line)
    # The replaced line's own blank lines and comments go before whatever now comes first.
    leading = list(line.leading_lines)
    if len(produced) > 1:
        # A nested def gets a blank line before it unless it opens its block (pycodestyle E306),
        # and one after it, as black puts them.
        if not first_in_block and not any(empty.comment is None for empty in leading):
            leading.insert(0, cst.EmptyLine(indent=False))
        produced[-1] = produced[-1].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    produced[0] = produced[0].with_changes(leading_lines=leading)
    return produced
