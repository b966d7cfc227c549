"""Verification by execution: `ms-migrate verify`, script mode, and `upgrade --verify`.

The MindSpore tests run real workers on CPU. Each verify call starts one worker per mode and
batches every site into it, so each test below pays `import mindspore` once or twice. The pure
parts (site planning, configuration, comparison, rendering) are tested without MindSpore.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from ms_migrate import runtimes
from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.verify import Pair, Verdict, VerifyOptions, verify_many, verify_pairs
from ms_migrate.verify.compare import compare_numbers
from ms_migrate.verify.config import _fallback_table, apply_settings, find_config
from ms_migrate.verify.model import MODES, SiteResult, VerificationReport
from ms_migrate.verify.render import print_report
from ms_migrate.verify.sites import differing_sites

TESTS = Path(__file__).parent
CASES = TESTS / "verify_cases"
FIXTURES = TESTS / "fixtures"
MS101 = FIXTURES / "ms101"
EXAMPLE = TESTS.parent / "examples" / "legacy_project"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def table_rows(output: str) -> dict[tuple[str, str], list[str]]:
    """Rows of the rich table by (site, mode): [steps, max abs diff, max rel diff, verdict...]."""
    rows = {}
    for line in output.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[1] in ("pynative", "graph") and ":" in cells[0]:
            rest = cells[2:]
            if rest and re.fullmatch(r"\d+\.\d+\S*|-", rest[0]):  # the MindSpore column
                rest = rest[3:] if rest[1:2] == ["->"] else rest[1:]
            rows[(cells[0].split(":")[0], cells[1])] = rest
    return rows


@pytest.fixture
def fixture_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ms101 fixtures import tests/fixtures/_harness.py; workers inherit this environment."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")]))
    )


# ---------------------------------------------------------------------------------------------
# With MindSpore


@pytest.mark.mindspore
def test_subtly_wrong_rewrites_differ_in_both_modes() -> None:
    code, output = invoke(
        "verify", str(CASES / "wrong_rewrites_before.py"), str(CASES / "wrong_rewrites_after.py")
    )
    assert code == 1, output
    rows = table_rows(output)
    assert set(rows) == {
        (site, mode)
        for site in ("TrainLossScale", "TrainWithAux", "InputGradient")
        for mode in ("pynative", "graph")
    }
    for (site, mode), (steps, max_abs, _, verdict, *_) in rows.items():
        assert verdict == "differs:", (site, mode, output)
        assert steps == "3"
        if site != "InputGradient":  # same numbers, different structure
            assert float(max_abs) > 1e-3, (site, mode, output)
    assert "returned value at step 1 differs in structure: tuple(tensor float32[6, 4]) in BEFORE" in output


@pytest.mark.mindspore
def test_forms_emitted_before_the_exactness_fixes_are_caught() -> None:
    """Control: the double forward of the old scaled form, a grad on a *inputs network in GRAPH
    mode, a merge across an overwritten input and a merge without set_grad() all pass a stateless
    probe; the BatchNorm, dropout and *inputs probes must tell each one apart."""
    code, output = invoke(
        "verify", "--format", "json", str(CASES / "old_forms_before.py"), str(CASES / "old_forms_after.py")
    )
    assert code == 1, output
    data = json.loads(output)
    verdicts: dict[str, set[str]] = {}
    for site in data["sites"]:
        verdicts.setdefault(site["site"].split(":")[0], set()).add(site["verdict"])
    assert set(verdicts) == {"ScaledTwice", "StarInputs", "OverwritesInput", "MergedWithoutSetGrad"}
    for name, found in verdicts.items():
        assert "differs" in found, (name, output)
    reasons = " ".join(site["reason"] for site in data["sites"])
    assert "BatchNorm+Dropout" in reasons and "*inputs" in reasons


@pytest.mark.mindspore
def test_correct_rewrite_verifies_equal_in_both_modes(fixture_imports: None) -> None:
    code, output = invoke(
        "verify", str(MS101 / "cell_get_by_list.py"), str(MS101 / "cell_get_by_list.expected.py")
    )
    assert code == 0, output
    rows = table_rows(output)
    assert rows[("TrainOneStep", "pynative")] == ["3", "0", "0", "equal"]
    assert rows[("TrainOneStep", "graph")] == ["3", "0", "0", "equal"]
    assert "2 site runs: 2 equal" in output


@pytest.mark.mindspore
def test_every_automatic_harness_on_engine_output(fixture_imports: None) -> None:
    """The rewrites the engine produces, verified in one batch: a function-style step whose module
    switches the mode at import, forward scaling before 2.8, a one-input get_all grad Cell and a
    train step on a `*inputs` network."""
    names = [
        "function_style",
        "loss_scale_1024_target_2_7",
        "get_all_one_input_keeps_tuple",
        "varargs_network_merged",
    ]
    pairs = []
    for name in names:
        source = MS101 / f"{name}.py"
        target = Version(2, 7) if name.endswith("2_7") else Version(2, 10)
        after = migrate_text(source.read_text(encoding="utf-8"), target).text
        pairs.append(Pair(source.read_text(encoding="utf-8"), after, source, source))
    reports = verify_pairs(pairs, VerifyOptions())
    for name, report in zip(names, reports):
        assert [(row.mode, row.verdict) for row in report.results] == [
            ("pynative", Verdict.EQUAL),
            ("graph", Verdict.EQUAL),
        ], (name, report.summary())
    harnesses = {report.results[0].harness.split(":")[0] for report in reports}
    assert harnesses == {"seeded inputs", "train step", "grad cell"}
    varargs = reports[names.index("varargs_network_merged")].results[0].harness
    assert "BatchNorm+Dropout, set_grad()" in varargs and "*inputs" in varargs


@pytest.mark.mindspore
def test_module_that_raises_at_import_exits_2_with_the_error(tmp_path: Path) -> None:
    before = CASES / "raises_at_import.py"
    after = tmp_path / "raises_at_import.py"
    after.write_text(migrate_text(before.read_text(encoding="utf-8"), Version(2, 10)).text, encoding="utf-8")
    code, output = invoke("verify", "--mode", "pynative", str(before), str(after))
    assert code == 2, output
    expected = f"BEFORE raised at import: RuntimeError: configuration server unreachable ({before}:6)"
    assert f"TrainStep:9 (pynative): could not run: {expected}" in output


@pytest.mark.mindspore
def test_missing_device_is_named_in_json() -> None:
    before, after = CASES / "wrong_rewrites_before.py", CASES / "wrong_rewrites_after.py"
    code, output = invoke(
        "verify", "--device", "Ascend", "--mode", "graph", "--format", "json", str(before), str(after)
    )
    assert code == 2
    data = json.loads(output)
    assert data["verdict"] == "could not run" and data["options"]["device"] == "Ascend"
    assert len(data["sites"]) == 3
    for site in data["sites"]:
        assert site["reason"].startswith("device Ascend is not available in this MindSpore build")


@pytest.mark.mindspore
def test_crash_timeout_and_memory_limit_cost_only_their_own_site(tmp_path: Path) -> None:
    """One worker runs all four files in turn; the three broken ones are reported and the last,
    after two worker restarts, is still verified. MindSpore itself runs under a 4 GiB limit."""
    before = (MS101 / "local_ms_name_not_shadowed.py").read_text(encoding="utf-8")
    after = (MS101 / "local_ms_name_not_shadowed.expected.py").read_text(encoding="utf-8")
    hog = "import numpy\n_buffer = numpy.empty(6 * 2**30, numpy.uint8)  # lazily mapped, over the limit\n"
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
    forward = "        loss = self.network(x, y)\n"
    sleeps = before.replace(forward, '        __import__("time").sleep(600)\n' + forward)  # in the step
    items = [
        (tmp_path / "memory.py", hog + before, after),
        (tmp_path / "crash.py", before, crash + after),
        (tmp_path / "sleeps.py", sleeps, after),
        (tmp_path / "fine.py", before, after),
    ]
    options = VerifyOptions(modes=("pynative",), timeout_s=8, memory_limit_mb=4096)
    memory, crashed, sleeps, fine = (report.results[0] for report in verify_many(items, options))
    assert memory.verdict is Verdict.NOT_RUN and "MemoryError" in memory.reason
    assert crashed.verdict is Verdict.NOT_RUN
    assert crashed.reason == "the worker died with signal SIGKILL (a fresh worker died too)"
    assert sleeps.verdict is Verdict.NOT_RUN and sleeps.reason == "timed out after 8 s"
    assert fine.verdict is Verdict.EQUAL and fine.steps == 3


@pytest.mark.mindspore
def test_a_worker_killed_once_is_replaced_and_its_site_run_again(tmp_path: Path) -> None:
    """MindSpore 2.10 sometimes aborts a worker at a random call after a GRAPH compile failed;
    the site runs again in a fresh worker and its verdict says so. The crash here happens once
    (a file marks it), the verdict is the real one: equal for the exact rewrite, differs for a
    wrong one. One that crashes every time is still "could not run" (the test above)."""
    before = (MS101 / "local_ms_name_not_shadowed.py").read_text(encoding="utf-8")
    after = (MS101 / "local_ms_name_not_shadowed.expected.py").read_text(encoding="utf-8")
    wrong = after.replace("loss = self.network(x, y)", "loss = self.network(x * 2.0, y)", 1)
    assert wrong != after

    def once(mark: Path) -> str:
        return (
            "import os, pathlib, signal\n"
            f"if not pathlib.Path({str(mark)!r}).exists():\n"
            f"    pathlib.Path({str(mark)!r}).touch()\n"
            "    os.kill(os.getpid(), signal.SIGABRT)\n"
        )

    items = [
        (tmp_path / "exact.py", before, once(tmp_path / "exact.mark") + after),
        (tmp_path / "wrong.py", before, once(tmp_path / "wrong.mark") + wrong),
    ]
    exact, wrong_report = verify_many(items, VerifyOptions(modes=("pynative",), workers=1))
    said = "run again in a fresh worker after the worker died with signal SIGABRT"
    assert exact.results[0].verdict is Verdict.EQUAL and said in exact.results[0].detail, exact.results
    assert wrong_report.results[0].verdict is Verdict.DIFFERS and said in wrong_report.results[0].detail


@pytest.mark.mindspore
def test_import_that_never_returns_costs_the_import_limit_not_the_site_timeout(tmp_path: Path) -> None:
    """BEFORE loops forever at import. Its file is reported in both modes after one 3 s wait (the
    other mode is not tried again), and the next file is still verified, well inside the 300 s
    site timeout that used to be the only limit."""
    before = (MS101 / "local_ms_name_not_shadowed.py").read_text(encoding="utf-8")
    after = (MS101 / "local_ms_name_not_shadowed.expected.py").read_text(encoding="utf-8")
    loops = tmp_path / "loops.py"
    items = [(loops, "while True:\n    pass\n" + before, after), (tmp_path / "fine.py", before, after)]
    options = VerifyOptions(import_timeout_s=3, workers=1)
    started = time.monotonic()
    looping, fine = verify_many(items, options)
    elapsed = time.monotonic() - started
    assert [(row.mode, row.verdict, row.reason) for row in looping.results] == [
        (mode, Verdict.NOT_RUN, f"BEFORE: import did not finish in 3 s ({loops})") for mode in MODES
    ]
    assert [(row.mode, row.verdict) for row in fine.results] == [(mode, Verdict.EQUAL) for mode in MODES]
    assert elapsed < options.timeout_s, elapsed


@pytest.mark.mindspore
def test_upgrade_verify_writes_only_rewrites_proven_equal(tmp_path: Path) -> None:
    project = tmp_path / "legacy_project"
    shutil.copytree(EXAMPLE, project)
    shutil.copytree(CASES / "legacy_project_extras", project, dirs_exist_ok=True)
    original = {path.name: path.read_bytes() for path in (project / "src").glob("*.py")}

    code, output = invoke("upgrade", "--verify", str(project))
    # Every converted site proven and written; MS210 with no replacement and MSR019 remain.
    assert code == 1 and "; 7 findings remaining" in output, output
    src = project / "src"
    for name in ("train.py", "train_functional.py", "train_loss_scale.py", "custom_cell.py"):
        assert (src / name).read_bytes() != original[name], name
        assert "GradOperation" not in (src / name).read_text(encoding="utf-8")
        assert "self.grad(" not in (src / name).read_text(encoding="utf-8")
    # ClippedTrainStep applies the self.grad that nn.TrainOneStepCell creates.
    for site in ("TrainOneStepCell:21", "train_step:15", "TrainWithLossScale:7", "ClippedTrainStep:6"):
        for mode in ("pynative", "graph"):
            assert table_rows(output)[(site.split(":")[0], mode)][3] == "equal", (site, mode, output)
    # Its network comes from the verify factory, which the run does not read: converted, it
    # failed in GRAPH mode ("The parameters number of the function..."), so it is left alone.
    assert (src / "train_bn.py").read_bytes() == original["train_bn.py"]
    assert "train_bn.py:15:1: MSR019" in output
    assert ("TrainBatchNorm", "graph") not in table_rows(output)
    assert "4 files changed" in output
    # train.py imports c_transforms, which 2.10 lacks: its release fixes are applied to BEFORE
    # (each a proven pair) so that its train step runs on the target, and said so.
    release = "train.py: 2 release fixes (MS211:15, MS210:51) proven by the release facts, applied to BEFORE"
    assert release in output


PROJECTED_STEP = """\
import mindspore.nn as nn
import mindspore.ops as ops
import numpy as np
from mindspore import Parameter, Tensor
from mindspore.ops import composite as C


class ProjectedStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.projection = Parameter(Tensor(np.ones((16, 4), np.float32)), requires_grad=False)
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        data = ops.matmul(data, self.projection)
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_the_automatic_harness_cannot_drive_asks_for_a_factory(tmp_path: Path) -> None:
    # The step projects 16 features to 4: the probe's 4-feature inputs fail in BEFORE already.
    (tmp_path / "pyproject.toml").write_text('[tool.ms-migrate.verify]\nmode = "pynative"\n')
    step = tmp_path / "step.py"
    step.write_text(PROJECTED_STEP)
    code, output = invoke("upgrade", "--verify", "--target-version", "2.8", str(step))
    assert code == 2, output
    assert step.read_text() == PROJECTED_STEP
    lines = output.splitlines()
    first = lines.index(
        f"{step}: ProjectedStep:8 (pynative): could not run: the automatic harness could not drive this "
        "step (the original fails on its probe network and inputs too); name a harness in "
        "[tool.ms-migrate.verify] factory, see docs/verification.md#a-factory-for-your-own-network"
    )
    # The raw MindSpore error stays available, on the line under the advice.
    assert lines[first + 1].startswith("    both versions fail: RuntimeError: For 'MatMul"), lines[first + 1]
    held_back = f"{step}: not written: 1 site run: 1 could not run (ProjectedStep:8, pynative: "
    assert held_back + "could not run: the automatic harness could not drive this step" in output
    # The summary counts the site not written, which once read "0 sites converted, 0 left alone".
    assert "0 sites converted, 1 held back (--verify did not prove them), 0 left alone" in output
    # Written all the same when the user says so.
    code, output = invoke("upgrade", "--verify", "--allow-unverified", "--target-version", "2.8", str(step))
    assert code == 0, output
    assert "GradOperation" not in step.read_text()
    step.write_text(PROJECTED_STEP)

    # The factory docs/verification.md shows for this step is what it takes.
    docs = (TESTS.parent / "docs" / "verification.md").read_text(encoding="utf-8")
    blocks = [block.split("```")[0] for block in docs.split("```python\n")[1:]]
    factory = next(block for block in blocks if block.startswith("# verify_harness.py"))
    (tmp_path / "verify_harness.py").write_text(factory)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ms-migrate.verify]\nmode = "pynative"\nfactory = "verify_harness:build"\n'
    )
    code, output = invoke("upgrade", "--verify", "--target-version", "2.8", str(step))
    assert code == 0, output
    assert table_rows(output)[("ProjectedStep", "pynative")] == ["3", "0", "0", "equal"]
    assert "ms.grad(" in step.read_text()


