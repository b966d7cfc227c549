"""The command line, end to end on real files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.application.runner import FileOutcome
from ms_migrate.core.engine import UPGRADE_KINDS, FileResult, migrate_text, rules_of_kind, run_rules
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.versions import Version
from ms_migrate.frontends import interactive
from ms_migrate.frontends.cli import main
from ms_migrate.reasons import INTERNAL_ERROR
from ms_migrate.reporting.report import Stream

FIXTURES = Path(__file__).parent / "fixtures" / "ms101"
EXAMPLE = Path(__file__).parent.parent / "examples" / "legacy_project"

CLIP_STEP = """\
import mindspore.nn as nn
from mindspore.ops import composite as C


class ClipStep(nn.Cell):
    def __init__(self, network, optimizer, vocabulary):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.vocabulary = vocabulary
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ms_migrate", *args], capture_output=True, text=True)


def test_dry_run_prints_diff_writes_nothing_then_upgrade_reaches_fixed_point(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    before = snapshot(project)

    preview = run("upgrade", "--dry-run", str(project))
    assert preview.returncode == 1, preview.stderr
    merged = "+        loss, grads = ms.value_and_grad(self.network, None, weights)(data, label)"
    assert merged in preview.stdout
    assert snapshot(project) == before

    applied = run("upgrade", str(project))
    # MS210 findings with no replacement remain: exit 1, as `ruff check --fix` with some left.
    assert applied.returncode == 1 and " findings remaining" in applied.stderr, applied.stderr
    after = snapshot(project)
    assert after != before
    assert after["src/model.py"] == before["src/model.py"]
    # The op inherited from nn.TrainOneStepCell converts too: its flags are known (rules/ data).
    assert b"self.grad(" not in after["src/custom_cell.py"]
    assert "custom_cell.py:10:1: MS101 [*] self.grad from TrainOneStepCell" in applied.stdout

    again = run("upgrade", "--dry-run", str(project))
    # A fixed point: nothing more to change; the findings with no fix still remain (exit 1).
    assert again.returncode == 1 and "0 files would change" in again.stderr, again.stdout
    assert again.stdout == ""
    assert snapshot(project) == after


def test_syntax_error_exits_2_and_other_files_are_still_processed(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "syntax_error.py", tmp_path / "broken.py")
    shutil.copy(FIXTURES / "cell_get_by_list.py", tmp_path / "good.py")
    broken = (tmp_path / "broken.py").read_bytes()
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'broken.py'}:4: syntax error" in result.output
    assert "ms.grad(self.network, None, weights)" in (tmp_path / "good.py").read_text()
    assert (tmp_path / "broken.py").read_bytes() == broken


def test_read_only_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "locked.py"
    shutil.copy(FIXTURES / "cell_get_by_list.py", target)
    target.chmod(0o444)
    original = target.read_bytes()
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(target)])
    assert result.exit_code == 2
    assert "read-only" in result.output
    assert "Traceback" not in result.output
    assert target.read_bytes() == original
    # Its site was not written, so it is not counted as converted.
    assert "0 files changed (1 checked), 0 sites converted" in result.stderr


def test_verify_counts_only_the_sites_it_wrote(tmp_path: Path) -> None:
    # A train step whose __init__ takes a setting the harness cannot name: no MindSpore runs.
    step = tmp_path / "clip_step.py"
    step.write_text(CLIP_STEP)
    result = CliRunner().invoke(main, ["upgrade", "--verify", "--target-version", "2.8", str(step)])
    assert result.exit_code == 2, result.output
    assert step.read_text() == CLIP_STEP
    assert f"{step}: not written: 2 site runs: 2 could not run" in result.stderr
    assert "0 files changed (1 checked), 0 sites converted" in result.stderr


def test_allow_unverified_without_verify_is_a_usage_error(tmp_path: Path) -> None:
    step = tmp_path / "clip_step.py"
    step.write_text(CLIP_STEP)
    result = CliRunner().invoke(main, ["upgrade", "--allow-unverified", str(step)])
    assert result.exit_code == 2
    assert "--allow-unverified only applies with --verify" in result.stderr
    assert step.read_text() == CLIP_STEP


