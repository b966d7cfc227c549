"""Command line: parse options, run the pipeline, render results. No analysis lives here.

Exit codes (also in README.md):
  0  nothing left to do
  1  --dry-run found changes to make; with --verify, a rewrite differs and was not written
  2  usage error, or some file could not be processed (the others still were); with --verify, a
     rewrite could not be run and was not written
  130 interrupted; files already written are complete, the rest untouched
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import click

from ms_migrate import __version__
from ms_migrate.application.check import as_reported, downgraders, rewriters
from ms_migrate.application.config import Config, ConfigError, load_config
from ms_migrate.application.explain import code_named, explanation
from ms_migrate.application.listing import listed_sources
from ms_migrate.application.runner import (
    FileOutcome,
    migrate_bytes,
    migrate_declining,
    upgrade_files,
    upgrade_files_verified,
    write_outcome,
)
from ms_migrate.application.target import TargetError, resolve_target
from ms_migrate.core.codes import all_notes, all_reasons, registry
from ms_migrate.core.engine import CHECK_KINDS, DOWNGRADE_KINDS, UPGRADE_KINDS, FileResult
from ms_migrate.diagnostics import Diagnostic, source_lines
from ms_migrate.facts.versions import (
    Version,
    default_target,
    parse_target,
)
from ms_migrate.files import sources
from ms_migrate.files.cache import DIRECTORY, cache_directory
from ms_migrate.files.project_root import project_folders
from ms_migrate.reporting.output import (
    FORMATS,
    FileStatus,
    Record,
    RunInfo,
    one_line,
    quoted_path,
    render,
    render_statistics,
)
from ms_migrate.reporting.report import Stream, Summary, print_diff, unified_diff
from ms_migrate.rules.base import all_rules, rule_for

if TYPE_CHECKING:  # a baseline and a migration report are imported by the runs that ask for one
    from ms_migrate.reporting.baseline import Baseline
    from ms_migrate.reporting.baseline import Finding as BaselineFinding
    from ms_migrate.reporting.migration_report import ReportFile

EXIT_OK, EXIT_CHANGES, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
PROGRESS_MIN_FILES = 50  # fewer are done before a bar would be worth looking at


def _parse_version(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[Version]:
    if value is None:
        return None
    try:
        return parse_target(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


Shard = tuple[int, int]


def _parse_shard(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[Shard]:
    if value is None:
        return None
    part, _, total = value.partition("/")
    if not (part.isdigit() and total.isdigit() and 1 <= int(part) <= int(total)):
        raise click.BadParameter(f"{value!r} is not K/N with 1 <= K <= N (e.g. 2/4)")
    return int(part), int(total)


def in_shard(path: Path, shard: Shard, root: Path) -> bool:
    """Whether ``path`` belongs to shard K of N: by a checksum of its path relative to ``root``
    (the repository's), so that a file keeps its shard when others are added or removed, and
    machines that name the tree differently (`.` and `./src`, other checkouts) split it alike."""
    part, total = shard
    absolute = Path(os.path.abspath(path))
    try:
        name = absolute.relative_to(root).as_posix()
    except ValueError:
        name = absolute.as_posix()
    return zlib.crc32(name.encode("utf-8", "surrogateescape")) % total == part - 1


class _OutputFile(click.Path):
    """A file the run writes when it ends: its folder must exist when the run starts, so a typo
    costs no run (``-o out/x.json`` into a missing ``out/`` used to fail after the whole run)."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: object, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Path:
        path = super().convert(value, param, ctx)
        folder = Path(path).parent
        if not folder.is_dir():
            self.fail(f"{path}: no folder {folder}", param, ctx)
        return Path(path)


OUTPUT_FILE = _OutputFile()


@dataclass
class _Started:
    """What a run settles before its first file: the target and how it was found, the
    configuration, the files to read, and the summary that already counts what was skipped."""

    target: Version
    source: str
    config: Config
    files: list[Path]
    summary: Summary


def _start(
    request: RunRequest,
    err: Stream,
    stdin: Optional[Path] = None,
    needs_target: bool = False,
    reads_only: bool = False,
) -> _Started:
    """Read the configuration, report missing paths, settle the target version, list the files.
    ``stdin``: the name stdin's text stands for, which need not exist; no file is listed."""
    paths = request.paths if stdin is None else (stdin,)
    summary = Summary()
    for path in [] if stdin is not None else [path for path in paths if not path.exists()]:
        err.print(f"{path}: no such file or directory")
        summary.skip(path, "no such file or directory")
    try:
        registry()  # a code two rules claim, or a rule that cannot load, stops the run here
    except ValueError as error:
        raise click.UsageError(f"rules: {error}") from None
    try:
        config = load_config(paths[0] if paths else Path.cwd())
        config = config.with_flags(request.select, request.ignore_codes, request.exclude)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    target, source, config = _settled_target(request, paths, config, err, needs_target, reads_only)
    cache_dir = _cache_dir(request.no_cache, request.paths)
    files = [] if stdin is not None else _listed_files(paths, config, summary, err, cache_dir)
    return _Started(target, source, config, files, summary)


def _settled_target(
    request: RunRequest, paths: tuple[Path, ...], config: Config, err: Stream, needs: bool, reads_only: bool
) -> tuple[Version, str, Config]:
    """The target, how it was found, and the configuration with the release the code is written
    for. Even with -q the choice is said: the target decides what is written."""
    try:
        target, source, written_for = resolve_target(
            request.target_version or config.target_version,
            paths,
            err,
            needs,
            reads_only,
            request.from_version or config.written_for,
        )
    except TargetError as error:
        raise click.UsageError(str(error)) from None
    if source == "explicit":
        explicit = request.target_version is not None
        source = "--target-version" if explicit else f"{config.source}: target-version"
    config = dataclasses.replace(config, written_for=written_for)
    if written_for is not None and written_for != target:
        # What MS222/MS223 measure from: said once, as the target is.
        err.print(f"code written for MindSpore {written_for}: changes of meaning since are reported")
    return target, source, config


def _listed_files(
    paths: tuple[Path, ...], config: Config, summary: Summary, err: Stream, cache_dir: Optional[Path]
) -> list[Path]:
    """The Python files and notebooks under ``paths``; a named file that is neither is skipped."""
    named = {path for path in paths if path.is_file()}
    files = []
    for path in listed_sources([path for path in paths if path.exists()], config.exclude, cache_dir):
        if named and path in named and not sources.is_python_source(path):
            err.print(f"{path}: not a Python file or notebook; skipped")
            summary.skip(path, "not a Python file or notebook")
            continue
        files.append(path)
    if not files and not summary.skipped:
        shown = ", ".join(str(path) for path in paths)
        err.print(f"warning: no Python files or notebooks found in {shown}")
    return files


def _stdin_name(paths: tuple[Path, ...], stdin_filename: Optional[Path]) -> Optional[Path]:
    """The name stdin's text stands for when the path is `-` (`-` itself without
    --stdin-filename), else None."""
    if Path("-") not in paths:
        if stdin_filename is not None:
            raise click.UsageError("--stdin-filename names what `-` stands for: pass `-` as the path")
        return None
    if len(paths) > 1:
        raise click.UsageError("`-` (stdin) is the only path of its run")
    return stdin_filename or Path("-")


def _read_stdin() -> bytes:
    return sys.stdin.buffer.read()


def _sharded(files: list[Path], summary: Summary, shard: Optional[Shard]) -> tuple[list[Path], list[Path]]:
    """The files this run processes, and the files the analysis reads (all of them). Paths that
    are not processed at all (missing, not Python) are the first shard's to report."""
    if shard is None:
        return files, files
    if shard[0] != 1:
        summary.skipped.clear()
    folders = project_folders(files[0] if files else Path.cwd())
    root = folders[-1] if (folders[-1] / ".git").exists() else Path(os.path.abspath(Path.cwd()))
    return [path for path in files if in_shard(path, shard, root)], files


def _cache_dir(no_cache: bool, paths: tuple[Path, ...]) -> Optional[Path]:
    return None if no_cache else cache_directory(paths[0] if paths else Path.cwd())


@contextlib.contextmanager
def _progress(err: Stream, total: int, quiet: bool) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr for a run over many files, only where stderr is a terminal and
    not with -q; it yields the function that counts one file done. Lines printed meanwhile go
    above the bar: stderr's, and stdout's when stdout is the terminal too (a pipe gets its own)."""
    if quiet or total <= PROGRESS_MIN_FILES or not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    progress = Progress(
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err.rich,
        transient=True,
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=True,
    )
    task = progress.add_task("files", total=total)
    with progress:
        yield lambda: progress.advance(task)


TARGET_HELP = "MindSpore version the code must run on (default: the lowest the pins allow, else {})."


# The options upgrade and check share, in the order --help lists them; those whose help differs
# between the commands are made by ``_run_options``.
_FILE_OPTIONS = [
    click.option("--exclude", multiple=True, metavar="GLOB", help="Skip matching paths (repeatable)."),
    click.option(
        "-j",
        "--jobs",
        default=0,
        type=click.IntRange(min=0),
        metavar="N",
        help="Worker processes, at most one per core (default 0: one per available core). A run with "
        "few files to parse uses one; the output is the same for any N.",
    ),
    click.option(
        "--no-cache",
        is_flag=True,
        help=f"Neither read nor write the results of earlier runs (kept in {DIRECTORY}/ at the project "
        "root, or in $MS_MIGRATE_CACHE_DIR).",
    ),
]
_SELECTION_OPTIONS = [
    click.option("--select", multiple=True, metavar="CODES", help="Only these rules (prefixes; a,b)."),
    click.option("--ignore", "ignore_codes", multiple=True, metavar="CODES", help="Not these (a,b)."),
]
_INPUT_OPTIONS = [
    click.option(
        "--stdin-filename",
        type=click.Path(path_type=Path),
        metavar="PATH",
        help="With `-` as the path: the file stdin's text stands for (its configuration, target "
        "and per-file ignores; the name in the output).",
    ),
    click.option(
        "--shard",
        callback=_parse_shard,
        metavar="K/N",
        help="Process only the K-th of N parts of the files (split by path, the same on every "
        "machine); every file still informs the analysis. `ms-migrate merge` joins the JSON.",
    ),
]


def _stacked(options: list[Callable[[Callable[..., None]], Callable[..., None]]]) -> Callable[..., Any]:
    """One decorator applying ``options`` so that --help lists them in this order."""

    def apply(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def _run_options(
    quiet_help: str, format_help: str, default: Optional[str] = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The options upgrade and check share: target, files, jobs, selection and output format.
    ``default``: what the target is without --target-version or a pin (else the newest version)."""
    return _stacked(
        [
            click.option(
                "--target-version",
                callback=_parse_version,
                metavar="X.Y",
                help=TARGET_HELP.format(default or default_target()),
            ),
            click.option(
                "--from-version",
                callback=_parse_version,
                metavar="X.Y",
                help="MindSpore version the code was written for, from which the changes of meaning "
                "are reported (default: `from-version` in [tool.ms-migrate], else the lowest the pins "
                "allow where the target is another).",
            ),
            *_FILE_OPTIONS,
            click.option("-q", "--quiet", is_flag=True, help=quiet_help),
            *_SELECTION_OPTIONS,
            click.option(
                "--format",
                "fmt",
                type=click.Choice(FORMATS),
                default="text",
                show_default=True,
                help=format_help,
            ),
            *_INPUT_OPTIONS,
        ]
    )


class _LazyGroup(click.Group):
    """A group whose `verify` and `runtime` commands (and the machinery behind them) load only when run."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "verify": ("ms_migrate.verify.command", "verify_command"),
        "runtime": ("ms_migrate.frontends.runtime_command", "runtime_group"),
    }

    def invoke(self, ctx: click.Context) -> Any:
        # Ctrl-C wherever it lands (reading the tree, importing the rules): 130, as documented.
        # click itself would say "Aborted!" and exit 1, the status for findings.
        from ms_migrate.application.collector import skip_the_collection_at_exit
        from ms_migrate.reporting.stdout_guard import guard_stdout

        guard_stdout()  # `| head` or `>&-` must not stop the run half way
        skip_the_collection_at_exit()
        from ms_migrate.core.codes import DuplicateCode
        from ms_migrate.rules.base import RuleSetError

        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted: nothing more was written", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except (RuleSetError, DuplicateCode) as error:
            # Whichever command loaded the rules first (`rules`, `explain`, `check`, the server).
            raise click.UsageError(f"rules: {error}") from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["ms_migrate.arguments"] = tuple(args)  # for JSON, SARIF and reports
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name in self.lazy:
            module, attribute = self.lazy[name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ms-migrate")
def main() -> None:
    """Migrate MindSpore autodiff code between API generations."""


# What upgrade and downgrade add to the shared options, in the order --help lists them.
_MIGRATION_ONLY_OPTIONS = [
    click.option(
        "--verify",
        is_flag=True,
        help="Run each rewritten file before and after on MindSpore; write only rewrites proven equal.",
    ),
    click.option(
        "--allow-unverified",
        is_flag=True,
        help="With --verify: write rewrites that were not proven equal too.",
    ),
    click.option(
        "--install-requirements",
        is_flag=True,
        help="With --verify: install what the requirements.txt nearest each file names (wheels only) "
        "into a cache folder the runs import from after the runtime's own packages.",
    ),
    click.option(
        "-i",
        "--interactive",
        is_flag=True,
        help="Show each site's change and ask whether to make it (y), leave the site (n), make the "
        "rest of the file's (a) or stop (q); what is accepted is checked and written per file.",
    ),
    click.option(
        "--report",
        "report_file",
        type=OUTPUT_FILE,
        metavar="FILE",
        help="Write what became of every site (the form written, or why it was left alone; "
        "verification; commands to reproduce) to FILE: Markdown, or JSON for a .json name.",
    ),
    click.option(
        "--max-changes",
        type=click.IntRange(min=1),
        metavar="N",
        help="Rewrite at most N files (for a first, small pull request); the others are reported "
        "as pending and left as they are.",
    ),
    click.option(
        "--output-file",
        "-o",
        type=OUTPUT_FILE,
        metavar="FILE",
        help="Write the findings to FILE (in --format) instead of showing them.",
    ),
    click.option(
        "--baseline",
        "baseline_file",
        type=click.Path(path_type=Path),
        metavar="FILE",
        help="Leave the findings in this baseline alone: not shown, not counted, their sites not "
        "rewritten (default: `baseline` in [tool.ms-migrate]).",
    ),
    click.option(
        "--exit-zero",
        is_flag=True,
        help="Exit 0 even when findings remain (2 still on errors, 1 for --dry-run's pending changes).",
    ),
]


def _migration_options(default: Optional[str] = None) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The arguments and options upgrade and downgrade share."""
    return _stacked(
        [
            click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path)),
            click.option("--dry-run", is_flag=True, help="Print a unified diff per file; write nothing."),
            _run_options(
                quiet_help="Only the target version, errors and left-alone sites; no list of files "
                "rewritten.",
                format_help="How findings are shown on stdout (text on stderr under --dry-run, beside the "
                "diff): text, json, sarif, github.",
                default=default,
            ),
            *_MIGRATION_ONLY_OPTIONS,
        ]
    )


