"""What `check` would run a file under: its project's configuration, target version and baseline.

Read from disk as `check PATH` reads them (``load_config``, the pins through ``resolve_target``,
``Baseline.loads``), never from the buffer. A folder's settings are kept until one of the files
they were read from changes: every request compares the files' signatures (a few ``stat`` calls),
so an edit to ``pyproject.toml``, a pin or the baseline takes effect on the next analysis even
where the editor sends no ``workspace/didChangeWatchedFiles``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ms_migrate.application.config import NO_CONFIG, Config, ConfigError, load_config
from ms_migrate.application.target import TargetError, resolve_target
from ms_migrate.facts.versions import Version, default_target
from ms_migrate.files import sources
from ms_migrate.files.project_root import project_folders
from ms_migrate.reporting.baseline import Baseline, BaselineError
from ms_migrate.reporting.report import Stream

# The files of a folder that the configuration and the pins are read from (files.pins._pins).
_PROJECT_FILES = ("pyproject.toml", "setup.cfg")
_PIN_GLOBS = ("requirements*.txt", "requirements/*.txt")

Signature = tuple[tuple[str, int, int], ...]  # (path, mtime_ns, size) of each file read


@dataclass(frozen=True)
class Settings:
    """A file's configuration, target and baseline; ``problem`` is a configuration error (what
    `check` stops on with exit 2): the server reports it on the file and runs no rule."""

    config: Config
    target: Version
    baseline: Optional[Baseline] = None
    problem: Optional[str] = None


def _signature(path: Path, baseline: Optional[Path]) -> Signature:
    found: list[tuple[str, int, int]] = []
    candidates: list[Path] = []
    for folder in project_folders(path):
        candidates += [folder / name for name in _PROJECT_FILES]
        for pattern in _PIN_GLOBS:
            candidates += sorted(folder.glob(pattern))
    if baseline is not None:
        candidates.append(baseline)
    for candidate in candidates:
        try:
            info = os.stat(candidate)
        except OSError:
            continue
        found.append((str(candidate), info.st_mtime_ns, info.st_size))
    return tuple(found)


def read_settings(path: Path) -> Settings:
    """The settings `check --stdin-filename PATH -` runs under (the target as it resolves it)."""
    try:
        config = load_config(path)
    except ConfigError as error:
        return Settings(NO_CONFIG, default_target(), problem=str(error))
    try:
        quiet = Stream(stderr=True, quiet=True)
        resolved = resolve_target(
            config.target_version, (path,), quiet, reads_only=True, from_version=config.written_for
        )
    except TargetError as error:
        return Settings(config, default_target(), problem=str(error))
    target, _, written_for = resolved
    config = dataclasses.replace(config, written_for=written_for)
    if config.baseline is None:
        return Settings(config, target)
    try:
        raw, _ = sources.read_guarded(config.baseline, follow_links=True)
        baseline = Baseline.loads(raw.decode("utf-8"), config.baseline.parent, str(config.baseline))
    except sources.SourceError as error:
        return Settings(config, target, problem=f"baseline {error}")
    except (UnicodeDecodeError, BaselineError) as error:
        return Settings(config, target, problem=str(error))
    return Settings(config, target, baseline)


class SettingsCache:
    """Settings by folder, read again once a file they came from changes (or ``forget``)."""

    def __init__(self) -> None:
        self._by_folder: dict[Path, tuple[Signature, Settings]] = {}

    def settings_for(self, path: Path) -> Settings:
        folder = path.parent
        kept = self._by_folder.get(folder)
        if kept is not None and kept[0] == _signature(path, kept[1].config.baseline):
            return kept[1]
        settings = read_settings(path)
        self._by_folder[folder] = (_signature(path, settings.config.baseline), settings)
        return settings

    def forget(self) -> None:
        self._by_folder.clear()
