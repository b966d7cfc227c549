"""The project's own hostile-input suite: files that must cost only themselves.

    python scripts/stress.py --hostile [--scale small|real] [--format text|json] [-j N ...]

Each case builds a small tree (a train step that converts, beside the hostile input), hashes it,
runs each command on it with each ``-j`` (``python -m ms_migrate``, its cache in a folder of its
own), and records the exit status, the time, whether a traceback or a hang happened, and whether
the hostile files and, for the commands that write nothing, the whole tree are byte-identical
afterwards. ``small`` sizes are for the test suite (tests/test_stress.py); ``real`` ones are the
sizes the defects were found at (a 30 MB file under an 8 GB address-space limit, 200,000
.gitignore patterns, 1,000 train steps in one file).

A case passes when no run hangs or prints a traceback, every exit status is one the command uses
on purpose (0, 1 for findings or a diff, 2 for a file it could not process), the hostile files are
unchanged, and a command that writes nothing left the tree as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
STEP = ROOT / "tests" / "fixtures" / "ms101" / "cell_get_by_list.py"
COMMANDS = {
    "check": ["check", "--target-version", "2.8"],
    "upgrade --dry-run": ["upgrade", "--dry-run", "--target-version", "2.8"],
    "upgrade": ["upgrade", "--target-version", "2.8"],
    "downgrade --dry-run": ["downgrade", "--dry-run", "--target-version", "1.7"],
    "downgrade": ["downgrade", "--target-version", "1.7"],
}
WRITES = {"upgrade", "downgrade"}
SIZES = {
    "small": {"megabytes": 0.3, "patterns": 2_000, "steps": 40, "rlimit_gb": 0},
    "real": {"megabytes": 30, "patterns": 200_000, "steps": 1_000, "rlimit_gb": 8},
}


@dataclass
class Case:
    name: str
    build: Callable[[Path, dict[str, Any]], list[str]]  # writes the tree; returns the hostile files
    environment: dict[str, str] = field(default_factory=dict)
    address_space_gb: bool = False  # run under the scale's RLIMIT_AS


@dataclass
class Run:
    case: str
    command: str
    jobs: int
    exit: Optional[int]
    seconds: float
    hostile_unchanged: bool
    tree_unchanged: bool
    problem: str = ""


def _step(root: Path) -> None:
    shutil.copy(STEP, root / "step.py")


def _fifo(root: Path, sizes: dict[str, Any]) -> list[str]:
    os.mkfifo(root / "pipe.py")
    return ["pipe.py"]


def _dev_zero(root: Path, sizes: dict[str, Any]) -> list[str]:
    (root / "zero.py").symlink_to("/dev/zero")
    return ["zero.py"]


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
    text = json.dumps(document, indent=1)
    return text.replace('"metadata": {},\n "nbformat"', f'"metadata": {metadata},\n "nbformat"')


def _huge_integer(root: Path, sizes: dict[str, Any]) -> list[str]:
    (root / "digits.ipynb").write_text(_notebook(["x = 1\n"], '{"big": ' + "7" * 100_000 + "}"))
    return ["digits.ipynb"]


def _lone_surrogate(root: Path, sizes: dict[str, Any]) -> list[str]:
    cell = "import mindspore as ms\nx = '" + chr(0xD800) + "'\ng = ms.grad(f)\n"
    (root / "surrogate.ipynb").write_text(_notebook([cell]))
    return ["surrogate.ipynb"]


def _nested_pyproject(root: Path, sizes: dict[str, Any]) -> list[str]:
    (root / "pyproject.toml").write_text('[project]\nname = "x"\na = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    return ["pyproject.toml"]


def _huge_file(root: Path, sizes: dict[str, Any]) -> list[str]:
    lines = int(sizes["megabytes"] * 2**20 / 16)
    (root / "huge.py").write_text(
        STEP.read_text() + "".join(f"value_{index} = {index}\n" for index in range(lines))
    )
    return ["huge.py"]


def _large_gitignore(root: Path, sizes: dict[str, Any]) -> list[str]:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    patterns = [
        f"generated_{index}/" if index % 2 else f"/data/file_{index}.bin"
        for index in range(sizes["patterns"])
    ]
    (root / ".gitignore").write_text("\n".join([*patterns, "*.pyc", "build*/"]) + "\n")
    for index in range(20):
        (root / f"module_{index}.py").write_text("x = 1\n")
    return [".gitignore"]


def _many_steps(root: Path, sizes: dict[str, Any]) -> list[str]:
    step = STEP.read_text().split("\n\n\n", 1)[1]  # the class and what follows, without imports
    header = STEP.read_text().split("\n\n\n", 1)[0]
    body = "".join(
        step.replace("TrainOneStep", f"TrainOneStep{index}") + "\n\n" for index in range(sizes["steps"])
    )
    (root / "many.py").write_text(header + "\n\n\n" + body)
    return []


def _classic_mac(root: Path, sizes: dict[str, Any]) -> list[str]:
    source = (
        "import mindspore as ms\r\r\rdef train(model, loss_fn, optimizer, data, label):\r"
        "    def forward_fn(x, y):\r        return loss_fn(model(x), y)\r\r"
        "    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)\r"
        "    loss, grads = grad_fn(data, label)\r    optimizer(grads)\r    return loss\r"
    )
    (root / "mac.py").write_bytes(source.encode())
    return []


def _syntax_and_encoding(root: Path, sizes: dict[str, Any]) -> list[str]:
    (root / "python2.py").write_text("from mindspore.ops import GradOperation\nprint 'x'\n")
    (root / "cookie.py").write_bytes(b"# -*- coding: foobar -*-\nfrom mindspore.ops import GradOperation\n")
    (root / "deep.py").write_text(
        "from mindspore.ops import GradOperation\nx = " + "f(" * 5_000 + "1" + ")" * 5_000 + "\n"
    )
    read_only = root / "read_only.py"
    shutil.copy(STEP, read_only)
    read_only.chmod(0o444)
    return ["python2.py", "cookie.py", "deep.py"]


def _hostile_names(root: Path, sizes: dict[str, Any]) -> list[str]:
    """Names a repository may hold: a newline that could forge an output line, bytes that are not
    UTF-8, and the longest name Linux allows (its temporary's name used to be longer)."""
    names = [
        "x\ngood.py:1:1: MS999 FORGED finding.py",
        os.fsdecode(b"bad\xff.py"),
        "n" * 252 + ".py",
    ]
    made = []
    for name in names:
        try:
            (root / name).write_text("import mindspore\n\nx = 1\n")
        except (OSError, UnicodeError):
            continue  # a filesystem that refuses the name
        made.append(name)
    shutil.copy(STEP, root / "step.py")
    return made


def _malformed_cells(root: Path, sizes: dict[str, Any]) -> list[str]:
    """Notebooks whose cells nbformat would reject (a bare string, no cell_type, a code cell with
    no source): each is named as broken, not read as a notebook without code."""
    shapes = {
        "string_cell.ipynb": ["import mindspore\n"],
        "no_cell_type.ipynb": [{"source": ["import mindspore\n"]}],
        "no_source.ipynb": [{"cell_type": "code", "metadata": {}}],
    }
    for name, cells in shapes.items():
        (root / name).write_text(json.dumps({"nbformat": 4, "metadata": {}, "cells": cells}))
    return list(shapes)


CASES = [
    Case("fifo beside a step", _fifo),
    Case("link to /dev/zero", _dev_zero),
    Case("notebook: 100,000-digit integer", _huge_integer),
    Case("notebook: lone surrogate", _lone_surrogate),
    Case("notebook: malformed cells", _malformed_cells),
    Case("pyproject nested 100,000 deep", _nested_pyproject),
    Case("huge file", _huge_file, address_space_gb=True),
    Case("large .gitignore", _large_gitignore),
    Case("many train steps in one file", _many_steps),
    Case("CR-only line endings", _classic_mac),
    Case("syntax error, unknown encoding, deep nesting, read-only", _syntax_and_encoding),
    Case("file names: a newline, bytes not UTF-8, 255 bytes", _hostile_names),
]


def _digest(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".git/") or relative == ".git":
            continue
        if path.is_symlink():
            found[relative] = "link:" + os.readlink(path)
        elif path.is_fifo():
            found[relative] = "fifo"
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _limit(gigabytes: int) -> Optional[Callable[[], None]]:
    if not gigabytes:
        return None

    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (gigabytes * 2**30, gigabytes * 2**30))

    return apply


