"""Joining the ``--format json`` documents of sharded runs (``--shard K/N``) into the document the
unsharded run gives: its files in the order a run lists them, their findings with them, counts
summed, the worst exit code. Pure: documents in, a document out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from ms_migrate.files.sources import walk_order
from ms_migrate.reporting.output import JSON_FORMAT, without_options

# What must agree between the shards of one run.
_SAME = ("command", "target", "settings")


class MergeError(Exception):
    pass


def merge_documents(documents: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """``documents`` (from the files ``names``, for messages) as one. Raises MergeError for a
    document that is not ms-migrate's, shards of different runs, or a file in two shards."""
    if not documents:
        raise MergeError("nothing to merge")
    for document, name in zip(documents, names):
        if not isinstance(document, dict) or document.get("ms-migrate-output") != JSON_FORMAT:
            raise MergeError(f"{name}: not an ms-migrate --format json document (format {JSON_FORMAT})")
    first = documents[0]
    for document, name in zip(documents[1:], names[1:]):
        for key in _SAME:
            if document[key] != first[key]:
                raise MergeError(f"{name}: its {key} differs from {names[0]}'s: shards of different runs")
    _check_complete([_shard_of(document) for document in documents], names)
    owner: dict[str, str] = {}
    files, findings = [], []
    for document, name in zip(documents, names):
        for item in document["files"]:
            if item["path"] in owner:
                raise MergeError(f"{item['path']} is in {owner[item['path']]} and {name}: shards overlap")
            owner[item["path"]] = name
            files.append(item)
        findings += document["findings"]
    # A run lists the paths it skipped, then its files as discovery walks them.
    walked = sorted(files, key=lambda item: (item["status"] != "skipped", walk_order(Path(item["path"]))))
    order = {item["path"]: position for position, item in enumerate(walked)}
    files.sort(key=lambda item: order[item["path"]])
    findings.sort(key=lambda item: order.get(item["path"], len(order)))  # stable: a file's own order
    statuses = Counter(item["status"] for item in files)
    merged = {key: first[key] for key in first}
    merged["arguments"] = without_options(first["arguments"], ("--shard",))
    merged["files"], merged["findings"] = files, findings
    merged["counts"] = {
        "files": len(files),
        **{status: statuses[status] for status in ("changed", "unchanged", "skipped", "error")},
        "findings": len(findings),
        "fixable": sum(bool(item["fixable"]) for item in findings),
        "in_baseline": sum(document["counts"]["in_baseline"] for document in documents),
        "by_code": dict(sorted(Counter(item["code"] for item in findings).items())),
    }
    merged["exit_code"] = max(document["exit_code"] for document in documents)
    return merged


def _shard_of(document: dict[str, Any]) -> Optional[tuple[int, int]]:
    """(K, N) of the `--shard K/N` a document's run was given; None for an unsharded run."""
    arguments = [str(item) for item in document.get("arguments", [])]
    for position, argument in enumerate(arguments):
        value = None
        if argument == "--shard" and position + 1 < len(arguments):
            value = arguments[position + 1]
        elif argument.startswith("--shard="):
            value = argument.partition("=")[2]
        if value is not None:
            part, _, total = value.partition("/")
            if part.isdigit() and total.isdigit():
                return int(part), int(total)
    return None


def _check_complete(shards: Sequence[Optional[tuple[int, int]]], names: Sequence[str]) -> None:
    """Sharded documents merge only as exactly shards 1 to N of one N: 2 of 3 shards gave two
    thirds of the files with no word."""
    if all(shard is None for shard in shards):
        return  # unsharded runs over separate paths
    for shard, name in zip(shards, names):
        if shard is None:
            raise MergeError(f"{name}: not a shard (its run had no --shard), merged with shards")
    totals = sorted({total for _, total in shards})  # type: ignore[misc]
    if len(totals) > 1:
        raise MergeError(f"shards of different splits (of {' and of '.join(map(str, totals))})")
    (total,) = totals
    given = Counter(part for part, _ in shards)  # type: ignore[misc]
    twice = sorted(part for part, count in given.items() if count > 1)
    if twice:
        raise MergeError(f"shard {twice[0]}/{total} is given twice")
    missing = [f"{part}/{total}" for part in range(1, total + 1) if part not in given]
    if missing:
        raise MergeError(f"shard {', '.join(missing)} missing: the merge would lack its files")
