"""``RunSettings``: everything besides a file's bytes that decides its result.

Resolved once per run from the options, the configuration and the project's pins. The cache key
is derived from every field (``key``), never assembled by hand: a field added here reaches the key
with nothing else to change, and one that does not decide a result has no place here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Optional

from ms_migrate.application.config import Config
from ms_migrate.facts.versions import Version


@dataclass(frozen=True)
class RunSettings:
    target: Version
    kinds: tuple[str, ...]  # "upgrade", "downgrade", "lint": which rules run
    fix: bool  # False when the run reports and never applies (`check`)
    written_for: Optional[Version]  # the release the code was written for, where known
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]  # pattern -> codes, sorted
    root: Optional[Path]  # where per-file ignore patterns are relative to

    @classmethod
    def of(cls, target: Version, kinds: Sequence[str], config: Config, fix: bool = True) -> RunSettings:
        return cls(
            target=target,
            kinds=tuple(kinds),
            fix=fix,
            written_for=config.written_for,
            select=config.select,
            ignore=config.ignore,
            per_file_ignores=tuple(sorted(config.per_file_ignores.items())),
            root=config.root,
        )

    def key(self) -> tuple[str, ...]:
        """Each field as `name=value`, in declaration order: what the cache key is made of."""
        return tuple(f"{field.name}={getattr(self, field.name)!r}" for field in fields(self))
