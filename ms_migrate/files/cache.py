"""Results of earlier runs, reused while nothing that decides them has changed.

A file's result (its diagnostics and its fixed text) depends on its bytes; on the run's settings
(the tool's code, the target, the kinds of rules run, ``select``, ``ignore``, per-file ignores);
and, for most MS101 sites, on other files of the run (the network class a train step is built
with, see ``analysis.project``). Each file has one entry per settings, named by a digest of the
settings and the file's absolute path, which holds the digest of the bytes it was made from. A
result that read other files also holds what it read of them (``Dependencies``), and the run
state (every file's digest) it was last known to hold in. Each run keeps its state, so the next
one knows which files changed since: such a result is reused unless a file it read changed, a
changed file now instantiates a class it looked for, or files were added or removed where it
matched an import against the run's paths. Editing one file of a model zoo thus redoes that file
and the train steps that depend on it, not every train step of the zoo.

A run also keeps, per settings, each file's ``lstat`` signature (size, modification and change
times, inode) with the digest of its bytes and whether no rule's prefilter matched them. A rerun
does not read a file whose signature is unchanged unless its text is needed (a result that
rewrites it): the change time is set by the kernel on every write and cannot be restored, so a
file rewritten at its old size and modification time still reads as changed.

Entries live in ``.ms_migrate_cache/`` at the project root (beside the nearest
``pyproject.toml``, else in the working directory), which holds a ``.gitignore`` of ``*`` as
ruff's cache does. They are JSON, not pickle: a cache directory that came with a checkout must
not be able to run code. Nor may it put text into a source file, or hide a finding: each file of
the cache starts with a keyed BLAKE2b digest of its name and contents, under a key kept outside
every repository (``$XDG_CACHE_HOME/ms-migrate/cache-key``, made once per user, mode 0600), and a
file whose digest does not match is a miss. A write is atomic (a temporary file, then
``os.replace``), so a reader never sees half an entry, and an entry that cannot be read or
decoded is a miss, never an error. Like ``sources``, this module touches the filesystem, but only
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
from typing import Any, Optional

from ms_migrate import __version__
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity

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
    """The entries for one settings digest under ``directory``; ``hits`` and ``stored`` count
    this run's reads and writes."""

    directory: Path
    settings: str
    hits: int = 0
    stored: int = 0
    _writable: bool = True
    _made: set[Path] = field(default_factory=set)

    def _entry(self, path: Path) -> Path:
        key = content_digest(f"{self.settings}\0{os.path.abspath(path)}".encode("utf-8", "surrogateescape"))
        return self.directory / __version__ / key[:2] / key[2:]

    def load(self, path: Path, digest: str) -> Optional[tuple[CachedResult, Optional[Dependencies]]]:
        """The entry of ``path`` if it was made from bytes with ``digest``, and what it read of
        other files (None: nothing); None when there is no usable entry."""
        try:
            data = _read_json(self._entry(path))
            if not isinstance(data, dict) or data.get("digest") != digest:
                return None
            return _decode(data), _decode_dependencies(data["project"])
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            return None  # no entry, or a corrupt one: the file is processed, the entry replaced

    def store(
        self, path: Path, digest: str, result: CachedResult, dependencies: Optional[Dependencies]
    ) -> None:
        """Keep ``result`` for ``path``; a cache that cannot be written is given up silently."""
        project = None if dependencies is None else _encode_dependencies(dependencies)
        self.stored += self._write(
            self._entry(path), {"digest": digest, "project": project, **_encode(result)}
        )

    def _files_file(self) -> Path:
        return self.directory / __version__ / f"files-{self.settings}"

    def load_files(self) -> dict[str, KnownFile]:
        """What the last run with these settings knew of each file by its ``lstat`` (empty if
        nothing can be read)."""
        try:
            data = _read_json(self._files_file())
            return {
                path: KnownFile(signature, digest, bool(clean))
                for path, (signature, digest, clean) in data.items()
                if isinstance(path, str) and isinstance(signature, str) and isinstance(digest, str)
            }
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def store_files(self, files: dict[str, KnownFile]) -> None:
        data = {path: [known.signature, known.digest, int(known.clean)] for path, known in files.items()}
        self._write(self._files_file(), data)

    def _state_file(self) -> Path:
        return self.directory / __version__ / f"state-{self.settings}"

    def load_state(self) -> Optional[RunState]:
        """The run state the last run with these settings kept; None if there is none to read."""
        try:
            data = _read_json(self._state_file())
            if not isinstance(data, dict) or not all(
                isinstance(key, str) and isinstance(value, str) for key, value in data.items()
            ):
                return None
            return RunState(data)
        except (OSError, ValueError):
            return None

    def store_state(self, state: RunState) -> None:
        self._write(self._state_file(), state.digests)

    def _write(self, path: Path, data: Any) -> bool:
        if not self._writable:
            return False
        try:
            if path.parent not in self._made:
                self._prepare(path.parent)
            _write_atomically(path, _signed(path, json.dumps(data).encode("ascii")))  # ASCII: any str goes
        except OSError:
            self._writable = False  # a read-only tree, a full disk: run without the cache
        return self._writable

    def _prepare(self, folder: Path) -> None:
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _CACHEDIR_TAG)):
                if not (self.directory / name).exists():
                    _write_atomically(self.directory / name, text.encode())
        folder.mkdir(parents=True, exist_ok=True)
        self._made.add(folder)


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
            Severity(severity),
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
