"""[tool.ms-migrate] in pyproject.toml: keys, errors that name the key, and flags that win."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.application.config import load_config
from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES

OLD_RUNTIME = "import mindspore as ms\nfn = ms.value_and_grad(net, None, w)\ng = ms.grad(net, position=0)\n"


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.ms-migrate]\n{table}")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "old_runtime.py").write_text(OLD_RUNTIME)
    shutil.copy(FIXTURES / "ms101" / "cell_get_by_list.py", tmp_path / "src" / "legacy.py")
    return tmp_path


def _codes(output: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in output.splitlines() if line.startswith("/")]


def test_target_select_and_ignore_from_the_table(tmp_path: Path) -> None:
    project = _project(tmp_path, 'target-version = "1.9"\nignore = ["MS202"]\n')
    result = CliRunner().invoke(main, ["check", str(project)])
    assert result.exit_code == 1
    # MS101's note too, and MSR024: the grad whose keyword 1.9 lacks is left alone, and says so.
    assert sorted(set(_codes(result.stdout))) == ["MS101", "MS201", "MSN001", "MSR024"]
    only = CliRunner().invoke(main, ["check", "--select", "MS2", str(project)])
    # --select replaces select, and keeps MS201's own reason; the table's ignore stays.
    assert sorted(set(_codes(only.stdout))) == ["MS201", "MSR024"]
    both = CliRunner().invoke(main, ["check", "--select", "MS2", "--ignore", "MS201", str(project)])
    assert sorted(set(_codes(both.stdout))) == ["MS202"]


def test_flags_override_the_table(tmp_path: Path) -> None:
    project = _project(tmp_path, 'target-version = "1.9"\nselect = ["MS201"]\n')
    assert set(_codes(CliRunner().invoke(main, ["check", str(project)]).stdout)) == {"MS201", "MSR024"}
    flags = CliRunner().invoke(main, ["check", "--target-version", "2.10", "--select", "MS101", str(project)])
    assert set(_codes(flags.stdout)) == {"MS101", "MSN001"}


def test_per_file_ignores_and_exclude(tmp_path: Path) -> None:
    project = _project(tmp_path, 'target-version = "1.9"\nper-file-ignores = { "src/old_*.py" = ["MS2"] }\n')
    assert set(_codes(CliRunner().invoke(main, ["check", str(project)]).stdout)) == {"MS101", "MSN001"}
    (tmp_path / "other").mkdir()
    excluded = _project(tmp_path / "other", 'target-version = "1.9"\nexclude = ["legacy.py"]\n')
    assert "MS101" not in _codes(CliRunner().invoke(main, ["check", str(excluded)]).stdout)


def test_an_ignored_rule_is_not_applied_by_upgrade(tmp_path: Path) -> None:
    project = _project(tmp_path, 'ignore = ["MS101"]\n')
    before = (project / "src" / "legacy.py").read_text()
    result = CliRunner().invoke(main, ["upgrade", str(project)])
    assert (project / "src" / "legacy.py").read_text() == before and "MS101" not in result.output
    # What remains is old_runtime.py's MS202 alone: the ignored MS101 site is not counted.
    assert result.exit_code == 1 and "0 sites converted, 0 left alone; 1 finding remaining" in result.output


def test_unknown_keys_and_bad_values_name_the_key(tmp_path: Path) -> None:
    for table, expected in [
        ('target_version = "2.3"\n', "unknown key 'target_version'"),
        ('target-version = "2.0-rc1"\n', "target-version: not a MindSpore release line"),
        ('select = "MS101"\n', "select must be a list of strings"),
        ('per-file-ignores = { "t/*" = "MS201" }\n', "per-file-ignores 't/*' must be a list of codes"),
    ]:
        folder = tmp_path / str(abs(hash(table)))
        folder.mkdir()
        project = _project(folder, table)
        result = CliRunner().invoke(main, ["check", str(project)])
        assert result.exit_code == 2 and expected in result.output, (table, result.output)
        assert "[tool.ms-migrate]" in result.output


def test_the_verify_table_still_lives_under_tool_ms_migrate(tmp_path: Path) -> None:
    project = _project(tmp_path, '\n[tool.ms-migrate.verify]\nfactory = "harness:build"\nsteps = 2\n')
    assert CliRunner().invoke(main, ["check", "--target-version", "2.10", str(project)]).exit_code == 1


def test_an_unquoted_target_version_is_an_error_not_a_silent_2_1(tmp_path: Path) -> None:
    # TOML reads `target-version = 2.10` as the float 2.1.
    from ms_migrate.application.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=re.escape('must be a quoted string such as "2.10", not 2.1')):
        parse_config({"target-version": 2.10}, tmp_path, "pyproject.toml [tool.ms-migrate]")


def test_every_search_for_project_files_stops_at_the_repository_root(tmp_path: Path) -> None:
    """A pyproject.toml above the repository configures nothing in it: not the rules, not the
    pins, not the verify factory that `upgrade --verify` would import and run."""
    from ms_migrate.files.pins import detect_target
    from ms_migrate.verify.config import find_config

    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["mindspore==1.9.0"]\n\n'
        '[tool.ms-migrate]\nselect = ["MS2"]\n\n[tool.ms-migrate.verify]\nfactory = "evil:build"\n'
    )
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "src").mkdir()
    inside = repository / "src" / "step.py"
    inside.write_text("x = 1\n")
    assert load_config(inside).select == () and detect_target(inside) is None and find_config(inside) is None
    # Without the repository's marker the walk goes on up, and finds all three.
    (repository / ".git").rmdir()
    assert load_config(inside).select == ("MS2",) and find_config(inside).factory == "evil:build"  # type: ignore[union-attr]
    assert str(detect_target(inside).version) == "1.9"  # type: ignore[union-attr]
