"""One buffer analysed: what `check` reports on it, and what `upgrade` (or `downgrade`) writes.

The findings are `check`'s on the same text under the same settings: the runner's pipeline in
reporting mode (as `check` in text runs it: MS101 builds no rewrite, no libcst), the configured
codes, the baseline, and "modernisable:" before what `upgrade` rewrites. The fixes are built only
when an editor asks for them, by the same machinery as `upgrade --interactive`: one site's fix is
the file migrated with every other site declined, which the engine validates like any rewrite (it
compiles and is a fixed point), and it is offered only if exactly that site changes. Pure: text
in, diagnostics and texts out; nothing is read but the project's settings, nothing is written.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Sequence
from functools import cached_property
from typing import Optional

from ms_migrate.application.check import as_reported, check_source
from ms_migrate.application.runner import FileOutcome, migrate_declining
from ms_migrate.context import FileContext
from ms_migrate.core.engine import DOWNGRADE_KINDS, UPGRADE_KINDS, FileResult, rules_of_kind
from ms_migrate.diagnostics import Diagnostic, Severity, source_lines
from ms_migrate.files import sources
from ms_migrate.lsp.buffers import Buffer, cell_texts
from ms_migrate.lsp.settings import Settings
from ms_migrate.reasons import INTERNAL_ERROR
from ms_migrate.reporting.baseline import Finding as BaselineFinding

Site = tuple[str, int]  # (code, line): how the engine and `upgrade -i` name a site
SYNTAX_ERROR = "syntax-error"  # the code of the one diagnostic a buffer that does not parse gets
CONFIGURATION_ERROR = "configuration"  # the project's settings could not be read
_IGNORE_COMMENT = re.compile(r"#\s*ms-migrate:\s*ignore\[(?P<codes>[A-Z0-9,\s]+)\]", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """A change to offer: what it is called, and the buffer's text once it is made."""

    title: str
    text: str
    sites: tuple[Site, ...]  # the findings it fixes
    preferred: bool = False


