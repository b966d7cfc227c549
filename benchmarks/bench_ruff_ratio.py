"""The cost of ms-migrate over a tree, as ratios to ruff measured in the same run on the same tree.

Run: .venv/bin/python benchmarks/bench_ruff_ratio.py TREE [-j N] [--target-version 2.10] [--repeat R]

Each step is a separate process, timed from start to exit, with the peak resident memory of its
largest process (the CLI, or one of its -j workers) from ``wait4``:

- ``ms-migrate check --no-cache``: lint only;
- ``ms-migrate upgrade --dry-run --no-cache``: the rewrites too, and the diff;
- ``ms-migrate check`` twice with an empty cache: the first fills it (its write cost shows against
  the first step), the second is the rerun over an unchanged tree;
- ``ruff check --isolated --no-cache --select UP``: the reference, pyupgrade's rules in Rust;
- ``ast.parse`` of every file ms-migrate would look at, in one Python process: what any
  Python tool pays at least;
- ``ast.parse`` of the files whose text some rule's prefilter selects (what ``check`` parses, the
  selection made before the clock starts), in -j processes: the floor under ``check``'s wall
  time that no work on the rules can go below while the parser is CPython's;
- ``ms-migrate check`` of one file of the tree that uses MindSpore: the start-up a pre-commit hook
  pays on every commit.

ms-migrate runs from byte-compiled modules, as an installed package does: the benchmark compiles
them first and lets Python use them even where ``PYTHONDONTWRITEBYTECODE`` is set.

The cache goes to a temporary folder, never into TREE, and TREE is never written. Ratios are
against ruff's wall time and memory in this run, so they compare across machines where seconds
do not; the machine, the tool's commit and ruff's version are printed with them. With
``--repeat R`` each step runs R times and the fastest counts (memory: the largest).
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Step:
    name: str
    command: list[str]
    wall_s: float = float("inf")
    peak_mib: float = 0.0
    exit_code: int = 0


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) of the largest process of its tree, and the exit status."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)  # rusage of the child and the children it reaped
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)
    return wall, peak, process.returncode


def parse_all(list_file: Path) -> None:
    """The bare-parse step, in its own process: ast.parse of each listed file's bytes (which
    honours an encoding cookie; a notebook fails at once and counts as read)."""
    for name in list_file.read_text(encoding="utf-8").splitlines():
        try:
            ast.parse(Path(name).read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue


def parse_shared(list_file: Path, jobs: int) -> None:
    """The selected-parse step: the listed files parsed by ``jobs`` processes, each taking every
    jobs-th file (the listing is in the walk's order, so each share holds alike sizes)."""
    import multiprocessing

    names = list_file.read_text(encoding="utf-8").splitlines()
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        pool.map(_parse_each, [names[start::jobs] for start in range(jobs)])


def _parse_each(names: list[str]) -> None:
    for name in names:
        try:
            ast.parse(Path(name).read_bytes())
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue


def _selected(files: list[Path], target: str) -> list[Path]:
    """The files whose text a rule that ``check`` runs on ``target`` selects by its prefilter."""
    from ms_migrate.core.engine import UPGRADE_KINDS, rules_of_kind
    from ms_migrate.facts.versions import Version
    from ms_migrate.files import sources

    version, rules = Version.parse(target), rules_of_kind(UPGRADE_KINDS)
    chosen = []
    for path in files:
        try:
            text = sources.read_source(path).text
        except sources.SourceError:
            continue
        if any(rule.selected_for(text, version, None) for rule in rules):
            chosen.append(path)
    return chosen


def _commit() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "ms_migrate"], cwd=ROOT, capture_output=True, text=True
        )
        return commit + (" (uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _ruff() -> list[str]:
    beside = Path(sys.executable).parent / "ruff"
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        raise SystemExit("ruff is needed as the reference: pip install ruff")
    return [found]


def _cores() -> str:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 1
    return f"{usable} usable of {os.cpu_count()}"


def run(tree: Path, jobs: int, target: str, repeat: int) -> None:
    from ms_migrate.files import sources

    files = [path for path in sources.discover([tree]) if sources.is_python_source(path)]
    lines = 0
    for path in files:
        try:
            lines += sources.read_source(path).text.count("\n")
        except sources.SourceError:
            continue
    ruff = _ruff()
    load_before = os.getloadavg()[0]
    tool = [sys.executable, "-m", "ms_migrate"]
    options = ["--target-version", target, "-j", str(jobs), "-q"]
    with tempfile.TemporaryDirectory() as scratch:
        listing = Path(scratch) / "files.txt"
        listing.write_text("\n".join(str(path) for path in files), encoding="utf-8")
        selected = Path(scratch) / "selected.txt"
        chosen = _selected(files, target)
        selected.write_text("\n".join(str(path) for path in chosen), encoding="utf-8")
        cache = Path(scratch) / "cache"
        env = {**os.environ, "MS_MIGRATE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        compile_modules = [sys.executable, "-m", "compileall", "-q", str(ROOT / "ms_migrate")]
        subprocess.run(compile_modules, check=True, env=env)
        one_file = _one_file(files)
        workers = jobs or os.cpu_count() or 1
        steps = [
            Step(
                "ruff check --select UP",
                [*ruff, "check", "--isolated", "--no-cache", "--select", "UP", str(tree)],
            ),
            Step("ast.parse, every file", [sys.executable, __file__, "--parse-all", str(listing)]),
            Step(
                f"ast.parse, the {len(chosen)} files check parses, -j {workers}",
                [sys.executable, __file__, "--parse-shared", str(selected), "-j", str(workers)],
            ),
            Step("check", [*tool, "check", *options, "--no-cache", str(tree)]),
            Step("upgrade --dry-run", [*tool, "upgrade", "--dry-run", *options, "--no-cache", str(tree)]),
            Step("check, filling the cache", [*tool, "check", *options, str(tree)]),
            Step("check, cached rerun", [*tool, "check", *options, str(tree)]),
            Step("check, one file (start-up)", [*tool, "check", *options, "--no-cache", str(one_file)]),
        ]
        for _ in range(repeat):
            for step in steps:
                if step.name == "check, filling the cache":
                    shutil.rmtree(cache, ignore_errors=True)
                wall, peak, code = measure(step.command, env)
                step.wall_s, step.peak_mib, step.exit_code = (
                    min(step.wall_s, wall),
                    max(step.peak_mib, peak),
                    code,
                )
    load = (load_before, os.getloadavg()[0])
    print(render(tree, files, lines, jobs, target, repeat, steps, load))


def _one_file(files: list[Path]) -> Path:
    """The smallest file of the tree that imports MindSpore, so the catalogue and rules load."""
    using = [path for path in files if path.suffix == ".py" and b"import mindspore" in path.read_bytes()]
    return min(using or files, key=lambda path: (path.stat().st_size, str(path)))


def render(
    tree: Path,
    files: list[Path],
    lines: int,
    jobs: int,
    target: str,
    repeat: int,
    steps: list[Step],
    load: tuple[float, float],
) -> str:
    reference = steps[0]
    ruff_version = subprocess.run(
        [*reference.command[:1], "--version"], capture_output=True, text=True
    ).stdout
    out = [
        f"tree: {tree} ({len(files)} files, {lines:,} lines)",
        f"machine: {platform.machine()}, {_cores()} cores, Python {platform.python_version()}, "
        f"{ruff_version.strip()}; ms-migrate at {_commit()}; -j {jobs}, --target-version {target}, "
        f"best of {repeat}; load average {load[0]:.1f} before, {load[1]:.1f} after (other processes "
        "on the machine slow every step, ruff's too)",
        "",
        "| step | wall | x ruff | peak RSS | x ruff | exit |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for step in steps:
        out.append(
            f"| {step.name} | {step.wall_s:.2f} s | {step.wall_s / reference.wall_s:.1f} | "
            f"{step.peak_mib:.0f} MiB | {step.peak_mib / reference.peak_mib:.1f} | {step.exit_code} |"
        )
    out += ["", "commands (ms-migrate with MS_MIGRATE_CACHE_DIR in a temporary folder):"]
    out += [f"  {' '.join(step.command)}" for step in steps]
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, nargs="?")
    parser.add_argument("-j", "--jobs", type=int, default=0, help="ms-migrate's -j (0: every core)")
    parser.add_argument("--target-version", default="2.10")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--parse-all", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--parse-shared", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.parse_all is not None:
        parse_all(arguments.parse_all)
        return
    if arguments.parse_shared is not None:
        parse_shared(arguments.parse_shared, max(1, arguments.jobs))
        return
    if arguments.tree is None or not arguments.tree.is_dir():
        parser.error("TREE must be a folder")
    run(arguments.tree, arguments.jobs, arguments.target_version, max(1, arguments.repeat))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
