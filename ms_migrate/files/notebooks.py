"""Jupyter notebooks as one virtual Python module, and back.

Tutorials and course material are often notebooks, with imports in one cell and the train step in
another, so the cells are analysed together: each code cell becomes a marked section of one
module. IPython magics (`%time`, `!pip ...`) are not Python; they are turned into marked comments
(or, inside a block, a marked `pass` that keeps the block's body) and restored afterwards. Cell
magics (`%%bash`) make the whole cell opaque. Cells are numbered from 1 wherever a user sees them,
as ruff and Jupyter do. Pure: JSON text in, JSON text out; ``sources`` does the reading and writing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

CELL_MARKER = "# %% ms-migrate cell {index}"  # the cell's 0-based position in the JSON
_CELL_LINE = re.compile(r"^# %% ms-migrate cell (\d+)$")
_MAGIC_PREFIX = "# ms-migrate magic: "
# An indented magic is a block's body (`if not exists:` / `    !wget ...`): a comment would leave
# the block empty, so it becomes a statement that does nothing.
_BODY_MAGIC_PREFIX = "pass  " + _MAGIC_PREFIX
# Line magics and shell escapes (`%time x`, `!pip install`), and help lookups (`obj?`, `?obj`).
_MAGIC = re.compile(r"^(\s*)([%!].*|\?.*|[\w.]+\?\??)$")
_FUTURE = re.compile(r"^from\s+__future__\s+import\s+[\w\s,]+(#.*)?$")  # one line, no brackets


class NotebookError(ValueError):
    """A notebook that cannot be read, or written back without losing anything."""


@dataclass(frozen=True)
class Cell:
    index: int  # position among all cells
    source: str
    opaque: bool  # a cell magic: never analysed, never changed


@dataclass(frozen=True)
class Notebook:
    document: dict[str, Any]
    cells: tuple[Cell, ...]
    indent: Optional[int]
    trailing_newline: bool
    faithful: bool  # json.dumps reproduces the file exactly, so a rewrite changes only its cells

    def virtual_text(self) -> str:
        parts = []
        seen_code = False
        for cell in self.cells:
            parts.append(CELL_MARKER.format(index=cell.index))
            if not cell.opaque and cell.source:
                # IPython compiles each cell alone, so a later cell may open with a __future__
                # import; in the joined text it would be a syntax error, so it is hidden there.
                parts.append("\n".join(_hide_magics(cell.source.split("\n"), hide_future=seen_code)))
                seen_code = seen_code or bool(cell.source.strip())
        return "\n".join(parts) + "\n"

    def cell_of_line(self, line: int, text: Optional[str] = None) -> tuple[int, int]:
        """(cell number, line within the cell) for a line of the virtual text, both from 1 as
        Jupyter and ruff count them (`nb.ipynb:cell 1:3`); markdown cells count too."""
        return cell_of_line(text or self.virtual_text(), line)

    def with_virtual_text(self, text: str) -> str:
        """The notebook's JSON with each code cell taken from ``text`` (a migrated virtual text)."""
        if not self.faithful:
            # Another tool's JSON layout: writing would reformat the whole file.
            raise NotebookError("unusual JSON layout (not as Jupyter writes it); left unchanged")
        sections = _split(text)
        expected = [cell.index for cell in self.cells]
        if [index for index, _ in sections] != expected:
            raise NotebookError("the rewrite moved code across cells; left unchanged")
        document = json.loads(json.dumps(self.document))
        raw_cells = document["cells"]
        for cell, (_, body) in zip(self.cells, sections):
            if cell.opaque:
                continue
            new_source = "\n".join(_show_magic(line) for line in body)
            if new_source != cell.source:
                raw_cells[cell.index]["source"] = new_source.splitlines(keepends=True)
        return _dump(document, self.indent, self.trailing_newline)


def cell_of_line(virtual_text: str, line: int) -> tuple[int, int]:
    """``Notebook.cell_of_line`` from the virtual text alone (its cell markers)."""
    cell, offset = 0, 0
    for number, content in enumerate(virtual_text.split("\n"), start=1):
        match = _CELL_LINE.match(content)
        if match:
            cell, offset = int(match.group(1)) + 1, number
        if number == line:
            return cell, line - offset
    return cell, 0


def _hide_magics(lines: list[str], hide_future: bool = False) -> list[str]:
    """Lines with magics (and, with ``hide_future``, one-line `from __future__` imports) turned
    into marked comments. Only a line that starts a statement can be a magic: `!= b` or `% n`
    continuing a bracketed or backslash-continued line is Python.

    A magic indented deeper than a statement above it is inside a block, maybe its only line,
    and becomes a marked `pass` at the same indentation. One with no statement above it at a
    lesser indentation stays a comment: IPython drops a cell's leading indent, and `pass` there
    would not parse."""
    hidden = []
    scanner = _Continuation()
    shallowest: Optional[int] = None  # the least indentation of a statement seen so far
    for line in lines:
        match = _MAGIC.match(line) if scanner.at_statement_start else None
        if match:
            indent, magic = match.group(1), match.group(2)
            in_block = shallowest is not None and len(indent) > shallowest
            hidden.append(f"{indent}{_BODY_MAGIC_PREFIX if in_block else _MAGIC_PREFIX}{magic}")
            continue
        if hide_future and scanner.at_statement_start and _FUTURE.match(line):
            hidden.append(f"{_MAGIC_PREFIX}{line}")
            continue
        code = line.lstrip()
        if scanner.at_statement_start and code and not code.startswith("#"):
            indent_width = len(line) - len(code)
            shallowest = indent_width if shallowest is None else min(shallowest, indent_width)
        hidden.append(line)
        scanner.feed(line)
    return hidden


