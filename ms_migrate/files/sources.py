"""Finding, reading and writing source files: the only module that touches the filesystem.

Reading keeps everything a rewrite must give back unchanged: the encoding (PEP 263 cookie or
UTF-8 BOM), the newline style and the file mode. Writing happens under an advisory lock on the
file and only if it still holds what was read. It is atomic (a temporary file in the same
directory, then ``os.replace``), so an interrupted run never leaves a half-written file, except
for a hard-linked file: that one is rewritten in place so that its other names follow, with its
old bytes kept in a backup beside it until the new ones are on disk.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fnmatch
import io
import os
import re
import stat
import time
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Optional

from ms_migrate.files.cache import file_signature, racy
from ms_migrate.files.gitignore import IgnoreFile

if TYPE_CHECKING:
    from ms_migrate.files.notebooks import Notebook

try:
    from fcntl import LOCK_EX, LOCK_NB, flock
except ImportError:  # Windows: writes stay atomic, but two runs are not kept apart
    flock = None  # type: ignore[assignment]

SKIPPED_DIRECTORIES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        "env",
        ".env",
        "build",
        "dist",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ms_migrate_cache",
        "node_modules",
        "site-packages",
        ".ipynb_checkpoints",
    }
)
SUFFIXES = (".py", ".ipynb")
# Temporary files are `.NAME.XXXXXXXX.ms-migrate.tmp` beside the file being replaced. A run killed
# between creating and renaming one leaves it behind; the next writing run removes it. The writer
# holds a flock on it until the rename, so one nobody holds is an orphan, however young; where
# locks do not work, only age tells.
TEMPORARY_SUFFIX = ".ms-migrate.tmp"
_TEMPORARY = re.compile(r"^\..+\.[A-Za-z0-9_]{8}" + re.escape(TEMPORARY_SUFFIX) + "$")
STALE_AFTER_S = 60.0  # a live run's temporary file exists for milliseconds
# Backups are `.NAME.XXXXXXXX.ms-migrate.orig`: a hard-linked file's old bytes while it is rewritten
# in place. One left behind means the write was interrupted; it is reported, never removed.
BACKUP_SUFFIX = ".ms-migrate.orig"
_BACKUP = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}" + re.escape(BACKUP_SUFFIX) + "$")


class SourceError(Exception):
    """A file that cannot be read or written; ``line`` is 0 when no line is to blame."""

    def __init__(self, path: Path, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass(frozen=True)
class SourceFile:
    """A decoded Python file plus what is needed to write it back byte-for-byte alike.

    For a notebook, ``text`` is the virtual module of its code cells (see ``notebooks``).
    """

    path: Path
    text: str
    encoding: str
    has_bom: bool
    mode: int
    raw: bytes
    notebook: Optional[Notebook] = None

    def encode(self, text: str) -> bytes:
        if self.notebook is not None:
            from ms_migrate.files.notebooks import NotebookError

            try:
                text = self.notebook.with_virtual_text(text)
            except NotebookError as error:
                raise SourceError(self.path, str(error)) from error
        body = text.encode(self.encoding)
        return codecs.BOM_UTF8 + body if self.has_bom else body

    def location(self, line: int) -> str:
        """Where a line of ``text`` is, as users see the file."""
        if self.notebook is None:
            return str(line)
        cell, line_in_cell = self.notebook.cell_of_line(line, self.text)
        return f"cell {cell}:{line_in_cell}"


def _is_virtualenv(directory: Path) -> bool:
    try:
        return (directory / "pyvenv.cfg").is_file()
    except OSError:  # an unreadable directory: os.walk reports it
        return False


def excluded(path: Path, excludes: Iterable[str]) -> bool:
    """Whether an `exclude` pattern matches ``path``: the whole of it, its name, or a folder on
    the way to it (`build` leaves out `a/build/x.py`), as ruff's `exclude` does."""
    text = path.as_posix()
    return any(
        fnmatch.fnmatch(text, pattern)
        or fnmatch.fnmatch(path.name, pattern)
        or fnmatch.fnmatch(text, f"*/{pattern}")
        or fnmatch.fnmatch(text, f"{pattern}/*")
        or fnmatch.fnmatch(text, f"*/{pattern}/*")
        for pattern in (item.rstrip("/") or item for item in excludes)
    )


