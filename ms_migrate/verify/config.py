"""The project's ``[tool.ms-migrate.verify]`` table in ``pyproject.toml``.

    [tool.ms-migrate.verify]
    factory = "verify_harness:build"   # module:function, imported from the project root
    python-path = ["src"]              # extra import roots, relative to pyproject.toml
    device = "CPU"                     # defaults for the command-line options of the same names
    mode = "both"
    steps = 3
    rtol = 1e-5
    atol = 1e-6
    timeout = 300                      # seconds per site and mode
    import-timeout = 60                # seconds per import of a user module
    memory-limit = 16384
    workers = 2
    sandbox = true                     # see sandbox.py

The factory is called with the class or function under test (once per version) and returns
``(callable, inputs)``: typically ``(cls(network, optimizer), (data, label))``. It returns None for
sites it leaves to the automatic harness.

``tomllib`` reads the file where Python has it (3.11+); before that a small reader handles the
flat ``key = value`` lines this table needs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ms_migrate.verify.model import MODES, VerifyOptions

TABLE = ("tool", "ms-migrate", "verify")
_HEADER = re.compile(
    r"^\s*\[\s*tool\s*\.\s*(?:\"ms-migrate\"|'ms-migrate'|ms-migrate)\s*\.\s*verify\s*\]\s*(#.*)?$"
)


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class ProjectConfig:
    root: Path
    factory: Optional[str] = None
    python_path: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def search_path(self) -> list[str]:
        return [str((self.root / entry).resolve()) for entry in self.python_path] + [str(self.root)]


def _fallback_table(text: str) -> Optional[dict[str, Any]]:
    """Just the verify table, for Python < 3.11: strings, numbers, booleans, lists of those."""
    table: Optional[dict[str, Any]] = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            if table is not None:
                break
            if _HEADER.match(line):
                table = {}
            continue
        if table is None or not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = re.sub(r"\s+#[^\"']*$", "", value.strip())
        value = {"true": "True", "false": "False"}.get(value, value)
        try:
            table[key.strip().strip("\"'")] = ast.literal_eval(value)
        except (ValueError, SyntaxError) as error:
            raise ConfigError(f"cannot read {key.strip()!r}: {value}") from error
    return table


def parse_table(text: str) -> Optional[dict[str, Any]]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:
        return _fallback_table(text)
    try:
        data: Any = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(str(error)) from error
    for key in TABLE:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data if isinstance(data, dict) else None


def find_config(start: Path) -> Optional[ProjectConfig]:
    """The nearest pyproject.toml at or above ``start`` that has a verify table."""
    directory = start.resolve()
    if directory.is_file():
        directory = directory.parent
    for folder in (directory, *directory.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            table = parse_table(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ConfigError) as error:
            raise ConfigError(f"{candidate}: {error}") from error
        if table is not None:
            path = table.get("python-path", [])
            return ProjectConfig(
                root=folder,
                factory=table.get("factory"),
                python_path=tuple([path] if isinstance(path, str) else path),
                settings=table,
            )
    return None


_OPTION_KEYS = {
    "device": "device",
    "steps": "steps",
    "rtol": "rtol",
    "atol": "atol",
    "timeout": "timeout_s",
    "import-timeout": "import_timeout_s",
    "memory-limit": "memory_limit_mb",
    "workers": "workers",
    "sandbox": "sandbox",
}
# The keys that give defaults to the command-line options of the same names.
OPTION_SETTINGS = (*_OPTION_KEYS, "mode")


def apply_settings(
    options: VerifyOptions, config: Optional[ProjectConfig], explicit: set[str]
) -> VerifyOptions:
    """Project defaults for the options the user did not give on the command line."""
    if config is None:
        return options
    changes: dict[str, Any] = {}
    for key, field_name in _OPTION_KEYS.items():
        if key in config.settings and key not in explicit:
            changes[field_name] = config.settings[key]
    if "mode" in config.settings and "mode" not in explicit:
        changes["modes"] = modes_for(str(config.settings["mode"]))
    return options.but(**changes)


def modes_for(choice: str) -> tuple[str, ...]:
    choice = choice.lower()
    if choice == "both":
        return MODES
    if choice not in MODES:
        raise ConfigError(f"mode must be pynative, graph or both, not {choice!r}")
    return (choice,)
