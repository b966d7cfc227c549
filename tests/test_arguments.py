"""The one call-argument binder every grad rule reads calls through."""

from __future__ import annotations

import ast

import pytest

from ms_migrate.analysis.arguments import STARRED, bind

GRAD = ("fn", "grad_position", "weights", "has_aux")


def _bound(source: str) -> tuple[dict[str, str], object]:
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call)
    bound = bind(call, GRAD, ("sens_param",))
    return {name: ast.unparse(value) for name, value in bound.given.items()}, bound.problem


@pytest.mark.parametrize(
    ("source", "given", "problem"),
    [
        ("grad(f, 0, w, True)", {"fn": "f", "grad_position": "0", "weights": "w", "has_aux": "True"}, None),
        ("grad(f, weights=w, sens_param=True)", {"fn": "f", "weights": "w", "sens_param": "True"}, None),
        ("grad(*a, weights=w)", {"weights": "w"}, STARRED),
        ("grad(f, 0, w, True, 5)", dict(zip(GRAD, ("f", "0", "w", "True"))), STARRED),
        ("grad(f, return_ids=True)", {"fn": "f", "return_ids": "True"}, "the keyword return_ids="),
        ("grad(f, fn=g)", {"fn": "f"}, "the keyword fn="),
        ("grad(f, **options)", {"fn": "f"}, "the keyword **="),
    ],
)
def test_a_call_binds_by_position_then_keyword_and_names_its_first_problem(
    source: str, given: dict[str, str], problem: object
) -> None:
    assert _bound(source) == (given, problem)
