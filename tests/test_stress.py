"""scripts/stress.py: a clean run over a small real tree, a tree that makes it fail, and its
detectors on real processes and files (the tool has no known crash or non-fixed point to feed it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "scripts" / "stress.py"
EXAMPLE = ROOT / "examples" / "legacy_project"
NOTEBOOK = Path(__file__).parent / "notebooks" / "tutorial.ipynb"


def load_stress() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stress", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stress"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


stress = load_stress()


def run_stress(tree: Path) -> tuple[int, dict]:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--format", "json", "--target-version", "2.8", "-j", "2", str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert not result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def tricky_tree(tmp_path: Path) -> Path:
    """The example project, plus CRLF, Latin-1, a notebook, a syntax error and a symlink."""
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLE, tree)
    src = tree / "src"
    train = (src / "train.py").read_text(encoding="utf-8")
    (src / "train_crlf.py").write_bytes(train.replace("\n", "\r\n").encode("utf-8"))
    latin = train.replace("# -*- coding: utf-8 -*-", "# -*- coding: latin-1 -*-")
    (src / "train_latin1.py").write_bytes(latin.replace("# 反向传播的梯度算子", "# café").encode("latin-1"))
    shutil.copy(NOTEBOOK, src / "tutorial.ipynb")
    (src / "broken.py").write_text("def train(:\n    pass\n", encoding="utf-8")
    (src / "alias.py").symlink_to("train.py")
    return tree


def test_clean_tree_exits_0_with_the_figures(tricky_tree: Path) -> None:
    code, report = run_stress(tricky_tree)
    assert code == 0, report
    assert report["problems"] == 0
    assert [step["step"] for step in report["steps"]] == ["upgrade", "upgrade again", "check"]
    for step in report["steps"]:
        assert step["wall_s"] > 0 and step["peak_rss_mib"] > 10, step
        assert "--target-version 2.8 -j 2" in step["command"]
    assert [step["exit"] for step in report["steps"]] == [2, 2, 2]  # broken.py: an error, not a crash
    # train, train_functional, train_loss_scale, custom_cell, the CRLF and Latin-1 copies, the
    # notebook
    assert report["changed_by_upgrade"] == 7
    assert report["figures"]["changed"] == 7 and report["figures"]["errors"] == 1
    assert report["peak_rss_children_mib"] >= max(step["peak_rss_mib"] for step in report["steps"])
    assert report["notes"] == []


def test_file_removed_without_being_reported_fails_the_run(tricky_tree: Path) -> None:
    """upgrade deletes what looks like a temporary file of its own left by an interrupted run.
    Stress must notice a file that disappears though no run reported a rewrite of it."""
    leftover = tricky_tree / "src" / ".train.py.abcd1234.ms-migrate.tmp"
    leftover.write_text("half-written\n", encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))

    code, report = run_stress(tricky_tree)
    assert code == 1
    assert report["changed_unreported"] == ["src/.train.py.abcd1234.ms-migrate.tmp: deleted by upgrade"]
    assert report["problems"] == 1
    assert leftover.exists()  # the tree itself is never touched, only its copy


def test_crash_detection_on_real_processes(tmp_path: Path) -> None:
    def step(name: str, code: str, timeout_s: float = 120) -> object:
        return stress.run_step(name, [sys.executable, "-c", code], tmp_path, timeout_s)

    raised = stress.crash_reason(step("upgrade", "raise RuntimeError('boom')"))
    assert raised == "upgrade: traceback (exit 1): RuntimeError: boom"
    killed = stress.crash_reason(step("check", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    assert killed == "check: killed by signal SIGSEGV"
    assert stress.crash_reason(step("upgrade", "raise SystemExit(3)")) == (
        "upgrade: exit status 3, which it never uses on purpose"
    )
    assert stress.crash_reason(step("check", "raise SystemExit(1)")) is None  # check: findings
    assert stress.crash_reason(step("upgrade", "raise SystemExit(1)")) is None  # findings remain
    assert stress.crash_reason(step("upgrade", "raise SystemExit(2)")) is None  # a file's error
    hung = step("check", "import time; time.sleep(120)", timeout_s=1)
    assert hung.timed_out and stress.crash_reason(hung).startswith("check: did not finish in")


def test_compile_and_fixed_point_detection_on_real_files(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text("x = 1\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("value_and_grad(fn, None, weights\n", encoding="utf-8")
    notebook = tmp_path / "bad.ipynb"
    notebook.write_text('{"cells": [', encoding="utf-8")
    assert stress.compile_problem(good) is None
    assert stress.compile_problem(bad).startswith("SyntaxError: ")  # the wording varies by Python
    assert stress.compile_problem(notebook).startswith("not JSON:")

    first = stress.snapshot(tmp_path)
    good.write_text("x = 2\n", encoding="utf-8")
    bad.unlink()
    (tmp_path / "new.py").write_text("", encoding="utf-8")
    assert stress.differences(first, stress.snapshot(tmp_path)) == {
        "bad.py": "deleted",
        "good.py": "changed",
        "new.py": "added",
    }


def test_the_hostile_input_suite_passes_at_small_sizes() -> None:
    """scripts/hostile.py, as `stress.py --hostile --scale small` runs it, on `check` (reads
    everything, writes nothing) and `upgrade` (writes), with -j 1 and -j 2."""
    sys.path.insert(0, str(SCRIPT.parent))
    import hostile

    runs = hostile.run_all("small", [1, 2], timeout=300, python=sys.executable, commands=["check", "upgrade"])
    assert len(runs) == len(hostile.CASES) * 4
    assert [run for run in runs if run.problem] == []
    assert all(run.hostile_unchanged for run in runs)
    assert all(run.tree_unchanged for run in runs if run.command == "check")
    assert {run.exit for run in runs if run.case == "fifo beside a step"} == {2}
