"""Inside the sandbox's namespaces (see ``sandbox``): lock the filesystem, then run the command.

    unshare --user --map-root-user --mount \\
        python -m ms_migrate.verify.sandbox_launcher WRITABLE (--probe | -- COMMAND...)

In order: mounts stop propagating; WRITABLE is bind-mounted onto itself; every other mount is
remounted read-only; the process enters its working directory again (the old one still points at
the mount underneath); it gives up the privileges the namespace gave it; it execs COMMAND.

Giving them up matters: as root of the namespace that owns these mounts, the code could simply
remount them writable. With ``SECBIT_NOROOT`` (locked) its uid 0 grants no capabilities at exec, and
``no_new_privs`` makes setuid programs such as mount(8) useless. A new user namespace it might
create gets a copy of the mounts in which the kernel locks the read-only flag.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

# <sys/mount.h>
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
# <linux/prctl.h>, <linux/securebits.h>
PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 28, 38
SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 1 << 0, 1 << 1

# statvfs() flag -> mount() flag. In a user namespace a remount must repeat the flags the mount
# already has (nosuid, nodev, noexec, the atime mode): the kernel locks them and refuses to drop one.
_KEPT_FLAGS = (
    ("ST_NOSUID", MS_NOSUID),
    ("ST_NODEV", MS_NODEV),
    ("ST_NOEXEC", MS_NOEXEC),
    ("ST_NODIRATIME", MS_NODIRATIME),
)
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


class SandboxSetupError(Exception):
    """A step of the setup failed; the command must not run."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), what)


def _mount(source: Optional[str], target: str, flags: int) -> None:
    encoded = os.fsencode(source) if source is not None else None
    _check(_libc().mount(encoded, os.fsencode(target), None, ctypes.c_ulong(flags), None), target)


def mount_points(mountinfo: str) -> list[str]:
    """The mount points in /proc/self/mountinfo, in its order (parents before children)."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(_OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), fields[4]))
    return points


def _remount_read_only(point: str) -> None:
    try:
        status = os.statvfs(point)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.EACCES, errno.ENOTDIR):
            return  # hidden under another mount, or unreachable: not writable from here either
        raise
    if status.f_flag & os.ST_RDONLY:
        return
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for name, mount_flag in _KEPT_FLAGS:
        if status.f_flag & getattr(os, name, 0):
            flags |= mount_flag
    if status.f_flag & getattr(os, "ST_NOATIME", 0):
        flags |= MS_NOATIME
    elif status.f_flag & getattr(os, "ST_RELATIME", 0):
        flags |= MS_RELATIME
    else:
        flags |= MS_STRICTATIME
    _mount(None, point, flags)


def enter(writable: Path) -> None:
    """Everything read-only but ``writable``, and no privilege left to change that."""
    writable = writable.resolve()
    try:
        _mount(None, "/", MS_REC | MS_PRIVATE)
        _mount(str(writable), str(writable), MS_BIND | MS_REC)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            points = mount_points(handle.read())
        for point in points:
            if point != str(writable) and not point.startswith(str(writable) + os.sep):
                _remount_read_only(point)
        os.chdir(os.getcwd())  # the same path, now resolved through the new mounts
        libc = _libc()
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED
        _check(libc.prctl(PR_SET_SECUREBITS, bits, 0, 0, 0), "prctl(PR_SET_SECUREBITS)")
    except OSError as error:
        raise SandboxSetupError(f"sandbox: {error.filename}: {error.strerror}") from error
    os.environ["TMPDIR"] = str(writable)


def probe(writable: Path) -> Optional[str]:
    """After ``enter``: None if ``writable`` takes a file, its parent does not, and the parent's
    mount cannot be made writable again; else what went wrong."""
    try:
        (writable / "probe").write_text("ok", encoding="utf-8")
    except OSError as error:
        return f"the scratch directory cannot be written inside the sandbox: {error}"
    try:
        _mount(None, str(writable.parent), MS_REMOUNT | MS_BIND)
        return "the code could make the filesystem writable again"
    except OSError:
        pass
    try:
        (writable.parent / "outside").write_text("escaped", encoding="utf-8")
    except OSError as error:
        return (
            None if error.errno == errno.EROFS else f"unexpected error outside the scratch directory: {error}"
        )
    return "a file outside the scratch directory could be written"


def main(argv: Optional[Sequence[str]] = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        sys.exit("usage: python -m ms_migrate.verify.sandbox_launcher WRITABLE (--probe | -- COMMAND...)")
    writable, rest = Path(arguments[0]), arguments[1:]
    if rest == ["--probed"]:  # exec'd by --probe below: inside the sandbox, as the code would be
        problem = probe(writable.resolve())
        sys.exit(f"sandbox: {problem}" if problem else 0)
    try:
        enter(writable)
    except SandboxSetupError as error:
        sys.exit(str(error))
    if rest == ["--probe"]:
        # Privileges are given up at exec: only a fresh program shows what the code could do.
        os.execv(
            sys.executable,
            [sys.executable, "-m", "ms_migrate.verify.sandbox_launcher", str(writable), "--probed"],
        )
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        sys.exit("sandbox: no command to run")
    os.execvp(rest[0], rest)


if __name__ == "__main__":
    main()
