"""Runnable fixtures execute before and after the rewrite on real MindSpore (CPU), in PYNATIVE and
GRAPH mode, and must print the same losses, parameters and optimizer state."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import script_runs
from tests.fixture_cases import FIXTURES, FixtureCase, fixture_cases

RUNNABLE = [case for case in fixture_cases() if case.runnable]
MODES = ("pynative", "graph")
# float32 training over a few steps; the rewrites are exact, so differences are rounding at most.
RTOL, ATOL = 1e-6, 1e-7

pytestmark = pytest.mark.mindspore


def run_fixture(script: Path, mode: str, workdir: Path, ms_function_as_jit: bool = False) -> dict:
    """The JSON numbers ``script`` prints. ``ms_function_as_jit``: a downgrade's output may spell
    jit `ms_function` (MS303), which 2.10 lacks; _harness then makes it 2.10's jit, so the body
    the downgrade wrote runs here (ms_function's own 1.x behaviour is not what is compared)."""
    chosen = {
        "MS_MIGRATE_MODE": mode,
        **({"MS_MIGRATE_MS_FUNCTION_AS_JIT": "1"} if ms_function_as_jit else {}),
        "PYTHONPATH": str(FIXTURES),
        "GLOG_v": "3",  # MindSpore's C++ logger: errors only
    }
    command = [sys.executable, str(script)]

    def run() -> dict:
        completed = subprocess.run(
            command, cwd=workdir, env={**os.environ, **chosen}, capture_output=True, text=True, timeout=600
        )
        assert completed.returncode == 0, f"{script.name} ({mode}) failed:\n{completed.stderr[-3000:]}"
        json_lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
        assert json_lines, f"{script.name} printed no numbers:\n{completed.stdout[-2000:]}"
        return json.loads(json_lines[-1])

    return script_runs.once(command, chosen, script, workdir, run)


def flatten(value) -> list[float]:
    if isinstance(value, dict):
        return [number for key in sorted(value) for number in flatten(value[key])]
    if isinstance(value, list):
        return [number for item in value for number in flatten(item)]
    return [float(value)]


def structure(value):
    if isinstance(value, dict):
        return {key: structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [structure(item) for item in value]
    return 0


def test_runnable_fixtures_exist() -> None:
    assert len(RUNNABLE) >= 10


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", RUNNABLE, ids=[case.id for case in RUNNABLE])
def test_rewrite_prints_same_numbers(case: FixtureCase, mode: str, tmp_path: Path) -> None:
    assert case.expected is not None
    if case.command == "downgrade" and _lacked_here(case.expected):
        pytest.skip("the downgrade names what this MindSpore lacks: test_target_runtimes runs it on 1.x")
    after = tmp_path / case.source.name
    after.write_bytes(case.expected.read_bytes())
    before_numbers = run_fixture(case.source, mode, tmp_path)
    after_numbers = run_fixture(after, mode, tmp_path, ms_function_as_jit=case.command == "downgrade")
    # Same nesting too: a bare tensor where the legacy code returned a 1-tuple is a bug.
    assert structure(before_numbers) == structure(after_numbers)
    left, right = np.array(flatten(before_numbers)), np.array(flatten(after_numbers))
    assert left.shape == right.shape and left.size > 0
    np.testing.assert_allclose(right, left, rtol=RTOL, atol=ATOL)


def _lacked_here(script: Path) -> bool:
    """Whether ``script`` names a module or name 2.10 lacks (MS211), other than the ms_function
    that _harness maps to jit: 1.7's c_transforms."""
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    found = migrate_text(script.read_text(encoding="utf-8"), Version(2, 10)).diagnostics
    return any(item.code == "MS211" and "ms_function`" not in item.message for item in found)


DOWNGRADED = [case for case in RUNNABLE if case.command == "downgrade"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", DOWNGRADED, ids=[case.id for case in DOWNGRADED])
def test_upgrading_a_downgrade_prints_the_original_numbers(
    case: FixtureCase, mode: str, tmp_path: Path
) -> None:
    """The round trip: `upgrade` of what `downgrade` wrote runs to the numbers of the original.

    Below 1.8 the downgrade writes GradOperation Cells, which MS101 turns back into
    value_and_grad; at 1.8-1.10 it only respells, and upgrading to 2.10 leaves that as it is.
    """
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    assert case.expected is not None
    upgraded = migrate_text(case.expected.read_text(encoding="utf-8"), Version(2, 10))
    if Version.parse(case.target) < Version(1, 8):
        assert upgraded.fixed, "upgrade left the downgraded GradOperation forms as they were"
    script = tmp_path / case.source.name
    script.write_text(upgraded.text, encoding="utf-8")
    original = run_fixture(case.source, mode, tmp_path)
    round_trip = run_fixture(script, mode, tmp_path, ms_function_as_jit=True)
    assert structure(original) == structure(round_trip)
    np.testing.assert_allclose(
        np.array(flatten(round_trip)), np.array(flatten(original)), rtol=RTOL, atol=ATOL
    )


UPGRADED = [case for case in RUNNABLE if case.command == "upgrade"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", UPGRADED, ids=[case.id for case in UPGRADED])
def test_downgrading_an_upgrade_prints_the_original_numbers(
    case: FixtureCase, mode: str, tmp_path: Path
) -> None:
    """The other round trip: `downgrade --target-version 1.9` of what `upgrade` wrote runs to the
    numbers of the legacy original (1.9 spells the API `mindspore.ops.*`, which 2.10 still has,
    and jit `ms_function`, which 2.10 lacks: run_fixture maps it to 2.10's jit). A downgrade that
    only respells the functional API runs here what the upgrade ran: it is skipped, saying so."""
    from ms_migrate.core.engine import downgrade_text
    from ms_migrate.facts.versions import Version

    assert case.expected is not None
    upgraded = case.expected.read_text(encoding="utf-8")
    downgraded = downgrade_text(upgraded, Version(1, 9))
    if downgraded.text == upgraded:
        pytest.skip("nothing to downgrade: the upgrade wrote no top-level mindspore.grad/value_and_grad")
    if _as_upgraded(downgraded.text) == upgraded and _ops_spellings_are_the_same_functions():
        pytest.skip(
            "the downgrade only respelled mindspore.grad/value_and_grad as mindspore.ops.*, the same "
            "functions on this runtime: its numbers are the upgrade's, which "
            "test_rewrite_prints_same_numbers compares (the downgrade fixtures run on the real 1.9 "
            "in test_target_runtimes)"
        )
    script = tmp_path / case.source.name
    script.write_text(downgraded.text, encoding="utf-8")
    original = run_fixture(case.source, mode, tmp_path)
    round_trip = run_fixture(script, mode, tmp_path, ms_function_as_jit=True)
    assert structure(original) == structure(round_trip)
    np.testing.assert_allclose(
        np.array(flatten(round_trip)), np.array(flatten(original)), rtol=RTOL, atol=ATOL
    )


def _as_upgraded(downgraded: str) -> str:
    """``downgraded`` with 1.8-1.10's spellings of the functional API put back as 2.x writes them."""
    respelled = re.sub(r"\.ops\.(value_and_grad|grad)\(", r".\1(", downgraded)
    return respelled.replace("from mindspore.ops import", "from mindspore import")


@functools.cache
def _ops_spellings_are_the_same_functions() -> bool:
    """Whether this runtime's mindspore.ops.value_and_grad and .grad are mindspore's own (asked of
    the runtime, in a process of its own: the test process does not import MindSpore)."""
    asked = (
        "import mindspore as ms; print(ms.ops.value_and_grad is ms.value_and_grad and ms.ops.grad is ms.grad)"
    )
    completed = subprocess.run([sys.executable, "-c", asked], capture_output=True, text=True, timeout=300)
    return completed.stdout.strip().splitlines()[-1:] == ["True"]


def test_comparison_catches_a_subtly_wrong_rewrite(tmp_path: Path) -> None:
    """Control: the same harness must fail when the rewritten code computes different numbers."""
    case = next(case for case in RUNNABLE if case.source.stem == "cell_get_by_list")
    assert case.expected is not None
    wrong = case.expected.read_text().replace("(data, label)", "(data * 1.001, label)")
    assert wrong != case.expected.read_text()
    script = tmp_path / "wrong.py"
    script.write_text(wrong)
    before = np.array(flatten(run_fixture(case.source, "pynative", tmp_path)))
    after = np.array(flatten(run_fixture(script, "pynative", tmp_path)))
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(after, before, rtol=RTOL, atol=ATOL)


def test_every_converted_fixture_verifies_with_the_automatic_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the runnable fixtures: `ms-migrate verify` builds a harness for each changed Cell
    and function of every converted fixture and runs it on every probe variant (dense, BatchNorm
    and dropout with and without set_grad(), *inputs), in both modes.

    None may differ, but where the fixture's own network has a fixed signature that the rewrite
    relied on: there, and only in GRAPH mode with the *inputs probe (a network of another
    signature), verify shows it. (A step whose network's class is unknown and may take *args is
    left alone, MSR019.) Each file must have a site proven equal, except those whose code the
    probe cannot drive or needs a project factory."""
    from ms_migrate import runtimes
    from ms_migrate.facts.versions import Version
    from ms_migrate.files import sources
    from ms_migrate.verify import Verdict, VerifyOptions, verify_many

    # Its scale_sense is given a loss-scale Cell, which it casts as a tensor. (The float-status
    # operators have CPU stand-ins: forward_with_side_effect_between runs with them, proven.)
    probe_cannot_drive = {"ascend_overflow_status_2_8"}
    # No probe fits: the Cell sizes its sens tuple with len() of the network's output, or takes
    # two networks and two optimizers (a GAN); their own scripts run in
    # test_rewrite_prints_same_numbers. (A TrainOneStepWithLossScaleCell subclass gets a loss-scale
    # update cell for its scale_sense, so inherited_loss_scale_cell_2_8 is proven.) A downgrade
    # fixture's function of a model, an optimizer and data is given probes for them, run before on
    # 2.10 and after on the old release (quickstart_has_aux_1_7 and _1_9, jit_train_step_1_7 and
    # _1_9, jit_and_value_and_grad_one_import_1_9 are proven so); the rest below are not.
    needs_factory = {
        "tuple_sens_by_name",
        "gan_two_applications",
        "from_import_grad_1_8",
        # Below 1.8 (MS301, MS302): functions of a model and data, a module-level loop, a trainer.
        "from_import_value_and_grad_1_7",
        "module_level_1_7",
        "trainer_held_1_7",
        "grad_forms_1_7",
        # MS102: forward functions that return the backbone's logits next to the loss read
        # `model.backbone` and `model.loss`, which the probe's loss network does not have.
        "grad_weights_optimizer",
        "cell_batchnorm_grad",
        "cell_batchnorm_value_and_grad",
        # The API page's example multiplies three tensors of one shape; the probe seeds features
        # and a label of different shapes. grad_position_verified_1_7 is the verified one.
        "grad_position_api_example_1_7",
        "grad_position_api_example_1_9",
        # sens_param below 2.8: the step takes its sens as an extra argument (a loss-scale Cell, a
        # loop over a model and data), which the probe's (network, optimizer) call never passes.
        # (loss_scale_sens_1_7's step takes its scale in __init__, which verify names by the
        # parameter, so it is proven.)
        "grad_sens_1_7",
        "grad_sens_1_9",
        "grad_sens_2_7",
        # Functions of a model, an optimizer and data (a GAN's two networks; a multi-task head).
        "trainable_params_list_1_9",
        "has_aux_nested_output_1_7",
        # Train steps defined inside the functions that build them: no top-level site a probe drives.
        "same_named_steps_one_takes_varargs_2_8",
    }
    # The steps' network is the file's Network(x, y), differentiated directly (their own scripts
    # run the same numbers in test_rewrite_prints_same_numbers); the *inputs probe swaps in a
    # network whose construct takes *inputs, which GRAPH mode cannot differentiate so.
    fixed_signature = {
        "loss_scale_1024_target_2_8",
        "optimizer_parameters_star_inputs",
        "sens_in_star_args_2_8",
    }
    # Only jit, a dataset pipeline or a release's meaning respelled (MS303, MS211, MS220-MS222): no
    # train step or grad function for verify to run (model_train_1x trains through Model.train;
    # test_whole_scripts runs it on 1.10 and, upgraded, on 2.10).
    no_grad_site = {
        "model_train_1x",
        "profiler_output_path",
        "jit_imported_1_9",
        "jit_dynamic_shape_1_7",
        "jit_dynamic_shape_1_9",
        "ms_function_spellings",
        "c_transforms_pipeline",
        "checkparam_validator",
        # Downgrades of a release's meaning and of moved names (MS221, MS305, MS211): nothing differentiated.
        "load_param_pair_1_10",
        "set_device_1_10",
        "dataset_transforms_1_7",
        # Only its import is respelled (MS211, a release fix proven by its pair): nothing that is
        # differentiated changed. The whole file runs on the real 2.7 in test_target_runtimes.
        "graph_api_jit_2_7",
    }
    cases = [case for case in fixture_cases() if case.expected is not None]
    # Each side runs on the release it is written for: an upgrade's two on the newest here, a
    # downgrade's BEFORE there and its AFTER on the target's runtime (ms_function has left 2.10).
    here = runtimes.available()
    by_runtime: dict[tuple[str, str], list[tuple[Path, str, str]]] = {}
    for case in cases:
        pair = (case.source, sources.read_source(case.source).text, sources.read_source(case.expected).text)
        sides = (sys.executable, sys.executable)
        if case.source.parent.name == "scripts":  # whole 1.x scripts: BEFORE on the last 1.x
            sides = (runtimes.for_rewrite(Version(1, 10), False, here).after.python, sys.executable)
        elif case.command == "downgrade":
            plan = runtimes.for_rewrite(Version.parse(case.target), True, here)
            sides = (plan.before.python, plan.after.python)
        by_runtime.setdefault(sides, []).append(pair)
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES))  # runnable fixtures import _harness
    reports = [
        report
        for (before, after), pairs in by_runtime.items()
        for report in verify_many(pairs, VerifyOptions(workers=2, python=after, before_python=before))
    ]
    rows = [(report.path.stem, row) for report in reports for row in report.results]
    differing = [(stem, row) for stem, row in rows if row.verdict is Verdict.DIFFERS]
    unexplained = [
        (stem, row)
        for stem, row in differing
        if not (stem in fixed_signature and row.mode == "graph" and "*inputs" in row.reason)
    ]
    assert not unexplained, unexplained
    proven = {stem for stem, row in rows if row.verdict is Verdict.EQUAL}
    unproven = probe_cannot_drive | needs_factory | no_grad_site
    assert proven == {case.source.stem for case in cases} - unproven, rows