class Analysis:
    """``buffer`` under ``settings``; each part computed once, when first asked for."""

    def __init__(self, buffer: Buffer, settings: Settings) -> None:
        self.buffer, self.settings = buffer, settings

    @cached_property
    def excluded(self) -> bool:
        """Whether `check` skips the file (an `exclude` of the configuration matches it)."""
        config, path = self.settings.config, self.buffer.path
        if not config.exclude:
            return False
        try:
            relative = path.relative_to(config.root) if config.root else path
        except ValueError:
            relative = path
        return sources.excluded(relative, config.exclude)  # as `discover` skips a file named to it

    @cached_property
    def outcome(self) -> FileOutcome:
        """`check`'s run of the rules (reporting mode), on the buffer's text; a MindSpore buffer
        that does not parse gets check's error even where no rule would have parsed it."""
        return check_source(self.buffer.source, self.settings.target, self.settings.config)

    @cached_property
    def findings(self) -> list[Diagnostic]:
        """What `check` reports on the buffer, in its order and with its messages; a buffer that
        cannot be analysed (a syntax error) gets one diagnostic that says why."""
        if self.settings.problem is not None:
            return [_at_line(1, self.buffer.text, CONFIGURATION_ERROR, self.settings.problem)]
        if self.excluded:
            return []
        if self.outcome.error is not None:
            return [self._error_diagnostic(self.outcome.error)]
        shown = [as_reported(item) for item in self.outcome.diagnostics]
        if self.settings.baseline is None:
            return shown
        lines = source_lines(self.buffer.text)
        found = [
            BaselineFinding(
                self.buffer.path, item.code, lines[item.line - 1] if 0 < item.line <= len(lines) else ""
            )
            for item in shown
        ]
        kept, _ = self.settings.baseline.new_findings(found)
        return [shown[position] for position in kept]

    def _error_diagnostic(self, error: str) -> Diagnostic:
        """The error `check` prints for the file (without its `path:line:` prefix), where Python
        places it."""
        message = re.sub(rf"^{re.escape(str(self.buffer.path))}(?::(?:cell \d+:)?\d+)?: ", "", error)
        try:
            compile(self.buffer.text, str(self.buffer.path), "exec", ast.PyCF_ONLY_AST)
        except SyntaxError as syntax:
            line = syntax.lineno or 1
            col = max((syntax.offset or 1) - 1, 0)
            end_line = syntax.end_lineno or line
            end_col = (
                max((syntax.end_offset or col + 2) - 1, col + 1)
                if end_line == line
                else (syntax.end_offset or 1) - 1
            )
            return Diagnostic(SYNTAX_ERROR, line, col, (end_line, end_col), message, Severity.ERROR)
        except (ValueError, RecursionError, MemoryError):
            pass
        return _at_line(1, self.buffer.text, SYNTAX_ERROR, message)

    # --- fixes -----------------------------------------------------------------------------------

    def _migrated(self, kinds: Sequence[str], declined: frozenset[Site] = frozenset()) -> FileResult:
        return migrate_declining(self.outcome, self.settings.target, self.settings.config, kinds, declined)

    @cached_property
    def _upgraded(self) -> Optional[FileResult]:
        """What `upgrade` writes (None where it writes nothing)."""
        return self._whole(UPGRADE_KINDS)

    @cached_property
    def _downgraded(self) -> Optional[FileResult]:
        """What `downgrade` writes, where the target is one a downgrade rule applies to."""
        if not any(self.settings.target in rule.targets for rule in rules_of_kind(("downgrade",))):
            return None
        return self._whole(DOWNGRADE_KINDS)

    def _whole(self, kinds: Sequence[str]) -> Optional[FileResult]:
        if self.findings and self.findings[0].code in (SYNTAX_ERROR, CONFIGURATION_ERROR):
            return None
        if self.excluded:
            return None
        result = self._migrated(kinds)
        return result if self._writable(result) else None

    def _writable(self, result: FileResult) -> bool:
        if result.text == self.buffer.text or any(
            item.code == INTERNAL_ERROR.code for item in result.diagnostics
        ):
            return False
        return self.buffer.notebook is None or cell_texts(self.buffer, result.text) is not None

    def fix_all(self) -> Optional[Rewrite]:
        """Every fix `upgrade` makes in the file, as it writes them."""
        if self._upgraded is None:
            return None
        return Rewrite(
            "ms-migrate: fix all in file (as `upgrade` writes it)",
            self._upgraded.text,
            tuple(self._upgraded.sites),
        )

    def downgrade_all(self) -> Optional[Rewrite]:
        if self._downgraded is None:
            return None
        title = f"ms-migrate: downgrade the file for MindSpore {self.settings.target}"
        return Rewrite(title, self._downgraded.text, tuple(self._downgraded.sites))

    def fix_for(self, site: Site) -> Optional[Rewrite]:
        """`upgrade`'s fix of one site alone, if it stands alone and passes the engine's checks."""
        return self._site_fix(site, UPGRADE_KINDS, self._upgraded, "fix")

    def downgrade_for(self, site: Site) -> Optional[Rewrite]:
        return self._site_fix(
            site, DOWNGRADE_KINDS, self._downgraded, f"downgrade for MindSpore {self.settings.target}"
        )

    def downgrade_sites(self) -> list[Site]:
        """The sites the downgrade rules convert: each gets its own code action."""
        if self._downgraded is None:
            return []
        downgraders = {rule.code for rule in rules_of_kind(("downgrade",))}
        return [site for site in self._downgraded.sites if site[0] in downgraders]

    def _site_fix(
        self, site: Site, kinds: Sequence[str], whole: Optional[FileResult], verb: str
    ) -> Optional[Rewrite]:
        if whole is None:
            return None
        every = whole.sites
        if site not in every:
            return None
        key = (tuple(kinds), site)
        if key not in self._site_fixes:
            alone = whole if len(every) == 1 else self._migrated(kinds, frozenset(every) - {site})
            ok = alone.sites == [site] and self._writable(alone)
            message = next(item.message for item in whole.fixed if (item.code, item.line) == site)
            title = f"ms-migrate: {verb} {site[0]}: {message}"
            self._site_fixes[key] = Rewrite(title, alone.text, (site,), preferred=True) if ok else None
        return self._site_fixes[key]

    @cached_property
    def _site_fixes(self) -> dict[tuple[tuple[str, ...], Site], Optional[Rewrite]]:
        return {}

    def ignore(self, finding: Diagnostic) -> Optional[Rewrite]:
        """The buffer with `# ms-migrate: ignore[CODE]` on the finding's line, if that comment
        then suppresses it (not where the line ends inside a string)."""
        if finding.code in (SYNTAX_ERROR, CONFIGURATION_ERROR):
            return None
        lines = source_lines(self.buffer.text)
        if not 0 < finding.line <= len(lines):
            return None
        line = lines[finding.line - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        existing = _IGNORE_COMMENT.search(body)
        if existing is not None:
            codes = [code.strip() for code in existing.group("codes").split(",") if code.strip()]
            if finding.code in codes:
                return None
            joined = ", ".join([*codes, finding.code])
            body = body[: existing.start("codes")] + joined + body[existing.end("codes") :]
        else:
            body = f"{body}  # ms-migrate: ignore[{finding.code}]"
        text = "".join([*lines[: finding.line - 1], body + ending, *lines[finding.line :]])
        if not FileContext(text, self.settings.target).suppressed(finding.code, finding.line):
            return None
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return None
        return Rewrite(
            f"ms-migrate: ignore {finding.code} on this line", text, ((finding.code, finding.line),)
        )


def _at_line(line: int, text: str, code: str, message: str) -> Diagnostic:
    lines = source_lines(text)
    width = len(lines[line - 1].rstrip("\r\n")) if 0 < line <= len(lines) else 0
    return Diagnostic(code, line, 0, (line, width), message, Severity.ERROR)
