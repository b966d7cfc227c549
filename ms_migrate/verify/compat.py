"""The few MindSpore calls a worker makes, spelled for whichever release runs it (1.7 to 2.10).

A worker runs on the runtime a rewrite is written for, so it cannot use 2.x spellings: 1.x has
no ``mindspore.set_device`` (the device is a ``set_context`` key there), no ``mindspore.jit``
(``ms_function``), and keeps the PYNATIVE executor in ``mindspore.common.api`` (2.9 moved it).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional


def set_device(ms: Any, device: str, device_id: Optional[int] = None) -> None:
    """Before anything else runs: the 1.x GPU builds default to the GPU. ``device_id``: which of
    several accelerators (None: MindSpore's default)."""
    chosen = {} if device_id is None else {"device_id": device_id}
    if hasattr(ms, "set_device"):
        ms.set_device(device, **chosen)
    else:
        ms.context.set_context(device_target=device, **chosen)


def set_mode(ms: Any, mode: str) -> None:
    value = ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE
    setter = getattr(ms, "set_context", None) or ms.context.set_context
    setter(mode=value)


def stand_alone(ms: Any) -> None:
    """Back to one device where code run earlier in this worker left a parallel mode.

    A copy of MindSpore's parallel tests sets `parallel_mode="auto_parallel"` in each test function
    and resets it in a pytest fixture the worker never runs: every site after the first such test
    in the worker then failed alike in both versions ("Invalid communication backend: CPU for
    semi_auto_parallel/auto_parallel mode", 101 sites)."""
    context = getattr(ms, "context", None)
    getter = getattr(ms, "get_auto_parallel_context", None) or context.get_auto_parallel_context
    if getter("parallel_mode") in ("stand_alone", None):
        return
    resetter = getattr(ms, "reset_auto_parallel_context", None) or context.reset_auto_parallel_context
    resetter()


def jit(ms: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``mindspore.jit`` from 2.0, ``ms_function`` before."""
    return getattr(ms, "jit", None) or ms.ms_function


def clear_pynative_records() -> None:
    """Forget the forwards PYNATIVE recorded for earlier sites in this worker.

    With set_grad(), PYNATIVE GradOperation reuses a recorded forward. Records left by earlier
    sites' Cells made BEFORE and AFTER of a later site disagree (seen on 2.10, only when several
    sites share a worker), though each agrees with a fresh process.
    """
    try:
        from mindspore.graph.api import _pynative_executor  # 2.9+
    except ImportError:
        from mindspore.common.api import _pynative_executor
    clear = getattr(_pynative_executor, "clear_res", None)
    if clear is not None:
        clear()


# How long the asynchronous inference of a failed compile was seen to go on (on 2.10, CPU): with
# this pause no worker of 28 runs of two steps that had died did, with 0.1 s 2 of 8, with none about half.
SETTLE_S = 0.5


def settle_after_a_failure(error: BaseException) -> None:
    """Call first thing where user code failed: hold the GIL for ``SETTLE_S`` when the failure
    came from compiling a graph (a MindSpore `compile` on its traceback, or `analyze_fail.ir`).

    A failed compile leaves MindSpore's asynchronous inference threads (`AsyncInferTask`) running
    for a while, and they free the Python objects their graph nodes held without the GIL. While
    this thread holds it that goes by (Python 3.11 keeps one current thread state for the
    process); once this thread lets it go, at the next file read or C++ call that releases it,
    the freeing thread finds no thread state and Python aborts the worker ("PyThreadState_Get:
    the function must be called with the GIL held", seen in gdb in a `~CNode` of a frontend
    thread). A loop that calls no C function that releases the GIL holds it; sleeping would not."""
    if not _compiling(error):
        return
    end = time.perf_counter() + SETTLE_S
    while time.perf_counter() < end:
        pass


def _compiling(error: BaseException) -> bool:
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if "compile" in code.co_name and "mindspore" in code.co_filename:
            return True
        trace = trace.tb_next
    return "analyze_fail" in str(error)
