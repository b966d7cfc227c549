"""Nothing a file holds stops the run: every read goes through one guarded door, a cache entry is
untrusted input, a crash in one file is that file's error, and a stat that may be racy is not
trusted. Each case ran forever, or ended the run with a traceback, on `main` before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.files.cache import racy as _racy
from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES

STEP = FIXTURES / "ms101" / "cell_get_by_list.py"


def _tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(STEP, root / "step.py")
    return root


def _ms_migrate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ms_migrate", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["check", "--format", "json"],
        ["upgrade", "--dry-run"],
        ["upgrade"],
        ["downgrade", "--dry-run"],
    ],
)
def test_a_fifo_and_a_link_to_a_device_cost_only_themselves(tmp_path: Path, command: list[str]) -> None:
    tree = _tree(tmp_path / "tree")
    os.mkfifo(tree / "pipe.py")
    (tree / "zero.py").symlink_to("/dev/zero")
    target = "1.7" if command[0] == "downgrade" else "2.8"
    result = _ms_migrate(*command, "--no-cache", "--target-version", target, str(tree), timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"{tree / 'pipe.py'}: not a regular file; skipped" in result.stderr
    assert "Traceback" not in result.stderr
    if command == ["upgrade"]:
        assert "GradOperation" not in (tree / "step.py").read_text()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_on_the_command_line_does_not_block_the_run(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    os.mkfifo(tree / "pipe.py")
    result = _ms_migrate(
        "check", "--no-cache", "--target-version", "2.8", str(tree / "step.py"), str(tree / "pipe.py")
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr


def _notebook(cells: list[str], metadata: str = "{}") -> str:
    document = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": [cell], "outputs": [], "execution_count": None}
            for cell in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1).replace(
        '"metadata": {},\n "nbformat"', f'"metadata": {metadata},\n "nbformat"'
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_valid_inputs_that_ended_the_run_are_each_their_own_error(tmp_path: Path, jobs: str) -> None:
    """A notebook with a 100,000-digit integer, one whose cell holds a lone surrogate: one line
    each, exit 2, and the train step beside them is still converted."""
    tree = _tree(tmp_path / "tree")
    (tree / "digits.ipynb").write_text(_notebook(["x = 1\n"], '{"big": ' + "7" * 100_000 + "}"))
    (tree / "surrogate.ipynb").write_text(
        _notebook(["import mindspore as ms\nx = '" + chr(0xD800) + "'\ng = ms.grad(f)\n"])
    )
    result = _ms_migrate("upgrade", "-j", jobs, "--no-cache", "--target-version", "2.8", str(tree))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{tree / 'digits.ipynb'}: not a notebook this tool can read: Exceeds the limit" in result.stderr
    assert f"{tree / 'surrogate.ipynb'}:cell 1:2: a lone surrogate ('\\ud800')" in result.stderr
    assert "GradOperation" not in (tree / "step.py").read_text()


def test_a_pyproject_nested_too_deeply_is_an_error_naming_it(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\na = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    result = _ms_migrate("check", "--no-cache", str(tree / "step.py"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{tree / 'pyproject.toml'}: nested too deeply to read" in result.stderr


BROKEN_FIX = """
import ast

from ms_migrate.diagnostics import Edit, Fix
from ms_migrate.rules.base import Rule


