"""How a grad's weights are written: what 1.x's GradOperation needs to know about them.

Given a Python list, 1.7's `GradOperation(get_by_list=True)` returns the gradients of every
Parameter the function uses, and given one bare Parameter a tuple of them all (measured on
1.7.0); a ParameterTuple gives just its own. So the downgrades wrap weights in a ParameterTuple
unless they are written as one, and handle a bare Parameter unless they are written as several.
"""

from __future__ import annotations

import ast


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
