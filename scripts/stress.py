"""Stress ms-migrate on a real tree: what should never happen, and what it costs.

    python scripts/stress.py [--target-version 2.8] [--command upgrade|downgrade] [-j 2] TREE
    python scripts/stress.py --hostile [--scale small|real] [-j N]   (scripts/hostile.py)

TREE is copied to a temporary directory (without ``.git``; TREE itself is never written); on the
copy this runs ``ms-migrate upgrade``, ``upgrade`` again and ``ms-migrate check`` (``python -m
ms_migrate`` with ``--python``'s interpreter, this one by default; the tool's cache goes to the
temporary directory beside the copy, so the second ``upgrade`` and ``check`` use it), then reports

- crashes: a traceback, a signal, a step that outlives ``--timeout``, or an exit status the step
  never uses on purpose (``upgrade``: 0, and 2 for files it could not process; ``check``: 0-2);
- rewritten ``.py`` files that no longer compile though the original did, and rewritten notebooks
  that are no longer JSON (a rewrite of a file that did not compile before is a note);
- files the second ``upgrade`` changed again (the first run's output is not a fixed point);
- files that differ from the original (changed, added or deleted) though ``upgrade --format json``
  reported no rewrite in them, and anything ``check`` changed;

with each step's wall time and peak resident memory, and exits 1 if any of the four was found.
Memory is the largest single process of the step (the CLI, or one of its ``-j`` workers), from
``wait4``; the ``-j`` workers run at once, so the step's total can be higher. Files the tool
reports as errors (syntax errors, undecodable files) are counted, not problems.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Optional

# Exit statuses each step uses on purpose (cli.py): anything else is a crash. Each exits 1 while
# findings remain (as `ruff check --fix`), so an exception escaping click, which also exits 1, is
# told by its traceback.
EXPECTED_EXIT = {
    "upgrade": {0, 1, 2},
    "upgrade again": {0, 1, 2},
    "downgrade": {0, 1, 2},
    "downgrade again": {0, 1, 2},
    "check": {0, 1, 2},
}
DEFAULT_STEP_TIMEOUT_S = 3600.0
_SUMMARY = re.compile(
    r"(?P<changed>\d+) files? changed \((?P<checked>\d+) checked\), (?P<converted>\d+) sites? converted, "
    r"(?P<left_alone>\d+) left alone(?: \([^)]*\))?(?:, (?P<errors>\d+) files? could not be processed)?"
)
LISTED = 20  # files listed per problem in the text report

Snapshot = dict[str, str]  # relative path -> digest of its bytes (or of a symlink's target)


@dataclass
class Step:
    name: str
    command: list[str]
    exit_code: int
    wall_s: float
    peak_rss_mib: float
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    timed_out: bool = False


@dataclass
class Report:
    tree: str
    target_version: str
    jobs: int
    files: int = 0
    python_files: int = 0
    copy_s: float = 0.0
    steps: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # upgrade's own summary line, parsed
    changed_by_upgrade: int = 0
    crashes: list[str] = field(default_factory=list)
    does_not_compile: list[str] = field(default_factory=list)
    not_a_fixed_point: list[str] = field(default_factory=list)
    changed_unreported: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    peak_rss_children_mib: float = 0.0

    @property
    def problems(self) -> int:
        categories = (self.crashes, self.does_not_compile, self.not_a_fixed_point, self.changed_unreported)
        return sum(len(items) for items in categories)


# ---------------------------------------------------------------------------------------------
# The tree


def copy_tree(tree: Path, destination: Path) -> None:
    # Symlinks stay links: the tool must neither follow nor replace them.
    shutil.copytree(tree, destination, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def snapshot(root: Path) -> Snapshot:
    files: Snapshot = {}
    for directory, subdirectories, names in os.walk(root):  # symlinked directories are not entered
        for name in names + [name for name in subdirectories if Path(directory, name).is_symlink()]:
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                files[relative] = "symlink:" + os.readlink(path)
            else:
                files[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def differences(before: Snapshot, after: Snapshot) -> dict[str, str]:
    """Path -> "changed", "added" or "deleted"."""
    found = {path: "deleted" for path in before if path not in after}
    found.update({path: "added" for path in after if path not in before})
    found.update({path: "changed" for path in before if path in after and before[path] != after[path]})
    return dict(sorted(found.items()))


def compile_problem(path: Path) -> Optional[str]:
    """Why a file the tool wrote is not valid: Python that does not compile, or a notebook that
    is not JSON; None when it is fine."""
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        try:
            json.loads(data)
        except ValueError as error:
            return f"not JSON: {error}"
        return None
    try:
        compile(data, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:  # ValueError: null bytes
        return f"{type(error).__name__}: {error}"
    return None


# ---------------------------------------------------------------------------------------------
# Running a step


def _peak_mib(usage: resource.struct_rusage) -> float:
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    return usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 2**10)


def run_step(
    name: str, command: list[str], cwd: Path, timeout_s: float, env: Optional[dict[str, str]] = None
) -> Step:
    """Run one command; its exit status, wall time, and the peak RSS of its largest process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, start_new_session=True, env=env)
        timed_out = False
        while True:
            # wait4, not Popen.wait: it returns the rusage of the child and the children it reaped.
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if not timed_out and time.monotonic() - started > timeout_s:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
            time.sleep(0.05)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return Step(name, command, process.returncode, wall, _peak_mib(usage), stdout, stderr, timed_out)


