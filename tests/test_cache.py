"""The cache of earlier results: a rerun parses nothing, anything that decides a result is part
of its key, a corrupt entry is a miss, and --no-cache writes nothing."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ms_migrate.application.config import Config
from ms_migrate.application.settings import RunSettings
from ms_migrate.core import parsing
from ms_migrate.facts.versions import Version
from ms_migrate.files.cache import DIRECTORY, DIRECTORY_VARIABLE, settings_digest
from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES
from tests.test_speed_keeps_results import NETWORKS, STEP, TRAIN

LEGACY = FIXTURES / "ms101" / "cell_get_by_list.py"
TWO_INPUTS = FIXTURES / "ms101" / "get_all_two_inputs.py"


def _tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(LEGACY, root / "step.py")
    shutil.copy(TWO_INPUTS, root / "two.py")
    (root / "modern.py").write_text("import mindspore as ms\n\ngrad_fn = ms.value_and_grad(lambda x: x)\n")
    (root / "plain.py").write_text("x = 1\n")
    return root


def _check(*args: str) -> tuple[int, str, int]:
    """Exit code, stdout and the number of files the engine parsed, of `check -j 1` in-process."""
    parsed = parsing.prechecks
    result = CliRunner().invoke(main, ["check", "-j", "1", "--target-version", "2.8", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, parsing.prechecks - parsed


def _dry_run(*args: str) -> tuple[int, str, int]:
    parsed = parsing.prechecks
    result = CliRunner().invoke(main, ["upgrade", "--dry-run", "-j", "1", "--target-version", "2.8", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, parsing.prechecks - parsed


def _run_file(cache: Path) -> Path:
    """The one file the runs of one settings keep (under the tool's version)."""
    (found,) = cache.rglob("run-*")
    return found


def _results(cache: Path) -> dict[str, Any]:
    """The files' results the run file holds, by absolute path."""
    return _payload(_run_file(cache))["results"]


def _sign(path: Path, data: Any) -> None:
    """Write ``data`` as the cache does, signed with this user's key: what only ms-migrate (or
    this user) can make."""
    from ms_migrate.files import cache as cache_module

    path.write_bytes(cache_module._signed(path, json.dumps(data).encode()))


def test_a_rerun_parses_nothing_and_an_edited_file_misses(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    first = _check(str(tree))
    assert first[2] > 0
    assert _check(str(tree)) == (*first[:2], 0)
    with (tree / "two.py").open("a") as stream:
        stream.write("# edited\n")
    alone = _check("--no-cache", str(tree / "two.py"))[2]
    assert _check(str(tree)) == (*first[:2], alone), "only the edited file is parsed again"


def test_the_cache_is_at_the_project_root_and_git_ignores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DIRECTORY_VARIABLE)
    project = tmp_path / "project"
    _tree(project / "src")
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    _check(str(project / "src"))
    assert (project / DIRECTORY / ".gitignore").read_text().splitlines()[-1] == "*"
    assert len(_results(project / DIRECTORY)) == 3  # plain.py is not worth an entry
    elsewhere = tmp_path / "elsewhere"  # no pyproject.toml at or above it: the working directory
    _tree(elsewhere)
    monkeypatch.chdir(project)
    _check(str(elsewhere))
    assert not (elsewhere / DIRECTORY).exists()
    assert len(_results(project / DIRECTORY)) == 6  # the other tree's, beside the first's


def test_a_file_with_nothing_left_to_report_loses_its_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(cache))
    tree = _tree(tmp_path / "tree")
    _check(str(tree))
    assert str(tree / "step.py") in _results(cache)
    (tree / "step.py").write_text("x = 1\n")
    _check(str(tree / "two.py"))  # a run that does not see step.py keeps its entry
    assert str(tree / "step.py") in _results(cache)
    _check(str(tree))
    assert sorted(_results(cache)) == sorted(str(tree / name) for name in ("two.py", "modern.py"))