class BrokenFix(Rule):
    \"\"\"Test-only rule whose fix points past the end of the file: the engine fails applying it.\"\"\"

    code = "XS902"
    title = "broken fix"
    prefilter = ("boom",)

    def check(self, ctx):
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Name) and node.id == "boom":
                yield self.diagnostic(node, "boom", Fix((Edit((10_000, 0), (10_000, 5), "x"),)))
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_crash_in_one_files_analysis_is_that_files_error(tmp_path: Path, jobs: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "xs902_broken_fix.py").write_text(BROKEN_FIX)
    tree = _tree(tmp_path / "tree")
    (tree / "a_boom.py").write_text("boom = 1\n")
    (tree / "z_boom.py").write_text("boom = 2\n")
    env = {**os.environ, "MS_MIGRATE_RULES_PATH": str(rules)}
    command = [
        sys.executable,
        "-m",
        "ms_migrate",
        "upgrade",
        "-j",
        jobs,
        "--target-version",
        "2.8",
        str(tree),
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    for name in ("a_boom.py", "z_boom.py"):
        assert f"{tree / name}: internal error in ms-migrate while processing this file" in result.stderr
    assert "GradOperation" not in (tree / "step.py").read_text()  # the files around them ran


def _run_files(cache: Path) -> list[Path]:
    return list(cache.rglob("run-*"))


def test_a_cache_file_nested_too_deeply_is_a_miss(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    cache = Path(os.environ["MS_MIGRATE_CACHE_DIR"])
    first = CliRunner().invoke(main, ["check", "-j", "1", "--target-version", "2.8", str(tree)])
    run_files = _run_files(cache)
    assert run_files
    for run_file in run_files:
        run_file.write_text("[" * 200_000 + "]" * 200_000)
    for _ in range(2):  # and the file it writes again is good
        again = CliRunner().invoke(main, ["check", "-j", "1", "--target-version", "2.8", str(tree)])
        assert again.exception is None or isinstance(again.exception, SystemExit), again.output
        assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout)
    # Each file is its signature line, then the JSON it signs.
    for run_file in _run_files(cache):
        assert isinstance(json.loads(run_file.read_bytes().partition(b"\n")[2]), dict)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_cache_file_is_not_waited_on(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    assert _ms_migrate("check", "--target-version", "2.8", str(tree)).returncode == 1
    cache = Path(os.environ["MS_MIGRATE_CACHE_DIR"])
    run_files = _run_files(cache)
    assert run_files
    for run_file in run_files:
        run_file.unlink()
        os.mkfifo(run_file)
    assert _ms_migrate("check", "--target-version", "2.8", str(tree)).returncode == 1


def _stat(mtime_ns: int, ctime_ns: int) -> os.stat_result:
    seconds = (mtime_ns // 10**9, mtime_ns // 10**9, ctime_ns // 10**9)
    times = (mtime_ns / 10**9, mtime_ns / 10**9, ctime_ns / 10**9, mtime_ns, mtime_ns, ctime_ns)
    return os.stat_result((0o100644, 1, 1, 1, 0, 0, 10, *seconds, *times))


def test_a_stat_taken_within_a_timestamp_tick_of_a_change_is_not_trusted() -> None:
    """Git's racy-clean check: on a filesystem with 1-second times a same-size edit in the same
    second leaves the stat unchanged, so a file that recent is hashed again next time."""
    now = 1_700_000_000 * 10**9
    assert _racy(_stat(now - 10**9, now - 10**9), now)  # whole seconds: up to 2 s is one tick
    assert not _racy(_stat(now - 3 * 10**9, now - 3 * 10**9), now)
    assert _racy(_stat(now - 5_000_001, now - 5_000_001), now)  # nanosecond times: a few ms
    assert not _racy(_stat(now - 50_000_001, now - 50_000_001), now)


def _huge_step(path: Path, megabytes: float) -> None:
    filler = "".join(f"value_{index} = {index}\n" for index in range(int(megabytes * 2**20 / 16)))
    path.write_text(STEP.read_text() + filler)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_too_large_for_libcst_under_the_memory_limit_is_refused_not_fatal(
    tmp_path: Path, jobs: str
) -> None:
    """libcst wants about 700 bytes per byte of source and aborts the process (SIGABRT) when it
    cannot get them; under an address-space limit the size is checked first, whatever the -j."""
    tree = _tree(tmp_path / "tree")
    _huge_step(tree / "huge.py", 3)

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    command = [
        sys.executable,
        "-m",
        "ms_migrate",
        "upgrade",
        "-j",
        jobs,
        "--no-cache",
        "--target-version",
        "2.8",
    ]
    result = subprocess.run(
        [*command, str(tree)], capture_output=True, text=True, preexec_fn=limit, timeout=300
    )
    assert result.returncode == 2, result.stderr
    assert (
        f"{tree / 'huge.py'}: too large to rewrite here: 3.9 MB of source needs about 2.7 GB" in result.stderr
    )
    assert "GradOperation" not in (tree / "step.py").read_text()
    assert "GradOperation" in (tree / "huge.py").read_text()


def test_a_file_over_the_rewrite_limit_is_reported_and_left(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    _huge_step(tree / "big.py", 0.1)
    env = {**os.environ, "MS_MIGRATE_MAX_REWRITE_BYTES": "50000"}
    command = [
        sys.executable,
        "-m",
        "ms_migrate",
        "upgrade",
        "--no-cache",
        "--target-version",
        "2.8",
        str(tree),
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert f"{tree / 'big.py'}: too large to rewrite: 0.1 MB of source (the limit is 0.0 MB)" in result.stderr
    assert "GradOperation" not in (tree / "step.py").read_text()