def crash_reason(step: Step) -> Optional[str]:
    """Why a step counts as a crash, or None: a traceback, a signal, a timeout, an unused status."""
    if step.timed_out:
        return f"{step.name}: did not finish in {step.wall_s:.0f} s"
    if step.exit_code < 0:
        return f"{step.name}: killed by signal {signal.Signals(-step.exit_code).name}"
    output = step.stderr + step.stdout
    if "Traceback (most recent call last)" in output:
        last = [line for line in output.splitlines() if line.strip()][-1].strip()
        return f"{step.name}: traceback (exit {step.exit_code}): {last}"
    if step.exit_code not in EXPECTED_EXIT.get(step.name, {0}):
        return f"{step.name}: exit status {step.exit_code}, which it never uses on purpose"
    return None


def reported_rewrites(stdout: str) -> set[str]:
    """The files ``--format json`` reports a rewrite in."""
    try:
        records = json.loads(stdout)["findings"]
    except (ValueError, KeyError, TypeError):
        return set()
    # A record with a fix names a file that upgrade rewrote (MS101, or a lint rule's exact fix).
    return {os.path.normpath(record["path"]) for record in records if record.get("fix")}


def summary_figures(stderr: str) -> dict[str, int]:
    """upgrade's summary line: files changed and checked, sites converted and left alone, errors."""
    matches = list(_SUMMARY.finditer(stderr))
    if not matches:
        return {}
    return {key: int(value or 0) for key, value in matches[-1].groupdict().items()}


# ---------------------------------------------------------------------------------------------
# The run


def _record(report: Report, step: Step) -> Step:
    report.steps.append(
        {
            "step": step.name,
            "command": " ".join(step.command),
            "exit": step.exit_code,
            "wall_s": round(step.wall_s, 2),
            "peak_rss_mib": round(step.peak_rss_mib, 1),
        }
    )
    reason = crash_reason(step)
    if reason:
        report.crashes.append(reason)
    return step


def _check_rewrites(report: Report, tree: Path, copy: Path, changes: dict[str, str]) -> None:
    for path, kind in changes.items():
        if kind != "changed" or Path(path).suffix not in (".py", ".ipynb"):
            continue
        problem = compile_problem(copy / path)
        if problem is None:
            continue
        if compile_problem(tree / path) is None:
            report.does_not_compile.append(f"{path}: {problem}")
        else:
            report.notes.append(f"{path}: rewritten though the original does not compile either ({problem})")


