"""Every golden fixture: output equals the expected file, compiles, and is a fixed point."""

from __future__ import annotations

import pytest

from ms_migrate.core import parsing
from ms_migrate.core.codes import all_reasons
from ms_migrate.core.engine import ParseFailure
from ms_migrate.files import sources
from tests.fixture_cases import FixtureCase, fixture_cases

CASES = fixture_cases()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_fixture(case: FixtureCase) -> None:
    source = sources.read_source(case.source)
    if case.expects_error:
        with pytest.raises(ParseFailure):
            case.migrate(source.text)
        return
    parses = parsing.libcst_parses
    result = case.migrate(source.text)
    # libcst parses a file only to carry out a change (MS101's), and then once: analysis,
    # refusals and the fixed-point check of the output run on `ast`.
    assert parsing.libcst_parses - parses <= (1 if result.text != source.text else 0)
    produced = source.encode(result.text)
    expected = case.expected.read_bytes() if case.expected else source.raw
    assert produced == expected
    compile(result.text, str(case.source), "exec")
    assert case.migrate(result.text).text == result.text, "second run changed the output"
    left_alone = {item.code for item in result.diagnostics if item.code in all_reasons()}
    assert left_alone == case.left_alone
    if case.expected is not None:
        assert result.fixed


def test_fixture_tree_has_both_kinds() -> None:
    assert any(case.expected for case in CASES)
    assert any(case.expected is None for case in CASES)


# Python ends a line only at `\r\n`, `\r` or `\n`; str.splitlines also at a form feed, `\x1c` and
# U+2028, which once placed a rename's edit on the wrong line. Comments at the top change no
# rule's decision, only every position after them.
_LINE_BREAKS_PYTHON_KEEPS = "\x0c\n# a page break, then U+2028 \u2028 and \x1c inside one line\n"
CHANGING = [case for case in CASES if case.expected is not None]


@pytest.mark.parametrize("case", CHANGING, ids=[case.id for case in CHANGING])
def test_fixture_positions_are_python_lines(case: FixtureCase) -> None:
    source = sources.read_source(case.source)
    expected = sources.read_source(case.expected).text  # type: ignore[arg-type]
    prefix = _LINE_BREAKS_PYTHON_KEEPS.replace("\n", "\r\n" if "\r\n" in source.text else "\n")
    result = case.migrate(prefix + source.text)
    assert result.text == prefix + expected


@pytest.mark.parametrize("case", CHANGING, ids=[case.id for case in CHANGING])
def test_fixture_keeps_windows_line_endings(case: FixtureCase) -> None:
    """A file whose lines end in CRLF comes out with CRLF only: generated code too (a block once
    came out with `\\r\\r\\n`, a stray CR that Python reads as one more line)."""
    source = sources.read_source(case.source).text
    expected = sources.read_source(case.expected).text  # type: ignore[arg-type]
    if "\r\n" in source:
        pytest.skip("already CRLF")
    result = case.migrate(source.replace("\n", "\r\n"))
    assert result.text == expected.replace("\n", "\r\n")


@pytest.mark.parametrize("case", CHANGING, ids=[case.id for case in CHANGING])
def test_fixture_keeps_classic_mac_line_endings(case: FixtureCase) -> None:
    """A file whose lines end in a bare CR comes out with bare CRs only: downgrade's generated
    Cells once came out with LF endings in such a file, mixed with its CRs."""
    source = sources.read_source(case.source).text
    expected = sources.read_source(case.expected).text  # type: ignore[arg-type]
    if "\r" in source:
        pytest.skip("has CR already")
    result = case.migrate(source.replace("\n", "\r"))
    assert "\n" not in result.text
    assert result.text == expected.replace("\n", "\r")
