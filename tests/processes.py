"""Watching real processes through /proc (Linux): a command's worker processes, and what is left
of a process group."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def group_members(group: int) -> set[int]:
    """The live processes of process group ``group`` (a session leader's whole tree)."""
    found: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().split(")")[-1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found
