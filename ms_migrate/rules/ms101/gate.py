"""MS101's questions that the `ast` tree answers, before (and mostly instead of) libcst.

Whether a file can hold a site at all, and which grad ops a class inherits from a MindSpore base
class whose flags are known (``rules/inherited_grad_ops.json``). Importing this module does not
import libcst, so a run over files without sites never pays for it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.analysis.project import last_name
from ms_migrate.data import rules_path

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


def calls_grad_operation(tree: ast.Module) -> bool:
    """Whether the `ast` tree calls something named GradOperation (or imported under another
    name): a superset of the creations ``analyse`` finds, decided without libcst."""
    creators = {"GradOperation"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            creators |= {item.asname for item in node.names if item.name == "GradOperation" and item.asname}
    calls = (node for node in ast.walk(tree) if isinstance(node, ast.Call))
    return any(last_name(call.func) in creators for call in calls)


def inherited_uses(
    tree: ast.Module, family_of: Optional[Callable[[ast.ClassDef], Optional[str]]] = None
) -> list[InheritedUse]:
    """``analyse``'s inherited uses, from the `ast` tree, for a file that creates no grad op.

    `self.x(...)(...)` in a class with a TrainOneStepCell-family base that never assigns
    `self.x = ...`: the op comes from the base class. Most files that pass MS101's byte prefilter
    hold only these (or nothing), and need no libcst parse to say so.
    """
    found: list[InheritedUse] = []
    stack: list[tuple[ast.AST, Optional[ast.ClassDef]]] = [(tree, None)]
    applied: list[tuple[ast.ClassDef, ast.Attribute]] = []
    assigned: set[tuple[int, str]] = set()
    while stack:
        node, owner = stack.pop()
        if isinstance(node, ast.ClassDef):
            owner = node
            defs = (item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            assigned |= {(id(node), item.name) for item in defs}
        elif owner is not None and isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == "self":
                    assigned.add((id(owner), target.attr))
        elif owner is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
            inner = node.func.func
            if isinstance(inner, ast.Attribute) and getattr(inner.value, "id", None) == "self":
                applied.append((owner, inner))
        stack.extend((child, owner) for child in ast.iter_child_nodes(node))
    for owner, attribute in applied:
        if (id(owner), attribute.attr) in assigned:
            continue
        names = [last_name(base) for base in owner.bases]
        base = next((name for name in names if name in TRAIN_ONE_STEP_FAMILY), None)
        if base is None and family_of is not None:
            base = family_of(owner)
        if base is not None:
            found.append(InheritedUse(attribute.lineno, owner.name, base, attribute.attr))
    return found

@dataclass
class InheritedUse:
    """`self.grad(...)` applied in a class that never creates it (an inherited op)."""

    line: int
    class_name: str
    base: str
    attribute: str = "grad"

    @property
    def flags(self) -> Optional[Flags]:
        """The op's flags when the base is a MindSpore class known to create it (rules/ data)."""
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
