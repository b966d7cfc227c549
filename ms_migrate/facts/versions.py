"""MindSpore versions: parsing, the spelling table in ``rules/``, and version specifiers' bounds.

Where a project names MindSpore (its pins) is read by ``ms_migrate.files.pins``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.facts.data import rules_path


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


@dataclass(frozen=True)
class JitSpelling:
    """How the graph-compiling decorator is spelled on one target: `jit` from 2.0, `ms_function`
    before; ``keywords``: what it takes there (None: whatever the target's jit takes)."""

    name: str
    module: str
    keywords: Optional[tuple[str, ...]]


@cache
def _jit_table() -> dict:
    return json.loads(rules_path("jit_spellings.json").read_text(encoding="utf-8"))


def jit_spelling_for(target: Version) -> JitSpelling:
    chosen = None
    for row in _jit_table()["ranges"]:
        if Version.parse(row["since"]) <= target:
            chosen = row
    assert chosen is not None
    keywords = tuple(chosen["keywords"]) if chosen["keywords"] is not None else None
    return JitSpelling(chosen["name"], chosen["module"], keywords)


def release_spans(releases: Iterable[Version]) -> str:
    """Releases as a message says them: 1.7, 1.8, 1.9, 1.10, 2.7 as "1.7-1.10, 2.7" (consecutive
    minors of one major joined)."""
    runs: list[list[Version]] = []
    for release in sorted(releases):
        last = runs[-1][-1] if runs else None
        if last is not None and last.major == release.major and release.minor == last.minor + 1:
            runs[-1].append(release)
        else:
            runs.append([release])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)


def known_versions() -> list[Version]:
    return [Version.parse(text) for text in _table()["known_versions"]]


def newest_known() -> Version:
    return max(known_versions())


def parse_target(text: str) -> Version:
    """A ``--target-version``: one of the known release lines, or a newer one, written X.Y, or a
    release X.Y.Z of one (a patch release has its line's API: `2.10.1` is read as 2.10).

    A line newer than the newest known is taken (a release the catalogue has not caught up with
    yet): every table is a set of ranges, so it reads as the newest known line, and the caller warns.
    """
    known = known_versions()
    listed = ", ".join(str(version) for version in known)
    if not re.fullmatch(r"\d+\.\d+(?:\.\d+)?", text.strip()):
        raise ValueError(f"not a MindSpore release line: {text!r} (write X.Y or X.Y.Z, one of {listed})")
    version = Version.parse(text)
    if version not in known and version < max(known):
        raise ValueError(f"unknown MindSpore version {text} (known: {listed})")
    return version


# MindSpore and its device builds, as package names normalise (PEP 503).
MINDSPORE_PACKAGES = frozenset(
    {"mindspore", "mindspore-gpu", "mindspore-ascend", "mindspore-cpu", "mindspore-dev"}
)
_LOWER_BOUNDS = frozenset({">=", ">", "==", "~=", "==="})


def newest_allowed(specs: str) -> Optional[Version]:
    """The newest known release line a specifier set admits (`<= 2.3.0` gives 2.3, `<3` the
    newest 2.x known), or None if it admits none of them."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        specifier = SpecifierSet(specs)
    except InvalidSpecifier:
        return None
    return next(
        (version for version in sorted(known_versions(), reverse=True) if str(version) in specifier), None
    )


def lowest_allowed(specs: str) -> Optional[Version]:
    """The lowest release line a specifier set admits, or None if it sets no lower bound.

    `>=2.2,<3` gives 2.2; `>1.8` gives 1.8 (1.8.1 is allowed); `==2.3.0rc1`, `>=2.2.0.post1` and
    `>=1.8.1,<2` give the line of their release (2.3, 2.2, 1.8); `<3` gives None: nothing says how
    old the runtime may be, so the tool cannot choose a spelling by itself. A bound between known
    lines means the next known one (`>=1.11` gives 2.0); one above the newest known is kept
    (`>=2.12` gives 2.12), for the caller to warn about.
    """
    # packaging is imported here, where a pin was found: most runs (a pre-commit hook on a
    # project without one) never pay for it.
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion
    from packaging.version import Version as PackagingVersion

    try:
        specifier = SpecifierSet(specs)
    except InvalidSpecifier:
        return None
    bounds = []
    for item in specifier:
        if item.operator not in _LOWER_BOUNDS:
            continue
        try:  # `==2.*` bounds at 2.0; `===` takes any string, and `===latest` names no release
            release = PackagingVersion(item.version.removesuffix(".*")).release
        except InvalidVersion:
            continue
        bounds.append(Version(release[0], release[1] if len(release) > 1 else 0))
    if not bounds:
        return None
    bound = max(bounds)  # every clause must hold: `>=2.2,>=2.5` starts at 2.5
    return next((version for version in sorted(known_versions()) if version >= bound), bound)


def load_toml(text: str) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(str(error)) from error
    except RecursionError:  # `a = [[[[...]]]]`: tomllib recurses once per level
        raise ValueError("nested too deeply to read") from None
