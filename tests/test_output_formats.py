"""Machine-readable runs: the JSON document against its schema (docs/json-output.schema.json),
SARIF against the official 2.1.0 schema with invocations, provenance and percent-encoded URIs,
columns in characters, and upgrade's --max-changes and --output-file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from tests.test_autodiff_lints import sarif_schema
from tests.test_baseline import DEPRECATED, LEGACY_STEP, NOT_FIXABLE

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "json-output.schema.json").read_text())


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def tree(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "step.py").write_text(LEGACY_STEP)
    (root / "lint.py").write_text(NOT_FIXABLE)
    (root / "clean.py").write_text("x = 1\n")
    (root / "broken.py").write_text("from mindspore.ops import operations as P\nx = P.Pack(\n")
    (root / "notes.txt").write_text("not python\n")
    return root


def test_the_json_document_follows_its_schema(tmp_path: Path) -> None:
    root = tree(tmp_path / "project")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for command in (["check"], ["upgrade", "--dry-run"]):
        args = [*command, "--no-cache", "--format", "json", "--target-version", "2.8"]
        code, out, _ = invoke(*args, str(root), str(root / "notes.txt"))
        document = json.loads(out)
        jsonschema.validate(document, SCHEMA)
        assert code == document["exit_code"] == 2  # broken.py and notes.txt
        assert document["command"] == command[0]
        assert document["target"] == {"version": "2.8", "source": "--target-version"}
        status = {Path(item["path"]).name: (item["status"], item["reason"]) for item in document["files"]}
        assert status["step.py"] == ("changed", None)
        assert status["clean.py"][0] == status["lint.py"][0] == "unchanged"
        assert status["broken.py"][0] == "error" and "broken.py" in status["broken.py"][1]
        assert status["notes.txt"] == ("skipped", "not a Python file or notebook")
        counts = document["counts"]
        assert (counts["changed"], counts["error"], counts["skipped"]) == (1, 1, 1)
        assert counts["findings"] == len(document["findings"]) == sum(counts["by_code"].values())
        edits = [edit for item in document["findings"] if item["fix"] for edit in item["fix"]["edits"]]
        assert edits and all(edit["start"]["column"] >= 1 for edit in edits)


def test_the_target_source_says_how_the_target_was_found(tmp_path: Path) -> None:
    root = tmp_path / "pinned"
    root.mkdir()
    (root / "lint.py").write_text(NOT_FIXABLE)
    (root / "requirements.txt").write_text("mindspore>=2.8,<3\n")
    _, out, _ = invoke("check", "--no-cache", "--format", "json", str(root))
    target = json.loads(out)["target"]
    assert target["version"] == "2.8"
    assert target["source"].startswith("lowest allowed by ")
    assert target["source"].endswith("mindspore>=2.8,<3")
    (root / "pyproject.toml").write_text('[tool.ms-migrate]\ntarget-version = "2.9"\n')
    _, out, _ = invoke("check", "--no-cache", "--format", "json", str(root))
    assert json.loads(out)["target"] == {
        "version": "2.9",
        "source": f"{root / 'pyproject.toml'} [tool.ms-migrate]: target-version",
    }


def test_columns_count_characters_not_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "cjk.py"
    path.write_text('from mindspore.ops import operations as P\nx = "中文"; y = P.Pack()\n', encoding="utf-8")
    column = len('x = "中文"; y = ') + 1
    _, text, _ = invoke("check", "--no-cache", "--target-version", "2.10", str(path))
    assert f"cjk.py:2:{column}: MS210" in text, text
    _, out, _ = invoke("check", "--no-cache", "--format", "json", "--target-version", "2.10", str(path))
    (finding,) = json.loads(out)["findings"]
    assert (finding["column"], finding["end_column"]) == (column, column + len("P.Pack"))
    _, out, _ = invoke("check", "--no-cache", "--format", "github", "--target-version", "2.10", str(path))
    assert f",line=2,col={column}," in out


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_sarif_validates_and_names_the_run_the_commit_and_encoded_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = repo / "模型 zoo" / "research cv"
    tree(folder)
    (folder / "broken.py").unlink()
    git("init", "-q", cwd=repo)
    git("remote", "add", "origin", "https://someone:s3cret@gitee.com/mindspore/models.git", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "zoo", cwd=repo)
    code, out, _ = invoke("check", "--no-cache", "--format", "sarif", "--target-version", "2.8", str(folder))
    log = json.loads(out)
    jsonschema.validate(log, sarif_schema())
    (run,) = log["runs"]
    (invocation,) = run["invocations"]
    assert invocation["exitCode"] == code == 1 and invocation["executionSuccessful"] is True
    (vcs,) = run["versionControlProvenance"]
    assert vcs["revisionId"] == git("rev-parse", "HEAD", cwd=repo)
    assert vcs["repositoryUri"] == "https://gitee.com/mindspore/models.git"  # no credentials
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == repo.resolve().as_uri() + "/"
    locations = [result["locations"][0]["physicalLocation"] for result in run["results"]]
    uris = {location["artifactLocation"]["uri"] for location in locations}
    assert "%E6%A8%A1%E5%9E%8B%20zoo/research%20cv/step.py" in uris, uris
    assert all(" " not in uri for uri in uris)
    # Outside a checkout: absolute file: URIs, encoded too.
    outside = tree(tmp_path / "plain dir")
    (outside / "broken.py").unlink()
    _, out, _ = invoke("check", "--no-cache", "--format", "sarif", "--target-version", "2.8", str(outside))
    log = json.loads(out)
    jsonschema.validate(log, sarif_schema())
    assert "versionControlProvenance" not in log["runs"][0]
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and "plain%20dir" in uri


def test_max_changes_rewrites_that_many_files_and_reports_the_rest_pending(tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(DEPRECATED)
    report = tmp_path / "report.json"
    code, _, err = invoke(
        "upgrade", "--no-cache", "--max-changes", "1", "--format", "json", "-o", str(report), str(tmp_path)
    )
    assert code == 1 and "2 findings remaining" in err, err  # those of the files pending
    changed = [name for name in ("a.py", "b.py", "c.py") if (tmp_path / name).read_text() != DEPRECATED]
    assert changed == ["a.py"]
    assert "2 more files pending (--max-changes)" in err
    document = json.loads(report.read_text())
    jsonschema.validate(document, SCHEMA)
    status = {Path(item["path"]).name: (item["status"], item["reason"]) for item in document["files"]}
    assert status["a.py"] == ("changed", None)
    assert status["b.py"][0] == "unchanged" and status["b.py"][1].startswith("pending: --max-changes 1")
    # The next run takes the next one.
    invoke("upgrade", "--no-cache", "--max-changes", "1", str(tmp_path))
    assert (tmp_path / "b.py").read_text() != DEPRECATED and (tmp_path / "c.py").read_text() == DEPRECATED


def test_shards_merge_into_the_unsharded_run(tmp_path: Path) -> None:
    """Over the fixtures tree (207 files, multi-file projects among them, whose sites depend on
    classes in other files): three shards, merged, are the run over the whole tree."""
    fixtures = Path(__file__).parent / "fixtures"
    for command in (["check"], ["upgrade", "--dry-run"]):
        options = [*command, "--no-cache", "--target-version", "2.8", "--format", "json", "-j", "1"]
        whole = json.loads(invoke(*options, str(fixtures))[1])
        names = []
        for part in (1, 2, 3):
            name = tmp_path / f"{command[0]}-{part}.json"
            invoke(*options, "--shard", f"{part}/3", "-o", str(name), str(fixtures))
            names.append(str(name))
        sizes = [len(json.loads(Path(name).read_text())["files"]) for name in names]
        assert sum(sizes) == len(whole["files"]) and min(sizes) > 0, sizes
        code, out, err = invoke("merge", *names)
        merged = json.loads(out)
        jsonschema.validate(merged, SCHEMA)
        assert code == whole["exit_code"], err
        assert {**merged, "arguments": []} == {**whole, "arguments": []}
        assert "--shard" not in merged["arguments"]


def test_merge_refuses_overlapping_shards_and_other_runs(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(NOT_FIXABLE)
    one, other = tmp_path / "one.json", tmp_path / "other.json"
    options = ["check", "--no-cache", "--format", "json", "--target-version"]
    invoke(*options, "2.8", "-o", str(one), str(tmp_path))
    code, _, err = invoke("merge", str(one), str(one))
    assert code == 2 and "shards overlap" in err, err
    invoke(*options, "2.9", "-o", str(other), str(tmp_path))
    code, _, err = invoke("merge", str(one), str(other))
    assert code == 2 and "shards of different runs" in err, err
    code, _, err = invoke("check", "--shard", "4/3", str(tmp_path))
    assert code == 2 and "K/N" in err, err


def test_merge_takes_exactly_shards_1_to_n_and_machines_split_a_tree_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 of 3 shards used to merge without a word, and `.` and `./src` split differently."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    for number in range(12):
        (tmp_path / "src" / f"m{number}.py").write_text(NOT_FIXABLE)
    monkeypatch.chdir(tmp_path)
    options = ["check", "--no-cache", "--format", "json", "--target-version", "2.8"]
    names = {}
    for part in (1, 2, 3):
        for spelling in (".", "./src", str(tmp_path / "src")):
            name = tmp_path / f"{part}-{len(names)}.json"
            invoke(*options, "--shard", f"{part}/3", "-o", str(name), spelling)
            files = {Path(item["path"]).name for item in json.loads(name.read_text())["files"]}
            names.setdefault(part, (name, files))
            assert files == names[part][1], (part, spelling)  # each machine's spelling: one split
    shards = [str(names[part][0]) for part in (1, 2, 3)]
    code, _, err = invoke("merge", shards[0], shards[1])
    assert code == 2 and "shard 3/3 missing" in err, err
    whole = tmp_path / "whole.json"
    invoke(*options, "-o", str(whole), ".")
    code, out, err = invoke("merge", *shards)
    assert code == json.loads(whole.read_text())["exit_code"] and len(json.loads(out)["files"]) == 12, err
    code, _, err = invoke("merge", shards[0], str(whole))
    assert code == 2 and "not a shard" in err, err


PACK = "import mindspore.ops as ops\nfrom mindspore.ops import operations as P\ny = P.Pack()\n"


def test_stdin_is_checked_and_migrated_as_the_file_it_stands_for(tmp_path: Path) -> None:
    ignores = '[tool.ms-migrate]\nper-file-ignores = { "vendored/*" = ["MS210"] }\n'
    (tmp_path / "pyproject.toml").write_text(ignores)
    name = tmp_path / "src" / "x.py"  # need not exist: an editor's unsaved buffer
    result = CliRunner().invoke(main, ["check", "-", "--stdin-filename", str(name)], input=PACK)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{name}:3:5: MS210 [*] `P.Pack`"), result.stdout
    vendored = str(tmp_path / "vendored" / "x.py")
    ignored = CliRunner().invoke(main, ["check", "-", "--stdin-filename", vendored], input=PACK)
    assert (ignored.exit_code, ignored.stdout) == (0, "")  # the name's per-file ignores hold

    written = CliRunner().invoke(main, ["upgrade", "-", "--stdin-filename", str(name)], input=PACK)
    assert written.exit_code == 0 and written.stdout == "import mindspore.ops as ops\ny = ops.Stack()\n"
    assert "MS210" in written.stderr and not name.exists()  # nothing is written to disk
    preview = CliRunner().invoke(main, ["upgrade", "--dry-run", "-"], input=PACK)
    assert preview.exit_code == 1 and "+y = ops.Stack()" in preview.stdout
    unchanged = CliRunner().invoke(main, ["upgrade", "-"], input="x = 1\n")
    assert (unchanged.exit_code, unchanged.stdout) == (0, "x = 1\n")

    broken_text = "import mindspore\nx = P.Pack(\n"
    broken = CliRunner().invoke(main, ["check", "-", "--stdin-filename", "b.py"], input=broken_text)
    assert broken.exit_code == 2 and "b.py" in broken.stderr
    # No rule's prefilter picks this one: its syntax error is still the input's, as a file's is.
    unpicked = "import mindspore\ndef f(:\n"
    for command in (["check"], ["upgrade"]):
        result = CliRunner().invoke(main, [*command, "-", "--stdin-filename", "u.py"], input=unpicked)
        assert result.exit_code == 2 and "u.py:2: syntax error" in result.stderr, result.output
    mixed = CliRunner().invoke(main, ["check", "-", str(tmp_path)], input=PACK)
    assert mixed.exit_code == 2 and "only path" in mixed.stderr


def test_sarif_rules_carry_their_help_and_the_page_they_cite(tmp_path: Path) -> None:
    """Code scanning shows a rule's help under "Show more" and links its helpUri: the text
    `ms-migrate explain` prints, and the MindSpore page or release note the rule cites."""
    (tmp_path / "a.py").write_text(DEPRECATED + "y = 1  # ms-migrate: ignore[MS2100]\n")
    code, out, _ = invoke("check", "--no-cache", "--format", "sarif", str(tmp_path))
    rules = {rule["id"]: rule for rule in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]}
    assert code == 1 and set(rules) == {"MS210", "MS290"}
    for rule in rules.values():
        assert rule["help"]["markdown"] == rule["fullDescription"]["text"] != ""
        assert rule["helpUri"].startswith("https://") and rule["helpUri"] in rule["help"]["text"]
    assert rules["MS290"]["helpUri"] == "https://docs.astral.sh/ruff/rules/invalid-rule-code/"
