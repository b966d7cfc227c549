"""MS227: a call whose result has other parts, in another order or of other dtypes, on the target
than on the release the code is written for, as running each release showed (rules/releases/api.json)."""

from __future__ import annotations

import pytest

from ms_migrate.core.engine import run_rules
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.return_probes import GIVES, RETURN_PROBES, RETURNS
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import rule_for

HEAD = "import mindspore as ms\nfrom mindspore import ops\nfrom mindspore.ops import operations as P\n\n"


def _messages(line: str, written_for: str | None = "1.10", target: str = "2.10") -> list[str]:
    result = run_rules(
        HEAD + line + "\n",
        Version.parse(target),
        [rule_for("MS227")],
        fix=False,
        written_for=None if written_for is None else Version.parse(written_for),
    )
    assert result.text == HEAD + line + "\n"  # reported, never rewritten
    return [item.message for item in result.diagnostics]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "indices, values = ops.max(x, axis=1)",
            "`ops.max` returns (int32, float32) on MindSpore 1.10, which this code is written for, and "
            "(float32, int64) on 2.10 (`ops.max(floats, axis=1)` run on each): its parts come in "
            "another order",
        ),
        ("low = ms.ops.min(x, 0)", "its parts come in another order"),
        ("std, mean = ops.std(x)", "2 parts became 1; its first part is 0.9537 on 1.10 and 0.9337 on 2.10"),
        ("out, mask = ops.dropout(x, p=0.2)", "returns (float32, float32) on MindSpore 1.10"),
        ("found = P.ArgMaxWithValue(axis=1)(x)", "a part's dtype changed: int32 became int64"),
        ("index = ops.argmax(x, 1)", "its dtype changed: int32 became int64"),
    ],
)
def test_a_call_whose_result_changed_says_how(line: str, said: str) -> None:
    (message,) = _messages(line)
    assert said in message and message.endswith("check how the result is used"), message


@pytest.mark.parametrize(
    "line",
    [
        "values, indices = ops.sort(x)",  # the same on every release read
        "largest = max(a, b)",  # Python's
        "unique, index = ops.unique(x)",
    ],
)
def test_a_call_whose_result_is_the_same_is_not_reported(line: str) -> None:
    assert _messages(line) == []


def test_the_release_the_code_is_written_for_decides() -> None:
    line = "indices, values = ops.max(x, axis=1)"
    assert _messages(line, written_for=None) == []
    assert _messages(line, written_for="2.7") == []  # 2.7-2.10 agree
    (down,) = _messages("values, indices = ops.max(x, axis=1)", written_for="2.10", target="1.10")
    assert "returns (float32, int64) on MindSpore 2.10" in down and "(int32, float32) on 1.10" in down
    # 1.7 has no ops.max: nothing is known to compare
    assert _messages(line, written_for="1.7") == []


def test_every_name_probed_answers_on_the_newest_release() -> None:
    """Each call of the table runs on the newest release read: a misspelt probe would answer
    with an error everywhere and compare nothing, silently."""
    facts = api_facts()
    assert facts is not None
    newest = max(facts.releases)
    failing = [name for name in RETURN_PROBES if str(facts.probe(RETURNS + name, newest)).startswith("error")]
    assert failing == []


def test_a_call_of_the_same_parts_that_gives_other_numbers_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the parts and dtypes agree and the numbers do not, the finding says the numbers (no
    call probed does so between 1.10 and 2.10 today: a release whose probe did is made here)."""
    import dataclasses

    from ms_migrate.rules import ms227_call_returns_otherwise as rule

    facts = api_facts()
    assert facts is not None
    name = "mindspore.ops.sort"
    probes = dict(facts.probes)
    old_on = frozenset(release for release in facts.releases if release.major == 1)
    new_on = frozenset(facts.releases) - old_on
    probes[GIVES + name] = ((old_on, [1.0, 2.0]), (new_on, [1.0, 3.0]))
    made = dataclasses.replace(facts, probes=probes)
    monkeypatch.setattr(rule, "_CHANGED", {})
    monkeypatch.setattr(rule, "api_facts", lambda: made)
    changed = rule._changed(made, Version(1, 10), Version(2, 10))
    assert changed[name] == rule.Change("(float32, int32)", "(float32, int32)", ([1.0, 2.0], [1.0, 3.0]))
    rule._changed_calls.cache_clear()  # its prefilter, read from the facts once per process
    try:
        (message,) = _messages("values, indices = ops.sort(x)")
    finally:
        rule._changed_calls.cache_clear()
    assert message.startswith("`ops.sort` gives other numbers on MindSpore 2.10 than on 1.10"), message
    assert "its first part is 1, 2 on 1.10 and 1, 3 on 2.10" in message