@main.command()
@_migration_options()
def upgrade(**options: Any) -> None:
    """Rewrite GradOperation train steps into value_and_grad / grad."""
    _migrate(UPGRADE_KINDS, **options)


@main.command()
@_migration_options(default="none: pass one")
def downgrade(**options: Any) -> None:
    """Rewrite modern autodiff code into what an older MindSpore runs: the target is
    --target-version, else the lowest version the project's mindspore pin allows; with neither
    it is a usage error (the newest version, upgrade's default, has nothing to downgrade to).

    For 1.8 to 1.10: `mindspore.value_and_grad` / `grad`, under any alias and in `from` imports,
    become `mindspore.ops.*`, and keywords the target does not take are reported (MS202). Below
    1.8, `value_and_grad(fn, None, weights)` becomes GradOperation in a Cell (MS301) and `grad`
    the GradOperation returning the same structure (MS302); other shapes are reported. Below 2.0,
    `jit` is spelled `ms_function` (MS303). --verify runs each rewritten site before and after.
    """
    _migrate(DOWNGRADE_KINDS, **options)


@dataclass(frozen=True)
class RunRequest:
    """The options every run over files takes (``_run_options`` and the outputs), as they parse."""

    paths: tuple[Path, ...]
    target_version: Optional[Version] = None
    from_version: Optional[Version] = None
    exclude: tuple[str, ...] = ()
    jobs: int = 0
    no_cache: bool = False
    quiet: bool = False
    select: tuple[str, ...] = ()
    ignore_codes: tuple[str, ...] = ()
    fmt: str = "text"
    stdin_filename: Optional[Path] = None
    shard: Optional[Shard] = None
    output_file: Optional[Path] = None
    baseline_file: Optional[Path] = None
    exit_zero: bool = False


