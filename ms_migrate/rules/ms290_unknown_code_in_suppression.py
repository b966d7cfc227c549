"""MS290: a suppression comment names a code ms-migrate does not have.

`# ms-migrate: ignore[MS2100]` (a typo of MS210) suppresses nothing, and says nothing: the finding
it was meant for comes back, or the site a team meant to keep is rewritten. ruff reports the
`# noqa` codes it does not know in the same way (RUF102, invalid-rule-code:
https://docs.astral.sh/ruff/rules/invalid-rule-code/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.core.codes import registry, resolve_selector
from ms_migrate.diagnostics import Diagnostic, Severity, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule

# A comment that may name a code of ours: any ms-migrate ignore, or a noqa listing an MS code.
_OURS = re.compile(r"#\s*ms-migrate:|#\s*noqa\s*:[^\n]*\bMS", re.IGNORECASE)


class UnknownCodeInSuppression(Rule):
    """A code in `# ms-migrate: ignore[...]`, or an `MS` code in `# noqa: ...`, that is neither a
    code of ms-migrate (its rules', reasons' and notes', plugins' included) nor a prefix of one
    (`ignore[MS2]` suppresses every MS2xx, as --select takes prefixes). Codes of other tools in a
    `# noqa` comment (`E501`, `F401`) are theirs and are not looked at. The message names the
    nearest known code.

    As ruff's RUF102 (https://docs.astral.sh/ruff/rules/invalid-rule-code/) for `# noqa`. Applies
    to every target release. Reported, not fixed: which code was meant is the author's to say.
    """

    code = "MS290"
    title = "suppression comment names a code ms-migrate does not have"
    kind = "lint"
    severity = Severity.WARNING
    prefilter = ("ms-migrate", "MS-MIGRATE", "noqa", "NOQA")  # what applies_to narrows further
    examples = Examples(
        valid=(
            Example("import mindspore.nn as nn\nopt = nn.Momentum  # ms-migrate: ignore[MS210]\n"),
            Example("x = 1  # ms-migrate: ignore[MS2]\n"),
            Example("import os  # noqa: F401\n"),
        ),
        invalid=(
            Example("import mindspore.nn as nn\nopt = nn.Momentum  # ms-migrate: ignore[MS2100]\n"),
            Example("x = 1  # noqa: MS999\n"),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        # flake8 noqa comments are in many files, for other tools' codes: only a comment that can
        # name one of ours costs this file a tokenize.
        return super().applies_to(text, target) and _OURS.search(text) is not None

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        known = registry()
        lines = source_lines(ctx.text)
        for line, column, codes, own in ctx.suppression_comments:
            for code in codes:
                if not own and not code.startswith("MS"):
                    continue  # another tool's code
                if any(name.startswith(code) for name in known):
                    continue
                resolved = resolve_selector(code)
                nearest = resolved[1] if isinstance(resolved, tuple) else None
                hint = f" (did you mean {nearest}?)" if nearest else " (`ms-migrate rules` lists them)"
                text = lines[line - 1] if 0 < line <= len(lines) else ""
                start = len(text[:column].encode("utf-8", "surrogatepass"))
                end = len(text.rstrip("\r\n").encode("utf-8", "surrogatepass"))
                message = f"`{code}` is not a code of ms-migrate: this comment suppresses nothing by it{hint}"
                yield Diagnostic(self.code, line, start, (line, end), message, self.severity)
