"""Whole 1.x training scripts are the acceptance test: each under tests/fixtures/scripts/ runs on a
real MindSpore 1.10; `upgrade --target-version 2.10` of it (its `.expected.py`, which
test_fixtures holds to be what upgrade writes) runs on 2.10, in both modes, and prints the same
numbers: the losses of every step, the parameters and optimizer state after training, and the
evaluation of a network reloaded from the checkpoint the script saved. What depends on BatchNorm's
moving variance (1.x updates it from the biased batch variance, 2.x from the unbiased one) a script
prints under "within_one_release": it is compared where both sides run one major release."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ms_migrate.facts.versions import Version
from tests.fixture_cases import FIXTURES, fixture_cases
from tests.test_equivalence import structure
from tests.test_target_runtimes import (
    ATOL,
    MODES,
    RTOL,
    RunFailed,
    assert_same_numbers,
    run_on,
    runtime_for,
)

pytestmark = pytest.mark.mindspore

SCRIPTS = [case for case in fixture_cases() if case.source.parent == FIXTURES / "scripts"]


WITHIN_ONE_RELEASE = "within_one_release"


def test_there_are_whole_scripts() -> None:
    assert SCRIPTS and all(case.expected is not None for case in SCRIPTS)
    assert any(WITHIN_ONE_RELEASE in case.source.read_text(encoding="utf-8") for case in SCRIPTS)


def _across_major_releases(before: dict, after: dict) -> tuple[dict, dict]:
    """The two reports less what only one major release can compare, which both must print alike."""
    before, after = dict(before), dict(after)
    kept = before.pop(WITHIN_ONE_RELEASE, None), after.pop(WITHIN_ONE_RELEASE, None)
    assert structure(kept[0]) == structure(kept[1])
    return before, after


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", SCRIPTS, ids=[case.id for case in SCRIPTS])
def test_an_upgraded_1x_script_runs_on_2_10_with_its_1_10_numbers(case, mode: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert case.expected is not None
    old, new = runtime_for(Version(1, 10)), runtime_for(Version.parse(case.target))
    before = run_on(old, case.source, mode, tmp_path, portable=False)
    after = run_on(new, case.expected, mode, tmp_path, portable=False)
    before, after = _across_major_releases(before, after)
    assert_same_numbers(before, after, RTOL, ATOL, f"{case.id} ({mode})", split=True)
    # As it is, the script does not run on the target (a name 2.10 lacks, or a meaning that
    # changed: load_param_into_net's pair is always true), or runs and prints other numbers (its
    # layers' initialisers changed): the upgrade is what makes it print 1.10's.
    try:
        as_it_is = run_on(new, case.source, mode, tmp_path, portable=False)
    except RunFailed:
        return
    as_it_is.pop(WITHIN_ONE_RELEASE, None)
    with pytest.raises(AssertionError):
        assert_same_numbers(before, as_it_is, RTOL, ATOL, case.id, split=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", SCRIPTS, ids=[case.id for case in SCRIPTS])
def test_the_downgrade_of_an_upgraded_script_runs_on_1_10_with_its_numbers(  # type: ignore[no-untyped-def]
    case, mode: str, tmp_path: Path
) -> None:
    """The round trip: `downgrade --target-version 1.10` of what upgrade wrote runs on the real
    1.10 and prints what the original printed there. Before MS305 and the downgrades of MS220 and
    MS221 it failed on `ms.set_device`, on `nn.Dropout(p=0.0)` and on unpacking the list
    load_param_into_net returns."""
    from ms_migrate.core.engine import downgrade_text

    assert case.expected is not None
    old = runtime_for(Version(1, 10))
    downgraded = tmp_path / case.source.name
    result = downgrade_text(case.expected.read_text(encoding="utf-8"), Version(1, 10))
    assert result.fixed, "the downgrade changed nothing"
    downgraded.write_text(result.text, encoding="utf-8")
    before = run_on(old, case.source, mode, tmp_path, portable=False)
    after = run_on(old, downgraded, mode, tmp_path, portable=False)
    assert_same_numbers(before, after, RTOL, ATOL, f"{case.id} downgraded ({mode})", split=True)


# The scripts whose pipelines use the dataset ops that 1.7 has only in c_transforms.
PIPELINES = [case for case in SCRIPTS if b"mindspore.dataset.transforms" in case.source.read_bytes()]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", PIPELINES, ids=[case.id for case in PIPELINES])
def test_the_downgrade_of_an_upgraded_pipeline_runs_on_1_7_with_its_numbers(  # type: ignore[no-untyped-def]
    case, mode: str, tmp_path: Path
) -> None:
    """Down to 1.7, the oldest release here: the unified `vision` and `transforms` ops the upgrade
    wrote go back to c_transforms (MS211), and the script prints on the real 1.7 what the
    original printed on 1.10. Before that downgrade it stopped on `transforms.TypeCast`."""
    from ms_migrate.core.engine import downgrade_text

    assert PIPELINES and case.expected is not None
    downgraded = tmp_path / case.source.name
    result = downgrade_text(case.expected.read_text(encoding="utf-8"), Version(1, 7))
    assert not [item for item in result.diagnostics if item.code == "MS211" and item.fix is None]
    downgraded.write_text(result.text, encoding="utf-8")
    before = run_on(runtime_for(Version(1, 10)), case.source, mode, tmp_path, portable=False)
    after = run_on(runtime_for(Version(1, 7)), downgraded, mode, tmp_path, portable=False)
    assert_same_numbers(before, after, RTOL, ATOL, f"{case.id} downgraded to 1.7 ({mode})", split=True)


EXAMPLE = FIXTURES.parent.parent / "examples" / "legacy_project"


@pytest.mark.parametrize("mode", MODES)
def test_the_readme_example_is_a_1x_script_that_upgrade_makes_run_on_2_10(mode: str, tmp_path: Path) -> None:
    """The README's first example: the bundled project's train.py runs on 1.10, fails on 2.10 as it
    is, and after `ms-migrate upgrade` of the project (its requirements.txt pins 2.10) prints its
    1.10 numbers on 2.10."""
    project = tmp_path / "legacy_project"
    shutil.copytree(EXAMPLE, project)
    script = project / "src" / "train.py"
    old, new = runtime_for(Version(1, 10)), runtime_for(Version(2, 10))
    before = run_on(old, script, mode, tmp_path, portable=False, mode_variable="MS_MODE")
    with pytest.raises(RunFailed, match="c_transforms"):
        run_on(new, script, mode, tmp_path, portable=False, mode_variable="MS_MODE")

    upgraded = subprocess.run(
        [sys.executable, "-m", "ms_migrate", "upgrade", str(project)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    # Written; what remains is MS210's deprecations with no replacement (exit 1, as ruff --fix).
    assert upgraded.returncode == 1 and " findings remaining" in upgraded.stderr, upgraded.stderr
    assert "target MindSpore 2.10" in upgraded.stderr
    after = run_on(new, script, mode, tmp_path, portable=False, mode_variable="MS_MODE")
    assert_same_numbers(before, after, RTOL, ATOL, f"example train.py ({mode})", split=True)
