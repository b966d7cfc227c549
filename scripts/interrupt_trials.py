"""Interrupt `ms-migrate upgrade -j N` over a real tree, again and again, and check what is left.

    python scripts/interrupt_trials.py [--kills 20] [--interrupts 5] [-j 2] [--target-version 2.8] TREE

TREE is copied once and upgraded once, uninterrupted, for the reference: each file's old bytes
and new bytes. Then, on a fresh copy per trial, the upgrade starts and is ended at a random
moment while it writes: by SIGKILL to the whole process group (``kill -9``), or by SIGINT to the
parent (Ctrl-C). After each trial every file must be exactly its old or its new bytes, no
temporary file of a write may be left once the next run has cleaned up, and that next run must
finish (exit 0 or 2, as uninterrupted) and leave the tree exactly as the reference left it.
Prints one line per trial and a summary; exits 1 if any trial failed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ms_migrate.files.sources import _BACKUP, _TEMPORARY


def _leftover(name: str) -> bool:
    return bool(_TEMPORARY.match(name) or _BACKUP.match(name))


def _digests(root: Path) -> dict[str, str]:
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _copy(tree: Path, destination: Path) -> None:
    shutil.copytree(tree, destination, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def _upgrade(python: str, root: Path, jobs: int, target: str, cache: Path) -> list[str]:
    return [
        python,
        "-m",
        "ms_migrate",
        "upgrade",
        "-q",
        "-j",
        str(jobs),
        "--target-version",
        target,
        str(root),
    ]


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "MS_MIGRATE_CACHE_DIR": str(cache)}


def trial(
    kind: str,
    delay: float,
    tree: Path,
    scratch: Path,
    old: dict[str, str],
    new: dict[str, str],
    options: argparse.Namespace,
) -> Optional[str]:
    """None if the trial left everything as it must, else what went wrong."""
    root = scratch / "tree"
    shutil.rmtree(root, ignore_errors=True)
    _copy(tree, root)
    cache = scratch / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    command = _upgrade(options.python, root, options.jobs, options.target_version, cache)
    process = subprocess.Popen(
        command,
        env=_environment(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    time.sleep(delay)
    if kind == "kill -9":
        os.killpg(process.pid, signal.SIGKILL)
    else:
        process.send_signal(signal.SIGINT)
    try:
        code = process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return "the run did not stop within 120 s of the signal"
    time.sleep(0.5)  # the workers die with the parent (PR_SET_PDEATHSIG); give the kernel a moment
    if kind == "Ctrl-C" and code not in (130, -signal.SIGINT, 0, 2):
        return f"Ctrl-C ended it with status {code}"
    after = _digests(root)
    for name, digest in after.items():
        if _leftover(Path(name).name):
            continue  # left by the cut-off write: the next run must remove it
        if digest not in (old.get(name), new.get(name)):
            return f"{name}: neither its old nor its new bytes"
    missing = sorted(set(old) - set(after))
    if missing:
        return f"{missing[0]}: gone"
    again = subprocess.run(command, env=_environment(cache), capture_output=True, text=True, timeout=3600)
    if again.returncode not in (0, 2) or "Traceback" in again.stderr:
        return f"the next run exited {again.returncode}: {again.stderr.strip()[-300:]}"
    final = _digests(root)
    left = sorted(name for name in final if _leftover(Path(name).name))
    if left:
        return f"left behind after the next run: {left[0]}"
    if final != new:
        changed = sorted(name for name in set(final) | set(new) if final.get(name) != new.get(name))
        return f"the next run's tree differs from the reference in {len(changed)} files, e.g. {changed[0]}"
    return None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="interrupt_trials.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--interrupts", type=int, default=5)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--target-version", default="2.8")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args(argv)
    randomness = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="ms-migrate-interrupt-") as folder:
        scratch = Path(folder)
        reference = scratch / "reference"
        _copy(options.tree, reference)
        old = _digests(reference)
        cache = scratch / "reference-cache"
        started = time.monotonic()
        done = subprocess.run(
            _upgrade(options.python, reference, options.jobs, options.target_version, cache),
            env=_environment(cache),
            capture_output=True,
            text=True,
        )
        duration = time.monotonic() - started
        new = _digests(reference)
        changed = sum(1 for name in new if new[name] != old.get(name))
        print(f"reference: exit {done.returncode}, {changed} files changed, {duration:.1f} s")
        failures = 0
        kinds = ["kill -9"] * options.kills + ["Ctrl-C"] * options.interrupts
        for number, kind in enumerate(kinds, 1):
            delay = randomness.uniform(0.5, max(duration, 1.0))
            problem = trial(kind, delay, options.tree, scratch, old, new, options)
            failures += problem is not None
            verdict = problem or "every file old or new; next run clean"
            print(f"trial {number:2} {kind:8} after {delay:5.1f} s: {verdict}")
        print(f"{len(kinds)} trials, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