DOWNGRADE = FIXTURES / "downgrade"

# A deliberately wrong downgrade rule, loaded through MS_MIGRATE_RULES_PATH: it scales the
# auxiliary output of the verified fixture's loss function, so the rewrite is not exact.
WRONG_DOWNGRADE_RULE = """\
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity
from ms_migrate.rules.base import Rule, VersionRange


class ScalesTheAuxiliary(Rule):
    code = "MSX901"
    kind = "downgrade"
    targets = VersionRange(high="1.8")
    prefilter = ("y * 2",)

    def check(self, ctx):
        for number, line in enumerate(ctx.text.splitlines(), 1):
            if line.endswith("y * 2"):
                end = (number, len(line))
                fix = Fix((Edit((number, len(line) - 1), end, "2.001"),), "exact")
                yield Diagnostic(self.code, number, 0, end, "wrong", Severity.ERROR, fix)
"""


@pytest.mark.mindspore
def test_downgrade_verify_writes_a_proven_rewrite_and_holds_back_one_that_differs(
    tmp_path: Path, fixture_imports: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`downgrade --verify` runs each rewritten site before and after, like upgrade's, AFTER on
    the target's runtime: MS302's rewrite (positions and has_aux below 1.8; the GradOperation
    made once at module level, which 1.7 compiles where one built inside a compiled function it
    rejects) is proven equal on a real 1.7 in both modes and written. The same file with a wrong
    rewrite added is held back with the difference shown."""
    if runtimes.available().get(Version(1, 7)) is None:
        pytest.skip("no MindSpore 1.7 runtime here: ms-migrate runtime install 1.7")
    source = (DOWNGRADE / "grad_position_verified_1_7.py").read_text(encoding="utf-8")
    step = tmp_path / "proven" / "step.py"
    step.parent.mkdir()
    step.write_text(source, encoding="utf-8")
    code, output = invoke("downgrade", "--verify", "--target-version", "1.7", str(step))
    assert code == 0, output
    for mode in MODES:
        assert table_rows(output)[("gradients", mode)][3] == "equal", (mode, output)
    assert "2.10.0 -> 1.7.0" in output
    expected = DOWNGRADE / "grad_position_verified_1_7.expected.py"
    assert step.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "wrong.py").write_text(WRONG_DOWNGRADE_RULE, encoding="utf-8")
    monkeypatch.setenv("MS_MIGRATE_RULES_PATH", str(rules))
    step = tmp_path / "refused" / "step.py"
    step.parent.mkdir()
    step.write_text(source, encoding="utf-8")
    code, output = invoke("downgrade", "--verify", "--target-version", "1.7", str(step))
    # 2, not 1: the changed loss_of is a site too, and no automatic harness runs a bare loss.
    assert code == 2, output
    assert step.read_text(encoding="utf-8") == source
    for mode in MODES:
        assert table_rows(output)[("gradients", mode)][3] == "differs:", (mode, output)
    assert f"{step}: not written: 4 site runs: 2 differs, 2 could not run" in output
    assert "0 files changed (1 checked), 0 sites converted" in output


# ---------------------------------------------------------------------------------------------
# Script mode (plain Python scripts: the comparison, not MindSpore, is under test)


def test_script_mode_compares_printed_numbers(tmp_path: Path) -> None:
    def script(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(body), encoding="utf-8")
        return str(path)

    before = script("before.py", 'print(\'{"loss": [0.5, 0.25], "step": 2}\')\nprint("epoch 1 loss 0.125")\n')
    same = script(
        "same.py", 'print(\'{"step": 2, "loss": [0.5, 0.2500000001]}\')\nprint("epoch 1 loss 0.125")\n'
    )
    wrong = script("wrong.py", 'print(\'{"loss": [0.5, 0.26], "step": 2}\')\nprint("epoch 1 loss 0.125")\n')
    broken = script("broken.py", "raise SystemExit('no data')\n")

    code, output = invoke("verify", "--script", "--mode", "pynative", before, same)
    assert code == 0, output
    code, output = invoke("verify", "--script", "--mode", "graph", "--format", "json", before, wrong)
    assert code == 1
    (site,) = json.loads(output)["sites"]
    assert site["reason"] == "printed numbers differ (number 2)" and site["max_abs_diff"] == pytest.approx(
        0.01
    )
    code, output = invoke("verify", "--script", "--mode", "pynative", before, broken)
    assert code == 1 and "AFTER fails while BEFORE runs: exited with status 1: no data" in output
    code, output = invoke("verify", "--script", "--mode", "pynative", broken, before)
    assert code == 2 and "BEFORE fails" in output


# ---------------------------------------------------------------------------------------------
# Pure parts


def test_site_plans_read_the_cell() -> None:
    before = (CASES / "wrong_rewrites_before.py").read_text(encoding="utf-8")
    after = (CASES / "wrong_rewrites_after.py").read_text(encoding="utf-8")
    plans = {plan.name: plan for plan in differing_sites(before, after)}
    assert plans["TrainLossScale"].inputs == ("feature", "label")
    assert plans["TrainLossScale"].optimizer and plans["TrainLossScale"].network_inputs == 2
    assert plans["TrainWithAux"].outputs == 2
    assert plans["InputGradient"].inputs == ("feature",) and not plans["InputGradient"].optimizer

    sens_argument = (MS101 / "sens_from_construct_argument_2_8.py").read_text(encoding="utf-8")
    (plan,) = differing_sites(sens_argument, migrate_text(sens_argument, Version(2, 8)).text)
    assert plan.inputs == ("feature", "label", "scalar") and plan.network_inputs == 2


def test_site_plans_say_why_no_harness_fits() -> None:
    legacy = "import mindspore.nn as nn\n\n\nclass Step(nn.Cell):\n    def __init__(self, a, b, c):\n"
    legacy += "        super().__init__()\n\n    def construct(self, x):\n        return x\n"
    (plan,) = differing_sites(legacy, legacy.replace("return x", "return x * 2"))
    assert plan.kind == "none" and "__init__(self, a, b, c) takes 'a', for which" in plan.problem
    (plan,) = differing_sites("A = 1\n", "A = 2\n")
    assert plan.kind == "skip" and plan.problem == "the versions differ only in module-level statements"
    assert differing_sites("x = 1  # one\n", "x = 1  # uno\n") == []
    unchanged_user = "from m import f\n\n\ndef step(x):\n    return f(x)\n"
    (plan,) = differing_sites(unchanged_user, unchanged_user.replace("from m import f", "from n import f"))
    assert plan.name == "step" and plan.problem == "not a train step or grad function"


def test_config_table_with_and_without_tomllib(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\n\n[tool.ms-migrate.verify]\nfactory = "harness:build"  # why\n'
    text += 'mode = "graph"\nsteps = 5\npython-path = ["src"]\n\n[tool.other]\nsteps = 9\n'
    assert _fallback_table(text) == {
        "factory": "harness:build",
        "mode": "graph",
        "steps": 5,
        "python-path": ["src"],
    }
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    config = find_config(tmp_path / "pkg")
    assert config is not None and config.factory == "harness:build"
    assert config.search_path == [str(tmp_path / "src"), str(tmp_path)]
    options = apply_settings(VerifyOptions(), config, explicit={"steps"})
    assert options.modes == ("graph",) and options.steps == 3
    assert options.import_limit_s == 60

    (tmp_path / "pyproject.toml").write_text(
        "[tool.ms-migrate.verify]\ntimeout = 20\nimport-timeout = 45\n", encoding="utf-8"
    )
    options = apply_settings(VerifyOptions(), find_config(tmp_path), explicit=set())
    assert (options.timeout_s, options.import_timeout_s, options.import_limit_s) == (20, 45, 20)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('steps = "three"', "steps must be a whole number, at least 1, not 'three'"),
        ("steps = 0", "steps must be a whole number, at least 1, not 0"),
        ("sandbox = 1", "sandbox must be true or false, not 1"),
        ('mode = "eager"', "mode must be pynative, graph or both, not 'eager'"),
        ('factory = "harness.build"', "factory must be a \"module:function\" string, not 'harness.build'"),
        ('factroy = "harness:build"', "unknown key 'factroy' (known: factory, python-path, device,"),
    ],
)
def test_verify_table_mistakes_are_errors_naming_the_key(line: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.ms-migrate.verify]\n{line}\n", encoding="utf-8")
    step = tmp_path / "step.py"
    shutil.copy(MS101 / "cell_get_by_list.py", step)
    original = step.read_bytes()
    where = f"{tmp_path / 'pyproject.toml'} [tool.ms-migrate.verify]: "
    for args in (["upgrade", "--verify", "--target-version", "2.8"], ["verify"]):
        result = CliRunner().invoke(main, [*args, str(step), *([str(step)] if args == ["verify"] else [])])
        assert result.exit_code == 2 and where + message in result.stderr, (args, result.output)
        assert "Traceback" not in result.output and "TypeError" not in result.output
    assert step.read_bytes() == original


def test_verify_table_values_in_other_spellings(tmp_path: Path) -> None:
    text = '[tool.ms-migrate.verify]\ndevice = "cpu"\npython-path = "src"\nmode = "GRAPH"\ntimeout = 30\n'
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    config = find_config(tmp_path)
    assert config is not None and config.search_path == [str(tmp_path / "src"), str(tmp_path)]
    options = apply_settings(VerifyOptions(), config, explicit=set())
    assert (options.device, options.modes, options.timeout_s) == ("CPU", ("graph",), 30)


def test_tolerance_rule_and_rendering() -> None:
    assert compare_numbers([1.0, 2.0], [1.0 + 1e-6, 2.0], rtol=1e-5, atol=1e-6).first_mismatch is None
    tally = compare_numbers([1.0, float("nan")], [1.0, 0.0], rtol=1e-5, atol=1e-6)
    assert tally.first_mismatch == "printed numbers differ (number 2)" and tally.max_abs == float("inf")
    report = VerificationReport(
        Path("train.py"),
        [
            SiteResult("Step", 3, "graph", Verdict.EQUAL, 3, 0.0, 0.0),
            SiteResult("Step", 3, "pynative", Verdict.DIFFERS, 3, 0.5, 0.25, "parameter w after step 1"),
            SiteResult("Other", 9, "graph", Verdict.NOT_RUN, reason="advice", detail="ValueError: raw"),
        ],
    )
    console = Console(record=True, width=100, force_terminal=False)
    print_report(console, report)
    text = console.export_text()
    assert table_rows(text)[("Step", "graph")] == ["3", "0", "0", "equal"]
    assert "train.py: Step:3 (pynative): differs: parameter w after step 1" in text
    assert "train.py: Other:9 (graph): could not run: advice\n    ValueError: raw\n" in text
    assert report.exit_code == 2 and report.to_json()["sites"][1]["max_abs_diff"] == 0.5
    assert SiteResult.from_json(report.results[1].to_json()) == report.results[1]
    assert SiteResult.from_json(report.results[2].to_json()) == report.results[2]


RELEASE_FIXES_ONLY = """\
from mindspore.dataset.transforms import c_transforms


def labels(dataset, dtype):
    return dataset.map(operations=c_transforms.TypeCast(dtype), input_columns="y")
"""


@pytest.mark.mindspore
def test_a_file_changed_only_by_release_fixes_has_nothing_else_to_run(tmp_path: Path) -> None:
    """Its BEFORE, with the release fixes applied, is its AFTER: nothing is run, the file is
    written, and the report names the fixes it took as proven."""
    script = tmp_path / "pipeline.py"
    script.write_text(RELEASE_FIXES_ONLY, encoding="utf-8")
    code, output = invoke("upgrade", "--verify", "--target-version", "2.10", str(script))
    assert code == 0, output
    assert "from mindspore.dataset import transforms as c_transforms" in script.read_text(encoding="utf-8")
    assert f"{script}: 1 release fix (MS211:1) proven by the release facts; nothing else to run" in output
    assert "1 file changed" in output


@pytest.mark.mindspore
def test_a_downgrade_takes_its_release_fixes_as_proven_and_runs_the_rest_on_the_target(
    tmp_path: Path,
) -> None:
    """Going down, the release fixes (1.7's c_transforms in a dataset function, set_context for
    set_device and load_param_into_net's one result in `main`) are proven by pairs run on 1.7,
    not by running their definitions, which have no harness: `downgrade --verify` runs the two
    grad sites (BEFORE on 2.10, AFTER whole on the real 1.7) and writes. Before, `create_dataset`
    and `main` could not run, and nothing was written."""
    script = tmp_path / "function_steps.py"
    shutil.copy(FIXTURES / "scripts" / "function_steps_1x.expected.py", script)
    code, output = invoke("downgrade", "--verify", "--target-version", "1.7", str(script))
    assert code == 0, output
    assert "(MS211:33, MS305:73, MS221:86) proven by the release facts, applied to AFTER" in output
    for site in ("train_step:52", "saliency:65"):
        assert_equal_in_both_modes(output, f"{script}: {site}", "")
    assert "create_dataset" not in output and "main:70" not in output
    assert "C.c_transforms.TypeCast(ms.int32)" in script.read_text(encoding="utf-8")


def assert_equal_in_both_modes(output: str, site: str, detail: str) -> None:
    """``site`` (`file.py: Class:line`) is `equal` in both modes, with ``detail`` under each row."""
    for mode in ("pynative", "graph"):
        assert f"{site} ({mode}): equal\n    {detail}" in output, output


STEP_WITH_STRAY_IMPORTS = """\
import mindspore.nn as nn
import mindspore.ops as ops
import pandas_nowhere as pd
from easydict_nowhere import EasyDict as edict
from sklearn_nowhere.metrics import f1_score
{used}

def report(values):
    return pd.DataFrame(values), f1_score


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_package_the_runtime_lacks_is_stood_in_for_and_named_and_a_use_of_it_cannot_run(
    tmp_path: Path,
) -> None:
    """Three packages imported and never used by the step: it runs, equal, and the verdict names
    them. The same file building a config from one at import: that is a use, and it cannot run."""
    (tmp_path / "stray.py").write_text(STEP_WITH_STRAY_IMPORTS.format(used=""), encoding="utf-8")
    used = STEP_WITH_STRAY_IMPORTS.format(used='CFG = edict({"lr": 0.1})\n')
    (tmp_path / "used.py").write_text(used, encoding="utf-8")
    code, output = invoke("upgrade", "--verify", "--target-version", "2.10", "--no-cache", str(tmp_path))
    assert code == 2, output
    named = "stood in for easydict_nowhere, pandas_nowhere, sklearn_nowhere (not installed in this runtime)"
    assert_equal_in_both_modes(output, "stray.py: TrainStep:12", named)
    for mode in ("pynative", "graph"):
        refused = f"used.py: TrainStep:13 ({mode}): could not run: BEFORE raised at import: StandInUsed: "
        assert refused in output, output
    assert "easydict_nowhere.EasyDict was used, and 'easydict_nowhere' is not installed" in output
    assert "GradOperation" not in (tmp_path / "stray.py").read_text(encoding="utf-8")
    assert (tmp_path / "used.py").read_text(encoding="utf-8") == used


def test_no_stand_in_takes_the_place_of_mindspore_a_project_module_or_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ms_migrate.verify.worker import ProjectModules, Versions

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "helpers").mkdir()
    step = tmp_path / "app" / "step.py"
    step.parent.mkdir()
    # The label is the path as the user gave it; the worker runs elsewhere (its scratch folder),
    # so the project is looked up from the file's place, not from the label.
    job = {"before_label": "app/step.py", "before_place": str(step), "search_path": []}
    monkeypatch.chdir(tmp_path.parent)
    versions = Versions(job, lambda: None, str, lambda **_: None, ProjectModules())

    def missing(name: str) -> ModuleNotFoundError:
        return ModuleNotFoundError(f"No module named {name!r}", name=name)

    assert versions._standable(missing("pandas_nowhere.io")) == "pandas_nowhere"
    assert versions._standable(missing("helpers")) is None  # the project holds it: the path is wrong
    assert versions._standable(missing("mindspore.dataset.vision.c_transforms")) is None
    assert versions._standable(missing("json.nowhere")) is None  # json is there: a part of it is not
    assert versions._standable(ImportError("cannot import name 'x'", name="pandas_nowhere")) is None
    # A module the project compiles and has not built (RandLA-Net's
    # utils/nearest_neighbors/lib, made by `python setup.py build_ext` from knn.pyx) is stood in
    # for by its dotted name, and so is one its copy does not hold (AECRNet's
    # `models.edsr_model`, left out of the repository); where a file of that name lies elsewhere
    # in the project, the path may be what is wrong.
    (tmp_path / "utils" / "nearest_neighbors").mkdir(parents=True)
    (tmp_path / "utils" / "nearest_neighbors" / "knn.pyx").write_text("", encoding="utf-8")
    (tmp_path / "utils" / "plain").mkdir()
    built = versions._standable(missing("utils.nearest_neighbors.lib"))
    assert built == "utils.nearest_neighbors.lib"
    assert versions._standable(missing("utils.plain.absent")) == "utils.plain.absent"
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "elsewhere.py").write_text("", encoding="utf-8")
    assert versions._standable(missing("utils.plain.elsewhere")) is None
    assert versions._standable(missing("utils.nearest_neighbors")) is None  # the folder is there

    from ms_migrate.verify import standins

    said = standins.describe({"utils.nearest_neighbors.lib", "pandas_nowhere", "utils.plain.absent"})
    assert "stood in for pandas_nowhere (not installed in this runtime)" in said, said
    assert "stood in for utils.nearest_neighbors.lib (the project compiles it from its sources" in said
    assert "stood in for utils.plain.absent (its package is in the project, and no file of the" in said
    finder = standins.StandIns()
    finder.activate({"utils.nearest_neighbors.lib"})
    assert finder.find_spec("utils.nearest_neighbors.lib.python.nearest_neighbors") is not None
    assert finder.find_spec("utils.nearest_neighbors") is None and finder.find_spec("utils") is None