class _GitIgnores:
    """The .gitignore files that apply below a directory: its own, its parents' up to the
    repository root, and those met while walking down; each matches relative to its folder.

    A directory named on the command line is walked even when a parent's .gitignore ignores it
    (as ruff does): the patterns that match the directory itself are dropped for that walk.
    """

    def __init__(self, root: Path) -> None:
        # (folder, the folder as text ending in "/", its patterns as one matcher)
        self._specs: list[tuple[str, str, IgnoreFile]] = []
        # Folders whose .gitignore is read only when a decision needs it: a walk that lists no
        # folder again (``FolderListings``) asks none.
        self._pending: list[tuple[Path, Optional[Path]]] = []
        self._by_folder: dict[str, tuple[int, list[tuple[IgnoreFile, str]]]] = {}
        parents: list[Path] = []
        for folder in (root, *root.parents):
            parents.append(folder)
            if (folder / ".git").exists():
                break
        else:
            parents = [root]
        # What a cached walk must find again to trust its listings (``FolderListings``): the
        # folders whose .gitignore files apply from above, and each .gitignore read, by its
        # signature ("" where there is none).
        self.chain = tuple(folder.as_posix() for folder in parents)
        self.read: dict[str, str] = {}
        self.racy = False  # a .gitignore changed within a timestamp tick: no listing is kept
        for folder in reversed(parents):
            self.add(folder, root)

    def add(self, folder: Path, root: Optional[Path] = None) -> None:
        """Apply ``folder``'s .gitignore (if it has one) below it, after those added before;
        ``root``: the folder walked, when ``folder`` is above it."""
        self.read[(folder / ".gitignore").as_posix()] = self._signature(folder / ".gitignore")
        self._pending.append((folder, root))

    @property
    def specs(self) -> list[tuple[str, str, IgnoreFile]]:
        """(folder, the folder as text ending in "/", its patterns as one matcher), outermost
        first."""
        while self._pending:
            self._read(*self._pending.pop(0))
        return self._specs

    def _read(self, folder: Path, root: Optional[Path]) -> None:
        ignore = folder / ".gitignore"
        if not ignore.is_file():
            return
        try:
            lines = read_guarded(ignore, follow_links=True)[0].decode("utf-8", "replace").splitlines()
        except SourceError:
            return
        matcher = IgnoreFile(lines)
        if root is not None and root != folder:
            parts = root.relative_to(folder).parts
            chain = ["/".join(parts[: index + 1]) for index in range(len(parts))]
            matcher = matcher.without_matches_of(chain)
        if not matcher:
            return
        text = folder.as_posix()
        self._specs.append((text, text if text.endswith("/") else text + "/", matcher))

    def _signature(self, ignore: Path) -> str:
        try:
            info = os.stat(ignore)
        except OSError:
            return ""
        self.racy = self.racy or racy(info, time.time_ns())
        return file_signature(info)

    def still_read(self, known: dict[str, str]) -> bool:
        """Whether every .gitignore of ``known`` (path -> signature) is as it was then."""
        return all(
            self.read.get(path) == signature or self._signature(Path(path)) == signature
            for path, signature in known.items()
        )

    def ignored_in(self, here: str, real_here: str, entry: os.DirEntry[str], is_dir: bool) -> bool:
        """``ignored`` for ``entry`` of folder ``here``; ``real_here`` is ``here`` resolved, so
        that only a link costs a resolve (one system call per component of the path)."""
        if not self.specs:
            return False
        if entry.is_symlink():
            real = Path(os.path.join(here, entry.name)).resolve().as_posix()
            return self.ignored(real, is_dir)
        decision = None
        # Every entry of a folder has the same .gitignore files above it: found once per folder.
        for matcher, folder_relative in self._applying(real_here):
            result = matcher.decide(folder_relative + entry.name, is_dir)
            if result is not None:
                decision = result
        return bool(decision)

    def _applying(self, real_folder: str) -> list[tuple[IgnoreFile, str]]:
        """The matchers whose folder is ``real_folder`` or above it, outermost first, each with
        the folder's path relative to its own (ending in "/", or empty)."""
        found = self._by_folder.get(real_folder)
        if found is None or found[0] != len(self.specs):  # a .gitignore met since: made again
            text = real_folder.rstrip("/") + "/"
            applying = [
                (matcher, text[len(prefix) :]) for _, prefix, matcher in self.specs if text.startswith(prefix)
            ]
            found = self._by_folder[real_folder] = (len(self.specs), applying)
        return found[1]

    def ignored(self, text: str, is_dir: bool) -> bool:
        """As git decides for a resolved path written with forward slashes: the deepest
        .gitignore with a matching pattern wins (`!` re-includes)."""
        decision = None
        for folder, prefix, matcher in self.specs:
            # Path.relative_to, as text: a tree's files times its .gitignore files add up.
            if text.startswith(prefix):
                relative = text[len(prefix) :]
            elif text == folder:
                relative = "."
            else:
                continue
            result = matcher.decide(relative, is_dir)
            if result is not None:
                decision = result
        return bool(decision)


