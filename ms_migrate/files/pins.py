"""A project's MindSpore pins: where its requirements files, pyproject.toml and setup.cfg name
MindSpore, and the target version they decide (``detect_target``)."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ms_migrate.facts.versions import MINDSPORE_PACKAGES, Version, load_toml, lowest_allowed
from ms_migrate.files.project_root import project_folders
from ms_migrate.files.sources import SourceError, read_guarded

if TYPE_CHECKING:
    from packaging.requirements import Requirement


def _canonical_name(name: str) -> str:
    """A distribution name as PEP 503 compares them: `MindSpore_GPU` is `mindspore-gpu`."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    """One place a project names MindSpore."""

    file: str  # "requirements.txt"
    package: str  # as written: "mindspore-gpu"
    specifier: str  # PEP 440, ">=2.2,<3"; "" where no version is given
    text: str  # the line as written

    @property
    def origin(self) -> str:
        return f"{self.file}: {self.text}"


@dataclass(frozen=True)
class DetectedTarget:
    version: Optional[Version]  # None: no lower bound (an upper bound alone, or no version at all)
    pin: Pin  # the pin that decided

    @property
    def source(self) -> str:
        """Where the version came from, for the user."""
        return self.pin.origin

    @property
    def unpinned(self) -> bool:
        """MindSpore is named with no version at all (`mindspore`, Poetry's `"*"`): pip takes the
        newest, so the default target stands, unlike a pin with only an upper bound."""
        return not self.pin.specifier


def _requirement(line: str) -> Optional[Requirement]:
    line = line.split(" #", 1)[0].strip()
    if not line or line.startswith(("#", "-")) or "mindspore" not in line.lower():
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    return requirement if _canonical_name(requirement.name) in MINDSPORE_PACKAGES else None


def _requirements_file(path: Path, seen: set[Path]) -> list[Pin]:
    """Each MindSpore line of a requirements file, `-r` includes followed."""
    path = path.resolve()
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    found: list[Pin] = []
    try:
        lines = read_guarded(path, follow_links=True)[0].decode("utf-8", "replace").splitlines()
    except SourceError:
        return []
    for raw in lines:
        line = raw.strip()
        include = re.match(r"^(?:-r|--requirement)(?:\s+|=)(?P<file>\S+)", line)
        if include:
            found += _requirements_file(path.parent / include.group("file"), seen)
            continue
        requirement = _requirement(line)
        if requirement is not None:
            found.append(_pin(path, requirement, line))
    return found


def _pin(path: Path, requirement: Requirement, line: str) -> Pin:
    return Pin(str(path), requirement.name, str(requirement.specifier), line)


def _shown(file: str, folder: Path) -> str:
    """Where a pin is, as the user can find it: relative to the folder whose pins were read
    (`requirements/cpu_requirements.txt`, not `cpu_requirements.txt`), else the whole path."""
    absolute = Path(os.path.abspath(file))
    try:
        return absolute.relative_to(Path(os.path.abspath(folder))).as_posix()
    except ValueError:
        return str(absolute)


def _poetry_specifier(value: object) -> Optional[str]:
    """Poetry's `^2.3`, `~2.3`, `2.3.*`, `>=2.2,<3` or `{version = ...}` as a PEP 440 specifier;
    its `*` (any version) as ""."""
    if isinstance(value, dict):
        value = value.get("version")
    if not isinstance(value, str):
        return None
    value = value.strip()
    if value == "*":
        return ""
    caret = re.fullmatch(r"\^(\d+)(?:\.(\d+))?(?:\.(\d+))?", value)
    if caret:
        major, minor = int(caret.group(1)), int(caret.group(2) or 0)
        upper = f"{major + 1}" if major else f"0.{minor + 1}"
        return f">={value[1:]},<{upper}"
    tilde = re.fullmatch(r"~(\d+)\.(\d+)(?:\.\d+)?", value)
    if tilde:
        return f">={value[1:]},<{tilde.group(1)}.{int(tilde.group(2)) + 1}"
    if re.fullmatch(r"\d+(\.\d+)*(\.\*)?", value):
        return f"=={value}"
    return value


def _pyproject(path: Path) -> list[Pin]:
    try:
        data = load_toml(read_guarded(path, follow_links=True)[0].decode("utf-8"))
    except (SourceError, ValueError):
        return []
    found: list[Pin] = []
    project = data.get("project", {})
    groups = [project.get("dependencies", []), *project.get("optional-dependencies", {}).values()]
    for group in groups:
        for line in group if isinstance(group, list) else []:
            requirement = _requirement(line) if isinstance(line, str) else None
            if requirement is not None:
                found.append(_pin(path, requirement, line))
    poetry = data.get("tool", {}).get("poetry", {})
    groups_ = poetry.get("group", {}).values()
    tables = [poetry.get("dependencies", {}), *(group.get("dependencies", {}) for group in groups_)]
    for table in tables:
        for name, value in table.items():
            if _canonical_name(name) in MINDSPORE_PACKAGES:
                specifier = _poetry_specifier(value)
                if specifier is not None:
                    found.append(Pin(str(path), name, specifier, f"{name} = {value!r}"))
    return found


def _setup_cfg(path: Path) -> list[Pin]:
    import configparser  # only a project with a setup.cfg asks it

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_guarded(path, follow_links=True)[0].decode("utf-8"), str(path))
    except (configparser.Error, SourceError, ValueError):
        return []
    found: list[Pin] = []
    values = [parser.get("options", "install_requires", fallback="")]
    if parser.has_section("options.extras_require"):
        values += [value for _, value in parser.items("options.extras_require")]
    for value in values:
        for line in value.splitlines():
            requirement = _requirement(line)
            if requirement is not None:
                found.append(_pin(path, requirement, line.strip()))
    return found


def _pins(folder: Path) -> list[Pin]:
    found: list[Pin] = []
    if (folder / "pyproject.toml").is_file():
        found += _pyproject(folder / "pyproject.toml")
    if (folder / "setup.cfg").is_file():
        found += _setup_cfg(folder / "setup.cfg")
    seen: set[Path] = set()
    for path in [*sorted(folder.glob("requirements*.txt")), *sorted(folder.glob("requirements/*.txt"))]:
        found += _requirements_file(path, seen)
    return [dataclasses.replace(pin, file=_shown(pin.file, folder)) for pin in found]


def detect_target(start: Path) -> Optional[DetectedTarget]:
    """The lowest MindSpore version the project at or above ``start`` allows.

    Reads PEP 621 dependencies and optional-dependencies, Poetry dependencies, setup.cfg and
    requirements files (`requirements*.txt`, `requirements/*.txt`, `-r` includes), for MindSpore
    and its device builds, whatever their environment markers. The nearest folder that names
    MindSpore decides; the search stops at the repository root. Of its pins, the lowest lower bound
    wins; without one, a pin with only an upper bound (the tool cannot choose) wins over a bare name.
    """
    for folder in project_folders(start):
        pins = _pins(folder)
        if pins:
            return _decide(pins)
    return None


def _decide(pins: list[Pin]) -> DetectedTarget:
    bounded = [(version, pin) for pin in pins if (version := lowest_allowed(pin.specifier)) is not None]
    if bounded:
        version, pin = min(bounded, key=lambda item: item[0])
        return DetectedTarget(version, pin)
    versioned = [pin for pin in pins if pin.specifier]
    return DetectedTarget(None, (versioned or pins)[0])
