"""What `upgrade --dry-run` prints is a patch: for a CRLF file too, and an interrupted dry run
says that it wrote nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends import cli
from tests.fixture_cases import FIXTURES

STEP = FIXTURES / "ms101" / "cell_get_by_list.py"


def _dry_run(folder: Path) -> subprocess.CompletedProcess[bytes]:
    command = ["upgrade", "--dry-run", "--no-cache", "--target-version", "2.8", "step.py"]
    return subprocess.run(
        [sys.executable, "-m", "ms_migrate", *command], capture_output=True, cwd=folder, check=False
    )


def test_the_diff_of_a_crlf_file_keeps_its_line_breaks_and_applies(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    source = tmp_path / "step.py"
    source.write_bytes(STEP.read_bytes().replace(b"\n", b"\r\n"))
    done = _dry_run(tmp_path)
    assert done.returncode == 1, done.stderr
    body = [line for line in done.stdout.splitlines(keepends=True) if line[:1] in (b"+", b"-", b" ")]
    body = [line for line in body if not line.startswith((b"+++", b"---"))]
    assert body and all(line.endswith(b"\r\n") for line in body), body[:3]
    if shutil.which("patch") is None:
        pytest.skip("no patch here")
    applied = subprocess.run(
        ["patch", "-p1"], input=done.stdout, cwd=tmp_path, capture_output=True, check=False
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    upgraded = _dry_run(tmp_path)
    assert upgraded.returncode == 0 and upgraded.stdout == b""  # the patch is the whole upgrade


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_interrupted_run_says_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dry_run: bool
) -> None:
    shutil.copy(STEP, tmp_path / "step.py")

    def interrupted(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(cli, "upgrade_files", interrupted)
    options = ["--dry-run"] if dry_run else []
    result = CliRunner().invoke(cli.main, ["upgrade", *options, "--target-version", "2.8", str(tmp_path)])
    assert result.exit_code == 130
    said = "nothing was written (--dry-run)" if dry_run else "files already written are complete"
    assert f"interrupted: {said}" in result.output
