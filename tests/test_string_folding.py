"""Folding long runs of adjacent string literals for libcst: the text comes back byte for byte,
and every line keeps its number."""

from __future__ import annotations

import ast

import pytest

from ms_migrate.core.string_folding import FOLD_ABOVE, fold_long_strings

LONG = FOLD_ABOVE + 1


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize(
    "text",
    [
        "x = (\n" + '    "a"  # why\n' * LONG + ")\nafter = 1\n",
        "x = " + '"ab" ' * LONG + "; after = 1\n",
        "x = " + ' \\\n    b"a"' * LONG + "\nafter = 1\n",
        "x = (\n" + '    f"{y!r:>{width}}"\n' * LONG + ")\nafter = 1\n",
        "x = (\r\n" + "    '''a\r\nb'''\r\n" * LONG + ")\r\nafter = 1\r\n",
        'def f():\n    """doc"""\n    return g(\n' + '        "a"\n' * LONG + "    )\nafter = 1\n",
    ],
    ids=["parenthesized-with-comments", "one-line", "backslashes-bytes", "f-strings", "crlf-triple", "call"],
)
def test_a_long_run_becomes_one_literal_on_the_same_lines(text: str) -> None:
    folded = fold_long_strings(text)
    assert len(folded.runs) == 1
    assert folded.unfold(folded.text) == text
    tree = ast.parse(folded.text)
    assert sum(isinstance(node, ast.Constant) and isinstance(node.value, str) for node in ast.walk(tree)) <= 2
    assert [line.find("after = 1") for line in _lines(folded.text)] == [
        line.find("after = 1") for line in _lines(text)
    ]


def test_short_runs_and_unreadable_text_are_left_alone() -> None:
    short = "x = (\n" + '    "a"\n' * FOLD_ABOVE + ")\n"
    assert fold_long_strings(short).text == short
    unterminated = "x = (\n" + '    "a"\n' * LONG + '"""\n'
    assert fold_long_strings(unterminated).text == unterminated


def test_code_around_a_placeholder_may_change_and_the_run_still_comes_back() -> None:
    run = "(\n" + '    "a"\n' * LONG + ")"
    folded = fold_long_strings(f"x = {run}\n")
    (placeholder,) = folded.runs
    rewritten = folded.text.replace("x = ", "def f():\n    return ")
    assert folded.unfold(rewritten) == f"def f():\n    return {run}\n"
    assert placeholder not in folded.unfold(rewritten)
