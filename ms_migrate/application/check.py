"""What `check` makes of a file's findings, the same in the terminal and in an editor."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Optional

from ms_migrate.application.config import Config
from ms_migrate.application.runner import FileOutcome, migrate_source, rules_for, syntax_error_of
from ms_migrate.core.engine import CHECK_KINDS
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.facts.versions import Version
from ms_migrate.files.sources import SourceFile
from ms_migrate.rules.base import Rule, all_rules


def rewriters() -> frozenset[str]:
    """The codes of the rules `upgrade` rewrites with (not the lint rules, nor the downgrade
    rules, whose findings are code the target cannot run)."""
    return _rewriters_of(all_rules())


def downgraders() -> frozenset[str]:
    """The codes of the rules `downgrade` rewrites with: what `check` finds of them is code newer
    than its target, which `downgrade` fixes."""
    return _rewriters_of(all_rules(), "downgrade")


@cache
def _rewriters_of(rules: tuple[Rule, ...], kind: str = "upgrade") -> frozenset[str]:
    # Asked once per finding: answered once per rule set (all_rules is one per rules path).
    return frozenset(rule.code for rule in rules if rule.kind == kind)


def as_reported(item: Diagnostic, rewritten: Optional[frozenset[str]] = None) -> Diagnostic:
    """A finding as `check` says it: what upgrade would rewrite is `modernisable:`, since
    GradOperation is not deprecated; every other finding as the rule said it. ``rewritten``:
    ``rewriters()``, for a caller that asks about many findings."""
    if item.code in (rewriters() if rewritten is None else rewritten):
        return dataclasses.replace(item, message=f"modernisable: {item.message}")
    return item


def check_source(source: SourceFile, target: Version, config: Config) -> FileOutcome:
    """`check`'s run of one text (reporting mode): what upgrade or downgrade would rewrite for the
    target, and the lint findings. A MindSpore file that does not parse gets its syntax error even
    where no rule would have parsed it."""
    broken = syntax_error_of(source)
    if broken is not None:
        return broken
    return migrate_source(source, target, rules_for(source.path, config, CHECK_KINDS), config, fix=False)
