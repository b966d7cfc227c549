"""File names a repository may hold are untrusted input: a newline cannot forge a line of the
output, a name that is not UTF-8 still gives valid JSON and SARIF, and a stdout that cannot encode
a name costs a glyph, not the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixture_cases import FIXTURES

STEP = FIXTURES / "ms101" / "cell_get_by_list.py"
FORGING = "x\ngood.py:1:1: MS999 FORGED finding.py"


def _ms_migrate(cwd: Path, *arguments: str, **environment: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "ms_migrate", *arguments],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **environment},
        check=False,
    )


def _tree(root: Path, *names: bytes) -> Path:
    root.mkdir()
    (root / ".git").mkdir()
    for name in names:
        try:
            shutil.copy(STEP, os.path.join(os.fsencode(root), name))
        except (OSError, UnicodeError):
            pytest.skip(f"this filesystem refuses the name {name!r}")
    return root


def test_a_newline_in_a_file_name_cannot_forge_a_line_of_the_output(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", os.fsencode(FORGING))
    check = _ms_migrate(tree, "check", "--no-cache", "--target-version", "2.8", ".")
    assert check.returncode == 1, check.stderr
    lines = check.stdout.decode().splitlines()
    assert not any(line.startswith("good.py") for line in lines), lines
    assert any(line.startswith('"x\\ngood.py:1:1: MS999 FORGED finding.py":14:1: MS101') for line in lines)
    diff = _ms_migrate(tree, "upgrade", "--dry-run", "--no-cache", "--target-version", "2.8", ".")
    headers = [line for line in diff.stdout.decode().splitlines() if line.startswith(("--- ", "+++ "))]
    assert headers == [
        '--- "a/x\\ngood.py:1:1: MS999 FORGED finding.py"',
        '+++ "b/x\\ngood.py:1:1: MS999 FORGED finding.py"',
    ]  # as git quotes such a name


def test_a_name_that_is_not_utf_8_gives_valid_json_and_sarif(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", b"bad\xff.py", b"step.py")
    check = _ms_migrate(tree, "check", "--no-cache", "--target-version", "2.8", "--format", "json", ".")
    assert check.returncode == 1 and b"Traceback" not in check.stderr, check.stderr
    document = json.loads(check.stdout.decode("utf-8"))  # strict: no byte that is not UTF-8
    assert sorted(item["path"] for item in document["files"]) == ["bad\\xff.py", "step.py"]
    sarif = _ms_migrate(tree, "check", "--no-cache", "--target-version", "2.8", "--format", "sarif", ".")
    assert sarif.returncode == 1 and b"Traceback" not in sarif.stderr, sarif.stderr
    results = json.loads(sarif.stdout.decode("utf-8"))["runs"][0]["results"]
    uris = {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for result in results}
    assert uris == {"bad%FF.py", "step.py"}  # the exact bytes, percent-encoded
    text = _ms_migrate(tree, "check", "--no-cache", "--target-version", "2.8", ".")
    assert '"bad\\377.py":14:1: MS101' in text.stdout.decode()


@pytest.mark.parametrize("command", [["check"], ["upgrade", "--dry-run"], ["upgrade"]])
def test_a_stdout_that_cannot_encode_a_name_costs_a_glyph_not_the_run(
    tmp_path: Path, command: list[str]
) -> None:
    tree = _tree(tmp_path / "tree", "训练步骤.py".encode(), b"a.py", b"z.py")
    done = _ms_migrate(tree, *command, "--no-cache", "--target-version", "2.8", ".", PYTHONIOENCODING="ascii")
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.returncode == (0 if command == ["upgrade"] else 1)
    shown = (done.stdout + done.stderr).decode("ascii")
    assert "\\u8bad\\u7ec3\\u6b65\\u9aa4.py" in shown
    if command == ["upgrade"]:  # every file converted, the one named in Chinese too
        assert not [path for path in tree.glob("*.py") if "GradOperation" in path.read_text()]
