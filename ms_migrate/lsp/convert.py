"""ms-migrate's values as LSP's: diagnostics, and a rewritten text as a workspace edit.

Positions here are ms-migrate's (lines from 1, columns in characters); LSP counts lines from 0 and
columns in the code units the client and server agreed on (UTF-16 unless the client offers
another), which ``PositionCodec`` converts. A rewrite becomes the whole-line edits between the two
texts (``edits_between``, the diff the engine itself uses), so applying it yields the new text
exactly and leaves the lines it does not touch (and the cursor on them) alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from ms_migrate.core.codes import all_notes, all_reasons
from ms_migrate.diagnostics import Diagnostic, Severity, edits_between, source_lines
from ms_migrate.lsp.buffers import Buffer, cell_texts

SOURCE = "ms-migrate"
_SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
# The docs of a checkout (an editable install); a wheel has none, and the client may name others.
LOCAL_DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def github_slug(text: str) -> str:
    """The anchor GitHub (and most Markdown viewers) give a heading."""
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def docs_link(code: str, docs_url: Optional[str]) -> Optional[str]:
    """The section of docs/rules.md (or docs/reasons.md, for a reason or a note) on ``code``.
    ``docs_url``: where the docs folder is published; None: the checkout's, if there is one."""
    from ms_migrate.rules.base import all_rules

    reasons, notes = all_reasons(), all_notes()
    rules = {rule.code: rule for rule in all_rules()}
    if code in rules:
        page, heading = "rules.md", f"{code}: {rules[code].title}"
    elif code in reasons:
        page, heading = "reasons.md", f"{code} {reasons[code].slug}"
    elif code in notes:
        page, heading = "reasons.md", code
    else:
        return None
    if docs_url is None:
        if not (LOCAL_DOCS / page).is_file():
            return None
        docs_url = LOCAL_DOCS.as_uri()
    return f"{docs_url.rstrip('/')}/{page}#{github_slug(heading)}"


def lsp_range(
    lines: Sequence[str], start: tuple[int, int], end: tuple[int, int], codec: PositionCodec
) -> types.Range:
    """A range of ms-migrate positions (line from 1, column in characters) in ``lines``."""
    return types.Range(
        start=codec.position_to_client_units(lines, types.Position(start[0] - 1, start[1])),
        end=codec.position_to_client_units(lines, types.Position(end[0] - 1, end[1])),
    )


def lsp_diagnostic(
    item: Diagnostic,
    lines: Sequence[str],
    codec: PositionCodec,
    docs_url: Optional[str],
    line_offset: int = 0,
) -> types.Diagnostic:
    """``item`` as LSP's; ``line_offset``: how far its lines are below those of ``lines`` (a
    notebook cell's, in the virtual module)."""
    start = (item.line - line_offset, item.col)
    end = (item.end[0] - line_offset, item.end[1])
    if end <= start and 0 < start[0] <= len(lines):
        # A site reported at a point (MS101 names its statement's start): the rest of its line,
        # so the editor has something to underline.
        end = (start[0], len(lines[start[0] - 1].rstrip("\r\n")))
    link = docs_link(item.code, docs_url)
    return types.Diagnostic(
        range=lsp_range(lines, start, end, codec),
        message=item.message,
        severity=_SEVERITIES[item.severity],
        code=item.code,
        code_description=types.CodeDescription(href=link) if link else None,
        source=SOURCE,
        data={"line": item.line, "fixable": item.fixable},
    )


def _end_of(lines: Sequence[str], codec: PositionCodec) -> types.Position:
    if not lines:
        return types.Position(0, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return types.Position(len(lines), 0)
    return types.Position(len(lines) - 1, codec.client_num_units(last))


def text_edits(before: str, after: str, codec: PositionCodec) -> list[types.TextEdit]:
    """The whole-line edits that turn ``before`` into ``after``."""
    lines = source_lines(before)
    edits = []
    for edit in edits_between(before, after):
        start = types.Position(edit.start[0] - 1, 0)
        end = types.Position(edit.end[0] - 1, 0) if edit.end[0] <= len(lines) else _end_of(lines, codec)
        edits.append(types.TextEdit(range=types.Range(start=start, end=end), new_text=edit.replacement))
    return edits


def workspace_edit(
    buffer: Buffer,
    uri: str,
    version: Optional[int],
    new_text: str,
    codec: PositionCodec,
    versions: dict[str, int],
) -> Optional[types.WorkspaceEdit]:
    """The edit that makes ``buffer`` (the document ``uri`` at ``version``) hold ``new_text``; for a
    notebook, edits to the cells it changes (``versions``: each cell's version). None where a
    notebook's cells cannot take the new text."""
    if buffer.notebook is None:
        changes = [(uri, version, text_edits(buffer.text, new_text, codec))]
    else:
        cells = cell_texts(buffer, new_text)
        if cells is None:
            return None
        changes = []
        for position, text in sorted(cells.items()):
            cell = buffer.cells[position]
            changes.append((cell.uri, versions.get(cell.uri), text_edits(cell.text, text, codec)))
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=target, version=number),
                edits=list(edits),
            )
            for target, number, edits in changes
        ]
    )
