"""Results of earlier runs, reused while nothing that decides them has changed.

A file's result (its diagnostics and its fixed text) depends on its bytes; on the run's settings
(the tool's code, the target, the kinds of rules run, ``select``, ``ignore``, per-file ignores);
and, for most MS101 sites, on other files of the run (the network class a train step is built
with, see ``analysis.project``). The runs with one settings digest keep one file, named by it,
read once at the start of a run and written once at its end: one signed read where a rerun over
a model zoo read one entry per file with findings (3,820 of them). It holds each file's result
(by absolute path) with the digest of the bytes it was made from. A result that read other files
also holds what it read of them (``Dependencies``), and the run state (every file's digest) it was
last known to hold in. The file keeps the run state too, so the next run knows which files
changed since: such a result is reused unless a file it read changed, a changed file now
instantiates a class it looked for, or files were added or removed where it matched an import
against the run's paths. Editing one file of a model zoo thus redoes that file and the train
steps that depend on it, not every train step of the zoo.

A run also keeps, per settings, each file's ``lstat`` signature (size, modification and change
times, inode) with the digest of its bytes and whether no rule's prefilter matched them. A rerun
does not read a file whose signature is unchanged unless its text is needed (a result that
rewrites it): the change time is set by the kernel on every write and cannot be restored, so a
file rewritten at its old size and modification time still reads as changed.

A walk over the same paths with the same excludes keeps what it found in each folder (its own
signed file, ``WalkCache``): the next walk lists again only the folders whose ``lstat`` changed
(``sources.FolderListings`` says when a listing still holds).

The files live in ``.ms_migrate_cache/`` at the project root (beside the nearest
``pyproject.toml``, else in the working directory), which holds a ``.gitignore`` of ``*`` as
ruff's cache does. They are JSON, not pickle: a cache directory that came with a checkout must
not be able to run code. Nor may it put text into a source file, or hide a finding: each file of
the cache starts with a keyed BLAKE2b digest of its name and contents, under a key kept outside
every repository (``$XDG_CACHE_HOME/ms-migrate/cache-key``, made once per user, mode 0600), and a
file whose digest does not match is a miss. A write is atomic (a temporary file, then
``os.replace``), so a reader never sees half a file, and a file or an entry that cannot be
read or decoded is a miss, never an error. Like ``sources``, this module touches the filesystem, but only
its own directory and its key.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from ms_migrate import __version__
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity

if TYPE_CHECKING:
    from ms_migrate.files.sources import FolderListings

DIRECTORY = ".ms_migrate_cache"
DIRECTORY_VARIABLE = "MS_MIGRATE_CACHE_DIR"  # a folder to use instead (tests, read-only trees)
_GITIGNORE = "# Created by ms-migrate: its cache is never committed.\n*\n"
_CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# ms-migrate's cache (bford.info/cachedir)\n"
_PACKAGE = Path(__file__).parents[1]  # every module of the tool: a new build is a new key


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def cache_directory(start: Path) -> Path:
    """``MS_MIGRATE_CACHE_DIR`` if set; else ``.ms_migrate_cache`` in the nearest folder at or
    above ``start`` that holds a pyproject.toml (up to the repository root); else in the cwd."""
    chosen = os.environ.get(DIRECTORY_VARIABLE)
    if chosen:
        return Path(chosen)
    folder = Path(os.path.abspath(start))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / DIRECTORY
        if (candidate / ".git").exists():
            break
    return Path.cwd() / DIRECTORY


def _stats(folders: Iterable[Path], pattern: str = "*") -> list[str]:
    """Name, size and modification time of every file under ``folders``: a change to the tool's
    code or data shows here without reading a byte (an edited checkout keeps its version)."""
    found = []
    for folder in folders:
        for directory, subdirs, files in os.walk(folder):
            subdirs[:] = sorted(name for name in subdirs if name != "__pycache__")
            for name in sorted(files):
                if not Path(name).match(pattern) or name.endswith((".pyc", ".pyo")):
                    continue
                try:
                    info = os.stat(os.path.join(directory, name))
                except OSError:
                    continue
                found.append(f"{directory}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return found


def settings_digest(settings: Sequence[str]) -> str:
    """Everything besides the file itself that decides its result: the run's settings
    (``RunSettings.key()``, each field of it) and the code that computes it (this tool, its
    data, the rules a project adds, the Python that parses)."""
    from ms_migrate.facts.data import _PACKAGED, _SOURCE_TREE

    user_rules = [
        Path(folder) for folder in os.environ.get("MS_MIGRATE_RULES_PATH", "").split(os.pathsep) if folder
    ]
    parts = [
        __version__,
        sys.implementation.cache_tag or "",  # another Python may parse or fail differently
        *_stats([_PACKAGE]),
        *_stats([folder for folder in (_PACKAGED, _SOURCE_TREE) if folder.is_dir()]),
        *_stats(user_rules, "*.py"),
        *settings,
    ]
    return content_digest("\0".join(parts).encode("utf-8", "surrogateescape"))


def file_signature(info: os.stat_result) -> str:
    """What changes whenever a file's bytes may have: its size, times and identity. The change
    time (``st_ctime_ns``) is set by the kernel on every write, rename and chmod and cannot be
    set back by tools that preserve modification times (``cp -p``, ``rsync -t``, ``touch -r``)."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:{info.st_dev}"


