"""Worker processes for a run over many files, where a worker that dies costs only the file it held.

``concurrent.futures.ProcessPoolExecutor`` breaks as a whole when one worker dies (a segfault in
libcst's native parser, the OOM killer, a stray ``kill``): every pending result is lost and the
run stops with ``BrokenProcessPool``. Here each worker has its own pipe and writes the index of
the item it is on into shared memory, so when one dies the parent knows exactly which item it
held, reports that one, starts a fresh worker and hands the dead one's other items on.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar, Union

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

Item = TypeVar("Item")
Result = TypeVar("Result")

# Items go out in batches (one message each way per batch, not per item) of at most MAX_BATCH,
# and each worker has up to WINDOW batches, so it starts the next as soon as it has sent one. A
# death costs the item the worker was on; the rest of its batches are done again by another.
MAX_BATCH = 16
WINDOW = 2
# Deaths in a row that blame no item and follow no result: workers that cannot start at all (a
# broken installation, no memory) end the run instead of being replaced forever.
MAX_UNEXPLAINED_DEATHS = 3
STOP_TIMEOUT_S = 5.0
# What a worker's shared `current` holds besides an item's index.
_NOT_STARTED, _BETWEEN_ITEMS = -1, -2
_END = object()  # no more items


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform has one (a container
    or `taskset` may allow fewer than the machine has), else every core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def describe_exit(exitcode: int) -> str:
    """A process's exit status as people read it: "signal 11, SIGSEGV" or "exit code 3"."""
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        return f"signal {-exitcode}, {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"signal {-exitcode}"


@dataclass(frozen=True)
class WorkerDied:
    """The result for an item whose worker died while processing it."""

    index: int
    exitcode: int

    @property
    def cause(self) -> str:
        return describe_exit(self.exitcode)


class WorkersKeepDying(RuntimeError):
    """Worker processes keep dying outside any item (before the first one, or between two)."""


@dataclass(frozen=True)
class _Raised:
    """An exception the task raised in a worker; the parent raises it again."""

    error: BaseException


