"""One registry of codes: each rule, reason and note code has one owner, selection is checked
against it, and a reason follows its own rule when rules are selected."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.application.config import Config, ConfigError, parse_config
from ms_migrate.core.codes import ENGINE, owner, registry, resolve_selector
from ms_migrate.frontends.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_reason_and_note_has_the_rule_that_declares_it() -> None:
    codes = registry()
    assert owner("MSR030") == "MS102" and owner("MSR020") == "MS301" and owner("MSN004") == "MS301"
    assert owner("MSR099") == ENGINE and owner("MS101") == "MS101" and owner("MS999") is None
    assert {item.category for item in codes.values()} == {"rule", "reason", "note"}


def test_selecting_a_rule_keeps_its_own_reasons_and_the_engines() -> None:
    config = Config(select=("MS102",))
    assert config.enabled("MS102") and config.enabled("MSR030") and config.enabled("MSR099")
    assert not config.enabled("MSR001") and not config.enabled("MS101")  # MS101's, not selected


def test_check_select_ms102_reports_its_reason(tmp_path: Path) -> None:
    source = tmp_path / "refused.py"
    source.write_text((FIXTURES / "ms102" / "refuse_other_uses.py").read_text())
    result = CliRunner().invoke(main, ["check", "--select", "MS102", "--target-version", "2.10", str(source)])
    assert "MSR030" in result.stdout, result.output


@pytest.mark.parametrize(
    ("option", "value", "hint"),
    [
        ("--select", "MS999", "MS290"),
        ("--ignore", "MSR0999", "MSR099"),
        ("--select", "emty-weights", "empty-weights"),
    ],
)
def test_an_unknown_code_in_a_flag_exits_2_naming_the_nearest(
    tmp_path: Path, option: str, value: str, hint: str
) -> None:
    (tmp_path / "step.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", option, value, "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 2
    assert f"unknown rule or code {value!r} (did you mean {hint}?)" in result.output


def test_an_unknown_code_in_the_configuration_is_an_error_naming_it() -> None:
    for key, value in (
        ("select", ["MS1", "MS999"]),
        ("ignore", ["MSX"]),
        ("per-file-ignores", {"t/*": ["MS99"]}),
    ):
        with pytest.raises(ConfigError, match="unknown rule or code"):
            parse_config({key: value}, None, "pyproject.toml [tool.ms-migrate]")


def test_names_and_prefixes_select_what_they_name() -> None:
    assert resolve_selector("empty-weights") == "MS207" and resolve_selector("ms1") == "MS1"
    assert resolve_selector("MSR") == "MSR" and isinstance(resolve_selector("MS9"), tuple)
    assert parse_config({"select": ["empty-weights", "MS3"]}, None, "t").select == ("MS207", "MS3")


CLAIMS_MSR001 = '''
from ms_migrate.reasons import Reason
from ms_migrate.rules.base import Rule


class Claims(Rule):
    """Test-only rule whose reason code MS101 owns already."""

    code = "XS900"
    title = "claims a code"
    reasons = {"MSR001": Reason("MSR001", "mine", "mine", "mine")}

    def check(self, ctx):
        return ()
'''


def _run(rules: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MS_MIGRATE_RULES_PATH": str(rules)}
    return subprocess.run(
        [sys.executable, "-m", "ms_migrate", *args], capture_output=True, text=True, env=env
    )


def test_a_plugin_that_claims_a_reason_code_of_another_rule_stops_the_run(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "xs900_claims.py").write_text(textwrap.dedent(CLAIMS_MSR001))
    (tmp_path / "step.py").write_text("x = 1\n")
    result = _run(rules, "check", "--target-version", "2.10", str(tmp_path / "step.py"))
    assert result.returncode == 2
    assert "XS900 declares the reason code MSR001, which MS101 owns already" in result.stderr


@pytest.mark.parametrize("command", [["rules"], ["explain", "MSR001"], ["check", "."]])
@pytest.mark.parametrize("plugin", ["claims", "broken"])
def test_every_command_that_loads_the_rules_refuses_a_bad_plugin_with_exit_2(
    tmp_path: Path, command: list[str], plugin: str
) -> None:
    """A plugin claiming a built-in code, or one that does not import, is exit 2 and one line
    naming it in `rules` and `explain` too, never a traceback."""
    rules = tmp_path / "rules"
    rules.mkdir()
    if plugin == "claims":
        (rules / "xs900_claims.py").write_text(textwrap.dedent(CLAIMS_MSR001))
        expected = "XS900 declares the reason code MSR001, which MS101 owns already"
    else:
        (rules / "xs901_broken.py").write_text("def broken(:\n")
        expected = "xs901_broken.py: cannot load: SyntaxError"
    result = _run(rules, *(str(tmp_path) if part == "." else part for part in command))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "Error: rules: " in result.stderr and expected in result.stderr


ADDS_AN_IMPORT = '''
import ast

from ms_migrate.diagnostics import Edit, Fix
from ms_migrate.rules.base import Rule


class PrintOp(Rule):
    """Test-only rule: print() becomes mindspore.ops.Print(), which needs `import mindspore`."""

    code = "XS901"
    title = "print op"
    kind = "lint"
    prefilter = ("print",)

    def check(self, ctx):
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print":
                start = (node.func.lineno, node.func.col_offset)
                end = (node.func.end_lineno, node.func.end_col_offset)
                fix = Fix((Edit(start, end, "ms.ops.Print()"),), imports=("ms",))
                yield self.diagnostic(node, "print() in a train step", fix)
'''


def test_a_rule_that_adds_an_import_needs_only_its_own_file(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "xs901_print_op.py").write_text(textwrap.dedent(ADDS_AN_IMPORT))
    step = tmp_path / "step.py"
    step.write_text('"""Steps."""\nimport numpy as np\n\n\ndef f(x):\n    print(x)\n    print(np.abs(x))\n')
    result = _run(rules, "upgrade", "--select", "XS901", "--target-version", "2.10", str(step))
    assert result.returncode == 0, result.stderr
    assert step.read_text() == (
        '"""Steps."""\nimport numpy as np\nimport mindspore as ms\n\n\n'
        "def f(x):\n    ms.ops.Print()(x)\n    ms.ops.Print()(np.abs(x))\n"
    )
