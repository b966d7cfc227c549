"""GradOperation flags, and the grad ops MindSpore's train-step base classes create.

A class that applies `self.grad(...)(...)` without creating it inherits the op; its flags are
known for the bases listed in ``rules/inherited_grad_ops.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.facts.data import rules_path

# Base classes that create `self.grad` themselves; a subclass applying it inherits the op.
TRAIN_ONE_STEP_FAMILY = frozenset(
    {
        "TrainOneStepCell",
        "TrainOneStepWithLossScaleCell",
        "BoostTrainOneStepCell",
        "BoostTrainOneStepWithLossScaleCell",
        "PipelineCell",
        "TrainOneStepWithClipGradientCell",
    }
)

FLAG_NAMES = ("get_all", "get_by_list", "sens_param")


@dataclass(frozen=True)
class Flags:
    get_all: bool = False
    get_by_list: bool = False
    sens_param: bool = False
    legacy_name: bool = False  # the 0.x `GradOperation('grad', ...)` name argument

    def describe(self) -> str:
        set_flags = [name for name in FLAG_NAMES if getattr(self, name)]
        return ", ".join(f"{name}=True" for name in set_flags) or "no flags"


@dataclass
class InheritedUse:
    """`self.grad(...)` applied in a class that never creates it (an inherited op)."""

    line: int
    class_name: str
    base: str
    attribute: str = "grad"
    # When a class of the run creates the op (not MindSpore's): its file ("" for this one).
    defined_in: Optional[str] = None

    @property
    def from_user_class(self) -> bool:
        return self.defined_in is not None

    @property
    def flags(self) -> Optional[Flags]:
        """The op's flags when the base is a MindSpore class known to create it (rules/ data)."""
        if self.from_user_class:
            return None
        return base_class_ops().get(self.base, {}).get(self.attribute)


@cache
def _base_class_data() -> dict:
    return json.loads(rules_path("inherited_grad_ops.json").read_text(encoding="utf-8"))["bases"]


# What a user class between a subclass and the MindSpore base must leave alone for the base's
# grad ops and set_grad() to reach the subclass as recorded.
UNTOUCHED = frozenset({"network", "weights", "grad", "grad_no_sens"})


@cache
def base_class_ops() -> dict[str, dict[str, Flags]]:
    """Base class -> attribute -> flags of the grad ops its __init__ creates."""
    return {
        base: {name: Flags(**flags) for name, flags in entry["ops"].items()}
        for base, entry in _base_class_data().items()
    }


@cache
def set_grad_bases() -> frozenset[str]:
    """Bases whose __init__ calls `self.network.set_grad()` (rules/inherited_grad_ops.json)."""
    return frozenset(base for base, entry in _base_class_data().items() if entry["sets_grad_on_network"])
