"""`ms-migrate verify BEFORE AFTER`: the command line for verification by execution.

Exit codes: 0 every site verified equal; 1 some site differs; 2 some site could not be run (the
reason is shown), or a usage error; 3 --sandbox was asked for and this machine cannot sandbox
(nothing ran). Like diff(1), 2 wins over 1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import click
from rich.console import Console

from ms_migrate.facts.versions import Version
from ms_migrate.files import sources
from ms_migrate.reporting.report import make_console
from ms_migrate.verify.config import OPTION_SETTINGS, ConfigError, apply_settings, find_config, modes_for
from ms_migrate.verify.devices import DeviceSpecError, parse_spec, visible_ids
from ms_migrate.verify.model import (
    DEFAULT_ATOL,
    DEFAULT_IMPORT_TIMEOUT_S,
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_RTOL,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    EXIT_EQUAL,
    EXIT_NO_SANDBOX,
    EXIT_NOT_RUN,
    VerificationReport,
    VerifyOptions,
)
from ms_migrate.verify.render import print_report, report_json
from ms_migrate.verify.sandbox import SandboxUnavailable, check
from ms_migrate.verify.scripts import verify_scripts
from ms_migrate.verify.supervisor import worker_environment
from ms_migrate.verify.verifier import verify_files

if TYPE_CHECKING:
    from ms_migrate.application.runner import FileOutcome

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _explicit(ctx: click.Context) -> set[str]:
    """Options given on the command line (they win over the project's pyproject.toml)."""
    given = set()
    for key in OPTION_SETTINGS:
        if ctx.get_parameter_source(key.replace("-", "_")) is not click.core.ParameterSource.DEFAULT:
            given.add(key)
    return given


@click.command("verify")
@click.argument("before", type=_FILE)
@click.argument("after", type=_FILE)
@click.option(
    "--script", is_flag=True, help="Run the two files as scripts and compare the numbers they print."
)
@click.option(
    "--device",
    metavar="[CPU|GPU|Ascend][:IDS]",
    default="CPU",
    show_default=True,
    help="Passed to mindspore.set_device; with ids (GPU:0,1 or Ascend:0-3) each worker runs on its own "
    "accelerator (default for GPU and Ascend: the visible ones).",
)
@click.option("--mode", type=click.Choice(["pynative", "graph", "both"]), default="both", show_default=True)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    default=DEFAULT_STEPS,
    show_default=True,
    help="Train steps per run.",
)
@click.option(
    "--rtol",
    type=click.FloatRange(min=0),
    default=DEFAULT_RTOL,
    show_default=True,
    help="Relative tolerance: |after-before| <= atol + rtol*|before| (float32 rounding, with margin).",
)
@click.option(
    "--atol",
    type=click.FloatRange(min=0),
    default=DEFAULT_ATOL,
    show_default=True,
    help="Absolute tolerance.",
)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="Per site and mode, imports not counted (per run with --script).",
)
@click.option(
    "--import-timeout",
    type=click.FloatRange(min=1),
    default=DEFAULT_IMPORT_TIMEOUT_S,
    show_default=True,
    metavar="SECONDS",
    help="Per import of BEFORE, AFTER or the factory's module (at most --timeout); "
    "a module that never finishes importing is reported after this long.",
)
@click.option(
    "--memory-limit",
    type=click.IntRange(min=0),
    default=None,
    metavar="MB",
    help=f"Address-space limit per worker [default: {DEFAULT_MEMORY_LIMIT_MB} on CPU, "
    "none on GPU/Ascend; 0: none].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes, each importing MindSpore once [default: one per core, at most 4].",
)
@click.option(
    "--python",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Interpreter that has MindSpore [default: this one].",
)
@click.option(
    "--target-version",
    "target_version",
    default=None,
    metavar="X.Y",
    help="The MindSpore AFTER is written for: it runs on that runtime (see `ms-migrate runtime list`), "
    "and so does BEFORE unless --before-version.",
)
@click.option(
    "--before-version",
    default=None,
    metavar="X.Y",
    help="The MindSpore BEFORE is written for, when it is another (a downgrade's input: the newest).",
)
@click.option(
    "--sandbox/--no-sandbox",
    default=False,
    help="Linux: run the code where it can write only its scratch directory (unshare user+mount "
    f"namespaces, everything else read-only). Where that is impossible, exit {EXIT_NO_SANDBOX} "
    "and run nothing.",
)
@click.pass_context
def verify_command(ctx: click.Context, **flags: Any) -> None:
    """Run BEFORE and AFTER (two versions of one file) on MindSpore and compare them.

    Every top-level train-step Cell and grad function that differs is run for --steps steps with
    seeded inputs, in each mode, and its returned values, parameters and optimizer state are
    compared after every step. Exit 0: all equal; 1: some site differs; 2: some site could not
    be run; 3: --sandbox is not available here.

    This imports and runs BEFORE and AFTER with your rights. ms-migrate writes nothing and starts
    the code in a temporary directory, but the code itself can write or delete any file you can,
    by absolute path. Verify only code you would run yourself, or use --sandbox.
    """
    request = VerifyRequest(**flags)
    options = request.options(_explicit(ctx))
    try:
        if request.script:
            report = verify_scripts(request.before, request.after, options)
        else:
            report = verify_files(request.before, request.after, options)
    except (ConfigError, sources.SourceError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_NOT_RUN)
    except SandboxUnavailable as error:
        click.echo(f"error: {error}; nothing was run", err=True)
        sys.exit(EXIT_NO_SANDBOX)
    request.show(report, options)
    sys.exit(report.exit_code)