@dataclass(frozen=True)
class MigrateRequest(RunRequest):
    """What one `upgrade` or `downgrade` was asked."""

    kinds: tuple[str, ...] = UPGRADE_KINDS
    dry_run: bool = False
    verify: bool = False
    allow_unverified: bool = False
    install_requirements: bool = False
    interactive: bool = False
    max_changes: Optional[int] = None
    report_file: Optional[Path] = None

    @property
    def command(self) -> str:
        return "downgrade" if self.kinds == DOWNGRADE_KINDS else "upgrade"

    def refuse_what_does_not_go_together(self) -> None:
        verify_only = (
            ("--allow-unverified", self.allow_unverified),
            ("--install-requirements", self.install_requirements),
        )
        for flag, given in verify_only:
            if given and not self.verify:
                raise click.UsageError(f"{flag} only applies with --verify (add --verify, or drop it)")
        if self.interactive and (self.dry_run or self.fmt != "text"):
            raise click.UsageError(
                "--interactive asks before each write: it takes no --dry-run and only --format text"
            )


def _migrate(kinds: tuple[str, ...], **options: Any) -> None:
    """Run the rules of ``kinds`` over the paths: the body of upgrade and downgrade. Exit 1 when
    findings remain (as `ruff check --fix`), or under --dry-run when changes are pending."""
    request = MigrateRequest(kinds=kinds, **options)
    stdin = _stdin_name(request.paths, request.stdin_filename)
    if stdin is not None:
        asked = (request.verify, request.interactive, request.report_file, request.max_changes, request.shard)
        if any(asked) or request.baseline_file:
            raise click.UsageError(
                "stdin (`-`) takes no --verify, -i, --report, --max-changes, --shard or --baseline"
            )
        _migrate_stdin(request, stdin)
    request.refuse_what_does_not_go_together()
    run = _MigrationRun(request)
    try:
        run.go()
    except KeyboardInterrupt:
        if request.dry_run:
            run.err.print("interrupted: nothing was written (--dry-run)")
        else:
            run.err.print("interrupted: files already written are complete; the rest are unchanged")
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(run.finish())


