"""A rewritten module is printed by its changed top-level statements; the others are cut from the
text they were parsed from, which must be exactly what libcst would print for them."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from ms_migrate.files import sources
from ms_migrate.rewrite import printing
from ms_migrate.rewrite.printing import printed, statement_texts
from tests.fixture_cases import FIXTURES, fixture_cases


def _whole(module: cst.Module, texts: dict[int, str]) -> str:
    header = "".join(module.code_for_node(line) for line in module.header)
    footer = "".join(module.code_for_node(line) for line in module.footer)
    return header + "".join(texts[id(statement)] for statement in module.body) + footer


def _assert_cut_as_printed(text: str) -> bool:
    """Whether ``text`` was cut; where it was, each statement's text is its printed code."""
    module = cst.parse_module(text)
    texts = statement_texts(module, text, ast.parse(text))
    if texts is None:
        return False
    assert [texts[id(statement)] for statement in module.body] == [
        module.code_for_node(statement) for statement in module.body
    ]
    assert _whole(module, texts) == text
    return True


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:  # the fixtures of bad input
        return False
    return True


def test_every_fixture_is_cut_where_libcst_prints_its_statements() -> None:
    paths = [path for path in sorted(FIXTURES.rglob("*.py")) if _parses(sources.read_source(path).text)]
    cut = [path for path in paths if _assert_cut_as_printed(sources.read_source(path).text)]
    assert len(cut) >= 0.9 * len(paths), sorted(set(paths) - set(cut))


@pytest.mark.parametrize(
    "text",
    [
        "# a header\n\n\n# a comment for f\n@decorator  # trailing\n# between decorators\n@other\ndef f():\n"
        "    pass\n    # indented after the body\n# not indented\n\n\nclass C:\n    x = 1\n",
        "import a; import b\nx = 1; y = 2\nif x:\n    pass\nelif y:\n    pass\nelse:\n    pass\n# footer\n\n",
        "def f():\r\n    return 1\r\n\r\n\r\nx = f()\r\n",
        "x = 1\n\x0c\ndef g():\n    pass\n",
        'x = """a\n# not a comment\n"""\ny = 2\n',
        "x = (1,\n# inside\n     2)\n\n# before y\ny = 3\n",
        "async def f():\n    pass\n\n\n@d\nasync def g():\n    pass\n",
    ],
    ids=["decorators-and-comments", "one-line-statements", "crlf", "form-feed", "string", "bracket", "async"],
)
def test_a_module_is_cut_where_libcst_prints_its_statements(text: str) -> None:
    assert _assert_cut_as_printed(text)


@pytest.mark.parametrize(
    "text", ["x = 1", "", "# only a comment\n"], ids=["no-final-newline", "empty", "comment"]
)
def test_a_module_the_cut_cannot_be_trusted_for_is_printed_whole(text: str) -> None:
    module = cst.parse_module(text)
    assert statement_texts(module, text, ast.parse(text)) is None
    assert printed(module, module, None)[0] == text


def test_a_statement_cut_in_the_wrong_place_is_caught_and_the_module_printed_whole() -> None:
    text = "x = 1\n\n\ny = 2\n"
    module = cst.parse_module(text)
    texts = statement_texts(module, text, ast.parse(text))
    assert texts is not None
    first, second = module.body
    wrong = {id(first): "x = 1\n\n", id(second): "\ny = 2\n"}  # a blank line on the wrong side
    after = module.with_changes(body=[first.with_changes(body=[cst.Expr(cst.Name("z"))]), second])
    assert printed(module, after, wrong)[0] == after.code
    assert printed(module, after, texts)[0] == after.code == "z\n\n\ny = 2\n"


def test_the_rewrites_of_the_fixtures_are_what_printing_the_whole_module_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every golden fixture's rewrite, printed by its changed statements, is byte for byte the
    rewrite printed whole; and the cut was taken for most of them."""
    cases = [case for case in fixture_cases() if case.expected is not None and not case.expects_error]
    taken: list[bool] = []
    cut = printing.statement_texts

    def spied(module: cst.Module, text: str, tree: ast.Module):  # type: ignore[no-untyped-def]
        found = cut(module, text, tree)
        taken.append(found is not None)
        return found

    monkeypatch.setattr("ms_migrate.rules.ms101.rewrite.statement_texts", spied)
    fast = [case.migrate(sources.read_source(case.source).text).text for case in cases]
    assert sum(taken) >= 20 and sum(taken) >= 0.9 * len(taken)
    monkeypatch.setattr("ms_migrate.rules.ms101.rewrite.statement_texts", lambda *args: None)
    whole = [case.migrate(sources.read_source(case.source).text).text for case in cases]
    assert fast == whole
