"""Stand-ins for the operators MindSpore removed before 1.7 that only ordered execution.

Code written for MindSpore 1.0 and 1.1 (course repositories, early BERT, GPT-2 and Transformer
ports) orders its loss-scaled steps' overflow checks with ``P.ControlDepend(depend_mode=1)`` and
``F.control_depend(src, dst)``. MindSpore 1.2 replaced both by data dependencies (``F.depend``;
the "auto-monad" change of February 2021, https://gitee.com/mindspore/mindspore commit 7d9a783993)
and removed the names, so on every release verify can install (1.7 and later) such a step fails as
it is built, BEFORE and AFTER alike, and its rewrite could not be tested at all (11 of the 24
converted sites of mindspore-ai/course).

In a verify worker (``install``), where the runtime lacks them, each becomes a stand-in that
returns its first input: the order of two operations, which changes no number on a CPU. A row
whose module names one says it ran with the stand-in (``named_by``). The upgraded file still
needs the names replaced to run on the target; MS211 reports them.

Module-level definitions: GRAPH mode compiles a Cell, and a function a construct calls, from
its source file.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

from mindspore import nn

_installed: list[str] = []


class ControlDepend(nn.Cell):
    """``P.ControlDepend(depend_mode)``: called with (src, dst), it returned an ordering token."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def construct(self, src, dst):
        return src


def control_depend(src, dst):
    """``F.control_depend(src, dst)``."""
    return src


# (module, name, stand-in): where the code of 1.0 and 1.1 found them.
_PLACES = (
    ("mindspore.ops", "ControlDepend", ControlDepend),
    ("mindspore.ops.operations", "ControlDepend", ControlDepend),
    ("mindspore.ops.functional", "control_depend", control_depend),
)
_NAMES = re.compile(r"\b(ControlDepend|control_depend)\b")


def install() -> None:
    """Put each stand-in where the runtime lacks the name (never over a real one)."""
    import importlib

    for module_name, name, standin in _PLACES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if not hasattr(module, name):
            setattr(module, name, standin)
            if name not in _installed:
                _installed.append(name)


def named_by(module: ModuleType) -> list[str]:
    """The installed stand-ins that ``module``'s source names."""
    if not _installed:
        return []
    try:
        with open(module.__file__ or "", encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, TypeError, UnicodeDecodeError):
        return []
    return sorted(set(_NAMES.findall(text)) & set(_installed))
