"""Placing an attribute in a Cell's `__init__`: for a GradOperation that must not be built inside
`construct`, which MindSpore 1.7's GRAPH mode cannot compile."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Optional

from ms_migrate.analysis.walk import walk
from ms_migrate.diagnostics import Edit


def is_self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def own_init(class_def: ast.ClassDef) -> Optional[ast.FunctionDef]:
    return next(
        (node for node in class_def.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"),
        None,
    )


def _is_super_init(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    function = node.value.func
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "__init__"
        and isinstance(function.value, ast.Call)
        and isinstance(function.value.func, ast.Name)
        and function.value.func.id == "super"
    )


def super_init(init: ast.FunctionDef) -> Optional[ast.stmt]:
    """The `super().__init__(...)` statement at the top level of ``init``: attributes set after it."""
    return next((node for node in init.body if _is_super_init(node)), None)


def free_attribute(class_def: ast.ClassDef, stem: str, also_taken: Sequence[str] = ()) -> str:
    """``stem``, or ``stem2``, ...: a `self.` attribute the class does not use."""
    used = {node.attr for node in walk(class_def) if is_self_attribute(node)} | set(also_taken)  # type: ignore[attr-defined]
    name, number = stem, 1
    while name in used:
        number += 1
        name = f"{stem}{number}"
    return name


def after_super_init(
    lines: list[str], super_call: ast.stmt, assignments: Sequence[str], newline: str
) -> Edit:
    """`self.<name> = <value>` lines (``assignments``, without `self.`) right after ``super_call``."""
    end = super_call.end_lineno or super_call.lineno
    line = lines[super_call.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    text = "".join(f"{indent}self.{assignment}{newline}" for assignment in assignments)
    return Edit((end + 1, 0), (end + 1, 0), text)
