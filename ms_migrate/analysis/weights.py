"""How a grad's weights are written: what 1.x's GradOperation needs to know about them.

Given a Python list, 1.7's `GradOperation(get_by_list=True)` returns the gradients of every
Parameter the function uses, and given one bare Parameter a tuple of them all (measured on
1.7.0); a ParameterTuple gives just its own. So the downgrades wrap weights in a ParameterTuple
unless they are written as one, and handle a bare Parameter unless they are written as several.
"""

from __future__ import annotations

import ast
from typing import Optional


def _called(node: ast.Call) -> str:
    function = node.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def written_as_parameter_tuple(weights: ast.expr) -> bool:
    """An optimizer's `parameters`, or `ParameterTuple(...)`."""
    if isinstance(weights, ast.Attribute):
        return weights.attr == "parameters"
    return isinstance(weights, ast.Call) and _called(weights) == "ParameterTuple"


def written_as_several(weights: ast.expr) -> bool:
    """A collection of Parameters, never one bare Parameter: a ParameterTuple, a literal list or
    tuple, or `trainable_params()`."""
    if written_as_parameter_tuple(weights) or isinstance(weights, (ast.List, ast.Tuple)):
        return True
    return isinstance(weights, ast.Call) and _called(weights) == "trainable_params"


def _self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def known_parameter_tuple(construct: ast.FunctionDef, init: ast.FunctionDef, weights: ast.expr) -> bool:
    """Whether ``weights`` in ``construct`` is a ParameterTuple: written as one, or a `self.`
    attribute (or a local bound once to it) that ``init`` sets once to one."""
    if written_as_parameter_tuple(weights):
        return True
    if isinstance(weights, ast.Name):
        bound = [
            node.value
            for node in ast.walk(construct)
            if isinstance(node, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == weights.id for target in node.targets)
        ]
        if len(bound) != 1:
            return False
        weights = bound[0]
    if not _self_attribute(weights):
        return False
    attribute = weights.attr  # type: ignore[attr-defined]
    assigned = [
        node.value
        for node in ast.walk(init)
        if isinstance(node, ast.Assign)
        and any(_self_attribute(target) and target.attr == attribute for target in node.targets)  # type: ignore[attr-defined]
    ]
    return len(assigned) == 1 and written_as_parameter_tuple(assigned[0])


def _parameters_bound(tree: ast.Module) -> set[str]:
    """Names the module or any function binds to `Parameter(...)` (any spelling of the class)."""
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and _called(node.value) == "Parameter"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def parameter_argument(tree: ast.Module, parents: dict[ast.AST, ast.AST], made: ast.Call) -> Optional[str]:
    """A name bound to a Parameter that an application of the grad function ``made`` passes as an
    input, or None. 1.7's GradOperation takes only tensors and numbers as inputs ("The inputs
    types of the outermost network ... support bool, int, float, None, tensor", measured on
    1.7.0), so a Parameter passed as one (the tutorial's `grad(function, (2, 3))(x, y, w, b)`)
    fails there."""
    bound = _parameters_bound(tree)
    if not bound:
        return None
    applications: list[ast.Call] = []
    parent = parents.get(made)
    if isinstance(parent, ast.Call) and parent.func is made:
        applications.append(parent)
    elif (
        isinstance(parent, ast.Assign)
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        name = parent.targets[0].id
        applications += [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
        ]
    for application in applications:
        for argument in application.args:
            if isinstance(argument, ast.Name) and argument.id in bound:
                return argument.id
    return None
