"""Files shared with another run or another name: two runs at once never write over each other
unseen (an advisory lock around read-compare-write), and a hard-linked file keeps its link."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.files import sources
from ms_migrate.frontends.cli import main
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


# The loss-scaled step, built on a network whose class is in the file (one the run cannot see
# may take *args, and the step is then left alone: MSR019).
LOSS_SCALED = (FIXTURES / "ms101" / "loss_scale_1024_target_2_7.py").read_text().split("if __name__")[0] + (
    "class Network(nn.Cell):\n    def construct(self, x, y):\n        return x + y\n\n\n"
    "def build(optimizer):\n    return TrainOneStepWithLossScale(Network(), optimizer)\n"
)


@linux_only
def test_two_runs_at_once_leave_every_file_old_or_new(tmp_path: Path) -> None:
    # The two runs write different forms (2.7: a scaled forward; 2.8: sens_param), of different
    # lengths, so writes that overlapped would show; hard-linked pairs are written in place.
    forms = {LOSS_SCALED, *(migrate_text(LOSS_SCALED, Version(2, minor)).text for minor in (7, 8))}
    assert len(forms) == 3
    paths = [tmp_path / f"step_{index:02}.py" for index in range(6)]
    pairs = [(tmp_path / f"linked_{index}.py", tmp_path / f"linked_{index}_also.py") for index in range(2)]
    for path in paths:
        path.write_text(LOSS_SCALED)
    for first, second in pairs:
        first.write_text(LOSS_SCALED)
        os.link(first, second)
    for _trial in range(3):
        runs = [_upgrade("2.7", tmp_path), _upgrade("2.8", tmp_path)]
        for run in runs:
            _, errors = run.communicate(timeout=300)
            assert run.returncode in (1, 2) and "Traceback" not in errors, errors  # P.Fill remains
        for path in [*paths, *(name for pair in pairs for name in pair)]:
            text = path.read_text()
            assert text in forms, path
            compile(text, str(path), "exec")
        assert all(first.stat().st_ino == second.stat().st_ino for first, second in pairs)
        assert _leftovers(tmp_path) == []
        again = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(tmp_path)])
        # Nothing more to change; MS210's P.Fill (and MS202 where 2.7 wrote sens_param) remain.
        assert again.exit_code == 1 and "0 files would change" in again.output, again.output
        for path in [*paths, *(first for first, _ in pairs)]:
            path.write_text(LOSS_SCALED)  # in place: the pairs stay linked


def test_a_hard_linked_file_keeps_its_link(tmp_path: Path) -> None:
    tree, elsewhere = tmp_path / "tree", tmp_path / "elsewhere"
    tree.mkdir()
    elsewhere.mkdir()
    path = tree / "train.py"
    path.write_text(LEGACY)
    path.chmod(0o640)
    other = elsewhere / "train.py"
    os.link(path, other)
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tree)])
    assert result.exit_code == 0, result.output
    assert path.stat().st_ino == other.stat().st_ino and path.stat().st_nlink == 2
    assert other.read_text() == EXPECTED and (path.stat().st_mode & 0o777) == 0o640
    assert _leftovers(tree) == []


def test_two_names_of_one_file_in_the_tree_are_one_rewrite_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(LEGACY)
    os.link(path, tmp_path / "train_link.py")
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "train_link.py").read_text() == EXPECTED
    assert (tmp_path / "train_link.py").stat().st_ino == path.stat().st_ino


def test_a_backup_left_by_a_cut_off_write_is_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(LEGACY[:100])  # as a kill during an in-place write can leave it
    backup = tmp_path / f".train.py.abcd_123{sources.BACKUP_SUFFIX}"
    backup.write_text(LEGACY)
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{backup}: train.py as it was before a write that was cut off" in result.output
    assert backup.read_text() == LEGACY


@linux_only
def test_a_hard_linked_file_whose_write_fails_gets_its_old_bytes_back(tmp_path: Path) -> None:
    import resource

    tree = tmp_path / "tree"
    tree.mkdir()
    path = tree / "train.py"
    path.write_text(LOSS_SCALED)
    os.link(path, tmp_path / "train_also.py")
    new = migrate_text(LOSS_SCALED, Version(2, 7)).text
    limit = (len(LOSS_SCALED) + len(new)) // 2  # the backup fits, the rewrite does not: EFBIG

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    command = [*UPGRADE, "--target-version", "2.7", str(tree)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert result.returncode == 2 and f"{path}: cannot write: File too large" in result.stderr, result.stderr
    assert path.read_text() == LOSS_SCALED and path.stat().st_nlink == 2
    assert _leftovers(tree) == []
