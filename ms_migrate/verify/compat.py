"""The few MindSpore calls a worker makes, spelled for whichever release runs it (1.7 to 2.10).

A worker runs on the runtime a rewrite is written for, so it cannot use 2.x spellings: 1.x has
no ``mindspore.set_device`` (the device is a ``set_context`` key there), no ``mindspore.jit``
(``ms_function``), and keeps the PYNATIVE executor in ``mindspore.common.api`` (2.9 moved it).
"""

from __future__ import annotations

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
