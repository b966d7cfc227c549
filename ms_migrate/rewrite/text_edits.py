"""Text edits that rules without a libcst tree share: columns, adding and dropping imports.

ast reports UTF-8 byte columns; an ``Edit`` takes character columns. Pure: text and trees in,
edits out.
"""

from __future__ import annotations

import ast
import unicodedata
from collections.abc import Sequence
from typing import Optional

from ms_migrate.analysis.walk import walk
from ms_migrate.diagnostics import Edit


def column(lines: list[str], line: int, byte_offset: int) -> int:
    """ast's UTF-8 byte offset as a character column."""
    return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", "replace"))

def newline_of(lines: list[str]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def generated_blocks(blocks: Sequence[str], indent: str, blank: int, newline: str) -> str:
    """Generated code ``blocks`` (written with `\\n`) indented by ``indent``, ``blank`` empty lines
    between and after them, every line ended by the file's ``newline``. Joined with `\\n` before
    the conversion: joined with ``newline``, a CRLF file got `\\r\\r\\n`, a stray CR."""
    body = ("\n" * blank).join(
        "".join(indent + line if line.strip() else line for line in block.splitlines(keepends=True))
        for block in blocks
    )
    return body.replace("\n", newline) + newline * blank

def import_edit(tree: ast.Module, lines: list[str], local: str, newline: str) -> Edit:
    """`import mindspore [as local]` where isort puts it: before the file's first MindSpore import
    (`import x` sorts before `from x import`), else after its last top-level import."""
    statement = "import mindspore" if local == "mindspore" else f"import mindspore as {local}"
    after = 0
    for index, node in enumerate(tree.body):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        if node.col_offset == 0 and any(module.split(".")[0] == "mindspore" for module in modules):
            return Edit((node.lineno, 0), (node.lineno, 0), statement + newline)
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or isinstance(node, (ast.Import, ast.ImportFrom)):
            after = node.end_lineno or node.lineno
        else:
            break
    return Edit((after + 1, 0), (after + 1, 0), statement + newline)

def dead_imports(tree: ast.Module, lines: list[str], converted: set[int], name: str) -> list[Edit]:
    """Edits dropping ``name`` from `from mindspore[.ops] import ...` when every use of it is a
    converted call (``converted``: the ids of their ``func`` nodes): such an import of an API the
    target lacks fails by itself."""
    edits: list[Edit] = []
    names = [node for node in walk(tree) if isinstance(node, ast.Name)]
    for node in tree.body:
        if not (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module in ("mindspore", "mindspore.ops")
        ):
            continue
        for index, alias in enumerate(node.names):
            local = alias.asname or alias.name
            uses = [name for name in names if name.id == local]
            if alias.name != name or not uses or any(id(use) not in converted for use in uses):
                continue
            edit = alias_removal(lines, node, index)
            if edit is not None:
                edits.append(edit)
    return edits

def alias_removal(lines: list[str], node: ast.ImportFrom, index: int) -> Optional[Edit]:
    """The edit that removes one name from an import: the whole line when it is the only one."""
    end_line = node.end_lineno or node.lineno
    if len(node.names) == 1:
        last = lines[end_line - 1]
        alone = node.col_offset == 0 and column(lines, end_line, node.end_col_offset or 0) == len(
            last.rstrip("\r\n")
        )
        return Edit((node.lineno, 0), (end_line + 1, 0), "") if alone else None
    aliases = node.names

    def start(alias: ast.alias) -> tuple[int, int]:
        return (alias.lineno, column(lines, alias.lineno, alias.col_offset))

    def end(alias: ast.alias) -> tuple[int, int]:
        line = alias.end_lineno or alias.lineno
        return (line, column(lines, line, alias.end_col_offset or 0))

    if index + 1 < len(aliases):
        return Edit(start(aliases[index]), start(aliases[index + 1]), "")
    return Edit(end(aliases[index - 1]), end(aliases[index]), "")


# ruff's and black's default line length; a file with longer lines shows its own limit.
DEFAULT_LINE_LENGTH = 88


def width(text: str) -> int:
    """Display width, as ruff counts it for E501: East Asian wide characters count twice."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def line_limit(text: str) -> int:
    return max([DEFAULT_LINE_LENGTH, *(width(line) for line in text.splitlines())])
