"""Statement editing for any rule: replace or remove whole statement lines, comments kept."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Optional

import libcst as cst

# Comments that instruct a tool about their own line (or file) and mean nothing elsewhere, and
# licence headers, which are never dropped with a statement.
_PRAGMA = re.compile(r"#\s*(noqa|type:|pylint:|fmt:|isort:|ms-migrate:|pragma|nosec|-\*-|!)", re.IGNORECASE)
_LICENCE = re.compile(r"copyright|licen[cs]e", re.IGNORECASE)


def _is_pragma(comment: cst.Comment) -> bool:
    return bool(_PRAGMA.match(comment.value))


def _without_attached_comments(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """``lines`` minus the comment block directly above the statement (no blank line between),
    pragmas and licence text excepted: it described the statement that goes."""
    kept = list(lines)
    while kept and kept[-1].comment is not None:
        comment = kept[-1].comment
        if _is_pragma(comment) or _LICENCE.search(comment.value):
            break
        kept.pop()
    return kept


def _join_lines(carried: Sequence[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """Comments of removed lines, then the next line's own; blank lines are not stacked up."""
    if any(line.comment is None for line in own):
        carried = [line for line in carried if line.comment is not None]
    return [*carried, *own]


# The nodes a block of statements can be reached through, from the module down.
_HOLDS_BLOCKS = (
    cst.Module,
    cst.IndentedBlock,
    cst.BaseCompoundStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


# What ``within`` names: the statements and clauses the plans reach (the blocks, `else:` and
# `finally:` under one are entered with it).
_ENTERED_BY_ID = (cst.BaseCompoundStatement, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase)


class StatementEditor(cst.CSTTransformer):
    """Replaces and removes whole statement lines, keeping their comments.

    A removed line's own comment lines move to the next statement of its block (or the block's
    footer), so explanatory comments, often in Chinese in real code, are not lost with a line
    whose work moved elsewhere. A line in ``gone`` (its work is gone altogether, like a grad op's
    creation) takes its trailing comment and the comment block directly above it along. A
    removed line's trailing pragma (`# noqa: ...`) always goes: it is about that line only.
    """

    def __init__(
        self,
        replacements: dict[int, Sequence[cst.BaseStatement]],
        removals: set[int],
        gone: frozenset[int] = frozenset(),
        within: Optional[Collection[int]] = None,
    ) -> None:
        """``within``: the ids of the statements and clauses that hold the edited statements,
        where the caller knows them; no other is entered, so what holds no edit stays the same
        object (and ``printing.printed`` need not print it)."""
        self.replacements = replacements
        self.removals = removals
        self.gone = gone
        self.within = within

    def _edit_body(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        body: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        for before, after in zip(original, updated):
            if id(before) in self.removals:
                gone = id(before) in self.gone
                leading = after.leading_lines
                carried.extend(_without_attached_comments(leading) if gone else leading)
                trailing = getattr(after, "trailing_whitespace", None)
                comment = trailing.comment if trailing is not None else None
                if comment is not None and not gone and not _is_pragma(comment):
                    carried.append(cst.EmptyLine(comment=comment))
                continue
            new = list(self.replacements.get(id(before), [after]))
            if carried:
                new[0] = new[0].with_changes(leading_lines=_join_lines(carried, new[0].leading_lines))
                carried = []
            body.extend(new)
        return body, carried

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Only blocks are edited: what holds none (statement lines, expressions, parameters,
        # decorators, whitespace and comments: most of a file) is not walked.
        if not isinstance(node, _HOLDS_BLOCKS):
            return False
        if self.within is not None and isinstance(node, _ENTERED_BY_ID) and id(node) not in self.within:
            return False
        return super().on_visit(node)

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
