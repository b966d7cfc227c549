"""What a rule says about a place in a file: a diagnostic, with an optional fix.

One type for every rule kind (upgrade, downgrade, lint) and every output format (text, json,
sarif, github): the output layer (``ms_migrate.output``) renders nothing else.
"""

from __future__ import annotations

import bisect
import difflib
import enum
import re
from dataclasses import dataclass
from typing import Optional


class Severity(str, enum.Enum):
    ERROR = "error"  # fails at run time on the target (a missing API, a bad keyword)
    WARNING = "warning"  # runs, but does something else than the code says
    INFO = "info"  # modernisable: works, has a better equivalent


@dataclass(frozen=True)
class Edit:
    """Replace the text between two (line, column) positions; lines from 1, columns from 0."""

    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str


@dataclass(frozen=True)
class Fix:
    """One site's rewrite. Its imports are the engine's to change, once per file, after every
    fix's edits (``ms_migrate.rewrite.import_changes``): no fix edits an import line for them."""

    edits: tuple[Edit, ...]
    safety: str = "exact"  # "exact": same numbers on the target; "unsafe": review it
    description: str = ""
    imports: tuple[str, ...] = ()  # local names of the `import mindspore [as NAME]` the edits use
    unused: tuple[str, ...] = ()  # imported names the edits may leave unused: dropped if so


@dataclass(frozen=True)
class Diagnostic:
    code: str
    line: int
    col: int  # from 0, as in ast
    end: tuple[int, int]
    message: str
    severity: Severity
    fix: Optional[Fix] = None
    # What to use instead, when a rule knows it but cannot apply it (a deprecated API's
    # replacement): shown in the message, and carried on its own in json and SARIF.
    replacement: Optional[str] = None


# What str.splitlines breaks at besides `\r\n`, `\r` and `\n`.
_NOT_PYTHON_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """``text``'s lines as Python numbers them (``ast`` positions, tokenize, tracebacks), each
    with its line break: only `\\r\\n`, `\\r` and `\\n` end one. ``str.splitlines`` also breaks at
    form feeds, `\\x1c`-`\\x1e`, `\\x85` and U+2028/U+2029, which Python source keeps inside a
    line (a form feed on its own line is common in older code): an edit placed by those lines
    lands on the wrong one."""
    if not any(separator in text for separator in _NOT_PYTHON_LINE_BREAKS):
        return text.splitlines(keepends=True)  # the same lines there, five times faster
    return _SOURCE_LINE.findall(text)


def line_starts(text: str) -> list[int]:
    """Where each of ``source_lines(text)`` starts in ``text``, and, last, where the text ends:
    line ``n`` (from 1) is ``text[starts[n - 1] : starts[n]]``."""
    starts = [0]
    for line in source_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def line_of(starts: list[int], offset: int) -> int:
    """The line (from 1) that holds ``offset``, from ``line_starts``."""
    return bisect.bisect_right(starts, offset, hi=max(len(starts) - 1, 1))


def apply_edits(text: str, edits: tuple[Edit, ...]) -> str:
    """``text`` with non-overlapping ``edits`` applied (later ones first, so positions hold)."""
    starts = line_starts(text)

    def offset(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    result = text
    for edit in sorted(edits, key=lambda item: item.start, reverse=True):
        result = result[: offset(edit.start)] + edit.replacement + result[offset(edit.end) :]
    return result


def edits_between(before: str, after: str) -> tuple[Edit, ...]:
    """Whole-line edits that turn ``before`` into ``after`` (for a rule that rewrites a tree and
    prints it: its fix is reported, and applied, like any other)."""
    old, new = source_lines(before), source_lines(after)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return tuple(
        Edit((i1 + 1, 0), (i2 + 1, 0), "".join(new[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )
