"""Whole 1.x training scripts are the acceptance test: each under tests/fixtures/scripts/ runs on a
real MindSpore 1.10; `upgrade --target-version 2.10` of it (its `.expected.py`, which
test_fixtures holds to be what upgrade writes) runs on 2.10, in both modes, and prints the same
numbers: the losses of every step, the parameters and optimizer state after training, and the
evaluation of a network reloaded from the checkpoint the script saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from ms_migrate.versions import Version
from tests.fixture_cases import FIXTURES, fixture_cases
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


def test_there_are_whole_scripts() -> None:
    assert SCRIPTS and all(case.expected is not None for case in SCRIPTS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", SCRIPTS, ids=[case.id for case in SCRIPTS])
def test_an_upgraded_1x_script_runs_on_2_10_with_its_1_10_numbers(case, mode: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert case.expected is not None
    old, new = runtime_for(Version(1, 10)), runtime_for(Version.parse(case.target))
    before = run_on(old, case.source, mode, tmp_path, portable=False)
    after = run_on(new, case.expected, mode, tmp_path, portable=False)
    assert_same_numbers(before, after, RTOL, ATOL, f"{case.id} ({mode})", split=True)
    # As it is, the script does not run on the target (a name 2.10 lacks, or a meaning that
    # changed: load_param_into_net's pair is always true): the upgrade is what makes it run.
    with pytest.raises(RunFailed):
        run_on(new, case.source, mode, tmp_path, portable=False)
