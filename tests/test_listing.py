"""A walk that starts from what the last walk found (``sources.FolderListings``): the same files,
in the same order, as a walk without it, after any change to the tree; and only the folders that
changed are listed again."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.files import sources
from ms_migrate.files.cache import DIRECTORY_VARIABLE
from ms_migrate.frontends.cli import main

# Longer than a timestamp tick where times keep nanoseconds: a folder changed within one tick
# of a walk is listed again by the next (racy), which would hide a stale listing.
PAST_A_TICK_S = 0.03


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _fine_grained_times(folder: Path) -> bool:
    probe = folder / ".probe"
    probe.write_text("")
    coarse = probe.stat().st_mtime_ns % 1_000_000_000 == 0
    probe.unlink()
    return not coarse


class _Counted:
    """``os.scandir``, counting the folders listed."""

    def __init__(self) -> None:
        self.listed: list[str] = []
        self._scandir = os.scandir

    def __call__(self, path: str) -> object:
        self.listed.append(os.fspath(path))
        return self._scandir(path)

    def relative(self) -> list[str]:
        """The folders listed by a walk of relative paths (the cache key's own walk of the
        tool's package is absolute)."""
        return [path for path in self.listed if not os.path.isabs(path)]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> _Counted:
    counter = _Counted()
    monkeypatch.setattr(os, "scandir", counter)
    return counter


def _walks(root: Path, known: sources.FolderListings | None, excludes: tuple[str, ...] = ()):
    """(a fresh walk, a walk from ``known``, what the second found)."""
    time.sleep(PAST_A_TICK_S)
    fresh = list(sources.discover([root], excludes))
    found = sources.FolderListings()
    cached = list(sources.discover([root], excludes, known, found))
    return fresh, cached, found


def _remove(path: Path) -> None:
    path.unlink()


def _same_size_same_mtime(path: Path, text: str) -> None:
    """Rewrite ``path`` with text of its size and give it back its modification time: only the
    change time (which no tool can set back) says it changed."""
    info = path.stat()
    assert len(text.encode()) == info.st_size
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _repository_above(root: Path) -> None:
    _write(root.parent, {".git/HEAD": "", ".gitignore": "d.py\n"})


def _target_made_a_folder(root: Path) -> None:
    (root / "top.py").unlink()
    (root / "top.py").mkdir()


CHANGES: list[tuple[str, Callable[[Path], None]]] = [
    ("a file added deep down", lambda root: _write(root, {"pkg/sub/deep/new.py": ""})),
    ("a file removed", lambda root: _remove(root / "pkg/sub/b.py")),
    ("a folder renamed", lambda root: (root / "pkg/sub").rename(root / "pkg/moved")),
    ("a .gitignore above unchanged folders", lambda root: _write(root, {"pkg/.gitignore": "deep.py\n"})),
    ("it edited: size, mtime kept", lambda root: _same_size_same_mtime(root / "pkg/.gitignore", "peed.py\n")),
    ("a .gitignore removed", lambda root: _remove(root / "pkg/.gitignore")),
    ("a folder turned into a virtual environment", lambda root: _write(root, {"pkg/moved/pyvenv.cfg": ""})),
    ("a link to a file added", lambda root: (root / "links/linked.py").symlink_to(root / "top.py")),
    ("the link's target made a folder, elsewhere", _target_made_a_folder),
    ("the top .gitignore edited", lambda root: _write(root, {".gitignore": "a.py\n"})),
    ("a repository made above: its .gitignore now applies", _repository_above),
]  # fmt: skip


def test_a_walk_from_the_last_one_finds_what_a_fresh_walk_finds_after_each_change(tmp_path: Path) -> None:
    root = tmp_path / "repo" / "project"
    _write(
        root,
        {
            "top.py": "",
            "pkg/a.py": "",
            "pkg/sub/b.py": "",
            "pkg/sub/deep/deep.py": "",
            "pkg/sub/deep/notes.txt": "",
            "other/c.ipynb": "{}",
            "other/d.py": "",
            "links/notes.txt": "",
        },
    )
    _, first, known = _walks(root, None)
    assert [path.relative_to(root).as_posix() for path in first] == [
        "top.py",
        "other/c.ipynb",
        "other/d.py",
        "pkg/a.py",
        "pkg/sub/b.py",
        "pkg/sub/deep/deep.py",
    ]
    for name, change in CHANGES:
        change(root)
        fresh, cached, found = _walks(root, known)
        assert cached == fresh, name
        known = found
    # top.py is a folder, and the link to it one not entered; a.py and d.py are ignored.
    assert [path.relative_to(root).as_posix() for path in fresh] == ["other/c.ipynb"]


def test_only_the_folders_that_changed_are_listed_again(tmp_path: Path, counted: _Counted) -> None:
    if not _fine_grained_times(tmp_path):
        pytest.skip("whole-second timestamps: every folder just made is racy for two seconds")
    _write(tmp_path, {"a/one.py": "", "a/b/two.py": "", "c/three.py": "", ".gitignore": "*.tmp\n"})
    _, first, known = _walks(tmp_path, None)
    assert len(counted.listed) == 2 * 4  # the fresh walk and the first, each listing every folder
    counted.listed.clear()
    time.sleep(PAST_A_TICK_S)
    again = sources.FolderListings()
    assert list(sources.discover([tmp_path], (), known, again)) == first
    assert counted.listed == []
    assert again.folders == known.folders
    _write(tmp_path, {"a/b/new.py": ""})
    time.sleep(PAST_A_TICK_S)
    found = sources.FolderListings()
    assert [path.name for path in sources.discover([tmp_path], (), again, found)] == [
        "one.py",
        "new.py",
        "two.py",
        "three.py",
    ]
    assert counted.listed == [str(tmp_path / "a" / "b")]


def test_a_gitignore_above_unchanged_folders_decides_for_them_at_once(tmp_path: Path) -> None:
    _write(tmp_path, {"a/b/c/secret.py": "", "a/b/c/kept.py": ""})
    _, _, known = _walks(tmp_path, None)
    assert "a/b/c" in "".join(known.folders)
    _write(tmp_path, {"a/.gitignore": "secret.py\n"})  # changes a, not b or c
    _, cached, _ = _walks(tmp_path, known)
    assert [path.name for path in cached] == ["kept.py"]


def test_another_exclude_or_a_walk_changed_since_is_not_trusted(tmp_path: Path) -> None:
    _write(tmp_path, {"a/x.py": "", "b/y.py": ""})
    _, _, known = _walks(tmp_path, None)
    fresh, cached, _ = _walks(tmp_path, known, excludes=("b",))
    assert cached == fresh == [tmp_path / "a" / "x.py"]
    known.complete = False  # as a walk that met a racy .gitignore leaves it: nothing is kept
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "z.py").write_text("")
    fresh, cached, _ = _walks(tmp_path, known)
    assert cached == fresh


