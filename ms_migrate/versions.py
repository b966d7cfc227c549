"""MindSpore versions: parsing, the spelling table in ``rules/``, and detecting a project's pin."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional

from ms_migrate.data import rules_path


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Version:
        match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)*\w*\s*", text)
        if not match:
            raise ValueError(f"not a MindSpore version: {text!r} (expected X.Y, e.g. 2.8)")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class Spelling:
    """How the functional autodiff API is spelled for one target version."""

    module: Optional[str]  # "mindspore", "mindspore.ops", or None where only GradOperation exists
    sens: Optional[str]  # "sens_param", "forward-scaling" or None


@cache
def _table() -> dict:
    return json.loads(rules_path("autodiff_spellings.json").read_text(encoding="utf-8"))


def default_target() -> Version:
    return Version.parse(_table()["default_target"])


def spelling_for(target: Version) -> Spelling:
    chosen = None
    for row in _table()["ranges"]:
        if Version.parse(row["since"]) <= target:
            chosen = row
    assert chosen is not None
    return Spelling(module=chosen["module"], sens=chosen["sens"])


# A requirement on MindSpore or one of its device builds, as it appears in requirements files and
# in pyproject dependency strings.
_REQUIREMENT = re.compile(
    r"""(?ix)^\s*["']?mindspore(?:[-_](?:gpu|ascend|cpu|dev))?\s*
        (?:\[[^\]]*\])?\s*(?P<specs>(?:[<>=!~]=?=?\s*[\w.*]+\s*,?\s*)+)"""
)
_SPEC = re.compile(r"(?P<op>===|==|~=|>=|<=|!=|>|<)\s*(?P<version>\d+(?:\.\d+)*)")


def lowest_allowed(specs: str) -> Optional[Version]:
    """The lowest version a specifier set allows, or None if it sets no lower bound."""
    lowest = None
    for match in _SPEC.finditer(specs):
        op, text = match.group("op"), match.group("version")
        parts = [*text.split("."), "0"]
        version = Version(int(parts[0]), int(parts[1]))
        if op == ">" and len(text.split(".")) <= 2:
            version = Version(version.major, version.minor + 1)
        if op in ("==", "===", "~=", ">=", ">") and (lowest is None or version > lowest):
            lowest = version
    return lowest


@dataclass(frozen=True)
class DetectedTarget:
    version: Version
    source: str  # where the version came from, for the user


def _candidate_files(directory: Path) -> list[Path]:
    files = [directory / "pyproject.toml", directory / "setup.cfg"]
    files += sorted(directory.glob("requirements*.txt"))
    return [path for path in files if path.is_file()]


def detect_target(start: Path) -> Optional[DetectedTarget]:
    """Find the lowest MindSpore version the project at or above ``start`` allows."""
    directory = start.resolve()
    if directory.is_file():
        directory = directory.parent
    for folder in (directory, *directory.parents):
        best: Optional[DetectedTarget] = None
        for path in _candidate_files(folder):
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                match = _REQUIREMENT.match(line.strip().lstrip("-").strip())
                if not match:
                    continue
                version = lowest_allowed(match.group("specs"))
                if version and (best is None or version < best.version):
                    best = DetectedTarget(version, f"{path.name}: {line.strip().strip(',')}")
        if best:
            return best
        if (folder / ".git").exists():
            break
    return None
