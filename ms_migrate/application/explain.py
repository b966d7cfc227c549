"""What `ms-migrate explain` says of a code, and which code a name stands for: the same text in
the terminal and in the language server's hover."""

from __future__ import annotations

from typing import Optional

from ms_migrate.core.codes import all_notes, all_reasons
from ms_migrate.rules.base import all_rules, rule_for


def code_named(name: str) -> Optional[str]:
    """The code ``name`` stands for: a code in any case, a reason's or rule's name, a rule's title."""
    code = name.strip().upper()
    reasons, notes, rules = all_reasons(), all_notes(), all_rules()
    if code in reasons or code in notes or any(rule.code == code for rule in rules):
        return code
    typed = name.strip().casefold()
    slug = typed.replace("_", "-")  # inherited_grad as well as inherited-grad
    for code, reason in reasons.items():
        if reason.slug == slug:
            return code
    for rule in rules:
        if slug == rule.name or typed == rule.title.casefold():
            return rule.code
    return None


def explanation(code: str) -> str:
    """What `ms-migrate explain CODE` prints for a known ``code`` (the language server's hover
    shows the same text)."""
    reasons, notes = all_reasons(), all_notes()
    if code in reasons:
        reason = reasons[code]
        return f"{code} ({reason.slug}): {reason.summary}\n\n{reason.explanation}"
    if code in notes:
        return f"{code}: {notes[code].text}"
    rule = rule_for(code)
    lines = [
        f"{rule.code} ({rule.name}): {rule.title}\n",
        f"Kind: {rule.kind}. Applies to {rule.targets.describe()}.\n",
        rule.description + "\n",
    ]
    for label, examples in (("Flagged", rule.examples.invalid), ("Accepted", rule.examples.valid)):
        for example in examples:
            lines.append(f"{label} ({example.setting}):\n{example.code}")
            if example.fixed is not None:
                lines.append(f"Fixed to:\n{example.fixed}")
    return "\n".join(lines)