@dataclass(frozen=True)
class VerifyRequest:
    """What one `verify` was asked, as its options parse."""

    before: Path
    after: Path
    script: bool
    device: str
    mode: str
    steps: int
    rtol: float
    atol: float
    output_format: str
    timeout: float
    import_timeout: float
    memory_limit: Optional[int]
    workers: Optional[int]
    python: Optional[str]
    target_version: Optional[str]
    before_version: Optional[str]
    sandbox: bool

    def options(self, explicit: set[str]) -> VerifyOptions:
        """The options of the run: these, on the runtimes the versions name, under the project's
        [tool.ms-migrate.verify] table where an option was not given (``explicit``: those that
        were). A table that cannot be read exits 2."""
        try:
            device, device_ids = parse_spec(self.device)
        except DeviceSpecError as error:
            raise click.BadParameter(str(error), param_hint="'--device'") from None
        options = VerifyOptions(
            device=device,
            device_ids=device_ids or visible_ids(device),
            modes=modes_for(self.mode),
            steps=self.steps,
            rtol=self.rtol,
            atol=self.atol,
            timeout_s=self.timeout,
            import_timeout_s=self.import_timeout,
            memory_limit_mb=self.memory_limit,
            workers=self.workers,
            python=self.python,
            sandbox=self.sandbox,
        )
        if self.target_version or self.before_version:
            if self.python:
                message = "--python names one interpreter for both versions: drop it, or the versions"
                raise click.UsageError(message)
            options = _on_runtimes(options, self.target_version, self.before_version, self.after)
        try:
            return apply_settings(options, find_config(self.before), explicit)
        except ConfigError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_NOT_RUN)

    def show(self, report: VerificationReport, options: VerifyOptions) -> None:
        if self.output_format == "json":
            before, after = str(self.before), str(self.after)
            data = report_json(report, options, before=before, after=after, script=self.script)
            click.echo(json.dumps(data, indent=2))
        else:
            console = make_console(soft_wrap=False)
            print_report(console, report)
            console.print(report.summary(), markup=False, soft_wrap=True)


def _parse(value: str, option: str) -> Version:
    try:
        return Version.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint=option) from error


def _on_runtimes(
    options: VerifyOptions, target: Optional[str], before: Optional[str], start: Path
) -> VerifyOptions:
    """``--target-version`` / ``--before-version``: the interpreters of those runtimes, or exit 2
    saying which cannot be had here."""
    from ms_migrate import runtimes
    from ms_migrate.frontends.runtime_command import configured

    at_hand = runtimes.available(configured(start))
    after_version = _parse(target, "--target-version") if target else None
    before_version = _parse(before, "--before-version") if before else after_version
    chosen = {}
    for label, version in (("AFTER", after_version), ("BEFORE", before_version)):
        if version is None:  # only --before-version: AFTER on this interpreter
            continue
        try:
            plan = runtimes.for_rewrite(version, False, at_hand)
        except runtimes.RuntimeUnavailable as error:
            click.echo(f"error: {label}: {error}; nothing was run", err=True)
            sys.exit(EXIT_NOT_RUN)
        for note in plan.notes:
            click.echo(f"note: {label}: {note}", err=True)
        chosen[label] = plan.after.python
    return options.but(python=chosen.get("AFTER"), before_python=chosen.get("BEFORE"))


# --- upgrade --verify: the two hooks ms_migrate/frontends/cli.py calls ------------------------------------


def options_for_upgrade(
    paths: Sequence[Path], target: Optional[Version] = None, downgrade: bool = False
) -> VerifyOptions:
    """Defaults, adjusted by the [tool.ms-migrate.verify] table of the first path's project, on
    the runtimes the rewrite is written for: an upgrade's two versions on the target's, a
    downgrade's BEFORE on the newest at hand and AFTER on the target's.

    A table that asks for ``sandbox = true`` on a machine that cannot sandbox stops the run here,
    before anything is migrated, with exit 3; so does a target no runtime here can run, with exit 2.
    """
    start = paths[0] if paths else Path.cwd()
    try:
        options = apply_settings(VerifyOptions(), find_config(start), set())
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
    if target is not None:
        options = _rewrite_runtimes(options, target, downgrade, start)
    if options.sandbox:
        try:
            check(options.interpreter, worker_environment(None, options.device))
        except SandboxUnavailable as error:
            click.echo(f"error: {error} ([tool.ms-migrate.verify] sandbox = true); nothing was run", err=True)
            sys.exit(EXIT_NO_SANDBOX)
    return options


