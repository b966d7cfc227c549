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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ms_migrate.files.project_root import project_folders
from ms_migrate.files.sources import SourceError, read_guarded
from ms_migrate.verify.devices import DeviceSpecError, parse_spec, visible_ids
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
    except RecursionError:  # `a = [[[[...]]]]`: tomllib recurses once per level
        raise ConfigError("nested too deeply to read") from None
    for key in TABLE:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data if isinstance(data, dict) else None


def _whole(low: int) -> Callable[[Any], bool]:
    # bool is an int to Python, but `steps = true` is a mistake, not 1.
    return lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= low


def _number(low: float) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low


def _folders(value: Any) -> bool:
    listed = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, str) or listed


def _device_spec(value: Any) -> bool:
    try:
        parse_spec(str(value))
    except DeviceSpecError:
        return False
    return True


# Every key the table may hold: what it accepts, and how to say so. The bounds are the options'.
SCHEMA: dict[str, tuple[Callable[[Any], bool], str]] = {
    "factory": (lambda value: isinstance(value, str) and ":" in value, 'a "module:function" string'),
    "python-path": (_folders, "a folder or a list of folders"),
    "device": (_device_spec, "CPU, GPU or Ascend, with ids as GPU:0,1 or GPU:0-3"),
    "mode": (lambda value: str(value).lower() in (*MODES, "both"), "pynative, graph or both"),
    "steps": (_whole(1), "a whole number, at least 1"),
    "rtol": (_number(0), "a number, at least 0"),
    "atol": (_number(0), "a number, at least 0"),
    "timeout": (_number(1), "seconds, at least 1"),
    "import-timeout": (_number(1), "seconds, at least 1"),
    "memory-limit": (_whole(0), "megabytes, a whole number (0: no limit)"),
    "workers": (_whole(1), "a whole number, at least 1"),
    "sandbox": (lambda value: isinstance(value, bool), "true or false"),
}


def check_table(table: dict[str, Any], where: str) -> None:
    """Raise ConfigError naming the first unknown key or value of the wrong kind: a mistake in
    the table must not surface later as an error blamed on the user's code."""
    for key, value in table.items():
        if key not in SCHEMA:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(SCHEMA)})")
        accepts, expected = SCHEMA[key]
        if not accepts(value):
            raise ConfigError(f"{where}: {key} must be {expected}, not {value!r}")


def find_config(start: Path) -> Optional[ProjectConfig]:
    """The nearest pyproject.toml at or above ``start``, up to the repository root, that has a
    verify table: one above the repository must not name a factory that `--verify` imports."""
    for folder in project_folders(start):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            table = parse_table(read_guarded(candidate, follow_links=True)[0].decode("utf-8"))
        except (SourceError, UnicodeDecodeError, ConfigError) as error:
            raise ConfigError(f"{candidate}: {getattr(error, 'message', error)}") from error
        if table is not None:
            check_table(table, f"{candidate} [tool.ms-migrate.verify]")
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
    if "device" in changes:  # the table may say "cpu" or "gpu:0,1"; MindSpore wants "GPU" and ids
        device, device_ids = parse_spec(str(changes["device"]))
        changes["device"], changes["device_ids"] = device, device_ids or visible_ids(device)
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
