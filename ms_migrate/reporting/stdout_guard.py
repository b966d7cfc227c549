"""stdout for a run whose reader may go away: `upgrade . | head`, `upgrade >&-`.

Python raises BrokenPipeError on the first write after the reader has gone, and click turns it
into a silent exit 1: `upgrade . | head` converted 2 of 60 files and stopped without a word, and
with stdout closed (`>&-`, where sys.stdout is None) the first print was an AttributeError. The
files a run writes must not depend on who reads its report: once stdout is gone, what is printed
to it is dropped, stderr says so once, and the run goes on to its own exit status.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any, Optional, TextIO

_GONE = (errno.EPIPE, errno.EBADF, errno.ECONNRESET)
_NOTE = "note: stdout was closed by its reader; the run goes on, printing nothing more there\n"


class GuardedStdout:
    """A text stream over the real stdout (or none) that drops output once its reader has gone."""

    def __init__(self, stream: Optional[TextIO]) -> None:
        self._stream = stream
        self.gone = stream is None
        self.buffer = _GuardedBuffer(self)

    def write(self, text: str) -> int:
        if not self.gone:
            assert self._stream is not None
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as error:
                self._lose(error)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            assert self._stream is not None
            try:
                self._stream.flush()
            except (OSError, ValueError) as error:
                self._lose(error)

    def isatty(self) -> bool:
        return not self.gone and self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)

    def _lose(self, error: Exception) -> None:
        if isinstance(error, OSError) and error.errno not in _GONE:
            raise error
        if isinstance(error, ValueError) and "closed file" not in str(error):
            raise error
        self.gone = True
        assert self._stream is not None
        # The interpreter flushes stdout once more at exit: point its descriptor at /dev/null so
        # that flush has somewhere to go instead of printing "Exception ignored ... BrokenPipeError".
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass
        try:
            sys.stderr.write(_NOTE)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


class _GuardedBuffer:
    """stdout's byte stream (JSON written as bytes), dropped with the text stream."""

    def __init__(self, owner: GuardedStdout) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        stream = self._owner._stream
        if stream is None:
            raise AttributeError(name)
        return getattr(stream.buffer, name)  # type: ignore[attr-defined]

    def write(self, data: bytes) -> int:
        owner = self._owner
        if not owner.gone:
            assert owner._stream is not None
            try:
                return owner._stream.buffer.write(data)  # type: ignore[attr-defined]
            except (OSError, ValueError) as error:
                owner._lose(error)
        return len(data)

    def flush(self) -> None:
        owner = self._owner
        if not owner.gone:
            assert owner._stream is not None
            try:
                owner._stream.buffer.flush()  # type: ignore[attr-defined]
            except (OSError, ValueError) as error:
                owner._lose(error)


def guard_stdout() -> GuardedStdout:
    """Put a guard in front of sys.stdout (once) and return it. Both streams write what their
    encoding cannot hold as escapes (`PYTHONIOENCODING=ascii`, a cp1252 console and a Chinese file
    name): the report loses a glyph, never the run."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    current = sys.stdout
    if isinstance(current, GuardedStdout):
        return current
    guarded = GuardedStdout(current)
    sys.stdout = guarded  # type: ignore[assignment]
    return guarded
