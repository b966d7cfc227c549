"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit in a temporary git repository.

pre-commit installs this repository (at HEAD) into its own virtualenv from the package index,
exactly as a user's pre-commit would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
LEGACY = ROOT / "tests" / "fixtures" / "ms101" / "cell_get_by_list.py"
NOTEBOOK = ROOT / "tests" / "notebooks" / "tutorial.ipynb"


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("needs the ms-migrate git checkout, as pre-commit installs hooks from git")
    head = git("rev-parse", "HEAD", cwd=ROOT).strip()
    repo = tmp_path / "project"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    shutil.copy(LEGACY, repo / "train.py")
    shutil.copy(NOTEBOOK, repo / "lesson.ipynb")
    (repo / "notes.py").write_text("x = 1\n")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {ROOT}\n  rev: {head}\n  hooks:\n  - id: ms-migrate-check\n"
        "  - id: ms-migrate-upgrade\n    stages: [manual]\n"
    )
    git("add", ".", cwd=repo)
    return repo


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home")}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True, text=True
    )


def test_check_hook_flags_then_upgrade_hook_fixes(project: Path) -> None:
    flagged = pre_commit(project, "run", "ms-migrate-check", "--all-files")
    assert flagged.returncode == 1, flagged.stdout + flagged.stderr
    assert "train.py:14:1: MS101 modernisable" in flagged.stdout
    assert "lesson.ipynb:cell 3:7:1: MS101 modernisable" in flagged.stdout  # notebooks are hooked too
    assert "notes.py" not in flagged.stdout

    fixed = pre_commit(project, "run", "ms-migrate-upgrade", "--hook-stage", "manual", "--all-files")
    assert fixed.returncode == 1, fixed.stdout  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    assert "Rewriting train.py" in fixed.stdout and "Rewriting lesson.ipynb" in fixed.stdout
    rewritten = (project / "train.py").read_text()
    assert "GradOperation" not in rewritten and "ms.grad(self.network, None, weights)" in rewritten
    assert "C.GradOperation(get_by_list=True)" not in (project / "lesson.ipynb").read_text(encoding="utf-8")

    git("add", ".", cwd=project)
    clean = pre_commit(project, "run", "ms-migrate-check", "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
