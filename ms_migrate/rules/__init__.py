"""The rules ms-migrate knows. Each rule is one module with its id, docs, versions and examples."""

from __future__ import annotations

from types import ModuleType

from ms_migrate.rules import ms101_grad_operation

ALL_RULES: tuple[ModuleType, ...] = (ms101_grad_operation,)


def by_id(rule_id: str) -> ModuleType:
    for rule in ALL_RULES:
        if rule_id.upper() == rule.ID:
            return rule
    raise KeyError(rule_id)
