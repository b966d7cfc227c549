"""File handling: encodings, newlines, modes, atomic writes, discovery."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ms_migrate.files import sources


def test_crlf_and_chinese_survive_a_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    raw = "# 中文注释\r\nx = 1\r\n".encode()
    path.write_bytes(raw)
    source = sources.read_source(path)
    assert "\r\n" in source.text
    sources.write_source(source, source.text.replace("x = 1", "x = 2"))
    assert path.read_bytes() == raw.replace(b"x = 1", b"x = 2")


def test_bom_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    source = sources.read_source(path)
    assert source.has_bom and not source.text.startswith("\ufeff")
    sources.write_source(source, "x = 2\n")
    assert path.read_bytes() == b"\xef\xbb\xbfx = 2\n"


def test_pep263_cookie_encoding_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes("# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"))
    source = sources.read_source(path)
    assert source.encoding == "iso-8859-1" and "café" in source.text
    sources.write_source(source, source.text.replace("café", "cafés"))
    assert path.read_bytes().decode("latin-1").endswith("'cafés'\n")


def test_unknown_encoding_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    with pytest.raises(sources.SourceError, match="unknown encoding"):
        sources.read_source(path)


def test_undecodable_bytes_report_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\ny = '\xff'\n")
    with pytest.raises(sources.SourceError) as error:
        sources.read_source(path)
    assert error.value.line == 2


def test_write_keeps_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "tool.py"
    path.write_text("x = 1\n")
    path.chmod(0o751)
    sources.write_source(sources.read_source(path), "x = 2\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tool.py"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root gives a file away")
def test_a_rewrite_as_root_keeps_owner_group_and_extended_attributes(tmp_path: Path) -> None:
    """A CI container rewriting a mounted checkout as root: the user keeps their files."""
    path = tmp_path / "step.py"
    path.write_text("x = 1\n")
    os.chown(path, 1234, 5678)
    try:
        os.setxattr(path, "user.origin", b"checkout")
    except (AttributeError, OSError):
        has_xattrs = False
    else:
        has_xattrs = True
    sources.write_source(sources.read_source(path), "x = 2\n")
    info = path.stat()
    assert (info.st_uid, info.st_gid) == (1234, 5678)
    assert path.read_text() == "x = 2\n"
    if has_xattrs:
        assert os.getxattr(path, "user.origin") == b"checkout"


def test_a_file_with_the_longest_legal_name_is_rewritten(tmp_path: Path) -> None:
    """Its temporary's name carries it cut short: `.NAME.XXXXXXXX.ms-migrate.tmp` was too long."""
    path = tmp_path / ("n" * 252 + ".py")
    try:
        path.write_text("x = 1\n")
    except OSError:
        pytest.skip("this filesystem takes no 255-byte name")
    sources.write_source(sources.read_source(path), "x = 2\n")
    assert path.read_text() == "x = 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_read_only_file_is_reported_not_written(tmp_path: Path) -> None:
    path = tmp_path / "locked.py"
    path.write_text("x = 1\n")
    path.chmod(0o444)
    source = sources.read_source(path)
    with pytest.raises(sources.SourceError, match="read-only"):
        sources.write_source(source, "x = 2\n")
    assert path.read_text() == "x = 1\n"


def test_interrupted_write_leaves_original_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    source = sources.read_source(path)

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sources.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sources.write_source(source, "x = 2\n")
    assert path.read_text() == "x = 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_discovery_skips_tool_directories(tmp_path: Path) -> None:
    for name in (
        "pkg/a.py",
        "pkg/b.txt",
        ".git/c.py",
        "build/d.py",
        "venv/e.py",
        "pkg/__pycache__/f.py",
        "env2/g.py",
        "env2/pyvenv.cfg",
        "pkg/sub/h.py",
    ):
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")
    found = [p.relative_to(tmp_path).as_posix() for p in sources.discover([tmp_path])]
    assert found == ["pkg/a.py", "pkg/sub/h.py"]
    excluded = [p.relative_to(tmp_path).as_posix() for p in sources.discover([tmp_path], ["sub"])]
    assert excluded == ["pkg/a.py"]


def test_special_files_and_symlinks_are_reported_not_opened(tmp_path: Path) -> None:
    import os

    from click.testing import CliRunner

    from ms_migrate.frontends.cli import main

    os.mkfifo(tmp_path / "pipe.py")  # opening it would block the run forever
    (tmp_path / "zero.py").symlink_to("/dev/zero")  # reading it would never end
    outside = tmp_path.parent / f"{tmp_path.name}_outside.py"
    outside.write_text("x = 1\n")
    (tmp_path / "linked.py").symlink_to(outside)
    (tmp_path / "good.py").write_text("y = 2\n")
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'pipe.py'}: not a regular file; skipped" in result.output
    assert f"{tmp_path / 'zero.py'}: a symbolic link; not followed" in result.output
    assert (tmp_path / "linked.py").is_symlink() and outside.read_text() == "x = 1\n"
    assert "3 files could not be processed" in result.output


def test_a_file_edited_during_the_run_is_left_as_the_user_left_it(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("x = 1\n")
    source = sources.read_source(path)
    path.write_text("x = 2  # the user's edit\n")
    with pytest.raises(sources.SourceError, match="changed on disk during the run; left unchanged"):
        sources.write_source(source, "x = 3\n")
    assert path.read_text() == "x = 2  # the user's edit\n"
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_cr_only_file_keeps_its_final_cr(tmp_path: Path) -> None:
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version
    from tests.fixture_cases import FIXTURES

    legacy = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
    path = tmp_path / "old_mac.py"
    path.write_bytes(legacy.replace("\n", "\r").encode())
    source = sources.read_source(path)
    result = migrate_text(source.text, Version(2, 10))
    assert result.converted == 1
    sources.write_source(source, result.text)
    data = path.read_bytes()
    assert data.endswith(b"opt)\r") and b"\n" not in data