def _serve(
    task: Callable[[Any], Any],
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    connection: Connection,
    current: Any,
) -> None:
    """A worker's life: take a batch of (index, item), note each index in ``current`` while on
    its item, send back the batch's (index, result)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it stops the workers
    initializer(*initargs)
    while True:
        try:
            batch = connection.recv()
        except EOFError:  # the parent is gone
            return
        if batch is None:  # the parent is done
            return
        results: list[tuple[int, Any]] = []
        for index, item in batch:
            current.value = index
            try:
                results.append((index, task(item)))
            except Exception as error:
                results.append((index, _Raised(error)))
        current.value = _BETWEEN_ITEMS  # a death while sending is no item's fault
        connection.send(results)


class _Worker:
    def __init__(
        self,
        context: Any,
        task: Callable[[Any], Any],
        initializer: Callable[..., None],
        initargs: tuple[Any, ...],
    ) -> None:
        self.current = context.RawValue("q", _NOT_STARTED)
        self.connection, child_end = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(task, initializer, initargs, child_end, self.current), daemon=True
        )
        self.process.start()
        child_end.close()  # so that the worker's death reads as end of file here
        self.sent: deque[int] = deque()

    def send(self, batch: list[tuple[int, Any]]) -> None:
        self.sent.extend(index for index, _ in batch)
        with contextlib.suppress(OSError):  # it died: its sentinel tells, the items go elsewhere
            self.connection.send(batch)

    def receive(self) -> tuple[list[tuple[int, Any]], bool]:
        """The results waiting in the pipe, and whether the worker is still there."""
        received: list[tuple[int, Any]] = []
        try:
            while self.connection.poll():
                for index, result in self.connection.recv():
                    self.sent.remove(index)
                    received.append((index, result))
        except (EOFError, OSError):  # also results cut off by the death
            return received, False
        return received, self.process.is_alive()

    def stop(self) -> None:
        """Let an idle worker exit; terminate one still on an item (Ctrl-C, an early stop)."""
        if self.sent:
            self.process.terminate()
        else:
            # An explicit message: workers forked later hold copies of this end of the pipe, so
            # closing it would not read as end of file there.
            with contextlib.suppress(OSError):
                self.connection.send(None)
        self.process.join(STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.process.close()  # its sentinel: a long run may replace many workers
        self.connection.close()


class _Run(Generic[Item, Result]):
    def __init__(
        self,
        task: Callable[[Item], Result],
        items: Iterable[Item],
        workers: int,
        initializer: Callable[..., None],
        initargs: tuple[Any, ...],
        max_batch: int = MAX_BATCH,
        grouped: Optional[Callable[[Item], bool]] = None,
    ) -> None:
        self.task, self.initializer, self.initargs = task, initializer, initargs
        import multiprocessing  # a run over a handful of files never starts a worker

        self.context = multiprocessing.get_context()
        self.workers = [self.new_worker() for _ in range(workers)]
        self.items: list[Item] = []
        self.source: Optional[Iterator[Item]] = iter(items)
        self.grouped = grouped
        # Grouped items go to the first worker, and to the others only once the rest are out.
        self.group: deque[int] = deque()
        self.in_group: set[int] = set()
        self.queue: deque[int] = deque()
        # Batches of a known number of items end close together; items still coming go out as
        # they come, in batches of up to ``max_batch``.
        count = len(items) if isinstance(items, Sized) else None
        self.batch = max(1, min(max_batch, count // (workers * 8))) if count is not None else max_batch
        self.results: dict[int, Any] = {}
        self.unexplained_deaths = 0

    def new_worker(self) -> _Worker:
        return _Worker(self.context, self.task, self.initializer, self.initargs)

    def results_in_order(self) -> Iterator[Union[Result, WorkerDied]]:
        index = 0
        while True:
            while index not in self.results:
                if self.source is None and index >= len(self.items):
                    return
                self.step()
            result = self.results.pop(index)
            if isinstance(result, _Raised):
                raise result.error
            yield result
            index += 1

    def take(self) -> bool:
        """The next item from the caller, queued; False once there are no more."""
        assert self.source is not None
        item = next(self.source, _END)
        if item is _END:
            self.source = None
            return False
        index = len(self.items)
        self.items.append(item)  # type: ignore[arg-type]
        if self.grouped is not None and self.grouped(item):  # type: ignore[arg-type]
            self.group.append(index)
            self.in_group.add(index)
        else:
            self.queue.append(index)
        return True

    def step(self) -> None:
        """Take the caller's items while there are any (producing them, a file read and looked
        at, is the parent's work while the workers parse), keeping every worker's window full and
        its finished batches read; then wait for the first ready workers."""
        while self.source is not None and self.take():
            self.fill()
            self.collect(timeout=0)
        self.fill()
        if any(worker.sent for worker in self.workers):
            self.collect(timeout=None)

    def fill(self) -> None:
        """Keep every worker's window full."""
        for position, worker in enumerate(self.workers):
            while len(worker.sent) < WINDOW * self.batch:
                steal = not self.queue and self.source is None  # the group's worker is not waited for
                source = self.group if self.group and (position == 0 or steal) else self.queue
                if not source:
                    break
                batch = [source.popleft() for _ in range(min(self.batch, len(source)))]
                worker.send([(index, self.items[index]) for index in batch])

    def collect(self, timeout: Optional[float]) -> None:
        """What the ready workers have sent (waiting up to ``timeout``; None: until one is)."""
        from multiprocessing.connection import wait

        ready = set(wait([worker.connection for worker in self.workers] + self.sentinels(), timeout))
        for position, worker in enumerate(self.workers):
            if worker.connection not in ready and worker.process.sentinel not in ready:
                continue
            received, alive = worker.receive()
            self.results.update(received)
            if received:
                self.unexplained_deaths = 0
            if not alive:
                self.replace(position, worker)

    def sentinels(self) -> list[Any]:
        return [worker.process.sentinel for worker in self.workers]

    def replace(self, position: int, dead: _Worker) -> None:
        """Blame the item the dead worker held, queue its others again, start a fresh worker."""
        dead.process.join(STOP_TIMEOUT_S)  # its pipe is closed: it is exiting
        held = dead.current.value
        exitcode = dead.process.exitcode or 0
        if held in dead.sent:
            dead.sent.remove(held)
            self.results[held] = WorkerDied(held, exitcode)
        else:
            self.unexplained_deaths += 1
            if self.unexplained_deaths >= MAX_UNEXPLAINED_DEATHS:
                cause = describe_exit(exitcode)
                raise WorkersKeepDying(f"worker processes keep dying outside any file ({cause})")
        self.group.extendleft(reversed([index for index in dead.sent if index in self.in_group]))
        self.queue.extendleft(reversed([index for index in dead.sent if index not in self.in_group]))
        dead.sent.clear()
        dead.stop()
        self.workers[position] = self.new_worker()

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


def map_in_workers(
    task: Callable[[Item], Result],
    items: Iterable[Item],
    workers: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...] = (),
    max_batch: int = MAX_BATCH,
    grouped: Optional[Callable[[Item], bool]] = None,
) -> Iterator[Union[Result, WorkerDied]]:
    """``task(item)`` for every item, in ``workers`` processes, yielded in the order of ``items``.

    An item whose worker died while on it yields ``WorkerDied``; the run goes on with a fresh
    worker. An exception the task raises is raised here, as ``map`` would. ``initializer`` runs
    in each worker before its first item. Items that each take long (a file to parse, against
    many to skip) want a small ``max_batch``: the last batches then end close together.
    ``items`` may be a generator: each item goes out as soon as it is made, so the caller's work
    to make them (reading files to find the ones to parse) overlaps the workers'; it runs in this
    process, between reading the workers' results, and is all done before the first result is
    yielded. Items that are ``grouped`` go to one worker while others are left, so that what they
    build up in a worker (a cache of facts about other items) is built once.
    """
    run = _Run(task, items, workers, initializer, initargs, max_batch, grouped)
    try:
        yield from run.results_in_order()
    finally:
        run.close()  # also on Ctrl-C, or when the caller stops early
