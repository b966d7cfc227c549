"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit in a temporary git repository.

pre-commit installs this repository (at HEAD) into its own virtualenv from the package index,
exactly as a user's pre-commit would.
"""

from __future__ import annotations

import json
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


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit home for the module: the hook's environment is installed once."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs the ms-migrate git checkout, as pre-commit installs hooks from git")
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
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
    (repo / ".git" / "pre-commit-home").write_text(str(home))
    return repo


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess:
    home = (repo / ".git" / "pre-commit-home").read_text()
    env = {**os.environ, "PRE_COMMIT_HOME": home}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True, text=True
    )


def test_check_hook_flags_then_upgrade_hook_fixes(project: Path) -> None:
    flagged = pre_commit(project, "run", "ms-migrate-check", "--all-files")
    assert flagged.returncode == 1, flagged.stdout + flagged.stderr
    assert "train.py:14:1: MS101 [*] modernisable" in flagged.stdout
    assert "lesson.ipynb:cell 4:7:1: MS101 [*] modernisable" in flagged.stdout  # notebooks are hooked too
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


DEPRECATED = "from mindspore import ops\n\nout = ops.identity(ops.ones((2,)))\n"


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def staged_only(repo: Path, name: str, text: str) -> subprocess.CompletedProcess:
    """Commit nothing, stage just ``name``, and run the check hook as `git commit` would."""
    git("rm", "-q", "-r", "--cached", ".", cwd=repo)
    git("add", ".pre-commit-config.yaml", cwd=repo)
    (repo / name).write_text(text, encoding="utf-8")
    git("add", name, cwd=repo)
    return pre_commit(repo, "run", "ms-migrate-check")


def test_check_hook_flags_deprecated_apis_in_staged_files_and_notebooks(project: Path) -> None:
    flagged = staged_only(project, "uses_identity.py", DEPRECATED)
    assert flagged.returncode == 1, flagged.stdout + flagged.stderr
    assert "uses_identity.py:3:7: MS210 " in flagged.stdout
    assert "identity" in flagged.stdout and "2.0" in flagged.stdout and "nn.Identity" in flagged.stdout
    assert "train.py" not in flagged.stdout  # not staged: not checked

    in_notebook = staged_only(project, "lesson2.ipynb", notebook(DEPRECATED))
    assert in_notebook.returncode == 1, in_notebook.stdout + in_notebook.stderr
    assert "lesson2.ipynb:cell 1:3:7: MS210 " in in_notebook.stdout and "nn.Identity" in in_notebook.stdout

    clean = staged_only(project, "clean.py", "from mindspore import nn\n\nlayer = nn.Identity()\n")
    assert clean.returncode == 0, clean.stdout + clean.stderr

    waived = DEPRECATED.replace("\n\n", "\n\n# kept until the 2.x port lands\n").replace(
        "((2,)))\n", "((2,)))  # ms-migrate: ignore[MS210]\n"
    )
    suppressed = staged_only(project, "waived.py", waived)
    assert suppressed.returncode == 0, suppressed.stdout + suppressed.stderr


def commit(repo: Path, message: str) -> subprocess.CompletedProcess:
    """`git commit` with the hook installed, as a developer runs it."""
    home = (repo / ".git" / "pre-commit-home").read_text()
    env = {**os.environ, "PRE_COMMIT_HOME": home}
    env.pop("PYTHONPATH", None)
    identity = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    return subprocess.run(
        ["git", *identity, "commit", "-q", "-m", message], cwd=repo, env=env, capture_output=True, text=True
    )


def test_a_legacy_repository_adopts_the_hook_with_a_baseline_in_one_commit(project: Path) -> None:
    """200 MS210 findings nobody can fix in this commit: the baseline records them, the commit
    that adds the hook passes, and a later commit adding one deprecated call fails on it alone."""
    models = project / "models"
    models.mkdir()
    for index in range(4):
        body = "def block{}_{}(params):\n    return nn.Momentum(params, {}, 0.9)\n"
        lines = [body.format(index, n, n) for n in range(50)]
        (models / f"legacy{index}.py").write_text("import mindspore.nn as nn\n\n\n" + "\n\n".join(lines))
    (project / "train.py").unlink()
    (project / "lesson.ipynb").unlink()
    (project / "pyproject.toml").write_text('[tool.ms-migrate]\nbaseline = "ms-migrate-baseline.json"\n')
    # The documented adoption: write the baseline, commit it with the hook's configuration.
    written = subprocess.run(
        [sys.executable, "-m", "ms_migrate", "check", "--write-baseline", "ms-migrate-baseline.json", "."],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert written.returncode == 0, written.stderr
    assert "wrote a baseline of 200 findings" in written.stderr
    assert pre_commit(project, "install").returncode == 0
    git("add", "-A", ".", cwd=project)
    adopted = commit(project, "Adopt ms-migrate's pre-commit hook with a baseline")
    assert adopted.returncode == 0, adopted.stdout + adopted.stderr

    legacy = models / "legacy2.py"
    legacy.write_text(
        "import mindspore.nn as nn\n\n\n"
        "def new_block(params):\n    return nn.Momentum(params, 0.1, 0.95)\n\n\n"
        + legacy.read_text().split("\n", 3)[3]
    )
    git("add", str(legacy), cwd=project)
    refused = commit(project, "A new deprecated call")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    # git shows a hook's output on stderr.
    reported = [line for line in (refused.stdout + refused.stderr).splitlines() if ": MS210 " in line]
    assert reported == [
        "models/legacy2.py:5:12: MS210 MindSpore 2.10 marks `nn.Momentum` (`mindspore.nn.Momentum`) "
        "deprecated (target 2.10); MindSpore names no replacement"
    ], refused.stdout + refused.stderr