class _Continuation:
    """Just enough of Python's tokenizer to know whether the next line continues a statement:
    open brackets, a trailing backslash, or an open triple-quoted string."""

    def __init__(self) -> None:
        self.depth = 0
        self.backslash = False
        self.triple: Optional[str] = None

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and not self.backslash and self.triple is None

    def feed(self, line: str) -> None:
        index, end = 0, len(line)
        while index < end:
            if self.triple is not None:
                close = line.find(self.triple, index)
                if close < 0:
                    break
                self.triple, index = None, close + 3
                continue
            char = line[index]
            if char == "#":
                break
            if char in "\"'":
                if line.startswith(char * 3, index):
                    self.triple, index = char * 3, index + 3
                    continue
                index += 1
                while index < end and line[index] != char:
                    index += 2 if line[index] == "\\" else 1
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        self.backslash = self.triple is None and line.rstrip().endswith("\\") and "#" not in line


def _show_magic(line: str) -> str:
    stripped = line.lstrip()
    for prefix in (_BODY_MAGIC_PREFIX, _MAGIC_PREFIX):
        if stripped.startswith(prefix):
            return line[: len(line) - len(stripped)] + stripped[len(prefix) :]
    return line


def changed_cells(before: str, after: str) -> Optional[list[tuple[int, str, str]]]:
    """The cells a rewrite of a virtual text changed, as (cell number from 1, source before,
    source after) with their magics shown as in the notebook; None where ``before`` and
    ``after`` do not hold the same cells (not virtual texts of one notebook)."""
    try:
        old, new = _split(before), _split(after)
    except NotebookError:
        return None
    if not old or [index for index, _ in old] != [index for index, _ in new]:
        return None
    changed = []
    for (index, old_lines), (_, new_lines) in zip(old, new):
        if old_lines != new_lines:
            shown = ["\n".join(_show_magic(line) for line in lines) for lines in (old_lines, new_lines)]
            changed.append((index + 1, shown[0], shown[1]))
    return changed


_IMPORT_LINE = re.compile(r"(?:import|from)\s")


def _split(text: str) -> list[tuple[int, list[str]]]:
    """The cells of a virtual text: (index, lines). Imports a rewrite added above the first cell
    (the top of the module, when the first code cell holds no import: a `!pip install` cell) go
    at the top of the first cell that imports, where the notebook's imports run; not into the
    first cell, which may be the one that installs MindSpore."""
    sections: list[tuple[int, list[str]]] = []
    leading: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        match = _CELL_LINE.match(line)
        if match:
            sections.append((int(match.group(1)), []))
        elif sections:
            sections[-1][1].append(line)
        elif line.strip():
            leading.append(line)
    if leading:
        imports = (body for _, body in sections if any(_IMPORT_LINE.match(line) for line in body))
        importing = next(imports, None)
        if importing is None or not all(_IMPORT_LINE.match(line) for line in leading):
            raise NotebookError("code before the first cell after the rewrite; left unchanged")
        importing[:0] = leading
    return sections


def _dump(document: dict[str, Any], indent: Optional[int], trailing_newline: bool) -> str:
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    return text + "\n" if trailing_newline else text


def _source_text(cell: dict[str, Any], index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"not a notebook: cell {index + 1} has a source that is not text")


def parse_notebook(text: str) -> Notebook:
    """Read a notebook's JSON; one that json.dumps cannot reproduce is read but never written."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not valid notebook JSON: {error.msg} (line {error.lineno})") from error
    except RecursionError as error:
        raise NotebookError("not a notebook: its JSON is too deeply nested to read") from error
    except ValueError as error:  # a 100,000-digit integer in the metadata: int's max_str_digits
        detail = str(error).split(";")[0]  # without Python's advice to raise the limit
        raise NotebookError(f"not a notebook this tool can read: {detail}") from error
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no list of cells")
    indent_match = re.search(r"\n( +)\"", text)
    indent = len(indent_match.group(1)) if indent_match else None
    trailing_newline = text.endswith("\n")
    try:
        faithful = _dump(document, indent, trailing_newline) == text
    except RecursionError:
        faithful = False
    cells = []
    for index, raw in enumerate(document["cells"]):
        # nbformat 4 requires every cell to be an object with a cell_type and a source: one
        # without is a broken notebook, said so, not a notebook without code.
        if not isinstance(raw, dict):
            raise NotebookError(f"not a notebook: cell {index + 1} is not an object")
        if not isinstance(raw.get("cell_type"), str):
            raise NotebookError(f"not a notebook: cell {index + 1} has no cell_type")
        if raw["cell_type"] != "code":
            continue
        if "source" not in raw:
            raise NotebookError(f"not a notebook: code cell {index + 1} has no source")
        source = _source_text(raw, index)
        opaque = source.lstrip().startswith("%%")
        cells.append(Cell(index, source, opaque))
    return Notebook(document, tuple(cells), indent, trailing_newline, faithful)