def with_requirements(options: VerifyOptions, paths: Sequence[Path]) -> VerifyOptions:
    """``--install-requirements``: what the requirements file nearest each of ``paths`` names,
    installed for the runtime(s) that run the versions (``ms_migrate.verify.requirements``), each
    file's into a folder of its own; and said."""
    from ms_migrate import runtimes
    from ms_migrate.verify.requirements import install, read_requirements, requirement_files

    files = requirement_files(paths)
    if not files:
        click.echo("--verify: no requirements.txt above the files: nothing to install", err=True)
    installed = list(options.installed)
    for file in files:
        wanted = read_requirements([file])
        for line in wanted.refused:
            click.echo(f"note: --install-requirements: {file}: left out {line}", err=True)
        for python in dict.fromkeys(filter(None, (options.interpreter, options.before_python))):
            made = install(python, wanted, runtimes.cache_root() / ".requirements")
            if made.folders:
                installed.append((os.path.abspath(python), str(file), tuple(map(str, made.folders))))
            if wanted.specs:
                click.echo(f"--verify: {file}: {made.said()}", err=True)
    return options.but(installed=tuple(installed + _imported_installed(options, paths, installed)))


def _imported_installed(
    options: VerifyOptions, paths: Sequence[Path], installed: Sequence[tuple[str, str, tuple[str, ...]]]
) -> list[tuple[str, str, tuple[str, ...]]]:
    """The packages of ``requirements.IMPORTED`` a file imports, when neither the runtime nor its
    requirements file gives them, installed for that file; said once for all."""
    from ms_migrate import runtimes
    from ms_migrate.verify.requirements import (
        IMPORTED,
        Installed,
        Requirements,
        folders_hold,
        imported_packages,
        install,
        installed_for,
        runtime_lacks,
    )

    imports = {path: imported_packages(path) for path in paths}
    wanted = tuple(sorted({name for names in imports.values() for name in names}))
    entries = []
    for python in dict.fromkeys(filter(None, (options.interpreter, options.before_python))):
        lacking = runtime_lacks(python, wanted)
        said, files = Installed(), 0
        for path, names in imports.items():
            named = installed_for(path, installed).get(os.path.abspath(python), [])
            missing = [name for name in names if name in lacking and not folders_hold(named, name)]
            specs = sorted({IMPORTED[name] for name in missing})
            if not specs:
                continue
            made = install(python, Requirements(specs=tuple(specs)), runtimes.cache_root() / ".requirements")
            entries.append((os.path.abspath(python), str(path.resolve()), tuple(map(str, made.folders))))
            said.distributions += made.distributions
            said.failed += [line for line in made.failed if line not in said.failed]
            files += 1
        if files:
            heading = f"--verify: {files} file(s) import what no requirements file names"
            click.echo(f"{heading}: {said.said()}", err=True)
    return entries


def _rewrite_runtimes(options: VerifyOptions, target: Version, downgrade: bool, start: Path) -> VerifyOptions:
    from ms_migrate import runtimes
    from ms_migrate.frontends.runtime_command import configured

    try:
        plan = runtimes.for_rewrite(target, downgrade, runtimes.available(configured(start)))
    except runtimes.RuntimeUnavailable as error:
        click.echo(f"error: --verify: {error}; nothing was migrated", err=True)
        sys.exit(EXIT_NOT_RUN)
    for note in plan.notes:
        click.echo(f"note: --verify: {note}", err=True)
    if plan.before == plan.after:
        click.echo(f"--verify: runs on {plan.after.label}", err=True)
    else:
        click.echo(f"--verify: BEFORE runs on {plan.before.label}, AFTER on {plan.after.label}", err=True)
    return options.but(python=plan.after.python, before_python=plan.before.python)


def show_verification(err: Console, outcome: FileOutcome, quiet: bool) -> int:
    """Print an outcome's verification table (unless quiet and equal); return its exit status.

    A rewrite that was held back gives 1 (it differs) or 2 (it could not be run); one that was
    verified equal, or written anyway with --allow-unverified, gives 0.
    """
    report = outcome.verification
    if report is None:
        if outcome.held_back:  # a notebook: never run, so never proven
            err.print(f"{outcome.path}: {outcome.held_back}", markup=False, soft_wrap=True)
            return EXIT_NOT_RUN
        return EXIT_EQUAL
    if not (quiet and report.ok):
        print_report(err, report)
    if outcome.held_back:
        err.print(f"{outcome.path}: {outcome.held_back}", markup=False, soft_wrap=True)
        return report.exit_code
    return EXIT_EQUAL
