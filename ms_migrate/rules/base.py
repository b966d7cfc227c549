"""The one seam every rule plugs into: a class in one file, found without being listed anywhere.

A rule declares its code, title and kind (upgrade, downgrade or lint), the target versions it
applies to, the byte tokens a file must contain for it to run at all, its reason codes and its
examples (which are also its tests and its documentation), and a ``check`` that yields
diagnostics from a ``FileContext``.

Rules are discovered in the ``ms_migrate.rules`` package and in the folders listed in the
``MS_MIGRATE_RULES_PATH`` environment variable (``os.pathsep``-separated), so a project can add
its own lint rules without touching ms-migrate.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar, Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.versions import Version
from ms_migrate.reasons import Note, Reason

KINDS = ("upgrade", "downgrade", "lint")
# Between a lower-case letter or digit and a capital, and before the last capital of a run
# followed by a lower-case letter: HasAuxUnpacking -> has-aux-unpacking, GRAPHMode -> graph-mode.
_KEBAB_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclass(frozen=True)
class VersionRange:
    """Targets from ``low`` (inclusive) up to ``high`` (exclusive); None leaves a side open."""

    low: Optional[str] = None
    high: Optional[str] = None

    def __contains__(self, version: Version) -> bool:
        if self.low is not None and version < Version.parse(self.low):
            return False
        return not (self.high is not None and version >= Version.parse(self.high))

    def describe(self) -> str:
        if self.low and self.high:
            return f"MindSpore {self.low} up to (not including) {self.high}"
        if self.low:
            return f"MindSpore {self.low} and later"
        if self.high:
            return f"MindSpore before {self.high}"
        return "every MindSpore version"


@dataclass(frozen=True)
class Example:
    code: str
    target: str = "2.10"
    # What the rule's fix writes for an invalid example, run alone on ``target`` (as Fixit's
    # ``expected_replacement``); None where it only reports. Tests hold the rule to it.
    fixed: Optional[str] = None
    # The release the code is written for, for a rule about a change of meaning between it and
    # ``target`` (FileContext.written_for); None: unknown, as a run without a pin or from-version.
    written_for: Optional[str] = None

    @property
    def setting(self) -> str:
        """How the example is run, as its heading says it: `target 2.10, written for 1.10`."""
        written = f", written for {self.written_for}" if self.written_for is not None else ""
        return f"target {self.target}{written}"

    def context(self) -> FileContext:
        """What a run sees of this example: its code on its target, written for its release."""
        written_for = None if self.written_for is None else Version.parse(self.written_for)
        return FileContext(self.code, Version.parse(self.target), written_for=written_for)


@dataclass(frozen=True)
class Examples:
    """Code the rule must accept (``valid``) and code it must flag (``invalid``)."""

    valid: tuple[Example, ...] = ()
    invalid: tuple[Example, ...] = ()


class Rule:
    code: ClassVar[str] = ""
    title: ClassVar[str] = ""
    kind: ClassVar[str] = "lint"
    severity: ClassVar[Severity] = Severity.WARNING
    targets: ClassVar[VersionRange] = VersionRange()
    prefilter: ClassVar[tuple[str, ...]] = ()  # a file holding none of these is never parsed
    # Whether ``check`` asks ``ctx.project`` about the run's other files: a run sends the files
    # such a rule applies to to one worker, which then reads those facts once.
    reads_the_project: ClassVar[bool] = False
    # Whether each fix respells what a release changed (a moved name, a renamed keyword, a new
    # default) as a pair the release facts prove: the same object under a new name, or equal
    # results of the old spelling on its last release and the new one on the target
    # (rules/releases/proofs.json). `upgrade --verify` takes these as proven and runs the rest.
    release_fix: ClassVar[bool] = False
    # Whether the rule compares the release the code is written for with the target (a change
    # of meaning): without FileContext.written_for it has nothing to say, and a run that does not
    # know that release never parses a file for it alone.
    compares_releases: ClassVar[bool] = False
    reasons: ClassVar[dict[str, Reason]] = {}  # why a site is left alone, by code
    notes: ClassVar[dict[str, Note]] = {}  # what to know about a fixed site, by code
    examples: ClassVar[Examples] = Examples()

    @property
    def description(self) -> str:
        return inspect.cleandoc(type(self).__doc__ or "")

    @property
    def name(self) -> str:
        """What people call the rule (`ms-migrate explain empty-weights`), as ruff names its rules:
        the class name in kebab case, which is also its module's name after the code."""
        return _KEBAB_BREAK.sub("-", type(self).__name__).lower()

    def selected_for(self, text: str, target: Version, written_for: Optional[Version]) -> bool:
        """Whether a run on ``target`` of code written for ``written_for`` parses ``text`` for
        this rule: its prefilter matches, and it has a release to compare where it needs one."""
        return (written_for is not None or not self.compares_releases) and self.applies_to(text, target)

    def applies_to(self, text: str, target: Version) -> bool:
        if target not in self.targets:
            return False
        return not self.prefilter or any(token in text for token in self.prefilter)

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        raise NotImplementedError

    def diagnostic(
        self, node: object, message: str, fix: object = None, replacement: Optional[str] = None
    ) -> Diagnostic:
        """A diagnostic at an ``ast`` node's position, with this rule's code and severity."""
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end = (getattr(node, "end_lineno", line) or line, getattr(node, "end_col_offset", col) or col)
        return Diagnostic(self.code, line, col, end, message, self.severity, fix, replacement)  # type: ignore[arg-type]


def _modules() -> Iterable[object]:
    import ms_migrate.rules as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "base":
            yield importlib.import_module(f"{package.__name__}.{info.name}")
    for folder in filter(None, os.environ.get("MS_MIGRATE_RULES_PATH", "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            name = f"ms_migrate_user_rules.{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as error:  # a plugin's own bug: named, not a traceback of ours
                raise RuleSetError(f"{path}: cannot load: {type(error).__name__}: {error}") from error
            yield module


class RuleSetError(ValueError):
    """The rules cannot be loaded as one set: a plugin that fails to import, a kind no engine
    runs, a code two rules claim. Every command that loads the rules says it and exits 2."""


@cache
def _discover(rules_path: str) -> tuple[Rule, ...]:
    found: dict[str, Rule] = {}
    for module in _modules():
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.code:
                if value.kind not in KINDS:
                    raise RuleSetError(f"rule {value.code}: kind must be one of {', '.join(KINDS)}")
                if value.code in found and type(found[value.code]) is not value:
                    raise RuleSetError(f"two rules claim the code {value.code}")
                found[value.code] = value()
    return tuple(sorted(found.values(), key=lambda rule: rule.code))


def all_rules() -> tuple[Rule, ...]:
    """Every rule, by code: the package's own and those in MS_MIGRATE_RULES_PATH."""
    return _discover(os.environ.get("MS_MIGRATE_RULES_PATH", ""))


def rule_for(code: str) -> Rule:
    for rule in all_rules():
        if rule.code == code.upper():
            return rule
    raise KeyError(code)
