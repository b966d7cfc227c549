"""The release code is written for: the project's pin below the target, or `from-version`. The
rules for a change of meaning (MS222 Model.train's sink mode, MS223 the default execution mode,
MS224 BatchNorm's moving variance)
measure from it, and are silent where nothing says it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

PROBE = """\
import mindspore as ms
from mindspore import Model, load_param_into_net, nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.9)
        self.norm = nn.BatchNorm2d(4)


def main(dataset, params):
    net = Net()
    missing = load_param_into_net(net, params)
    model = Model(net)
    model.train(1, dataset)
    return missing


if __name__ == "__main__":
    main(None, {})
"""


def _run(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ms_migrate", *arguments],
        capture_output=True,
        text=True,
        cwd=project,
    )


def _codes(project: Path) -> Counter[str]:
    done = _run(project, "check", "--no-cache", "--format", "json", "--target-version", "2.10", "probe.py")
    assert done.returncode in (0, 1), done.stderr
    return Counter(item["code"] for item in json.loads(done.stdout)["findings"])


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the project's root: no pin above it is read
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


def test_a_1x_pin_gives_one_finding_per_change_of_meaning(project: Path) -> None:
    (project / "requirements.txt").write_text("mindspore==1.10.1\n")
    codes = _codes(project)
    assert {code: codes[code] for code in ("MS220", "MS221", "MS222", "MS223", "MS224")} == {
        "MS220": 1,
        "MS221": 1,
        "MS222": 1,
        "MS223": 1,
        "MS224": 1,
    }


def test_without_a_pin_the_release_the_code_is_written_for_is_unknown(project: Path) -> None:
    codes = _codes(project)
    assert codes["MS222"] == codes["MS223"] == codes["MS224"] == 0
    assert codes["MS220"] == codes["MS221"] == 1  # these read only the target


def test_without_a_pin_the_run_says_what_it_does_not_report_and_how_to_have_it(project: Path) -> None:
    """A 1.x script upgraded with no pin got 2.x's BatchNorm update and default mode without a
    word: the run now says which rules stay silent, and --from-version makes them speak."""
    silent = _run(project, "check", "--no-cache", "-q", "--target-version", "2.10", "probe.py")
    assert "note: no pin or --from-version says which MindSpore the code was written for" in silent.stderr
    assert "(MS222, MS223, MS224, MS226, MS227) are not reported; pass --from-version X.Y" in silent.stderr
    told = _run(
        project, "check", "--no-cache", "--from-version", "1.10", "--target-version", "2.10", "probe.py"
    )
    assert "code written for MindSpore 1.10: changes of meaning since are reported" in told.stderr
    assert "note: no pin" not in told.stderr
    assert all(f"{code} " in told.stdout for code in ("MS222", "MS223", "MS224"))
    (project / "requirements.txt").write_text("mindspore==2.10\n")  # written for the target
    pinned = _run(project, "check", "--no-cache", "--target-version", "2.10", "probe.py")
    assert "note: no pin" not in pinned.stderr


def test_from_version_says_it_where_no_pin_does(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.ms-migrate]\nfrom-version = "1.9"\n')
    codes = _codes(project)
    assert codes["MS222"] == codes["MS223"] == codes["MS224"] == 1


def test_a_pin_at_the_target_is_not_an_older_release(project: Path) -> None:
    (project / "requirements.txt").write_text("mindspore==2.10\n")
    codes = _codes(project)
    assert codes["MS222"] == codes["MS223"] == codes["MS224"] == 0


def test_from_version_must_be_a_quoted_version(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.ms-migrate]\nfrom-version = 1.10\n")
    done = _run(project, "check", "--target-version", "2.10", "probe.py")
    assert done.returncode == 2
    assert 'from-version must be a quoted string such as "2.10"' in done.stderr


def test_upgrade_from_the_pin_writes_the_old_default_and_reports_the_mode(project: Path) -> None:
    (project / "requirements.txt").write_text("mindspore==1.10.1\n")
    done = _run(project, "upgrade", "--no-cache", "--target-version", "2.10", "probe.py")
    assert done.returncode in (0, 1), done.stderr
    text = (project / "probe.py").read_text()
    assert "model.train(1, dataset, dataset_sink_mode=True)" in text
    assert "nn.Dropout(p=0.1)" in text and "missing, _ = load_param_into_net(net, params)" in text
    assert "set_context" not in text  # MS223 is reported, never written
    assert "MS223" in done.stdout + done.stderr
    # A second run from the same pin finds nothing more to change.
    again = _run(project, "upgrade", "--no-cache", "--target-version", "2.10", "probe.py")
    assert (project / "probe.py").read_text() == text, again.stderr


def test_downgrading_a_2x_project_measures_from_its_pin(project: Path) -> None:
    (project / "requirements.txt").write_text("mindspore==2.8.0\n")
    done = _run(project, "downgrade", "--no-cache", "--target-version", "1.10", "probe.py")
    assert done.returncode in (0, 1), done.stderr
    assert "code written for MindSpore 2.8" in done.stderr
    assert "model.train(1, dataset, dataset_sink_mode=False)" in (project / "probe.py").read_text()


def test_a_file_only_a_change_of_meaning_rule_could_flag_is_not_parsed_without_a_release(
    tmp_path: Path,
) -> None:
    """MS222-MS224 compare the release the code is written for with the target: where the run
    does not know that release, a file only their prefilters match is never parsed for them."""
    from ms_migrate.core import parsing
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    text = "if __name__ == '__main__':\n    print(1)\n"  # MS223's prefilter, and nothing else's
    before = parsing.prechecks
    assert migrate_text(text, Version(2, 10)).diagnostics == []
    assert parsing.prechecks == before
    migrate_text(text, Version(2, 10), written_for=Version(1, 10))
    assert parsing.prechecks == before + 1


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (("check", "--from-version", "3.0"), "from-version 3.0: no MindSpore newer than"),
        (
            ("upgrade", "--target-version", "1.10", "--from-version", "2.10"),
            "from-version 2.10 is newer than the target 1.10: `ms-migrate downgrade --target-version 1.10`",
        ),
        (
            ("downgrade", "--target-version", "1.10", "--from-version", "1.8"),
            "from-version 1.8 is older than the target 1.10: `ms-migrate upgrade --target-version 1.10`",
        ),
    ],
)
def test_a_from_version_on_the_wrong_side_or_unknown_is_refused(
    project: Path, arguments: tuple[str, ...], said: str
) -> None:
    done = _run(project, *arguments, "probe.py")
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert (project / "probe.py").read_text() == PROBE


def test_check_of_code_newer_than_its_target_says_how_to_rewrite_it(project: Path) -> None:
    done = _run(project, "check", "--target-version", "1.10", "--from-version", "2.10", "probe.py")
    assert done.returncode in (0, 1)
    assert "newer than the target 1.10; to rewrite it for 1.10, use `ms-migrate downgrade" in done.stderr


@pytest.mark.parametrize(
    ("written_for", "said", "reported"),
    [
        # between 1.10 and 2.7, which disagree on ops.split and nn.Dense: each call says what it
        # would mean either way (if 2.3 is as 1.10), and is not fixed
        (
            "2.3",
            "compared as written for 1.10 and 2.7: where those two differ, a call is reported with what "
            "it would mean either way",
            ["ops.split", "nn.Dense"],
        ),
        # older than any release read: 1.7 stands for it (it has nn.Dense's 1.x initialisers)
        ("1.5", "compared as written for 1.7, the nearest release read", ["nn.Dense"]),
    ],
)
def test_a_release_whose_runtime_was_not_read_is_compared_as_the_releases_around_it(
    project: Path, written_for: str, said: str, reported: list[str]
) -> None:
    """`--from-version 2.3` once said "changes of meaning since are reported" and compared
    nothing (no signature of 2.3 is known), and 1.5 the same: a silence that reads as "nothing
    changed". The run now says how such a release is read; MS226 compares it as the releases read
    either side of it where those agree, and where they differ says what the call would mean if
    the release were as the older one (a 2.0 repository's 496 `nn.Dense` and `nn.Conv2d` calls
    were silent, though 2.0 still drew 1.x's initialisers)."""
    (project / "calls.py").write_text(
        "from mindspore import nn, ops\nparts = ops.split(x, 1, 1)\ndense = nn.Dense(2, 3)\n"
    )
    done = _run(
        project,
        "check",
        "--no-cache",
        "-q",
        "--target-version",
        "2.10",
        "--from-version",
        written_for,
        "calls.py",
    )
    assert (
        f"note: no runtime of MindSpore {written_for} was read (the releases read are 1.7-1.10" in done.stderr
    )
    assert said in done.stderr
    found = [line.split("`")[1] for line in done.stdout.splitlines() if " MS226 " in line]
    assert found == reported, done.stdout
    if written_for == "2.3":
        assert all(
            "no runtime of 2.3 was read, and 1.10 and 2.7 differ on it; if 2.3 is as 1.10: " in line
            for line in done.stdout.splitlines()
            if " MS226 " in line
        ), done.stdout
        assert " MS226 [*]" not in done.stdout
    known = _run(
        project, "check", "--no-cache", "-q", "--target-version", "2.10", "--from-version", "1.10", "calls.py"
    )
    assert "no runtime" not in known.stderr
    assert sorted(line.split("`")[1] for line in known.stdout.splitlines() if " MS226 " in line) == [
        "nn.Dense",
        "ops.split",
    ]
