"""Statement editing for any rule: replace or remove whole statement lines, comments kept."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst


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
