"""The Chinese of the generated docs pages (docs/zh/rules.md, reasons.md, release-pairs.md).

``zh.json`` holds, by code, each rule's Chinese ``title`` and ``description``, each reason code's
``summary`` and ``explanation``, each note's ``text``, and under ``pages`` the Chinese ``text`` of
each fixed sentence of the pages (ms_migrate.docs.FRAMING, by the same key). Every entry's
``source`` is the first 12 hex digits of the sha256 of the English it translates (a rule's
title + "\\n" + description, a reason's summary + "\\n" + explanation, a note's text, a sentence),
so an English text that changes leaves its entry stale, and a test says so.

``python -m ms_migrate.translations --check`` lists the entries that are missing, stale or
left over, with the source each should carry once translated again.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any, Optional

SECTIONS = ("rules", "reasons", "notes", "pages")


@cache
def zh() -> dict[str, Any]:
    """The Chinese translations (``zh.json``, shipped inside the package)."""
    text = resources.files(__name__).joinpath("zh.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def source_of(english: str) -> str:
    """What an entry's ``source`` is for the English it translates."""
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:12]


def english() -> dict[str, dict[str, str]]:
    """The English each zh.json entry translates, by section and code (or FRAMING key)."""
    from ms_migrate.core.codes import all_notes, all_reasons
    from ms_migrate.docs import FRAMING
    from ms_migrate.rules.base import all_rules

    return {
        "rules": {rule.code: rule.title + "\n" + rule.description for rule in all_rules()},
        "reasons": {code: r.summary + "\n" + r.explanation for code, r in all_reasons().items()},
        "notes": {code: note.text for code, note in all_notes().items()},
        "pages": dict(FRAMING),
    }


def problems(translations: Optional[dict[str, Any]] = None) -> list[str]:
    """One line per entry that is missing, stale (its English changed) or left over."""
    translations = zh() if translations is None else translations
    found = []
    for section, texts in english().items():
        entries = translations.get(section, {})
        for code, text in texts.items():
            entry = entries.get(code)
            current = source_of(text)
            if entry is None:
                found.append(f"{section} {code}: missing (translate it; its source is {current})")
            elif entry.get("source") != current:
                found.append(
                    f"{section} {code}: stale: the English changed since source {entry.get('source')} "
                    f"(translate it again, then set its source to {current})"
                )
        found += [
            f"{section} {code}: left over: no such English any more (remove it)"
            for code in entries
            if code not in texts
        ]
    return found
