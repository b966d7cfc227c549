"""MS101's decision carried out on the libcst tree: the only part of the rule that parses with
libcst, and only for a file with at least one conversion.

The plans name ``ast`` statements and calls; each is found in the libcst tree by its path of
blocks (a statement) and its order among the calls of that statement, and checked to be the same
code, so a plan is never applied to the wrong node.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Optional

import libcst as cst

from ms_migrate.analysis.names import loaded_names
from ms_migrate.analysis.walk import walk
from ms_migrate.context import FileContext
from ms_migrate.core.parsing import parse_ast
from ms_migrate.rewrite import imports
from ms_migrate.rewrite.printing import printed, statement_texts
from ms_migrate.rewrite.statements import StatementEditor
from ms_migrate.rewrite.text_edits import line_limit
from ms_migrate.rules.ms101.analysis import Statement
from ms_migrate.rules.ms101.decide import Decision
from ms_migrate.rules.ms101.plan import Plan
from ms_migrate.rules.ms101.transform import Located, new_statements


class LocateError(Exception):
    """A plan's node has no counterpart in the libcst tree (a bug: the rule reports MSR099)."""


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Call] = []

    def visit_Call(self, call: cst.Call) -> None:
        self.found.append(call)


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls in ``node`` in source order (libcst visits children as they are written)."""
    calls = _Calls()  # a class made per call would hold the calls in a cycle, as every class is
    node.visit(calls)
    return calls.found


def _ast_calls_in(node: ast.AST) -> list[ast.Call]:
    """The calls in ``node`` in source order: by start, an enclosing call before those it holds."""
    calls = [child for child in walk(node) if isinstance(child, ast.Call)]
    return sorted(calls, key=_span_order)


def _span_order(call: ast.Call) -> tuple[int, int, int, int]:
    return (call.lineno, call.col_offset, -(call.end_lineno or 0), -(call.end_col_offset or 0))


def _normalised(code: str, mode: str = "eval") -> str:
    return ast.unparse(ast.parse(f"({code})" if mode == "eval" else code, mode=mode))


# Each ast statement kind and the libcst node that stands for it.
_KINDS: dict[type, type] = {
    ast.FunctionDef: cst.FunctionDef,
    ast.AsyncFunctionDef: cst.FunctionDef,
    ast.ClassDef: cst.ClassDef,
    ast.If: cst.If,
    ast.For: cst.For,
    ast.AsyncFor: cst.For,
    ast.While: cst.While,
    ast.With: cst.With,
    ast.AsyncWith: cst.With,
    ast.Try: cst.Try,
    **({ast.TryStar: cst.TryStar} if hasattr(ast, "TryStar") else {}),
    **({ast.Match: cst.Match} if hasattr(ast, "Match") else {}),
}


def _suite(node: Optional[cst.CSTNode]) -> Sequence[cst.CSTNode]:
    """The statements of an indented block (a one-line suite holds no whole-line statement)."""
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return body.body
    raise LocateError("a one-line block")


def _cst_list(node: cst.CSTNode, field: str, index: int) -> Sequence[cst.CSTNode]:
    """The libcst statements that stand for the ast list ``field`` (entry ``index`` of it, for a
    list of handlers or match cases) of ``node``."""
    if isinstance(node, cst.Module):
        return node.body
    if field == "body":
        return _suite(node)
    if field == "orelse":
        orelse = getattr(node, "orelse", None)
        return [orelse] if isinstance(orelse, cst.If) else _suite(orelse)  # `elif`, or `else:`
    if field == "finalbody":
        return _suite(getattr(node, "finalbody", None))
    if field in ("handlers", "cases"):
        return list(getattr(node, field))
    raise LocateError(f"no statements in {field}")


def _line_groups(statements: Sequence[ast.AST]) -> list[int]:
    """For each ast statement, the libcst statement it is part of: `a = 1; b = 2` is one line."""
    groups: list[int] = []
    for index, statement in enumerate(statements):
        shares = index > 0 and statements[index - 1].end_lineno == statement.lineno  # type: ignore[attr-defined]
        groups.append(groups[-1] if shares else (groups[-1] + 1 if groups else 0))
    return groups


class _Locator:
    """Finds the libcst counterparts of a plan's ``ast`` statements and calls.

    A statement is reached by the same path of blocks in both trees (libcst nests `elif` and
    keeps a line of several statements as one node, which the path accounts for); no position
    metadata is computed, which would cost a pass as long as printing the whole file.
    """

    def __init__(self, ctx: FileContext, parents: dict[ast.AST, ast.AST]) -> None:
        self.module = ctx.cst.module
        self.parents = parents
        self._found: dict[int, cst.CSTNode] = {}
        self._blocks: dict[tuple[int, str], tuple[dict[int, int], list[int]]] = {}

    def _block(self, parent: ast.AST, field: str, items: list[ast.AST]) -> tuple[dict[int, int], list[int]]:
        """Where each statement of ``parent``'s list ``field`` is in it, and its line groups: once
        per block, since a module of N train steps is asked for each of its N classes."""
        key = (id(parent), field)
        if key not in self._blocks:
            self._blocks[key] = ({id(item): index for index, item in enumerate(items)}, _line_groups(items))
        return self._blocks[key]

    def _node(self, node: ast.AST) -> cst.CSTNode:
        """The libcst node for an ast statement, handler or match case."""
        found = self._found.get(id(node))
        if found is not None:
            return found
        if isinstance(node, ast.Module):
            return self.module
        parent = self.parents.get(node)
        if parent is None:
            raise LocateError("a statement outside the module")
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            items = getattr(parent, field, None)
            if not isinstance(items, list):
                continue
            positions, groups = self._block(parent, field, items)
            index = positions.get(id(node))
            if index is None:
                continue
            counterpart = self._node(parent)
            if field in ("handlers", "cases"):
                found = _cst_list(counterpart, field, index)[index]
            else:
                statements = _cst_list(counterpart, field, index)
                if groups[-1] + 1 != len(statements):
                    raise LocateError(f"the block holding line {node.lineno} differs")  # type: ignore[attr-defined]
                found = statements[groups[index]]
                kind = _KINDS.get(type(node), cst.SimpleStatementLine)
                if not isinstance(found, kind):
                    raise LocateError(f"line {node.lineno} is not a {kind.__name__}")  # type: ignore[attr-defined]
            self._found[id(node)] = found
            return found
        raise LocateError(f"no block holds line {getattr(node, 'lineno', '?')}")

    @property
    def reached(self) -> list[cst.CSTNode]:
        """Every libcst statement and clause found so far, with all that hold them."""
        return list(self._found.values())

    def line(self, statement: Statement) -> cst.SimpleStatementLine:
        line = self._node(statement.node)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            raise LocateError(f"no one-statement line at line {statement.node.lineno}")
        if _normalised(self.module.code_for_node(line.body[0]), "exec") != ast.unparse(statement.node):
            raise LocateError(f"line {statement.node.lineno} holds other code")
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
    locator = _Locator(ctx, decision.analysis.parents)
    module = locator.module
    text = ctx.folded.text
    source_lines = decision.analysis.lines  # the file's own lines: folding keeps every indentation
    limit = line_limit(text)
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
    reached = {id(node) for node in locator.reached}
    new_module = module.visit(StatementEditor(replacements, removals, creations & removals, reached))
    if decision.new_import is not None:
        new_module = imports.add_import(new_module, decision.new_import)
    folded = ctx.folded.text
    texts = statement_texts(module, folded, ctx.tree) if folded == ctx.text else None
    printed_text, codes = printed(module, new_module, texts)
    new_text = ctx.folded.unfold(printed_text)
    dead = _unused_imports(decision, ctx.tree, new_text)
    if dead:
        new_text = ctx.folded.unfold(printed(new_module, imports.remove_imports(new_module, dead), codes)[0])
    for ending in ("\r\n", "\r", "\n"):
        # libcst drops the final newline of a file whose lines end in a bare CR.
        if ctx.text.endswith(ending):
            if not new_text.endswith(ending):
                new_text += ending
            break
    return new_text


def _unused_imports(decision: Decision, before: ast.Module, new_text: str) -> set[str]:
    """MindSpore imports that the rewrite, and only the rewrite, left unused."""
    used_before, used_after = loaded_names(before), loaded_names(parse_ast(new_text))
    return {
        name
        for name, binding in decision.analysis.resolver.imports.items()
        if binding.qualified.split(".")[0] == "mindspore" and used_before[name] > 0 and used_after[name] == 0
    }
