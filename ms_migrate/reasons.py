"""Reason codes and notes: what a rule says about a site it leaves alone, or about a rewrite.

A refusal is a value with a code, never a bare ``None``: users grep for codes, the docs explain
each one (``docs/reasons.md`` is generated from every rule's ``reasons``), and tests assert on
them. Each rule owns its codes; ``MSR099`` belongs to the engine, which discards a rewrite that
fails validation whatever rule made it. ``ms_migrate.core.codes`` is the registry of them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from ms_migrate.diagnostics import Diagnostic, Severity


@dataclass(frozen=True)
class Reason:
    """Why a site was left alone."""

    code: str
    slug: str
    summary: str
    explanation: str

    def at(self, line: int, detail: str = "") -> Diagnostic:
        message = f"{self.summary} ({self.slug})"
        if detail:
            message = f"{message}: {detail}"
        return Diagnostic(self.code, line, 0, (line, 0), message, Severity.INFO)


@dataclass(frozen=True)
class Note:
    """Something the user of a converted site should know."""

    code: str
    text: str

    def at(self, line: int) -> Diagnostic:
        return Diagnostic(self.code, line, 0, (line, 0), self.text, Severity.INFO)


def registry(*items: Reason) -> dict[str, Reason]:
    return {item.code: item for item in items}


INTERNAL_ERROR = Reason(
    "MSR099",
    "internal-error",
    "the rewrite failed validation and was discarded",
    "The rewritten file did not compile or was not a fixed point. The file is left unchanged. "
    "Please report it with the input.",
)
