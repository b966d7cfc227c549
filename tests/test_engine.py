"""The engine behind every command: rules chosen by kind and target, fixes of several rules applied
together and validated under the same rules, and libcst kept for files that can get a fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_migrate.core import parsing
from ms_migrate.core.engine import UPGRADE_KINDS, migrate_text, rules_of_kind, run_rules
from ms_migrate.diagnostics import apply_edits, edits_between
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import all_rules, rule_for
from ms_migrate.rules.ms101 import BEFORE
from tests.fixture_cases import fixture_cases

HEADER = "import mindspore as ms\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
MODERN = "\n\ndef step(net, weights, x):\n    return ms.value_and_grad(net, None, weights)(x)\n"


def test_a_file_that_cannot_hold_a_site_is_never_parsed_with_libcst() -> None:
    # It passes MS101's byte prefilter (TrainOneStep) and has a lint finding, but no fix.
    source = (
        "import mindspore as ms\nimport mindspore.nn as nn\n\n"
        "step = nn.TrainOneStepCell(net, opt)\nfn = ms.grad(net, position=0)\n"
    )
    before = parsing.libcst_parses
    result = migrate_text(source, Version(2, 8))
    assert parsing.libcst_parses == before
    assert [item.code for item in result.diagnostics] == ["MS202"] and result.text == source


def test_a_file_that_gets_a_fix_is_parsed_with_libcst() -> None:
    before = parsing.libcst_parses
    result = migrate_text(HEADER + BEFORE, Version(2, 8))
    assert result.converted == 1 and parsing.libcst_parses > before


CONVERTING_CASES = [case for case in fixture_cases() if case.expected]


@pytest.mark.parametrize("case", CONVERTING_CASES, ids=lambda item: item.id)
def test_reporting_without_fixes_finds_the_same_and_never_parses_with_libcst(case) -> None:  # type: ignore[no-untyped-def]
    """`check` asks for no fixes: same findings as `upgrade`, no rewrite built."""
    from ms_migrate.core.engine import DOWNGRADE_KINDS
    from ms_migrate.files import sources

    text = sources.read_source(case.source).text
    rules = rules_of_kind(DOWNGRADE_KINDS if case.command == "downgrade" else UPGRADE_KINDS)
    target = Version.parse(case.target)
    fixed = run_rules(text, target, rules)
    before = parsing.libcst_parses
    reported = run_rules(text, target, rules, fix=False)
    assert parsing.libcst_parses == before
    assert reported.text == text and not reported.fixed

    def found(result):  # type: ignore[no-untyped-def]
        return [(item.code, item.line, item.message) for item in result.diagnostics]

    # A site another fix made fixable (MS211 renames `ms_function` in an import, then MS210 moves
    # it) is reported as `check` sees it, with its reason, and by `upgrade` as the pass that
    # fixed it does: the same site, its message without the reason.
    later = {(item.code, item.line) for item in fixed.fixed if item.fix is not None and not item.fix.edits}
    assert [item[:2] for item in found(reported)] == [item[:2] for item in found(fixed)]
    assert [item for item in found(reported) if item[:2] not in later] == [
        item for item in found(fixed) if item[:2] not in later
    ]
    for code, line, message in found(reported):
        if (code, line) in later:
            assert "(not fixed: " in message


def test_fixes_of_several_rules_apply_together_and_reach_a_fixed_point() -> None:
    # At 1.9, MS101 rewrites the legacy step and MS201 respells the existing top-level call.
    source = HEADER + BEFORE + MODERN
    result = migrate_text(source, Version(1, 9))
    assert sorted({item.code for item in result.fixed}) == ["MS101", "MS201"]
    # 1.9 given a list of weights differentiates every Parameter: MS201 makes them a ParameterTuple.
    assert "ms.ops.value_and_grad(net, None, ms.ParameterTuple(weights))(x)" in result.text
    assert "GradOperation" not in result.text
    compile(result.text, "<fixed>", "exec")
    again = migrate_text(result.text, Version(1, 9))
    assert again.text == result.text and not again.fixed


def test_the_fixed_point_is_checked_under_the_rules_that_ran() -> None:
    # Only MS201 selected: the GradOperation it leaves is no failure of validation (a downgrade's
    # output holds GradOperation by design).
    source = HEADER + BEFORE + MODERN
    result = run_rules(source, Version(1, 9), [rule_for("MS201")])
    assert [item.code for item in result.fixed] == ["MS201"]
    assert "GradOperation(get_by_list=True)" in result.text
    assert not [item for item in result.diagnostics if item.code == "MSR099"]


def test_check_without_fixes_reports_the_same_diagnostics() -> None:
    source = HEADER + BEFORE + MODERN
    rules = rules_of_kind(UPGRADE_KINDS)
    fixed = run_rules(source, Version(1, 9), rules)
    reported = run_rules(source, Version(1, 9), rules, fix=False)

    def found(result):  # type: ignore[no-untyped-def]
        return [dataclasses.replace(item, fix=None, fix_pending=False) for item in result.diagnostics]

    assert found(reported) == found(fixed)
    # What check says is fixable without building the rewrite is what upgrade fixes.
    upgrade_fixes = [item in fixed.fixed for item in fixed.diagnostics]
    assert [item.fixable for item in reported.diagnostics] == upgrade_fixes
    assert any(item.fix_pending for item in reported.diagnostics)
    assert reported.text == source


@pytest.mark.parametrize("case", CONVERTING_CASES, ids=lambda case: case.id)
def test_line_edits_turn_the_input_into_the_output(case) -> None:  # type: ignore[no-untyped-def]
    before = case.source.read_text(encoding="utf-8", errors="surrogateescape")
    after = case.expected.read_text(encoding="utf-8", errors="surrogateescape")
    assert apply_edits(before, edits_between(before, after)) == after


FAILING_RULE = '''
from ms_migrate.rules.base import Example, Examples, Rule


class Broken(Rule):
    """Test-only rule that fails on every file it reads."""

    code = "MS902"
    title = "always fails"
    kind = "lint"
    prefilter = ("grad",)
    examples = Examples(invalid=(Example("grad\\n"),))

    def check(self, ctx):
        raise KeyError("boom")
'''


def test_a_rule_that_fails_costs_only_its_own_findings(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "broken.py").write_text(FAILING_RULE)
    monkeypatch.setenv("MS_MIGRATE_RULES_PATH", str(tmp_path))
    assert "MS902" in [rule.code for rule in all_rules()]
    result = migrate_text(HEADER + BEFORE, Version(2, 8))
    assert result.converted == 1
    (failure,) = [item for item in result.diagnostics if item.code == "MSR099"]
    assert "rule MS902 failed: KeyError" in failure.message


# Source, then the ops whose flags are unknown (line, class, base), then those that become sites
# (class, attribute, base).
INHERITED = [
    (
        "class Step(nn.TrainOneStepCell):\n    def construct(self, x):\n"
        "        return self.grad(self.network, self.weights)(x)\n",
        [],
        {("Step", "grad", "TrainOneStepCell")},
    ),
    (  # created in this class: not inherited
        "class Step(nn.TrainOneStepCell):\n    def __init__(self):\n        self.grad = f\n\n"
        "    def construct(self, x):\n        return self.grad(self.network, self.weights)(x)\n",
        [],
        set(),
    ),
    (
        "class Step(TrainOneStepWithLossScaleCell):\n    def construct(self, x):\n"
        "        def inner():\n            return self.grad(self.network, self.weights)(x, self.sens)\n"
        "        return inner()\n",
        [],
        {("Step", "grad", "TrainOneStepWithLossScaleCell")},
    ),
    (  # `self` is the nested class's
        "class Outer(nn.TrainOneStepCell):\n    class Inner:\n"
        "        def f(self):\n            return self.grad(a)(b)\n",
        [],
        set(),
    ),
    (  # a tuple or annotated assignment does not hide the base's op
        "class Step(nn.TrainOneStepCell):\n    def __init__(self):\n        self.grad, self.x = f, 1\n"
        "        self.y: int = 2\n\n    def construct(self, x):\n"
        "        return self.grad(a)(x) + self.y(a)(x)\n",
        [(9, "Step", "TrainOneStepCell")],
        {("Step", "grad", "TrainOneStepCell")},
    ),
    (
        "class Step(nn.PipelineCell):\n    def construct(self, x):\n        return self.grad(a)(x)\n",
        [(5, "Step", "PipelineCell")],
        set(),
    ),
    (  # a method of that name
        "class Step(nn.TrainOneStepCell):\n    def grad(self, net, weights):\n        return f\n\n"
        "    def construct(self, x):\n        return self.grad(self.network, self.weights)(x)\n",
        [],
        set(),
    ),
]


@pytest.mark.parametrize(("source", "unknown", "known"), INHERITED)
def test_inherited_ops_are_sites_when_the_base_is_known(source: str, unknown: list, known: set) -> None:
    import ast

    from ms_migrate.rules.ms101.analysis import analyse

    text = "import mindspore.nn as nn\n\n" + source
    analysis = analyse(ast.parse(text), text)
    assert sorted((use.line, use.class_name, use.base) for use in analysis.inherited) == unknown
    sites = {(site.class_def.name, site.name, site.inherited_from) for site in analysis.sites}  # type: ignore[union-attr]
    assert sites == known


def test_a_file_with_only_unknown_inherited_ops_is_reported_without_libcst() -> None:
    text = "import mindspore.nn as nn\n\n" + next(case[0] for case in INHERITED if "PipelineCell" in case[0])
    before = parsing.libcst_parses
    result = migrate_text(text, Version(2, 8))
    assert before == parsing.libcst_parses
    # MS210 too: 2.10's docstring of nn.PipelineCell deprecates it for mindspore.parallel.nn.Pipeline.
    assert [(item.code, item.line) for item in result.diagnostics] == [("MS210", 3), ("MSR006", 5)]


def test_an_op_a_mindspore_base_class_creates_converts_with_its_known_flags() -> None:
    text = "import mindspore.nn as nn\n\n" + INHERITED[0][0]
    result = migrate_text(text, Version(2, 8))
    (converted,) = result.fixed
    assert converted.message.startswith("self.grad from TrainOneStepCell: GradOperation(get_by_list=True")
    assert "ms.grad(self.network, None, self.weights, sens_param=True)(x)" in result.text


TWO_STEPS = Path(__file__).parent / "fixtures" / "ms101" / "two_train_steps.py"


@pytest.mark.parametrize("declined_line", [14, 30])
def test_a_declined_site_is_left_as_an_ignore_comment_leaves_it(declined_line: int) -> None:
    # `upgrade --interactive` declines a site without editing the text: the result is the one the
    # comment gives, less the comment, and it is validated (compiles, fixed point) the same way.
    source = TWO_STEPS.read_text()
    rules = rules_of_kind(UPGRADE_KINDS)
    declined = run_rules(source, Version(2, 8), rules, declined={("MS101", declined_line)})
    lines = source.splitlines(keepends=True)
    comment = "  # ms-migrate: ignore[MS101]"
    lines[declined_line - 1] = lines[declined_line - 1].rstrip("\n") + comment + "\n"
    commented = run_rules("".join(lines), Version(2, 8), rules)
    assert declined.text == commented.text.replace(comment, "")
    assert [(item.code, item.line) for item in declined.fixed] == [("MS101", 44 - declined_line)]
    assert "MSR099" not in {item.code for item in declined.diagnostics}
    assert declined.text.count("GradOperation(get_by_list=True)") == 1
    # Declined where it is now (the new import moved it down, a removed line may move it back up).
    now = 1 + declined.text.splitlines().index("        self.grad = C.GradOperation(get_by_list=True)")
    again = run_rules(declined.text, Version(2, 8), rules, declined={("MS101", now)})
    assert again.text == declined.text and not again.fixed


def test_a_downgrade_never_spells_mindspore_with_a_local_name() -> None:
    from ms_migrate.core.engine import downgrade_text

    source = (
        "import mindspore as ms\nfrom mindspore import grad\n\n\ndef gradients(fn, x):\n    ms = 3\n"
        "    return ms * grad(fn)(x)\n"
    )
    # `ms` is a local number in the function: the GradOperation is made at module level, where
    # `ms` is the module, and nothing is imported again.
    result = downgrade_text(source, Version(1, 7))
    assert "\n_grad_op = ms.ops.GradOperation()\n" in result.text
    assert "return ms * _grad_op(fn)(x)" in result.text
    assert "import mindspore\n" not in result.text and result.fixed
    # Without a module-level name for mindspore, the module is spelled through a new import.
    result = downgrade_text(source.replace("import mindspore as ms\n", ""), Version(1, 7))
    assert "\n_grad_op = mindspore.ops.GradOperation()\n" in result.text
    assert "return ms * _grad_op(fn)(x)" in result.text
    assert "import mindspore\n" in result.text and result.fixed


def test_lines_are_numbered_as_python_numbers_them() -> None:
    from ms_migrate.diagnostics import Edit, source_lines
    from ms_migrate.reporting.report import unified_diff

    comment = "# U+2028 \u2028 and \x1c stay in the line\r\n"
    text = f"a = 1\n\x0c\n{comment}b = 2\rc = 3"
    assert source_lines(text) == ["a = 1\n", "\x0c\n", comment, "b = 2\r", "c = 3"]
    assert "".join(source_lines(text)) == text
    # Line 4 is `b = 2` for ast, tokenize and tracebacks, so an edit there changes `b`.
    assert apply_edits(text, (Edit((4, 0), (4, 1), "bee"),)) == text.replace("b = 2", "bee = 2")
    diff = unified_diff("x.py", "\x0c\nx = 1\n", "\x0c\nx = 2\n")
    assert "No newline" not in diff and "-x = 1\n+x = 2\n" in diff


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))
def test_source_lines_end_only_at_cr_and_lf(text: str) -> None:
    import re

    from ms_migrate.diagnostics import source_lines

    pieces = re.split(r"(\r\n|\r|\n)", text)  # text, break, text, break, ..., text
    expected = [pieces[i] + pieces[i + 1] for i in range(0, len(pieces) - 1, 2)]
    expected += [pieces[-1]] if pieces[-1] else []
    assert source_lines(text) == expected


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("# ms-migrate: ignore[MS210]", True),
        ("# ms-migrate: ignore[MS2]", True),  # a prefix, as --ignore takes one (and flake8's noqa)
        ("# noqa: MS21", True),
        ("# ms-migrate: ignore[MS1]", False),
        ("# noqa: E501", False),
    ],
)
def test_a_suppression_comment_takes_codes_and_their_prefixes(comment: str, suppressed: bool) -> None:
    source = f"import mindspore.nn as nn\n\nnet = nn.Momentum  {comment}\n"
    codes = [item.code for item in migrate_text(source, Version(2, 10)).diagnostics]
    assert ("MS210" not in codes) is suppressed, codes


SENS_GRAD = (
    "import mindspore as ms\n\n\n"
    "def step(net, weights, x, sens):\n"
    "    return ms.grad(net, None, weights, sens_param=True)(x, sens)\n\n\n"
    "def other(net, x, sens):\n"
    "    return ms.ops.GradOperation(sens_param=True)(net)(x, sens)\n"
)


@pytest.mark.parametrize("fix", [True, False], ids=["downgrade", "check"])
def test_a_finding_in_text_another_rule_rewrote_goes_only_where_the_rewrite_no_longer_has_it(
    fix: bool,
) -> None:
    """MS202's `sens_param=` (1.9's grad takes none) sat in the call MS302 made a GradOperation,
    and was still reported after the downgrade; the GradOperation's own `sens_param=True`, in
    code no fix touched, is no finding of MS202, and a finding the fixed text still has stays."""
    from ms_migrate.core.engine import DOWNGRADE_KINDS

    result = run_rules(SENS_GRAD, Version(1, 9), rules_of_kind(DOWNGRADE_KINDS), fix=fix)
    codes = [item.code for item in result.diagnostics]
    assert "MS302" in codes and "MS202" not in codes, codes
    if fix:
        assert "GradOperation(get_by_list=True, sens_param=True)" in result.text
    # Where MS302 does not convert (a literal it cannot read), the TypeError is still reported.
    kept = SENS_GRAD.replace("sens_param=True)(x, sens)", "sens_param=flag)(x, sens)", 1)
    codes = [item.code for item in run_rules(kept, Version(1, 9), rules_of_kind(DOWNGRADE_KINDS)).diagnostics]
    assert "MS202" in codes, codes


@pytest.mark.parametrize("fix", [True, False], ids=["upgrade", "check"])
def test_a_file_s_trees_go_with_its_run_not_with_the_garbage_collector(fix: bool) -> None:
    """What a file's run built (its `ast` and libcst trees, the rules' analyses) refers back to
    the file's context; the engine lets it go as the run returns, so nothing of it is left for
    the collector to find in a cycle (2.9 million objects over a model zoo, 15% of `check`)."""
    import ast
    import gc

    import libcst as cst

    gc.collect()
    flags = gc.get_debug()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = run_rules(HEADER + BEFORE, Version(2, 8), rules_of_kind(UPGRADE_KINDS), fix=fix)
        gc.collect()
        left = [item for item in gc.garbage if isinstance(item, (ast.AST, cst.CSTNode))]
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        gc.enable()
    assert result.diagnostics and (result.converted == 1) == fix
    assert left == []


def test_a_rewrite_whose_output_compiles_does_not_compile_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation compiles the output; the input is compiled only to tell whose error a failure
    is (and by `check`, which builds no output)."""
    from ms_migrate.core import engine

    compiled: list[object] = []
    real = engine.check_compiles
    monkeypatch.setattr(engine, "check_compiles", lambda tree: compiled.append(tree) or real(tree))
    text = 'import mindspore\nmindspore.set_context(device_target="CPU")\n'
    rules = rules_of_kind(UPGRADE_KINDS)
    assert run_rules(text, Version(2, 10), rules).text != text and compiled == []
    run_rules(text, Version(2, 10), rules, fix=False)
    assert len(compiled) == 1
    broken = text + "break\n"  # the output keeps the input's error: whose it is is then asked
    with pytest.raises(parsing.ParseFailure, match="'break' outside loop"):
        run_rules(broken, Version(2, 10), rules)
    assert len(compiled) == 2


def test_a_dropped_0x_name_argument_is_said() -> None:
    """`GradOperation('grad', get_by_list=True)` is 0.x's spelling, whose first argument was a
    name; 1.x takes a string there for get_all and raises. The rewrite keeps 0.x's meaning and
    drops the name, and the finding says so (it did not, and the code then ran where it raised)."""
    text = (Path(__file__).parent / "fixtures" / "ms101" / "positional_flags_and_legacy_name.py").read_text()
    messages = [item.message for item in migrate_text(text, Version(2, 10)).fixed if item.code == "MS101"]
    named = [message for message in messages if "0.x's name, is dropped" in message]
    assert len(named) == 1 and named[0].startswith("GradOperation(get_by_list=True) -> "), messages
