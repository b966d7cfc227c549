"""The worker pool on its own: results in order, a dying worker costs only its item, a task's
exception reaches the caller, and workers that cannot start end the run."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from ms_migrate.application.pool import WorkerDied, WorkersKeepDying, map_in_workers


def _nothing() -> None:
    pass


def _exit_at_start() -> None:
    os._exit(1)


def _double_or_exit(item: int) -> int:
    if item in (5, 37):
        os._exit(3)  # as a native crash would: no exception, no cleanup
    return item * 2


def _double_or_raise(item: int) -> int:
    if item == 3:
        raise ValueError("three")
    return item * 2


def test_results_come_in_order_and_a_dying_worker_costs_only_its_item() -> None:
    results = list(map_in_workers(_double_or_exit, list(range(60)), 2, _nothing))
    assert results[5] == WorkerDied(5, 3) and results[37] == WorkerDied(37, 3)
    assert results[5].cause == "exit code 3"
    assert [result for index, result in enumerate(results) if index not in (5, 37)] == [
        index * 2 for index in range(60) if index not in (5, 37)
    ]


def test_an_exception_in_the_task_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="three"):
        list(map_in_workers(_double_or_raise, list(range(10)), 2, _nothing))


def test_workers_that_die_before_their_first_item_end_the_run() -> None:
    with pytest.raises(WorkersKeepDying, match="exit code 1"):
        list(map_in_workers(_double_or_exit, list(range(10)), 2, _exit_at_start))


def test_signals_are_named() -> None:
    assert WorkerDied(0, -9).cause == "signal 9, SIGKILL"


def _pid_after(item: int) -> tuple[int, int]:
    import time

    if item >= 8:
        time.sleep(0.02)  # the others keep the second worker busy while the first does the group
    return item, os.getpid()


def test_grouped_items_go_to_one_worker_and_results_stay_in_order() -> None:
    items = list(range(48))
    results = list(map_in_workers(_pid_after, items, 2, _nothing, grouped=lambda item: item < 8))
    assert [item for item, _ in results] == items
    assert len({pid for item, pid in results if item < 8}) == 1
    assert len({pid for _, pid in results}) == 2


def test_grouped_items_of_a_dying_worker_are_done_again() -> None:
    grouped = range(30, 40).__contains__
    results = list(map_in_workers(_double_or_exit, list(range(60)), 2, _nothing, grouped=grouped))
    assert results[5] == WorkerDied(5, 3) and results[37] == WorkerDied(37, 3)
    assert [result for index, result in enumerate(results) if index not in (5, 37)] == [
        index * 2 for index in range(60) if index not in (5, 37)
    ]


def test_items_from_a_generator_go_out_as_they_are_made() -> None:
    """The caller's work to make the items overlaps the workers': the first item is done before
    the last one is made (the generator waits for it), and results still come in order."""
    import time

    done_early = []

    def made_slowly() -> Iterator[int]:
        for item in range(40):
            if item == 39:
                deadline = time.monotonic() + 10
                while not any(path.exists() for path in marks) and time.monotonic() < deadline:
                    time.sleep(0.01)
                done_early.append(any(path.exists() for path in marks))
            yield item

    marks = [Path(tempfile.gettempdir()) / f"ms-migrate-pool-{os.getpid()}-{item}" for item in range(40)]
    try:
        results = list(map_in_workers(partial(_mark_and_double, marks), made_slowly(), 2, _nothing))
    finally:
        for path in marks:
            path.unlink(missing_ok=True)
    assert results == [item * 2 for item in range(40)]
    assert done_early == [True]


def _mark_and_double(marks: list[Path], item: int) -> int:
    marks[item].touch()
    return item * 2


def test_no_items_and_a_dying_worker_from_a_generator() -> None:
    assert list(map_in_workers(_double_or_exit, iter(()), 2, _nothing)) == []
    results = list(map_in_workers(_double_or_exit, (item for item in range(10)), 2, _nothing))
    assert results[5] == WorkerDied(5, 3)
    assert [result for index, result in enumerate(results) if index != 5] == [
        index * 2 for index in range(10) if index != 5
    ]