@dataclass(frozen=True)
class Leftovers:
    """What interrupted runs left under the paths of a run."""

    removed: list[Path]  # temporary files, deleted: the files they were for are whole
    backups: list[Path]  # old bytes of a file whose in-place write was cut off: the user decides

    @staticmethod
    def target_of(backup: Path) -> Path:
        match = _BACKUP.match(backup.name)
        assert match is not None
        return backup.with_name(match.group("name"))


def clean_up_leftovers(paths: Iterable[Path]) -> Leftovers:
    """Delete the temporary files interrupted runs left under ``paths`` (only ours, by name, and
    only those no live run is writing); list their backups."""
    leftovers = Leftovers([], [])
    for root in paths:
        if not root.is_dir():
            continue
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [name for name in subdirs if name not in SKIPPED_DIRECTORIES]
            for name in files:
                path = Path(directory) / name
                if _BACKUP.match(name):
                    leftovers.backups.append(path)
                elif _TEMPORARY.match(name) and _remove_if_orphaned(path):
                    leftovers.removed.append(path)
    return leftovers


def _remove_if_orphaned(path: Path) -> bool:
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return False
        orphaned = time.time() - info.st_mtime > STALE_AFTER_S
        if flock is not None:
            try:
                flock(handle, LOCK_EX | LOCK_NB)  # held until closed: no writer can start on it
                orphaned = True
            except BlockingIOError:  # a live run is writing it
                return False
            except OSError:  # no locks on this filesystem: age alone
                pass
        there = path.lstat()
        if not orphaned or (there.st_dev, there.st_ino) != (info.st_dev, info.st_ino):
            return False
        path.unlink()
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def _note_unreadable(found: list[Path], error: OSError) -> None:
    found.append(Path(error.filename))


def is_python_source(path: Path) -> bool:
    """A .py file, a notebook, or an extensionless script with a python shebang (pre-commit's
    `types: [python]` hands those over too)."""
    if path.suffix in SUFFIXES:
        return True
    if path.suffix:
        return False
    try:
        first = read_guarded(path, follow_links=True, limit=MAX_READ_BYTES)[0][:200].split(b"\n", 1)[0]
    except SourceError:
        return False  # a FIFO named `run` once blocked here, waiting for a writer
    return first.startswith(b"#!") and b"python" in first


@dataclass(frozen=True)
class Listing:
    """What a walk keeps of one folder: its subfolders to walk and its sources, by name, in walk
    order, under the folder's ``lstat`` signature when it was listed."""

    signature: str
    folders: tuple[str, ...]
    files: tuple[str, ...]
    holds_ignore_file: bool  # a .gitignore of its own, which applies to what is below it