def run_case(case: Case, command: str, jobs: int, scale: str, timeout: float, python: str) -> Run:
    sizes = SIZES[scale]
    with tempfile.TemporaryDirectory(prefix="ms-migrate-hostile-") as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        _step(root)
        hostile = case.build(root, sizes)
        before = _digest(root)
        environment = {**os.environ, "MS_MIGRATE_CACHE_DIR": str(Path(scratch) / "cache"), **case.environment}
        if scale == "small" and case.address_space_gb:
            environment["MS_MIGRATE_MAX_REWRITE_BYTES"] = str(100_000)
        arguments = [python, "-m", "ms_migrate", *COMMANDS[command], "-j", str(jobs), str(root)]
        started = time.monotonic()
        problem = ""
        try:
            result = subprocess.run(
                arguments,
                capture_output=True,
                text=True,
                env=environment,
                timeout=timeout,
                cwd=scratch,
                preexec_fn=_limit(sizes["rlimit_gb"] if case.address_space_gb else 0),
            )
            exit_code: Optional[int] = result.returncode
            if "Traceback" in result.stderr:
                problem = "traceback: " + result.stderr.strip().splitlines()[-1]
            elif result.returncode not in (0, 1, 2):  # 1: findings remain (a write too, as ruff --fix)
                problem = f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:]}"
        except subprocess.TimeoutExpired:
            exit_code, problem = None, f"no answer within {timeout:g} s"
        seconds = time.monotonic() - started
        after = _digest(root)
        hostile_unchanged = all(before.get(name) == after.get(name) for name in hostile)
        tree_unchanged = before == after
        if not hostile_unchanged and not problem:
            problem = "a hostile file changed"
        if command not in WRITES and not tree_unchanged and not problem:
            problem = f"{command} changed the tree"
        mixed = case.name == "CR-only line endings" and b"\n" in (root / "mac.py").read_bytes()
        if mixed and not problem:
            problem = "mixed line endings in a CR-only file"
        return Run(case.name, command, jobs, exit_code, seconds, hostile_unchanged, tree_unchanged, problem)


