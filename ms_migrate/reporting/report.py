"""Rendering results for people: unified diffs, finding lines and the one-line summary."""

from __future__ import annotations

import difflib
import os
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from ms_migrate.core.codes import all_reasons
from ms_migrate.diagnostics import Diagnostic, line_opcodes, source_lines
from ms_migrate.reporting.output import quoted_path

if TYPE_CHECKING:
    from rich.console import Console


class Stream:
    """Lines for people on stdout or stderr, written as given (no markup, no wrapping).

    ``rich`` (colours, tables, the progress bar) is a console on the same stream, imported on
    first use: a run that only prints plain lines starts without it (about 30 ms).
    """

    def __init__(self, stderr: bool = False, quiet: bool = False) -> None:
        self.stderr, self.quiet = stderr, quiet

    def print(self, text: str = "") -> None:
        self.write(text + "\n")

    def write(self, text: str) -> None:
        """``text`` as it is: no line break added, none translated."""
        if self.quiet:
            return
        stream = sys.stderr if self.stderr else sys.stdout  # as it is now: tests and rich swap it
        stream.write(text)
        stream.flush()

    @cached_property
    def rich(self) -> Console:
        return make_console(self.stderr, quiet=self.quiet)


def make_console(stderr: bool = False, soft_wrap: bool = True, quiet: bool = False) -> Console:
    """A rich console for the tool's output. NO_COLOR (https://no-color.org) turns off every style,
    bold included: rich on its own drops only the colours and would keep the diff headers bold."""
    from rich.console import Console

    plain = os.environ.get("NO_COLOR", "") != ""
    return Console(
        stderr=stderr,
        quiet=quiet,
        highlight=False,
        soft_wrap=soft_wrap,
        color_system=None if plain else "auto",
    )


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of a file as users see it. A notebook's texts are its virtual module (see
    ``notebooks``), whose line numbers nobody can find in the notebook: its diff is one per
    changed cell, headed `a/nb.ipynb:cell 3` and numbered within the cell, as ruff's is."""
    if path.endswith(".ipynb"):
        from ms_migrate.files.notebooks import changed_cells

        cells = changed_cells(before, after)
        if cells is not None:
            # A cell's last line has no newline in the JSON, and saying so in every hunk is noise.
            return "".join(
                _diff(f"{path}:cell {number}", old + "\n", new + "\n") for number, old, new in cells
            )
    return _diff(path, before, after)


# Up to this many line pairs (lines before times lines after), a file's diff is difflib's own;
# above, its opcodes come from the patience diff (``line_opcodes``), which stays linear where
# difflib's matcher grows with the square of a file of many like train steps.
_DIFFLIB_PAIRS = 250_000


class _PatienceMatcher(difflib.SequenceMatcher):
    """difflib's matcher with the patience diff's opcodes, for its hunks (get_grouped_opcodes)."""

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        return line_opcodes(self.a, self.b)


def _diff(path: str, before: str, after: str) -> str:
    old, new = source_lines(before), source_lines(after)
    fromfile = quoted_path(path if path.startswith("/") else f"a/{path}")
    tofile = quoted_path(path if path.startswith("/") else f"b/{path}")
    if len(old) * len(new) <= _DIFFLIB_PAIRS:
        lines = list(difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile))
    else:
        lines = _unified(_PatienceMatcher(None, old, new, autojunk=False), fromfile, tofile)
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _unified(matcher: difflib.SequenceMatcher, fromfile: str, tofile: str) -> list[str]:
    """The lines of a unified diff (three lines of context, as `diff -u`) of ``matcher``'s two
    sequences of lines, in difflib.unified_diff's form."""
    old, new = matcher.a, matcher.b
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(3):
        if not out:
            out += [f"--- {fromfile}\n", f"+++ {tofile}\n"]
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in old[i1:i2]]
                continue
            out += ["-" + line for line in old[i1:i2]]
            out += ["+" + line for line in new[j1:j2]]
    return out


def _range(start: int, stop: int) -> str:
    """A hunk's range as `diff -u` writes it: `start,length`, 1-based; one line alone; an empty
    range at the line before it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


_DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def print_diff(stream: Stream, diff: str) -> None:
    """A diff in colour where the stream is a terminal that shows it (rich decides); elsewhere
    (a pipe to `patch`, a file) its exact text, each line with the file's own line break, so a
    CRLF file's diff applies."""
    from rich.text import Text

    if not stream.rich.is_terminal:
        stream.write(diff)
        return
    for line in diff.splitlines():
        style = next((style for prefix, style in _DIFF_STYLES if line.startswith(prefix)), "")
        stream.rich.print(Text(line, style=style), soft_wrap=True)


@dataclass
class Summary:
    files_seen: int = 0
    files_changed: int = 0
    converted: int = 0
    errors: int = 0
    left_alone: Counter[str] = field(default_factory=Counter)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why): never read
    pending: int = 0  # files whose rewrite --max-changes left for a later run
    held_back: int = 0  # sites converted but not written: --verify did not prove their file
    remaining: int = 0  # findings that stand after the run, notes aside (ruff's "remaining")
    in_baseline: int = 0  # findings the baseline holds: not shown, not counted

    def skip(self, path: object, why: str) -> None:
        """A path named on the command line that is not processed: an error of the run."""
        self.skipped.append((str(path), why))
        self.errors += 1

    def add(self, diagnostics: Iterable[Diagnostic], fixed: int, changed: bool) -> None:
        """One file's diagnostics; ``fixed`` of them have their fix in the new text."""
        self.files_seen += 1
        self.files_changed += changed
        self.converted += fixed
        reasons = self._reasons
        self.left_alone.update(item.code for item in diagnostics if item.code in reasons)

    @cached_property
    def _reasons(self) -> frozenset[str]:
        return frozenset(all_reasons())

    def render(self, dry_run: bool) -> str:
        verb = "would change" if dry_run else "changed"
        files = "file" if self.files_changed == 1 else "files"
        text = (
            f"{self.files_changed} {files} {verb} ({self.files_seen} checked), "
            f"{self.converted} site{'s' * (self.converted != 1)} converted, "
        )
        if self.held_back:
            text += f"{self.held_back} held back (--verify did not prove them), "
        text += f"{sum(self.left_alone.values())} left alone"
        if self.left_alone:
            reasons = ", ".join(f"{code} x{count}" for code, count in sorted(self.left_alone.items()))
            text += f" ({reasons})"
        if self.pending:
            text += f", {self.pending} more file{'s' * (self.pending != 1)} pending (--max-changes)"
        if self.errors:
            text += f", {self.errors} file{'s' * (self.errors != 1)} could not be processed"
        text += f"; {self.remaining} finding{'s' * (self.remaining != 1)} remaining"
        if self.in_baseline:
            text += f" ({self.in_baseline} more in the baseline)"
        return text
