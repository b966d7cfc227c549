"""The rules' walk: what `ast.walk` and `ast.iter_child_nodes` give, in their order, less the
context and operator singletons, on every fixture and on the grammar's odd corners."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ms_migrate.analysis import walk as walking
from ms_migrate.analysis.walk import INERT, child_nodes, walk

FIXTURES = Path(__file__).parent / "fixtures"

CORNERS = """
from __future__ import annotations
import a.b as c, d
from .e import (f as g, h)
x: int = {**a, 'k': 1, **b}
def f(a, /, b=1, *c, d, e=2, **g) -> int:
    global x
    return -a + b * c @ d if not a and b or c else (yield from z)
async def h():
    async with a as (b, c):
        async for i in j:
            await k[1:2, ::3]
    return [i async for i in y if i if not i]
lambda *a, k, **b: {k: v for k, v in a}
match p:
    case [1, *rest] | {"k": v, **kw} if v > 0:
        pass
    case Point(x=0, y=y) as q:
        pass
    case _:
        pass
try:
    pass
except* (A, B) as e:
    raise C from e
else:
    del a.b, c[0]
finally:
    assert a < b <= c != d is not e in f, f"{x!r:>{w}} {y=}"
with open(f) as g, h:
    a, *b = c = d
    a += 1; b //= 2; c |= 3
while a: break
class K(B, metaclass=M):
    x = 1 if a else ~b
