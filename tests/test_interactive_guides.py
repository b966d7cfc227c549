"""`upgrade -i` as the guides, the option's help and the prompt describe it: one question per site,
answered with exactly the choices ``ms_migrate.frontends.interactive.Answer`` takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ms_migrate.frontends import interactive
from ms_migrate.frontends.cli import main
from ms_migrate.frontends.interactive import Answer

ROOT = Path(__file__).parent.parent
CHOICES = {answer.value for answer in Answer}
# Each page with what it calls a site: the question is per site, not per file.
GUIDES = {
    "README.md": "site",
    "README.zh-CN.md": "位置",
    "docs/migration-guide.md": "site",
    "docs/zh/migration-guide.md": "位置",
}
_MENTION = re.compile(r"upgrade (-i|--interactive)\b")


def _passages(page: str) -> list[str]:
    """The paragraphs of ``page`` that describe `upgrade -i`'s questions (they name a choice)."""
    paragraphs = re.split(r"\n\s*\n", (ROOT / page).read_text(encoding="utf-8"))
    return [text for text in paragraphs if _MENTION.search(text) and re.search(r"`[a-z]`", text)]


@pytest.mark.parametrize("page", sorted(GUIDES))
def test_the_guides_offer_the_choices_interactive_takes(page: str) -> None:
    passages = _passages(page)
    assert passages, f"{page} no longer describes the questions of `upgrade -i`"
    for text in passages:
        named = set(re.findall(r"`([a-z])`", text))
        assert named == CHOICES, f"{page}: names {sorted(named)}, interactive.py takes {sorted(CHOICES)}"
        assert GUIDES[page] in text, f"{page}: `upgrade -i` asks per {GUIDES[page]}"


def test_the_option_help_offers_the_same_choices() -> None:
    (option,) = [param for param in main.commands["upgrade"].params if param.name == "interactive"]
    assert set(re.findall(r"\(([a-z])\)", option.help or "")) == CHOICES


def test_the_prompt_offers_the_same_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def prompt(text: str, **_: object) -> str:
        asked.append(text)
        return "y"

    monkeypatch.setattr(interactive.click, "prompt", prompt)
    assert interactive._ask() is Answer.YES
    assert set(re.findall(r"\[([a-z])\]", asked[0])) == CHOICES
