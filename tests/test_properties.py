"""Layout must not change decisions: the same code with other blank lines, comments and newline
style converts the same sites, compiles, and is a fixed point."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ms_migrate.core.codes import all_notes
from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.text_edits import DEFAULT_LINE_LENGTH, line_limit, width
from tests.fixture_cases import fixture_cases

CASES = [case for case in fixture_cases() if not case.expects_error]
INDENT = re.compile(r"^([ \t]*)\S")


def relayout(text: str, choices: list[int], crlf: bool) -> str:
    """Insert blank lines and own-line comments between statements, keeping the code's meaning."""
    lines = text.splitlines()
    out: list[str] = []
    for index, line in enumerate(lines):
        choice = choices[index % len(choices)]
        match = INDENT.match(line)
        starts_statement = match is not None and not line.rstrip().endswith(("(", ",", "\\"))
        previous = out[-1].rstrip() if out else ""
        inside_brackets = previous.endswith(("(", ",", "[", "\\"))
        if starts_statement and not inside_brackets and index > 0:
            if choice == 1:
                out.append("")
            elif choice == 2:
                out.append(f"{match.group(1)}# 注释 {index}")
        out.append(line)
    newline = "\r\n" if crlf else "\n"
    return newline.join(out) + newline


def summary(text: str, target: Version) -> tuple[list[str], str]:
    result = migrate_text(text, target)
    codes = sorted(item.code for item in result.diagnostics if item.code not in all_notes())
    return codes, result.text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case_index=st.integers(min_value=0, max_value=len(CASES) - 1),
    choices=st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=12),
    crlf=st.booleans(),
)
def test_layout_does_not_change_what_is_converted(case_index: int, choices: list[int], crlf: bool) -> None:
    case = CASES[case_index]
    target = Version.parse(case.target)
    original = case.source.read_text(encoding="utf-8-sig")
    variant = relayout(original, choices, crlf)
    compile(variant, "variant", "exec")  # the generator itself must keep the code valid
    expected_codes, _ = summary(original, target)
    codes, output = summary(variant, target)
    assert codes == expected_codes
    compile(output, "output", "exec")
    assert migrate_text(output, target).text == output
    assert ("\r\n" in output) == crlf


def test_a_finding_in_code_a_fix_moves_is_kept_whatever_the_blank_lines() -> None:
    """Found by the property above: with a blank line after it, MS101 deletes the loss-scale line
    and inserts it in the forward it builds, where without one it replaces the lines around it;
    MS210's `P.Fill` there was dropped as deleted code in the first layout only."""
    (case,) = [case for case in CASES if case.source.name == "loss_scale_1024_target_2_7.py"]
    original = case.source.read_text(encoding="utf-8-sig")
    target = Version.parse(case.target)
    assert summary(original, target)[0] == ["MS101", "MS210"]
    assert summary(relayout(original, [0, 0, 1], False), target)[0] == ["MS101", "MS210"]


LINE_CHARACTERS = ["a", " ", "\n", "\r", "漢", "é", "\t", "ｶ", "\u3000"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(LINE_CHARACTERS), max_size=300))
def test_the_line_limit_counts_each_line_as_ruff_displays_it(text: str) -> None:
    """The ASCII shortcut of ``line_limit`` gives what counting every character's width gives."""
    assert line_limit(text) == max([DEFAULT_LINE_LENGTH, *(width(line) for line in text.splitlines())])
    assert line_limit("x" * 100 + "\n" + "漢" * 60) == 120