"""


def _texts() -> list[str]:
    return [CORNERS, *(path.read_text(encoding="utf-8") for path in sorted(FIXTURES.rglob("*.py")))]


def test_the_walk_is_ast_walk_without_contexts_and_operators() -> None:
    compared = 0
    for text in _texts():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        assert list(walk(tree)) == [node for node in ast.walk(tree) if type(node) not in INERT]
        for node in walk(tree):
            expected = [child for child in ast.iter_child_nodes(node) if type(child) not in INERT]
            assert child_nodes(node) == expected, ast.dump(node)[:200]
        compared += 1
    assert compared > 100


def test_the_corners_hold_what_the_walk_must_skip_and_keep() -> None:
    tree = ast.parse(CORNERS)
    kinds = {type(node) for node in ast.walk(tree)}
    # Each odd field is exercised: None among dict keys and keyword-only defaults, lists of
    # operators, and every kind of singleton.
    assert {ast.Dict, ast.arguments, ast.Compare, ast.MatchMapping, ast.JoinedStr} <= kinds
    assert {ast.Load, ast.Store, ast.Del, ast.Add, ast.USub, ast.Not, ast.And, ast.Lt} <= kinds
    assert not {type(node) for node in walk(tree)} & INERT


def test_a_node_type_made_by_hand_is_walked_field_by_field() -> None:
    class Pair(ast.AST):
        """Not a grammar line."""

        _fields = ("first", "second", "label")

    inner = ast.Name(id="x", ctx=ast.Load())
    pair = Pair(first=inner, second=[ast.Constant(1), None, ast.Add()], label="text")
    assert child_nodes(pair) == [inner, pair.second[0]]
    assert walking._FIELDS[Pair] == (("first", 3), ("second", 3), ("label", 3))


@pytest.mark.parametrize("kind", [ast.Name, ast.Dict, ast.arguments, ast.Compare, ast.Global, ast.alias])
def test_the_grammar_is_read_from_the_docstrings(kind: type) -> None:
    fields = walking._fields_of(kind)
    assert all(shape in (0, 1, 2) for _, shape in fields), fields  # no type fell back
    assert [name for name, _ in fields] == [
        name for name in kind._fields if name not in ("id", "ctx", "ops", "names", "name", "asname")
    ]


def _depth_of_every_node(tree: ast.AST) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def test_the_depth_limit_counts_the_nodes_the_walk_leaves_out() -> None:
    """`parsing._depth` walks without contexts and operators, and still counts them: the nesting
    that MAX_DEPTH bounds is the one libcst sees."""
    from ms_migrate.core.parsing import _depth

    compared = 0
    for text in [*_texts(), "x", "a + b", "not a", "a < b", "a and b", "x += 1", "f(*a)[0].b", "[a, (b,)]"]:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        assert _depth(tree) == _depth_of_every_node(tree), text[:80]
        compared += 1
    assert compared > 100


def _spans(node: ast.AST, lines: set[int]) -> bool:
    start = getattr(node, "lineno", None)
    if start is None:
        return True
    decorators = getattr(node, "decorator_list", [])
    start = min([start, *(item.lineno for item in decorators)])
    return any(start <= line <= (node.end_lineno or start) for line in lines)  # type: ignore[attr-defined]


def _reached(node: ast.AST, tree: ast.AST, parents: dict[ast.AST, ast.AST], lines: set[int]) -> bool:
    while node is not tree:
        if not _spans(node, lines):
            return False
        node = parents[node]
    return True


@pytest.mark.parametrize("every", [1, 3, 17])
def test_the_walk_by_lines_is_the_walk_pruned_where_no_line_is_spanned(every: int) -> None:
    """walk_lines yields, in walk order and with each node's parent, exactly the nodes whose
    whole chain of ancestors spans one of the lines; so every ancestor of a node it yields."""
    for text in _texts():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # the fixtures of bad input
        lines = sorted(range(1, text.count("\n") + 2, every))
        parents = {child: node for node in walk(tree) for child in child_nodes(node)}

        pairs = list(walking.walk_lines(tree, lines))
        expected = [node for node in walk(tree) if _reached(node, tree, parents, set(lines))]
        assert [node for node, _ in pairs] == expected
        assert all(parent is parents.get(node) for node, parent in pairs)


def test_the_lines_that_name_a_word_are_counted_as_ast_counts_them() -> None:
    text = "a = 1\nb = set_device(0)\n\nc = 'set_device'; set_device(1)\r\nd = 2\n"
    assert walking.lines_naming(text, ["set_device"]) == [2, 4]
    # A bare carriage return ends a line for Python: every line is given, none is missed.
    assert walking.lines_naming("a\rb = set_device\n", ["set_device"]) == [1, 2, 3]


def test_the_parents_of_what_a_rule_looked_for_come_from_its_walk_and_agree_with_the_whole_map() -> None:
    """A rule that asks `calls_to` and then about the calls it got (their parent, their scopes)
    is answered from the statements `nodes_naming` walked; the whole file's parents map is not
    built for it, and every answer is the one that map gives."""
    from ms_migrate.context import FileContext
    from ms_migrate.facts.versions import Version

    text = (
        "import mindspore as ms\n\n\nclass Net:\n    def load(self, params):\n"
        "        missing = ms.load_param_into_net(self, params)\n        return missing\n\n\n"
        "def other(ms):\n    return ms.load_param_into_net(1, 2)\n\n\n"
        + "".join(f"x{index} = [i * {index} for i in range(3)]\n" for index in range(50))
        + "print(ms.load_param_into_net(net, p))\n"
    )
    ctx = FileContext(text, Version(2, 10))
    calls = list(ctx.calls_to({"mindspore.load_param_into_net"}))
    assert sorted(call.lineno for call in calls) == [6, 64]  # not the one where `ms` is a parameter
    parents = [ctx.parent_of(call) for call in sorted(calls, key=lambda call: call.lineno)]
    assert "parents" not in ctx.__dict__
    assert isinstance(parents[0], ast.Assign) and isinstance(parents[1], ast.Call)
    known = dict(ctx._known_parents)
    assert len(known) < len(ctx.nodes) / 4  # only the statements that name it
    full = ctx.parents
    assert all(full.get(node) is parent for node, parent in known.items())


def test_ms101_walks_a_file_once_with_the_other_rules() -> None:
    """MS101's index of a file is one walk of its tree: it keeps that walk's nodes and parents for
    the rules after it, in the order and with the map ``nodes`` and ``parents`` build, and reads
    them where another rule built them first."""
    from ms_migrate.context import FileContext
    from ms_migrate.facts.versions import Version
    from ms_migrate.rules.ms101 import BEFORE
    from ms_migrate.rules.ms101.decide import decide

    text = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n" + BEFORE
    first = FileContext(text, Version(2, 8))
    assert first.walked() is None
    assert decide(first).conversions
    kept = first.walked()
    assert kept is not None
    nodes, parents = kept
    assert nodes == list(walk(first.tree))
    assert parents == {child: node for node in nodes for child in child_nodes(node)}

    later = FileContext(text, Version(2, 8))
    built = (later.nodes, later.parents)
    assert len(decide(later).conversions) == len(decide(first).conversions)
    assert later.walked() is not None and later.walked()[0] is built[0] and later.walked()[1] is built[1]
