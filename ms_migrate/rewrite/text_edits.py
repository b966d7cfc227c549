"""Text edits that rules without a libcst tree share: columns, generated blocks, line widths.

ast reports UTF-8 byte columns; an ``Edit`` takes character columns. Pure: text and trees in,
edits out.
"""

from __future__ import annotations

import ast
import unicodedata
from collections.abc import Sequence

from ms_migrate.diagnostics import Edit


def column(lines: list[str], line: int, byte_offset: int) -> int:
    """ast's UTF-8 byte offset as a character column."""
    return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace"))


def keywords_appended(call: ast.Call, lines: list[str], keywords: str) -> Edit:
    """The edit that passes ``keywords`` (`name=value, ...`) last in ``call``: after its last
    argument, or between its empty parentheses."""
    last = max((*call.args, *(keyword.value for keyword in call.keywords)), key=_end, default=None)
    if last is None:
        line = call.end_lineno or call.lineno
        at = column(lines, line, call.end_col_offset or 0) - 1  # before `)`
        return Edit((line, at), (line, at), keywords)
    line = last.end_lineno or last.lineno
    at = column(lines, line, last.end_col_offset or 0)
    return Edit((line, at), (line, at), f", {keywords}")


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


def source_of(lines: list[str], node: object) -> str:
    """The source text of an ``ast`` node, from the file's lines (ast.get_source_segment splits
    the whole text again at each call)."""
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    text = "".join(lines[first - 1 : last]).encode("utf-8")
    start = node.col_offset  # type: ignore[attr-defined]
    end = len(text) - len(lines[last - 1].encode("utf-8")) + (node.end_col_offset or 0)  # type: ignore[attr-defined]
    return text[start:end].decode("utf-8")


def newline_of(lines: list[str]) -> str:
    """The file's line ending, as its first line ends: `\\r\\n`, a bare `\\r` (classic Mac OS;
    Python reads it as a line break) or `\\n`. Generated lines end the same, so a file never comes
    out with mixed endings."""
    first = lines[0] if lines else ""
    if first.endswith("\r\n"):
        return "\r\n"
    return "\r" if first.endswith("\r") else "\n"


def generated_blocks(blocks: Sequence[str], indent: str, blank: int, newline: str) -> str:
    """Generated code ``blocks`` (written with `\\n`) indented by ``indent``, ``blank`` empty lines
    between and after them, every line ended by the file's ``newline``. Joined with `\\n` before
    the conversion: joined with ``newline``, a CRLF file got `\\r\\r\\n`, a stray CR."""
    body = ("\n" * blank).join(
        "".join(indent + line if line.strip() else line for line in block.splitlines(keepends=True))
        for block in blocks
    )
    return body.replace("\n", newline) + newline * blank


# ruff's and black's default line length; a file with longer lines shows its own limit.
DEFAULT_LINE_LENGTH = 88


def width(text: str) -> int:
    """Display width, as ruff counts it for E501: East Asian wide characters count twice."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def line_limit(text: str) -> int:
    # An ASCII line's width is its length: looking each character up cost a rewrite of a large
    # file milliseconds.
    return max(
        [DEFAULT_LINE_LENGTH, *(len(line) if line.isascii() else width(line) for line in text.splitlines())]
    )
