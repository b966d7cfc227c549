"""A verify that is stopped by a signal takes its workers and its scratch directory (copies of the
user's BEFORE and AFTER) with it: Ctrl-C and SIGTERM end it as an interrupt (exit 130, no
traceback), and after SIGKILL, which no handler sees, the workers end with their parent and the
next verify removes the scratch directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ms_migrate.verify import leftovers

MS101 = Path(__file__).parent / "fixtures" / "ms101"
SLOW = "import time\ntime.sleep(120)  # the import the signal arrives during\n"

pytestmark = [
    pytest.mark.mindspore,
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]


def _descendants(pid: int) -> set[int]:
    """The live processes below ``pid``, by the parent pids in /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
                if fields[0] != b"Z":
                    parents[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _live(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            alive.add(pid)
    return alive


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, set[int]]:
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    (tmp_path / "before.py").write_text(SLOW + (MS101 / "cell_get_by_list.py").read_text())
    (tmp_path / "after.py").write_text(SLOW + (MS101 / "cell_get_by_list.expected.py").read_text())
    process = subprocess.Popen(
        [sys.executable, "-m", "ms_migrate", "verify", "--mode", "pynative", "before.py", "after.py"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(scratch_root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A test runner's worker may ignore SIGINT, and an ignored signal stays ignored across
        # exec: Python would then install no Ctrl-C handler, as in a shell's background job.
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while time.monotonic() < deadline:
        workers = _descendants(process.pid)
        if workers and list(scratch_root.glob("ms-migrate-verify-*")):
            time.sleep(1)  # into the worker's import of the slow module
            return process, scratch_root, _descendants(process.pid)
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"verify started no worker in 60 s: {process.communicate()}")


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while _live(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return _live(pids)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_verify_leaves_no_worker_no_scratch_and_no_traceback(
    tmp_path: Path, signum: int
) -> None:
    process, scratch_root, workers = _start(tmp_path)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr, stderr.decode()
    assert _gone_within(workers, 10) == set()
    assert list(scratch_root.iterdir()) == []


def test_a_killed_verify_takes_its_workers_and_the_next_one_removes_its_scratch(tmp_path: Path) -> None:
    process, scratch_root, workers = _start(tmp_path)
    process.kill()
    process.wait(timeout=30)
    assert _gone_within(workers, 10) == set()  # they asked for SIGKILL when their parent dies
    (left,) = scratch_root.iterdir()
    assert leftovers.remove_stale_scratch(scratch_root) == [left]
    assert list(scratch_root.iterdir()) == []
    mine = scratch_root / leftovers.scratch_prefix("verify")
    mine.mkdir()  # a live run's scratch stays
    assert leftovers.remove_stale_scratch(scratch_root) == [] and mine.exists()