@dataclass
class FolderListings:
    """What one walk found, for the next walk over the same paths with the same excludes.

    A folder's entries change only with its modification time (creating, removing or renaming
    an entry sets it), so a folder whose signature is unchanged holds what it held, and what the
    walk kept of it is kept again without listing it or asking a .gitignore about each entry, as
    git's untracked cache does. That holds only while the .gitignore files that decided it are
    unchanged (``ignore_files``; those above each walked path, ``chains``, must be the same folders)
    and for folders without links, whose targets can change behind an unchanged folder. A folder
    changed within a timestamp tick of the walk is listed again next time.
    """

    excludes: tuple[str, ...] = ()  # what the walk left out besides .gitignore files
    chains: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by the real path walked
    ignore_files: dict[str, str] = field(default_factory=dict)  # path -> signature ("" none)
    folders: dict[str, Listing] = field(default_factory=dict)  # by real path
    complete: bool = True  # False: something changed during the walk, keep nothing of it


def discover(
    paths: Iterable[Path],
    excludes: Iterable[str] = (),
    known: Optional[FolderListings] = None,
    found: Optional[FolderListings] = None,
) -> Iterator[Path]:
    """Yield the ``.py`` files and notebooks under ``paths`` in a stable order.

    Skipped while walking: ``SKIPPED_DIRECTORIES``, ``*.egg-info``, virtual environments (a
    ``pyvenv.cfg`` inside), what ``.gitignore`` files ignore, and ``excludes`` (globs; ``dir/``
    names a directory). A file named explicitly is yielded unless excluded; the caller decides
    whether it is a Python source (``is_python_source``). ``known``: what the last walk over the
    same paths and excludes found, to reuse where it still holds; ``found``: filled with what
    this one finds.
    """
    excludes = tuple(excludes)
    seen: set[Path] = set()
    roots = list(paths)
    if known is not None and known.excludes != excludes:
        known = None
    if found is not None:
        found.excludes = excludes
    for index, root in enumerate(roots):
        if root.is_file() or not root.exists():
            if not excluded(root, excludes) and root not in seen:
                seen.add(root)
                yield root
            continue
        # Walked folders are reached through names that are not links (the walk does not follow
        # them), so a folder's real path is its parent's plus its name: no resolve() for each.
        top = os.fspath(root)
        real_top = root.resolve().as_posix()
        ignores = _GitIgnores(Path(real_top))
        walk = _Walk(top, real_top, ignores, excludes, known, found)
        # A walk meets each file once: only paths named before it, or walked after, need `seen`.
        checked, kept = bool(seen), index < len(roots) - 1
        for directory, names in walk:
            folder = Path(directory) if names else None
            for name in names:
                path = folder / name  # type: ignore[operator]
                if checked and path in seen:
                    continue
                if kept:
                    seen.add(path)
                yield path
        # Reported by read_source ("a directory that cannot be read"), after the readable files.
        yield from (directory for directory in walk.unreadable if directory not in seen)
        if found is not None:
            found.chains[real_top] = ignores.chain
            found.ignore_files.update(ignores.read)
            found.complete = found.complete and not ignores.racy


