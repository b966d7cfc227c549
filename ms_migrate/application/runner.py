"""Running the pipeline over files: read, migrate, write (unless previewing), collect outcomes.

The parent reads every file once. A file that cannot be read, that no selected rule's prefilter
matches (most of a model zoo), or whose result the cache holds is done there, without parsing;
the rest go to the rules, in worker processes when there are enough of them. Outcomes come back
in the order the files were given, so the output is the same for any number of workers, with or
without the cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import operator
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Optional, Union

from ms_migrate.analysis.project import Consulted, ProjectIndex, call_names
from ms_migrate.application.collector import pace_for_a_run, paced_for_a_run
from ms_migrate.application.config import NO_CONFIG, Config
from ms_migrate.application.pool import WorkerDied, available_cores, map_in_workers
from ms_migrate.application.settings import RunSettings
from ms_migrate.core import parsing
from ms_migrate.core.engine import UPGRADE_KINDS, FileResult, ParseFailure, rules_of_kind, run_rules
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.facts.versions import Version
from ms_migrate.files import sources
from ms_migrate.files.cache import (
    Cache,
    CachedResult,
    Changes,
    Dependencies,
    KnownFile,
    RunState,
    content_digest,
    file_signature,
    racy,
    settings_digest,
)
from ms_migrate.reasons import INTERNAL_ERROR
from ms_migrate.rules.base import Rule

if TYPE_CHECKING:
    from ms_migrate.verify import VerificationReport, VerifyOptions
    from ms_migrate.verify.sites import NetworkLookup


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
    # The file already held ``after`` when it was to be written: another name of it (a hard
    # link), or another run, wrote it. Not written here, and yet its fixes are in the file.
    found_written: bool = False
    # (code, line) of the sites a baseline keeps: left out of ``after``, and of any later rewrite.
    baselined: frozenset[tuple[str, int]] = frozenset()
    locations: dict[int, str] = field(default_factory=dict)  # notebook lines as "cell N:M"
    # For the cache: the digest of the bytes the rules ran on (None when the result may not be
    # kept: an error, or an internal error), and what it read of the other files of the run.
    digest: Optional[str] = None
    consulted: Optional[Consulted] = None

    def where(self, line: int) -> str:
        return self.locations.get(line, str(line))

    @property
    def changed(self) -> bool:
        return self.error is None and self.before != self.after


# The files of the current run, for questions one file cannot answer (a network's class). Set once
# per process: in the parent for a serial run, by the pool initializer in each worker.
_project = ProjectIndex()

# A pool starts in about 15 ms, each of its workers imports libcst on its own, and results come
# back pickled; below this many files to parse one process is faster. Files that no rule's
# prefilter matches, and cached ones, are never sent to a worker.
MIN_FILES_FOR_POOL = 4
# Every file a worker gets is parsed (a train step takes from milliseconds to seconds): small
# batches, so that no worker is left with a long queue while the others are idle at the end.
FILES_PER_BATCH = 4


def _set_project(paths: Sequence[Path]) -> None:
    global _project
    _project = ProjectIndex(paths)


def rules_for(path: Path, config: Config, kinds: Sequence[str]) -> list[Rule]:
    """The rules of ``kinds`` that the configuration enables for ``path``: without per-file
    ignores, the same for every path, and chosen once per configuration (the parent asks for
    each file it sends, and the worker again: 95,000 `enabled` calls over a model zoo)."""
    of_kind = rules_of_kind(kinds)
    if config.per_file_ignores:
        return [rule for rule in of_kind if config.enabled(rule.code, path)]
    kept = _rules_chosen.get(tuple(kinds))
    if kept is None or kept[0] is not config or kept[1] != of_kind:
        chosen = [rule for rule in of_kind if config.enabled(rule.code)]
        kept = _rules_chosen[tuple(kinds)] = (config, of_kind, chosen)
    return list(kept[2])


# kinds -> the last configuration asked, the rules of those kinds, those it enables (one entry per
# kinds: a language server that reloads its settings does not keep the old ones)
_rules_chosen: dict[tuple[str, ...], tuple[Config, tuple[Rule, ...], list[Rule]]] = {}


def upgrade_file(
    path: Path,
    target: Version,
    config: Config = NO_CONFIG,
    kinds: Sequence[str] = UPGRADE_KINDS,
    fix: bool = True,
) -> FileOutcome:
    """Read one file and run the rules of ``kinds`` on it; nothing is written here (workers never
    touch the user's files). Without ``fix`` only findings come back (``check``)."""
    try:
        source = sources.read_source(path)
    except sources.SourceError as error:
        return FileOutcome(path, error=str(error))
    return migrate_source(source, target, rules_for(path, config, kinds), config, fix)


def migrate_bytes(
    raw: bytes, name: Path, target: Version, config: Config = NO_CONFIG, kinds: Sequence[str] = UPGRADE_KINDS
) -> tuple[FileOutcome, Optional[bytes]]:
    """``raw`` (stdin's bytes) migrated as the file ``name`` would be, alone: its configuration,
    per-file ignores and notebook handling are ``name``'s; other files are not read. Returns the
    outcome and the bytes to write out (the input's encoding, BOM and notebook JSON kept). A
    MindSpore text that does not parse is an error even where no rule would parse it, as a file's is."""
    _set_project([])
    try:
        source = sources.source_from_bytes(name, raw)
    except sources.SourceError as error:
        return FileOutcome(name, error=str(error)), None
    broken = syntax_error_of(source)
    if broken is not None:
        return broken, raw
    outcome = migrate_source(source, target, rules_for(name, config, kinds), config)
    if outcome.error is not None or not outcome.changed:
        return outcome, raw
    return outcome, source.encode(outcome.after)


def _upgrade_file_lean(path: Path, **options: object) -> FileOutcome:
    """``upgrade_file`` in a worker: an unchanged file's text does not travel back (the parent
    needs a file's text only to show or write its change, and most files have none)."""
    outcome = upgrade_file(path, **options)  # type: ignore[arg-type]
    if not outcome.changed:
        outcome.before = outcome.after = ""
    return outcome


INTERNAL_ERROR_IN_FILE = (
    "internal error in ms-migrate while processing this file; it is left unchanged "
    "(please report it, with the file if you can)"
)


def syntax_error_of(source: sources.SourceFile) -> Optional[FileOutcome]:
    """A MindSpore file that no rule's prefilter picked is still parsed: its syntax error is
    reported as any other file's (`import mindspore` then `def f(:` used to be "1 checked", exit 0).
    Notebooks are left to the rules, which know their magics."""
    if source.notebook is not None or "mindspore" not in source.text:
        return None
    if parsing.parses(source.text):
        return None  # the tree ast.parse would build is not needed here
    try:
        parsing.precheck(source.text, compiled=False)
    except ParseFailure as error:
        where = f":{error.line}" if error.line else ""
        return FileOutcome(
            source.path, source.text, source.text, error=f"{source.path}{where}: {error.message}"
        )
    return None


def migrate_source(
    source: sources.SourceFile, target: Version, rules: list[Rule], config: Config, fix: bool = True
) -> FileOutcome:
    """One file's outcome under ``rules``: its findings as the configuration keeps them, and its
    rewrite where ``fix``; a text Python rejects, or a bug of ours, is the file's error."""
    path = source.path
    project = _project.tracking()
    try:
        result = run_rules(source.text, target, rules, project, path, fix, written_for=config.written_for)
    except ParseFailure as error:
        where = f":{source.location(error.line)}" if error.line else ""
        return FileOutcome(path, source.text, source.text, error=f"{path}{where}: {error.message}")
    except RecursionError:
        return FileOutcome(path, source.text, source.text, error=f"{path}: too deeply nested to parse")
    except Exception as error:  # a bug of ours costs this file, never the run (nor a traceback)
        message = f"{path}: {INTERNAL_ERROR_IN_FILE}: {type(error).__name__}: {error}"
        return FileOutcome(path, source.text, source.text, error=message)
    applied = {id(item) for item in result.fixed}
    diagnostics = [
        # A fix the engine did not apply (validation refused the file's rewrite) is not one
        # `upgrade` makes: without it, "fixable" ([*], json, sarif) means what upgrade writes.
        # Reporting only (no ``fix``), nothing was applied: the rules' fixes stand as built.
        item if item.fix is None or not fix or id(item) in applied else dataclasses.replace(item, fix=None)
        for item in result.diagnostics
        if config.enabled(item.code, path)
    ]
    outcome = FileOutcome(path, source.text, result.text, diagnostics, result.converted)
    if source.notebook is not None:
        outcome.locations = {item.line: source.location(item.line) for item in diagnostics}
        if outcome.changed:
            # Whether the notebook can be written is known now: --dry-run says what upgrade would.
            try:
                source.encode(result.text)
            except sources.SourceError as error:
                outcome.after, outcome.error = source.text, str(error)
    if outcome.error is None and all(item.code != INTERNAL_ERROR.code for item in result.diagnostics):
        outcome.digest = content_digest(source.raw)
        outcome.consulted = project.consulted or None
    return outcome


def migrate_declining(
    outcome: FileOutcome,
    target: Version,
    config: Config,
    kinds: Sequence[str],
    declined: Collection[tuple[str, int]],
) -> FileResult:
    """The rules again on the text ``outcome`` was made from, with the ``declined`` sites (code,
    line) suppressed (``upgrade --interactive``); in the parent, with the run's files at hand."""
    rules = rules_for(outcome.path, config, kinds)
    written_for = config.written_for
    return run_rules(
        outcome.before, target, rules, _project, outcome.path, declined=declined, written_for=written_for
    )


def write_outcome(outcome: FileOutcome) -> None:
    """Write a migrated file, in the parent process only, if it still holds what was migrated."""
    try:
        source = sources.read_source(outcome.path)
        if source.text == outcome.after:
            outcome.found_written = True
            return  # another run, or another hard link to the file in this run, wrote it already
        if source.text != outcome.before:
            outcome.error = f"{outcome.path}: changed on disk during the run; left unchanged"
            return
        sources.write_source(source, outcome.after)
        outcome.written = True
    except sources.SourceError as error:
        outcome.error = str(error)


def _worker_start(paths: Sequence[Path]) -> None:
    """Pool initializer: die with the parent (Linux), pace the collector, learn the run's files."""
    _die_with_parent()
    pace_for_a_run()  # a forked worker has the parent's pace; a spawned one (macOS) would not
    _set_project(paths)


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: a worker whose parent is killed (even with SIGKILL) is killed too."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only a worker needs it

    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call: nothing will signal us
        os._exit(1)


def _any_applies(
    rules: Sequence[Rule], target: Version, written_for: Optional[Version] = None
) -> Callable[[str], bool]:
    """``lambda text: any(rule.selected_for(text, target, written_for) for rule in rules)``, with
    the targets checked once and each token once; a rule with its own ``applies_to`` is asked
    itself."""
    rules = [rule for rule in rules if written_for is not None or not rule.compares_releases]
    own = [rule for rule in rules if type(rule).applies_to is not Rule.applies_to]
    on_target = [rule for rule in rules if rule not in own and target in rule.targets]
    if any(not rule.prefilter for rule in on_target):
        return lambda text: True
    tokens = {token for rule in on_target for token in rule.prefilter}
    # `grad` is in every text that holds `grad(`: looking for `grad` alone will do.
    needed = tuple(sorted(token for token in tokens if not any(other in token for other in tokens - {token})))
    return lambda text: (
        any(token in text for token in needed) or any(rule.applies_to(text, target) for rule in own)
    )


@dataclass
class _Held:
    """A cached result that read other files: whether it holds is known once every file of the
    run has been read. ``source`` is None for a file not read (its ``lstat`` matched)."""

    path: Path
    source: Optional[sources.SourceFile]
    result: CachedResult
    dependencies: Dependencies


class _Run:
    """What one run needs to decide, file by file, whether the rules must run at all.

    The parent reads each file once: one that cannot be read, one that no selected rule's
    prefilter matches (most files of a model zoo), and one whose result is cached are done there
    and then, without parsing. Only the rest go to the rules, here or in a worker.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        target: Version,
        config: Config,
        kinds: Sequence[str],
        cache_dir: Optional[Path],
        texts: bool = True,
        project_paths: Optional[Sequence[Path]] = None,
        fix: bool = True,
    ) -> None:
        self.paths, self.target, self.config, self.kinds = paths, target, config, tuple(kinds)
        # What the project index reads: the whole tree even when this run is one shard of it, so a
        # shard decides each site as the whole run does (a network's class in another shard's file).
        self.project_paths = list(paths if project_paths is None else project_paths)
        self.texts, self.fix = texts, fix
        # The digest stats every file of the tool: a run without a cache has no use for it.
        self.cache = (
            None
            if cache_dir is None
            else Cache(cache_dir, settings_digest(RunSettings.of(target, kinds, config, fix).key()))
        )
        self.before = None if self.cache is None else self.cache.load_state()
        # The files as the last run found them, and as this one does, by their lstat: a file whose
        # lstat is unchanged is not read again when its cached result needs no text.
        self.known: dict[str, KnownFile] = {} if self.cache is None else self.cache.load_files()
        self.now_known: dict[str, KnownFile] = {}
        self.digests: dict[str, str] = {}  # absolute path -> digest, of the files read so far
        self.calls: dict[str, set[str]] = {}  # names called by the files changed since `before`
        self._prefilters: dict[tuple[Rule, ...], Callable[[str], bool]] = {}
        self._absolute: dict[int, tuple[Path, str]] = {}  # by id(path): a Path hashes slowly
        # A file changed after this, or within a timestamp tick before it, is "racy" (_signature).
        self.started_ns = time.time_ns()

    def absolute(self, path: Path) -> str:
        """``os.path.abspath(path)``, made once per path: the cache's key for a file, asked for
        by the triage and again by the run state."""
        kept = self._absolute.get(id(path))
        if kept is not None and kept[0] is path:
            return kept[1]
        text = os.fspath(path)
        # A Path is in normal form but for `..`: then it is joined to the working folder as
        # text, which is what abspath does with it after a normpath that finds nothing to do.
        if not isinstance(path, PurePosixPath) or text == "." or "/../" in f"/{text}/":
            found = os.path.abspath(text)
        elif text.startswith("/"):
            found = text
        else:
            found = f"{self._working_folder}/{text}"
        self._absolute[id(path)] = (path, found)
        return found

    @cached_property
    def _working_folder(self) -> str:
        return os.getcwd().rstrip("/")

    def _note(self, path: Path, raw: bytes) -> str:
        """The digest of a file's bytes; for a Python file changed since the last run, also the
        classes it instantiates (what `Dependencies.holds` asks of a changed file)."""
        key, digest = self.absolute(path), content_digest(raw)
        self.digests.setdefault(key, digest)
        if self.before is not None and self.before.digests.get(key) != digest and path.suffix == ".py":
            self.calls[key] = call_names(raw)
        return digest

    def triage(self, path: Path) -> Union[FileOutcome, sources.SourceFile, _Held]:
        """The file's outcome when it needs no parsing; else the file, for the rules; or a cached
        result that is reused if what it read of other files still holds (``settle``)."""
        signature = None if self.cache is None else _signature(path, self.started_ns)
        if signature is not None:
            unread = self._unread(path, signature)
            if unread is not None:
                return unread
        try:
            source = sources.read_source(path)
        except sources.SourceError as error:
            return FileOutcome(path, error=str(error))
        digest = "" if self.cache is None else self._note(path, source.raw)
        # A cached result was made under these settings from these bytes, so it passed the
        # prefilter then: looked up first, it saves the prefilter's scan on a rerun.
        found = None if self.cache is None else self.cache.load(path, digest)
        if found is None:
            # Bytes the last run found clean are not scanned or parsed again (a file read only
            # because its timestamp is too recent to trust, or touched without a change).
            known_clean = self._known_clean(path, digest)
            clean = known_clean or not self._prefilter(path)(source.text)
            broken = syntax_error_of(source) if clean and not known_clean else None
            if self.cache is not None:  # no signature (too recent): the digest is still worth keeping
                known = KnownFile(signature or "", digest, clean and broken is None)
                self.now_known[self.absolute(path)] = known
            if broken is not None:
                return broken
            if clean:
                return FileOutcome(path)  # unchanged, nothing found: no text to keep
            return source
        if signature is not None:
            self.now_known[self.absolute(path)] = KnownFile(signature, digest, False)
        result, dependencies = found
        if dependencies is not None:
            return _Held(path, source, result, dependencies)
        return self._reused(path, source, result)

    def _known_clean(self, path: Path, digest: str) -> bool:
        """Whether the last run found these very bytes clean (a file read again only because
        its timestamp is too recent to trust, or touched without a change)."""
        known = self.known.get(self.absolute(path))
        return known is not None and known.clean and bool(digest) and known.digest == digest

    def _unread(self, path: Path, signature: str) -> Union[FileOutcome, _Held, None]:
        """The outcome of a file whose lstat is what the last run saw, without reading it: nothing
        when no rule applied then, else its cached result if that needs no text (the file is not
        rewritten). None when the file must be read."""
        assert self.cache is not None
        key = self.absolute(path)
        known = self.known.get(key)
        if known is None or known.signature != signature:
            return None
        if self.before is not None and self.before.digests.get(key, known.digest) != known.digest:
            return None  # changed since the kept run state: what it calls now is needed
        if known.clean:
            self.digests.setdefault(key, known.digest)
            self.now_known[key] = known
            return FileOutcome(path)
        found = self.cache.load(key, known.digest)
        if found is None or (found[0].after is not None and self.texts):
            return None
        self.digests.setdefault(key, known.digest)
        self.now_known[key] = known
        result, dependencies = found
        if dependencies is not None:
            return _Held(path, None, result, dependencies)
        return self._reused(path, None, result)

    def settle(
        self, item: Union[FileOutcome, sources.SourceFile, _Held]
    ) -> Union[FileOutcome, sources.SourceFile]:
        if not isinstance(item, _Held):
            return item
        if not item.dependencies.holds(self.changes):
            if item.source is not None:
                return item.source
            try:
                return sources.read_source(item.path)
            except sources.SourceError as error:
                return FileOutcome(item.path, error=str(error))
        if item.dependencies.state != self.state.id and self.cache is not None:
            # It holds in this state too: say so, for the next run (which knows only this one).
            restamped = dataclasses.replace(item.dependencies, state=self.state.id)
            self.cache.store(item.path, self.digests[os.path.abspath(item.path)], item.result, restamped)
        return self._reused(item.path, item.source, item.result)

    def _reused(self, path: Path, source: Optional[sources.SourceFile], result: CachedResult) -> FileOutcome:
        """A cached result as an outcome; without ``source`` (not read) the result is unchanged
        text, and the outcome carries none."""
        assert self.cache is not None
        self.cache.hits += 1
        text = "" if source is None else source.text
        after = text if result.after is None else result.after
        diagnostics = list(result.diagnostics)
        return FileOutcome(path, text, after, diagnostics, result.fixed, locations=result.locations)

    def _prefilter(self, path: Path) -> Callable[[str], bool]:
        """Whether any rule selected for ``path`` applies to a text: ``Rule.applies_to`` for each,
        as one test of the tokens they all look for (every file of the run takes it)."""
        rules = tuple(self._rules_on_target if not self.config.per_file_ignores else self._rules(path))
        if rules not in self._prefilters:
            self._prefilters[rules] = _any_applies(rules, self.target, self.config.written_for)
        return self._prefilters[rules]

    def reads_the_project(self, source: sources.SourceFile) -> bool:
        """Whether a rule that asks about other files of the run applies to this one."""
        return any(
            rule.reads_the_project and rule.selected_for(source.text, self.target, self.config.written_for)
            for rule in self._rules(source.path)
        )

    def _rules(self, path: Path) -> list[Rule]:
        return rules_for(path, self.config, self.kinds)

    @cached_property
    def _rules_on_target(self) -> list[Rule]:
        return self._rules(Path())  # no per-file ignores: the same for every path

    def migrate(self, source: sources.SourceFile) -> FileOutcome:
        rules = rules_for(source.path, self.config, self.kinds)
        return migrate_source(source, self.target, rules, self.config, self.fix)

    @cached_property
    def state(self) -> RunState:
        """Every file of the run with its digest (as ``ProjectIndex`` reads them: following links);
        the files not read yet are read now."""
        keys = {}
        for path in self.project_paths:
            key = keys[path] = self.absolute(path)
            if key not in self.digests:
                try:
                    self._note(path, sources.read_guarded(path, follow_links=True)[0])
                except sources.SourceError:
                    self._note(path, b"")
        return RunState({key: self.digests[key] for key in keys.values()})

    @cached_property
    def changes(self) -> Changes:
        return Changes(self.state, self.before, self.calls)

    def keep(self, outcome: FileOutcome) -> FileOutcome:
        """Store a fresh outcome's result in the cache, when it may be kept."""
        if self.cache is None or outcome.digest is None:
            return outcome
        after = outcome.after if outcome.changed else None
        result = CachedResult(after, tuple(outcome.diagnostics), outcome.fixed, outcome.locations)
        dependencies = None
        consulted = outcome.consulted
        if consulted:
            files = {path: self.state.digests.get(path, "") for path in consulted.files}
            flags = (consulted.modules, consulted.everything)
            dependencies = Dependencies(self.state.id, files, frozenset(consulted.names), *flags)
        self.cache.store(outcome.path, outcome.digest, result, dependencies)
        return outcome

    def finish(self) -> None:
        """Keep this run's state, if a result that depends on it was kept or reused, and what it
        knows of each file by its lstat, if that changed."""
        if self.cache is None:
            return
        known = "state" in self.__dict__  # read, or needed, by this run
        changed = known and (self.before is None or self.before.id != self.state.id)
        merged = {**self.known, **self.now_known}  # a run over part of the tree keeps the rest
        files = merged if merged != self.known else None
        self.cache.save(self.state if changed else None, files, seen=self.now_known.keys())


def upgrade_files(
    paths: Sequence[Path],
    target: Version,
    write: bool,
    jobs: int = 1,
    config: Config = NO_CONFIG,
    kinds: Sequence[str] = UPGRADE_KINDS,
    cache_dir: Optional[Path] = None,
    texts: bool = True,
    project_paths: Optional[Sequence[Path]] = None,
    fix: bool = True,
) -> Iterator[FileOutcome]:
    """Migrate ``paths`` with the rules of ``kinds`` and, when ``write``, write each changed file
    from this process; outcomes come in the order of ``paths``, whatever the number of workers.

    ``jobs``: worker processes (0: one per available core, and never more); a pool starts only
    when more than one is asked for and at least ``MIN_FILES_FOR_POOL`` files need their rules run.
    ``cache_dir``: where results of earlier runs are kept (``ms_migrate.files.cache``); None: no cache.
    ``texts``: False when only findings are wanted (``check``): a file with a cached result is not
    read again, and its outcome carries the fixed text only.
    ``project_paths``: the files the project index reads (default ``paths``; a shard: every file).
    ``fix``: False when only findings are wanted (``check`` in text): rules may skip building
    their fixes (MS101 then marks its converted sites ``fix_pending``).
    """
    run = _Run(paths, target, config, kinds, cache_dir, texts, project_paths, fix)
    cores = available_cores()  # more workers than cores only add processes to wait for
    workers = min(jobs or cores, cores, len(paths))
    with paced_for_a_run():
        outcomes = _in_this_process(run) if workers <= 1 else _in_workers(run, workers)
        yield from _written(outcomes, write)
        run.finish()


def _in_this_process(run: _Run) -> Iterator[FileOutcome]:
    _set_project(run.project_paths)
    for path in run.paths:
        item = run.settle(run.triage(path))
        yield item if isinstance(item, FileOutcome) else run.keep(run.migrate(item))


def _in_workers(run: _Run, workers: int) -> Iterator[FileOutcome]:
    """Run the rules in a pool on the files that need them, or here when they are few.

    A file goes to a worker as soon as the parent has read it and found that the rules must run,
    so reading the rest of the tree overlaps the workers' parsing; its text is not kept (the
    worker reads it again). A cached result that depends on other files is settled once every
    file has been read, and goes out last if it does not hold. Outcomes come in path order.
    """
    done: list[Optional[FileOutcome]] = []  # by position in run.paths; None: the rules run on it
    sent: list[int] = []  # the positions of the files the rules run on, in the order they go
    read_all: list[bool] = []  # [True] once every file is triaged

    def to_rules() -> Iterator[sources.SourceFile]:
        held: list[tuple[int, _Held]] = []
        for path in run.paths:
            item = run.triage(path)
            done.append(item if isinstance(item, FileOutcome) else None)
            if isinstance(item, _Held):
                held.append((len(done) - 1, item))
            elif isinstance(item, sources.SourceFile):
                sent.append(len(done) - 1)
                yield item
        for position, waiting in held:  # after all are read: `run.state` is at hand
            settled = run.settle(waiting)
            if isinstance(settled, FileOutcome):
                done[position] = settled
            else:
                sent.append(position)
                yield settled
        read_all.append(True)

    _set_project(run.project_paths)
    pending = to_rules()
    first = list(itertools.islice(pending, MIN_FILES_FOR_POOL))
    if len(first) < MIN_FILES_FOR_POOL:  # every file is read, and few are to be parsed
        results: Iterator[Union[FileOutcome, WorkerDied]] = (run.migrate(source) for source in first)
    else:
        work = partial(_upgrade_pending, target=run.target, config=run.config, kinds=run.kinds, fix=run.fix)
        items = ((source.path, run.reads_the_project(source)) for source in itertools.chain(first, pending))
        count = min(workers, len(run.paths))
        args = (work, items, count, _worker_start, (run.project_paths,), FILES_PER_BATCH)
        results = map_in_workers(*args, grouped=operator.itemgetter(1))
    fresh: dict[int, FileOutcome] = {}  # the rules' outcomes, by position, until their turn
    with contextlib.closing(results):
        numbered = enumerate(results)
        position = 0
        while position < len(done) or not read_all:
            if position < len(done) and done[position] is not None:
                outcome = done[position]
            elif position in fresh:
                outcome = fresh.pop(position)
            else:  # with the rules, or not read yet (waiting for a result reads every file)
                number, result = next(numbered, (-1, None))
                if number < 0 and position < len(done):
                    raise RuntimeError(f"no outcome for {run.paths[position]}")
                if number >= 0:
                    fresh[sent[number]] = run.keep(_outcome_of(run.paths[sent[number]], result))
                continue
            yield outcome  # type: ignore[misc]
            position += 1


def _upgrade_pending(item: tuple[Path, bool], **options: object) -> FileOutcome:
    return _upgrade_file_lean(item[0], **options)


def _signature(path: Path, now_ns: int) -> Optional[str]:
    """The ``file_signature`` of a regular file (not a link); None for anything else, and for a
    file changed within a timestamp tick of ``now_ns`` (the run's start) or after it: an edit in
    that same tick, of the same size, would leave the signature as it is, and the next run would
    trust the old result ("racy clean", as git calls it). Such a file is read and hashed again
    until it is older."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return None if racy(info, now_ns) else file_signature(info)


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


def _known_networks(path: Path, text: str) -> NetworkLookup:
    """What this run's project index knows of the networks of ``text``'s train steps: the
    probes then stand in for the network the step is given, not for any it might be."""
    from ms_migrate.verify.sites import NetworkFacts

    view = _project.with_local(text, path)

    def lookup(class_name: str, attribute: str) -> Optional[NetworkFacts]:
        signatures = view.attribute_signatures(class_name, attribute)
        if None in signatures or any(item.keyword_only for item in signatures):  # type: ignore[union-attr]
            return None
        known = [item for item in signatures if item is not None]
        return NetworkFacts(
            positional=max(item.positional for item in known),
            required=min(item.required for item in known),
            varargs=any(item.varargs for item in known),
            built_from=_buildable_network(view, class_name, attribute),
        )

    return lookup


def _buildable_network(view: ProjectIndex, class_name: str, attribute: str) -> tuple[str, ...]:
    """The file ("" for the one being migrated) and name of what builds ``self.<attribute>`` of
    ``class_name`` with no arguments (a class or a factory function), and the MindSpore loss an
    `nn.WithLossCell` wraps it in ("" for none; ``network_builder``)."""
    builder = view.network_builder(class_name, attribute)
    if builder is None:
        return ()
    where, name, loss = builder
    return (str(where.resolve()) if where is not None else "", name, loss)


def _release_fixed(
    outcome: FileOutcome, target: Version, config: Config, kinds: Sequence[str]
) -> tuple[FileResult, str, bool]:
    """BEFORE with the release fixes applied (rules whose fixes are pairs the release facts prove:
    Rule.release_fix), and AFTER as verify runs it: what `upgrade --verify` compares, on the
    target's runtime, so that a 1.x file whose imports 2.x no longer has is compared on the rest
    of its rewrite. The fixes of every release rule apply, selected or not: one the run does not
    select (`--select MS101`) leaves the old name in AFTER too, and is applied there as well, for
    the run only (the flag says so). A downgrade runs BEFORE as it is, on the newest runtime, which
    has what it names."""
    if "downgrade" in kinds:
        return FileResult(outcome.before), outcome.after, False
    release = _release_rules(kinds)
    selected = {rule.code for rule in rules_for(outcome.path, config, kinds)}
    unselected = [rule for rule in release if rule.code not in selected]
    try:
        before = run_rules(
            outcome.before, target, release, _project, outcome.path, written_for=config.written_for
        )
        after = outcome.after
        if unselected:
            after = run_rules(
                after, target, unselected, _project, outcome.path, written_for=config.written_for
            ).text
    except ParseFailure:
        return FileResult(outcome.before), outcome.after, False
    return before, after, after != outcome.after


def _without_release_fixes(
    outcome: FileOutcome, target: Version, config: Config, kinds: Sequence[str]
) -> Optional[str]:
    """A downgrade's AFTER less its release fixes, for telling the sites to run: a definition
    that only they changed (1.7's `transforms.c_transforms.TypeCast` in a dataset function,
    `set_context(device_target=...)` for `set_device` in `main`) is proven by the pairs the
    release facts ran, as an upgrade's is; AFTER still runs whole on the target's runtime. None
    for an upgrade, whose BEFORE takes the release fixes instead (``_release_fixed``)."""
    if "downgrade" not in kinds:
        return None
    release = {rule.code for rule in _release_rules(kinds)}
    if not any(item.code in release and item.fix is not None for item in outcome.diagnostics):
        return None
    rules = [rule for rule in rules_for(outcome.path, config, kinds) if rule.code not in release]
    try:
        result = run_rules(
            outcome.before, target, rules, _project, outcome.path, written_for=config.written_for
        )
    except ParseFailure:
        return None
    return None if result.text == outcome.after else result.text


def _release_rules(kinds: Sequence[str]) -> list[Rule]:
    return [rule for rule in rules_of_kind(kinds) if rule.release_fix]


def _module_fixes(
    target: Version, config: Config, kinds: Sequence[str]
) -> Optional[Callable[[Path], Optional[tuple[str, list[str]]]]]:
    """The release-fixed text of a project module a verified file imports, and its fixes: the
    module runs so in both versions, on the target's runtime (verify's ``module_fixes``). None for
    a downgrade, whose versions run on the newest runtime, which has every name they use."""
    if "downgrade" in kinds:
        return None
    release = _release_rules(kinds)
    known: dict[Path, Optional[tuple[str, list[str]]]] = {}

    def fixed(path: Path) -> Optional[tuple[str, list[str]]]:
        if path not in known:
            known[path] = None
            try:
                text = sources.read_source(path).text
                result = run_rules(text, target, release, _project, path, written_for=config.written_for)
            except (sources.SourceError, ParseFailure):
                return None
            if result.fixed and result.text != text:
                known[path] = (result.text, [f"{done.code}:{done.line}" for done in result.fixed])
        return known[path]

    return fixed


def _lines_back(edited: str, original: str) -> dict[int, int]:
    """Each line of ``edited`` that ``original`` has unchanged, by its number there (1-based)."""
    import difflib

    matcher = difflib.SequenceMatcher(None, edited.splitlines(), original.splitlines(), autojunk=False)
    return {
        block.a + offset + 1: block.b + offset + 1
        for block in matcher.get_matching_blocks()
        for offset in range(block.size)
    }


def upgrade_files_verified(
    paths: Sequence[Path],
    target: Version,
    write: bool,
    options: VerifyOptions,
    allow_unverified: bool = False,
    jobs: int = 1,
    config: Config = NO_CONFIG,
    kinds: Sequence[str] = UPGRADE_KINDS,
    cache_dir: Optional[Path] = None,
    project_paths: Optional[Sequence[Path]] = None,
    before_verify: Optional[Callable[[VerifyOptions, list[Path]], VerifyOptions]] = None,
) -> Iterator[FileOutcome]:
    """Migrate every file, verify the changed ones in one batch, write only what was proven equal.
    ``before_verify`` adjusts the options for the files that changed, before any runs
    (``--install-requirements`` installs what their requirements name).

    One batch means MindSpore is imported once per mode for the whole run. A rewrite that differs
    or could not be run is held back (``outcome.held_back`` says why) unless ``allow_unverified``.
    """
    from ms_migrate.files.notebooks import cell_of_line
    from ms_migrate.verify import verify_many  # the verify machinery loads only when asked for
    from ms_migrate.verify.definitions import definitions_text

    run = upgrade_files(paths, target, False, jobs, config, kinds, cache_dir, project_paths=project_paths)
    outcomes = list(run)
    changed = [outcome for outcome in outcomes if outcome.changed]
    if before_verify is not None and changed:
        options = before_verify(options, [outcome.path for outcome in changed])
    # Importing a notebook as it is would run all of its cells (training loops included): verify
    # imports its definitions only.
    items, baselines, whole, fixed_on, sites_after = [], [], {}, [], []
    for outcome in changed:
        baseline, after, on_both = _release_fixed(outcome, target, config, kinds)
        before = baseline.text
        fixed_on.append("BEFORE and AFTER" if on_both else "BEFORE")
        unproven = _without_release_fixes(outcome, target, config, kinds)
        if outcome.path.suffix == ".ipynb":
            before, after = definitions_text(before), definitions_text(after)
            unproven = definitions_text(unproven) if unproven is not None else None
            whole[outcome.path] = outcome.after
        items.append((outcome.path, before, after))
        baselines.append(baseline)
        sites_after.append(unproven)

    def networks(path: Path, text: str) -> NetworkLookup:
        # A notebook's networks are built in the cells verify leaves out: they are read from all.
        return _known_networks(path, whole.get(path, text))

    reports = verify_many(items, options, networks, _module_fixes(target, config, kinds), sites_after)
    release = {rule.code for rule in _release_rules(kinds)}
    for outcome, report, baseline, on, told in zip(changed, reports, baselines, fixed_on, sites_after):
        report.release_fixes = [f"{fixed.code}:{fixed.line}" for fixed in baseline.fixed]
        report.release_fixes_on = on
        if told is not None:  # a downgrade's: AFTER holds them, and their sites alone were not run
            fixed = [item for item in outcome.diagnostics if item.code in release and item.fix is not None]
            report.release_fixes = [f"{item.code}:{item.line}" for item in fixed]
            report.release_fixes_on = "AFTER"
        if baseline.fixed:
            back = _lines_back(baseline.text, outcome.before)
            for result in report.results:
                result.line = back.get(result.line, result.line)
        outcome.verification = report
        if outcome.path.suffix == ".ipynb":
            for result in report.results:
                result.where = "cell {}:{}".format(*cell_of_line(outcome.before, result.line))
        if not report.ok and not allow_unverified:
            outcome.held_back = f"not written: {report.summary()}"
        elif write:
            write_outcome(outcome)
    yield from outcomes