@pytest.mark.mindspore
def test_a_device_the_script_sets_at_import_is_left_out_and_said(tmp_path: Path) -> None:
    """`context.set_context(device_target="GPU")` at import raised on the CPU runtime, so the site
    could not run; the device is verify's to choose: the key is left out, the mode kept, and the
    verdict says so."""
    stray = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1]  # the train step alone
    on_gpu = 'context.set_context(mode=context.GRAPH_MODE, device_target="GPU")\n'
    source = "import mindspore.nn as nn\nimport mindspore.ops as ops\nfrom mindspore import context\n"
    source += on_gpu + "\n\n" + stray
    (tmp_path / "on_gpu.py").write_text(source, encoding="utf-8")
    # MS101 only; verify runs both versions with MS210's release fix, set_device("GPU"), which
    # is left out alike.
    options = ("--target-version", "2.10", "--no-cache", "--select", "MS101")
    code, output = invoke("upgrade", "--verify", *options, str(tmp_path))
    assert code == 0, output
    left_out = "the code's set_device('GPU') left out: verify runs on CPU"
    assert_equal_in_both_modes(output, "on_gpu.py: TrainStep:7", left_out)


@pytest.mark.mindspore
def test_release_fixes_the_run_does_not_select_apply_to_both_versions_for_the_run(tmp_path: Path) -> None:
    """`--select MS101` over a file importing `c_transforms`, which 2.10 lacks: BEFORE and AFTER
    both run with the release fix applied (each a proven pair), the step is proven on the rest,
    and the file written keeps the import, as the selection asked."""
    stray = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1]
    head = "import mindspore.nn as nn\nimport mindspore.ops as ops\n"
    source = head + "import mindspore.dataset.vision.c_transforms as C\n\n\n" + stray
    (tmp_path / "legacy.py").write_text(source, encoding="utf-8")
    options = ("--target-version", "2.10", "--no-cache", "--select", "MS101")
    code, output = invoke("upgrade", "--verify", *options, str(tmp_path))
    assert code == 0, output
    assert "release fix (MS211:3) proven by the release facts, applied to BEFORE and AFTER" in output, output
    rows = table_rows(output)
    assert rows[("TrainStep", "pynative")][3] == rows[("TrainStep", "graph")][3] == "equal", output
    written = (tmp_path / "legacy.py").read_text(encoding="utf-8")
    assert "c_transforms" in written and "GradOperation" not in written


