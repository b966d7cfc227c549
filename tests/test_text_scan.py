"""The scans that start a pattern at its first word and check where it stands after find what
the same pattern anchored with `^[ \t]*` (MULTILINE) or `\b` finds, in str and in bytes."""

from __future__ import annotations

import re

import pytest

from ms_migrate.analysis.text_scan import at_line_starts, at_word_starts

TEXT = (
    "from a.b import c\n"
    "    from d import (e,\n        f)\n"
    "x = 'from g import (h'\n"  # a bracket left open in a string, then a real import
    "from i import j\n"
    "xfrom k import l; from m import n\n"
    "\tfrom o import p\n"
)


@pytest.mark.parametrize("convert", [str, str.encode], ids=["str", "bytes"])
def test_a_match_at_a_line_start_is_found_as_the_anchored_pattern_finds_it(convert) -> None:
    text = convert(TEXT)
    body = r"from[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n(]*)"
    pattern, anchored = (re.compile(convert(p), flags) for p, flags in ((body, 0), (r"^[ \t]*" + body, re.M)))
    found = [match.groups() for match in at_line_starts(pattern, text)]
    assert found == anchored.findall(text)
    # The string's open bracket swallows nothing: `i`, on the next line, is still found.
    assert convert("i") in [module for module, _ in found]


@pytest.mark.parametrize("convert", [str, str.encode], ids=["str", "bytes"])
def test_a_match_after_no_word_character_is_found_as_the_bounded_pattern_finds_it(convert) -> None:
    text = convert("set_device(0); reset_device(1); _set_device(2)\n(set_device)(3) xset_device set_device")
    pattern, bounded = re.compile(convert(r"set_device\b")), re.compile(convert(r"\bset_device\b"))
    assert [match.start() for match in at_word_starts(pattern, text)] == [
        match.start() for match in bounded.finditer(text)
    ]
    assert len(list(at_word_starts(pattern, text))) == 3