# How far apart two writes can be and still get one timestamp: where the times are whole seconds
# (ext3, ext4 with 128-byte inodes, HFS+, some network mounts) up to FAT's 2 s; where they keep
# nanoseconds, the kernel's clock tick, a few milliseconds (10 ms allows for a slow one).
COARSE_TICK_NS = 2_000_000_000
FINE_TICK_NS = 10_000_000


def racy(info: os.stat_result, now_ns: int) -> bool:
    """Whether ``info`` was taken within one timestamp tick of the file's last change."""
    coarse = info.st_mtime_ns % 1_000_000_000 == 0 and info.st_ctime_ns % 1_000_000_000 == 0
    tick = COARSE_TICK_NS if coarse else FINE_TICK_NS
    return max(info.st_mtime_ns, info.st_ctime_ns) > now_ns - tick


@dataclass(frozen=True)
class KnownFile:
    """A file as the last run read it: its ``file_signature``, the digest of its bytes, and
    whether no selected rule's prefilter matched them (``clean``: nothing to report)."""

    signature: str
    digest: str
    clean: bool


@dataclass
class RunState:
    """Every file of a run (absolute path -> digest of its bytes); ``id`` names the whole."""

    digests: dict[str, str]

    @cached_property
    def id(self) -> str:
        text = "\0".join(f"{path}\0{digest}" for path, digest in sorted(self.digests.items()))
        return content_digest(text.encode("utf-8", "surrogateescape"))


@dataclass
class Changes:
    """How the files of this run (``now``) differ from the state the previous run kept."""

    now: RunState
    before: Optional[RunState]
    calls: dict[str, set[str]]  # for each Python file changed since ``before``: the names it calls

    @cached_property
    def same_paths(self) -> bool:
        return self.before is not None and self.before.digests.keys() == self.now.digests.keys()

    @cached_property
    def names_called(self) -> set[str]:
        """Every name a changed file calls now."""
        assert self.before is not None
        changed = (
            path for path, digest in self.now.digests.items() if self.before.digests.get(path) != digest
        )
        return {name for path in changed for name in self.calls.get(path, ())}


@dataclass(frozen=True)
class Dependencies:
    """What a result read of the other files of its run (see ``analysis.project.Consulted``),
    and the id of a run state it holds in."""

    state: str
    files: dict[str, str]  # absolute path -> digest, of each file whose facts it read
    names: frozenset[str] = frozenset()
    modules: bool = False
    everything: bool = False

    def holds(self, changes: Changes) -> bool:
        """Whether the result still holds in the run state ``changes.now``."""
        now, before = changes.now, changes.before
        if any(now.digests.get(path) != digest for path, digest in self.files.items()):
            return False
        if self.state == now.id:
            return True
        if self.everything or before is None or self.state != before.id:
            return False  # no record of what changed since the state it holds in
        if self.modules and not changes.same_paths:
            return False
        # A file that called one of `names` before was read: its digest was checked above.
        return not self.names & changes.names_called