class _MigrationRun:
    """One `upgrade` or `downgrade` over files: each outcome held back, written, shown, asked
    about and counted as it arrives, then the summary, the outputs and the exit code."""

    def __init__(self, request: MigrateRequest) -> None:
        self.request = request
        self.out, self.err = Stream(), Stream(stderr=True)
        self.started = started = _start(request, self.err, needs_target=request.kinds == DOWNGRADE_KINDS)
        self.target, self.summary, self.config = started.target, started.summary, started.config
        self.files, self.every_file = _sharded(started.files, self.summary, request.shard)
        self.baseline = _read_baseline(request.baseline_file or self.config.baseline)
        if not request.dry_run:
            self._clean_up_leftovers()
        self.verify_exit = EXIT_OK
        self.statuses: list[FileStatus] = []
        self.reported: list[ReportFile] = []
        self.records: list[Record] = []
        self.changes_left = request.max_changes
        self.settings = _Settings(
            self.target, self.config, request.kinds, request.verify and not request.allow_unverified
        )

    def _clean_up_leftovers(self) -> None:
        leftovers = sources.clean_up_leftovers(self.request.paths)
        for stale in leftovers.removed:
            self.err.print(f"{stale}: removed a temporary file left by an interrupted run")
        for backup in leftovers.backups:
            name = sources.Leftovers.target_of(backup).name
            self.err.print(
                f"{backup}: {name} as it was before a write that was cut off; check {name}, "
                "then restore it from this file or delete this file"
            )
            self.summary.errors += 1

    def _outcomes(self) -> Iterator[FileOutcome]:
        request = self.request
        # --interactive writes after asking, --max-changes while it has changes left, and a
        # baseline once its sites are left out, here; otherwise the runner writes as results arrive.
        write = not request.dry_run and not request.interactive and request.max_changes is None
        write = write and self.baseline is None
        cache_dir = _cache_dir(request.no_cache, request.paths)
        if not request.verify:
            return upgrade_files(
                self.files,
                self.target,
                write,
                request.jobs,
                self.config,
                request.kinds,
                cache_dir,
                project_paths=self.every_file,
            )
        # The verify machinery loads only when asked for: a plain run starts faster.
        from ms_migrate.verify.command import options_for_upgrade, with_requirements

        options = options_for_upgrade(request.paths, self.target, downgrade=request.kinds == DOWNGRADE_KINDS)
        return upgrade_files_verified(
            self.files,
            self.target,
            write,
            options,
            request.allow_unverified,
            request.jobs,
            self.config,
            request.kinds,
            cache_dir,
            self.every_file,
            with_requirements if request.install_requirements else None,
        )

    def go(self) -> None:
        request = self.request
        outcomes = self._outcomes()
        with _progress(
            self.err, len(self.files), request.quiet or request.verify or request.interactive
        ) as advance:
            for outcome in outcomes:
                if self._take(outcome):
                    _stop(outcomes)
                    self.err.print("stopped: the files not yet shown are unchanged")
                    break
                advance()

    def _take(self, outcome: FileOutcome) -> bool:
        """One file's outcome, in order; True when the user asked to stop (--interactive)."""
        request, summary = self.request, self.summary
        counted_error = outcome.error
        if outcome.error:
            summary.errors += 1
            self.err.print(one_line(outcome.error))
        in_baseline: frozenset[int] = frozenset()
        if self.baseline is not None:
            in_baseline = _leave_baselined(self.err, outcome, self.baseline, self.settings)
            summary.in_baseline += len(in_baseline)
        pending = self._hold_back_or_write(outcome)
        self._show(outcome, pending, in_baseline)
        quit, declined = False, []
        if request.interactive:
            quit, declined = self._ask(outcome)
        if outcome.error is not None and outcome.error is not counted_error:
            # A write here (after a prompt, under --max-changes or a baseline) failed: the file
            # changed on disk meanwhile, or cannot be written. An error of the run.
            summary.errors += 1
            if not request.interactive:  # --interactive has said it, at the file's prompt
                self.err.print(one_line(outcome.error))
        self._count(outcome, in_baseline, declined)
        if outcome.written and not request.quiet:
            self.err.print(f"Rewriting {quoted_path(str(outcome.path))}")  # what pyupgrade's hook says
        return quit

    def _hold_back_or_write(self, outcome: FileOutcome) -> bool:
        """--max-changes holds a change back once its count is spent, and writes the others; a
        run with a baseline writes what is left of a file's changes. True when held back."""
        request = self.request
        write_here = not request.dry_run and not request.interactive
        if self.changes_left is not None and outcome.changed and not outcome.held_back:
            if self.changes_left == 0:
                outcome.held_back = f"pending: --max-changes {request.max_changes} files are rewritten"
                self.summary.pending += 1
                return True
            self.changes_left -= 1
            if write_here:
                write_outcome(outcome)
        elif self.baseline is not None and outcome.changed and not outcome.held_back and write_here:
            write_outcome(outcome)
        return False

    def _show(self, outcome: FileOutcome, pending: bool, in_baseline: frozenset[int]) -> None:
        request = self.request
        display = str(outcome.path)
        # A rewrite --verify held back is still shown: the preview says what failed.
        if request.dry_run and outcome.changed and not pending and request.fmt == "text":
            print_diff(self.out, unified_diff(display, outcome.before, outcome.after))
        shown = _migration_records(outcome, display, request.quiet, in_baseline)
        if request.interactive and outcome.changed and not outcome.held_back:
            # Each site to convert is shown at its prompt, with its diff: not twice.
            shown = [record for record in shown if not record.diagnostic.fixable]
        if request.fmt == "text" and request.output_file is None:
            # Findings go to stdout, as `check` and ruff print them; under --dry-run the diff
            # owns stdout (ruff --diff keeps its stdout a patch too) and they go to stderr.
            findings = self.err if request.dry_run else self.out
            for line in render(shown, "text").splitlines():
                findings.print(line)
        self.records += shown
        if request.verify:
            from ms_migrate.verify.command import show_verification

            self.verify_exit = max(self.verify_exit, show_verification(self.err.rich, outcome, request.quiet))

    def _ask(self, outcome: FileOutcome) -> tuple[bool, list[tuple[str, int]]]:
        quit, declined = _ask_and_write(self.out, self.err, outcome, self.settings)
        for code, line in declined:
            self.out.print(
                f"{quoted_path(str(outcome.path))}:{outcome.where(line)}: {code} left alone: declined"
            )
        self.summary.left_alone["declined"] += len(declined)
        return quit, declined

    def _count(
        self, outcome: FileOutcome, in_baseline: frozenset[int], declined: list[tuple[str, int]]
    ) -> None:
        summary = self.summary
        landed = _landed(outcome, self.request.dry_run)
        kept = [item for index, item in enumerate(outcome.diagnostics) if index not in in_baseline]
        summary.add(kept, outcome.fixed if landed else 0, landed)
        summary.held_back += outcome.fixed if outcome.held_back and outcome.verification and not landed else 0
        summary.remaining += _remaining(kept, landed or outcome.found_written, frozenset(declined))
        self.statuses.append(_file_status(outcome, landed))
        if self.request.report_file is not None:
            self.reported.append(_report_file(outcome, self.statuses[-1], landed))

    def finish(self) -> int:
        """The outputs after the last file (--format, -o, --report, the summary): the exit code."""
        request, summary = self.request, self.summary
        if summary.errors:
            exit_code = EXIT_ERROR
        else:
            pending = request.dry_run and (summary.files_changed or summary.pending)
            remaining = summary.remaining and not request.exit_zero
            exit_code = max(self.verify_exit, EXIT_CHANGES if pending or remaining else EXIT_OK)
        if request.fmt != "text" or request.output_file is not None:
            run = _run_info(request.command, self.started, request, self.statuses, exit_code, request.dry_run)
            if self.baseline is not None:
                named = str(request.baseline_file or self.config.baseline)
                run = dataclasses.replace(run, baseline=named, in_baseline=summary.in_baseline)
            _emit(render(self.records, request.fmt, run), request.output_file)
        if request.report_file is not None:
            from ms_migrate.reporting.migration_report import RunFacts
            from ms_migrate.reporting.migration_report import render as render_report

            facts = RunFacts(
                request.command,
                str(self.target),
                self.started.source,
                _arguments(),
                request.dry_run,
                tuple(self.reported),
            )
            try:
                sources.write_output(
                    request.report_file, render_report(facts, request.report_file.suffix == ".json")
                )
            except sources.SourceError as error:
                self.err.print(f"--report: {error}")
                exit_code = EXIT_ERROR
        if not request.quiet:
            self.err.print(summary.render(request.dry_run))
        return exit_code


