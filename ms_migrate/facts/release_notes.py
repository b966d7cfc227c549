"""What a release's own notes say that no runtime here can show yet (``rules/releases/notes.json``).

The facts of the releases are read from the releases themselves (``releases.py``): names, signatures
and probes, run on each runtime. A release the package index here does not have (MindSpore 2.11,
2026 Q3) cannot be run, so what its notes state as an incompatible change or a retirement is kept
beside the page that says so, each with the rule that acts on it. A target of that release reads
its names as the newest release checked (``versions.clamp``) and these notes on top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.facts.data import rules_path
from ms_migrate.facts.versions import Version


@dataclass(frozen=True)
class NotedChange:
    """One change a release's notes announce."""

    release: Version
    label: str  # "2.11.0"
    id: str
    kind: str  # "incompatible" (the same code fails or means otherwise) or "sunset" (retired)
    summary: str
    notes: str  # the release notes page
    source: str  # the change itself, where the notes link it; else the notes page
    rule: str  # the rule that reports it
    names: tuple[str, ...] = ()  # the public names it concerns, where it names them

    def cite(self) -> str:
        """`MindSpore 2.11.0's release notes: https://...`, for a message."""
        return f"MindSpore {self.label}'s release notes: {self.notes}"


@cache
def noted_changes() -> tuple[NotedChange, ...]:
    data = json.loads(rules_path("releases/notes.json").read_text(encoding="utf-8"))
    found: list[NotedChange] = []
    for line, release in data["releases"].items():
        for change in release["changes"]:
            found.append(
                NotedChange(
                    release=Version.parse(line),
                    label=release["label"],
                    id=change["id"],
                    kind=change["kind"],
                    summary=change["summary"],
                    notes=release["notes"],
                    source=change.get("source", release["notes"]),
                    rule=change["rule"],
                    names=tuple(change.get("names", ())),
                )
            )
    return tuple(found)


def noted_change(change_id: str) -> NotedChange:
    return next(change for change in noted_changes() if change.id == change_id)


def changes_reaching(target: Version, kind: Optional[str] = None) -> tuple[NotedChange, ...]:
    """The noted changes a run on ``target`` meets: those of its release line and the ones before."""
    return tuple(
        change
        for change in noted_changes()
        if change.release <= target and (kind is None or change.kind == kind)
    )


def releases_noted() -> dict[Version, tuple[NotedChange, ...]]:
    """Each release line the notes speak of, with its changes."""
    by_release: dict[Version, list[NotedChange]] = {}
    for change in noted_changes():
        by_release.setdefault(change.release, []).append(change)
    return {release: tuple(changes) for release, changes in sorted(by_release.items())}
