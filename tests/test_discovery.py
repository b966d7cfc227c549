"""Which files a run looks at: .gitignore, --exclude, explicit files, and an empty run."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ms_migrate.files import sources
from ms_migrate.frontends.cli import main


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_gitignore_files_are_honoured_at_every_level(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _tree(
        tmp_path,
        {
            ".gitignore": "generated/\n*_pb2.py\n",
            "src/.gitignore": "scratch.py\n!keep_pb2.py\n",
            "src/train.py": "",
            "src/scratch.py": "",
            "src/model_pb2.py": "",
            "src/keep_pb2.py": "",
            "generated/out.py": "",
            "notes/lesson.ipynb": "{}",
        },
    )
    walked = sources.discover([tmp_path / "src", tmp_path / "notes"])
    found = [path.relative_to(tmp_path).as_posix() for path in walked]
    assert found == ["src/keep_pb2.py", "src/train.py", "notes/lesson.ipynb"]
    assert [path.name for path in sources.discover([tmp_path])] == ["lesson.ipynb", "keep_pb2.py", "train.py"]


def test_exclude_accepts_a_directory_with_a_slash(tmp_path: Path) -> None:
    _tree(tmp_path, {"a/third_party/x.py": "", "a/y.py": ""})
    assert [path.name for path in sources.discover([tmp_path], ["third_party/"])] == ["y.py"]


def test_a_non_python_file_named_explicitly_is_refused(tmp_path: Path) -> None:
    _tree(tmp_path, {"notes.txt": "GradOperation(", "run_train": "#!/usr/bin/env python3\nx = 1\n"})
    result = CliRunner().invoke(main, ["check", str(tmp_path / "notes.txt"), str(tmp_path / "run_train")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'notes.txt'}: not a Python file or notebook; skipped" in result.output
    assert "run_train: not a Python" not in result.output and "syntax error" not in result.output


def test_no_files_found_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("nothing here")
    result = CliRunner().invoke(main, ["upgrade", str(tmp_path)])
    assert result.exit_code == 0
    assert f"warning: no Python files or notebooks found in {tmp_path}" in result.output


def test_a_directory_named_on_the_command_line_is_walked_even_if_ignored(tmp_path: Path) -> None:
    """`make example` works on a copy under the repository's ignored .example-run/."""
    (tmp_path / ".git").mkdir()
    ignored = {
        ".gitignore": ".example-run/\n*_pb2.py\n",
        ".example-run/p/a.py": "",
        ".example-run/p/b_pb2.py": "",
    }
    _tree(tmp_path, ignored)
    assert [path.name for path in sources.discover([tmp_path / ".example-run" / "p"])] == ["a.py"]
    assert list(sources.discover([tmp_path])) == []
