"""Showing verification results: a rich table per file, the full reasons under it, or JSON."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Optional

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ms_migrate.verify.model import SiteResult, Verdict, VerificationReport, VerifyOptions

_STYLES = {Verdict.EQUAL: "green", Verdict.DIFFERS: "bold red", Verdict.NOT_RUN: "yellow"}
_SHORT_REASON = 48
# Logs and pipes get a table this wide rather than rich's 80 columns, so rows stay on one line.
UNATTENDED_WIDTH = 132


def number(value: Optional[float]) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def verdict_text(result: SiteResult, short: bool = False) -> str:
    if result.verdict is Verdict.EQUAL or not result.reason:
        return result.verdict.value
    reason = result.reason
    if short and len(reason) > _SHORT_REASON:
        reason = reason[: _SHORT_REASON - 1] + "…"
    return f"{result.verdict.value}: {reason}"


def print_report(console: Console, report: VerificationReport) -> None:
    """The table; then each problem in full (tables wrap, and these lines get copied into issues)."""
    if report.ended:
        ended = ", ".join(report.ended)
        line = f"{report.path}: the code under verification left processes running, ended by verify: {ended}"
        console.print(line, markup=False, soft_wrap=True, highlight=False)
    if not report.results:
        console.print(f"{report.path}: {report.summary()}", markup=False, soft_wrap=True)
        return
    if report.release_fixes:  # BEFORE ran with them applied: say so above the rows
        on = report.release_fixes_on
        line = f"{report.path}: {report.release_fixes_text()}, applied to {on} (docs/release-pairs.md)"
        console.print(line, markup=False, soft_wrap=True, highlight=False)
    if report.fixed_modules:
        modules = ", ".join(report.fixed_modules)
        line = f"{report.path}: project modules run with their release fixes, by both versions: {modules}"
        console.print(line, markup=False, soft_wrap=True, highlight=False)
    if not console.is_terminal and console.width < UNATTENDED_WIDTH:
        console.width = UNATTENDED_WIDTH
    table = Table(title=str(report.path), title_justify="left", box=box.SIMPLE_HEAD)
    # Which MindSpore ran each row: "2.8.0", or "2.10.0 -> 1.7.0" for BEFORE and AFTER on two.
    releases = any(result.runtime for result in report.results)
    for heading, justify in (
        ("site", "left"),
        ("mode", "left"),
        *((("MindSpore", "left"),) if releases else ()),
        ("steps", "right"),
        ("max abs diff", "right"),
        ("max rel diff", "right"),
        ("verdict", "left"),
    ):
        table.add_column(heading, justify=justify, no_wrap=heading != "verdict")  # type: ignore[arg-type]
    for result in report.results:
        table.add_row(
            result.label,
            result.mode,
            *((result.runtime or "-",) if releases else ()),
            str(result.steps),
            number(result.max_abs_diff),
            number(result.max_rel_diff),
            Text(verdict_text(result, short=True), style=_STYLES[result.verdict]),
        )
    console.print(table)
    for result in report.results:
        # An equal row's detail qualifies the proof (operators stood in for on CPU): shown too.
        if result.verdict is not Verdict.EQUAL or result.detail:
            line = f"{report.path}: {result.label} ({result.mode}): {verdict_text(result)}"
            console.print(line, markup=False, soft_wrap=True, highlight=False)
            if result.detail:
                console.print(f"    {result.detail}", markup=False, soft_wrap=True, highlight=False)


def options_json(options: VerifyOptions) -> dict[str, Any]:
    data = asdict(options)
    data["modes"] = list(options.modes)
    data["memory_limit_bytes"] = options.memory_limit_bytes
    data.pop("python", None)
    return data


def report_json(report: VerificationReport, options: VerifyOptions, **extra: Any) -> dict[str, Any]:
    return {**extra, **report.to_json(), "options": options_json(options)}
