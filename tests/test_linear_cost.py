"""The cost of a file grows with its sites, not with their square: untimed, structural checks.

Each check counts work (calls, items handed over) on the real functions while one file of many
train steps is migrated, and holds the count for 4x the sites to 4x the count; the timing itself
is benchmarks/bench_sites.py's. The whole-line diff MS101's fix goes through is checked for what
it must do on any pair of texts: turn the one into the other.
"""

from __future__ import annotations

import ast
import difflib
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ms_migrate import diagnostics
from ms_migrate.analysis import autodiff, project
from ms_migrate.core.engine import migrate_text
from ms_migrate.diagnostics import Edit, apply_edits, edits_between, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.rules.ms101 import rewrite

HEADER = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
STEP = """class Step{index}(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.optimizer.parameters)(x, y)
        self.optimizer(grads)
        return loss


"""
SMALL, LARGE = 8, 32  # sites; LARGE is 4x SMALL


def train_steps(sites: int) -> str:
    return HEADER + "".join(STEP.format(index=index) for index in range(sites))


def counting(work: Counter[str], name: str, function: Callable[..., Any], size: Callable[..., int]) -> Any:
    """``function``, adding ``size(*arguments)`` to ``work[name]`` on each call."""

    def counted(*arguments: Any, **keywords: Any) -> Any:
        work[name] += size(*arguments, **keywords)
        return function(*arguments, **keywords)

    return counted


