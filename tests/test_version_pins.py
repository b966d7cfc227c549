"""How a project's MindSpore pin, or --target-version, becomes the target (issue 26, "Versions"):
a bare `mindspore` line, pre-, post- and dev releases, and release lines newer than the catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.facts import deprecations
from ms_migrate.facts.versions import Version, default_target, known_versions, parse_target, spelling_for
from ms_migrate.frontends.cli import main

NEWER_WARNING = (
    "warning: MindSpore {} is newer than the newest version ms-migrate knows (2.11); "
    "using what it knows of 2.11"
)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    source = tmp_path / "src" / "a.py"
    source.parent.mkdir(exist_ok=True)
    source.write_text("x = 1\n")
    return source


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"requirements.txt": "numpy\nmindspore\nopencv-python\n"}, "requirements.txt names mindspore"),
        (
            {"requirements.txt": "mindspore-gpu; sys_platform == 'linux'\n"},
            "requirements.txt names mindspore-gpu",
        ),
        ({"pyproject.toml": '[project]\ndependencies = ["mindspore"]\n'}, "pyproject.toml names mindspore"),
        ({"pyproject.toml": '[tool.poetry.dependencies]\nmindspore="*"\n'}, "pyproject.toml names mindspore"),
        ({"setup.cfg": "[options]\ninstall_requires =\n    mindspore\n"}, "setup.cfg names mindspore"),
    ],
    ids=["requirements", "device-build-with-marker", "pep621", "poetry-star", "setup-cfg"],
)
def test_an_unpinned_mindspore_uses_the_default_and_says_so(
    tmp_path: Path, files: dict[str, str], named: str
) -> None:
    code, output = _run("check", str(_project(tmp_path, files)))
    assert code == 0
    assert f"target MindSpore 2.10 (default: {named} without a version; use --target-version)" in output
    assert "no lower bound" not in output


def test_an_unpinned_mindspore_still_leaves_downgrade_asking_for_a_target(tmp_path: Path) -> None:
    source = _project(tmp_path, {"requirements.txt": "mindspore\n"})
    code, output = _run("downgrade", "--dry-run", str(source))
    assert code == 2
    assert "downgrade needs an older target: pass --target-version X.Y" in output
    assert "requirements.txt names mindspore without a version" in output


@pytest.mark.parametrize(
    ("pin", "target", "said"),
    [
        (
            "mindspore==2.10.0\n",
            "2.11",
            "target 2.11 is above MindSpore 2.10, the lowest version the project allows",
        ),
        ("", "3.0", "target 3.0 is newer than the newest version ms-migrate knows (2.11)"),
    ],
    ids=["above-the-pin", "above-every-release"],
)
def test_a_downgrade_to_a_newer_release_is_refused_and_writes_nothing(
    tmp_path: Path, pin: str, target: str, said: str
) -> None:
    """`downgrade --target-version 3.0` of a 2.10 project rewrote its c_transforms import, as an
    upgrade would: a downgrade goes down, and the message names the command that goes up."""
    step = _project(tmp_path, {"requirements.txt": pin} if pin else {})
    step.write_text("import mindspore.dataset.vision.c_transforms as CV\n\nresize = CV.Resize(8)\n")
    before = step.read_bytes()
    code, output = _run("downgrade", "--target-version", target, str(step))
    assert code == 2 and step.read_bytes() == before
    assert f"downgrade goes to an older release: {said}" in output
    assert f"run `ms-migrate upgrade --target-version {target}`" in output


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ("mindspore==2.3.0rc1", "2.3"),
        ("mindspore===2.3.0rc1", "2.3"),
        ("mindspore==2.2.0.post1", "2.2"),
        ("mindspore==2.4.0.dev20240101", "2.4"),
        ("mindspore==2.11.0", "2.11"),
        ("mindspore>=2.11.0rc1,<3", "2.11"),
    ],
)
def test_pre_post_and_dev_releases_pin_their_release_line(tmp_path: Path, pin: str, expected: str) -> None:
    code, output = _run("check", str(_project(tmp_path, {"requirements.txt": f"{pin}\n"})))
    assert code == 0
    assert f"target MindSpore {expected} (lowest allowed by requirements.txt: {pin})" in output


def test_2_11_is_known_and_spelled_as_2_10(tmp_path: Path) -> None:
    assert parse_target("2.11") == Version(2, 11) in known_versions()
    assert spelling_for(Version(2, 11)) == spelling_for(Version(2, 10))
    code, output = _run("check", "--target-version", "2.11", str(_project(tmp_path, {})))
    assert code == 0 and "warning" not in output


def test_the_default_stays_the_newest_version_with_a_deprecations_catalogue() -> None:
    # 2.11 is known, but its catalogue can only be built from an installed 2.11: until then the
    # default is the newest version ms-migrate has checked.
    assert max(known_versions()) == Version(2, 11)
    assert default_target() == max(deprecations.available()) == Version(2, 10)


@pytest.mark.parametrize("newer", ["2.12", "3.0"])
def test_a_target_version_newer_than_the_newest_known_is_taken_with_a_warning(
    tmp_path: Path, newer: str
) -> None:
    assert parse_target(newer) == Version.parse(newer)
    code, output = _run("check", "--target-version", newer, str(_project(tmp_path, {})))
    assert code == 0
    assert NEWER_WARNING.format(newer) in output


def test_a_pin_newer_than_the_newest_known_is_taken_with_a_warning(tmp_path: Path) -> None:
    code, output = _run("check", str(_project(tmp_path, {"requirements.txt": "mindspore>=2.12\n"})))
    assert code == 0
    assert "target MindSpore 2.12 (lowest allowed by requirements.txt: mindspore>=2.12)" in output
    assert NEWER_WARNING.format("2.12") in output


def test_a_configured_target_newer_than_the_newest_known_is_taken_with_a_warning(tmp_path: Path) -> None:
    source = _project(tmp_path, {"pyproject.toml": '[tool.ms-migrate]\ntarget-version = "2.12"\n'})
    code, output = _run("check", str(source))
    assert code == 0
    assert NEWER_WARNING.format("2.12") in output
