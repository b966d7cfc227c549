"""The one call-argument binder: which expression a call passes for each parameter.

Every rule that reads a grad call's arguments (`grad(fn, grad_position, weights, has_aux)`,
`value_and_grad(...)`, `GradOperation(...)(fn, weights)`) binds them here, so a `*args`, an
extra positional argument or an unknown keyword means the same thing to all of them. Pure.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Optional

STARRED = "starred or extra arguments"


@dataclass(frozen=True)
class Bound:
    """The arguments by parameter name, and why the call does not bind plainly, if it does not."""

    given: dict[str, ast.expr] = field(default_factory=dict)
    problem: Optional[str] = None  # STARRED, or "the keyword NAME=" (`**=` for a `**kwargs`)


def bind(call: ast.Call, positional: Sequence[str], keyword_only: Collection[str] = ()) -> Bound:
    """``call``'s arguments: positional ones to ``positional`` in order, keywords by name. The
    first `*args`, extra positional argument, unknown keyword, keyword given twice or `**kwargs`
    is the problem; ``given`` holds every argument bound all the same (positional ones up to a
    `*args`, and every named keyword), for a reader that can use part of a call."""
    given: dict[str, ast.expr] = {}
    problem: Optional[str] = None
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or index >= len(positional):
            problem = STARRED
            if isinstance(arg, ast.Starred):
                break
            continue
        given[positional[index]] = arg
    known = {*positional, *keyword_only}
    for keyword in call.keywords:
        if keyword.arg is not None and keyword.arg not in given:
            given[keyword.arg] = keyword.value
            if keyword.arg in known:
                continue
        problem = problem or f"the keyword {keyword.arg or '**'}="
    return Bound(given, problem)


def sets_flag(call: ast.Call, keyword: str) -> bool:
    """Whether ``call`` passes ``keyword=`` with anything but a literal False (`sens_param=True`,
    or a value not known until run time)."""
    return any(
        item.arg == keyword and not (isinstance(item.value, ast.Constant) and item.value.value is False)
        for item in call.keywords
    )
