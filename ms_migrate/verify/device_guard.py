"""Keep the device verify was given when the code under verification asks for another.

A training script often sets its device at import: `context.set_context(device_target="GPU")`
or `mindspore.set_device("Ascend", 1)`. On the CPU runtime that verify runs, MindSpore raises
("Unsupported device target GPU"), and the site could not run (10 of the rows of a public
tutorial repository never used in development). The device is verify's to choose (`--device`),
as the mode is: the worker keeps the device keys out of the code's `set_context` calls and
makes its `set_device` calls do nothing, passes every other key on, and the verdict of a site
whose file asked says what was left out. A parallel mode (`set_auto_parallel_context(
parallel_mode="semi_auto_parallel")`, which MindSpore refuses on CPU) is left out the same way:
verify runs on one device, where a parallel program computes what it computes on several.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DEVICE_KEYS = ("device_target", "device_id")

_asked: list[str] = []  # what the code asked for since the last ``take_asked``
_held: list[bool] = []  # inside ``mode_held``: the code's mode is left out too


@contextmanager
def mode_held() -> Iterator[None]:
    """While a test function runs as written (``contained``): its own `set_context(mode=...)`
    is left out too, so that each row runs in its own mode."""
    _held.append(True)
    try:
        yield
    finally:
        _held.pop()


def install(ms: Any) -> None:
    """Put the guards where the code finds ``set_context`` and ``set_device`` (1.x: the context
    module only). Called once the worker has set its own device, before any user code runs."""
    context = getattr(ms, "context", None)
    original = getattr(context, "set_context", None) or ms.set_context

    def set_context(*args: Any, **kwargs: Any) -> Any:
        keys = (*DEVICE_KEYS, "mode") if _held else DEVICE_KEYS
        left_out = {key: kwargs.pop(key) for key in keys if key in kwargs}
        if left_out:
            shown = ", ".join(f"{key}={value!r}" for key, value in left_out.items())
            _asked.append(f"set_context({shown})")
        if args or kwargs:
            return original(*args, **kwargs)
        return None

    def set_device(*args: Any, **kwargs: Any) -> None:
        shown = ", ".join([*map(repr, args), *(f"{key}={value!r}" for key, value in kwargs.items())])
        _asked.append(f"set_device({shown})")

    original_parallel = getattr(context, "set_auto_parallel_context", None) or getattr(
        ms, "set_auto_parallel_context", None
    )

    def set_auto_parallel_context(*args: Any, **kwargs: Any) -> Any:
        mode = kwargs.get("parallel_mode")
        if mode is not None and str(mode) != "stand_alone":
            _asked.append(f"set_auto_parallel_context(parallel_mode={kwargs.pop('parallel_mode')!r})")
        if original_parallel is not None and (args or kwargs):
            return original_parallel(*args, **kwargs)
        return None

    for holder in (ms, context):
        if holder is not None and hasattr(holder, "set_context"):
            holder.set_context = set_context
        if holder is not None and hasattr(holder, "set_auto_parallel_context"):
            holder.set_auto_parallel_context = set_auto_parallel_context
    if hasattr(ms, "set_device"):
        ms.set_device = set_device


def take_asked() -> list[str]:
    """What the code asked for since the last call, in order, once each."""
    asked = list(dict.fromkeys(_asked))
    _asked.clear()
    return asked


def describe(asked: list[str], device: str) -> str:
    return f"the code's {', '.join(asked)} left out: verify runs on {device}"
