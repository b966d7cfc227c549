"""What a rule says about a place in a file: a diagnostic, with an optional fix.

One type for every rule kind (upgrade, downgrade, lint) and every output format (text, json,
sarif, github): the output layer (``ms_migrate.reporting.output``) renders nothing else.
"""

from __future__ import annotations

import bisect
import difflib
import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
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

    def __hash__(self) -> int:
        # Computed once: MS101's one fix for N sites has N edits and rides on N diagnostics, so
        # hashing it afresh each time a diagnostic is hashed made a run quadratic in its sites.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.edits, self.safety, self.description, self.imports, self.unused))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, object]:
        # A str's hash differs between processes: the one kept here must not travel to another.
        return {key: value for key, value in self.__dict__.items() if key != "_hash"}


@dataclass(frozen=True)
class Diagnostic:
    code: str
    line: int
    col: int  # from 0, in characters (the engine turns ast's UTF-8 byte offsets into characters)
    end: tuple[int, int]
    message: str
    severity: Severity
    fix: Optional[Fix] = None
    # What to use instead, when a rule knows it but cannot apply it (a deprecated API's
    # replacement): shown in the message, and carried on its own in json and SARIF.
    replacement: Optional[str] = None
    # A fix the rule did not build because only findings were asked for (`check` in text:
    # MS101's rewrite needs libcst): `upgrade` builds and applies it.
    fix_pending: bool = False

    @property
    def fixable(self) -> bool:
        """Whether ``upgrade`` fixes it. With fixes built, the runner keeps only those the engine
        applied (the file's rewrite compiled and reached a fixed point)."""
        return self.fix is not None or self.fix_pending


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


def in_characters(diagnostics: list[Diagnostic], text: str) -> list[Diagnostic]:
    """``diagnostics`` with ast's columns (UTF-8 bytes) as characters of their lines, as editors,
    ruff, SARIF viewers and GitHub count them and as edits are placed: on a line with Chinese text
    before the finding, a byte column points past it."""
    lines: Optional[list[str]] = None
    converted = []
    for item in diagnostics:
        if lines is None:
            lines = source_lines(text)
        start = _characters(lines, item.line, item.col)
        end = (item.end[0], _characters(lines, *item.end))
        if (start, end) != (item.col, item.end):
            item = replace(item, col=start, end=end)
        converted.append(item)
    return converted


def _characters(lines: list[str], line: int, byte_col: int) -> int:
    if not 0 < line <= len(lines) or lines[line - 1].isascii():
        return byte_col
    return len(lines[line - 1].encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))


def edits_between(before: str, after: str) -> tuple[Edit, ...]:
    """Whole-line edits that turn ``before`` into ``after`` (for a rule that rewrites a tree and
    prints it: its fix is reported, and applied, like any other).

    The edits SequenceMatcher's opcodes give, at a cost linear in the file's size: a whole-file
    SequenceMatcher compares each line with every equal line of the other side, quadratic in a
    file of many like train steps (41 s of 57 at 200 steps)."""
    old, new = source_lines(before), source_lines(after)
    return tuple(Edit((i1 + 1, 0), (i2 + 1, 0), "".join(new[j1:j2])) for i1, i2, j1, j2 in _changed(old, new))


def line_opcodes(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher's opcodes for two lists of lines, "equal" stretches included, from the
    patience diff ``_changed``: linear in the lines where a whole-file SequenceMatcher is
    quadratic in a file of many like train steps (a unified diff of 1,600 steps took 10 s)."""
    codes: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for i1, i2, j1, j2 in _changed(list(old), list(new)):
        if i1 > i:
            codes.append(("equal", i, i1, j, j1))
        tag = "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"
        codes.append((tag, i1, i2, j1, j2))
        i, j = i2, j2
    if i < len(old) or j < len(new) or not codes:
        codes.append(("equal", i, len(old), j, len(new)))
    return codes


# Up to this many line pairs (old lines times new lines), a stretch is SequenceMatcher's as a
# whole: its opcodes exactly, for any ordinary file and for what lies between two anchors.
_MATCHER_PAIRS = 40_000
# A stretch without anchors is SequenceMatcher's up to this many pairs, and one replace above:
# its cost grows with the pairs, and a stretch that large shares no unique line with its rewrite.
_UNANCHORED_PAIRS = 250_000
# Anchoring again inside a stretch between anchors can find more (lines repeated in the file may
# be unique there); a few rounds bound the cost when each finds little.
_ANCHOR_ROUNDS = 4


def _changed(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """The stretches ``(i1, i2, j1, j2)`` where ``old[i1:i2]`` becomes ``new[j1:j2]``, in order:
    a patience diff. Common first and last lines are set aside, the lines that occur once on
    each side and in the same order on both (the longest increasing run of their matches) are
    kept as anchors, and each stretch between anchors is diffed the same way, or by
    SequenceMatcher once it is small."""
    changed: list[tuple[int, int, int, int]] = []
    stack = [(0, len(old), 0, len(new), 0)]  # last first: popped in file order
    while stack:
        i1, i2, j1, j2, rounds = stack.pop()
        while i1 < i2 and j1 < j2 and old[i1] == new[j1]:
            i1, j1 = i1 + 1, j1 + 1
        while i1 < i2 and j1 < j2 and old[i2 - 1] == new[j2 - 1]:
            i2, j2 = i2 - 1, j2 - 1
        if i1 == i2 or j1 == j2:
            if i1 != i2 or j1 != j2:
                changed.append((i1, i2, j1, j2))
            continue
        pairs = (i2 - i1) * (j2 - j1)
        anchored = pairs > _MATCHER_PAIRS and rounds < _ANCHOR_ROUNDS
        anchors = _anchors(old, new, i1, i2, j1, j2) if anchored else []
        if anchors:
            gaps = []
            for i, j in [*anchors, (i2, j2)]:
                gaps.append((i1, i, j1, j, rounds + 1))
                i1, j1 = i + 1, j + 1
            stack.extend(reversed(gaps))
        elif pairs <= _UNANCHORED_PAIRS:
            matcher = difflib.SequenceMatcher(None, old[i1:i2], new[j1:j2], autojunk=False)
            changed += [
                (i1 + a1, i1 + a2, j1 + b1, j1 + b2)
                for tag, a1, a2, b1, b2 in matcher.get_opcodes()
                if tag != "equal"
            ]
        else:
            changed.append((i1, i2, j1, j2))
    return changed


def _anchors(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` with ``old[i] == new[j]`` a line that occurs once in ``old[i1:i2]`` and
    once in ``new[j1:j2]``: the longest run of them increasing on both sides, in order."""
    seen: dict[str, int] = {}
    for i in range(i1, i2):
        seen[old[i]] = -1 if old[i] in seen else i
    found: dict[str, int] = {}
    for j in range(j1, j2):
        line = new[j]
        if seen.get(line, -1) >= 0:
            found[line] = -1 if line in found else j
    matches = sorted((seen[line], j) for line, j in found.items() if j >= 0)
    # Patience sorting: tails[k] is the match ending the best increasing run of length k + 1 so
    # far, and each match remembers the one before it in its run.
    tails: list[int] = []
    tail_js: list[int] = []
    before: list[int] = []
    for index, (_, j) in enumerate(matches):
        length = bisect.bisect_left(tail_js, j)
        before.append(tails[length - 1] if length else -1)
        if length == len(tails):
            tails.append(index)
            tail_js.append(j)
        else:
            tails[length], tail_js[length] = index, j
    run: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        run.append(matches[index])
        index = before[index]
    return run[::-1]