@dataclass(frozen=True)
class CachedResult:
    """What a run found in one file: all that is needed to report it again, or to write it."""

    after: Optional[str]  # the fixed text; None when unchanged
    diagnostics: tuple[Diagnostic, ...]
    fixed: int
    locations: dict[int, str] = field(default_factory=dict)  # notebook lines as "cell N:M"


Kept = tuple[CachedResult, Optional[Dependencies]]  # a result, and what it read of other files


class CorruptEntry(ValueError):
    pass


KEY_FILE = "cache-key"


@cache
def _key() -> bytes:
    """This user's key for the cache's digests, made on first use. Where it cannot be kept (a
    read-only home), a key for this process alone: what it writes is then a miss for the next
    run, never trusted unsigned."""
    try:
        folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ms-migrate"
    except (RuntimeError, KeyError):  # no home to be found: a key for this process alone
        return os.urandom(32)
    path = folder / KEY_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(os.urandom(32))
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except OSError:
        pass
    return os.urandom(32)


def _mac(path: Path, payload: bytes) -> bytes:
    """The keyed digest of a cache file: its place in the cache (so an entry cannot stand in for
    another file's) and its bytes."""
    name = f"{path.parent.name}/{path.name}".encode("utf-8", "surrogateescape")
    return hashlib.blake2b(name + b"\0" + payload, key=_key(), digest_size=32).hexdigest().encode("ascii")


def _signed(path: Path, payload: bytes) -> bytes:
    return _mac(path, payload) + b"\n" + payload


def _read_json(path: Path) -> Any:
    """A cache file's JSON, read as untrusted input: through the guarded door (a FIFO or device in
    its place is not waited on), its digest checked (a file edited or made by anyone without this
    user's key is corrupt), and nested too deeply to decode counts as corrupt. Raises
    CorruptEntry, which every reader takes for a miss."""
    from ms_migrate.files.sources import SourceError, read_guarded

    try:
        mac, _, payload = read_guarded(path)[0].partition(b"\n")
        if not hmac.compare_digest(mac, _mac(path, payload)):
            raise CorruptEntry(f"{path}: not signed with this user's key")
        return json.loads(payload)
    except (SourceError, RecursionError) as error:
        raise CorruptEntry(str(error)) from None


