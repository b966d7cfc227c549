"""A worker that dies (a segfault in libcst's native parser, a kill) costs only the file it held:
that file is reported, a fresh worker takes over, and every other file is still processed."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixture_cases import FIXTURES
from tests.processes import children

LEGACY = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
EXPECTED = (FIXTURES / "ms101" / "cell_get_by_list.expected.py").read_text()
UPGRADE = [sys.executable, "-m", "ms_migrate", "upgrade", "-q", "-j", "2", "--target-version", "2.10"]
DIED = re.compile(r"^(.*): worker died \((.*)\) while processing this file; skipped$", re.MULTILINE)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and rlimits")


def _tree(root: Path, files: int) -> list[Path]:
    paths = [root / f"step_{index:03}.py" for index in range(files)]
    for path in paths:
        path.write_text(LEGACY)
    return paths


def _small_stack() -> None:
    # 256 KiB: plenty for every stage on ordinary files, too little for libcst's native parser
    # on a 900-deep attribute chain (which the precheck lets through), so it segfaults.
    resource.setrlimit(resource.RLIMIT_STACK, (256 * 1024, resource.getrlimit(resource.RLIMIT_STACK)[1]))


def test_a_worker_that_segfaults_costs_only_its_file(tmp_path: Path) -> None:
    paths = _tree(tmp_path, 30)
    deep = tmp_path / "step_007_deep.py"
    deep.write_text(LEGACY + "x = a" + ".b" * 900 + "\n")
    result = subprocess.run(
        [*UPGRADE, str(tmp_path)], capture_output=True, text=True, timeout=300, preexec_fn=_small_stack
    )
    assert DIED.findall(result.stderr) == [(str(deep), "signal 11, SIGSEGV")], result.stderr
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert deep.read_text().startswith(LEGACY)
    assert [path for path in paths if path.read_text() != EXPECTED] == []


def test_a_killed_worker_costs_only_the_file_it_held(tmp_path: Path) -> None:
    paths = _tree(tmp_path, 100)
    process = subprocess.Popen([*UPGRADE, str(tmp_path)], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # Once a file is written, both workers are past their start and on files.
        while time.monotonic() < deadline and all(path.read_text() == LEGACY for path in paths[:4]):
            time.sleep(0.02)
        workers = children(process.pid)
        assert len(workers) == 2, "the run ended before a worker could be killed"
        os.kill(min(workers), signal.SIGKILL)
        replaced = False
        while process.poll() is None and not replaced:
            replaced = bool(children(process.pid) - workers)
            time.sleep(0.02)
        _, errors = process.communicate(timeout=300)
    finally:
        process.kill()
    assert replaced, "no fresh worker took the dead one's place"
    assert "Traceback" not in errors
    died = DIED.findall(errors)
    # The worker is on a file nearly all the time; were it between two, no file is lost.
    assert process.returncode == (2 if died else 0), errors
    assert [cause for _, cause in died] in ([], ["signal 9, SIGKILL"]), errors
    skipped = {Path(path) for path, _ in died}
    assert all(path.read_text() == LEGACY for path in skipped)
    assert [path for path in paths if path not in skipped and path.read_text() != EXPECTED] == []