@pytest.mark.mindspore
def test_a_script_ending_in_exit_0_is_run_on_what_it_defined_and_a_failing_exit_is_not(
    tmp_path: Path,
) -> None:
    """A tutorial's last line `exit(0)` ends its import as running it would: the step defined above
    it is proven, and the verdict says so. `sys.exit(1)` is a failure: the site cannot run."""
    stray = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1]
    head = "import sys\n\nimport mindspore.nn as nn\nimport mindspore.ops as ops\n\n\n"
    (tmp_path / "tutorial.py").write_text(head + stray + "\n\nprint('done')\nexit(0)\n", encoding="utf-8")
    (tmp_path / "failing.py").write_text(head + stray + "\n\nsys.exit(1)\n", encoding="utf-8")
    options = ("--target-version", "2.10", "--no-cache", "--dry-run")
    code, output = invoke("upgrade", "--verify", *options, str(tmp_path))
    assert code == 2, output
    said = "the module's import ended in exit(0) (BEFORE:23, AFTER:22), as running it would"
    for mode in ("pynative", "graph"):
        assert f"tutorial.py: TrainStep:7 ({mode}): equal\n    {said}" in output, output
        assert (
            f"failing.py: TrainStep:7 ({mode}): could not run: BEFORE raised at import: SystemExit: 1"
            in output
        )


HELPER_WITH_A_REMOVED_NAME = """\
from mindspore.common.api import ms_function


@ms_function
def compiled_double(x):
    return x * 2


def halve(x):
    return x / 2
"""


@pytest.mark.mindspore
def test_a_project_module_with_a_removed_name_runs_with_its_release_fix_in_both_versions(
    tmp_path: Path,
) -> None:
    """The step imports a helper of its package that imports `ms_function`, which 2.10 lacks:
    both versions import the helper's release-fixed text in place of its file (GRAPH mode reads
    `halve`'s source from it), the step is proven, the report names the helper and its fix, and
    the helper's file is left as it is."""
    stray = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1].replace("return loss", "return halve(loss)")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("", encoding="utf-8")
    helper = tmp_path / "src" / "helper.py"
    helper.write_text(HELPER_WITH_A_REMOVED_NAME, encoding="utf-8")
    head = "import mindspore.nn as nn\nimport mindspore.ops as ops\nfrom src.helper import halve\n"
    (tmp_path / "train.py").write_text(head + "\n\n" + stray, encoding="utf-8")
    options = ("--target-version", "2.10", "--no-cache", "--select", "MS101")
    code, output = invoke("upgrade", "--verify", *options, str(tmp_path / "train.py"))
    assert code == 0, output
    assert "project modules run with their release fixes, by both versions: " in output, output
    assert f"{Path('src', 'helper.py')} (MS210:1, MS211:1)\n" in output, output
    rows = table_rows(output)
    assert rows[("TrainStep", "pynative")][3] == rows[("TrainStep", "graph")][3] == "equal", output
    assert helper.read_text(encoding="utf-8") == HELPER_WITH_A_REMOVED_NAME
    assert "GradOperation" not in (tmp_path / "train.py").read_text(encoding="utf-8")