def _migration_records(
    outcome: FileOutcome, display: str, quiet: bool, in_baseline: Collection[int] = ()
) -> list[Record]:
    """What upgrade and downgrade show of a file: not the findings ``in_baseline`` (positions in
    its diagnostics); with -q only the sites left alone and the findings it could not fix."""
    reasons, notes = all_reasons(), all_notes()
    return [
        Record(display, outcome.where(item.line), item)
        for index, item in enumerate(outcome.diagnostics)
        if index not in in_baseline
        and (not quiet or item.code in reasons or (item.fix is None and item.code not in notes))
    ]


def _remaining(diagnostics: list[Diagnostic], landed: bool, declined: Collection[tuple[str, int]]) -> int:
    """How many of a file's findings stand after the run (would, previewing): all but the notes
    and those whose fix reached the file, less the sites --interactive was told to leave."""
    notes = all_notes()
    return sum(
        item.code not in notes
        and not (landed and item.fix is not None and (item.code, item.line) not in declined)
        for item in diagnostics
    )


def _leave_baselined(
    err: Stream, outcome: FileOutcome, baseline: Baseline, settings: _Settings
) -> frozenset[int]:
    """The positions of ``outcome``'s diagnostics that ``baseline`` holds; a rewrite of any of
    their sites is undone (the file migrated again with them declined), so that what a team has
    accepted stays as it is until it chooses to fix it."""
    if not outcome.diagnostics:
        return frozenset()
    text = outcome.before
    if not text:  # a worker sends back no text for a file it did not change
        try:
            text = sources.read_source(outcome.path).text
        except sources.SourceError:
            text = ""
    from ms_migrate.reporting.baseline import Finding as BaselineFinding

    lines = source_lines(text)
    findings = [
        BaselineFinding(outcome.path, item.code, lines[item.line - 1] if 0 < item.line <= len(lines) else "")
        for item in outcome.diagnostics
    ]
    ahead = baseline.take(findings, keep=False)
    held = [item for item, taken in zip(outcome.diagnostics, ahead) if taken and item.fix is not None]
    declined = frozenset((item.code, item.line) for item in held)
    if declined and outcome.changed and not outcome.held_back:
        result = migrate_declining(outcome, settings.target, settings.config, settings.kinds, declined)
        if result.text != outcome.after and settings.verified_whole and outcome.verification is not None:
            outcome.held_back = (
                "--verify proved the whole file's rewrite, not the part outside the baseline "
                "(add --allow-unverified to write it)"
            )
            err.print(f"{outcome.path}: not written: {outcome.held_back}")
        else:
            fixed = {(item.code, item.line) for item in result.fixed}
            outcome.after, outcome.fixed, outcome.baselined = result.text, result.converted, declined
            outcome.diagnostics = [
                item
                if item.fix is None or (item.code, item.line) in fixed
                else dataclasses.replace(item, fix=None)
                for item in outcome.diagnostics
            ]
    return frozenset(index for index, held in enumerate(baseline.take(findings)) if held)


def _migrate_stdin(request: MigrateRequest, name: Path) -> None:
    """`upgrade -`: the migrated text on stdout (black's and ruff format's convention), or with
    --dry-run the diff; findings on stderr (or in --output-file); exit codes as for a file."""
    err = Stream(stderr=True)
    kinds, dry_run, quiet, fmt = request.kinds, request.dry_run, request.quiet, request.fmt
    started = _start(request, err, stdin=name, needs_target=kinds == DOWNGRADE_KINDS)
    target, summary, config = started.target, started.summary, started.config
    outcome, data = migrate_bytes(_read_stdin(), name, target, config, kinds)
    if outcome.error:
        summary.errors += 1
        err.print(one_line(outcome.error))
    summary.add(outcome.diagnostics, outcome.fixed, outcome.changed)
    records = _migration_records(outcome, str(name), quiet)
    if dry_run:
        if outcome.changed:
            print_diff(Stream(), unified_diff(str(name), outcome.before, outcome.after))
    elif data is not None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    summary.remaining = _remaining(outcome.diagnostics, outcome.changed, ())
    if summary.errors:
        exit_code = EXIT_ERROR
    else:
        remaining = summary.remaining and not request.exit_zero
        exit_code = EXIT_CHANGES if (dry_run and outcome.changed) or remaining else EXIT_OK
    if fmt != "text" or request.output_file is not None:
        statuses = [_file_status(outcome, outcome.changed)]
        # stdin's text has no path of its own to say where it came from
        named_nothing = dataclasses.replace(request, paths=())
        run = _run_info(request.command, started, named_nothing, statuses, exit_code, dry_run)
        if request.output_file is not None:
            _emit(render(records, fmt, run), request.output_file)
        else:
            err.print(render(records, fmt, run).rstrip("\n"))
    else:
        for line in render(records, "text").splitlines():
            err.print(line)
    if not quiet:
        err.print(summary.render(dry_run))
    sys.exit(exit_code)


