"""Running the pipeline over files: read, migrate, write (unless previewing), collect outcomes.

Each file is independent, so a worker pool can take them in any order; results come back in the
order the files were given so output is stable.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ms_migrate import sources
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.config import NO_CONFIG, Config
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.engine import UPGRADE_KINDS, ParseFailure, rules_of_kind, run_rules
from ms_migrate.pool import WorkerDied, map_in_workers
from ms_migrate.versions import Version

if TYPE_CHECKING:
    from ms_migrate.verify import VerificationReport, VerifyOptions


@dataclass
class FileOutcome:
    path: Path
    before: str = ""
    after: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: int = 0  # diagnostics whose fix is in ``after`` (sites converted)
    error: Optional[str] = None
    written: bool = False
    verification: Optional[VerificationReport] = None  # upgrade --verify only
    held_back: Optional[str] = None  # why a rewrite was not written (failed verification)
    locations: dict[int, str] = field(default_factory=dict)  # notebook lines as "cell N:M"

    def where(self, line: int) -> str:
        return self.locations.get(line, str(line))

    @property
    def changed(self) -> bool:
        return self.error is None and self.before != self.after


# The files of the current run, for questions one file cannot answer (a network's class). Set once
# per process: in the parent for a serial run, by the pool initializer in each worker.
_project = ProjectIndex()


def _set_project(paths: Sequence[Path]) -> None:
    global _project
    _project = ProjectIndex(paths)


def upgrade_file(
    path: Path, target: Version, config: Config = NO_CONFIG, kinds: Sequence[str] = UPGRADE_KINDS
) -> FileOutcome:
    """Read one file and run the rules of ``kinds`` on it; nothing is written here (workers never
    touch the user's files)."""
    try:
        source = sources.read_source(path)
    except sources.SourceError as error:
        return FileOutcome(path, error=str(error))
    rules = [rule for rule in rules_of_kind(kinds) if config.enabled(rule.code, path)]
    try:
        result = run_rules(source.text, target, rules, _project, path)
    except ParseFailure as error:
        where = f":{source.location(error.line)}" if error.line else ""
        return FileOutcome(path, source.text, source.text, error=f"{path}{where}: {error.message}")
    except RecursionError:
        return FileOutcome(path, source.text, source.text, error=f"{path}: too deeply nested to parse")
    diagnostics = [item for item in result.diagnostics if config.enabled(item.code, path)]
    outcome = FileOutcome(path, source.text, result.text, diagnostics, result.converted)
    if source.notebook is not None:
        outcome.locations = {item.line: source.location(item.line) for item in diagnostics}
        if outcome.changed:
            # Whether the notebook can be written is known now: --dry-run says what upgrade would.
            try:
                source.encode(result.text)
            except sources.SourceError as error:
                outcome.after, outcome.error = source.text, str(error)
    return outcome


def write_outcome(outcome: FileOutcome) -> None:
    """Write a migrated file, in the parent process only, if it still holds what was migrated."""
    try:
        source = sources.read_source(outcome.path)
        if source.text == outcome.after:
            return  # another run, or another hard link to the file in this run, wrote it already
        if source.text != outcome.before:
            outcome.error = f"{outcome.path}: changed on disk during the run; left unchanged"
            return
        sources.write_source(source, outcome.after)
        outcome.written = True
    except sources.SourceError as error:
        outcome.error = str(error)


def _worker_start(paths: Sequence[Path]) -> None:
    """Pool initializer: die with the parent (Linux), then learn the run's files."""
    _die_with_parent()
    _set_project(paths)


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: a worker whose parent is killed (even with SIGKILL) is killed too."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call: nothing will signal us
        os._exit(1)


def upgrade_files(
    paths: Sequence[Path],
    target: Version,
    write: bool,
    jobs: int = 1,
    config: Config = NO_CONFIG,
    kinds: Sequence[str] = UPGRADE_KINDS,
) -> Iterator[FileOutcome]:
    """Migrate ``paths`` with the rules of ``kinds`` (in a pool when ``jobs`` > 1) and, when
    ``write``, write each changed file from this process as its result arrives."""
    work = partial(upgrade_file, target=target, config=config, kinds=tuple(kinds))
    if jobs <= 1 or len(paths) < 2:
        _set_project(paths)
        results: Iterator[FileOutcome] = map(work, paths)
        yield from _written(results, write)
        return
    workers = min(jobs, len(paths), os.cpu_count() or 1)
    results = map_in_workers(work, paths, workers, _worker_start, (list(paths),))
    yield from _written(map(_outcome_of, paths, results), write)


def _outcome_of(path: Path, result: Union[FileOutcome, WorkerDied]) -> FileOutcome:
    if isinstance(result, WorkerDied):
        message = f"worker died ({result.cause}) while processing this file; skipped"
        return FileOutcome(path, error=f"{path}: {message}")
    return result


def _written(outcomes: Iterable[FileOutcome], write: bool) -> Iterator[FileOutcome]:
    for outcome in outcomes:
        if write and outcome.changed:
            write_outcome(outcome)
        yield outcome


# --- upgrade --verify (ms_migrate.verify) ---------------------------------------------------------


def upgrade_files_verified(
    paths: Sequence[Path],
    target: Version,
    write: bool,
    options: VerifyOptions,
    allow_unverified: bool = False,
    jobs: int = 1,
    config: Config = NO_CONFIG,
    kinds: Sequence[str] = UPGRADE_KINDS,
) -> Iterator[FileOutcome]:
    """Migrate every file, verify the changed ones in one batch, write only what was proven equal.

    One batch means MindSpore is imported once per mode for the whole run. A rewrite that differs
    or could not be run is held back (``outcome.held_back`` says why) unless ``allow_unverified``.
    """
    from ms_migrate.verify import verify_many  # the verify machinery loads only when asked for

    outcomes = list(upgrade_files(paths, target, write=False, jobs=jobs, config=config, kinds=kinds))
    changed = [outcome for outcome in outcomes if outcome.changed and outcome.path.suffix != ".ipynb"]
    for outcome in outcomes:
        if outcome.changed and outcome.path.suffix == ".ipynb":
            # Importing a notebook runs all of its cells (training loops included): not verified.
            if allow_unverified:
                if write:
                    write_outcome(outcome)
            else:
                outcome.held_back = "not written: notebooks are not verified by execution"
    reports = verify_many([(outcome.path, outcome.before, outcome.after) for outcome in changed], options)
    for outcome, report in zip(changed, reports):
        outcome.verification = report
        if not report.ok and not allow_unverified:
            outcome.held_back = f"not written: {report.summary()}"
        elif write:
            write_outcome(outcome)
    yield from outcomes