def test_check_keeps_its_walk_and_lists_no_unchanged_folder_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: _Counted
) -> None:
    if not _fine_grained_times(tmp_path):
        pytest.skip("whole-second timestamps: every folder just made is racy for two seconds")
    monkeypatch.chdir(tmp_path)
    removed_name = "from mindspore import ops\nx = ops.ControlDepend()\n"
    _write(tmp_path / "src", {"a.py": removed_name, "pkg/b.py": "y = 1\n"})
    time.sleep(PAST_A_TICK_S)
    first = CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"])
    walks = list(Path(os.environ[DIRECTORY_VARIABLE]).rglob("walk-*"))
    assert len(walks) == 1 and first.exit_code == 1 and "MS211" in first.output
    counted.listed.clear()
    second = CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"])
    assert second.output == first.output and second.exit_code == 1
    assert counted.relative() == []
    walks[0].write_bytes(walks[0].read_bytes().replace(b"a.py", b"z.py"))  # not signed: a miss
    third = CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"])
    assert third.output == first.output
    assert sorted(counted.relative()) == ["src", os.path.join("src", "pkg")]


def test_no_cache_keeps_no_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "src", {"a.py": "y = 1\n"})
    result = CliRunner().invoke(main, ["check", "--no-cache", "--target-version", "2.8", "src"])
    assert result.exit_code == 0, result.output
    assert not list(Path(os.environ[DIRECTORY_VARIABLE]).rglob("walk-*"))


def test_files_named_one_by_one_keep_no_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pre-commit names the files it hands over, a new list at each commit: there is no walk to
    keep, and a walk file per list would pile up in the cache."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "src", {"a.py": "y = 1\n", "b.py": "z = 2\n"})
    for names in (["src/a.py"], ["src/b.py"], ["src/a.py", "src/b.py"]):
        result = CliRunner().invoke(main, ["check", "--target-version", "2.8", *names])
        assert result.exit_code == 0, result.output
    assert not list(Path(os.environ[DIRECTORY_VARIABLE]).rglob("walk-*"))
    result = CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"])
    assert result.exit_code == 0, result.output
    assert len(list(Path(os.environ[DIRECTORY_VARIABLE]).rglob("walk-*"))) == 1


def test_the_cache_folder_gets_its_gitignore_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who deleted the cache's .gitignore (or CACHEDIR.TAG) gets it back at the next write,
    although the folder it guards is still there."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "src", {"a.py": "y = 1\n"})
    cache = Path(os.environ[DIRECTORY_VARIABLE])
    assert CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"]).exit_code == 0
    (cache / ".gitignore").unlink()
    (cache / "CACHEDIR.TAG").unlink()
    _write(tmp_path / "src", {"new.py": "z = 2\n"})  # something to write
    time.sleep(PAST_A_TICK_S)
    assert CliRunner().invoke(main, ["check", "--target-version", "2.8", "src"]).exit_code == 0
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").is_file()