def _report_file(outcome: FileOutcome, status: FileStatus, landed: bool) -> ReportFile:
    from ms_migrate.reporting.migration_report import ReportFile, verified_rows

    diagnostics = tuple((outcome.where(item.line), item) for item in outcome.diagnostics)
    applied = frozenset(index for index, (_, item) in enumerate(diagnostics) if landed and item.fixable)
    verified = verified_rows(outcome.verification) if outcome.verification is not None else ()
    return ReportFile(status.path, status.status, status.reason, diagnostics, applied, verified)


@dataclasses.dataclass(frozen=True)
class _Settings:
    """What --interactive needs to migrate a file again with some sites declined."""

    target: Version
    config: Config
    kinds: tuple[str, ...]
    verified_whole: bool  # --verify without --allow-unverified: only a whole verified rewrite


def _ask_and_write(
    out: Stream, err: Stream, outcome: FileOutcome, settings: _Settings
) -> tuple[bool, list[tuple[str, int]]]:
    """--interactive: each site of a rewrite that may be written is shown and asked about; what
    was accepted is written. Whether the user quit, and the sites left as they are."""
    if not outcome.changed or outcome.held_back:
        return False, []

    def migrate(declined: frozenset[tuple[str, int]]) -> FileResult:
        left = declined | outcome.baselined  # what the baseline keeps stays kept
        return migrate_declining(outcome, settings.target, settings.config, settings.kinds, left)

    from ms_migrate.frontends.interactive import review  # only `upgrade -i` asks questions

    reviewed = review(out, outcome, migrate)
    if reviewed.problem is not None:
        err.print(f"{outcome.path}: not written: {reviewed.problem}")
    elif reviewed.text is not None and reviewed.text != outcome.after and settings.verified_whole:
        err.print(
            f"{outcome.path}: not written: --verify proved the whole file's rewrite, not a part of it "
            "(add --allow-unverified to write it)"
        )
    elif reviewed.text is not None:
        outcome.after, outcome.fixed = reviewed.text, reviewed.converted
        write_outcome(outcome)
        if outcome.error:
            err.print(one_line(outcome.error))
    return reviewed.quit, reviewed.declined


def _stop(outcomes: Iterator[FileOutcome]) -> None:
    """End the run's generator now, so a -j pool stops instead of migrating files nobody will see."""
    close = getattr(outcomes, "close", None)
    if close is not None:
        close()


