"""Files the tool makes (--output-file, --report, --write-baseline) are written as a shell's `>`
would: through a symlink, into a device or a FIFO that is there. Putting a regular file in their
place replaced /dev/null (run as root) and turned a link into a copy. A regular file is still
replaced atomically (tests/test_baseline.py)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from tests.test_baseline import DEPRECATED, check


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "a.py"
    path.write_text(DEPRECATED, encoding="utf-8")
    return path


def test_a_symlink_is_written_through_and_stays_a_link(source: Path, tmp_path: Path) -> None:
    real = tmp_path / "reports" / "findings.json"
    real.parent.mkdir()
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "latest.json"
    link.symlink_to(os.path.join("reports", "findings.json"))
    code, out, err = check("--exit-zero", "--format", "json", "-o", str(link), str(source))
    assert (code, out) == (0, ""), err
    assert link.is_symlink() and os.readlink(link) == os.path.join("reports", "findings.json")
    assert [item["code"] for item in json.loads(real.read_text())["findings"]] == ["MS210"]


def test_a_dangling_symlink_makes_what_it_points_at(source: Path, tmp_path: Path) -> None:
    link = tmp_path / "latest.json"
    link.symlink_to("made.json")
    code, _, err = check("--exit-zero", "--format", "json", "-o", str(link), str(source))
    assert code == 0, err
    assert link.is_symlink() and json.loads((tmp_path / "made.json").read_text())["findings"]


def test_a_device_is_written_into_not_replaced(source: Path, tmp_path: Path) -> None:
    # A null device of the test's own (/dev/null itself was replaced by the old code as root).
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    before = device.lstat()
    code, out, err = check("--exit-zero", "-o", str(device), str(source))
    assert (code, out) == (0, ""), err
    after = device.lstat()
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_fifo_is_written_into_and_one_nobody_reads_is_refused(source: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "findings.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    # O_RDWR: the reader holds the FIFO open before the run writes, without waiting for a writer.
    reader = os.open(fifo, os.O_RDWR)

    def read_all() -> None:
        chunks = []
        while True:
            chunk = os.read(reader, 65536)
            chunks.append(chunk)
            if chunk.endswith(b"}\n") or not chunk:
                break
        received.append(b"".join(chunks))

    thread = threading.Thread(target=read_all)
    thread.start()
    code, _, err = check("--exit-zero", "--format", "json", "-o", str(fifo), str(source))
    thread.join(timeout=30)
    os.close(reader)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [item["code"] for item in json.loads(received[0])["findings"]] == ["MS210"]

    code, _, err = check("--exit-zero", "-o", str(fifo), str(source))
    assert code == 2 and "a FIFO that no process reads" in err, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_folder_is_refused(source: Path, tmp_path: Path) -> None:
    code, _, err = check("--exit-zero", "--write-baseline", str(tmp_path), str(source))
    assert code == 2, err
    assert tmp_path.is_dir()
