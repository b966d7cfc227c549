"""CPU stand-ins for the float-status operators of loss-scaled train steps.

Loss-scaled steps check for overflow with operators that only Ascend and GPU have:
``NPUAllocFloatStatus`` / ``NPUGetFloatStatus`` / ``NPUClearFloatStatus`` (and their ``V2``
forms) read the device's overflow register, ``FloatStatus`` flags a non-finite tensor on GPU. On
CPU, MindSpore's kernel selection refuses all of them ("Unsupported op [NPUGetFloatStatusV2] on
CPU"), and so does every release's own ``nn.TrainOneStepWithLossScaleCell.get_overflow_status``
(2.x takes the Ascend branch on any device that is not a GPU). Measured over two model zoos, that
left about fifty loss-scaled steps, the rewrites with the most to get wrong, that verify could not
run at all.

In a verify worker on CPU (``install``), before the project's modules are imported:

- ``FloatStatus`` becomes a Cell that computes what the GPU kernel does: ``[1.0]`` when its
  input holds an inf or a NaN, else ``[0.0]``. Exact.
- The base classes' ``get_overflow_status`` computes overflow from the gradients it is given
  (every one finite, or not), as MindSpore itself does on a GPU and in Ascend's "INFNAN" mode.
  Exact for what the gradients hold.
- The NPU operators become Cells that return a clear status (zeros): the register is the device's,
  and CPU has none. What Ascend would read after a step whose values are all finite, which the
  probe's are; but an overflow that only the register saw is not seen, and neither is the order of
  the clear and get calls around the grad. Rows that ran them say so (``used``).

These are module-level classes: GRAPH mode compiles a Cell from its source file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mindspore import Tensor, nn
from mindspore.common import dtype as mstype
from mindspore.ops import composite as C
from mindspore.ops import functional as F
from mindspore.ops import operations as P

STATUS_SIZE = 8  # NPUAllocFloatStatus's register copy: eight float32 flags

# What ran this site: reset by the harness before each site, read after it.
_used: set[str] = set()


def reset_used() -> None:
    _used.clear()


def used() -> list[str]:
    """The stand-ins the last site built, by the name of the operator they stand in for."""
    return sorted(_used)


class _StandIn(nn.Cell):
    """A Cell in place of a Primitive of its class's name: built with the Primitive's (ignored)
    arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        _used.add(type(self).__name__)


_CLEAR = Tensor(np.zeros(STATUS_SIZE, np.float32))
_zeros_like = P.ZerosLike()


class NPUAllocFloatStatus(_StandIn):
    def construct(self):
        return _zeros_like(_CLEAR)


class _ClearStatus(_StandIn):
    """Reads (or clears) the register into ``status``: a clear status, on CPU."""

    def construct(self, status):
        return _zeros_like(status)


class NPUGetFloatStatus(_ClearStatus):
    pass


class NPUClearFloatStatus(_ClearStatus):
    pass


class NPUGetFloatStatusV2(_ClearStatus):
    pass


class NPUClearFloatStatusV2(_ClearStatus):
    pass


class FloatStatus(nn.Cell):
    """The GPU operator: [1.0] if ``x`` holds an inf or a NaN, else [0.0]. Not a stand-in whose
    use is reported: it computes exactly what the GPU kernel does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.is_finite = P.IsFinite()
        self.all = P.ReduceAll(keep_dims=False)
        self.reshape = P.Reshape()
        self.cast = P.Cast()

    def construct(self, x):
        finite = self.all(self.is_finite(x))
        return self.reshape(1.0 - self.cast(finite, mstype.float32), (1,))


_finite = C.MultitypeFuncGraph("_finite")
_is_finite = P.IsFinite()
_all = P.ReduceAll(keep_dims=False)
_hyper_map = C.HyperMap()
_add_n = P.AddN()
_cast = P.Cast()


@_finite.register("Tensor")
def _tensor_finite(grad):
    return _cast(_all(_is_finite(grad)), mstype.float32)


def start_overflow_check(self, pre_cond, compute_input):
    """A clear status after ``pre_cond`` (1.x allocates and clears NPU status inline here), which
    ``get_overflow_status`` does not read."""
    return F.depend(_zeros_like(_CLEAR), pre_cond), compute_input


def get_overflow_status(self, status, compute_output):
    """Overflow: some gradient holds an inf or a NaN (``status`` only orders the call)."""
    finite = _add_n(_hyper_map(_finite, compute_output))
    overflow = finite < len(compute_output)
    if self.is_distributed:
        overflow = self.allreduce(_cast(overflow, mstype.float32)) > 0.0
    return overflow


STANDINS = (
    NPUAllocFloatStatus,
    NPUGetFloatStatus,
    NPUClearFloatStatus,
    NPUGetFloatStatusV2,
    NPUClearFloatStatusV2,
    FloatStatus,
)
_OPERATOR_MODULES = ("mindspore.ops", "mindspore.ops.operations", "mindspore.ops.operations.math_ops")
_LOSS_SCALE_BASES = (
    ("mindspore.nn.wrap.loss_scale", "TrainOneStepWithLossScaleCell"),
    ("mindspore.nn", "TrainOneStepWithLossScaleCell"),
    ("mindspore.boost.boost_cell_wrapper", "BoostTrainOneStepWithLossScaleCell"),
)


def install() -> None:
    """Put the stand-ins where the project's code finds the operators and the base classes."""
    import importlib

    for name in _OPERATOR_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for standin in STANDINS:
            if hasattr(module, standin.__name__):
                setattr(module, standin.__name__, standin)
    for module_name, class_name in _LOSS_SCALE_BASES:
        try:
            base = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        base.get_overflow_status = get_overflow_status
        base.start_overflow_check = start_overflow_check
