"""`verify --sandbox`: code under verification cannot write or delete files outside its scratch
directory, verification still works inside it, and a machine that cannot sandbox runs nothing.

Every module and script below tries to delete a file and create another outside its scratch
directory. The control runs without --sandbox show that the attempts are real.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from ms_migrate.verify import sandbox, sandbox_launcher
from ms_migrate.verify.model import EXIT_NO_SANDBOX

MS101 = Path(__file__).parent / "fixtures" / "ms101"


def _unavailable() -> str:
    try:
        sandbox.check(sys.executable)
    except sandbox.SandboxUnavailable as error:
        return str(error)
    return ""


UNAVAILABLE = _unavailable()
needs_sandbox = pytest.mark.skipif(
    bool(UNAVAILABLE), reason=f"this machine cannot run --sandbox: {UNAVAILABLE}"
)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def vandal(victim: Path, outside: Path, remount: bool = False) -> str:
    """Module-level code that deletes ``victim`` and creates ``outside`` where it can; with
    ``remount``, after trying to make every mount writable again (sandboxed runs only: outside a
    namespace, as root, that would change this machine's mounts)."""
    code = "import os\n"
    if remount:
        code += (
            "import ctypes\n"
            "_libc = ctypes.CDLL(None)\n"
            "for _line in open('/proc/self/mountinfo'):\n"
            "    _libc.mount(None, _line.split()[4].encode(), None, ctypes.c_ulong(32 | 4096), None)\n"
        )
    return code + (
        "try:\n"
        f"    os.remove({str(victim)!r})\n"
        "except OSError:\n"
        "    pass\n"
        "try:\n"
        f"    with open({str(outside)!r}, 'w') as handle:\n"
        "        handle.write('escaped')\n"
        "except OSError:\n"
        "    pass\n"
    )


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "precious" / "victim.txt"
    path.parent.mkdir()
    path.write_text("keep me", encoding="utf-8")
    return path


def write_pair(folder: Path, prefix: str) -> tuple[str, str]:
    before = folder / "before.py"
    after = folder / "after.py"
    legacy = (MS101 / "local_ms_name_not_shadowed.py").read_text(encoding="utf-8")
    modern = (MS101 / "local_ms_name_not_shadowed.expected.py").read_text(encoding="utf-8")
    before.write_text(prefix + legacy, encoding="utf-8")
    after.write_text(prefix + modern, encoding="utf-8")
    return str(before), str(after)


@needs_sandbox
@pytest.mark.mindspore
def test_sandboxed_module_cannot_delete_outside_its_scratch_and_still_verifies(
    tmp_path: Path, victim: Path
) -> None:
    outside = victim.parent / "created.txt"
    before, after = write_pair(tmp_path, vandal(victim, outside, remount=True))

    code, output = invoke("verify", "--sandbox", before, after)
    assert code == 0, output
    assert "2 site runs: 2 equal" in output
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not outside.exists()

    before, after = write_pair(tmp_path, vandal(victim, outside))
    code, output = invoke("verify", "--mode", "pynative", before, after)  # control: no sandbox
    assert code == 0, output
    assert not victim.exists() and outside.read_text(encoding="utf-8") == "escaped"


@needs_sandbox
def test_sandboxed_script_cannot_delete_outside_its_scratch(tmp_path: Path, victim: Path) -> None:
    outside = victim.parent / "created.txt"
    script = tmp_path / "script.py"
    script.write_text(vandal(victim, outside, remount=True) + "print('loss', 0.5)\n", encoding="utf-8")

    code, output = invoke("verify", "--script", "--sandbox", "--mode", "pynative", str(script), str(script))
    assert code == 0, output
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not outside.exists()

    script.write_text(vandal(victim, outside) + "print('loss', 0.5)\n", encoding="utf-8")
    code, output = invoke("verify", "--script", "--mode", "pynative", str(script), str(script))
    assert code == 0, output
    assert not victim.exists() and outside.exists()


def test_sandbox_that_cannot_be_set_up_runs_nothing_and_exits_3(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `unshare` on PATH: a real way for a machine to lack the mechanism, on any platform."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    outside = victim.parent / "created.txt"
    script = tmp_path / "script.py"
    script.write_text(vandal(victim, outside) + "print('loss', 0.5)\n", encoding="utf-8")
    before, after = write_pair(tmp_path, vandal(victim, outside))

    for args in (["--script", str(script), str(script)], [before, after]):
        code, output = invoke("verify", "--sandbox", *args)
        assert code == EXIT_NO_SANDBOX, output
        assert output.startswith("error: --sandbox needs") and output.rstrip().endswith("nothing was run")
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not outside.exists()


def test_upgrade_verify_with_sandbox_in_pyproject_stops_before_migrating(
    tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.ms-migrate.verify]\nsandbox = true\n", encoding="utf-8")
    legacy = (MS101 / "local_ms_name_not_shadowed.py").read_text(encoding="utf-8")
    (project / "train.py").write_text(legacy, encoding="utf-8")

    code, output = invoke("upgrade", "--verify", "--target-version", "2.8", str(project))
    assert code == EXIT_NO_SANDBOX, output
    assert "[tool.ms-migrate.verify] sandbox = true); nothing was run" in output
    assert (project / "train.py").read_text(encoding="utf-8") == legacy


def test_mount_points_are_read_with_their_escapes() -> None:
    mountinfo = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "40 27 0:38 / /mnt/with\\040space rw,nosuid - tmpfs tmpfs rw\n"
        "41 27 0:39 / /mnt/back\\134slash rw - tmpfs tmpfs rw\n"
    )
    assert sandbox_launcher.mount_points(mountinfo) == ["/", "/mnt/with space", "/mnt/back\\slash"]


LEAVES_PROCESSES = (
    "import subprocess\n"
    "subprocess.Popen(['sh', '-c', 'sleep 60; touch {marker}_group'])\n"
    "subprocess.Popen(['setsid', 'sh', '-c', 'sleep 60; touch {marker}_session'])\n"
)
SANDBOXED = [False, pytest.param(True, marks=needs_sandbox)]


def _running(marker: Path) -> list[str]:
    """The live processes whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(marker) in command:
            found.append(f"{entry.name}: {command}")
    return found


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("sandboxed", SANDBOXED, ids=["plain", "sandbox"])
@pytest.mark.parametrize("script", [False, True], ids=["module", "script"])
def test_no_process_the_verified_code_starts_outlives_verify(
    tmp_path: Path, sandboxed: bool, script: bool
) -> None:
    """A background process in the worker's group, and one that left it with setsid: both end
    with the run (the group with its worker; the other found as this process's orphan, or with
    the sandbox's PID namespace), and a plain run names what it ended."""
    import shutil

    marker = tmp_path / "survived"
    code = LEAVES_PROCESSES.format(marker=marker)
    if script:
        for name in ("before.py", "after.py"):
            (tmp_path / name).write_text(code + "print(1.0)\n")
    else:
        shutil.copy(MS101.parent / "_harness.py", tmp_path / "_harness.py")
        (tmp_path / "before.py").write_text(code + (MS101 / "cell_get_by_list.py").read_text())
        (tmp_path / "after.py").write_text(code + (MS101 / "cell_get_by_list.expected.py").read_text())
    args = ["verify", *(["--script"] if script else []), *(["--sandbox"] if sandboxed else [])]
    code_, output = invoke(*args, str(tmp_path / "before.py"), str(tmp_path / "after.py"))
    assert code_ == 0, output
    assert _running(marker) == [], output
    if not sandboxed:
        assert "left processes running, ended by verify" in output and "sleep 60; touch" in output
