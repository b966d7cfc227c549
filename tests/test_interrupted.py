"""A killed run: workers die with the parent, only the parent writes, every file is old or new,
and the next run removes the temporary files an interrupted write left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate import sources
from ms_migrate.cli import main
from tests.fixture_cases import FIXTURES
from tests.processes import alive, children

LEGACY = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
EXPECTED = (FIXTURES / "ms101" / "cell_get_by_list.expected.py").read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_the_parent_kills_its_workers_and_leaves_every_file_old_or_new(tmp_path: Path) -> None:
    for index in range(400):
        (tmp_path / f"step_{index:03}.py").write_text(LEGACY)
    for trial in range(3):
        command = [sys.executable, "-m", "ms_migrate", "upgrade", "-q", "-j", "2", "--target-version", "2.10"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        process = subprocess.Popen([*command, str(tmp_path)], **quiet)  # type: ignore[call-overload]
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 2:
            workers = children(process.pid)
            time.sleep(0.05)
        assert workers, "the pool never started"
        time.sleep(0.3 * (trial + 1))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(alive(pid) for pid in workers):
            time.sleep(0.05)
        assert not [pid for pid in workers if alive(pid)], "a worker outlived its parent by 2 s"
        for path in tmp_path.glob("step_*.py"):
            assert path.read_text() in (LEGACY, EXPECTED), path
    result = CliRunner().invoke(main, ["upgrade", "-q", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 0
    assert {path.read_text() for path in tmp_path.glob("step_*.py")} == {EXPECTED}


def test_stale_temporary_files_of_ours_are_removed_by_the_next_writing_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    stale = tmp_path / f".train.py.abcd_123{sources.TEMPORARY_SUFFIX}"
    fresh = tmp_path / f".train.py.wxyz_789{sources.TEMPORARY_SUFFIX}"
    foreign = tmp_path / ".train.py.abcd_123.tmp"  # not ours: never touched
    for path in (stale, fresh, foreign):
        path.write_text("partial")
    old = time.time() - 2 * sources.STALE_AFTER_S
    os.utime(stale, (old, old))
    os.utime(foreign, (old, old))
    preview = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.10", str(tmp_path)])
    assert preview.exit_code == 1 and stale.exists()
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not stale.exists() and fresh.exists() and foreign.exists()
    assert "removed a temporary file left by an interrupted run" in result.output
