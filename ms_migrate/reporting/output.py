"""One output layer for diagnostics: text, json, sarif (2.1.0) and GitHub workflow annotations.

Positions: lines and columns count from 1 everywhere, columns in characters (the diagnostics'
columns are characters from 0, the fixes' edits too). The JSON document's schema is
``docs/json-output.schema.json``; ``docs/json-output.md`` describes it.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from urllib.parse import quote

from ms_migrate import __version__
from ms_migrate.core.codes import all_notes, all_reasons
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import all_rules

FORMATS = ("text", "json", "sarif", "github")
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class Record:
    """A diagnostic in a file; ``where`` is the line as users see it (`12`, or `cell 3:4`)."""

    path: str
    where: str
    diagnostic: Diagnostic


@dataclass(frozen=True)
class FileStatus:
    """What became of one file of the run."""

    path: str
    status: str  # "changed" (upgrade writes, or would write, it), "unchanged", "skipped", "error"
    reason: Optional[str] = None  # why skipped, the error, or why a rewrite was held back


@dataclass(frozen=True)
class RunInfo:
    """The run a set of records came from, for the JSON document and SARIF's invocation."""

    command: str  # "check", "upgrade", "downgrade"
    target: str
    # How it was found: "--target-version", "<pyproject>: target-version", "lowest allowed by ...",
    # "default: ..."
    target_source: str
    arguments: tuple[str, ...] = ()  # the command line after the program name
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    baseline: Optional[str] = None
    in_baseline: int = 0  # findings the baseline left out
    dry_run: bool = False
    files: tuple[FileStatus, ...] = ()
    exit_code: int = 0
    working_directory: str = field(default_factory=os.getcwd)
    provenance: Optional[dict[str, str]] = None  # git: repositoryUri, revisionId, branch, root


JSON_FORMAT = 1


def without_options(arguments: Sequence[str], options: Sequence[str]) -> list[str]:
    """A command line without ``options`` (each takes a value: `--shard 2/4`, `--shard=2/4`)."""
    kept, skip = [], False
    for argument in arguments:
        if skip:
            skip = False
        elif argument in options:
            skip = True
        elif not argument.startswith(tuple(f"{option}=" for option in options)):
            kept.append(argument)
    return kept


