"""Applying plans to a libcst tree: statement replacements and removals, comments kept."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ms_migrate.analysis.names import variable_names
from ms_migrate.plan import DEFAULT_POSITION, Plan

SCALED_FORWARD_NAME = "_scaled_forward"


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


def build_call(plan: Plan, function: str, fn: cst.BaseExpression, args: Sequence[cst.Arg]) -> cst.Call:
    """`<function>(fn, position, weights[, sens_param=True])(args)`."""
    inner_args = [cst.Arg(fn)]
    if plan.grad_position != DEFAULT_POSITION or plan.weights is not None:
        inner_args.append(cst.Arg(_position_expression(plan.grad_position)))
    if plan.weights is not None:
        inner_args.append(cst.Arg(plan.weights))
    if plan.sens_param:
        inner_args.append(
            cst.Arg(
                cst.Name("True"),
                keyword=cst.Name("sens_param"),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
        )
    inner = plan.application.inner.with_changes(func=cst.parse_expression(function), args=inner_args)
    return plan.application.outer.with_changes(func=inner, args=args)


def _parameter_names(args: list[cst.Arg], taken: set[str]) -> list[str]:
    names: list[str] = []
    for index, arg in enumerate(args):
        value = arg.value
        name = value.value if isinstance(value, cst.Name) else f"input_{index}"
        while name in names or name in taken:
            name = f"{name}_"
        names.append(name)
    return names


def scaled_forward(plan: Plan, name: str, module: cst.Module) -> tuple[cst.FunctionDef, list[cst.Arg]]:
    """A def whose output is the forward times sens, and the arguments to call its grad with.

    d(f * s)/dw seeded with ones is exactly J^T s, the same numbers GradOperation computes when
    seeded with s. A def, not a lambda: GRAPH mode cannot parse lambdas passed to grad. Its
    parameters are explicit because GRAPH mode rejects `*args` in a differentiated function;
    `*inputs` travels as one tuple argument instead.
    """
    net = module.code_for_node(plan.net)
    sens = module.code_for_node(plan.scaled_by)  # type: ignore[arg-type]
    taken = {name} | variable_names(plan.scaled_by)  # type: ignore[arg-type]
    if len(plan.args) == 1 and plan.args[0].star == "*":
        packed = _parameter_names([plan.args[0].with_changes(star="")], taken)[0]
        code = f"def {name}({packed}):\n    return {net}(*{packed}) * {sens}\n"
        call_args = [plan.args[0].with_changes(star="", comma=cst.MaybeSentinel.DEFAULT)]
    else:
        params = ", ".join(_parameter_names(plan.args, taken))
        code = f"def {name}({params}):\n    return {net}({params}) * {sens}\n"
        call_args = plan.args
    return cst.parse_statement(code), call_args  # type: ignore[return-value]


def new_statements(
    plan: Plan, function_expression: str, module: cst.Module, helper_name: str
) -> list[cst.BaseStatement]:
    """The statements that replace the line holding the grad call."""
    statement = plan.application.statement
    assert statement is not None
    line = statement.line
    small = statement.small
    produced: list[cst.BaseStatement] = []
    fn = plan.net
    args = plan.args
    if plan.scaled_by is not None:
        definition, args = scaled_forward(plan, helper_name, module)
        produced.append(definition)
        fn = cst.Name(helper_name)
    call = build_call(plan, function_expression, fn, args)
    if plan.forward is not None:
        forward_target = plan.forward.small.targets[0].target  # type: ignore[attr-defined]
        assert isinstance(small, cst.Assign)
        grads_target = small.targets[0].target
        merged = cst.Tuple(
            [
                cst.Element(_parenthesize(forward_target)),
                cst.Element(_parenthesize(grads_target)),
            ],
            lpar=[],
            rpar=[],
        )
        new_small = small.with_changes(targets=[cst.AssignTarget(merged)], value=call)
    else:
        replacement: cst.BaseExpression = call
        if plan.wrap_single:
            replacement = cst.Tuple([cst.Element(call, comma=cst.Comma())])
        new_small = small.deep_replace(plan.application.outer, replacement)
    produced.append(line.with_changes(body=[new_small], leading_lines=[]))
    # The replaced line's own blank lines and comments go before whatever now comes first.
    produced[0] = produced[0].with_changes(leading_lines=line.leading_lines)
    return produced


def _join_lines(carried: Sequence[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Comments of removed lines, then the next line's own; blank lines are not stacked up."""
    if any(line.comment is None for line in own):
        carried = [line for line in carried if line.comment is not None]
    return [*carried, *own]


class StatementEditor(cst.CSTTransformer):
    """Replaces and removes whole statement lines, keeping their comments.

    A removed line's own comment lines move to the next statement of its block (or the block's
    footer), so explanatory comments, often in Chinese in real code, are never dropped.
    """

    def __init__(
        self,
        replacements: dict[int, Sequence[cst.BaseStatement]],
        removals: set[int],
    ) -> None:
        self.replacements = replacements
        self.removals = removals

    def _edit_body(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        body: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for before, after in zip(original, updated):
            if id(before) in self.removals:
                carried.extend(after.leading_lines)
                trailing = getattr(after, "trailing_whitespace", None)
                if trailing is not None and trailing.comment is not None:
                    carried.append(cst.EmptyLine(comment=trailing.comment))
                continue
            new = list(self.replacements.get(id(before), [after]))
            if carried:
                new[0] = new[0].with_changes(leading_lines=_join_lines(carried, new[0].leading_lines))
                carried = []
            body.extend(new)
        return body, carried

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, carried = self._edit_body(original_node.body, updated_node.body)
        carried = [line for line in carried if line.comment is not None]
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=carried)]
            carried = []
        footer = [*carried, *updated_node.footer]
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, carried = self._edit_body(original_node.body, updated_node.body)
        carried = [line for line in carried if line.comment is not None]
        return updated_node.with_changes(body=body, footer=[*carried, *updated_node.footer])
