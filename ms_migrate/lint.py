"""Running the lint rules over one file's text: prefilter, check, drop suppressed diagnostics.

Pure: text in, diagnostics out. Each rule runs only when the target is in its range and the text
holds one of its prefilter tokens, so most files are never parsed at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.rules.base import Rule, all_rules
from ms_migrate.versions import Version


def lint_rules() -> tuple[Rule, ...]:
    return tuple(rule for rule in all_rules() if rule.kind == "lint")


def lint_text(
    text: str, target: Version, path: Optional[Path] = None, rules: Optional[Sequence[Rule]] = None
) -> list[Diagnostic]:
    """Diagnostics of the lint rules for ``text`` on ``target``, suppression comments honoured.

    Text that does not parse gives none: the upgrade pipeline reports the syntax error.
    """
    context = FileContext(text, target, path)
    found: list[Diagnostic] = []
    for rule in lint_rules() if rules is None else rules:
        if not rule.applies_to(text, target):
            continue
        try:
            diagnostics = list(rule.check(context))
        except (SyntaxError, ValueError, RecursionError):
            return []
        found += [item for item in diagnostics if not context.suppressed(item.code, item.line)]
    return sorted(found, key=lambda item: (item.line, item.col, item.code))