class _Walk:
    """The folders under ``top``, top-down, each with the sources it keeps; a folder's
    subfolders are walked (by name) after its files, links to folders are not entered."""

    def __init__(
        self,
        top: str,
        real_top: str,
        ignores: _GitIgnores,
        excludes: tuple[str, ...],
        known: Optional[FolderListings],
        found: Optional[FolderListings],
    ) -> None:
        self.top, self.ignores, self.excludes, self.found = top, ignores, excludes, found
        self.real_folders = {top: real_top}
        self.unreadable: list[Path] = []
        trusted = (
            known is not None
            and known.chains.get(real_top) == ignores.chain
            and ignores.still_read(known.ignore_files)
        )
        self.known = known.folders if known is not None and trusted else {}
        self.known_ignore_files = known.ignore_files if known is not None and trusted else {}
        self.distrusted: list[str] = []  # folders whose .gitignore came or went: below, list again
        self.started_ns = time.time_ns()

    def __iter__(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        stack = [self.top]
        while stack:
            directory = stack.pop()
            real_here = self.real_folders.pop(directory, None) or Path(directory).resolve().as_posix()
            listing = self._listing(directory, real_here)
            if listing is None:
                continue
            yield directory, listing.files
            for name in reversed(listing.folders):
                path = os.path.join(directory, name)
                self.real_folders[path] = f"{real_here}/{name}" if real_here != "/" else f"/{name}"
                stack.append(path)

    def _listing(self, directory: str, real_here: str) -> Optional[Listing]:
        try:
            info = os.stat(directory) if directory == self.top else os.lstat(directory)
        except OSError:
            info = None
        signature = "" if info is None else file_signature(info)
        recorded = self.known.get(real_here)
        if (
            recorded is not None
            and signature
            and recorded.signature == signature
            and not self._distrusted(real_here)
        ):
            if recorded.holds_ignore_file and directory != self.top:
                self.ignores.add(Path(real_here))
            listing: Optional[Listing] = recorded
        else:
            listing = self._scanned(directory, real_here, signature)
            if listing is None:
                return None
            had_ignore_file = bool(self.known_ignore_files.get(Path(real_here, ".gitignore").as_posix()))
            if directory != self.top and had_ignore_file != listing.holds_ignore_file:
                self.distrusted.append(real_here.rstrip("/") + "/")
        if self.found is not None and listing.signature and not racy(info, self.started_ns):
            self.found.folders[real_here] = listing
        return listing

    def _distrusted(self, real_here: str) -> bool:
        return any(real_here.startswith(folder) for folder in self.distrusted)

    def _scanned(self, directory: str, real_here: str, signature: str) -> Optional[Listing]:
        """The folder as listed now; its signature is dropped ("": not to be kept) if it holds a
        link. None for a folder that cannot be read (kept in ``unreadable``)."""
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as error:
            _note_unreadable(self.unreadable, error)
            return None
        folders, files = [], []
        for entry in entries:
            try:
                is_folder = entry.is_dir()
            except OSError:
                is_folder = False
            (folders if is_folder else files).append(entry)
            if entry.is_symlink():
                signature = ""
        names = {entry.name: entry for entry in files}
        holds_ignore_file = ".gitignore" in names
        if directory != self.top:
            if "pyvenv.cfg" in names and _is_file(names["pyvenv.cfg"]):  # a virtualenv: left
                return Listing(signature, (), (), False)
            if holds_ignore_file:
                self.ignores.add(Path(real_here))
        ignores, excludes = self.ignores, self.excludes
        kept = sorted(
            entry.name
            for entry in folders
            if entry.name not in SKIPPED_DIRECTORIES
            and not entry.name.endswith(".egg-info")
            and not (excludes and excluded(Path(entry.path), excludes))
            and not ignores.ignored_in(directory, real_here, entry, is_dir=True)
            and not entry.is_symlink()
        )
        sources = sorted(
            entry.name
            for entry in files
            if entry.name.endswith(SUFFIXES)
            and not (excludes and excluded(Path(entry.path), excludes))
            and not ignores.ignored_in(directory, real_here, entry, is_dir=False)
        )
        return Listing(signature, tuple(kept), tuple(sources), holds_ignore_file)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # through a link, as os.path.isfile
    except OSError:
        return False


def walk_order(path: Path) -> tuple[tuple[int, str], ...]:
    """A key that sorts paths under one root as ``discover`` yields them: a folder's files (by
    name) before its subfolders (by name, each walked whole)."""
    parts = path.parts
    return (*((1, part) for part in parts[:-1]), (0, parts[-1] if parts else ""))


def decode(path: Path, raw: bytes) -> tuple[str, str, bool]:
    """Return (text, encoding, has_bom) following PEP 263 and the UTF-8 BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        # The message names the problem already ("unknown encoding: foobar", "encoding problem").
        raise SourceError(path, str(error), 1) from error
    has_bom = encoding == "utf-8-sig"
    if has_bom:
        encoding = "utf-8"
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        line = raw[: getattr(error, "start", 0)].count(b"\n") + 1
        raise SourceError(path, f"cannot decode as {encoding}: {error}", line) from error
    return text, encoding, has_bom


# What one file of a run may hold: a notebook with its outputs can be tens of MB; Python files
# in the public model zoos stay below 300 KB.
MAX_READ_BYTES = 64 * 2**20


def read_guarded(path: Path, follow_links: bool = False, limit: int = MAX_READ_BYTES) -> tuple[bytes, int]:
    """The bytes and permission bits of the regular file at ``path``: the one door every read of
    a run goes through (sources, the project index, pins, configuration, .gitignore files, cache
    entries). What is opened is checked, not the name: a FIFO (opened without waiting for a
    writer), a device (`zero.py -> /dev/zero`), a directory or a file over ``limit`` bytes is a
    SourceError naming it, so a hostile file costs only itself. A symbolic link is refused
    unless ``follow_links`` (the project index reads the files a link names, but never a device)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        handle = os.open(path, flags)
    except OSError as error:
        if not follow_links and os.path.islink(path):
            raise SourceError(path, "a symbolic link; not followed (run on its target)") from error
        if os.path.isdir(path):
            raise SourceError(path, "a directory that cannot be read") from error
        raise SourceError(path, f"cannot read: {error.strerror or error}") from error
    try:
        info = os.fstat(handle)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError(path, "a directory that cannot be read")
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(path, "not a regular file; skipped")
        if info.st_size > limit:
            size = _megabytes(info.st_size)
            raise SourceError(path, f"too large: {size} (the limit is {_megabytes(limit)})")
        chunks: list[bytes] = []
        size = 0
        while True:  # to the limit only: a file that grows while read is refused, not followed
            chunk = os.read(handle, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise SourceError(path, f"too large: it grew past {_megabytes(limit)} while being read")
        return b"".join(chunks), stat.S_IMODE(info.st_mode)
    except OSError as error:
        raise SourceError(path, f"cannot read: {error.strerror or error}") from error
    finally:
        os.close(handle)


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def read_source(path: Path) -> SourceFile:
    """Read a regular file through ``read_guarded``. A symbolic link is not followed (replacing
    it would turn it into a copy), and FIFOs, devices and directories are never read."""
    raw, mode = read_guarded(path)
    return source_from_bytes(path, raw, mode)


def source_from_bytes(path: Path, raw: bytes, mode: int = 0o644) -> SourceFile:
    """``raw`` decoded as the file ``path`` would be (a notebook by its suffix): for text that
    comes from elsewhere, such as stdin with --stdin-filename. Raises ``SourceError``."""
    if path.suffix == ".ipynb":
        return _read_notebook(path, raw, mode)
    text, encoding, has_bom = decode(path, raw)
    return SourceFile(path=path, text=text, encoding=encoding, has_bom=has_bom, mode=mode, raw=raw)


def _read_notebook(path: Path, raw: bytes, mode: int) -> SourceFile:
    from ms_migrate.files.notebooks import NotebookError, parse_notebook  # most runs read no notebook

    has_bom = raw.startswith(codecs.BOM_UTF8)
    try:
        document = raw[len(codecs.BOM_UTF8) if has_bom else 0 :].decode("utf-8")
        notebook = parse_notebook(document)
    except UnicodeDecodeError as error:
        raise SourceError(path, f"notebook is not UTF-8: {error}") from error
    except NotebookError as error:
        raise SourceError(path, str(error)) from error
    return SourceFile(path, notebook.virtual_text(), "utf-8", has_bom, mode, raw, notebook)


def write_source(source: SourceFile, new_text: str) -> None:
    """Write ``new_text`` to ``source.path`` if the file still holds ``source.raw``, keeping
    encoding, BOM, mode and hard links.

    The read-compare-write runs under an exclusive advisory lock on the file (flock, where the
    platform has it), so two runs on one tree never write over what the other just wrote unseen.
    """
    try:
        data = source.encode(new_text)
    except UnicodeEncodeError as error:
        raise SourceError(source.path, f"cannot encode as {source.encoding}: {error}") from error
    # Root may write anything; a file without write bits is still the user's "do not touch".
    if not os.access(source.path, os.W_OK) or not source.mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise SourceError(source.path, "file is read-only; left unchanged")
    with _locked(source.path):
        try:
            current = source.path.read_bytes()
            links = source.path.lstat().st_nlink
        except OSError as error:
            raise SourceError(source.path, f"cannot read back: {error.strerror or error}") from error
        if current != source.raw:
            raise SourceError(source.path, "changed on disk during the run; left unchanged")
        if links > 1:
            _overwrite_in_place(source.path, data, current)
        else:
            _replace(source.path, data, source.mode)


def write_output(path: Path, text: str) -> None:
    """Write a file the tool makes (a report, a baseline, --output-file) in UTF-8, as a shell's
    ``>`` would: through a symlink to what it points at, and into a device or FIFO that is
    there (``-o /dev/null``, ``-o /dev/stdout``) rather than putting a file in its place. A
    regular file is replaced atomically: a run cut off leaves the old file or the new one.
    Raises ``SourceError``."""
    data = text.encode("utf-8")
    target = Path(os.path.realpath(path))
    try:
        info: Optional[os.stat_result] = target.stat()
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise SourceError(path, f"cannot write: {error.strerror}") from error
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise SourceError(path, "cannot write: a folder")
    if info is not None and not stat.S_ISREG(info.st_mode):
        _write_through(path, target, data)
        return
    if not target.parent.is_dir():
        raise SourceError(path, f"cannot write: no folder {target.parent}")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
    _replace(target, data, mode)


def _write_through(path: Path, target: Path, data: bytes) -> None:
    """Write into a device or FIFO that stands at ``target``; a FIFO nobody reads is refused
    (opening it would wait for a reader forever)."""
    try:
        handle = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise SourceError(path, "cannot write: a FIFO that no process reads") from error
        raise SourceError(path, f"cannot write: {error.strerror or error}") from error
    try:
        os.set_blocking(handle, True)
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
    except OSError as error:
        raise SourceError(path, f"cannot write: {error.strerror or error}") from error
    finally:
        os.close(handle)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on the file at ``path``; wait while another run holds it."""
    if flock is None:
        yield
        return
    while True:
        try:
            # O_NONBLOCK: were a FIFO put in the file's place, opening it would block the run.
            handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            raise SourceError(path, f"cannot lock: {error.strerror or error}") from error
        try:
            flock(handle, LOCK_EX)
            locked, there = os.fstat(handle), path.lstat()
        except BaseException as error:
            os.close(handle)
            if isinstance(error, OSError):
                raise SourceError(path, f"cannot lock: {error.strerror or error}") from error
            raise
        if (locked.st_dev, locked.st_ino) == (there.st_dev, there.st_ino):
            break
        # The holder replaced the file while we waited: the lock is on a name-less inode now.
        os.close(handle)
    try:
        yield
    finally:
        os.close(handle)


@contextlib.contextmanager
def _new_file_beside(path: Path, suffix: str) -> Iterator[tuple[BinaryIO, Path]]:
    """A new file `.NAME.XXXXXXXX<suffix>` next to ``path``, open and flock-ed for the block (so
    that another run's clean-up does not take it for an orphan), removed if the block fails."""
    while True:
        try:
            import tempfile  # writing only: `check` never needs it

            handle, name = tempfile.mkstemp(
                prefix=f".{_short_name(path, suffix)}.", suffix=suffix, dir=path.parent
            )
        except OSError as error:
            raise SourceError(path, f"cannot write next to the file: {error.strerror}") from error
        if flock is None or _lock_new(handle):
            break
        os.close(handle)  # a clean-up removed it in the instant before the lock: make another
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream, Path(name)
    except BaseException as error:
        # Also on KeyboardInterrupt: the original stays whole and no temporary file is left.
        with contextlib.suppress(OSError):
            os.unlink(name)
        if isinstance(error, OSError):
            raise SourceError(path, f"cannot write: {error.strerror or error}") from error
        raise


# A name's bytes beside `.`, `.XXXXXXXX` and the suffix must fit in the 255 most filesystems allow.
_NAME_MAX = 255


def _short_name(path: Path, suffix: str) -> str:
    """``path``'s name as a temporary file beside it carries it: cut to fit (a legal 255-byte name
    could not be rewritten, its temporary's name being longer). A backup names its file whole,
    to be put back where it came from, so one that cannot is refused."""
    room = _NAME_MAX - 2 - 8 - len(suffix)  # the two dots, the random part, the (ASCII) suffix
    encoded = path.name.encode("utf-8", "surrogateescape")
    if len(encoded) <= room:
        return path.name
    if suffix == BACKUP_SUFFIX:
        raise SourceError(path, "name too long to keep its backup beside it while rewriting a hard link")
    return encoded[:room].decode("utf-8", "ignore")


def _lock_new(handle: int) -> bool:
    """Lock a file just created; False if it lost its name first."""
    try:
        flock(handle, LOCK_EX)
    except OSError:  # no locks on this filesystem: clean-ups go by age there
        return True
    return os.fstat(handle).st_nlink > 0


def _fill(stream: BinaryIO, data: bytes) -> None:
    stream.seek(0)
    stream.write(data)
    stream.truncate()
    stream.flush()
    os.fsync(stream.fileno())


def _replace(path: Path, data: bytes, mode: int) -> None:
    """Swap in a new file: readers, and a run killed at any point, see the old or the new one.
    The new file keeps the old one's owner, group and extended attributes (ACLs among them) as
    far as this process may set them, then its mode."""
    with _new_file_beside(path, TEMPORARY_SUFFIX) as (stream, temporary):
        _fill(stream, data)
        _keep_attributes(path, stream.fileno())
        os.chmod(temporary, mode)  # last: a chown may clear the set-id bits
        os.replace(temporary, path)  # still open and locked: renamed, it is no orphan


def _keep_attributes(original: Path, descriptor: int) -> None:
    """Give the new file ``original``'s owner and group and its extended attributes: `upgrade`
    run as root in a CI container over a mounted checkout left every rewritten file owned by
    root:root, without its xattrs and ACLs. What may not be set here (another user's file, a
    filesystem without xattrs) stays as the new file has it."""
    try:
        old = os.stat(original)
        new = os.fstat(descriptor)
    except OSError:
        return
    if (old.st_uid, old.st_gid) != (new.st_uid, new.st_gid):
        for uid, gid in ((old.st_uid, old.st_gid), (-1, old.st_gid)):
            try:
                os.fchown(descriptor, uid, gid)
                break
            except OSError:
                continue
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(original)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(descriptor, name, os.getxattr(original, name))


def _overwrite_in_place(path: Path, data: bytes, old: bytes) -> None:
    """Rewrite a hard-linked file through its inode, which its other names share (os.replace
    would give this name a new inode and leave them the old text). Until the new bytes are on
    disk the old ones are in a backup beside it; a failed write puts them back."""
    with _new_file_beside(path, BACKUP_SUFFIX) as (stream, backup):
        _fill(stream, old)
    _sync_directory(path.parent)  # the backup's name survives a crash too
    try:
        with path.open("r+b") as stream:
            _fill(stream, data)
    except BaseException as error:
        try:
            with path.open("r+b") as stream:
                _fill(stream, old)
        except OSError as restoring:
            message = f"cannot write, nor restore: its old bytes are in {backup.name}"
            raise SourceError(path, message) from restoring
        _remove_backup(backup)
        if isinstance(error, OSError):
            raise SourceError(path, f"cannot write: {error.strerror or error}") from error
        raise
    _remove_backup(backup)


def _remove_backup(backup: Path) -> None:
    with contextlib.suppress(OSError):  # were it to stay, the next run would ask the user to look
        backup.unlink()


def _sync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform opens directories
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)