PROMPT = "Convert this site? [y]es, [n]o (leave it), [a]ll the rest of this file, [q]uit"


def test_interactive_shows_each_rewrite_and_writes_only_what_is_accepted(tmp_path: Path) -> None:
    names = ("a.py", "b.py", "c.py", "d.py", "e.py")
    for name in names:
        shutil.copy(FIXTURES / "cell_get_by_list.py", tmp_path / name)
    legacy = (tmp_path / "a.py").read_text()
    args = ["upgrade", "--interactive", "--target-version", "2.8", str(tmp_path)]
    result = CliRunner().invoke(main, args, input="y\nN\nq\n")
    assert result.exit_code == 1, result.output  # the declined site remains
    for name in ("a.py", "b.py", "c.py"):
        path = tmp_path / name
        assert f"+++ {path}" in result.stdout
        assert f"{path}:14: MS101 GradOperation(get_by_list=True) -> ms.grad (site 1 of 1)" in result.stdout
    assert result.stdout.count(PROMPT) == 3
    assert "d.py" not in result.output and "e.py" not in result.output  # after the quit: not even migrated
    assert "GradOperation" not in (tmp_path / "a.py").read_text()
    assert [(tmp_path / name).read_text() for name in names[1:]] == [legacy] * 4
    assert result.stderr.count("Rewriting") == 1 and f"Rewriting {tmp_path / 'a.py'}\n" in result.stderr
    assert "stopped: the files not yet shown are unchanged" in result.stderr
    # Only the files shown before the quit are counted, not the five of the run; the sites
    # declined (b.py, and c.py's at the quit) are left alone and said so.
    assert "1 file changed (3 checked), 1 site converted, 2 left alone (declined x2)" in result.stderr
    for name in ("b.py", "c.py"):
        assert f"{tmp_path / name}:14: MS101 left alone: declined" in result.stdout
    # Each site is shown once, at its prompt: not also in the list of findings before it.
    assert f"{tmp_path / 'a.py'}:14:1: MS101" not in result.stdout

    # The end of the input is a quit: nothing is written.
    ended = CliRunner().invoke(main, args, input="")
    assert ended.exit_code == 1 and (tmp_path / "b.py").read_text() == legacy
    assert "0 files changed (2 checked)" in ended.stderr  # a.py is already done, b.py asked


def test_interactive_takes_only_text_output_and_no_dry_run(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "cell_get_by_list.py", tmp_path / "a.py")
    message = "--interactive asks before each write: it takes no --dry-run and only --format text"
    for extra in (["--dry-run"], ["--format", "json"]):
        refused = CliRunner().invoke(main, ["upgrade", "-i", *extra, str(tmp_path)])
        assert refused.exit_code == 2 and message in refused.stderr
    accepted = CliRunner().invoke(main, ["upgrade", "-i", "--format", "text", str(tmp_path)], input="n\n")
    assert accepted.exit_code == 1 and "1 finding remaining" in accepted.stderr, accepted.output


def _declined_by_comment(source: str, line: int) -> str:
    """What upgrade writes when ``line`` carries an ignore comment, less the comment."""
    comment = "  # ms-migrate: ignore[MS101]"
    lines = source.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + comment + "\n"
    return migrate_text("".join(lines), Version(2, 8)).text.replace(comment, "")


