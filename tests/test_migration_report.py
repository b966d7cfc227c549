"""upgrade --report: per file and per site what became of it, verification, and the commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from tests.test_baseline import LEGACY_STEP

# A step whose network passes *args through a helper MS101 cannot see: left alone (MSR...).
LEFT_ALONE = """\
import mindspore.nn as nn
import mindspore.ops as ops


class Step(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x, y):
        grads = self.grad(self.network, self.optimizer.parameters)(x, y)
        self.helper(self.grad)
        self.optimizer(grads)
        return grads
"""


def upgrade(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["upgrade", "--no-cache", "--target-version", "2.8", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr


def test_the_markdown_report_says_what_became_of_each_site(tmp_path: Path) -> None:
    (tmp_path / "step.py").write_text(LEGACY_STEP)
    (tmp_path / "kept.py").write_text(LEFT_ALONE)
    (tmp_path / "clean.py").write_text("x = 1\n")
    report = tmp_path / "report.md"
    code, err = upgrade("--report", str(report), str(tmp_path))
    assert code == 1 and "1 finding remaining" in err, err  # the site left alone (MSR003)
    text = report.read_text()
    lines = text.splitlines()
    assert lines[0] == "# ms-migrate migration report"
    summary = "**upgrade to MindSpore 2.8** (--target-version): 1 file changed, 1 site converted, "
    summary += "1 left alone"
    assert lines[2].startswith(summary + " (MSR")
    assert "Not verified by execution" in lines[3]
    # Then why sites were left alone, the changed files, and every site folded.
    assert lines[5] == "| left alone because | code | sites |"
    assert f"- `{tmp_path / 'step.py'}`: 1 converted" in lines
    assert lines.index("<details>") > lines.index(f"- `{tmp_path / 'step.py'}`: 1 converted")
    assert f"#### `{tmp_path / 'step.py'}`" in lines and f"#### `{tmp_path / 'kept.py'}`" in lines
    assert "clean.py" not in text  # nothing to say about it
    converted = "converted: GradOperation(get_by_list=True) -> ms.value_and_grad, forward merged"
    assert f"| 12 | MS101 | {converted} |" in lines
    left = next(line for line in lines if line.startswith("| 10 | MSR"))
    assert "left alone (" in left
    assert f"ms-migrate upgrade --dry-run --no-cache --target-version 2.8 {tmp_path}" in text
    assert "--report" not in text.split("```bash", 1)[1]
    # The report says what was written: the rewrite is in the file, the other is not.
    assert "GradOperation" not in (tmp_path / "step.py").read_text()
    assert (tmp_path / "kept.py").read_text() == LEFT_ALONE


def test_a_pending_file_is_reported_as_such(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LEGACY_STEP)
    (tmp_path / "b.py").write_text(LEGACY_STEP)
    report = tmp_path / "report.json"
    upgrade("--max-changes", "1", "--report", str(report), str(tmp_path))
    data = json.loads(report.read_text())
    status = {Path(item["path"]).name: item for item in data["files"]}
    assert status["a.py"]["status"] == "changed" and status["a.py"]["sites"][0]["outcome"] == "converted"
    assert status["b.py"]["status"] == "unchanged" and status["b.py"]["reason"].startswith("pending")
    assert status["b.py"]["sites"][0]["outcome"] == "reported"
    assert data["summary"]["files_changed"] == 1 and data["summary"]["sites_converted"] == 1


@pytest.mark.mindspore
def test_the_json_report_carries_the_verification(tmp_path: Path) -> None:
    (tmp_path / "step.py").write_text(LEGACY_STEP)
    (tmp_path / "pyproject.toml").write_text('[tool.ms-migrate.verify]\nworkers = 1\nmode = "pynative"\n')
    report = tmp_path / "report.json"
    code, err = upgrade("--verify", "--report", str(report), str(tmp_path))
    assert code == 0, err
    data = json.loads(report.read_text())
    (item,) = data["files"]
    assert item["status"] == "changed"
    assert [(row["site"], row["mode"], row["verdict"]) for row in item["verified"]] == [
        ("TrainStep:5", "pynative", "equal")
    ]
    assert data["summary"]["verified"] == {"equal": 1} and data["summary"]["runtimes"] == ["2.8.0"]


def test_a_report_of_a_large_run_fits_a_pull_request_body(tmp_path: Path) -> None:
    """On mindspore-courses/applications it was 207 KB with no overview; GitHub takes 65,536
    characters. The summary and the changed files come first; the folded sites stop at a file."""
    for number in range(400):
        (tmp_path / f"kept_{number:03}.py").write_text(LEFT_ALONE)
    (tmp_path / "step.py").write_text(LEGACY_STEP)
    report = tmp_path / "report.md"
    code, err = upgrade("--dry-run", "--report", str(report), str(tmp_path))
    assert code == 1, err
    text = report.read_text()
    assert len(text) < 65_536
    assert f"- `{tmp_path / 'step.py'}`: 1 converted" in text.split("<details>")[0]
    assert text.index(f"#### `{tmp_path / 'step.py'}`") < text.index("#### `") + 1  # changed first
    assert "more files not shown here: every file is in the JSON report" in text
    assert text.rstrip().endswith("</details>")
    as_json = tmp_path / "report.json"
    upgrade("--dry-run", "--report", str(as_json), str(tmp_path))
    assert len(json.loads(as_json.read_text())["files"]) == 401
