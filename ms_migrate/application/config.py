"""The project's ``[tool.ms-migrate]`` table in ``pyproject.toml``, and rule selection.

    [tool.ms-migrate]
    target-version = "2.3"                 # else: the lowest MindSpore the project allows
    select = ["MS1", "MS201"]              # code prefixes; default: every rule
    ignore = ["MSR006"]                    # rules, reason codes or notes not to report
    exclude = ["third_party/", "*_pb2.py"]
    per-file-ignores = { "tests/*" = ["MS201"] }
    baseline = "ms-migrate-baseline.json"  # check reports only findings not in it (reporting.baseline)

    [tool.ms-migrate.verify]               # read by ms_migrate.verify.config, unchanged
    factory = "verify_harness:build"

    [tool.ms-migrate.runtimes]             # interpreters with MindSpore X.Y (ms_migrate.runtimes)
    "1.7" = "/opt/ms17/bin/python"

Command-line flags win: ``--target-version``, ``--select`` and ``--ignore`` replace the table's
values, ``--exclude`` adds to them. An unknown key or a value of the wrong kind is an error that
names the key.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ms_migrate.facts.versions import Version, load_toml, parse_target
from ms_migrate.files.project_root import project_folders
from ms_migrate.files.sources import SourceError, read_guarded

KEYS = (
    "target-version",
    "from-version",
    "select",
    "ignore",
    "exclude",
    "per-file-ignores",
    "baseline",
    "verify",
    "runtimes",
)


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Config:
    root: Optional[Path] = None  # the folder of the pyproject.toml; None without one
    source: str = ""
    target_version: Optional[Version] = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # [tool.ms-migrate.runtimes]: MindSpore version -> interpreter (checked by ms_migrate.runtimes)
    runtimes: dict[str, str] = field(default_factory=dict)
    baseline: Optional[Path] = None  # the baseline file `check` reads, relative to ``root`` resolved
    # `from-version`, or the project's pin when the target is above it: the release the code was
    # written for, from which the rules for a change of meaning (MS222, MS223) measure.
    written_for: Optional[Version] = None

    def enabled(self, code: str, path: Optional[Path] = None) -> bool:
        """Whether ``code`` is reported (and, for a rule, applied) in ``path``."""
        code = code.upper()
        if self.select and not any(code.startswith(prefix) for prefix in self.select):
            # A reason or note is its rule's: selecting the rule keeps them (MS102's MSR030),
            # and the engine's own (MSR099, a discarded rewrite) is always said.
            from ms_migrate.core.codes import ENGINE, owner

            owned_by = owner(code)
            if owned_by is None or owned_by == code:
                return False
            if owned_by != ENGINE and not self.enabled(owned_by, path):
                return False
        if any(code.startswith(prefix) for prefix in self.ignore):
            return False
        return not (path is not None and any(code.startswith(prefix) for prefix in self._file_ignores(path)))

    def _file_ignores(self, path: Path) -> Iterable[str]:
        if not self.per_file_ignores:
            return ()
        try:
            relative = path.resolve().relative_to(self.root).as_posix() if self.root else path.as_posix()
        except ValueError:
            relative = path.as_posix()
        codes: list[str] = []
        for pattern, ignored in self.per_file_ignores.items():
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
                codes += ignored
        return codes

    def with_flags(
        self, select: Iterable[str] = (), ignore: Iterable[str] = (), exclude: Iterable[str] = ()
    ) -> Config:
        """Command-line flags over the table: select and ignore replace, exclude adds."""
        select, ignore = _selectors(select, "--select"), _selectors(ignore, "--ignore")
        select, ignore, exclude = select or self.select, ignore or self.ignore, (*self.exclude, *exclude)
        return dataclasses.replace(self, select=select, ignore=ignore, exclude=exclude)


NO_CONFIG = Config()


def _selectors(values: Iterable[str], where: str) -> tuple[str, ...]:
    """Codes, code prefixes and rule names (comma-separated too) as code prefixes, each checked
    against the registry: ruff, too, stops on a code it does not know."""
    from ms_migrate.core.codes import resolved_selectors

    given = [code.strip() for value in values for code in value.split(",") if code.strip()]
    try:
        return resolved_selectors(given, where)
    except ValueError as error:
        raise ConfigError(str(error)) from None


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, not {value!r}")
    return tuple(value)


def _version(table: dict[str, Any], key: str, where: str) -> Optional[Version]:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str):
        # TOML reads an unquoted 2.10 as the number 2.1: a silent wrong version.
        raise ConfigError(f'{where}: {key} must be a quoted string such as "2.10", not {value!r}')
    try:
        return parse_target(str(value))
    except ValueError as error:
        raise ConfigError(f"{where}: {key}: {error}") from error


def parse_config(table: dict[str, Any], root: Optional[Path], where: str) -> Config:
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    target = _version(table, "target-version", where)
    written_for = _version(table, "from-version", where)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}: per-file-ignores must be a table of glob = [codes], not {per_file!r}")
    per_file_ignores = {}
    for pattern, codes in per_file.items():
        if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
            raise ConfigError(f"{where}: per-file-ignores {pattern!r} must be a list of codes, not {codes!r}")
        per_file_ignores[pattern] = _selectors(codes, f"{where}: per-file-ignores {pattern!r}")
    if "verify" in table and not isinstance(table["verify"], dict):
        raise ConfigError(f"{where}: verify must be a table")
    runtimes = table.get("runtimes", {})
    if not isinstance(runtimes, dict) or not all(isinstance(value, str) for value in runtimes.values()):
        message = 'runtimes must be a table of "X.Y" = "/path/to/python"'
        raise ConfigError(f"{where}: {message}, not {runtimes!r}")
    baseline = table.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline):
        raise ConfigError(f"{where}: baseline must be a file name (a string), not {baseline!r}")
    return Config(
        root=root,
        source=where,
        baseline=None if baseline is None else (root or Path.cwd()) / baseline,
        target_version=target,
        written_for=written_for,
        select=_selectors(_strings(table, "select", where), f"{where}: select"),
        ignore=_selectors(_strings(table, "ignore", where), f"{where}: ignore"),
        exclude=_strings(table, "exclude", where),
        per_file_ignores=per_file_ignores,
        runtimes=dict(runtimes),
    )


def load_config(start: Path) -> Config:
    """The nearest ``[tool.ms-migrate]`` table at or above ``start`` (stopping at the repository
    root); an empty Config when there is none."""
    for folder in project_folders(start):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = load_toml(read_guarded(candidate, follow_links=True)[0].decode("utf-8"))
            except (SourceError, UnicodeDecodeError, ValueError) as error:
                raise ConfigError(f"{candidate}: {getattr(error, 'message', error)}") from error
            table = data.get("tool", {}).get("ms-migrate")
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{candidate}: [tool.ms-migrate] must be a table")
                return parse_config(table, folder, f"{candidate} [tool.ms-migrate]")
    return Config()
