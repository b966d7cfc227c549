"""The garbage collector's pace during a run.

Every file a rule reads becomes a tree of tens of thousands of `ast` (or libcst) nodes that live
until the file is done. At CPython's default thresholds (700, 10, 10) the young generations fill
many times per file, the nodes are promoted while still in use, and the oldest generation is
traversed over and over, with every module, catalogue entry and project fact in it: on
mindspore-ai/models that was a third of `check`'s CPU time (27 s against 20 s at ``RUN_THRESHOLDS``,
one process; docs/performance.md). The trees hold no cycles and go by reference counting alone;
what is cyclic (a file's context and its analyses refer to each other) is still collected, less
often, with the same peak memory on that tree.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator
from functools import cache

# Young generation: a collection every 50,000 net allocations rather than 700 (a large file's tree
# is about that many nodes); the older two as CPython's ratio, about one full pass per 20M.
RUN_THRESHOLDS = (50_000, 20, 20)


def pace_for_a_run() -> None:
    """Set ``RUN_THRESHOLDS`` for the rest of this process (a worker: it only runs files)."""
    gc.set_threshold(*RUN_THRESHOLDS)


@contextlib.contextmanager
def paced_for_a_run() -> Iterator[None]:
    """``RUN_THRESHOLDS`` while the block runs, and the caller's own thresholds back after it
    (a run in a process that goes on to do other things: the tests, a library user)."""
    before = gc.get_threshold()
    gc.set_threshold(*RUN_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@cache
def skip_the_collection_at_exit() -> None:
    """Leave what the run still holds out of the collection Python makes as it exits. Its trees
    go at exit anyway; traversing them first cost 7.5 s of 30 s after `upgrade --dry-run` of one
    file of 2,500 train steps had printed everything (a quarter of the run, and a third of its
    cost growing faster than its size). Registered as a command starts, so it runs after the exit
    handlers the command registers (atexit runs the last registered first); once per process."""
    atexit.register(gc.freeze)
