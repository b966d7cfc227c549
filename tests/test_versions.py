from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.facts.versions import Version, lowest_allowed, parse_target, spelling_for
from ms_migrate.files.pins import detect_target
from ms_migrate.frontends.cli import main


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        (">=2.2,<3", "2.2"),
        ("==1.10.1", "1.10"),
        ("~=2.3.0", "2.3"),
        (">1.8", "1.8"),  # 1.8.1 is allowed
        (">=2.2.14", "2.2"),
        ("==2.*", "2.0"),
        (">=2.2.0.post1", "2.2"),
        (">=1.8.1,<2", "1.8"),
        ("===2.4.1", "2.4"),
        (">=1.11", "2.0"),  # no 1.11: the next release line
        (">=2.2,>=2.5", "2.5"),  # every clause holds
        ("<3", None),  # no lower bound: the oldest runtime is unknown
    ],
)
def test_lowest_allowed(specs: str, expected: str | None) -> None:
    version = lowest_allowed(specs)
    assert (str(version) if version else None) == expected


def test_spelling_table() -> None:
    assert spelling_for(Version(1, 7)).module is None
    assert spelling_for(Version(1, 10)).module == "mindspore.ops"
    assert spelling_for(Version(2, 7)).sens == "forward-scaling"
    assert spelling_for(Version(2, 8)).sens == "sens_param"
    assert Version.parse("2.10") > Version.parse("2.9")


# Older than the oldest known, between known lines, or not X.Y or X.Y.Z; a newer line is taken
# (test_version_pins), and so is a patch release of a known one (2.0.1 is 2.0).
@pytest.mark.parametrize("text", ["0.0", "1.11", "1.11.2", "2.0-rc1", "2", "latest"])
def test_unknown_target_versions_are_refused_with_the_known_ones(text: str) -> None:
    with pytest.raises(ValueError, match=r"2\.10"):
        parse_target(text)
    result = CliRunner().invoke(main, ["check", "--target-version", text, "."])
    assert result.exit_code == 2 and "1.8, 1.9, 1.10, 2.0" in result.output


def test_a_patch_release_is_its_release_line() -> None:
    assert parse_target("2.10.1") == Version(2, 10)
    assert parse_target("1.8.1") == Version(1, 8)


def _detected(tmp_path: Path, files: dict[str, str]) -> Version | None:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "src").mkdir(exist_ok=True)
    detected = detect_target(tmp_path / "src")
    assert detected is not None
    return detected.version


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pyproject.toml": '[project]\ndependencies = [\n  "mindspore>=2.5",\n]\n'}, "2.5"),
        ({"pyproject.toml": '[project]\ndependencies = ["numpy", "mindspore>=2.3,<2.9"]\n'}, "2.3"),
        (
            {
                "pyproject.toml": "[project]\ndependencies = []\n"
                '[project.optional-dependencies]\ngpu = ["mindspore-gpu==1.9.0"]\n'
            },
            "1.9",
        ),
        ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.9"\nmindspore = "^2.3"\n'}, "2.3"),
        ({"pyproject.toml": '[tool.poetry.dependencies]\nmindspore = {version = "~2.6.0"}\n'}, "2.6"),
        ({"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    mindspore>=2.1\n"}, "2.1"),
        ({"requirements/base.txt": "mindspore-ascend==2.4.1\n"}, "2.4"),
        (
            {
                "requirements.txt": "-r requirements/common.txt\n",
                "requirements/common.txt": "mindspore>=2.7\n",
            },
            "2.7",
        ),
        ({"requirements.txt": "mindspore-gpu==1.8.0; sys_platform == 'linux'\n"}, "1.8"),
        ({"requirements.txt": "mindspore-cpu>=2.2  # CPU build\n"}, "2.2"),
        ({"requirements.txt": "mindspore>=2.8\n", "requirements-old.txt": "mindspore==2.0.0\n"}, "2.0"),
    ],
    ids=[
        "pep621",
        "pep621-one-line",
        "optional-dependencies",
        "poetry-caret",
        "poetry-table",
        "setup-cfg",
        "requirements-folder",
        "include",
        "marker",
        "comment",
        "lowest-wins",
    ],
)
def test_detect_target_forms(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    assert str(_detected(tmp_path, files)) == expected


def test_an_upper_bound_alone_is_checked_for_the_newest_it_allows_and_written_for_none(
    tmp_path: Path,
) -> None:
    """`mindspore <= 2.3.0` in requirements/cpu_requirements.txt stopped every command, and named
    the file without its folder. `check` only reads: it takes the newest version the pin allows
    and says so; what writes still needs --target-version, with the file named where it is."""
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "cpu_requirements.txt").write_text("mindspore <= 2.3.0\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "a.py")])
    assert result.exit_code == 0, result.output
    assert (
        "target MindSpore 2.3 (newest allowed by requirements/cpu_requirements.txt: mindspore <= 2.3.0, "
        "which sets no lower bound; use --target-version for an older one)" in result.output
    )
    written = CliRunner().invoke(main, ["upgrade", str(tmp_path / "a.py")])
    assert written.exit_code == 2
    assert (
        "requirements/cpu_requirements.txt: mindspore <= 2.3.0: MindSpore has no lower bound"
        in written.output
    )
    explicit = CliRunner().invoke(main, ["upgrade", "--target-version", "2.2", str(tmp_path / "a.py")])
    assert explicit.exit_code == 0


def test_an_upper_bound_alone_needs_target_version_to_write(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("mindspore<3\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["upgrade", str(tmp_path / "a.py")])
    assert result.exit_code == 2 and "no lower bound" in result.output and "--target-version" in result.output
    # A bare `mindspore` elsewhere sets no bound, and does not hide this one.
    (tmp_path / "requirements-dev.txt").write_text("mindspore\n")
    beside = CliRunner().invoke(main, ["upgrade", str(tmp_path / "a.py")])
    assert beside.exit_code == 2
    assert "requirements.txt: mindspore<3: MindSpore has no lower bound" in beside.output
    explicit = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(tmp_path / "a.py")])
    assert explicit.exit_code == 0


def test_target_above_the_lowest_allowed_warns(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("mindspore>=2.2\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", "--target-version", "2.8", str(tmp_path / "a.py")])
    assert result.exit_code == 0
    warning = "warning: target 2.8 is above MindSpore 2.2, the lowest version the project allows"
    assert warning in result.output
