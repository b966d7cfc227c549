"""Processes the code under verification leaves running: found, ended and named.

A worker runs in a process group of its own, which ends with it. A process that left the group
(setsid, a double fork) is found another way: on Linux this process becomes the reaper of its
orphaned descendants (PR_SET_CHILD_SUBREAPER), so such a process is still its child, and after a
run every child that appeared during it and is no worker is ended and named. Under `--sandbox`
the worker is process 1 of a PID namespace, whose end takes everything in it.

A run that is killed (SIGKILL: no handler runs) cannot clean up after itself: its workers end
with it (they ask the kernel for SIGKILL when their parent dies), and its scratch directory, which
holds copies of the user's BEFORE and AFTER, carries its process id in its name, so the next
verify of this user removes it once that process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Optional

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_SCRATCH = re.compile(r"^ms-migrate-(?:verify|script)-(?P<pid>\d+)-")
# What the sweeps ended since the last ``take_ended``: "PID (command line)".
_ENDED: list[str] = []


def take_ended() -> list[str]:
    """The processes the sweeps ended (and forgets them)."""
    ended, _ENDED[:] = list(_ENDED), []
    return ended


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (Linux; nothing elsewhere)."""
    if not os.path.isdir("/proc/self"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def children() -> dict[int, str]:
    """This process's children, by /proc (Linux; empty elsewhere): pid -> command line, "" for
    one that has ended and waits to be reaped (a zombie)."""
    found: dict[int, str] = {}
    me = os.getpid()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) != me:  # the field after the state is the parent's pid
                    continue
                if fields[0] == b"Z":
                    found[int(entry.name)] = ""
                    continue
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    command = cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except (OSError, IndexError, ValueError):
                continue
            found[int(entry.name)] = command or "?"
    return found


def end_group(leader: int) -> None:
    """SIGKILL to the process group ``leader`` led (nothing if none of it is left)."""
    with contextlib.suppress(OSError):
        os.killpg(leader, signal.SIGKILL)


def end_new(before: dict[int, str]) -> None:
    """End the children that are not in ``before``: with every worker of a run ended, what the
    code under verification left running. Each is reaped and named in ``take_ended``."""
    for pid, command in children().items():
        if pid in before:
            continue
        if not command:  # ended already (its group went with its worker): only to be reaped
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)
            continue
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
        _ENDED.append(f"{pid} ({command[:80]})")


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent ends (Linux; nothing elsewhere): a
    worker must not outlive a verify that was killed outright."""
    if not os.path.isdir("/proc/self"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def scratch_prefix(kind: str) -> str:
    """The name a scratch directory of this process starts with: its process id in it, for
    ``remove_stale_scratch``."""
    return f"ms-migrate-{kind}-{os.getpid()}-"


def remove_stale_scratch(folder: Optional[Path] = None) -> list[Path]:
    """Remove the scratch directories that runs of this user left when they were killed: named
    by ``scratch_prefix``, owned by this user, their process gone, in ``folder`` (the temporary
    directory by default). Returns what was removed."""
    folder = folder if folder is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            match = _SCRATCH.match(entry.name)
            if match is None or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                if entry.stat(follow_symlinks=False).st_uid != os.getuid() or _alive(int(match["pid"])):
                    continue
            except OSError:
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: alive
    return True
