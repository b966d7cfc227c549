"""MS212: a `set_context` key the target does not take, which raises ValueError there; the keys
each release takes are read from it (rules/releases/api.json)."""

from __future__ import annotations

import pytest

from ms_migrate.core.engine import run_rules
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import rule_for
from ms_migrate.rules.ms212_set_context_key_not_in_target import PROBE

HEAD = "import mindspore as ms\nfrom mindspore import context\n"


def _messages(line: str, target: str = "2.10") -> list[str]:
    result = run_rules(HEAD + line + "\n", Version.parse(target), [rule_for("MS212")])
    assert result.text == HEAD + line + "\n"  # reported, never rewritten
    return [item.message for item in result.diagnostics]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            "context.set_context(enable_dump=False)",
            "`set_context` takes no `enable_dump` on MindSpore 2.10: the call raises ValueError there; "
            "MindSpore 1.7-1.10 took it",
        ),
        ("ms.set_context(grad_for_scalar=True)", "MindSpore 1.7-1.10, 2.7-2.9 took it"),
        ("ms.context.set_context(enable_mem_reuse=True)", "no release read (1.7-1.10, 2.7-2.10) takes it"),
    ],
)
def test_a_key_the_target_does_not_take_is_reported(line: str, said: str) -> None:
    (message,) = _messages(line)
    assert said in message, message


@pytest.mark.parametrize(
    ("line", "target"),
    [
        ("context.set_context(mode=context.GRAPH_MODE, device_target='CPU', max_call_depth=100)", "2.10"),
        ("context.set_context(enable_dump=False, save_dump_path='.')", "1.10"),
        ("context.set_context(**options)", "2.10"),
        ("context.set_context(enable_dump=False)", "2.5"),  # between 1.10 and 2.7, which disagree
        ("set_context(enable_dump=False)", "2.10"),  # not MindSpore's
    ],
)
def test_a_key_the_target_takes_or_that_is_not_seen_is_not_reported(line: str, target: str) -> None:
    assert _messages(line, target) == []


def test_the_keys_every_release_documents_are_among_those_read() -> None:
    """The keys are read where set_context looks before it raises: the ones every release
    documents are among them on each, or every script would be reported."""
    facts = api_facts()
    assert facts is not None
    for release in facts.releases:
        taken = facts.probe(PROBE, release)
        assert isinstance(taken, list) and {"mode", "device_target", "device_id", "save_graphs"} <= set(taken)


def test_a_key_a_release_takes_and_ignores_is_taken() -> None:
    """2.10 skips `enable_auto_mixed_precision` with a warning, in a branch of its own above
    the check that raises: read from its source, it is taken (14 files of mindspore-lab/models
    pass it, and run)."""
    assert _messages("context.set_context(enable_auto_mixed_precision=False, auto_tune_mode='NO_TUNE')") == []