@pytest.mark.parametrize("answers, converted, declined", [("y\nn\n", 14, 30), ("n\ny\n", 30, 14)])
def test_interactive_converts_only_the_accepted_site_of_a_file(
    tmp_path: Path, answers: str, converted: int, declined: int
) -> None:
    step = tmp_path / "two_train_steps.py"
    shutil.copy(FIXTURES / "two_train_steps.py", step)
    source = step.read_text()
    args = ["upgrade", "-i", "--no-cache", "--target-version", "2.8", str(step)]
    result = CliRunner().invoke(main, args, input=answers)
    assert result.exit_code == 1 and "1 finding remaining" in result.stderr, result.output
    # Each site's diff is that site alone: the other class is in neither.
    for number, line in ((1, 14), (2, 30)):
        heading = f"{step}:{line}: MS101 GradOperation(get_by_list=True) -> ms.grad (site {number} of 2)"
        assert heading in result.stdout
    assert result.stdout.count("-        self.grad = C.GradOperation(get_by_list=True)") == 2
    assert result.stdout.count(PROMPT) == 2
    written = step.read_text()
    assert written == _declined_by_comment(source, declined)
    assert written.count("C.GradOperation(get_by_list=True)") == 1 and written.count("ms.grad(") == 1
    first, second = written.split("class SecondStep")
    assert ("ms.grad(" in first) == (converted == 14) and ("ms.grad(" in second) == (converted == 30)
    compile(written, str(step), "exec")
    assert "1 file changed (1 checked), 1 site converted" in result.stderr
    # A fixed point: the declined site, still declined where it is now, leaves nothing to change.
    now = 1 + written.splitlines().index("        self.grad = C.GradOperation(get_by_list=True)")
    rules = rules_of_kind(UPGRADE_KINDS)
    again = run_rules(written, Version(2, 8), rules, declined={("MS101", now)})
    assert again.text == written and not again.fixed


def test_interactive_all_the_rest_and_quit_in_a_file(tmp_path: Path) -> None:
    step = tmp_path / "two_train_steps.py"
    shutil.copy(FIXTURES / "two_train_steps.py", step)
    source = step.read_text()
    args = ["upgrade", "-i", "--no-cache", "--target-version", "2.8", str(step)]
    quit = CliRunner().invoke(main, args, input="q\n")
    assert quit.exit_code == 1 and quit.stdout.count(PROMPT) == 1
    assert step.read_text() == source and "0 files changed (1 checked)" in quit.stderr
    ended = CliRunner().invoke(main, args, input="")  # the end of the input: a quit
    assert ended.exit_code == 1 and step.read_text() == source
    # A quit keeps the answers already given in the file (as `git add -p` does).
    first_only = CliRunner().invoke(main, args, input="y\nq\n")
    assert first_only.exit_code == 1 and step.read_text() == _declined_by_comment(source, 30)
    assert "stopped: the files not yet shown are unchanged" in first_only.stderr
    step.write_text(source)
    rest = CliRunner().invoke(main, args, input="a\n")
    assert rest.exit_code == 0 and rest.stdout.count(PROMPT) == 1
    assert step.read_text() == migrate_text(source, Version(2, 8)).text
    assert "1 file changed (1 checked), 2 sites converted" in rest.stderr


