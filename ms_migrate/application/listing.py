"""The files of a run: the sources under its paths, walked again only where the tree changed.

A rerun over a model zoo spent about 40% of its time walking folders and asking .gitignore files
about their entries, for a tree that had not changed. With the cache on, the walk starts from
what the last walk over the same paths found (``sources.FolderListings``) and lists again only
the folders whose ``lstat`` changed, as git's untracked cache does; the files it yields are the
same, in the same order, as a walk without it (tests/test_listing.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional

from ms_migrate.files import sources
from ms_migrate.files.cache import WalkCache, walk_digest


def listed_sources(
    paths: Sequence[Path], excludes: Sequence[str], cache_dir: Optional[Path]
) -> Iterator[Path]:
    """``sources.discover(paths, excludes)``, reusing and keeping what a walk found in
    ``cache_dir`` (None: no cache). Files named one by one (pre-commit's way) are not walked:
    nothing is kept for them, where each new list of them would leave a file of its own."""
    if cache_dir is None or not any(path.is_dir() for path in paths):
        yield from sources.discover(paths, excludes)
        return
    cache = WalkCache(cache_dir, walk_digest(paths, excludes))
    known, found = cache.load(), sources.FolderListings()
    yield from sources.discover(paths, excludes, known, found)
    cache.save(found, known)
