"""Where code holds a callable instead of calling it: `self.which_linear = nn.Dense`,
`partial(nn.Conv2d, ...)`, `def block(layer=nn.Dense)`, or a class that derives from it. Each call
of the held object elsewhere is a call of it, with the defaults it leaves out; a rule about a
callable's defaults that looked at `nn.Dense(...)` alone missed them (EAL-GAN's discriminator
built every layer through `self.which_linear`).

Pure: a node in, what holds it out."""

from __future__ import annotations

import ast
import enum
from typing import Callable, Optional

# Calls that ask what a class is, not make one: `isinstance(cell, nn.Dense)` holds nothing.
_ASKS_WHAT = frozenset({"isinstance", "issubclass", "type", "hasattr", "getattr", "id", "repr", "str"})


class Held(enum.Enum):
    PASSED_ON = "passed on"  # assigned, passed, returned, a default, in a container
    BASE = "a base"  # `class MyDense(nn.Dense)`


def how_held(node: ast.AST, parent_of: Callable[[ast.AST], Optional[ast.AST]]) -> Optional[Held]:
    """How the expression ``node`` (a name of a callable, not called here) is held; None where it
    is only asked about (`isinstance`, a comparison, a dictionary's key), reached into
    (`nn.Dense.__init__`), called, or one of a tuple or list (a set of types to test against,
    far more often than of layers to build)."""
    child, holder = node, parent_of(node)
    if isinstance(holder, (ast.Tuple, ast.List, ast.Set, ast.Starred)):
        # `cell_types = (nn.Dense, nn.LayerNorm)`: kept for an isinstance elsewhere, as a rule
        return None
    if isinstance(holder, ast.Call):
        if child is holder.func:
            return None
        return None if _callee(holder) in _ASKS_WHAT else Held.PASSED_ON
    if isinstance(holder, ast.Dict):
        return Held.PASSED_ON if any(value is child for value in holder.values) else None
    if isinstance(holder, ast.ClassDef):
        return Held.BASE if any(base is child for base in holder.bases) else None
    if isinstance(holder, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        return Held.PASSED_ON if getattr(holder, "value", None) is child else None
    passing = (ast.keyword, ast.Return, ast.arguments, ast.Lambda, ast.IfExp, ast.Yield, ast.YieldFrom)
    return Held.PASSED_ON if isinstance(holder, passing) else None


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def base_init_call(cls: ast.ClassDef) -> Optional[ast.Call]:
    """The call of the base's `__init__` in the class's own `__init__` (the one there is):
    `super().__init__(...)`, or `Base.__init__(self, ...)` spelled as the base is; its arguments
    bind to the base's parameters (``as_base_call``). None where there is none or several, or
    the class has more than one base (`super()` may then reach another)."""
    if len(cls.bases) != 1 or cls.keywords:
        return None
    base = ast.dump(cls.bases[0])
    found = [
        node
        for item in cls.body
        if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        for node in ast.walk(item)
        if isinstance(node, ast.Call) and (_calls_super_init(node) or _calls_init_of(node, base))
    ]
    return found[0] if len(found) == 1 else None


def as_base_call(call: ast.Call) -> ast.Call:
    """The arguments of a base's `__init__` call as a call of the base: `Base.__init__(self, a)`
    without its `self`; `super().__init__(a)` as it is."""
    if _calls_super_init(call) or not call.args:
        return call
    view = ast.Call(call.func, call.args[1:], call.keywords)
    return ast.copy_location(view, call)


def _calls_init_of(call: ast.Call, base: str) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr == "__init__" and ast.dump(func.value) == base


def defines_init(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__"
        for item in cls.body
    )


def _calls_super_init(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )
