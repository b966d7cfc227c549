"""Every runnable fixture's rewrite runs on the MindSpore it is written for.

An upgrade's input and output both run on the target's runtime (2.8 output on 2.8, 1.9 on 1.9). A
downgrade's input, written for the newest MindSpore, runs on the newest runtime here, and its
output on the target's real old release (1.7, 1.8, 1.9): 2.10 proves nothing about 1.7. Both
modes, with the fixtures' BatchNorm-and-dropout networks. Where a runtime cannot be had on this
machine (`ms-migrate runtime install X.Y` says why) the cases that need it skip, saying which.

Across two releases the fixtures use a BatchNorm that every release computes alike (1.x and 2.x
update the moving variance differently), and the numbers are compared with verify's float32
tolerance: kernels of two releases may round the last bit differently, nothing more.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from ms_migrate import runtimes
from ms_migrate.facts.versions import Version
from tests import script_runs
from tests.fixture_cases import FIXTURES, FixtureCase, fixture_cases
from tests.test_equivalence import flatten, structure

pytestmark = pytest.mark.mindspore

REPOSITORY = Path(__file__).resolve().parents[1]
MODES = ("pynative", "graph")
RTOL, ATOL = 1e-5, 1e-6  # verify's defaults: float32 rounding of two releases' kernels
SAME_RUNTIME_RTOL, SAME_RUNTIME_ATOL = 1e-6, 1e-7  # test_equivalence's, for one release
AT_HAND = runtimes.available()
NEWEST = max(AT_HAND) if AT_HAND else None
RUNNABLE = [case for case in fixture_cases() if case.runnable]


def runtime_for(version: Version) -> runtimes.Runtime:
    """The runtime of exactly ``version``, or a skip saying why this machine has none."""
    runtime = AT_HAND.get(version)
    if runtime is None:
        problem = runtimes.obstacle(version) or f"not installed (ms-migrate runtime install {version})"
        pytest.skip(f"no MindSpore {version} runtime here: {problem}")
    return runtime


def target_runtime(case: FixtureCase) -> runtimes.Runtime:
    """The target's runtime; for targets ms-migrate cannot make (2.0-2.6), the nearest it can."""
    target = Version.parse(case.target)
    if target in runtimes.RECIPES:
        return runtime_for(target)
    made = {version: runtimes.Runtime(version, "", "", "") for version in runtimes.RECIPES}
    nearest = runtimes.nearest(target, made)
    assert nearest is not None, f"no runtime near {target}"
    return runtime_for(nearest.version)


class RunFailed(AssertionError):
    """A script exited non-zero on a runtime; the message ends with its error output."""


def run_on(
    runtime: runtimes.Runtime,
    script: Path,
    mode: str,
    workdir: Path,
    portable: bool,
    mode_variable: str = "MS_MIGRATE_MODE",
) -> dict:
    chosen = {
        mode_variable: mode,
        "PYTHONPATH": os.pathsep.join([str(FIXTURES), str(REPOSITORY)]),
        "GLOG_v": "3",
        **({"MS_MIGRATE_PORTABLE": "1"} if portable else {}),
    }
    env = {**os.environ, **chosen}
    env.pop("MS_MIGRATE_MS_FUNCTION_AS_JIT", None)  # the real release runs the real spelling
    command = [runtime.python, str(script)]

    def run() -> dict:
        completed = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
        if completed.returncode != 0:
            raise RunFailed(f"{script.name} ({mode}) failed on {runtime.label}:\n{completed.stderr[-3000:]}")
        json_lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
        assert json_lines, f"{script.name} printed no numbers on {runtime.label}:\n{completed.stdout[-2000:]}"
        return json.loads(json_lines[-1])

    return script_runs.once(command, chosen, script, workdir, run)


def _leaves(value: object, path: str = "") -> list[tuple[str, list[float]]]:
    """Each reported array (a list of numbers) with where it sits in the report."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key], f"{path}/{key}")]
    if isinstance(value, list) and value and isinstance(value[0], (list, dict)):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, f"{path}[{index}]")]
    return [(path, flatten(value))]


def _group(path: str) -> str:
    """What a leaf was computed with: one step's outputs together (`/outputs[2]`), else itself."""
    if path.startswith("/outputs["):
        return path[: path.index("]") + 1]
    return path


def assert_same_numbers(before: dict, after: dict, rtol: float, atol: float, where: str, split: bool) -> None:
    """Same structure, and every number within tolerance. Across two releases the absolute
    tolerance scales with the largest value computed alongside (one step's outputs together):
    a gradient that is zero but for rounding (a bias under BatchNorm) is rounding of the other
    gradients' size, which two releases' kernels round differently."""
    assert structure(before) == structure(after), f"{where}: the output's structure changed"
    assert flatten(before)
    leaves = list(zip(_leaves(before), _leaves(after)))
    scales: dict[str, float] = {}
    for (path, left), _ in leaves:
        group = _group(path)
        scales[group] = max([scales.get(group, 0.0), *(abs(number) for number in left)])
    for (path, left), (_, right) in leaves:
        if split and path.endswith("global_step"):
            continue  # 1.9's optimizers leave it at 0 where 1.7 and 2.x count steps (measured)
        scale = scales[_group(path)] if split else 0.0
        np.testing.assert_allclose(
            np.array(right), np.array(left), rtol=rtol, atol=atol + rtol * scale, err_msg=f"{where}: {path}"
        )


def _case_runtimes(case: FixtureCase) -> tuple[runtimes.Runtime, runtimes.Runtime]:
    """(BEFORE's runtime, AFTER's) as `verify` chooses them for this case's command."""
    after = target_runtime(case)
    if case.command == "downgrade":
        if NEWEST is None:
            pytest.skip("no MindSpore runtime here at all")
        return AT_HAND[NEWEST], after
    return after, after


CASES = [case for case in RUNNABLE if case.command == "downgrade" or case.target != "2.10"]


def test_the_suite_runs_every_target_it_names() -> None:
    """The fixtures name targets of both directions below 2.10: this file is not empty by accident."""
    targets = {(case.command, case.target) for case in CASES}
    assert {("downgrade", "1.7"), ("downgrade", "1.9"), ("upgrade", "2.8")} <= targets


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_rewrite_runs_on_its_target(case: FixtureCase, mode: str, tmp_path: Path) -> None:
    assert case.expected is not None
    before_runtime, after_runtime = _case_runtimes(case)
    split = before_runtime.version != after_runtime.version
    after = tmp_path / case.source.name
    after.write_bytes(case.expected.read_bytes())
    before_numbers = run_on(before_runtime, case.source, mode, tmp_path, portable=split)
    after_numbers = run_on(after_runtime, after, mode, tmp_path, portable=split)
    where = f"{case.id} ({mode}): BEFORE on {before_runtime.label}, AFTER on {after_runtime.label}"
    rtol, atol = (RTOL, ATOL) if split else (SAME_RUNTIME_RTOL, SAME_RUNTIME_ATOL)
    assert_same_numbers(before_numbers, after_numbers, rtol, atol, where, split)


def test_a_wrong_downgrade_fails_on_the_old_runtime(tmp_path: Path) -> None:
    """Control: a stop_gradient of a tuple (what the has_aux downgrade once wrote) runs on 2.10
    and fails on a real 1.7, and this file's runner says so."""
    runtime = runtime_for(Version(1, 7))
    script = tmp_path / "tuple_stop_gradient.py"
    script.write_text(
        "import mindspore as ms, numpy as np\n"
        "import _harness\n"
        "_harness.set_mode()\n"
        "x = ms.Tensor(np.ones(2, np.float32))\n"
        "print(ms.ops.stop_gradient((x, x)))\n",
        encoding="utf-8",
    )
    with pytest.raises(AssertionError, match=r"failed on MindSpore 1\.7"):
        run_on(runtime, script, "pynative", tmp_path, portable=True)


def test_a_runtime_that_cannot_be_had_says_why() -> None:
    problem: Optional[str] = runtimes.obstacle(Version(1, 6))
    assert problem is not None and "1.6" in problem


LEGACY = [case for case in RUNNABLE if case.command == "upgrade" and case.source.parent.name == "ms101"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", LEGACY, ids=[case.id for case in LEGACY])
def test_round_trip_through_2_0_runs_on_1_7(case: FixtureCase, mode: str, tmp_path: Path) -> None:
    """A legacy train step upgraded for 2.0 and downgraded for 1.7 runs on a real 1.7 to the
    legacy original's numbers there; a site the downgrade cannot bring back is left alone with a
    reason code, and the case skips saying which."""
    from ms_migrate.core.codes import all_reasons
    from ms_migrate.core.engine import downgrade_text, migrate_text

    runtime = runtime_for(Version(1, 7))
    legacy = case.source.read_text(encoding="utf-8")
    upgraded = migrate_text(legacy, Version(2, 0))
    back = downgrade_text(upgraded.text, Version(1, 7))
    left = sorted({item.code for item in back.diagnostics if item.code in all_reasons()})
    if "value_and_grad" in back.text or "mindspore.grad" in back.text or "ms.grad(" in back.text:
        assert left, f"{case.id}: the downgrade kept a 2.x call without saying why"
        pytest.skip(f"{case.id}: the downgrade to 1.7 leaves a site alone ({', '.join(left)})")
    script = tmp_path / case.source.name
    script.write_text(back.text, encoding="utf-8")
    try:
        original = run_on(runtime, case.source, mode, tmp_path, portable=False)
    except RunFailed as error:  # the fixture's own code, not the rewrite: say so
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        last = next((line for line in reversed(lines) if "Error" in line), lines[-1])
        pytest.skip(f"{case.id}: the legacy original itself does not run on {runtime.label}: {last[:200]}")
    round_trip = run_on(runtime, script, mode, tmp_path, portable=False)
    where = f"{case.id} ({mode}): legacy and round trip on {runtime.label}"
    assert_same_numbers(original, round_trip, SAME_RUNTIME_RTOL, SAME_RUNTIME_ATOL, where, split=False)
