"""Command line: parse options, run the pipeline, render results. No analysis lives here.

Exit codes (also in README.md):
  0  nothing left to do
  1  --dry-run found changes to make; with --verify, a rewrite differs and was not written
  2  usage error, or some file could not be processed (the others still were); with --verify, a
     rewrite could not be run and was not written
  130 interrupted; files already written are complete, the rest untouched
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click
from rich.console import Console

from ms_migrate import __version__, sources
from ms_migrate.findings import NOTES, REASONS, Kind
from ms_migrate.report import Summary, finding_lines, print_diff, unified_diff
from ms_migrate.rules import ALL_RULES, by_id
from ms_migrate.runner import upgrade_files, upgrade_files_verified
from ms_migrate.verify.command import options_for_upgrade, show_verification, verify_command
from ms_migrate.versions import DetectedTarget, Version, default_target, detect_target

EXIT_OK, EXIT_CHANGES, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parse_version(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[Version]:
    if value is None:
        return None
    try:
        return Version.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


def _resolve_target(explicit: Optional[Version], paths: tuple[Path, ...], err: Console) -> Version:
    if explicit is not None:
        return explicit
    detected: Optional[DetectedTarget] = detect_target(paths[0] if paths else Path.cwd())
    if detected is not None:
        err.print(f"target MindSpore {detected.version} (lowest allowed by {detected.source})")
        return detected.version
    target = default_target()
    err.print(f"target MindSpore {target} (default: no mindspore pin found; use --target-version)")
    return target


def _start(
    paths: tuple[Path, ...],
    target_version: Optional[Version],
    exclude: tuple[str, ...],
    quiet: bool,
    err: Console,
) -> tuple[Version, list[Path], Summary]:
    """Report missing paths, settle the target version, and list the files to process."""
    missing = [path for path in paths if not path.exists()]
    for path in missing:
        err.print(f"{path}: no such file or directory", markup=False)
    target = _resolve_target(target_version, paths, Console(quiet=True) if quiet else err)
    files = list(sources.discover([path for path in paths if path.exists()], exclude))
    return target, files, Summary(errors=len(missing))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ms-migrate")
def main() -> None:
    """Migrate MindSpore autodiff code between API generations."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print a unified diff per file; write nothing.")
@click.option(
    "--target-version",
    callback=_parse_version,
    metavar="X.Y",
    help="MindSpore version the code must run on (default: from the project's pins, else 2.10).",
)
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable).")
@click.option("-j", "--jobs", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("-q", "--quiet", is_flag=True, help="Only errors and left-alone sites.")
@click.option(
    "--verify",
    is_flag=True,
    help="Run each rewritten file before and after on MindSpore; write only rewrites proven equal.",
)
@click.option(
    "--allow-unverified", is_flag=True, help="With --verify: write rewrites that were not proven equal too."
)
def upgrade(
    paths: tuple[Path, ...],
    dry_run: bool,
    target_version: Optional[Version],
    exclude: tuple[str, ...],
    jobs: int,
    quiet: bool,
    verify: bool,
    allow_unverified: bool,
) -> None:
    """Rewrite GradOperation train steps into value_and_grad / grad."""
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    target, files, summary = _start(paths, target_version, exclude, quiet, err)
    verify_exit = EXIT_OK
    try:
        if verify:
            options = options_for_upgrade(paths)
            outcomes = upgrade_files_verified(files, target, not dry_run, options, allow_unverified, jobs)
        else:
            outcomes = upgrade_files(files, target, write=not dry_run, jobs=jobs)
        for outcome in outcomes:
            display = str(outcome.path)
            if outcome.error:
                summary.errors += 1
                err.print(outcome.error, markup=False)
            summary.add(outcome.findings, outcome.changed and not outcome.held_back)
            if dry_run and outcome.changed:
                print_diff(out, unified_diff(display, outcome.before, outcome.after))
            for line in finding_lines(display, outcome.findings, not quiet, outcome.where):
                err.print(line, markup=False)
            verify_exit = max(verify_exit, show_verification(err, outcome, quiet))
    except KeyboardInterrupt:
        err.print("interrupted: files already written are complete; the rest are unchanged")
        sys.exit(EXIT_INTERRUPTED)
    if not quiet or summary.errors:
        err.print(summary.render(dry_run), markup=False)
    if summary.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(max(verify_exit, EXIT_CHANGES if dry_run and summary.files_changed else EXIT_OK))


main.add_command(verify_command)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--target-version", callback=_parse_version, metavar="X.Y", help="As for upgrade.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable).")
@click.option("-j", "--jobs", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("-q", "--quiet", is_flag=True, help="Only sites that can be modernised, and errors.")
def check(
    paths: tuple[Path, ...],
    target_version: Optional[Version],
    exclude: tuple[str, ...],
    jobs: int,
    quiet: bool,
) -> None:
    """Lint only: report legacy autodiff that `upgrade` would modernise; write nothing.

    Exit 1 when some site can be modernised (the pre-commit hook's signal), 2 on errors.
    GradOperation is not deprecated, so these are reported as modernisable, not as errors.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    target, files, summary = _start(paths, target_version, exclude, quiet, err)
    for outcome in upgrade_files(files, target, write=False, jobs=jobs):
        if outcome.error:
            summary.errors += 1
            err.print(outcome.error, markup=False)
        summary.add(outcome.findings, outcome.changed)
        for finding in outcome.findings:
            if finding.kind is Kind.CONVERTED:
                location = f"{outcome.path}:{outcome.where(finding.line)}"
                out.print(f"{location} {finding.code} modernisable: {finding.message}", markup=False)
            elif finding.kind is Kind.LEFT_ALONE and not quiet:
                out.print(finding.render(str(outcome.path), outcome.where(finding.line)), markup=False)
    if not quiet or summary.errors:
        err.print(
            f"{summary.converted} modernisable site{'s' * (summary.converted != 1)} "
            f"in {summary.files_changed} file{'s' * (summary.files_changed != 1)} "
            f"({summary.files_seen} checked; fix with `ms-migrate upgrade`)",
            markup=False,
        )
    if summary.errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_CHANGES if summary.converted else EXIT_OK)


@main.command("rules")
def list_rules() -> None:
    """List the rules and the reason codes for sites left alone."""
    for rule in ALL_RULES:
        click.echo(f"{rule.ID}  {rule.TITLE}  [{rule.SAFETY}, target >= {rule.MIN_TARGET}]")
    for code, reason in REASONS.items():
        click.echo(f"{code}  {reason.slug}: {reason.summary}")
    for code, text in NOTES.items():
        click.echo(f"{code}  note: {text}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Explain a rule (MS101) or a reason code (MSR003)."""
    code = code.upper()
    if code in REASONS:
        reason = REASONS[code]
        click.echo(f"{code} ({reason.slug}): {reason.summary}\n\n{reason.explanation}")
        return
    if code in NOTES:
        click.echo(f"{code}: {NOTES[code]}")
        return
    try:
        rule = by_id(code)
    except KeyError:
        raise click.UsageError(f"unknown code {code!r}; see `ms-migrate rules`") from None
    click.echo(f"{rule.ID}: {rule.TITLE}\n\n{(rule.__doc__ or '').strip()}\n")
    click.echo("Example, before:\n" + rule.BEFORE + "\nafter:\n" + rule.AFTER)