def run_all(
    scale: str, jobs: list[int], timeout: float, python: str, commands: Optional[list[str]] = None
) -> list[Run]:
    runs = []
    for case in CASES:
        for command in commands or list(COMMANDS):
            for count in jobs:
                runs.append(run_case(case, command, count, scale, timeout, python))
    return runs


def render(runs: list[Run]) -> str:
    """The table for docs/ and the closing note: case, command, exit, time, tree unchanged?"""
    lines = [
        "| case | command | -j | exit | time (s) | hostile files unchanged | tree unchanged | problem |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        exit_text = "hang" if run.exit is None else str(run.exit)
        unchanged = "yes" if run.tree_unchanged else ("no (rewritten)" if run.command in WRITES else "no")
        lines.append(
            f"| {run.case} | `{run.command}` | {run.jobs} | {exit_text} | {run.seconds:.1f} | "
            f"{'yes' if run.hostile_unchanged else 'NO'} | {unchanged} | {run.problem or '-'} |"
        )
    failed = sum(1 for run in runs if run.problem)
    lines.append("")
    lines.append(f"{len(runs)} runs, {failed} with a problem")
    return "\n".join(lines)


def main(scale: str, jobs: list[int], output_format: str, timeout: float, python: str) -> int:
    runs = run_all(scale, jobs, timeout, python)
    if output_format == "json":
        print(json.dumps([asdict(run) for run in runs], indent=2))
    else:
        print(render(runs))
    return 1 if any(run.problem for run in runs) else 0