def work_of(sites: int, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The work the steps that used to be quadratic do while a file of ``sites`` steps migrates."""
    work: Counter[str] = Counter()
    with monkeypatch.context() as patch:
        # The line pairs SequenceMatcher compares are about what it costs.
        matcher = difflib.SequenceMatcher

        class Counted(matcher):  # type: ignore[misc, valid-type]
            def __init__(self, junk: Any = None, a: Any = "", b: Any = "", autojunk: bool = True) -> None:
                work["line pairs diffed"] += len(a) * len(b)
                super().__init__(junk, a, b, autojunk)

        patch.setattr(diagnostics.difflib, "SequenceMatcher", Counted)
        patch.setattr(
            project, "_mentions", counting(work, "texts scanned for names", project._mentions, lambda text: 1)
        )
        patch.setattr(
            project,
            "_scope_calls",
            counting(work, "scopes gathered", project._scope_calls, lambda scope, *_, **__: 1),
        )
        statements = project.walk_statements

        def walked(tree: ast.AST) -> Iterator[ast.AST]:
            for node in statements(tree):
                work["statements walked by the index"] += 1
                yield node

        patch.setattr(project, "walk_statements", walked)
        patch.setattr(
            rewrite, "_line_groups", counting(work, "statements grouped", rewrite._line_groups, len)
        )
        attribute_value = autodiff.AutodiffFile.attribute_value
        patch.setattr(
            autodiff.AutodiffFile,
            "attribute_value",
            counting(work, "self attributes resolved", attribute_value, lambda self, node: 1),
        )
        result = migrate_text(train_steps(sites), Version(2, 8))
    assert result.converted == sites
    return work


def test_no_step_of_a_migration_does_more_than_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = work_of(SMALL, monkeypatch), work_of(LARGE, monkeypatch)
    assert set(small) == set(large)
    assert {"line pairs diffed", "scopes gathered", "statements grouped", "self attributes resolved"} <= set(
        small
    )
    ratio = LARGE / SMALL
    grown = {
        name: (small[name], large[name]) for name in small if large[name] > ratio * small[name] * 1.1 + 16
    }
    assert not grown, f"work that grows faster than the sites (at {SMALL} and {LARGE} sites): {grown}"


def test_the_index_scans_a_file_for_its_calls_once_however_many_steps_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scanned: list[str] = []
    gathered: list[ast.AST] = []  # held, so that no id is reused
    mentions, scope_calls = project._mentions, project._scope_calls
    monkeypatch.setattr(project, "_mentions", lambda text: scanned.append(text) or mentions(text))
    monkeypatch.setattr(
        project,
        "_scope_calls",
        lambda scope, *rest, **options: gathered.append(scope) or scope_calls(scope, *rest, **options),
    )
    text = train_steps(LARGE) + "".join(f"step{index} = Step{index}(Net(), opt)\n" for index in range(LARGE))
    assert migrate_text(text, Version(2, 8)).converted == LARGE
    assert scanned.count(text) == 1
    assert len({id(scope) for scope in gathered}) == len(gathered)


def test_a_name_assigned_once_per_step_is_read_back_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that builds each step from `net = Net()` (a notebook, a file of many `__main__`
    blocks) asks what `net` holds once per step: the answer is the nearest assignment up, found
    without going through every one above it (N steps asked N squared questions)."""

    def questions(sites: int) -> int:
        asked = Counter[str]()
        exclusive = project._Assignments.exclusive
        with monkeypatch.context() as patch:
            patch.setattr(
                project._Assignments,
                "exclusive",
                counting(asked, "branches checked", exclusive, lambda *_: 1),
            )
            blocks = "".join(f"net = Net()\nstep{index} = Step{index}(net, opt)\n" for index in range(sites))
            assert migrate_text(train_steps(sites) + blocks, Version(2, 8)).converted == sites
        return asked["branches checked"]

    small, large = questions(SMALL), questions(LARGE)
    assert small and large <= LARGE / SMALL * small * 1.1 + 16, (small, large)


def test_a_command_leaves_what_it_holds_out_of_the_collection_at_exit(tmp_path: Path) -> None:
    """Python collects everything still alive as it exits; after a large file that was a quarter
    of the run. The command freezes the heap at exit, after every other exit handler (the one
    registered here, before the command, runs after it)."""
    script = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
        "from ms_migrate.frontends.cli import main\n"
        "main(['check', '--no-cache', '-q', sys.argv[1]])\n"
    )
    source = tmp_path / "steps.py"
    source.write_text(train_steps(SMALL), encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-c", script, str(source)], capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode == 1, ran.stderr  # the steps are findings
    assert ran.stdout.strip().splitlines()[-1] == "frozen at exit: True"


def test_the_index_answers_each_name_as_it_did_alone() -> None:
    text = (
        "class A:\n    pass\n\n\n"
        "def make(net):\n    net = Wrap(net)\n    return Step(net, Opt()), Other(*net)\n\n\n"
        "@deco(Step)\ndef decorated():\n    def inner():\n        return Step(Net())\n    return inner\n\n\n"
        "step = Step(Net(), optimizer=Opt())\n"
    )
    facts = project.file_facts(text)
    assert facts.calls_of(["Step"])["Step"] == [
        ([{"Net"}], {"optimizer": {"Opt"}}),
        ([{"Wrap"}, {"Opt"}], {}),
        ([{"Net"}], {}),
    ]
    assert facts.calls_of(["Other"])["Other"] == [([{"?"}], {})]
    assert facts.calls_of(["Step", "Other"]) == {**facts.calls_of(["Step"]), **facts.calls_of(["Other"])}
    assert facts.calls_of(["step", "Missing"]) == {}


def test_the_functions_spanning_a_line_are_those_whose_source_holds_it() -> None:
    text = (
        "import x\n\n\n@a\n@b(\n    1)\ndef f():\n    def g():\n        pass\n    class C:\n"
        "        async def h(self):\n            def i(): return 1\n            return i\n"
        "    return g\n\n\nclass D:\n    def m(self):\n        pass\n\n\ny = 1\n"
    )
    tree = ast.parse(text)
    functions = project._Functions(tree)
    everything = [
        node
        for node in project.walk_statements(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for line in range(0, text.count("\n") + 3):
        expected = [
            node
            for node in everything
            if min([node.lineno, *(item.lineno for item in node.decorator_list)])
            <= line
            <= (node.end_lineno or 0)
        ]
        assert [scope for _, scope in functions.spanning([line])] == [tree, *expected], line


def sequence_matcher_edits(before: str, after: str) -> tuple[Edit, ...]:
    """What ``edits_between`` answered before it anchored on unique lines."""
    old, new = source_lines(before), source_lines(after)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return tuple(
        Edit((i1 + 1, 0), (i2 + 1, 0), "".join(new[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def assert_whole_line_edits(before: str, after: str) -> tuple[Edit, ...]:
    edits = edits_between(before, after)
    assert apply_edits(before, edits) == after
    last = (0, 0)
    for edit in edits:
        assert edit.start[1] == 0 and edit.end[1] == 0
        assert last <= edit.start <= edit.end
        assert edit.start < edit.end or edit.replacement
        last = edit.end
    return edits


def test_a_rewrite_of_many_train_steps_gets_sequence_matchers_edits() -> None:
    before = train_steps(60)
    after = migrate_text(before, Version(2, 8)).text
    assert after != before
    assert assert_whole_line_edits(before, after) == sequence_matcher_edits(before, after)


def test_one_changed_line_per_block_is_one_edit_per_block() -> None:
    blocks = 2_000
    before = "".join(f"def f{index}():\n    x = 1\n\n    return x\n\n\n" for index in range(blocks))
    after = "".join(f"def f{index}():\n    x = 2\n\n    return x\n\n\n" for index in range(blocks))
    edits = assert_whole_line_edits(before, after)
    assert edits == tuple(
        Edit((6 * index + 2, 0), (6 * index + 3, 0), "    x = 2\n") for index in range(blocks)
    )


def mutated(lines: list[str], seed: int) -> list[str]:
    chooser = random.Random(seed)
    out = list(lines)
    for _ in range(max(1, len(out) // 20)):
        position = chooser.randrange(len(out) + 1)
        kind = chooser.choice(("insert", "delete", "replace", "move"))
        if kind == "insert":
            out[position:position] = chooser.choices(lines, k=chooser.randint(1, 5))
        elif kind == "delete":
            del out[position : position + chooser.randint(1, 5)]
        elif kind == "replace":
            out[position : position + 2] = [f"new {chooser.random()}\n"]
        else:
            taken = out[position : position + 3]
            del out[position : position + 3]
            spot = chooser.randrange(len(out) + 1)
            out[spot:spot] = taken
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_large_pairs_of_repetitive_texts_turn_into_each_other(seed: int, ending: str) -> None:
    chooser = random.Random(seed)
    # Few distinct lines, so most repeat (blank ones most of all), and some unique ones to anchor on.
    vocabulary = ["\n", "\n", "\n", "    pass\n", "    return x\n", "x = 1\n", "# note\n"]
    lines = [
        chooser.choice(vocabulary) if chooser.random() < 0.8 else f"line {index}\n" for index in range(3_000)
    ]
    before_lines, after_lines = lines, mutated(lines, seed)
    before = "".join(before_lines).replace("\n", ending)
    after = "".join(after_lines).replace("\n", ending)
    assert_whole_line_edits(before, after)
    # Without a final line break, on either side or both.
    assert_whole_line_edits(before.rstrip("\r\n"), after)
    assert_whole_line_edits(before, after.rstrip("\r\n") + "tail")
    assert_whole_line_edits(before.rstrip("\r\n"), after.rstrip("\r\n"))


def test_texts_without_a_line_in_common_or_without_lines() -> None:
    before = "".join(f"a{index % 7}\n" for index in range(1_500))
    after = "".join(f"b{index % 5}\n" for index in range(1_200))
    assert assert_whole_line_edits(before, after) == (Edit((1, 0), (1_501, 0), after),)
    for left, right in [("", ""), ("", "x"), ("x", ""), ("x\n", "x\n"), ("x", "x\n"), ("\n\n", "\n")]:
        assert_whole_line_edits(left, right)


LINES = st.sampled_from(["\n", "\r\n", "a\n", "b\n", "a", "\x0c\n", "c\r", "d\r\n", "e\u2028f\n"])


@settings(max_examples=200, deadline=None)
@given(st.lists(LINES, max_size=60), st.lists(LINES, max_size=60))
def test_any_two_texts_turn_into_each_other(before: list[str], after: list[str]) -> None:
    assert_whole_line_edits("".join(before), "".join(after))
    # The same texts as if they were large: anchored at every size, and given up on unanchored.
    kept = diagnostics._MATCHER_PAIRS, diagnostics._UNANCHORED_PAIRS
    try:
        diagnostics._MATCHER_PAIRS = 0
        assert_whole_line_edits("".join(before), "".join(after))
        diagnostics._UNANCHORED_PAIRS = 0
        assert_whole_line_edits("".join(before), "".join(after))
    finally:
        diagnostics._MATCHER_PAIRS, diagnostics._UNANCHORED_PAIRS = kept


def test_a_fix_hashes_its_edits_once_and_never_sends_the_hash_to_another_process() -> None:
    import pickle

    from ms_migrate.diagnostics import Edit, Fix

    fix = Fix(tuple(Edit((line, 0), (line, 0), "x\n") for line in range(1, 2_000)))
    assert hash(fix) == hash(fix) and fix.__dict__["_hash"] == hash(fix)
    copy = pickle.loads(pickle.dumps(fix))
    assert "_hash" not in copy.__dict__ and copy == fix and hash(copy) == hash(fix)


def _patched(old: list[str], diff: list[str]) -> list[str]:
    """``old`` with a unified diff's hunks applied, as `patch` would."""
    import re

    result: list[str] = []
    position = 0
    for line in diff[2:]:
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if header is not None:
            start, length = int(header.group(1)), int(header.group(2) or 1)
            begin = start - 1 if length else start
            result += old[position:begin]
            position = begin
        elif line.startswith((" ", "-")):
            assert old[position] == line[1:], (position, line)
            if line.startswith(" "):
                result.append(line[1:])
            position += 1
        else:
            result.append(line[1:])
    return result + old[position:]


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "return x\n", "\n"]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(lines, lines)
def test_the_linear_unified_diff_has_difflib_s_form_and_applies(old: list[str], new: list[str]) -> None:
    """The dry-run diff of a large file comes from the patience diff's opcodes: written as
    difflib writes a unified diff (the same matcher gives the same text), and applied with its
    hunks it turns the old text into the new."""
    from ms_migrate.reporting import report

    plain = difflib.SequenceMatcher(None, old, new, autojunk=False)
    assert report._unified(plain, "a", "b") == list(difflib.unified_diff(old, new, "a", "b"))
    patience = report._unified(report._PatienceMatcher(None, old, new, autojunk=False), "a", "b")
    assert (patience == []) == (old == new)
    if patience:
        assert _patched(old, patience) == new


def test_a_dry_run_diff_of_many_train_steps_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unified diff of a large rewrite compares no more line pairs than it has lines (times a
    constant): difflib's whole-file matcher compared every line with every equal line."""
    from ms_migrate.reporting import report

    pairs: Counter[int] = Counter()
    for sites in (SMALL * 20, LARGE * 20):
        text = train_steps(sites)
        after = migrate_text(text, Version(2, 8)).text
        work: Counter[str] = Counter()
        with monkeypatch.context() as patch:
            matcher = difflib.SequenceMatcher

            class Counted(matcher):  # type: ignore[misc, valid-type]
                counted = work

                def __init__(self, junk: Any = None, a: Any = "", b: Any = "", autojunk: bool = True) -> None:
                    self.counted["pairs"] += len(a) * len(b)
                    super().__init__(junk, a, b, autojunk)

            patch.setattr(diagnostics.difflib, "SequenceMatcher", Counted)
            diff = report.unified_diff("train.py", text, after)
        assert _patched(source_lines(text), diff.splitlines(keepends=True)) == source_lines(after)
        pairs[sites] = work["pairs"]
    assert pairs[LARGE * 20] <= 5 * pairs[SMALL * 20], pairs
