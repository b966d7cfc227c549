"""check's adoption options: the baseline, the fixable mark, --statistics, --exit-zero and
--output-file, run in-process through the CLI on real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from ms_migrate.reporting.baseline import Baseline, Finding, dumps, line_hash

# MS210 finds it, and `ops.Stack` is a drop-in rename: fixable.
DEPRECATED = (
    "import mindspore.ops as ops\nfrom mindspore.ops import operations as P\n\n\n"
    "def f(x):\n    return P.Pack()(x)\n"
)
LEGACY_STEP = """\
import mindspore.nn as nn
import mindspore.ops as ops


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.weights)(x, y)
        self.optimizer(grads)
        return loss
"""
# MS210 finds it, and no drop-in rename exists: not fixable.
NOT_FIXABLE = "import mindspore.nn as nn\n\nnet = nn.Momentum\n"


def check(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--no-cache", "--target-version", "2.10", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_the_baseline_matches_by_code_file_and_line_not_by_line_number(tmp_path: Path) -> None:
    folder = tmp_path
    findings = [Finding(tmp_path / "a.py", "MS210", "    return P.Pack()(x)\n")] * 2
    baseline = Baseline.loads(dumps(findings, folder, "2.10"), folder, "b.json")
    moved = [Finding(tmp_path / "a.py", "MS210", "return   P.Pack()(x)")]  # reindented, moved
    assert baseline.new_findings(moved) == ([], 1)  # nothing new; one entry is fixed since
    third = moved * 3
    assert baseline.new_findings(third) == ([2], 0)  # a third copy is new
    other_file = [Finding(tmp_path / "b.py", "MS210", "return P.Pack()(x)")]
    assert baseline.new_findings(other_file) == ([0], 2)
    other_code = [Finding(tmp_path / "a.py", "MS201", "return P.Pack()(x)")]
    assert baseline.new_findings(other_code) == ([0], 2)
    assert line_hash("a  =  b") == line_hash("a = b") != line_hash("a = c")


def test_a_legacy_tree_adopts_a_baseline_and_only_new_findings_fail(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(DEPRECATED)
    (tmp_path / "step.py").write_text(LEGACY_STEP)
    code, _, err = check("--write-baseline", str(tmp_path / "baseline.json"), str(tmp_path))
    assert code == 0 and "wrote a baseline of 2 findings" in err, err
    entries = json.loads((tmp_path / "baseline.json").read_text())["findings"]
    assert sorted((entry["path"], entry["code"]) for entry in entries) == [
        ("old.py", "MS210"),
        ("step.py", "MS101"),
    ]

    code, out, err = check("--baseline", str(tmp_path / "baseline.json"), str(tmp_path))
    assert (code, out) == (0, ""), out + err
    assert "2 in the baseline, not shown" in err

    # Lines added above move every finding; a new deprecated call is the only one reported.
    (tmp_path / "old.py").write_text("# 注释\n\n" + DEPRECATED + "\ny = P.Pack()\n")
    code, out, _ = check("--baseline", str(tmp_path / "baseline.json"), str(tmp_path))
    assert code == 1
    assert len(out.splitlines()) == 1 and f"{tmp_path / 'old.py'}:10:5: MS210 [*] `P.Pack`" in out, out

    # From the configuration, as the pre-commit hook reads it.
    (tmp_path / "pyproject.toml").write_text('[tool.ms-migrate]\nbaseline = "baseline.json"\n')
    code, out, _ = check(str(tmp_path / "old.py"))
    assert code == 1 and len(out.splitlines()) == 1 and ":10:5: MS210" in out, out


def test_a_baseline_written_from_one_folder_keeps_the_other_folders_entries(tmp_path: Path) -> None:
    """`check src/ --write-baseline` (what a hook's advice leads to) used to drop tests/'s
    entries, and the next full `check .` failed on every one of them."""
    for folder in ("src", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "old.py").write_text(DEPRECATED)
    baseline = str(tmp_path / "baseline.json")
    assert check("--write-baseline", baseline, str(tmp_path))[0] == 0
    (tmp_path / "src" / "old.py").write_text(DEPRECATED + "\ny = P.Pack()\n")
    code, _, err = check("--write-baseline", baseline, str(tmp_path / "src"))
    assert code == 0 and "wrote a baseline of 2 findings, and kept 1 of files this run did not read" in err
    entries = json.loads((tmp_path / "baseline.json").read_text())["findings"]
    assert sorted(entry["path"] for entry in entries) == ["src/old.py", "src/old.py", "tests/old.py"]
    code, out, err = check("--baseline", baseline, str(tmp_path))
    assert (code, out) == (0, ""), out + err
    # A file read again is recorded as it is now: its fixed findings leave the baseline.
    (tmp_path / "tests" / "old.py").write_text("x = 1\n")
    check("--write-baseline", baseline, str(tmp_path / "tests"))
    entries = json.loads((tmp_path / "baseline.json").read_text())["findings"]
    assert [entry["path"] for entry in entries] == ["src/old.py", "src/old.py"]


def test_a_missing_or_broken_baseline_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(DEPRECATED)
    code, _, err = check("--baseline", str(tmp_path / "none.json"), str(tmp_path))
    assert code == 2 and "--write-baseline" in err, err
    (tmp_path / "broken.json").write_text("[1, 2")
    code, _, err = check("--baseline", str(tmp_path / "broken.json"), str(tmp_path))
    assert code == 2 and "not a baseline" in err, err
    (tmp_path / "other.json").write_text('{"findings": []}')
    code, _, err = check("--baseline", str(tmp_path / "other.json"), str(tmp_path))
    assert code == 2 and "not an ms-migrate baseline" in err, err


def test_every_format_says_which_findings_upgrade_fixes(tmp_path: Path) -> None:
    (tmp_path / "fixable.py").write_text(DEPRECATED)
    (tmp_path / "not_fixable.py").write_text(NOT_FIXABLE)
    _, out, _ = check(str(tmp_path))
    lines = out.splitlines()
    assert any("fixable.py:6:12: MS210 [*] `P.Pack`" in line for line in lines), out
    assert any("not_fixable.py:3:7: MS210 MindSpore 2.10 marks `nn.Momentum`" in line for line in lines), out
    _, out, _ = check("--format", "json", str(tmp_path))
    by_file = {Path(item["path"]).name: item for item in json.loads(out)["findings"]}
    assert by_file["fixable.py"]["fixable"] is True and by_file["fixable.py"]["fix"] is not None
    assert by_file["not_fixable.py"]["fixable"] is False and by_file["not_fixable.py"]["fix"] is None
    _, out, _ = check("--format", "sarif", str(tmp_path))
    results = json.loads(out)["runs"][0]["results"]
    assert sorted(result["properties"]["fixable"] for result in results) == [False, True]
    _, out, _ = check("--format", "github", str(tmp_path))
    assert sum("::[*] " in line for line in out.splitlines()) == 1, out


def test_what_check_marks_fixable_is_what_upgrade_changes(tmp_path: Path) -> None:
    (tmp_path / "step.py").write_text(LEGACY_STEP)
    (tmp_path / "fixable.py").write_text(DEPRECATED)
    (tmp_path / "not_fixable.py").write_text(NOT_FIXABLE)
    _, out, _ = check(str(tmp_path))
    marked = {Path(line.split(":", 1)[0]).name for line in out.splitlines() if " [*] " in line}
    options = ["upgrade", "--dry-run", "--no-cache", "--target-version", "2.10", str(tmp_path)]
    diff = CliRunner().invoke(main, options).stdout
    changed = {Path(line[4:]).name for line in diff.splitlines() if line.startswith("+++ ")}
    assert marked == changed == {"step.py", "fixable.py"}


def test_statistics_count_each_code_and_its_fixable_findings(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(DEPRECATED + "\ny = P.Pack()\n")
    (tmp_path / "b.py").write_text(NOT_FIXABLE)
    code, out, _ = check("--statistics", "--select", "MS210", str(tmp_path))
    assert code == 1
    assert out.splitlines() == ["3  MS210      deprecated-api (2 fixable)"], out
    _, out, _ = check("--statistics", "--select", "MS210", "--format", "json", str(tmp_path))
    assert json.loads(out) == [{"code": "MS210", "name": "deprecated-api", "count": 3, "fixable": 2}]


def test_exit_zero_and_output_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(DEPRECATED)
    report = tmp_path / "out" / "findings.json"
    report.parent.mkdir()
    code, out, _ = check("--exit-zero", "--format", "json", "-o", str(report), str(tmp_path / "a.py"))
    assert (code, out) == (0, "")
    assert [item["code"] for item in json.loads(report.read_text())["findings"]] == ["MS210"]
    code, _, err = check("--output-file", str(tmp_path / "no" / "such" / "x.json"), str(tmp_path / "a.py"))
    assert code == 2 and "output-file" in err, err
    (tmp_path / "bad.py").write_text("from mindspore.ops import operations as P\nx = P.Pack(\n")
    code, _, _ = check("--exit-zero", str(tmp_path))
    assert code == 2  # an error is still an error


@pytest.mark.parametrize("delay", [0.0, 0.5], ids=["while-starting", "while-checking"])
def test_ctrl_c_during_check_exits_130(tmp_path: Path, delay: float) -> None:
    for index in range(3000):
        (tmp_path / f"m{index}.py").write_text(LEGACY_STEP)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ms_migrate", "check", "--no-cache", "-j", "1", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # pytest-xdist's workers ignore SIGINT, and an ignored SIGINT is inherited: Python then
        # installs no KeyboardInterrupt handler. A terminal's Ctrl-C finds the default one.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stderr is not None
    first = process.stderr.readline()  # the target line: the run has started
    assert first.startswith("target MindSpore"), first
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    err = first + process.stderr.read()
    assert process.wait(timeout=60) == 130, err
    assert "interrupted" in err and "Traceback" not in err and "modernisable sites" not in err


def upgrade(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["upgrade", "--no-cache", "--target-version", "2.10", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_upgrade_says_what_remains_and_exits_1_while_findings_remain(tmp_path: Path) -> None:
    """As `ruff check --fix`: what was fixed is written, what remains is counted and fails the
    run (the hook's signal), unless --exit-zero; a run with nothing left exits 0."""
    (tmp_path / "step.py").write_text(LEGACY_STEP, encoding="utf-8")
    (tmp_path / "old.py").write_text(NOT_FIXABLE, encoding="utf-8")
    code, out, err = upgrade(str(tmp_path))
    assert code == 1, err
    assert "1 site converted" in err and "1 finding remaining" in err
    assert "MS210" in out and "nn.Momentum" in out
    assert "value_and_grad" in (tmp_path / "step.py").read_text(encoding="utf-8")
    assert upgrade("--exit-zero", str(tmp_path))[0] == 0
    (tmp_path / "old.py").write_text("import mindspore.nn as nn\n", encoding="utf-8")
    code, _, err = upgrade(str(tmp_path))
    assert code == 0 and "0 findings remaining" in err, err


def test_upgrade_leaves_a_baselined_site_as_it_is_and_does_not_show_it(tmp_path: Path) -> None:
    """A team that baselined its findings runs the upgrade hook: the accepted sites are neither
    rewritten nor reprinted, and only what is new is converted and counted."""
    (tmp_path / "step.py").write_text(LEGACY_STEP, encoding="utf-8")
    (tmp_path / "old.py").write_text(DEPRECATED + NOT_FIXABLE.split("\n", 1)[1], encoding="utf-8")
    baseline = tmp_path / "baseline.json"
    assert check("--write-baseline", str(baseline), str(tmp_path))[0] == 0
    code, out, err = upgrade("--baseline", str(baseline), "--dry-run", str(tmp_path))
    assert (code, out) == (0, ""), err
    assert "0 findings remaining (2 more in the baseline)" in err, err
    code, out, err = upgrade("--baseline", str(baseline), str(tmp_path))
    assert (code, out) == (0, ""), err
    assert (tmp_path / "step.py").read_text(encoding="utf-8") == LEGACY_STEP
    assert "P.Pack()" in (tmp_path / "old.py").read_text(encoding="utf-8")
    # A new train step beside the baselined ones is converted; the baselined site in the same
    # file stays as it was.
    (tmp_path / "old.py").write_text(DEPRECATED + "\n\n" + LEGACY_STEP.split("\n", 3)[3], encoding="utf-8")
    code, out, err = upgrade("--baseline", str(baseline), str(tmp_path))
    text = (tmp_path / "old.py").read_text(encoding="utf-8")
    assert code == 0, err
    assert "P.Pack()" in text and "value_and_grad" in text and "GradOperation" not in text
    assert (tmp_path / "step.py").read_text(encoding="utf-8") == LEGACY_STEP


def test_interactive_upgrade_with_a_baseline_asks_first_and_keeps_the_baselined_site(tmp_path: Path) -> None:
    """`upgrade -i` under a baseline writes nothing before its prompt, and what is accepted there
    leaves the baselined site as it is."""
    baselined = DEPRECATED
    (tmp_path / "old.py").write_text(baselined, encoding="utf-8")
    baseline = tmp_path / "baseline.json"
    assert check("--write-baseline", str(baseline), str(tmp_path))[0] == 0
    (tmp_path / "old.py").write_text(baselined + "\n\n" + LEGACY_STEP.split("\n", 3)[3], encoding="utf-8")
    before = (tmp_path / "old.py").read_text(encoding="utf-8")
    arguments = ["upgrade", "-i", "--no-cache", "--target-version", "2.10", "--baseline", str(baseline)]
    declined = CliRunner().invoke(main, [*arguments, str(tmp_path)], input="n\n")
    assert (tmp_path / "old.py").read_text(encoding="utf-8") == before, declined.output
    accepted = CliRunner().invoke(main, [*arguments, str(tmp_path)], input="y\n")
    text = (tmp_path / "old.py").read_text(encoding="utf-8")
    assert accepted.exit_code == 0, accepted.output
    assert "P.Pack()" in text and "value_and_grad" in text and "GradOperation" not in text
