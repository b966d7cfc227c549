"""``upgrade --report FILE``: what became of each site of a run, for the pull request that lands it.

A summary first (short enough to be the pull request's description), then per file: each site
with the form written or the reason it was left alone (with its explanation), the notes on it,
whether the file was verified by execution (runtime, modes, verdicts), and the commands that
reproduce the run. ``FILE`` ending in ``.json`` gets the same as JSON.

Pure: the run's facts in, a text out; the CLI writes it.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from ms_migrate import __version__
from ms_migrate.core.codes import all_notes, all_reasons
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.reporting.output import without_options


@dataclass(frozen=True)
class VerifiedRow:
    site: str  # the class or function run, `TrainStep:12`
    mode: str
    verdict: str  # "equal", "differs", "could not run"
    runtime: str
    reason: str = ""
    detail: str = ""  # what qualifies an `equal` (a stand-in it ran with), or the error behind a reason


@dataclass(frozen=True)
class ReportFile:
    path: str
    status: str  # as in the JSON document: changed, unchanged, skipped, error
    reason: Optional[str]
    diagnostics: tuple[tuple[str, Diagnostic], ...]  # (where, diagnostic)
    applied: frozenset[int] = frozenset()  # indexes of diagnostics whose fix is in the written text
    verified: tuple[VerifiedRow, ...] = ()


@dataclass(frozen=True)
class RunFacts:
    command: str
    target: str
    target_source: str
    arguments: tuple[str, ...]
    dry_run: bool
    files: tuple[ReportFile, ...] = field(default_factory=tuple)


def _site(where: str, item: Diagnostic, applied: bool) -> dict[str, Any]:
    reasons, notes = all_reasons(), all_notes()
    if item.code in reasons:
        reason = reasons[item.code]
        return {
            "line": where,
            "code": item.code,
            "outcome": "left alone",
            "reason": reason.slug,
            "message": item.message,
            "explanation": reason.summary,
        }
    if item.code in notes:
        return {"line": where, "code": item.code, "outcome": "note", "message": item.message}
    return {
        "line": where,
        "code": item.code,
        "outcome": "converted" if applied else "reported",
        "message": item.message,
    }


def report_data(run: RunFacts) -> dict[str, Any]:
    files = []
    converted = left_alone = 0
    reasons: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    runtimes: set[str] = set()
    for item in run.files:
        sites = [
            _site(where, diagnostic, index in item.applied)
            for index, (where, diagnostic) in enumerate(item.diagnostics)
        ]
        converted += sum(site["outcome"] == "converted" for site in sites)
        left_alone += sum(site["outcome"] == "left alone" for site in sites)
        reasons.update(site["code"] for site in sites if site["outcome"] == "left alone")
        verdicts.update(row.verdict for row in item.verified)
        runtimes.update(row.runtime for row in item.verified if row.runtime)
        if not sites and item.status == "unchanged" and not item.reason:
            continue  # nothing to say about a file the run did not touch
        files.append(
            {
                "path": item.path,
                "status": item.status,
                "reason": item.reason,
                "sites": sites,
                "verified": [row.__dict__ for row in item.verified],
            }
        )
    changed = [item["path"] for item in files if item["status"] == "changed"]
    arguments = without_options(run.arguments, _OUTPUT_OPTIONS)
    dry = ["--dry-run"] if "--dry-run" not in arguments else []
    return {
        "tool": f"ms-migrate {__version__}",
        "command": run.command,
        "target": {"version": run.target, "source": run.target_source},
        "summary": {
            "files_changed": len(changed),
            "sites_converted": converted,
            "sites_left_alone": left_alone,
            "left_alone_by_code": dict(sorted(reasons.items())),
            "verified": dict(sorted(verdicts.items())),
            "runtimes": sorted(runtimes),
            "dry_run": run.dry_run,
        },
        # On the tree as it was before the run: the preview, then the run itself.
        "reproduce": list(
            dict.fromkeys(
                [
                    shlex.join(["ms-migrate", *arguments[:1], *dry, *arguments[1:]]),
                    shlex.join(["ms-migrate", *arguments]),
                ]
            )
        ),
        "files": files,
    }


_OUTPUT_OPTIONS = ("--report", "-o", "--output-file")  # where output goes: not part of the run


def _summary_lines(data: dict[str, Any]) -> list[str]:
    summary = data["summary"]
    verb = "would change" if summary["dry_run"] else "changed"
    codes = ", ".join(f"{code} x{count}" for code, count in summary["left_alone_by_code"].items())
    lines = [
        f"**{data['command']} to MindSpore {data['target']['version']}** ({data['target']['source']}): "
        f"{summary['files_changed']} file{'s' * (summary['files_changed'] != 1)} {verb}, "
        f"{summary['sites_converted']} site{'s' * (summary['sites_converted'] != 1)} converted, "
        f"{summary['sites_left_alone']} left alone" + (f" ({codes})" if codes else "") + ".",
    ]
    verified = summary["verified"]
    if verified:
        total = sum(verified.values())
        runtimes = ", ".join(summary["runtimes"]) or "MindSpore"
        parts = ", ".join(f"{count} {verdict}" for verdict, count in verified.items())
        lines.append(f"Verified by execution on {runtimes}: {total} site-mode runs, {parts}.")
    else:
        lines.append("Not verified by execution (run with `--verify` to prove each rewrite).")
    return lines


def _cell(text: str) -> str:
    """Text for a Markdown table cell: a pipe would end it, a line break the row."""
    return text.replace("|", "\\|").replace("\n", " ")


# GitHub refuses a pull request's body over 65,536 characters: the report keeps under it, with
# room for what a person adds above or below.
BODY_LIMIT = 60_000


def render_markdown(data: dict[str, Any], limit: int = BODY_LIMIT) -> str:
    """A pull request's description: the summary and the reasons sites were left alone first,
    then the changed files, then every site, file by file, folded (`<details>`); the folded part
    is cut at a file where the whole would pass ``limit`` characters, saying how many files it
    leaves out (all of them are in `--report x.json`)."""
    head = ["# ms-migrate migration report", "", *_summary_lines(data), ""]
    head += _left_alone_table(data["summary"]["left_alone_by_code"])
    head += ["Reproduce (on the tree as it was before):", "", "```bash", *data["reproduce"], "```", ""]
    changed = [item for item in data["files"] if item["status"] == "changed"]
    if changed:
        title = "Files that would change" if data["summary"]["dry_run"] else "Changed files"
        head += [f"### {title} ({len(changed)})", ""]
        head += [f"- `{item['path']}`: {_file_line(item)}" for item in changed]
        head.append("")
    sections = [
        _file_section(item) for item in sorted(data["files"], key=lambda item: item["status"] != "changed")
    ]
    opening = ["<details>", f"<summary>Every site, file by file ({len(sections)} files)</summary>", ""]
    closing = ["</details>", ""]
    used = len("\n".join(head + opening + closing)) + 200
    shown: list[str] = []
    for number, section in enumerate(sections):
        size = len("\n".join(section)) + 1
        if used + size > limit:
            left = len(sections) - number
            shown += [
                f"*{left} more file{'s' * (left != 1)} not shown here: every file is in the JSON report "
                "(`--report report.json`).*",
                "",
            ]
            break
        shown += section
        used += size
    return "\n".join(head + opening + shown + closing).rstrip() + "\n"


def _left_alone_table(by_code: dict[str, int]) -> list[str]:
    if not by_code:
        return []
    reasons = all_reasons()
    lines = ["| left alone because | code | sites |", "|---|---|---:|"]
    for code, count in sorted(by_code.items(), key=lambda item: -item[1]):
        reason = reasons.get(code)
        why = reason.summary if reason is not None else code
        lines.append(f"| {_cell(why)} | {code} | {count} |")
    return [*lines, ""]


def _file_line(item: dict[str, Any]) -> str:
    outcomes = Counter(site["outcome"] for site in item["sites"])
    parts = [f"{count} {outcome}" for outcome, count in sorted(outcomes.items())]
    verdicts = Counter(row["verdict"] for row in item["verified"])
    if verdicts:
        parts.append(
            "verified: " + ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
        )
    return "; ".join(parts) or "changed"


def _file_section(item: dict[str, Any]) -> list[str]:
    status = item["status"] + (f": {item['reason']}" if item["reason"] else "")
    out = [f"#### `{item['path']}`", "", f"Status: {status}.", ""]
    if item["sites"]:
        out += ["| line | code | what became of it |", "|---|---|---|"]
        for site in item["sites"]:
            text = site["message"]
            if site["outcome"] == "left alone":
                text = f"left alone ({site['reason']}): {text}"
            elif site["outcome"] == "converted":
                text = f"converted: {text}"
            out.append(f"| {site['line']} | {site['code']} | {_cell(text)} |")
        out.append("")
    if item["verified"]:
        out += ["| site | mode | MindSpore | verdict |", "|---|---|---|---|"]
        for row in item["verified"]:
            verdict = row["verdict"] + (f": {row['reason']}" if row["reason"] else "")
            out.append(f"| {row['site']} | {row['mode']} | {row['runtime']} | {_cell(verdict)} |")
        out.append("")
    return out


def render(run: RunFacts, json_format: bool) -> str:
    data = report_data(run)
    if json_format:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return render_markdown(data)


def verified_rows(report: object) -> tuple[VerifiedRow, ...]:
    """The rows of a ``verify.VerificationReport`` (duck-typed: verify loads only with --verify)."""
    rows = []
    for result in getattr(report, "results", ()):
        verdict = getattr(result.verdict, "value", str(result.verdict))
        site = result.label
        detail = getattr(result, "detail", "")
        rows.append(VerifiedRow(site, result.mode, verdict, result.runtime, result.reason, detail))
    return tuple(rows)
