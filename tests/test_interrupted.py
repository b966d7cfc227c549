"""A killed run: workers die with the parent, only the parent writes, every file is old or new,
and the next run removes the temporary files an interrupted write left behind."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.files import sources
from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES
from tests.processes import children, group_members

LEGACY = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
EXPECTED = (FIXTURES / "ms101" / "cell_get_by_list.expected.py").read_text()
TRIALS = 10
UPGRADE = [sys.executable, "-m", "ms_migrate", "upgrade", "-q", "-j", "2", "--target-version", "2.10"]


def _wait_for_new_files(paths: list[Path], count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if sum(path.read_text() == EXPECTED for path in paths) >= count:
            return
        time.sleep(0.01)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_a_run_at_any_point_leaves_every_file_old_or_new_and_nothing_running(tmp_path: Path) -> None:
    paths = [tmp_path / f"step_{index:02}.py" for index in range(20)]
    chance = random.Random(20240611)  # fixed: a failure can be rerun as it was
    left_before: set[Path] = set()
    for trial in range(TRIALS):
        for path in paths:
            path.write_text(LEGACY)
        # The kill point is set by progress, not by the clock, so that a slow machine still sees
        # kills while files are being written: after `written` files are new, plus a moment. At 0
        # it falls in the start (discovery, clean-up, the pool starting).
        written = max(0, chance.randint(-4, len(paths) - 1))
        moment = chance.uniform(0.0, 0.2)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        process = subprocess.Popen([*UPGRADE, str(tmp_path)], start_new_session=True, **quiet)  # type: ignore[call-overload]
        _wait_for_new_files(paths, written, process)
        time.sleep(moment)
        cleaned_up = bool(children(process.pid)) or written > 0  # the pool starts after the clean-up
        with contextlib.suppress(ProcessLookupError):  # a run that ended first (reaped by poll)
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 2
        while group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_members(process.pid), f"trial {trial}: a process outlived the run by 2 s"
        for path in paths:
            assert path.read_text() in (LEGACY, EXPECTED), f"trial {trial}: {path}"
        left = set(tmp_path.glob(f".*{sources.TEMPORARY_SUFFIX}"))
        if cleaned_up:
            assert not left_before & left, f"trial {trial}: the run before left {left_before & left}"
        left_before = left
    result = CliRunner().invoke(main, ["upgrade", "-q", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 0
    assert {path.read_text() for path in paths} == {EXPECTED}
    assert not list(tmp_path.glob(f".*{sources.TEMPORARY_SUFFIX}"))


def test_temporary_files_of_ours_no_run_holds_are_removed_by_the_next_writing_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(LEGACY)
    old = tmp_path / f".train.py.abcd_123{sources.TEMPORARY_SUFFIX}"
    young = tmp_path / f".train.py.efgh_456{sources.TEMPORARY_SUFFIX}"  # a kill a moment ago
    live = tmp_path / f".train.py.wxyz_789{sources.TEMPORARY_SUFFIX}"  # a run writing it now
    foreign = tmp_path / ".train.py.abcd_123.tmp"  # not ours: never touched
    for path in (old, young, live, foreign):
        path.write_text("partial")
    long_ago = time.time() - 2 * sources.STALE_AFTER_S
    os.utime(old, (long_ago, long_ago))
    os.utime(foreign, (long_ago, long_ago))
    preview = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.10", str(tmp_path)])
    assert preview.exit_code == 1 and old.exists() and young.exists()
    with live.open("rb") as writing:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(writing, fcntl.LOCK_EX)  # as the run writing it holds it until the rename
        result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not old.exists() and live.exists() and foreign.exists()
    assert young.exists() == (sys.platform == "win32")  # without flock only age tells
    assert "removed a temporary file left by an interrupted run" in result.output
