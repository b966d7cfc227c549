"""Files shared with another run: two runs at once never write over each other unseen (an
advisory lock around read-compare-write)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.cli import main
from ms_migrate.engine import migrate_text
from ms_migrate.versions import Version
from tests.fixture_cases import FIXTURES

LEGACY = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
EXPECTED = (FIXTURES / "ms101" / "cell_get_by_list.expected.py").read_text()
UPGRADE = [sys.executable, "-m", "ms_migrate", "upgrade", "-q"]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock and /proc/locks")


def _upgrade(target: str, path: Path) -> subprocess.Popen[str]:
    command = [*UPGRADE, "--target-version", target, str(path)]
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)


def _leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob(".*.ms-migrate.*"))


def _waits_for_lock(pid: int, inode: int) -> bool:
    """Whether ``pid`` is blocked on a lock of the file ``inode`` ("->" marks a waiter)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and str(pid) in fields and any(field.endswith(f":{inode}") for field in fields):
            return True
    return False


@linux_only
def test_a_run_waits_for_the_lock_another_holds_then_sees_what_was_written(tmp_path: Path) -> None:
    import fcntl

    path = tmp_path / "train.py"
    path.write_text(LEGACY)
    edited = LEGACY.replace("return loss", "return loss  # written by the lock's holder")
    with path.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another run holds it while it writes
        process = _upgrade("2.10", path)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if _waits_for_lock(process.pid, path.stat().st_ino):
                break
            time.sleep(0.02)
        assert process.poll() is None, "the run wrote without waiting for the lock"
        path.write_text(edited)  # in place, under the lock
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 2 and f"{path}: changed on disk during the run; left unchanged" in errors
    assert path.read_text() == edited and _leftovers(tmp_path) == []


LOSS_SCALED = (FIXTURES / "ms101" / "loss_scale_1024_target_2_7.py").read_text()


@linux_only
def test_two_runs_at_once_leave_every_file_old_or_new(tmp_path: Path) -> None:
    # The two runs write different forms (2.7: a scaled forward; 2.8: sens_param), of different
    # lengths, so writes that overlapped would show.
    forms = {LOSS_SCALED, *(migrate_text(LOSS_SCALED, Version(2, minor)).text for minor in (7, 8))}
    assert len(forms) == 3
    paths = [tmp_path / f"step_{index:02}.py" for index in range(12)]
    for path in paths:
        path.write_text(LOSS_SCALED)
    for _trial in range(3):
        runs = [_upgrade("2.7", tmp_path), _upgrade("2.8", tmp_path)]
        for run in runs:
            _, errors = run.communicate(timeout=300)
            assert run.returncode in (0, 2) and "Traceback" not in errors, errors
        for path in paths:
            text = path.read_text()
            assert text in forms, path
            compile(text, str(path), "exec")
        assert _leftovers(tmp_path) == []
        again = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(tmp_path)])
        assert again.exit_code == 0, again.output
        for path in paths:
            path.write_text(LOSS_SCALED)
