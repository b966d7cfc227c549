"""What a release's notes say that no runtime here shows (rules/releases/notes.json): MindSpore
2.11's incompatible change (MS225) and its retirement of static-graph distributed parallel (MS210),
known though the package index has no 2.11."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate import runtimes
from ms_migrate.context import FileContext
from ms_migrate.facts.release_notes import changes_reaching, noted_change, noted_changes, releases_noted
from ms_migrate.facts.versions import Version, known_versions
from ms_migrate.frontends.cli import main
from ms_migrate.rules.base import rule_for

WRAPPER = """\
from mindspore import nn
from mindspore.ops import GradOperation


class GradWrapWithLoss(nn.Cell):
    def __init__(self, network):
        super().__init__()
        self._grad_all = GradOperation(get_all=True, sens_param=False)
        self._network = network

    def construct(self, inputs, labels):
        gout = self._grad_all(self._network)(inputs, labels)
        return gout[0]
"""


def _findings(code: str, source: str, target: str) -> list[str]:
    rule, version = rule_for(code), Version.parse(target)
    if not rule.applies_to(source, version):
        return []
    return [d.message for d in rule.check(FileContext(source, version, "wrapper.py")) if d.code == code]


def test_each_noted_change_has_its_page_its_rule_and_a_release_no_runtime_here_makes() -> None:
    assert noted_changes()
    for change in noted_changes():
        assert change.kind in ("incompatible", "sunset"), change
        assert change.notes.startswith("https://www.mindspore.cn/docs/en/r") and change.label in change.notes
        assert change.source.startswith("https://")
        assert rule_for(change.rule).code == change.rule
        assert change.release in known_versions() and change.release not in runtimes.RECIPES
    # A target past the release has its changes too; one before it has none of them.
    assert noted_change("grad-of-non-float-input") in changes_reaching(Version.parse("2.12"))
    assert not changes_reaching(Version.parse("2.10"))


def test_runtime_list_says_what_the_notes_of_a_release_it_cannot_make_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MS_MIGRATE_RUNTIMES", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["runtime", "list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for release, changes in releases_noted().items():
        at = next(index for index, line in enumerate(lines) if line.startswith(f"{release} "))
        assert "cannot be had here" in lines[at]
        assert lines[at + 1].strip() == f"known from its release notes ({changes[0].notes}):"
        for offset, change in enumerate(changes, start=2):
            assert lines[at + offset].strip() == f"{change.kind} ({change.rule}): {change.summary}"


def test_ms225_reads_the_labels_from_the_call_where_the_network_is_a_parameter() -> None:
    # mindarmour's GradWrapWithLoss: the network is whatever the caller passes.
    (message,) = _findings("MS225", WRAPPER, "2.11")
    assert "`labels`" in message and "2.11.0 and later (target 2.11)" in message
    assert "https://www.mindspore.cn/docs/en/r2.11.0/RELEASE.html" in message
    assert not _findings("MS225", WRAPPER, "2.10")
    starred = WRAPPER.replace("inputs, labels", "*inputs")
    assert not _findings("MS225", starred, "2.11"), "*inputs shows no input"
    weights_only = WRAPPER.replace("get_all=True", "get_all=False, get_by_list=True")
    assert not _findings("MS225", weights_only, "2.11")


def test_ms225_reads_an_integer_use_from_the_function_and_not_a_float_one() -> None:
    source = (
        "import mindspore as ms\nfrom mindspore import ops\n\n\n"
        "def f(x, idx):\n    return (x * ops.gather(x, idx, 0)).sum()\n\n\n"
        "def g(x, scale):\n    return (x * scale).sum()\n\n\n"
        "a = ms.grad(f, (0, 1))(x, i)\nb = ms.grad(g, (0, 1))(x, s)\nc = ms.grad(f)(x, i)\n"
    )
    (message,) = _findings("MS225", source, "2.11")
    assert "`idx` of `f`" in message and "the indices of `gather`" in message


def test_the_old_side_of_the_change_runs_on_2_10_and_gives_zeros() -> None:
    """What the notes say earlier releases did, run on the real 2.10 in both modes: the gradient
    with respect to an int32 label comes back, zeros of its dtype, with no error."""
    pytest.importorskip("mindspore")
    script = (
        "import sys\nimport numpy as np\nimport mindspore as ms\nfrom mindspore import nn, ops\n"
        "ms.set_context(mode=int(sys.argv[1]))\n"
        "loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')\n"
        "net = nn.WithLossCell(nn.Dense(3, 2), loss)\n"
        "data = ms.Tensor(np.ones((2, 3), np.float32))\nlabel = ms.Tensor(np.array([0, 1], np.int32))\n"
        "grads = ops.GradOperation(get_all=True)(net)(data, label)\n"
        "print(grads[1].dtype, grads[1].asnumpy().tolist())\n"
    )
    for mode in ("0", "1"):
        ran = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=300, check=False
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert ran.stdout.strip().splitlines()[-1] == "Int32 [0, 0]"


def test_ms210_adds_the_retirement_to_set_auto_parallel_context_from_2_11() -> None:
    source = 'import mindspore as ms\n\nms.set_auto_parallel_context(parallel_mode="semi_auto_parallel")\n'
    sunset = noted_change("static-graph-parallel-sunset")
    (on_2_11,) = _findings("MS210", source, "2.11")
    assert sunset.summary in on_2_11 and sunset.notes in on_2_11
    (on_2_10,) = _findings("MS210", source, "2.10")
    assert sunset.summary not in on_2_10


@pytest.mark.parametrize("target", ["2.11", "2.12"])
def test_a_run_on_a_release_known_from_its_notes_says_so_once(tmp_path: Path, target: str) -> None:
    source = tmp_path / "step.py"
    source.write_text("import mindspore as ms\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--target-version", target, str(source)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note: MindSpore 2.11 ")]
    assert len(notes) == 1
    assert "known from its release notes (https://www.mindspore.cn/docs/en/r2.11.0/RELEASE.html)" in notes[0]
    assert "read as 2.10's" in notes[0] and "(MS210, MS225)" in notes[0]
    plain = CliRunner().invoke(main, ["check", "--no-cache", "--target-version", "2.10", str(source)])
    assert "note: MindSpore" not in plain.output
