"""Golden fixtures of several files: what a site becomes depends on another file of the run.

Each folder under tests/fixtures/projects/ is a small project run as a user runs it
(`ms-migrate upgrade <folder>`); `<name>.expected/` holds every file the upgrade changes, and a
file not there must stay byte-identical. A second run changes nothing, the codes the project
expects are reported, and `train.py` prints the same numbers before and after the upgrade, in
PYNATIVE and GRAPH mode, on a network with BatchNorm (training mode) and dropout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from tests.test_equivalence import ATOL, MODES, RTOL, flatten, run_fixture, structure

PROJECTS = Path(__file__).parent / "fixtures" / "projects"
CASES = sorted(path for path in PROJECTS.iterdir() if path.is_dir() and not path.name.endswith(".expected"))

# The codes each project's upgrade must report (converted sites, reasons and notes).
CODES = {
    # step.py's network comes through StepBase.__init__ (base.py), its class StarLoss from nets.py
    # and its instantiation from train.py: a def around the *inputs network, not MSN003.
    "star_network_across_files": {"MS101"},
    # step.py mentions neither GradOperation nor TrainOneStep; its grad op is nn.TrainOneStepCell's.
    "subclass_in_unmentioning_file": {"MS101"},
    # clip.py's subclass applies base.py's op: removing it there would break ClipStep.
    "base_op_applied_by_subclass": {"MSR003", "MSR006"},
}


def _upgrade(folder: Path) -> str:
    result = CliRunner().invoke(main, ["upgrade", "--no-cache", "--target-version", "2.10", str(folder)])
    assert result.exit_code in (0, 1), result.output
    return result.output


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.py"))}


@pytest.fixture(params=CASES, ids=[case.name for case in CASES])
def upgraded(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, Path, str]:
    source: Path = request.param
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        folder.mkdir()
        for path in source.glob("*.py"):
            shutil.copy(path, folder / path.name)
    return source, before, after, _upgrade(after)


def test_every_project_says_what_it_expects() -> None:
    assert {case.name for case in CASES} == set(CODES)


def test_the_upgrade_writes_the_expected_files(upgraded: tuple[Path, Path, Path, str]) -> None:
    case, _, after, output = upgraded
    expected = {**_files(case), **_files(case.with_name(case.name + ".expected"))}
    assert _files(after) == expected, output
    codes = {line.split(": ", 1)[1].split()[0] for line in output.splitlines() if ": MS" in line}
    assert codes == CODES[case.name], output
    # A fixed point: a second run changes nothing.
    _upgrade(after)
    assert _files(after) == expected


@pytest.mark.mindspore
@pytest.mark.parametrize("mode", MODES)
def test_the_project_prints_the_same_numbers(upgraded: tuple[Path, Path, Path, str], mode: str) -> None:
    _, before, after, _ = upgraded
    before_numbers = run_fixture(before / "train.py", mode, before)
    after_numbers = run_fixture(after / "train.py", mode, after)
    assert structure(before_numbers) == structure(after_numbers)
    left, right = np.array(flatten(before_numbers)), np.array(flatten(after_numbers))
    assert left.shape == right.shape and left.size > 0
    np.testing.assert_allclose(right, left, rtol=RTOL, atol=ATOL)