def stress(
    tree: Path,
    target: str,
    jobs: int,
    python: str,
    timeout_s: float,
    scratch: Path,
    command: str = "upgrade",
) -> Report:
    """Run ``command`` (upgrade or downgrade), the same again, and check over a copy of ``tree``."""
    report = Report(str(tree), target, jobs)
    copy = scratch / tree.resolve().name
    started = time.monotonic()
    copy_tree(tree, copy)
    report.copy_s = round(time.monotonic() - started, 2)
    original = snapshot(copy)
    report.files = len(original)
    report.python_files = sum(path.endswith((".py", ".ipynb")) for path in original)
    options = ["--target-version", target, "-j", str(jobs)]
    tool = [python, "-m", "ms_migrate"]
    # The tool's cache goes beside the copy, not into it (where it would count as a change); the
    # second upgrade and check use it, as they would for a user.
    env = {**os.environ, "MS_MIGRATE_CACHE_DIR": str(scratch / "ms_migrate_cache")}
    step = partial(run_step, cwd=copy, timeout_s=timeout_s, env=env)

    first = _record(report, step(command, [*tool, command, *options, "--format", "json", "."]))
    after_first = snapshot(copy)
    changes = differences(original, after_first)
    report.changed_by_upgrade = sum(kind == "changed" for kind in changes.values())
    report.figures = summary_figures(first.stderr)
    claimed = reported_rewrites(first.stdout)
    _check_rewrites(report, tree, copy, changes)
    report.changed_unreported += [
        f"{path}: {kind} by upgrade" for path, kind in changes.items() if path not in claimed
    ]
    if report.figures and report.figures["changed"] != report.changed_by_upgrade:
        report.notes.append(
            f"upgrade says {report.figures['changed']} files changed; "
            f"{report.changed_by_upgrade} differ on disk"
        )

    second = _record(
        report,
        step(f"{command} again", [*tool, command, *options, "--format", "json", "."]),
    )
    after_second = snapshot(copy)
    again = differences(after_first, after_second)
    report.not_a_fixed_point += [f"{path}: {kind} by the second upgrade" for path, kind in again.items()]
    if reported_rewrites(second.stdout) - set(again):
        report.notes.append("the second upgrade reports rewrites in files it did not change")

    _record(report, step("check", [*tool, "check", *options, "."]))
    report.changed_unreported += [
        f"{path}: {kind} by check" for path, kind in differences(after_second, snapshot(copy)).items()
    ]
    report.peak_rss_children_mib = round(_peak_mib(resource.getrusage(resource.RUSAGE_CHILDREN)), 1)
    return report


# ---------------------------------------------------------------------------------------------
# Output


def render_text(report: Report) -> str:
    lines = [
        f"stress: {report.tree} ({report.python_files} Python files and notebooks, {report.files} files), "
        f"--target-version {report.target_version} -j {report.jobs}; copy {report.copy_s:.1f} s",
        f"{'step':<15}{'wall':>10}{'peak RSS':>12}{'exit':>6}",
    ]
    for step in report.steps:
        lines.append(
            f"{step['step']:<15}{step['wall_s']:>8.1f} s{step['peak_rss_mib']:>8.0f} MiB{step['exit']:>6}"
        )
    figures = report.figures
    lines.append(
        f"upgrade changed {report.changed_by_upgrade} files"
        + (
            f" ({figures['checked']} checked, {figures['converted']} sites converted, "
            f"{figures['left_alone']} left alone, {figures['errors']} could not be processed)"
            if figures
            else ""
        )
    )
    for title, items in (
        ("crash", report.crashes),
        ("does not compile", report.does_not_compile),
        ("not a fixed point", report.not_a_fixed_point),
        ("changed unreported", report.changed_unreported),
        ("note", report.notes),
    ):
        lines.append(f"{title}: {len(items)}")
        lines += [f"  {item}" for item in items[:LISTED]]
        if len(items) > LISTED:
            lines.append(f"  ... and {len(items) - LISTED} more (--format json lists all)")
    lines.append(f"peak RSS of any child process: {report.peak_rss_children_mib:.0f} MiB")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="stress.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, nargs="?", help="the tree to stress (not with --hostile)")
    parser.add_argument("--hostile", action="store_true", help="run the hostile-input suite instead")
    parser.add_argument("--scale", choices=["small", "real"], default="real", help="with --hostile: sizes")
    parser.add_argument("--target-version", default="2.8")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs ms_migrate")
    parser.add_argument("--timeout", type=float, default=DEFAULT_STEP_TIMEOUT_S, help="seconds per step")
    parser.add_argument("--command", choices=["upgrade", "downgrade"], default="upgrade")
    arguments = parser.parse_args(argv)
    if arguments.hostile:
        sys.path.insert(0, str(Path(__file__).parent))
        import hostile

        given = argv if argv is not None else sys.argv
        jobs = [arguments.jobs] if "-j" in given or "--jobs" in given else [1, 2]
        timeout = arguments.timeout if arguments.timeout != DEFAULT_STEP_TIMEOUT_S else 600.0
        return hostile.main(arguments.scale, jobs, arguments.format, timeout, arguments.python)
    if arguments.tree is None or not arguments.tree.is_dir():
        parser.error(f"{arguments.tree} is not a directory")
    with tempfile.TemporaryDirectory(prefix="ms-migrate-stress-") as scratch:
        report = stress(
            arguments.tree,
            arguments.target_version,
            arguments.jobs,
            arguments.python,
            arguments.timeout,
            Path(scratch),
            arguments.command,
        )
    if arguments.format == "json":
        data = {**asdict(report), "problems": report.problems}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(report))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
