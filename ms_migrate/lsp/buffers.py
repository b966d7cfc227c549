"""The text the server analyses: an open `.py` buffer, or an open notebook's cells as one module.

A notebook document (LSP 3.17 notebook sync) becomes the same virtual module `check` makes of the
`.ipynb` file (``ms_migrate.files.notebooks``): its cells are put into a notebook document as Jupyter
writes it, and read back through ``parse_notebook``, so magics, opaque cells and `__future__`
imports are handled as on disk. Pure: texts in, texts and positions out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Optional

from ms_migrate.files import sources
from ms_migrate.files.notebooks import Notebook, changed_cells, parse_notebook


@dataclass(frozen=True)
class CellText:
    """One cell of an open notebook: its document URI, whether it is code, and its text."""

    uri: str
    code: bool
    text: str


@dataclass(frozen=True)
class Buffer:
    """What is analysed: ``text`` is the file's, or for a notebook the virtual module of its
    ``cells`` (in the order the notebook shows them)."""

    path: Path
    text: str
    notebook: Optional[Notebook] = None
    cells: tuple[CellText, ...] = ()

    @property
    def source(self) -> sources.SourceFile:
        """The buffer as the runner takes a file read from disk (UTF-8: the editor's text is
        already decoded, whatever the file's coding cookie says)."""
        raw = self.text.encode("utf-8", "surrogatepass")
        return sources.SourceFile(self.path, self.text, "utf-8", False, 0o644, raw, self.notebook)

    @cached_property
    def _cell_starts(self) -> list[tuple[int, int]]:
        """(virtual line of a cell's marker, the cell's position in ``cells``), in order."""
        assert self.notebook is not None
        starts = []
        for number, line in enumerate(self.text.split("\n"), start=1):
            if line.startswith("# %% ms-migrate cell "):
                cell, _ = self.notebook.cell_of_line(number, self.text)
                starts.append((number, cell - 1))
        return starts

    def cell_at(self, line: int) -> tuple[int, int]:
        """For a notebook: (position in ``cells``, line within the cell from 1) of a virtual line."""
        found = (0, 0)
        for start, position in self._cell_starts:
            if start > line:
                break
            found = (position, line - start)
        return found


def python_buffer(path: Path, text: str) -> Buffer:
    return Buffer(path, text)


def notebook_buffer(path: Path, cells: Sequence[CellText]) -> Buffer:
    """The virtual module of a notebook's open cells, as ``sources`` makes it of the file."""
    document = {
        "cells": [
            {
                "cell_type": "code" if cell.code else "markdown",
                "metadata": {},
                "source": cell.text.splitlines(keepends=True),
                **({"execution_count": None, "outputs": []} if cell.code else {}),
            }
            for cell in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    notebook = parse_notebook(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return Buffer(path, notebook.virtual_text(), notebook, tuple(cells))


def cell_texts(buffer: Buffer, new_text: str) -> Optional[dict[int, str]]:
    """For a notebook: the new text of each cell a rewrite of the virtual module changes, by
    position in ``cells``; None where the rewrite cannot be put back into the cells (code moved
    across them), which `upgrade` would not write either."""
    changed = changed_cells(buffer.text, new_text)
    if changed is None:
        return None
    result: dict[int, str] = {}
    for number, before, after in changed:
        position = number - 1
        if position >= len(buffer.cells) or buffer.cells[position].text != before:
            return None
        result[position] = after
    return result
