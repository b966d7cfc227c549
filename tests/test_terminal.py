"""What a person at a terminal gets: a progress bar on stderr for a run over many files (and
nothing of it in a pipe, or with -q), and a quick start: `check` on one file loads neither rich
nor libcst."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixture_cases import FIXTURES

LEGACY = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
ROOT = Path(__file__).parent.parent


def _run_with_stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout (a pipe) and what the terminal on stderr received."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "ms_migrate", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed: Linux says EIO
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    stdout, _ = process.communicate(timeout=300)
    return process.returncode, stdout.decode(), received.decode(errors="replace")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal, as Linux gives it")
def test_a_run_over_many_files_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    for index in range(60):
        (tmp_path / f"step_{index:02}.py").write_text(LEGACY if index % 20 == 0 else "x = 1\n")
    command = ["upgrade", "--dry-run", "--target-version", "2.8", str(tmp_path)]
    piped = subprocess.run([sys.executable, "-m", "ms_migrate", *command], capture_output=True, text=True)
    code, stdout, terminal = _run_with_stderr_on_a_terminal(*command)
    assert (code, stdout) == (piped.returncode, piped.stdout)  # the diff on stdout is untouched
    assert "60/60" in terminal and "60/60" not in piped.stderr
    assert "3 files would change (60 checked)" in terminal
    _, _, quiet = _run_with_stderr_on_a_terminal(*command[:-1], "-q", str(tmp_path))
    assert "/60" not in quiet


def test_check_on_one_file_loads_neither_rich_nor_libcst(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import mindspore as ms\n\ngrad_fn = ms.value_and_grad(lambda x: x)\n")
    code = (
        "import sys\nfrom ms_migrate.frontends.cli import main\n"
        f"try:\n    main(['check', '--target-version', '2.8', {str(tmp_path / 'train.py')!r}])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'rich', 'libcst'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.splitlines()[-1] == "[]", result.stderr
