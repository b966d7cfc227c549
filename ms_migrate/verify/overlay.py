"""Inside the worker: project modules imported from the text verify was given, not from the disk.

The parent sends, with each file pair, the release-fixed text of the project modules the pair's
imports reach (``ms_migrate.verify.reached``): a helper that imports a name the target release
removed runs with the proven fix, in both versions alike. This finder stands first on
``sys.meta_path``; it asks the ordinary path finder where a module lies and, for a file the
parent sent a text of, loads that text instead. The text is put in ``linecache`` under the file's
name, so that a traceback, and GRAPH mode, which reads a Cell's source through ``inspect``, see
the code that runs. No bytecode is read or written for it.

Standard library only: this runs in every runtime, Python 3.9 included.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import os
import re
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Optional

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def encoded_as_declared(text: str) -> bytes:
    """The text as its PEP 263 cookie says it is written (utf-8 by default, or where the cookie
    names an encoding that cannot hold it): how Python and linecache read it back."""
    for line in text.splitlines()[:2]:
        match = _CODING.match(line)
        if match:
            try:
                return text.encode(match.group(1))
            except (LookupError, UnicodeEncodeError):
                break
    return text.encode("utf-8")


class _TextLoader(importlib.machinery.SourceFileLoader):
    """A source file loader whose file holds ``text``."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self.text = text

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            return encoded_as_declared(self.text)
        return super().get_data(path)

    def path_stats(self, path: str) -> Mapping[str, float]:
        raise OSError("a text in place of the file: no bytecode")  # get_code then compiles the text

    def exec_module(self, module: ModuleType) -> None:
        lines = self.text.splitlines(keepends=True)
        # No time stamp: linecache.checkcache keeps the entry, and never reads the disk for it.
        linecache.cache[self.path] = (len(self.text), None, lines, self.path)  # type: ignore[assignment]
        super().exec_module(module)


class Overlay(importlib.abc.MetaPathFinder):
    """The texts that stand in for files, by real path."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def add(self, texts: Mapping[str, str]) -> None:
        self.texts.update((os.path.realpath(path), text) for path, text in texts.items())

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if not self.texts:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or not spec.has_location:
            return None
        text = self.texts.get(os.path.realpath(spec.origin))
        if text is None:
            return None
        spec.loader = _TextLoader(fullname, spec.origin, text)
        return spec


_OVERLAY: Optional[Overlay] = None


def overlay() -> Overlay:
    """The worker's one overlay, first on ``sys.meta_path``."""
    global _OVERLAY
    if _OVERLAY is None:
        _OVERLAY = Overlay()
        sys.meta_path.insert(0, _OVERLAY)
    return _OVERLAY
