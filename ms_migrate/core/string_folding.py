"""Long implicit string concatenations, folded into one placeholder literal while libcst works.

libcst's native parser refuses a run of more than 3,000 adjacent literals (``"a" "b" ...``), and
its visitors recurse once per literal, so a few hundred already exhaust Python's recursion limit.
No rewrite edits inside such a run (it is data: a table, an embedded file), so the engine hands
libcst the text with each long run replaced by one triple-quoted placeholder, and puts the runs
back into the rewritten code. A placeholder spans the same lines as its run and ends in the same
column where it can, so the lines of findings are those of the file.

Pure: text in, text out.
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

# Literals in one run above which it is folded. Train-step code never concatenates this many;
# libcst copes with a few hundred at module level, far fewer inside nested code.
FOLD_ABOVE = 50

# A closing quote, then (across blanks, comments and line continuations) an opening quote: every
# junction inside a run matches once, so a text with fewer matches than FOLD_ABOVE holds no run to
# fold and is not tokenized (most files).
_JUNCTION = re.compile(r"""['"](?:\s|\\\r?\n|#[^\r\n]*)*[A-Za-z]{0,2}['"]""")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")  # as io.StringIO reads them: only "\n" ends a line
_LITERAL = re.compile(r"""[A-Za-z]{0,2}['"].*['"]""", re.DOTALL)
_BETWEEN_LITERALS = frozenset({tokenize.NL, tokenize.COMMENT})
# Python 3.12 splits f-strings (3.14 t-strings too) into several tokens; one literal is the
# outermost START..END.
_LITERAL_START = frozenset({"FSTRING_START", "TSTRING_START"})
_LITERAL_END = frozenset({"FSTRING_END", "TSTRING_END"})

Position = tuple[int, int]  # tokenize's (row from 1, column)


@dataclass(frozen=True)
class FoldedText:
    """``text`` with long runs folded, and how to put them back into code derived from it."""

    text: str
    runs: dict[str, str] = field(default_factory=dict)  # placeholder literal -> the run's source

    def unfold(self, code: str) -> str:
        for placeholder, run in self.runs.items():
            code = code.replace(placeholder, run)
        return code


@dataclass
class _Run:
    start: Position
    end: Position
    literals: int = 1


def fold_long_strings(text: str) -> FoldedText:
    """Fold every run of more than ``FOLD_ABOVE`` adjacent string literals in ``text``.

    Text the tokenizer rejects, or where folding would not give the text back, is left as is
    (libcst then reports what it reports today).
    """
    if len(_JUNCTION.findall(text)) < FOLD_ABOVE:
        return FoldedText(text)
    lines = _LINE.findall(text)
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    try:
        runs = [run for run in _literal_runs(lines) if run.literals > FOLD_ABOVE]
    except (tokenize.TokenError, SyntaxError):
        return FoldedText(text)
    if not runs:
        return FoldedText(text)
    marker = _unused_marker(text)
    pieces: list[str] = []
    folded: dict[str, str] = {}
    done = 0
    for index, run in enumerate(runs):
        begin = line_starts[run.start[0] - 1] + run.start[1]
        end = line_starts[run.end[0] - 1] + run.end[1]
        if not _LITERAL.fullmatch(text, begin, end):  # tokenize counted lines otherwise
            return FoldedText(text)
        placeholder = _placeholder(f"{marker}{index};", text[begin:end])
        pieces += [text[done:begin], placeholder]
        folded[placeholder] = text[begin:end]
        done = end
    result = FoldedText("".join([*pieces, text[done:]]), folded)
    # A placeholder that occurs in the text already would be unfolded wrongly.
    return result if result.unfold(result.text) == text else FoldedText(text)


def _literal_runs(lines: list[str]) -> list[_Run]:
    runs: list[_Run] = []
    current: Optional[_Run] = None
    depth = 0  # inside a 3.12+ f-string, whose replacement fields hold tokens of their own
    literal_start: Position = (0, 0)
    for token in tokenize.generate_tokens(iter(lines).__next__):
        name = tokenize.tok_name[token.type]
        if name in _LITERAL_START:
            if depth == 0:
                literal_start = token.start
            depth += 1
            continue
        if name in _LITERAL_END:
            depth -= 1
            if depth == 0:
                current = _extend(runs, current, literal_start, token.end)
            continue
        if depth:
            continue
        if token.type == tokenize.STRING:
            current = _extend(runs, current, token.start, token.end)
        elif token.type not in _BETWEEN_LITERALS:
            current = None
    return runs


def _extend(runs: list[_Run], current: Optional[_Run], start: Position, end: Position) -> _Run:
    if current is None:
        current = _Run(start, end)
        runs.append(current)
    else:
        current.end = end
        current.literals += 1
    return current


def _unused_marker(text: str) -> str:
    marker = "ms-migrate folded string "
    while marker in text:
        marker += "~"
    return marker


def _placeholder(name: str, run: str) -> str:
    """A string literal holding ``name``, with the line breaks of ``run`` and, padded with spaces,
    ending in the column where ``run`` ends (unless ``run``'s last line is shorter than that)."""
    breaks = _NEWLINE.findall(run)
    if not breaks:
        return f'"""{name}{" " * (len(run) - len(name) - 6)}"""'
    last_line = len(run) - max(match.end() for match in _NEWLINE.finditer(run))
    return f'"""{name}{"".join(breaks)}{" " * (last_line - 3)}"""'