def test_jobs_give_the_same_result_as_serial(tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    for folder in (serial, parallel):
        shutil.copytree(FIXTURES, folder)
    CliRunner().invoke(main, ["upgrade", "-q", "--target-version", "2.8", str(serial)])
    CliRunner().invoke(main, ["upgrade", "-q", "-j", "2", "--target-version", "2.8", str(parallel)])
    assert snapshot(serial) == snapshot(parallel)
    assert snapshot(serial) != snapshot(FIXTURES)


def test_target_version_is_detected_from_requirements(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "target_1_7.py", tmp_path / "step.py")
    (tmp_path / "requirements.txt").write_text("numpy\nmindspore-gpu==1.7.1\n")
    result = CliRunner().invoke(main, ["upgrade", "--dry-run", str(tmp_path)])
    assert "target MindSpore 1.7 (lowest allowed by requirements.txt: mindspore-gpu==1.7.1)" in result.output
    assert "MSR001" in result.output
    assert result.exit_code == 1  # the site left alone remains


def test_default_target_is_announced(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["upgrade", str(tmp_path)])
    assert "target MindSpore 2.10 (default" in result.output
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "options",
    [
        ["check", "-o"],
        ["upgrade", "--dry-run", "-o"],
        ["upgrade", "--dry-run", "--report"],
        ["check", "--write-baseline"],
    ],
)
def test_a_file_into_a_missing_folder_is_refused_before_the_run(options: list[str], tmp_path: Path) -> None:
    """A typo in an output path costs no run: exit 2 at once, nothing run, nothing written."""
    step = tmp_path / "step.py"
    step.write_text(CLIP_STEP)
    missing = tmp_path / "nope" / "out.json"
    result = CliRunner().invoke(main, [*options, str(missing), str(step)])
    assert result.exit_code == 2, result.output
    assert f"{missing}: no folder {missing.parent}" in result.output
    assert "target MindSpore" not in result.output  # refused before the run began
    assert step.read_text() == CLIP_STEP and not missing.parent.exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["upgrade"]).exit_code == 2
    bad = CliRunner().invoke(main, ["upgrade", "--target-version", "two", str(tmp_path)])
    assert bad.exit_code == 2 and "not a MindSpore release line" in bad.output
    # A patch release is its line's API: 2.10.1 is 2.10.
    patch = CliRunner().invoke(main, ["check", "--target-version", "2.10.1", str(tmp_path)])
    assert patch.exit_code == 0, patch.output
    missing = CliRunner().invoke(main, ["upgrade", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such file" in missing.output


def test_explain_and_rules() -> None:
    rules = CliRunner().invoke(main, ["rules"])
    assert rules.exit_code == 0 and "MS101" in rules.output and "MSR006" in rules.output
    explained = CliRunner().invoke(main, ["explain", "msr003"])
    assert explained.exit_code == 0 and "grad-op-escapes" in explained.output
    assert CliRunner().invoke(main, ["explain", "XX1"]).exit_code == 2


def test_explain_takes_a_rule_or_reason_name() -> None:
    for name, heading in (
        ("inherited-grad", "MSR006 (inherited-grad): "),
        ("Inherited_Grad", "MSR006 (inherited-grad): "),
        ("empty-weights", "MS207 (empty-weights): "),
        ("grad-operation-to-functional", "MS101 (grad-operation-to-functional): "),
        ("GradOperation train step can use value_and_grad", "MS101 (grad-operation-to-functional): "),
    ):
        explained = CliRunner().invoke(main, ["explain", name])
        assert explained.exit_code == 0 and explained.stdout.startswith(heading), (name, explained.output)
    listed = CliRunner().invoke(main, ["rules"]).stdout
    assert "MS207  empty-weights: " in listed and "MSR006  inherited-grad: " in listed
    unknown = CliRunner().invoke(main, ["explain", "inherited-grads"])
    assert unknown.exit_code == 2
    assert "no rule, reason or note is called 'inherited-grads'; `ms-migrate rules` lists" in unknown.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("ms-migrate")
    completed = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert completed.returncode == 0 and "ms-migrate" in completed.stdout


def test_check_reports_modernisable_sites_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "cell_get_by_list.py", tmp_path / "legacy.py")
    shutil.copy(FIXTURES / "refuse_non_literal_flags.py", tmp_path / "flags.py")
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["check", "--target-version", "2.8", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{tmp_path / 'legacy.py'}:14:1: MS101 [*] modernisable" in result.output
    assert f"{tmp_path / 'flags.py'}:11:1: MSR002" in result.output
    assert snapshot(tmp_path) == before
    (tmp_path / "legacy.py").unlink()
    assert CliRunner().invoke(main, ["check", "-q", str(tmp_path)]).exit_code == 0


NEWER_THAN_1_9 = """\
import mindspore as ms


@ms.jit
def step(x):
    return x


ms.set_device("CPU")
"""


def test_check_at_an_older_target_reports_what_downgrade_fixes(tmp_path: Path) -> None:
    """A pre-commit hook pinned to 1.9 must stop `@ms.jit` (2.0) and `ms.set_device` (2.7): check
    reports what downgrade rewrites, as errors to fix with `downgrade`, not as modernisable.
    It reported neither before (jit is MS303's, and set_device only as a name with no
    replacement)."""
    path = tmp_path / "new.py"
    path.write_text(NEWER_THAN_1_9, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--target-version", "1.9", str(path)])
    assert result.exit_code == 1
    assert f"{path}:4:2: MS303 [*] mindspore.jit does not exist before MindSpore 2.0" in result.output
    assert f"{path}:9:1: MS305 [*] mindspore.set_device is not in MindSpore 1.9" in result.output
    assert "MS211" not in result.output and "modernisable:" not in result.output
    assert "2 lint findings, 2 fixable [*] (1 checked; fix with `ms-migrate downgrade`)" in result.output
    assert path.read_text(encoding="utf-8") == NEWER_THAN_1_9
    # At a target that has both, nothing.
    assert CliRunner().invoke(main, ["check", "--target-version", "2.10", str(path)]).exit_code == 0


def test_findings_on_stdout_in_check_and_upgrade_the_diff_alone_under_dry_run(tmp_path: Path) -> None:
    path = tmp_path / "legacy.py"
    shutil.copy(FIXTURES / "cell_get_by_list.py", path)
    finding = f"{path}:14:1: MS101"
    note = f"{path}:14:1: MSN001 the forward call stays separate"

    checked = run("check", "--target-version", "2.8", str(path))
    assert finding in checked.stdout and note in checked.stdout  # check shows upgrade's notes too
    assert finding not in checked.stderr

    preview = run("upgrade", "--dry-run", "--target-version", "2.8", str(path))
    assert preview.stdout.startswith(f"--- {path}") and finding not in preview.stdout
    assert finding in preview.stderr and note in preview.stderr

    applied = run("upgrade", "--target-version", "2.8", str(path))
    assert applied.returncode == 0, applied.stderr
    assert finding in applied.stdout and note in applied.stdout
    assert finding not in applied.stderr
    assert f"Rewriting {path}\n" in applied.stderr  # the files rewritten, as pyupgrade lists them


def test_no_color_leaves_no_style_in_the_diff(tmp_path: Path) -> None:
    path = tmp_path / "legacy.py"
    shutil.copy(FIXTURES / "cell_get_by_list.py", path)
    command = [sys.executable, "-m", "ms_migrate", "upgrade", "--dry-run", "--target-version", "2.8"]
    command.append(str(path))
    terminal = {**os.environ, "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    terminal.pop("NO_COLOR", None)
    styled = subprocess.run(command, capture_output=True, text=True, env=terminal)
    assert f"\x1b[1m--- {path}" in styled.stdout  # a terminal gets bold headers and colours
    plain = subprocess.run(command, capture_output=True, text=True, env={**terminal, "NO_COLOR": "1"})
    assert plain.stdout.startswith(f"--- {path}") and "\x1b[" not in plain.stdout + plain.stderr


def test_quiet_names_the_target_but_not_the_files_rewritten(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "cell_get_by_list.py", tmp_path / "legacy.py")
    (tmp_path / "requirements.txt").write_text("mindspore>=2.3\n")
    announced = "target MindSpore 2.3 (lowest allowed by requirements.txt: mindspore>=2.3)"
    checked = run("check", "-q", str(tmp_path))
    assert checked.returncode == 1 and announced in checked.stderr
    assert "MSN001" not in checked.stdout
    applied = run("upgrade", "-q", str(tmp_path))
    assert applied.returncode == 0 and announced in applied.stderr
    assert "Rewriting" not in applied.stderr and "GradOperation" not in (tmp_path / "legacy.py").read_text()


def test_check_on_a_file_without_sites_loads_neither_libcst_nor_the_verify_machinery(tmp_path: Path) -> None:
    # Start-up is most of a pre-commit run on one file: nothing it does not use is imported.
    (tmp_path / "plain.py").write_text("import mindspore as ms\n\nx = ms.Tensor(1)\n")
    script = (
        "import sys\n"
        "from ms_migrate.frontends.cli import main\n"
        "try:\n"
        "    main(['check', '--target-version', '2.8', '-q', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(name for name in ('libcst', 'ms_migrate.verify.verifier') if name in sys.modules))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "plain.py")], capture_output=True, text=True
    )
    assert completed.stdout.strip().splitlines()[-1] == "[]", completed.stderr


def test_downgrade_takes_its_target_from_the_option_the_config_or_the_pins_never_the_default(
    tmp_path: Path,
) -> None:
    source = "import mindspore as ms\n\nh = ms.grad(net)\n"
    path = tmp_path / "step.py"
    path.write_text(source)
    # No pin and no --target-version: the default (the newest) would leave every file as is.
    refused = CliRunner().invoke(main, ["downgrade", "--dry-run", str(path)])
    assert refused.exit_code == 2
    assert "downgrade needs an older target: pass --target-version" in refused.stderr
    shown = " ".join(CliRunner().invoke(main, ["downgrade", "--help"]).stdout.split())
    assert "(default: the lowest the pins allow, else none: pass one)" in shown
    (tmp_path / "pyproject.toml").write_text('[tool.ms-migrate]\ntarget-version = "1.9"\n')
    configured = CliRunner().invoke(main, ["downgrade", "--dry-run", str(path)])
    assert configured.exit_code == 1 and "+h = ms.ops.grad(net)" in configured.stdout
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "requirements.txt").write_text("mindspore>=1.9,<3\n")
    pinned = CliRunner().invoke(main, ["downgrade", "--dry-run", str(path)])
    assert pinned.exit_code == 1 and "+h = ms.ops.grad(net)" in pinned.stdout
    assert "target MindSpore 1.9 (lowest allowed by requirements.txt" in pinned.stderr
    assert path.read_text() == source


def test_downgrade_respells_for_1_8_to_1_10_and_reports_what_it_cannot(tmp_path: Path) -> None:
    source = (
        "import mindspore as ms\nfrom mindspore import value_and_grad\n\n"
        "fn = ms.grad(net, 0, w, return_ids=True)\ng = value_and_grad(net)\nh = ms.grad(net)\n"
    )
    path = tmp_path / "step.py"
    path.write_text(source)
    preview = run("downgrade", "--dry-run", "--target-version", "1.9", str(path))
    assert preview.returncode == 1 and path.read_text() == source
    assert "+from mindspore.ops import value_and_grad" in preview.stdout
    assert "+h = ms.ops.grad(net)" in preview.stdout
    # return_ids does not exist on 1.9: mindspore.ops.grad would fail there too, so it stays.
    assert "-fn = ms.grad" not in preview.stdout and "MS202 grad() takes no `return_ids=`" in preview.stderr
    applied = run("downgrade", "--target-version", "1.9", str(path))
    again = run("downgrade", "--dry-run", "--target-version", "1.9", str(path))
    # The return_ids site remains (MS202): exit 1, and nothing more to change.
    assert applied.returncode == 1 and again.returncode == 1 and again.stdout == ""
    # Below 1.8 only GradOperation exists: `grad(net)` has an equal one (MS302); the others stay,
    # reported with why (return_ids, and a value_and_grad whose function is not a def here).
    old = tmp_path / "old.py"
    old.write_text(source)
    result = run("downgrade", "--dry-run", "--target-version", "1.7", str(old))
    assert result.returncode == 1 and "+h = ms.ops.GradOperation()(net)" in result.stdout
    assert "-fn = ms.grad" not in result.stdout and "-g = value_and_grad" not in result.stdout
    assert "MSR021" in result.stderr and "MSR020" in result.stderr
    assert "only GradOperation takes weights" in result.stderr


def _site(line: int) -> Diagnostic:
    return Diagnostic("MS101", line, 0, (line, 1), f"site {line}", Severity.INFO)


@pytest.mark.parametrize(
    "last, problem",
    [
        (FileResult("a\nb\n", [INTERNAL_ERROR.at(2, "output does not compile")]), "output does not compile"),
        (FileResult("A\nB\n", [], [_site(1), _site(2)]), "would change other sites than those accepted"),
    ],
)
def test_interactive_writes_nothing_when_the_accepted_sites_do_not_stand_alone(
    monkeypatch: pytest.MonkeyPatch, last: FileResult, problem: str
) -> None:
    # The last run, with the declined site, is what would be written; here it fails validation
    # (MSR099) or converts a site nobody accepted: nothing is written, and the reason is given.
    outcome = FileOutcome(Path("step.py"), "a\nb\n", "A\nB\n")
    runs = {
        frozenset(): [FileResult("A\nB\n", [], [_site(1), _site(2)])],
        frozenset({("MS101", 1)}): [FileResult("a\nB\n", [], [_site(2)])],
        frozenset({("MS101", 2)}): [FileResult("A\nb\n", [], [_site(1)]), last],
    }
    answers = iter([interactive.Answer.YES, interactive.Answer.NO])
    monkeypatch.setattr(interactive, "_ask", lambda: next(answers))
    reviewed = interactive.review(Stream(), outcome, lambda declined: runs[declined].pop(0))
    assert reviewed.text is None and not reviewed.quit
    assert reviewed.problem is not None and problem in reviewed.problem


def test_rules_and_explain_speak_json_for_tools() -> None:
    """`rules --format json` lists every rule, reason and note as data; `explain --format json`
    gives one, with a rule's examples and what its fix writes."""
    import json

    from ms_migrate.core.codes import all_notes, all_reasons
    from ms_migrate.rules.base import all_rules

    listed = json.loads(CliRunner().invoke(main, ["rules", "--format", "json"]).output)
    codes = [item["code"] for item in listed]
    assert codes == [rule.code for rule in all_rules()] + list(all_reasons()) + list(all_notes())
    result = CliRunner().invoke(main, ["explain", "dropout-keep-prob", "--format", "json"])
    record = json.loads(result.output)
    assert (record["code"], record["kind"], record["severity"]) == ("MS220", "lint", "warning")
    assert any(
        example["fixed"] == "from mindspore import nn\nlayer = nn.Dropout(p=0.1)\n"
        for example in record["examples"]
    )
    reason = json.loads(CliRunner().invoke(main, ["explain", "MSR019", "--format", "json"]).output)
    assert reason["name"] == "unknown-network" and reason["kind"] == "reason"


@pytest.mark.parametrize("command", [["check"], ["upgrade", "--dry-run"]])
def test_a_syntax_error_is_reported_in_a_file_no_rule_looks_into(command: list[str], tmp_path: Path) -> None:
    """`import mindspore` and `def f(:` used to be "1 checked", exit 0: no rule's prefilter matched,
    so nothing parsed it. The cached second run says it too."""
    (tmp_path / "bad.py").write_text("import mindspore\n\n\ndef f(:\n    pass\n")
    for _ in range(2):
        result = CliRunner().invoke(main, [*command, str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert f"{tmp_path / 'bad.py'}:4: syntax error" in result.output


def test_only_what_the_symbol_table_rejects_is_parsed_again_for_its_error(tmp_path: Path) -> None:
    """A MindSpore file no rule looks into is read for its symbol table, not parsed into a tree:
    one that parses but does not compile (`break` outside a loop) is no more its syntax error
    than in a file with no finding, and is not parsed again; one the symbol table rejects though
    the parser accepts it (`nonlocal` at module level) is parsed again, and is no error either."""
    from ms_migrate.core import parsing

    texts = ["import mindspore\n\n\ndef f():\n    pass\n", "import mindspore\nbreak\n"]
    texts.append("import mindspore\nnonlocal x\n")
    for index, text in enumerate(texts):
        (tmp_path / f"quiet{index}.py").write_text(text)
    before = parsing.prechecks
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert parsing.prechecks - before == 1  # the one the symbol table rejects
    assert "quiet" not in result.output


@pytest.mark.parametrize("command", [["check"], ["upgrade"], ["upgrade", "--dry-run"]])
def test_quiet_prints_the_error_and_no_summary_after_it(tmp_path: Path, command: list[str]) -> None:
    """-q keeps the target line and the errors: a summary after an error is what it drops too."""
    (tmp_path / "bad.py").write_text("import mindspore\ndef f(:\n")
    result = CliRunner().invoke(
        main, [*command, "-q", "--no-cache", "--target-version", "2.10", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.py'}:2: syntax error" in result.stderr
    assert "checked" not in result.stderr  # the summary line names the files checked


def test_a_file_changed_on_disk_during_the_prompt_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`upgrade -i` waits on a person: an editor may save the file meanwhile. The accepted rewrite
    is then not written over it, and the run says so and exits 2, as a plain run does."""
    step = tmp_path / "a.py"
    shutil.copy(FIXTURES / "cell_get_by_list.py", step)
    review = interactive.review

    def edited_meanwhile(*arguments: object, **keywords: object) -> object:
        step.write_text(step.read_text() + "# saved from an editor\n")
        return review(*arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(interactive, "review", edited_meanwhile)
    result = CliRunner().invoke(main, ["upgrade", "-i", "--target-version", "2.8", str(step)], input="y\n")
    assert result.exit_code == 2, result.output
    assert f"{step}: changed on disk during the run; left unchanged" in result.output
    assert step.read_text().endswith("# saved from an editor\n") and "GradOperation" in step.read_text()
    assert "1 file could not be processed" in result.output