def _landed(outcome: FileOutcome, dry_run: bool) -> bool:
    """Whether the rewrite reached the file (previewing: would reach it). Only these count as
    converted: a read-only file or a rewrite held back by --verify keeps its legacy sites."""
    if dry_run:
        return outcome.changed and not outcome.held_back
    return outcome.written


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_run_options(
    quiet_help="Only the target version, findings to act on, and errors.",
    format_help="text: path:line:col: CODE message ([*]: upgrade fixes it); json; sarif (2.1.0); "
    "github (workflow annotations).",
)
@click.option(
    "--statistics", is_flag=True, help="Per code: how many findings, how many of them fixable; no list."
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (2 still on errors).")
@click.option(
    "--output-file",
    "-o",
    type=OUTPUT_FILE,
    metavar="FILE",
    help="Write the findings (or statistics) to FILE instead of stdout.",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Report only findings not in this baseline (default: `baseline` in [tool.ms-migrate]).",
)
@click.option(
    "--write-baseline",
    type=OUTPUT_FILE,
    metavar="FILE",
    help="Record every finding of this run in FILE, for --baseline; exit 0.",
)
def check(**options: Any) -> None:
    """Lint only; write nothing. Report what `upgrade` would modernise and what the lint rules
    find (APIs missing on the target, keywords it does not take); [*] marks what `upgrade` fixes,
    or for code newer than the target (`mindspore.jit` at 1.9), what `downgrade` fixes.

    Exit 1 when there is something to act on (the pre-commit hook's signal), 2 on errors.
    GradOperation is not deprecated, so MS101 sites are reported as modernisable, not as errors.
    """
    request = CheckRequest(**options)
    err = Stream(stderr=True)
    found = _checked(request, err)
    if request.write_baseline is not None:
        _write_baseline(request.write_baseline, found.records, found.target, err, found.files)
        sys.exit(EXIT_ERROR if found.summary.errors else EXIT_OK)
    baseline = found.baseline
    in_baseline = stale = 0
    records = found.records
    if baseline is not None:
        kept, stale = baseline.new_findings(_baseline_findings(records))
        in_baseline = len(records) - len(kept)
        records = [records[position] for position in kept]
    counts = _CheckCounts.of(records, found.summary)
    exit_code = counts.exit_code(request.exit_zero)
    run = _run_info("check", found.started, request, found.statuses, exit_code)
    run = dataclasses.replace(
        run,
        baseline=None if found.baseline_path is None else str(found.baseline_path),
        in_baseline=in_baseline,
    )
    rendered = (
        render_statistics(records, request.fmt) if request.statistics else render(records, request.fmt, run)
    )
    _emit(rendered, request.output_file)
    if not request.quiet:
        err.print(counts.sentence(baseline is not None, in_baseline, stale))
    sys.exit(exit_code)


@dataclass(frozen=True)
class CheckRequest(RunRequest):
    """What one `check` was asked."""

    statistics: bool = False
    write_baseline: Optional[Path] = None


@dataclass
class _Checked:
    """What the rules found in a `check`'s files, before the baseline: one record per finding."""

    started: _Started
    files: list[Path]  # this shard's
    baseline_path: Optional[Path]
    baseline: Optional[Baseline]  # read before the run: a bad one stops it before any work
    records: list[Record] = dataclasses.field(default_factory=list)
    statuses: list[FileStatus] = dataclasses.field(default_factory=list)
    rewritten: frozenset[str] = dataclasses.field(default_factory=rewriters)  # as_reported's

    @property
    def target(self) -> Version:
        return self.started.target

    @property
    def config(self) -> Config:
        return self.started.config

    @property
    def summary(self) -> Summary:
        return self.started.summary


def _checked(request: CheckRequest, err: Stream) -> _Checked:
    stdin = _stdin_name(request.paths, request.stdin_filename)
    started = _start(request, err, stdin=stdin, reads_only=True)
    target, summary, config = started.target, started.summary, started.config
    files, every_file = _sharded(started.files, summary, request.shard)
    baseline_path = None if request.write_baseline else request.baseline_file or config.baseline
    baseline = _read_baseline(baseline_path)
    found = _Checked(started, files, baseline_path, baseline)
    # -q reports only what to act on: not the notes, nor the sites left alone.
    quieted = set(all_reasons()) | set(all_notes()) if request.quiet else set()
    # json and sarif carry fixes: they are built and validated as upgrade does. For the others
    # MS101 builds no rewrite (no libcst at all) and marks its converted sites as fixable.
    fix = request.fmt in ("json", "sarif")
    if stdin is not None:
        outcome = migrate_bytes(_read_stdin(), stdin, target, config, CHECK_KINDS)[0]
        outcomes: Iterator[FileOutcome] = iter([outcome])
    else:
        cache_dir = _cache_dir(request.no_cache, request.paths)
        options = {"cache_dir": cache_dir, "texts": False, "project_paths": every_file, "fix": fix}
        outcomes = upgrade_files(files, target, False, request.jobs, config, CHECK_KINDS, **options)
    try:
        with _progress(err, len(files), request.quiet) as advance:
            for outcome in outcomes:
                _take(found, outcome, quieted, err)
                advance()
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written")
        sys.exit(EXIT_INTERRUPTED)
    return found


def _take(found: _Checked, outcome: FileOutcome, quieted: set[str], err: Stream) -> None:
    """One file's outcome into the records, less the ``quieted`` codes, each as `check` says it."""
    if outcome.error:
        found.summary.errors += 1
        err.print(one_line(outcome.error))
    found.summary.add(outcome.diagnostics, outcome.fixed, outcome.changed)
    found.statuses.append(_file_status(outcome, outcome.changed))
    for item in outcome.diagnostics:
        if item.code not in quieted:
            reported = as_reported(item, found.rewritten)
            found.records.append(Record(str(outcome.path), outcome.where(item.line), reported))


@dataclass(frozen=True)
class _CheckCounts:
    """What `check` counts of the records it reports: the exit code and the closing sentence."""

    modernisable: int
    files_with: int  # files with a modernisable site
    linted: int
    fixable: int
    errors: int
    seen: int
    downgradable: int = 0  # of the fixable, those `downgrade` fixes (code newer than the target)

    @classmethod
    def of(cls, records: list[Record], summary: Summary) -> _CheckCounts:
        rewritten = rewriters()
        modernisable = [record for record in records if record.diagnostic.code in rewritten]
        left = rewritten | set(all_reasons()) | set(all_notes())
        return cls(
            modernisable=len(modernisable),
            files_with=len({record.path for record in modernisable}),
            linted=sum(record.diagnostic.code not in left for record in records),
            fixable=sum(record.diagnostic.fixable for record in records),
            errors=summary.errors,
            seen=summary.files_seen,
            downgradable=sum(
                record.diagnostic.fixable and record.diagnostic.code in downgraders() for record in records
            ),
        )

    def exit_code(self, exit_zero: bool) -> int:
        if self.errors:
            return EXIT_ERROR
        return EXIT_CHANGES if (self.modernisable or self.linted) and not exit_zero else EXIT_OK

    def _fixed_by(self) -> str:
        commands = ["upgrade"] if self.fixable > self.downgradable or not self.downgradable else []
        commands += ["downgrade"] if self.downgradable else []
        return " and ".join(f"`ms-migrate {command}`" for command in commands)

    def sentence(self, with_baseline: bool, in_baseline: int, stale: int) -> str:
        line = (
            f"{self.modernisable} modernisable site{'s' * (self.modernisable != 1)} "
            f"in {self.files_with} file{'s' * (self.files_with != 1)}, "
            f"{self.linted} lint finding{'s' * (self.linted != 1)}, {self.fixable} fixable [*] "
            f"({self.seen} checked; fix with {self._fixed_by()})"
        )
        if with_baseline:
            line += f"; {in_baseline} in the baseline, not shown"
            if stale:
                line += f" ({stale} of its entries are fixed now: --write-baseline to drop them)"
        return line


def _arguments() -> tuple[str, ...]:
    """The command line after the program name, as the group parsed it."""
    context = click.get_current_context(silent=True)
    return context.meta.get("ms_migrate.arguments", ()) if context is not None else ()


def _file_status(outcome: FileOutcome, landed: bool) -> FileStatus:
    if outcome.error:
        return FileStatus(str(outcome.path), "error", outcome.error)
    if landed:
        return FileStatus(str(outcome.path), "changed")
    return FileStatus(str(outcome.path), "unchanged", outcome.held_back)


def _run_info(
    command: str,
    started: _Started,
    request: RunRequest,
    statuses: list[FileStatus],
    exit_code: int,
    dry_run: bool = False,
) -> RunInfo:
    """What --format json and sarif say of the run besides its findings."""
    skipped = [FileStatus(path, "skipped", why) for path, why in started.summary.skipped]
    provenance = None
    if request.fmt == "sarif" and request.paths:
        from ms_migrate.files.provenance import git_provenance  # runs git: only for SARIF

        provenance = git_provenance(request.paths[0])
    config = started.config
    return RunInfo(
        command,
        str(started.target),
        started.source,
        arguments=_arguments(),
        select=config.select,
        ignore=config.ignore,
        exclude=config.exclude,
        dry_run=dry_run,
        files=(*skipped, *statuses),
        exit_code=exit_code,
        provenance=provenance,
    )


def _emit(text: str, output_file: Optional[Path]) -> None:
    """The run's findings on stdout, or in ``output_file``."""
    if output_file is None:
        sys.stdout.write(text)
        return
    try:
        sources.write_output(output_file, text)
    except sources.SourceError as error:
        raise click.UsageError(f"--output-file: {error}") from None


def _read_baseline(path: Optional[Path]) -> Optional[Baseline]:
    if path is None:
        return None
    from ms_migrate.reporting.baseline import Baseline, BaselineError

    try:
        raw, _ = sources.read_guarded(path, follow_links=True)
        return Baseline.loads(raw.decode("utf-8"), path.parent, str(path))
    except sources.SourceError as error:
        hint = "; write it with `ms-migrate check --write-baseline FILE`" if not path.exists() else ""
        raise click.UsageError(f"baseline {error}{hint}") from None
    except (UnicodeDecodeError, BaselineError) as error:
        raise click.UsageError(str(error)) from None


def _baseline_findings(records: list[Record]) -> list[BaselineFinding]:
    """Each record with the text of its line: read again here, since a worker sends back no text
    for a file it did not change."""
    from ms_migrate.reporting.baseline import Finding as BaselineFinding

    lines: dict[str, list[str]] = {}
    findings = []
    for record in records:
        if record.path not in lines:
            try:
                lines[record.path] = source_lines(sources.read_source(Path(record.path)).text)
            except sources.SourceError:
                lines[record.path] = []
        text = lines[record.path]
        line = record.diagnostic.line
        line_text = text[line - 1] if 0 < line <= len(text) else ""
        findings.append(BaselineFinding(Path(record.path), record.diagnostic.code, line_text))
    return findings


def _write_baseline(
    path: Path, records: list[Record], target: Version, err: Stream, read: Sequence[Path]
) -> None:
    """Record this run's findings, keeping an existing baseline's entries for the files this run
    did not read: `check src/ --write-baseline` must not drop what it knows of tests/."""
    from ms_migrate.reporting.baseline import Baseline, BaselineError
    from ms_migrate.reporting.baseline import dumps as baseline_dumps

    kept: Counter[tuple[str, str, str]] = Counter()
    try:
        raw, _ = sources.read_guarded(path, follow_links=True)
        kept = Baseline.loads(raw.decode("utf-8"), path.parent, str(path)).outside(read)
    except (sources.SourceError, UnicodeDecodeError, BaselineError):
        pass  # none yet, or not one: written anew
    text = baseline_dumps(_baseline_findings(records), path.parent, str(target), kept)
    try:
        sources.write_output(path, text)
    except sources.SourceError as error:
        raise click.UsageError(f"--write-baseline: {error}") from None
    others = sum(kept.values())
    also = f", and kept {others} of files this run did not read" if others else ""
    err.print(f"{path}: wrote a baseline of {len(records)} finding{'s' * (len(records) != 1)}{also}")


@main.command("merge")
@click.argument("documents", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output-file", "-o", type=OUTPUT_FILE, metavar="FILE")
def merge(documents: tuple[Path, ...], output_file: Optional[Path]) -> None:
    """Join the --format json documents of the shards of one run (--shard K/N) into the document
    the whole run gives; exit with the worst exit code of the shards."""
    import json

    from ms_migrate.reporting.merge import MergeError, merge_documents

    loaded = []
    for path in documents:
        try:
            loaded.append(json.loads(sources.read_guarded(path, follow_links=True)[0].decode("utf-8")))
        except (sources.SourceError, UnicodeDecodeError, ValueError) as error:
            raise click.UsageError(f"{path}: {error}") from None
    try:
        merged = merge_documents(loaded, [str(path) for path in documents])
    except MergeError as error:
        raise click.UsageError(str(error)) from None
    _emit(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", output_file)
    sys.exit(merged["exit_code"])


def code_record(code: str) -> dict[str, Any]:
    """A known ``code`` as data: what `rules --format json` lists and `explain --format json` prints."""
    reasons, notes = all_reasons(), all_notes()
    if code in reasons:
        reason = reasons[code]
        return {
            "code": code,
            "kind": "reason",
            "name": reason.slug,
            "summary": reason.summary,
            "explanation": reason.explanation,
        }
    if code in notes:
        return {"code": code, "kind": "note", "text": notes[code].text}
    rule = rule_for(code)
    examples = [
        {
            "flagged": flagged,
            "target": example.target,
            "written_for": example.written_for,
            "code": example.code,
            "fixed": example.fixed,
        }
        for flagged, found in ((True, rule.examples.invalid), (False, rule.examples.valid))
        for example in found
    ]
    return {
        "code": rule.code,
        "kind": rule.kind,
        "name": rule.name,
        "title": rule.title,
        "severity": rule.severity.value,
        "targets": rule.targets.describe(),
        "description": rule.description,
        "examples": examples,
    }


_INFO_FORMAT = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people, json for tools.",
)


@main.command("rules")
@_INFO_FORMAT
def list_rules(output_format: str) -> None:
    """List the rules and the reason codes for sites left alone."""
    if output_format == "json":
        codes = [rule.code for rule in all_rules()] + list(all_reasons()) + list(all_notes())
        click.echo(json.dumps([code_record(code) for code in codes], indent=2, ensure_ascii=False))
        return
    for rule in all_rules():
        click.echo(f"{rule.code}  {rule.name}: {rule.title}  [{rule.kind}, {rule.targets.describe()}]")
    for code, reason in all_reasons().items():
        click.echo(f"{code}  {reason.slug}: {reason.summary}")
    for code, note in all_notes().items():
        click.echo(f"{code}  note: {note.text}")


@main.group()
def catalogue() -> None:
    """The deprecated-API catalogue (rules/deprecations/), derived from an installed MindSpore."""


@catalogue.command("build")
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Where to write the JSON."
)
def build_catalogue(out: Path) -> None:
    """Scan the MindSpore installed here and write its catalogue to OUT (rules/deprecations/2.10.json)."""
    from ms_migrate.catalogue.scan import write_catalogue  # imports MindSpore, so only when run

    written = write_catalogue(out)
    click.echo(f"{out}: {len(written['entries'])} entries (MindSpore {written['mindspore']})")


@main.command()
@click.argument("code", metavar="CODE|NAME")
@_INFO_FORMAT
def explain(code: str, output_format: str) -> None:
    """Explain a rule or a reason code, by code or name (MS101, MSR006, inherited-grad, empty-weights)."""
    found = code_named(code)
    if found is None:
        raise click.UsageError(
            f"no rule, reason or note is called {code!r}; `ms-migrate rules` lists every code and name"
        )
    if output_format == "json":
        click.echo(json.dumps(code_record(found), indent=2, ensure_ascii=False))
        return
    click.echo(explanation(found))


@main.command()
@click.option(
    "--stdio", is_flag=True, help="Talk LSP over stdin and stdout (the default and only transport)."
)
def server(stdio: bool) -> None:
    """Run the language server (LSP over stdio) for editors: check's diagnostics as you type,
    upgrade's fixes as quick fixes. Needs the `lsp` extra: pip install 'ms-migrate[lsp]'."""
    try:
        from ms_migrate.lsp.server import serve  # pygls loads only for this command
    except ImportError as error:
        click.echo(
            f"ms-migrate server needs pygls and lsprotocol ({error}): pip install 'ms-migrate[lsp]'", err=True
        )
        sys.exit(EXIT_ERROR)
    serve()
