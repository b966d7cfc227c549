"""Printing a rewritten libcst module by its changed top-level statements only.

libcst prints a module by walking every node of it: for a file where a rewrite replaced a few
lines of one class, that walk was as long as the parse (about 5 s of the 58 s `upgrade --dry-run`
took over mindspore-ai/models under a profiler). A statement the rewrite left alone is the same
object in the new module as in the old one, and its code is the text it was parsed from: that
text is cut from the file by the statements' lines, and only what the rewrite made is printed.

libcst round-trips: ``module.code`` is the text it was parsed from, and is the concatenation of
the code of the module's header lines, of each statement (its own leading blank and comment
lines first) and of the footer lines. A statement's text therefore starts at its first line
(``ast`` knows it: the first decorator's, for a def) less its leading lines (libcst knows how many).
Where anything about that does not hold (a text libcst does not end with a newline, a line
structure `ast` and libcst do not share), the cut is refused and the whole module is printed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Optional

import libcst as cst

from ms_migrate.diagnostics import source_lines

# A line libcst keeps as an EmptyLine: blank, or only a comment.
_EMPTY_LINE = re.compile(r"[ \t\f]*(?:#[^\r\n]*)?(?:\r\n|\r|\n)?")


def statement_texts(module: cst.Module, text: str, tree: ast.Module) -> Optional[dict[int, str]]:
    """The text of each statement of ``module`` (parsed from ``text``, whose ``ast`` is ``tree``)
    by its id, as libcst prints it; None where the cut cannot be trusted."""
    if not text.endswith(("\n", "\r")) or not module.has_trailing_newline:
        return None
    lines = source_lines(text)
    firsts = _first_lines(tree.body)
    if len(firsts) != len(module.body):
        return None
    starts = [first - len(statement.leading_lines) for first, statement in zip(firsts, module.body)]
    end = len(lines) - len(module.footer) + 1  # where the footer starts (1-based)
    bounds = [*starts, end]
    if not module.body or starts[0] != len(module.header) + 1:
        return None
    if any(later <= earlier for earlier, later in zip(bounds, bounds[1:])):
        return None
    texts: dict[int, str] = {}
    for index, statement in enumerate(module.body):
        own = firsts[index] - 1  # the statement's own first line, 0-based
        leading = lines[starts[index] - 1 : own]
        if not all(_EMPTY_LINE.fullmatch(line) for line in leading) or _EMPTY_LINE.fullmatch(lines[own]):
            return None
        texts[id(statement)] = "".join(lines[starts[index] - 1 : bounds[index + 1] - 1])
    footer = lines[end - 1 :]
    if not all(_EMPTY_LINE.fullmatch(line) for line in footer):
        return None
    return texts


def _first_lines(statements: Sequence[ast.stmt]) -> list[int]:
    """The first line of each libcst statement of a block of ``statements``: `a = 1; b = 2` on one
    line is one of them, and a def starts at its first decorator."""
    firsts: list[int] = []
    last_end = 0
    for statement in statements:
        first = min([statement.lineno, *(item.lineno for item in getattr(statement, "decorator_list", ()))])
        if first > last_end:
            firsts.append(first)
        last_end = statement.end_lineno or statement.lineno
    return firsts


def printed(
    before: cst.Module, after: cst.Module, texts: Optional[dict[int, str]]
) -> tuple[str, dict[int, str]]:
    """``after.code``, with the statements it shares with ``before`` taken from ``texts`` (their
    text by id, ``statement_texts``) rather than printed; and the text of each statement of
    ``after`` by its id, for a later rewrite of it. A statement of ``before`` that ``after``
    replaced is printed once to check that its text was cut where libcst puts it."""
    if texts is None or not after.has_trailing_newline:
        return after.code, {}
    kept = {id(statement) for statement in after.body}
    for statement in before.body:
        if id(statement) not in kept and before.code_for_node(statement) != texts.get(id(statement)):
            return after.code, {}
    codes: dict[int, str] = {}
    for statement in after.body:
        known = texts.get(id(statement))
        codes[id(statement)] = known if known is not None else after.code_for_node(statement)
    header = "".join(after.code_for_node(line) for line in after.header)
    footer = "".join(after.code_for_node(line) for line in after.footer)
    return header + "".join(codes[id(statement)] for statement in after.body) + footer, codes