def test_the_files_an_import_reaches_are_the_project_s_own_followed_through_packages(tmp_path: Path) -> None:
    from ms_migrate.verify.reached import reached_files

    for name, text in {
        "src/__init__.py": "from .models import net\n",
        "src/models/__init__.py": "",
        "src/models/net.py": "import numpy\nfrom ..utils import tools\n",
        "src/utils/__init__.py": "",
        "src/utils/tools.py": "def lazy():\n    import src.config\n",
        "src/config.py": "",
        "src/unused.py": "",
        "other/outside.py": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = reached_files(
        tmp_path / "train.py", "from src import config\n", [str(tmp_path / "src"), str(tmp_path)]
    )
    names = [str(path.relative_to(tmp_path.resolve())).replace("\\", "/") for path in found]
    assert sorted(names) == [
        "src/__init__.py",
        "src/config.py",
        "src/models/__init__.py",
        "src/models/net.py",
        "src/utils/__init__.py",
        "src/utils/tools.py",
    ]
    assert reached_files(tmp_path / "train.py", "import (", [str(tmp_path)]) == []


CRITERION_STEP = """\
import mindspore.nn as nn
import mindspore.ops as ops


class TrainWithCriterion(nn.Cell):
    def __init__(self, backbone, loss_fn, optimizer, adversarial_temperature):
        super().__init__()
        self.backbone = backbone
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.temperature = adversarial_temperature
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def forward(self, data, label):
        return self.loss_fn(self.backbone(data), label) * self.temperature

    def construct(self, data, label):
        loss = self.forward(data, label)
        grads = self.grad(self.forward, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""


def test_a_criterion_and_a_loss_s_hyperparameter_are_given_values_a_loss_network_is_not() -> None:
    from ms_migrate.verify.sites import init_value

    assert [init_value(name) for name in ("loss_fn", "criterion_d", "adversarial_temperature")] == [
        "criterion",
        "criterion",
        "1.0",
    ]
    assert init_value("loss") is None  # most often the network with its loss
    assert init_value("loss_net") == "network" and init_value("loss_scale") == "3.0"


@pytest.mark.mindspore
def test_a_step_that_applies_its_own_criterion_runs_with_mindspore_s_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "criterion.py").write_text(CRITERION_STEP, encoding="utf-8")
    code, output = invoke("upgrade", "--verify", "--target-version", "2.10", "--no-cache", str(tmp_path))
    assert code == 0, output
    said = "its criterion was MindSpore's nn.MSELoss, in place of the one the training script passes"
    assert_equal_in_both_modes(output, "criterion.py: TrainWithCriterion:5", said)


@pytest.mark.mindspore
def test_a_file_that_calls_exit_at_import_costs_only_its_own_sites(tmp_path: Path) -> None:
    """The builtin `exit()` closes sys.stdin: where the worker read its tasks from stdin, one
    tutorial's `exit(0)` at import ended the worker, and the sites of the other files it served
    could not run. One worker serves both files here: the tutorial's import ends at its `exit(0)`
    (what it defined above runs, and is proven), and the other file runs after it."""
    (tmp_path / "pyproject.toml").write_text("[tool.ms-migrate.verify]\nworkers = 1\n", encoding="utf-8")
    step = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1]
    head = "import mindspore.nn as nn\nimport mindspore.ops as ops\n\n\n"
    (tmp_path / "a_exits.py").write_text(head + step + "\n\nexit(0)\n", encoding="utf-8")
    (tmp_path / "b_runs.py").write_text(head + step, encoding="utf-8")
    code, output = invoke("upgrade", "--verify", "--target-version", "2.10", "--no-cache", str(tmp_path))
    assert code == 0, output
    assert "a_exits.py: TrainStep:5 (pynative): equal\n    the module's import ended in exit(0)" in output
    assert "worker exited" not in output, output
    rows = [line.split() for line in output.splitlines() if line.split()[:1] == ["TrainStep:5"]]
    assert [row[-1] for row in rows] == ["equal"] * 4, output  # both files, both modes


def test_a_requirements_package_comes_back_as_it_was_for_the_next_project_that_has_it(tmp_path: Path) -> None:
    """A package installed for a project's requirements leaves ``sys.modules`` when the worker
    moves to a project without that folder, and comes back, the same module objects, for the next
    one with it: imported again, opencv's Python code ran over its already loaded extension and
    failed (`module 'cv2.dnn' has no attribute 'DictValue'`)."""
    import importlib
    import sys

    from ms_migrate.verify import worker

    folders = {}
    for name in ("with", "without"):
        folders[name] = tmp_path / f"requirements-{name}"
        (folders[name] / "msm_req_pkg").mkdir(parents=True)
        (folders[name] / "msm_req_pkg" / "__init__.py").write_text(f"FOLDER = {name!r}\n")
    for project in ("a", "b", "c"):
        (tmp_path / project).mkdir()
    saved_path, saved_for, saved_ever = (
        list(sys.path),
        list(worker._INSTALLED_FOR),
        list(worker._EVER_INSTALLED),
    )
    projects = worker.ProjectModules()
    try:
        worker._installed_first([str(folders["with"])])
        projects.activate([str(tmp_path / "a")])
        first = importlib.import_module("msm_req_pkg")
        sys.modules["msm_req_pkg.made_by_compiled_code"] = type(sys)("msm_req_pkg.made_by_compiled_code")
        worker._installed_first([str(folders["without"])])
        projects.activate([str(tmp_path / "b")])
        assert not any(name.startswith("msm_req_pkg") for name in sys.modules)
        assert importlib.import_module("msm_req_pkg").FOLDER == "without"
        worker._installed_first([str(folders["with"])])
        projects.activate([str(tmp_path / "c")])
        assert sys.modules["msm_req_pkg"] is first
        assert "msm_req_pkg.made_by_compiled_code" in sys.modules
    finally:
        sys.path[:] = saved_path
        worker._INSTALLED_FOR[:] = saved_for
        worker._EVER_INSTALLED[:] = saved_ever
        for name in [name for name in sys.modules if name.startswith("msm_req_pkg")]:
            del sys.modules[name]


REMOVED_HELPER = """\
from mindspore.ops import operations as P
from mindspore.ops.operations import ResizeBilinear
import mindspore.nn.layer.quant as quant
from mindspore.dataset.transforms import py_transforms

RESIZE_CLASS = P.ResizeBilinear
{used}

def make_resize():
    return ResizeBilinear((4, 4))
"""
GUARDED_HELPER = """\
try:
    from mindspore.ops.operations import ResizeBilinear
except ImportError:
    ResizeBilinear = None
"""


@pytest.mark.mindspore
def test_a_mindspore_name_a_release_removed_is_stood_in_for_at_import_and_named(tmp_path: Path) -> None:
    """A helper the step's file imports names three things 2.10 no longer has (an operator, two
    modules): the step runs, equal, and the verdict names them. The same helper building the
    operator at import cannot run, and says which name it used. A helper that guards its import
    keeps its own fallback: nothing is stood in for."""
    step = STEP_WITH_STRAY_IMPORTS.split("\n\n\n", 1)[1]
    for name, helper in {
        "stray": REMOVED_HELPER.format(used=""),
        "used": REMOVED_HELPER.format(used="RESIZE = P.ResizeBilinear((2, 2))"),
        "guarded": GUARDED_HELPER,
    }.items():
        (tmp_path / f"helper_{name}.py").write_text(helper, encoding="utf-8")
        source = f"import mindspore.nn as nn\nimport mindspore.ops as ops\nimport helper_{name}\n\n\n{step}"
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    files = [str(tmp_path / f"{name}.py") for name in ("stray", "used", "guarded")]
    report = tmp_path / "report.json"
    options = ("--target-version", "2.10", "--no-cache", "--dry-run", "--report", str(report))
    code, output = invoke("upgrade", "--verify", *options, *files)
    assert code == 2, output
    named = (
        "stood in for mindspore.dataset.transforms.py_transforms, mindspore.nn.layer.quant, "
        "mindspore.ops.operations.ResizeBilinear (MindSpore 2.10."
    )
    assert_equal_in_both_modes(output, "stray.py: TrainStep:6", named)
    for mode in ("pynative", "graph"):
        refused = f"used.py: TrainStep:6 ({mode}): could not run: BEFORE raised at import: StandInUsed: "
        assert refused + "mindspore.ops.operations.ResizeBilinear was used" in output, output
    guarded = next(
        item for item in json.loads(report.read_text())["files"] if item["path"].endswith("guarded.py")
    )
    assert [(row["verdict"], row["detail"]) for row in guarded["verified"]] == [("equal", "")] * 2


def test_a_stand_in_is_a_subclass_of_nothing_and_pytest_s_marks_leave_what_they_decorate() -> None:
    """MindSpore's tests file vm implementations by operator (`@vm_impl_getters.register(
    P.ResizeBilinear)`, which asks issubclass) and mark tests at import (`non_graph_engine =
    pytest.mark.skipif(...)`): 63 converted sites of a public copy of them stopped there, with
    pytest and the removed operator stood in for."""
    from ms_migrate.verify import standins
    from ms_migrate.verify.removed_names import _RemovedModule

    class Primitive:
        pass

    filed: dict[int, str] = {}

    def register(prim: object) -> None:  # as mindspore.ops._register_for_op.Registry files one
        if isinstance(prim, str):
            filed[id(prim)] = prim
        elif issubclass(prim, Primitive):  # type: ignore[arg-type]
            filed[id(prim)] = "class"

    gone = _RemovedModule("mindspore.ops.operations").ResizeBilinear
    register(gone)
    assert not filed and not isinstance(Primitive(), gone)  # type: ignore[arg-type]
    with pytest.raises(standins.StandInUsed, match="ResizeBilinear was used"):
        gone((2, 2))

    stood_in = standins._StandInModule("pytest")

    def test_something() -> int:
        return 1

    for decorator in (
        stood_in.mark.skipif(True, reason="Not support running on GE environment"),
        stood_in.mark.parametrize("x", [1, 2]),
        stood_in.mark.level0,
        stood_in.fixture,
        stood_in.fixture(scope="module"),
    ):
        assert decorator(test_something) is test_something
    assert stood_in.mark.env_onecard(Primitive) is Primitive
    for used in (
        lambda: stood_in.raises(ValueError),
        lambda: stood_in.approx(1.0),
        lambda: stood_in.skip("x"),
    ):
        with pytest.raises(standins.StandInUsed, match="'pytest' is not installed"):
            used()
    assert "pytest.fixture and pytest.mark stood in as decorators" in standins.describe({"pytest"})
    assert "decorators" not in standins.describe({"pandas"})


def test_only_a_mindspore_name_an_earlier_release_had_is_stood_in_for() -> None:
    from ms_migrate.verify.removed_names import asked, removed

    gone = ImportError("cannot import name 'ResizeBilinear' from 'mindspore.ops.operations' (/x.py)")
    assert asked(gone) == "mindspore.ops.operations.ResizeBilinear"
    assert asked(AttributeError("module 'mindspore.ops' has no attribute 'ResizeBilinear'")) == (
        "mindspore.ops.ResizeBilinear"
    )
    module = ModuleNotFoundError(
        "No module named 'mindspore.nn.layer.quant'", name="mindspore.nn.layer.quant"
    )
    assert asked(module) == "mindspore.nn.layer.quant"
    assert asked(ModuleNotFoundError("No module named 'pandas'", name="pandas")) is None
    assert asked(AttributeError("'Tensor' object has no attribute 'x'")) is None

    assert (
        removed("mindspore.ops.operations.ResizeBilinear", "2.8.0")
        == "mindspore.ops.operations.ResizeBilinear"
    )
    assert removed("mindspore.ops.operations.ResizeBilinear", "1.10.1") is None  # 1.10 has it
    # A name inside a removed module stands in as the module.
    assert removed("mindspore.nn.layer.quant.Conv2dQuant", "2.8.0") == "mindspore.nn.layer.quant"
    assert removed("mindspore.dataset.transforms.py_transforms", "2.7.2") is None  # 2.7 still has it
    assert removed("mindspore.ops.operations.NoSuchOperator", "2.8.0") is None  # no release had it: a mistake
    # Older than every release checked: not stood in for here (``removed_ops`` has its own).
    assert removed("mindspore.ops.operations.ControlDepend", "2.8.0") is None
    assert removed("mindspore.ops.operations.ResizeBilinear", "not a version") is None


TEST_FUNCTIONS = """\
import numpy as np
import pytest
import mindspore as ms
import mindspore.nn as nn
from mindspore import Tensor, ParameterTuple, context
from mindspore.ops import composite as C


@pytest.mark.level0
def test_nested_cells():
    context.set_context(mode=context.GRAPH_MODE)

    class Net(nn.Cell):
        def __init__(self):
            super(Net, self).__init__()
            self.dense = nn.Dense(3, 2)

        def construct(self, x):
            return self.dense(x).sum()

    class NetGrad(nn.Cell):
        def __init__(self, net):
            super(NetGrad, self).__init__()
            self.grad_op = C.GradOperation(get_by_list=True)
            self.net = net
            self.weights = ParameterTuple(self.net.trainable_params())

        def construct(self, x):
            return self.grad_op(self.net, self.weights)(x)

    net = NetGrad(Net())
    net(Tensor(np.ones((4, 3)), ms.float32))


def test_inline():
    net = nn.Dense(3, 2)
    x = Tensor(np.ones((4, 3)), ms.float32)
    grad_fn = C.GradOperation(get_all=True)
    out = grad_fn(net)(x)
    assert out[0].shape == (4, 3)


def test_never_builds_its_cell():
    class NetGrad(nn.Cell):
        def __init__(self, net):
            super(NetGrad, self).__init__()
            self.grad_op = C.GradOperation()
            self.net = net

        def construct(self, x):
            return self.grad_op(self.net)(x)

    y = Tensor(np.ones((2, 2)), ms.float32) * 2


@pytest.mark.parametrize("mode, scale", [(context.GRAPH_MODE, 1.0), (context.GRAPH_MODE, 2.0)])
def test_parametrized(mode, scale):
    context.set_context(mode=mode)
    net = nn.Dense(3, 2)
    x = Tensor(np.ones((4, 3)), ms.float32) * scale
    grad_fn = C.GradOperation(get_all=True)
    out = grad_fn(net)(x)


def test_expects_an_error_that_never_comes():
    net = nn.Dense(3, 2)
    grad_fn = C.GradOperation(get_all=True)
    out = grad_fn(net)(Tensor(np.ones((4, 3)), ms.float32))
    with pytest.raises(RuntimeError):
        out[0].asnumpy()
"""


@pytest.mark.mindspore
def test_a_test_function_that_takes_no_inputs_runs_as_written_and_is_compared_by_what_it_computes(
    tmp_path: Path,
) -> None:
    """pytest runs `def test_x():` as it is, and so does verify: its Cells defined in its body,
    its own mode left out. A test whose rewritten lines never run proves nothing; an AFTER that
    computes other numbers differs, and the row says which value."""
    before = tmp_path / "test_ops.py"
    before.write_text(TEST_FUNCTIONS, encoding="utf-8")
    report = tmp_path / "report.json"
    options = ("--target-version", "2.10", "--no-cache", "--dry-run", "--report", str(report))
    code, output = invoke("upgrade", "--verify", *options, str(before))
    assert code == 2, output
    rows = {
        (row["site"].split(":")[0], row["mode"]): row
        for row in json.loads(report.read_text(encoding="utf-8"))["files"][0]["verified"]
    }
    for mode in ("pynative", "graph"):
        nested, inline = rows["test_nested_cells", mode], rows["test_inline", mode]
        assert (nested["verdict"], inline["verdict"]) == ("equal", "equal"), output
        assert "ran the test function as written" in nested["detail"]
        assert "set_context(mode=0) left out: each row runs in its own mode" in nested["detail"]
        assert "its locals at the end (net, out, x)" in inline["detail"]
        assert rows["test_parametrized", mode]["verdict"] == "equal", output
    for mode in ("pynative", "graph"):  # pytest's own failure is the test's, not the worker's end
        failed = rows["test_expects_an_error_that_never_comes", mode]
        assert failed["reason"].startswith("both versions fail: RuntimeError: Failed: DID NOT RAISE"), output
    never = rows["test_never_builds_its_cell", "pynative"]
    assert never["verdict"] == "could not run"
    assert never["reason"].startswith("the test function ran, but not the lines the rewrite changed")

    after = tmp_path / "after.py"
    upgraded = migrate_text(TEST_FUNCTIONS, target=Version(2, 10)).text
    assert "out = (ms.grad(net, 0)(x),)" in upgraded
    after.write_text(upgraded.replace("out = (ms.grad(net, 0)(x),)", "out = (ms.grad(net, 0)(x) * 2,)"))
    code, output = invoke("verify", "--mode", "pynative", str(before), str(after))
    assert "test_inline:35 (pynative): differs: its local out at the end differs" in output, output


GRAD_ONLY_IN_CONSTRUCT = """
import numpy as np
import mindspore as ms
from mindspore import ParameterTuple, Tensor, context, nn
from mindspore.ops import composite as C

grad_by_list = C.GradOperation(get_by_list=True)


def test_grad_in_construct():
    class GradNet(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.weights = ParameterTuple(net.trainable_params())

        def construct(self, x):
            return grad_by_list(self.net, self.weights)(x)

    out = GradNet(nn.Dense(3, 2))(Tensor(np.ones((4, 3)), ms.float32))


def test_another_path_in_graph_mode():
    class GradNet(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.weights = ParameterTuple(net.trainable_params())

        def construct(self, x):
            return grad_by_list(self.net, self.weights)(x)

    x = Tensor(np.ones((4, 3)), ms.float32)
    if context.get_context("mode") == context.GRAPH_MODE:
        out = nn.Dense(3, 2)(x)
    else:
        out = GradNet(nn.Dense(3, 2))(x)
"""


@pytest.mark.mindspore
def test_a_rewrite_graph_mode_compiles_is_proven_by_the_pynative_row_on_the_same_path(tmp_path: Path) -> None:
    """GRAPH mode compiles a Cell's construct, so a rewrite there is never seen to run: the
    GRAPH row is equal only where the PYNATIVE row saw the changed lines run and the test took
    the same path through its own lines (a copy of MindSpore's control-flow tests had every
    such GRAPH row "could not run")."""
    before = tmp_path / "test_construct.py"
    before.write_text(GRAD_ONLY_IN_CONSTRUCT, encoding="utf-8")
    report = tmp_path / "report.json"
    options = ("--target-version", "2.10", "--no-cache", "--dry-run", "--report", str(report))
    code, output = invoke("upgrade", "--verify", *options, str(before))
    rows = {
        (row["site"].split(":")[0], row["mode"]): row
        for row in json.loads(report.read_text(encoding="utf-8"))["files"][0]["verified"]
    }
    assert rows["test_grad_in_construct", "pynative"]["verdict"] == "equal", output
    compiled = rows["test_grad_in_construct", "graph"]
    assert compiled["verdict"] == "equal", output
    assert compiled["detail"].endswith(
        "the PYNATIVE row saw them run, along the same lines of the test function"
    )
    elsewhere = rows["test_another_path_in_graph_mode", "graph"]
    assert rows["test_another_path_in_graph_mode", "pynative"]["verdict"] == "equal", output
    assert elsewhere["verdict"] == "could not run", output
    assert elsewhere["reason"].startswith("the test function ran, but not the lines the rewrite changed")
    assert code == 2  # the file is not written: a site not proven in every mode


def test_a_graph_row_is_held_to_the_pynative_row_of_its_site() -> None:
    from ms_migrate.verify.verifier import GRAPH_COMPILED, reconciled_rows

    unseen = {"verdict": "could not run", "reason": "the test function ran, but not the lines", "detail": ""}
    results = {
        (1, "pynative"): {"verdict": "equal", "detail": "ran it", "path": "before: [3, 4]"},
        (1, "graph"): {**unseen, "path": "before: [3, 4]"},
        (2, "pynative"): {"verdict": "equal", "detail": "ran it", "path": "before: [3, 4]"},
        (2, "graph"): {**unseen, "path": "before: [3, 5]"},  # another path through the test
        (3, "pynative"): {"verdict": "could not run", "path": "before: [3]"},
        (3, "graph"): {**unseen, "path": "before: [3]"},
        (4, "pynative"): {"verdict": "equal", "detail": "ran it", "path": "before: [3]"},
        (4, "graph"): dict(unseen),  # not the compiled-construct case: no path sent
    }
    rows = reconciled_rows(results)
    assert rows[1, "graph"] == {"verdict": "equal", "reason": "", "detail": "ran it" + GRAPH_COMPILED}
    assert [rows[site, "graph"]["verdict"] for site in (2, 3, 4)] == ["could not run"] * 3
    assert not any("path" in row for row in rows.values())


def test_only_a_test_function_pytest_runs_as_it_is_is_run_as_written() -> None:
    from ms_migrate.verify.sites import differing_sites

    def plans(source: str) -> dict[str, str]:
        upgraded = migrate_text(source, target=Version(2, 10)).text
        return {plan.name: plan.problem for plan in differing_sites(source, upgraded)}

    body = "    grad_fn = C.GradOperation(get_all=True)\n    out = grad_fn(net)(x)\n"
    head = "import pytest\nfrom mindspore.ops import composite as C\nimport mindspore as ms\n\n\n"
    found = plans(
        head
        + "def test_plain():\n    net, x = make()\n"
        + body
        + "\n\n@pytest.mark.level0\ndef test_marked(mode=1):\n    net, x = make()\n"
        + body
        + "\n\ndef test_fixture(tmp_path):\n    net, x = make()\n"
        + body
        + "\n\n@ms.jit\ndef test_jit():\n    net, x = make()\n"
        + body
        + "\n\ndef check():\n    net, x = make()\n"
        + body
    )
    assert found["test_plain"] == found["test_marked"] == ""
    parametrized = '@pytest.mark.parametrize("net, x", [(1, 2)])\ndef test_cases(net, x):\n'
    assert plans(head + parametrized + body)["test_cases"] == ""
    assert "takes inputs" not in found["test_fixture"]  # a fixture is an input it can seed
    assert "decorated with ms.jit" in found["test_jit"]
    assert "not a test function that pytest runs" in found["check"]

    source = head + "def test_plain():\n    net, x = make()\n" + body
    upgraded = migrate_text(source, target=Version(2, 10)).text
    (plan,) = differing_sites(source, upgraded)
    assert plan.compared_locals == ("net", "out", "x")
    assert plan.changed_before == (8, 9) and plan.changed_after == (7,)  # the unused import went
