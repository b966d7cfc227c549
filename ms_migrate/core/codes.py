"""The one registry of codes: every rule, reason and note code, with the rule that owns it.

Built beside rule discovery from what each rule declares, once per rules path. A code claimed
twice fails loudly: a plugin that declared MSR001 used to replace MS101's reason silently.
``--select``, ``--ignore`` and the configuration are checked against it, so a typo (`MS999`)
is an error that names the nearest known code instead of a gate that quietly checks nothing.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Optional, Union

from ms_migrate.reasons import INTERNAL_ERROR, Note, Reason

ENGINE = "engine"  # the owner of the engine's own codes (MSR099)


@dataclass(frozen=True)
class Code:
    code: str
    category: str  # "rule", "reason" or "note"
    owner: str  # the code of the rule that declares it, or ENGINE
    entry: object  # the Rule, Reason or Note


class DuplicateCode(ValueError):
    """A code (a rule's, a reason's or a note's) that two rules declare."""


@cache
def _registry(rules_path: str) -> dict[str, Code]:
    from ms_migrate.rules.base import all_rules

    engine = Code(INTERNAL_ERROR.code, "reason", ENGINE, INTERNAL_ERROR)
    found: dict[str, Code] = {engine.code: engine}
    for rule in all_rules():
        declared: list[tuple[str, str, object]] = [(rule.code, "rule", rule)]
        declared += [(code, "reason", reason) for code, reason in rule.reasons.items()]
        declared += [(code, "note", note) for code, note in rule.notes.items()]
        for code, category, entry in declared:
            earlier = found.get(code)
            if earlier is not None:
                claim = f"{rule.code} declares the {category} code {code}"
                raise DuplicateCode(f"{claim}, which {earlier.owner} owns already")
            found[code] = Code(code, category, rule.code, entry)
    return dict(sorted(found.items()))


def registry() -> dict[str, Code]:
    """Every code, sorted: the rules', their reasons' and notes', and the engine's."""
    return _registry(os.environ.get("MS_MIGRATE_RULES_PATH", ""))


def all_reasons() -> dict[str, Reason]:
    """Every reason code, by code: each rule's own, and the engine's."""
    return {code: item.entry for code, item in registry().items() if item.category == "reason"}  # type: ignore[misc]


def all_notes() -> dict[str, Note]:
    return {code: item.entry for code, item in registry().items() if item.category == "note"}  # type: ignore[misc]


def owner(code: str) -> Optional[str]:
    """The rule that owns ``code`` (a rule owns itself), ENGINE, or None for an unknown code."""
    item = registry().get(code.upper())
    return None if item is None else item.owner


def resolve_selector(value: str) -> Union[str, tuple[str, Optional[str]]]:
    """The code prefix that ``value`` (a code, a code prefix such as `MS1`, or a rule's name such
    as `empty-weights`) selects, or (value, the nearest known code or name) for one that selects
    nothing."""
    codes = registry()
    upper = value.strip().upper()
    if upper and any(code.startswith(upper) for code in codes):
        return upper
    names = {item.entry.name: code for code, item in codes.items() if item.category == "rule"}  # type: ignore[attr-defined]
    if value.strip().lower() in names:
        return names[value.strip().lower()]
    # The code's own kind first: `MS999` is nearer to a rule than to the reason MSR099.
    category = "reason" if upper.startswith("MSR") else "note" if upper.startswith("MSN") else "rule"
    same_kind = [code for code, item in codes.items() if item.category == category]
    for candidates, word in ((same_kind, upper), (list(codes), upper), (list(names), value.lower())):
        nearest = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
        if nearest:
            return (value, nearest[0])
    return (value, None)


def resolved_selectors(values: Iterable[str], where: str) -> tuple[str, ...]:
    """``values`` as code prefixes; raises ValueError naming the first that selects nothing."""
    selected: list[str] = []
    for value in values:
        resolved = resolve_selector(value)
        if isinstance(resolved, tuple):
            unknown, nearest = resolved
            hint = f" (did you mean {nearest}?)" if nearest else " (`ms-migrate rules` lists them)"
            raise ValueError(f"{where}: unknown rule or code {unknown!r}{hint}")
        selected.append(resolved)
    return tuple(selected)