@dataclass
class Cache:
    """What the runs with one settings digest keep under ``directory``: one signed file, read
    once and written once per run (see ``save``); ``hits`` and ``stored`` count this run's
    reuses and new results."""

    directory: Path
    settings: str
    hits: int = 0
    stored: int = 0
    _writable: bool = True
    _results: dict[str, Any] = field(default_factory=dict)  # this run's new entries, by absolute path
    _reused: set[str] = field(default_factory=set)  # the kept entries this run read

    def _file(self) -> Path:
        return self.directory / __version__ / f"run-{self.settings}"

    @cached_property
    def _kept(self) -> dict[str, Any]:
        """The file the last run kept: its run state, what it knew of each file by its ``lstat``,
        and each file's result, as JSON (empty when there is none, or none to trust)."""
        try:
            data = _read_json(self._file())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        parts = ("state", "files", "results")
        return {part: data[part] for part in parts if isinstance(data.get(part), dict)}

    def load(self, path: Union[Path, str], digest: str) -> Optional[Kept]:
        """The result of ``path`` (a str: already absolute) if it was made from bytes with
        ``digest``, and what it read of other files (None: nothing); None when there is no
        usable entry."""
        try:
            key = path if isinstance(path, str) else os.path.abspath(path)
            data = self._kept.get("results", {}).get(key)
            if not isinstance(data, dict) or data.get("digest") != digest:
                return None
            found = _decode(data), _decode_dependencies(data["project"])
            self._reused.add(key)
            return found
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None  # a corrupt entry: the file is processed, the entry replaced

    def store(
        self, path: Path, digest: str, result: CachedResult, dependencies: Optional[Dependencies]
    ) -> None:
        """Keep ``result`` for ``path`` (written by ``save``)."""
        project = None if dependencies is None else _encode_dependencies(dependencies)
        self._results[os.path.abspath(path)] = {"digest": digest, "project": project, **_encode(result)}
        self.stored += 1

    def load_files(self) -> dict[str, KnownFile]:
        """What the last run with these settings knew of each file by its ``lstat`` (empty if
        nothing can be read)."""
        try:
            return {
                path: KnownFile(signature, digest, bool(clean))
                for path, (signature, digest, clean) in self._kept.get("files", {}).items()
                if isinstance(path, str) and isinstance(signature, str) and isinstance(digest, str)
            }
        except (ValueError, TypeError, AttributeError):
            return {}

    def load_state(self) -> Optional[RunState]:
        """The run state the last run with these settings kept; None if there is none to read."""
        data = self._kept.get("state")
        if not data or not all(isinstance(text, str) for pair in data.items() for text in pair):
            return None
        return RunState(data)

    def save(
        self, state: Optional[RunState], files: Optional[dict[str, KnownFile]], seen: Iterable[str] = ()
    ) -> None:
        """Keep this run's new results, with its run state and what it knows of each file by its
        ``lstat`` where they changed (None: as the last run kept them), in one file written at
        once. Of the results kept before, those of files this run did not see stay, and of those
        it saw (``seen``, absolute paths) the ones it read: a file fixed or emptied since loses
        its old entry. Nothing is written when nothing changed; a cache that cannot be written is
        given up silently. Of two runs at once, the last to finish keeps its file: the other's
        new results are only lost work."""
        kept = self._kept
        old = kept.get("results", {})
        stale = {path for path in seen if path in old and path not in self._reused}
        if state is None and files is None and not self._results and not stale:
            return
        data = {
            "state": kept.get("state", {}) if state is None else state.digests,
            "files": kept.get("files", {})
            if files is None
            else {path: [known.signature, known.digest, int(known.clean)] for path, known in files.items()},
            "results": {**{path: entry for path, entry in old.items() if path not in stale}, **self._results},
        }
        self._write(self._file(), data)

    def _write(self, path: Path, data: Any) -> bool:
        self._writable = self._writable and _keep(self.directory, path, data)
        return self._writable


def _keep(directory: Path, path: Path, data: Any) -> bool:
    """Write ``data`` signed to ``path`` in the cache ``directory`` (made if it is not there; its
    .gitignore and CACHEDIR.TAG put back if they are gone, so git never sees the cache); False
    where it cannot be written (a read-only tree, a full disk: the run goes on without it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _CACHEDIR_TAG)):
            if not (directory / name).exists():
                _write_atomically(directory / name, text.encode())
        _write_atomically(path, _signed(path, json.dumps(data).encode("ascii")))  # ASCII: any str goes
    except OSError:
        return False
    return True


@dataclass
class WalkCache:
    """What the last walk over the same paths, from the same folder, with the same excludes
    found (``sources.FolderListings``): one signed file per such walk, read before the walk and
    written after it when something changed. A file that cannot be read or decoded is a miss:
    the walk lists every folder."""

    directory: Path
    walk: str  # the digest of what was walked and how (``walk_digest``)

    def _file(self) -> Path:
        return self.directory / __version__ / f"walk-{self.walk}"

    def load(self) -> Optional[FolderListings]:
        from ms_migrate.files.sources import FolderListings, Listing

        try:
            data = _read_json(self._file())
            chains = {
                _str(top): tuple(_str(folder) for folder in chain) for top, chain in data["chains"].items()
            }
            ignore_files = {_str(path): _str(signature) for path, signature in data["ignore_files"].items()}
            folders = {
                _str(path): Listing(
                    _str(signature),
                    tuple(_str(name) for name in subfolders),
                    tuple(_str(name) for name in files),
                    _bool(holds_ignore_file),
                )
                for path, (signature, subfolders, files, holds_ignore_file) in data["folders"].items()
            }
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        excludes = tuple(_str(pattern) for pattern in data["excludes"])
        return FolderListings(excludes, chains, ignore_files, folders)

    def save(self, found: FolderListings, known: Optional[FolderListings]) -> None:
        """Keep what this walk ``found`` if it is whole and not what the walk was given."""
        if not found.complete or (
            known is not None
            and (found.excludes, found.chains, found.ignore_files, found.folders)
            == (known.excludes, known.chains, known.ignore_files, known.folders)
        ):
            return
        folders = {
            path: [listing.signature, listing.folders, listing.files, listing.holds_ignore_file]
            for path, listing in found.folders.items()
        }
        data = {"excludes": found.excludes, "chains": found.chains, "ignore_files": found.ignore_files}
        _keep(self.directory, self._file(), {**data, "folders": folders})


def walk_digest(paths: Sequence[Path], excludes: Sequence[str]) -> str:
    """What decides a walk besides the tree: the paths as given, the folder they are relative
    to, the excludes, and the code that walks (``settings_digest``)."""
    return settings_digest(["walk", os.getcwd(), *map(os.fspath, paths), "\0", *excludes])


def _write_atomically(path: Path, data: bytes) -> None:
    """Readers, and concurrent runs, see the old entry or the new one, never a part."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# --- JSON form of a result ---------------------------------------------------------------------


