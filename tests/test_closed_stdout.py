"""A run whose stdout goes away (`upgrade . | head`, `upgrade >&-`) still converts every file and
ends with its own exit status; stderr says once that stdout was closed. It used to stop after the
first file or two (click's silent exit 1 on BrokenPipeError) or die with an AttributeError."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "ms101" / "cell_get_by_list.py"
COMMAND = [sys.executable, "-m", "ms_migrate", "upgrade", "--target-version", "2.8"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    folder = tmp_path / "tree"
    folder.mkdir()
    for index in range(60):
        shutil.copy(FIXTURE, folder / f"step_{index:02}.py")
    return folder


def unconverted(tree: Path) -> list[str]:
    texts = {path.name: path.read_text(encoding="utf-8") for path in tree.glob("*.py")}
    return sorted(name for name, text in texts.items() if "GradOperation" in text)


def test_a_reader_that_stops_early_does_not_stop_the_run(tree: Path) -> None:
    process = subprocess.Popen(
        [*COMMAND, str(tree)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()  # `| head -1`
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 0, stderr
    assert "MS101" in first
    assert unconverted(tree) == []
    assert stderr.count("note: stdout was closed by its reader") == 1, stderr
    assert "Traceback" not in stderr and "60 files changed" in stderr


def test_a_closed_stdout_does_not_stop_the_run(tree: Path) -> None:
    command = " ".join(f"'{part}'" for part in [*COMMAND, str(tree)])
    completed = subprocess.run(["sh", "-c", f"{command} >&-"], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert unconverted(tree) == []
    assert "Traceback" not in completed.stderr and "60 files changed" in completed.stderr
