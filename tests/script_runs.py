"""The numbers a script printed on a runtime, run once per test session.

Several tests run the very same script on the same runtime in the same mode: a fixture's legacy
original is the BEFORE of its rewrite and the reference of both round trips. A MindSpore run costs
seconds (the import, the graph compile), so a run another test already made is read back here.
The key is everything the run depends on: the command, the environment the test sets, and the
bytes of the script, of the Python files beside it and of the fixtures' harness. Only a run that
succeeded is kept; one that fails runs again, and says why, in every test that asks.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Optional

from tests.fixture_cases import FIXTURES

# The session's base folder: pytest-N, shared by the xdist workers (each works in popen-gwK).
_SESSION_FOLDER = re.compile(r"pytest-\d+")


def once(
    command: Sequence[str], env: Mapping[str, str], script: Path, workdir: Path, run: Callable[[], dict]
) -> dict:
    """``run()``'s numbers, or those an earlier identical run of this session printed."""
    folder = _runs_folder(workdir)
    if folder is None:
        return run()
    kept = folder / f"{_key(command, env, script)}.json"
    try:
        return json.loads(kept.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    numbers = run()
    folder.mkdir(exist_ok=True)
    partial = kept.with_name(f"{kept.name}.{os.getpid()}")
    partial.write_text(json.dumps(numbers), encoding="utf-8")
    os.replace(partial, kept)  # a worker reading it sees the whole file or none
    return numbers


def _runs_folder(workdir: Path) -> Optional[Path]:
    for folder in workdir.resolve().parents:
        if _SESSION_FOLDER.fullmatch(folder.name):
            return folder / "script-runs"
    return None


def _key(command: Sequence[str], env: Mapping[str, str], script: Path) -> str:
    digest = hashlib.sha256(json.dumps([list(command), sorted(env.items())]).encode("utf-8"))
    beside = sorted(path for path in script.parent.glob("*.py") if path != script)
    for path in [script, *beside, FIXTURES / "_harness.py"]:
        digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