def _encode(result: CachedResult) -> dict[str, Any]:
    fixes: list[Fix] = []
    for item in result.diagnostics:
        if item.fix is not None and item.fix not in fixes:
            fixes.append(item.fix)  # MS101 gives every converted site of a file the same fix
    return {
        "after": result.after,
        "fixed": result.fixed,
        "fixes": [
            [
                [[*edit.start, *edit.end, edit.replacement] for edit in fix.edits],
                fix.safety,
                fix.description,
                list(fix.imports),
                list(fix.unused),
            ]
            for fix in fixes
        ],
        "diagnostics": [
            [
                item.code,
                item.line,
                item.col,
                *item.end,
                item.message,
                item.severity.value,
                None if item.fix is None else fixes.index(item.fix),
                item.replacement,
                item.fix_pending,
            ]
            for item in result.diagnostics
        ],
        "locations": sorted(result.locations.items()),
    }


def _encode_dependencies(dependencies: Dependencies) -> dict[str, Any]:
    return {
        "state": dependencies.state,
        "files": dependencies.files,
        "names": sorted(dependencies.names),
        "modules": dependencies.modules,
        "everything": dependencies.everything,
    }


def _decode_dependencies(data: Any) -> Optional[Dependencies]:
    if data is None:
        return None
    files = {_str(path): _str(digest) for path, digest in data["files"].items()}
    flags = [data["modules"], data["everything"]]
    if not all(isinstance(flag, bool) for flag in flags):
        raise CorruptEntry(repr(flags))
    return Dependencies(_str(data["state"]), files, frozenset(_str(name) for name in data["names"]), *flags)


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptEntry(repr(value))
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise CorruptEntry(repr(value))
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise CorruptEntry(repr(value))
    return value


_SEVERITIES = {severity.value: severity for severity in Severity}  # a dict: Enum's call is slow


def _decode(data: dict[str, Any]) -> CachedResult:
    fixes = [
        Fix(
            tuple(Edit((_int(a), _int(b)), (_int(c), _int(d)), _str(text)) for a, b, c, d, text in edits),
            _str(safety),
            _str(description),
            tuple(_str(name) for name in imports),
            tuple(_str(name) for name in unused),
        )
        for edits, safety, description, imports, unused in data["fixes"]
    ]
    rows = data["diagnostics"]
    diagnostics = tuple(
        Diagnostic(
            _str(code),
            _int(line),
            _int(col),
            (_int(end_line), _int(end_col)),
            _str(message),
            _SEVERITIES[severity],
            None if fix is None else fixes[_int(fix)],
            None if replacement is None else _str(replacement),
            _bool(pending),
        )
        for code, line, col, end_line, end_col, message, severity, fix, replacement, pending in rows
    )
    after = data["after"]
    return CachedResult(
        None if after is None else _str(after),
        diagnostics,
        _int(data["fixed"]),
        {_int(line): _str(where) for line, where in data["locations"]},
    )