def test_no_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(cache))
    tree = _tree(tmp_path / "tree")
    for command in (["check"], ["upgrade", "--dry-run"], ["upgrade"]):
        result = CliRunner().invoke(main, [*command, "--no-cache", "--target-version", "2.8", str(tree)])
        assert result.exit_code in (0, 1), result.output
    assert (tree / "step.py").read_text() != LEGACY.read_text()
    assert not cache.exists()


def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(cache))
    tree = _tree(tmp_path / "tree")
    first = _check(str(tree))
    run_file = _run_file(cache)
    data = _payload(run_file)
    assert len(data["results"]) == 3  # the files some rule reads: plain.py costs nothing to redo
    alone = _check("--no-cache", str(tree / "two.py"))[2]
    # Signed, so read; one entry of the wrong shape is a miss for that file alone.
    wrong_types = {"fixed": "many", "diagnostics": [[1, 2, 3]]}
    data["results"][str(tree / "two.py")].update(wrong_types)
    _sign(run_file, data)
    assert _check(str(tree)) == (*first[:2], alone)
    assert _check(str(tree)) == (*first[:2], 0), "the entry was written again"
    for broken in (b"\x00not json", run_file.read_bytes()[:-10]):  # the second: cut off mid-write
        run_file.write_bytes(broken)
        assert _check(str(tree)) == first
        assert _check(str(tree)) == (*first[:2], 0), "the file was written again"


def _payload(path: Path) -> Any:
    """A cache file's JSON, after the line that signs it (or all of it, unsigned)."""
    data = path.read_bytes()
    try:
        return json.loads(data)
    except ValueError:
        return json.loads(data.partition(b"\n")[2])


def _signature_line(path: Path) -> bytes:
    first, newline, _ = path.read_bytes().partition(b"\n")
    return first if newline else b""


def test_an_edited_entry_never_puts_text_into_a_source_or_hides_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache that came with a checkout, or was edited, is not trusted: an entry whose text the
    rules did not write under this user's key is a miss (valid JSON with a valid fix in it too)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(cache))
    tree = _tree(tmp_path / "tree")
    honest = _check("--no-cache", str(tree))[:2]
    assert honest[0] == 1 and "MS101" in honest[1]
    _check(str(tree))
    run_file = _run_file(cache)
    signed = run_file.read_bytes()
    for keep_signature_line in (False, True):
        forged = _payload(run_file)
        for entry in forged["results"].values():
            entry["diagnostics"] = []  # nothing to report
            if entry.get("after") is not None:
                entry["after"] = "import os\nos.system('echo injected')\n" + entry["after"]
        forged["files"] = {path: [sig, digest, 1] for path, (sig, digest, _) in forged["files"].items()}
        line = _signature_line(run_file) + b"\n" if keep_signature_line else b""
        run_file.write_bytes(line + json.dumps(forged).encode())
        assert _check(str(tree))[:2] == honest
        run_file.write_bytes(signed)
    result = CliRunner().invoke(main, ["upgrade", "-j", "1", "--target-version", "2.8", str(tree)])
    assert result.exit_code in (0, 1), result.output
    assert "injected" not in (tree / "step.py").read_text()
    assert (tree / "step.py").read_text() != LEGACY.read_text()  # converted, by the rules


def test_the_key_is_the_users_and_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ms_migrate.files import cache as cache_module

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    cache_module._key.cache_clear()
    try:
        first = cache_module._key()
        cache_module._key.cache_clear()
        assert cache_module._key() == first  # kept: the next run trusts what this one wrote
        key_file = tmp_path / "home-cache" / "ms-migrate" / cache_module.KEY_FILE
        assert key_file.stat().st_mode & 0o777 == 0o600 and len(first) == 32
    finally:
        cache_module._key.cache_clear()


def _project(root: Path) -> Path:
    """src/step.py's train step differentiates a network whose class train.py and networks.py
    name: with a `*inputs` construct, GRAPH mode needs it left alone (MSR015); with a fixed one
    it converts. Neither file is step.py."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "step.py").write_text(STEP)
    (root / "src" / "networks.py").write_text(NETWORKS)
    (root / "train.py").write_text(TRAIN)
    (root / "other.py").write_text("import mindspore as ms\n\ngrad_fn = ms.grad(lambda x: x)\n")
    return root


def test_a_result_that_read_another_file_misses_when_that_file_changes(tmp_path: Path) -> None:
    tree = _project(tmp_path / "tree")
    assert "MSR015" in _check(str(tree))[1]
    assert _check(str(tree))[2] == 0
    (tree / "src" / "networks.py").write_text(NETWORKS.replace("*inputs", "x").replace("inputs[0]", "x"))
    fresh = _check("--no-cache", str(tree))
    assert "MSR015" not in fresh[1] and "MS101" in fresh[1]
    assert _check(str(tree))[:2] == fresh[:2]


def test_a_result_that_read_other_files_stays_while_they_do(tmp_path: Path) -> None:
    tree = _project(tmp_path / "tree")
    _check(str(tree))
    with (tree / "other.py").open("a") as stream:
        stream.write("# edited\n")
    alone = _check("--no-cache", str(tree / "other.py"))[2]
    assert _check(str(tree))[2] == alone, "step.py read networks.py and train.py, not other.py"


def test_a_file_that_now_builds_the_class_a_result_looked_for_misses(tmp_path: Path) -> None:
    tree = _project(tmp_path / "tree")
    (tree / "src" / "networks.py").write_text(
        NETWORKS + "\n\nclass FixedLoss(nn.Cell):\n    def construct(self, x):\n        return x\n"
    )
    (tree / "train.py").write_text(TRAIN.replace("StarLoss", "FixedLoss"))
    assert "MSR015" not in _check(str(tree))[1]
    (tree / "other.py").write_text(TRAIN)  # a second train step, built with the *inputs network
    fresh = _check("--no-cache", str(tree))
    assert "MSR015" in fresh[1]
    assert _check(str(tree))[:2] == fresh[:2]


def test_an_added_file_that_an_import_now_finds_misses(tmp_path: Path) -> None:
    tree = _project(tmp_path / "tree")
    (tree / "src" / "networks.py").unlink()
    before = _check(str(tree))
    (tree / "src" / "networks.py").write_text(NETWORKS)
    fresh = _check("--no-cache", str(tree))
    assert fresh[1] != before[1]
    assert _check(str(tree))[:2] == fresh[:2]


def test_a_corrupt_run_state_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(cache))
    tree = _project(tmp_path / "tree")
    first = _check(str(tree))
    run_file = _run_file(cache)
    with (tree / "other.py").open("a") as stream:
        stream.write("# edited\n")
    data = _payload(run_file)
    for state in ({"broken": 1}, ["not", "a", "table"], {"digests": ["not", "a", "table"]}):
        _sign(run_file, {**data, "state": state})
        assert _check(str(tree))[:2] == first[:2]


@pytest.mark.parametrize(
    "options",
    [["--target-version", "2.0"], ["--select", "MS2"], ["--ignore", "MS101"], ["--format", "json"]],
    ids=["target", "select", "ignore", "format"],
)
def test_options_that_change_results_do_not_reuse_them(tmp_path: Path, options: list[str]) -> None:
    tree = _tree(tmp_path / "tree")
    _check(str(tree))
    fresh = CliRunner().invoke(
        main, ["check", "-j", "1", "--target-version", "2.8", "--no-cache", *options, str(tree)]
    )
    cached = CliRunner().invoke(main, ["check", "-j", "1", "--target-version", "2.8", *options, str(tree)])
    if "json" in options:  # the document repeats the command line, which differs by --no-cache
        assert {**json.loads(cached.stdout), "arguments": []} == {**json.loads(fresh.stdout), "arguments": []}
    assert (cached.exit_code, cached.stdout.count("MS")) == (fresh.exit_code, fresh.stdout.count("MS"))
    if "json" not in options:
        assert cached.stdout == fresh.stdout


def test_per_file_ignores_are_part_of_the_key(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    _check(str(tree))
    (tree / "pyproject.toml").write_text('[tool.ms-migrate]\nper-file-ignores = { "step.py" = ["MS101"] }\n')
    fresh = _check("--no-cache", str(tree))
    assert f"{tree / 'step.py'}:" not in fresh[1]
    assert _check(str(tree))[:2] == fresh[:2]


def test_a_file_whose_rule_failed_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "ms901_broken.py").write_text(
        "from ms_migrate.rules.base import Rule\n\n\n"
        "class Broken(Rule):\n    code = 'MS901'\n    title = 'always fails'\n    prefilter = ('BROKEN',)\n\n"
        "    def check(self, ctx):\n        raise RuntimeError('bug')\n"
    )
    monkeypatch.setenv("MS_MIGRATE_RULES_PATH", str(rules))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "broken.py").write_text("BROKEN = 1\n")
    (tree / "fine.py").write_text("import mindspore as ms\n\ngrad_fn = ms.grad(lambda x: x)\n")
    first = _check(str(tree))
    assert "MSR099" in first[1]
    assert _check(str(tree))[2] == 1, "the file whose rule failed is processed again, the other not"


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    from ms_migrate.files import sources

    read: list[Path] = []
    original = sources.read_source

    def counted(path: Path) -> sources.SourceFile:
        read.append(path)
        return original(path)

    monkeypatch.setattr(sources, "read_source", counted)
    return read


def test_a_rerun_reads_no_file_whose_lstat_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "lint.py").write_text("from mindspore import ops\ny = ops.identity(1)\n")
    time.sleep(0.05)  # older than a timestamp tick: a stat taken sooner is not trusted (racy clean)
    first = _check(str(tree))
    read = _counting_reads(monkeypatch)
    assert _check(str(tree)) == (*first[:2], 0)
    assert read == []  # `check` needs no text of a file it has a result for
    assert _dry_run(str(tree))[1:] == _dry_run("--no-cache", str(tree))[1:]
    read.clear()
    _dry_run(str(tree))
    # The files that `upgrade` rewrites are read (their text is the diff's and the write's); the
    # clean ones and those with findings only are answered from their lstat.
    assert sorted(path.name for path in read) == ["step.py", "two.py"]


def test_a_file_rewritten_with_its_old_size_and_times_is_read_again(tmp_path: Path) -> None:
    import os

    tree = _tree(tmp_path / "tree")
    lint = tree / "lint.py"
    lint.write_text("from mindspore import ops\ny = ops.identity(1)\n")
    first = _check(str(tree))
    assert "MS210" in first[1]
    before = lint.stat()
    lint.write_text("from mindspore import ops\nyyy = ops.square(1)\n")  # same size, clean
    os.utime(lint, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `cp -p` or `touch -r` leave it
    assert lint.stat().st_size == before.st_size and lint.stat().st_mtime_ns == before.st_mtime_ns
    again = _check(str(tree))
    assert "lint.py" not in again[1]


def test_every_run_setting_reaches_the_cache_key() -> None:
    """The cache key is made of every field of RunSettings, not a list kept by hand: a result
    cached under one value of any of them is never served under another."""
    config = Config(root=Path("/project"), select=("MS1",), per_file_ignores={"a.py": ("MS2",)})
    base = RunSettings.of(Version(2, 10), ("upgrade", "lint"), config, fix=True)
    other = {
        "target": Version(2, 8),
        "kinds": ("lint",),
        "fix": False,
        "written_for": Version(1, 10),
        "select": ("MS2",),
        "ignore": ("MS3",),
        "per_file_ignores": (("b.py", ("MS2",)),),
        "root": Path("/elsewhere"),
    }
    assert set(other) == {field.name for field in dataclasses.fields(RunSettings)}, "a new field: add it here"
    key = settings_digest(base.key())
    for name, value in other.items():
        assert settings_digest(dataclasses.replace(base, **{name: value}).key()) != key, name
    # Read from the configuration, as the run reads it.
    written = dataclasses.replace(config, written_for=Version(1, 10), ignore=("MS3",))
    assert RunSettings.of(Version(2, 10), ("upgrade", "lint"), written).key() != base.key()