def render(records: Sequence[Record], fmt: str, run: Optional[RunInfo] = None) -> str:
    if fmt == "json":
        return json.dumps(_valid_unicode(json_document(records, run)), indent=2, ensure_ascii=False) + "\n"
    if fmt == "sarif":
        return json.dumps(_valid_unicode(sarif(records, run)), indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return "".join(_github(record) + "\n" for record in records)
    return "".join(text_line(record) + "\n" for record in records)


FIXABLE_MARK = "[*]"  # ruff's: `upgrade` fixes this one


def text_line(record: Record) -> str:
    diagnostic = record.diagnostic
    mark = f" {FIXABLE_MARK}" if diagnostic.fixable else ""
    path = quoted_path(record.path)
    return f"{path}:{record.where}:{diagnostic.col + 1}: {diagnostic.code}{mark} {diagnostic.message}"


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(text: str, quotes: bool) -> str:
    out = []
    for char in text:
        if quotes and char in '"\\':
            out.append("\\" + char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif 0xDC80 <= ord(char) <= 0xDCFF:  # a byte no UTF-8 decodes (os.fsdecode's surrogateescape)
            out.append(f"\\{ord(char) - 0xDC00:03o}")
        else:
            out.append("".join(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass")))
    return "".join(out)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_unicode(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings written as the byte it stands for
    (`bad\\xff.py` for a file name that is not UTF-8): JSON and SARIF must be UTF-8, and a name
    Linux allows is not always. SARIF's URIs keep the bytes exactly (percent-encoded)."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return _SURROGATE.sub(lambda match: _byte_escape(match.group()), value)
    if isinstance(value, dict):
        return {_valid_unicode(key): _valid_unicode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_valid_unicode(item) for item in value]
    return value


def _byte_escape(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def quoted_path(path: str) -> str:
    """A path as a line of output shows it: as it is where every character prints, else in double
    quotes with C escapes, as git quotes such names (`"a\\nb.py"`, a byte that is not UTF-8 as
    `\\377`): a file name cannot forge a line of the output, nor fail to encode."""
    return path if path.isprintable() else f'"{_escaped(path, quotes=True)}"'


def one_line(message: str) -> str:
    """A one-line message (an error naming a file) with what does not print escaped: a newline in
    a file name stays inside its line."""
    return message if message.isprintable() else _escaped(message, quotes=False)


def statistics(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per code, most frequent first: its name, how many findings, how many `upgrade` fixes."""
    rules = {rule.code: rule.name for rule in all_rules()}
    reasons, notes = all_reasons(), all_notes()
    counts: dict[str, list[int]] = {}
    for record in records:
        count = counts.setdefault(record.diagnostic.code, [0, 0])
        count[0] += 1
        count[1] += record.diagnostic.fixable
    rows = []
    for code, (count, fixable) in sorted(counts.items(), key=lambda item: (-item[1][0], item[0])):
        name = rules.get(code) or (reasons[code].slug if code in reasons else "note" if code in notes else "")
        rows.append({"code": code, "name": name, "count": count, "fixable": fixable})
    return rows


def render_statistics(records: Sequence[Record], fmt: str) -> str:
    """``check --statistics``: json as a list of rows, every other format as aligned text (ruff's
    layout: count, code, [*] when `upgrade` fixes every finding of the code, name; how many it
    fixes when only some)."""
    rows = statistics(records)
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    if not rows:
        return ""
    width = max(len(str(row["count"])) for row in rows)
    code_width = max(len(row["code"]) for row in rows)
    lines = []
    for row in rows:
        every = row["fixable"] == row["count"]
        mark = FIXABLE_MARK if every else " " * len(FIXABLE_MARK)
        some = f" ({row['fixable']} fixable)" if row["fixable"] and not every else ""
        line = f"{row['count']:>{width}}  {row['code']:<{code_width}}  {mark} {row['name']}{some}"
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def json_document(records: Sequence[Record], run: Optional[RunInfo]) -> dict[str, Any]:
    """``--format json``: one object, what CI needs to trust a run without reading stderr."""
    run = run or RunInfo("", "", "")
    statuses = Counter(item.status for item in run.files)
    findings = [_json(record) for record in records]
    return {
        "ms-migrate-output": JSON_FORMAT,
        "tool": {"name": "ms-migrate", "version": __version__},
        "command": run.command,
        "arguments": list(run.arguments),
        "target": {"version": run.target, "source": run.target_source},
        "settings": {
            "select": list(run.select),
            "ignore": list(run.ignore),
            "exclude": list(run.exclude),
            "baseline": run.baseline,
            "dry_run": run.dry_run,
        },
        "files": [{"path": item.path, "status": item.status, "reason": item.reason} for item in run.files],
        "findings": findings,
        "counts": {
            "files": len(run.files),
            **{status: statuses[status] for status in ("changed", "unchanged", "skipped", "error")},
            "findings": len(findings),
            "fixable": sum(item["fixable"] for item in findings),
            "in_baseline": run.in_baseline,
            "by_code": dict(sorted(Counter(item["code"] for item in findings).items())),
        },
        "exit_code": run.exit_code,
    }


def _position(position: tuple[int, int]) -> dict[str, int]:
    return {"line": position[0], "column": position[1] + 1}


def _json(record: Record) -> dict[str, Any]:
    diagnostic = record.diagnostic
    data: dict[str, Any] = {
        "path": record.path,
        "line": diagnostic.line,
        "location": record.where,
        "column": diagnostic.col + 1,
        "end_line": diagnostic.end[0],
        "end_column": diagnostic.end[1] + 1,
        "code": diagnostic.code,
        "severity": diagnostic.severity.value,
        "message": diagnostic.message,
        "fixable": diagnostic.fixable,
        "fix": None,
        "replacement": diagnostic.replacement,
    }
    if diagnostic.fix is not None:
        data["fix"] = {
            "safety": diagnostic.fix.safety,
            "description": diagnostic.fix.description,
            "edits": [
                {"start": _position(edit.start), "end": _position(edit.end), "replacement": edit.replacement}
                for edit in diagnostic.fix.edits
            ],
        }
    return data


def _escape(text: str, properties: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if properties else text


def _github(record: Record) -> str:
    diagnostic = record.diagnostic
    properties = (
        f"file={_escape(record.path, True)},line={diagnostic.line},col={diagnostic.col + 1},"
        f"endLine={diagnostic.end[0]},endColumn={diagnostic.end[1] + 1},title={diagnostic.code}"
    )
    mark = f"{FIXABLE_MARK} " if diagnostic.fixable else ""
    return f"::{_GITHUB_COMMAND[diagnostic.severity]} {properties}::{_escape(mark + diagnostic.message)}"


def _rule_descriptors(codes: Iterable[str]) -> list[dict[str, Any]]:
    """SARIF rule metadata for every code that occurs: rules, reason codes and notes."""
    rules = {rule.code: rule for rule in all_rules()}
    reasons, notes = all_reasons(), all_notes()
    descriptors = []
    for code in sorted(set(codes)):
        if code in rules:
            rule = rules[code]
            short, full, level = rule.title, rule.description or rule.title, _SARIF_LEVEL[rule.severity]
        elif code in reasons:
            reason = reasons[code]
            short, full, level = reason.summary, reason.explanation, "note"
        else:
            short = full = notes[code].text if code in notes else code
            level = "note"
        descriptor: dict[str, Any] = {
            "id": code,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full},
            # What code scanning shows under "Show more": the same text, as `ms-migrate explain`.
            "help": {"text": full, "markdown": full},
            "defaultConfiguration": {"level": level},
        }
        link = _HELP_LINK.search(full)
        if link is not None:  # the MindSpore page or release note the rule's docstring cites
            descriptor["helpUri"] = link.group().rstrip(".,;:")
        descriptors.append(descriptor)
    return descriptors


_HELP_LINK = re.compile(r"https://[^\s)>\]`'\"]+")


def _region(start: tuple[int, int], end: tuple[int, int]) -> dict[str, int]:
    return {"startLine": start[0], "startColumn": start[1] + 1, "endLine": end[0], "endColumn": end[1] + 1}


def file_uri(path: str) -> str:
    """An absolute path as a file: URI, percent-encoded (spaces, non-ASCII: RFC 3986)."""
    return Path(os.path.abspath(path)).as_uri()


def _artifact(path: str, root: Optional[str]) -> dict[str, str]:
    """A result's file: relative to the checkout (``uriBaseId`` SRCROOT) when inside it, as code
    scanning wants; else an absolute file: URI. Always percent-encoded."""
    if root is not None:
        try:
            relative = Path(os.path.realpath(path)).relative_to(root).as_posix()
        except ValueError:
            pass
        else:
            return {"uri": quote(os.fsencode(relative), safe="/"), "uriBaseId": "SRCROOT"}
    if os.path.isabs(path):
        return {"uri": file_uri(path)}
    return {"uri": quote(os.fsencode(Path(path).as_posix()), safe="/")}


def sarif(records: Sequence[Record], run_info: Optional[RunInfo] = None) -> dict[str, Any]:
    descriptors = _rule_descriptors(record.diagnostic.code for record in records)
    index = {descriptor["id"]: position for position, descriptor in enumerate(descriptors)}
    provenance = run_info.provenance if run_info is not None else None
    root = provenance["root"] if provenance is not None else None
    results = []
    for record in records:
        diagnostic = record.diagnostic
        location = {"artifactLocation": _artifact(record.path, root)}
        result: dict[str, Any] = {
            "ruleId": diagnostic.code,
            "ruleIndex": index[diagnostic.code],
            "level": _SARIF_LEVEL[diagnostic.severity],
            "message": {"text": diagnostic.message},
            "locations": [
                {
                    "physicalLocation": {
                        **location,
                        "region": _region((diagnostic.line, diagnostic.col), diagnostic.end),
                    }
                }
            ],
        }
        result["properties"] = {"fixable": diagnostic.fixable}
        if diagnostic.replacement is not None:
            result["properties"]["replacement"] = diagnostic.replacement
        if diagnostic.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": diagnostic.fix.description or f"{diagnostic.fix.safety} fix"},
                    "artifactChanges": [
                        {
                            **location,
                            "replacements": [
                                {
                                    "deletedRegion": _region(edit.start, edit.end),
                                    "insertedContent": {"text": edit.replacement},
                                }
                                for edit in diagnostic.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    driver = {
        "name": "ms-migrate",
        "version": __version__,
        "informationUri": "https://www.mindspore.cn/",
        "rules": descriptors,
    }
    run: dict[str, Any] = {"tool": {"driver": driver}, "results": results}
    if run_info is not None:
        run["invocations"] = [
            {
                "commandLine": " ".join(["ms-migrate", *run_info.arguments]),
                "arguments": list(run_info.arguments),
                "exitCode": run_info.exit_code,
                # SARIF: successful means the tool ran to the end, whatever it found.
                "executionSuccessful": run_info.exit_code in (0, 1),
                "workingDirectory": {"uri": file_uri(run_info.working_directory) + "/"},
                "properties": {"target": run_info.target, "targetSource": run_info.target_source},
            }
        ]
    if provenance is not None:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": file_uri(provenance["root"]) + "/"}}
        vcs = {"repositoryUri": provenance["repositoryUri"], "revisionId": provenance["revisionId"]}
        if provenance.get("branch"):
            vcs["branch"] = provenance["branch"]
        run["versionControlProvenance"] = [{**vcs, "mappedTo": {"uriBaseId": "SRCROOT"}}]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
