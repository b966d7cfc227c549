"""MS101's decision carried out on the libcst tree: the only part of the rule that parses with
libcst, and only for a file with at least one conversion.

The plans name ``ast`` statements and calls; each is found in the libcst tree by its line (a
statement) and its order among the calls of that statement, and checked to be the same code, so
a plan is never applied to the wrong node.
"""

from __future__ import annotations

import ast
import re

import libcst as cst
from libcst.metadata import PositionProvider

from ms_migrate.context import FileContext
from ms_migrate.rewrite import imports
from ms_migrate.rewrite.statements import StatementEditor
from ms_migrate.rules.ms101.analysis import Statement
from ms_migrate.rules.ms101.decide import Decision
from ms_migrate.rules.ms101.plan import Plan
from ms_migrate.rules.ms101.transform import Located, line_limit, new_statements

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LocateError(Exception):
    """A plan's node has no counterpart in the libcst tree (a bug: the rule reports MSR099)."""


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls in ``node`` in source order (libcst visits children as they are written)."""
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Calls())
    return found


def _ast_calls_in(node: ast.AST) -> list[ast.Call]:
    """The calls in ``node`` in source order: by start, an enclosing call before those it holds."""
    calls = [child for child in ast.walk(node) if isinstance(child, ast.Call)]
    return sorted(calls, key=_span_order)


def _span_order(call: ast.Call) -> tuple[int, int, int, int]:
    return (call.lineno, call.col_offset, -(call.end_lineno or 0), -(call.end_col_offset or 0))


def _normalised(code: str) -> str:
    return ast.unparse(ast.parse(f"({code})", mode="eval"))


class _Locator:
    """Finds the libcst counterparts of a plan's ``ast`` statements and calls."""

    def __init__(self, ctx: FileContext) -> None:
        wrapper = ctx.cst
        self.module = wrapper.module
        self.lines: dict[int, cst.SimpleStatementLine] = {
            position.start.line: node
            for node, position in wrapper.resolve(PositionProvider).items()
            if isinstance(node, cst.SimpleStatementLine)
        }

    def line(self, statement: Statement) -> cst.SimpleStatementLine:
        line = self.lines.get(statement.node.lineno)
        if line is None or len(line.body) != 1:
            raise LocateError(f"no one-statement line at line {statement.node.lineno}")
        return line

    def call(self, statement: Statement, call: ast.Call) -> cst.Call:
        line = self.line(statement)
        ast_calls = _ast_calls_in(statement.node)
        cst_calls = _calls_in(line)
        position = next((index for index, item in enumerate(ast_calls) if item is call), None)
        if position is None or len(ast_calls) != len(cst_calls):
            raise LocateError(f"the calls of line {statement.node.lineno} differ")
        found = cst_calls[position]
        if _normalised(self.module.code_for_node(found)) != ast.unparse(call):
            raise LocateError(f"call {ast.unparse(call)!r} at line {call.lineno} not found")
        return found

    def plan(self, plan: Plan) -> Located:
        application = plan.application
        statement = application.statement
        assert statement is not None
        forward = plan.forward
        return Located(
            line=self.line(statement),
            inner=self.call(application.binder or statement, application.inner),
            outer=self.call(statement, application.outer),
            forward=self.line(forward.statement) if forward is not None else None,
            carried=tuple(self.line(item) for item in forward.carried) if forward is not None else (),
        )


def rewrite(ctx: FileContext, decision: Decision) -> str:
    """The file's text with every conversion of ``decision`` carried out."""
    locator = _Locator(ctx)
    module = locator.module
    text = ctx.folded.text
    source_lines = _LINE_BREAK.split(text)
    limit = line_limit(text)
    before = imports.loaded_names(module)
    replacements: dict[int, list[cst.BaseStatement]] = {}
    removals: set[int] = set()
    removed: set[int] = set()  # the same statements, by their ast ids
    for conversion in decision.conversions:
        plan = conversion.plan
        located = locator.plan(plan)
        statement = plan.application.statement
        assert statement is not None
        start = source_lines[statement.node.lineno - 1]
        indent = start[: len(start) - len(start.lstrip())]
        removals |= {id(locator.line(item)) for item in plan.removals}
        removed |= {id(item.node) for item in plan.removals}
        first = all(id(earlier) in removed for earlier in statement.block[: statement.index])
        replacements[id(located.line)] = new_statements(
            plan, located, conversion.function, module, conversion.helper, indent, limit, first_in_block=first
        )
    # A removed creation's comments described the op, which is gone; other removed lines (a
    # forward merged into the grad call) did work that goes on elsewhere, and keep theirs.
    creations = frozenset(
        id(locator.line(conversion.plan.site.statement))
        for conversion in decision.conversions
        if conversion.plan.site.statement is not None
    )
    new_module = module.visit(StatementEditor(replacements, removals, creations & removals))
    if decision.new_import is not None:
        new_module = imports.add_import(new_module, decision.new_import)
    candidates = {
        name
        for name, binding in decision.analysis.resolver.imports.items()
        if binding.qualified.split(".")[0] == "mindspore"
    }
    new_module = imports.remove_unused_imports(new_module, candidates, before)
    new_text = ctx.folded.unfold(new_module.code)
    for ending in ("\r\n", "\r", "\n"):
        # libcst drops the final newline of a file whose lines end in a bare CR.
        if ctx.text.endswith(ending):
            if not new_text.endswith(ending):
                new_text += ending
            break
    return new_text
