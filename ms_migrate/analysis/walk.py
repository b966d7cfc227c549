"""``ast.walk`` and ``ast.iter_child_nodes`` for the rules: the same nodes in the same order, less
the contexts and operators, at about three times the speed.

The standard ones are generators over generators (``iter_fields``) that look at every field of
every node, and a third of the nodes they yield are the shared ``Load()``, ``Store()`` and operator
singletons (`x` holds a ``Load``, `a + b` an ``Add``), which no rule looks for: it reads them
through their node (``name.ctx``, ``binop.op``). Every rule walks its file at least once, so the
zoo pays this thousands of times. Here each node type's fields that hold nodes are known in
advance, from the grammar Python prints in the type's docstring (`Name(identifier id,
expr_context ctx)`), and the children come back as a list.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Optional

from ms_migrate.analysis.text_scan import at_word_starts

# Grammar types whose values are never nodes, and the node types no rule walks to.
_NOT_NODES = frozenset({"identifier", "string", "constant", "int"})
_INERT_BASES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_INERT_TYPES = frozenset(base.__name__ for base in _INERT_BASES)
INERT = frozenset(kind for base in _INERT_BASES for kind in base.__subclasses__())
_SIGNATURE = re.compile(r"\w+\((.*)\)")
_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")
# The two lists of the grammar that hold None among their nodes: `{**a}` has a None key, and a
# keyword-only parameter without a default a None default.
_WITH_NONE = frozenset({(ast.Dict, "keys"), (ast.arguments, "kw_defaults")})

# For each node type: (field, 0 for one node, 1 for a list of nodes, 2 for a list with Nones).
_Fields = tuple[tuple[str, int], ...]
_FIELDS: dict[type, _Fields] = {}


def _fields_of(kind: type) -> _Fields:
    """The fields of ``kind`` that hold nodes, read from its grammar; a type whose docstring is
    not its grammar (one made by hand) keeps every field, looked at value by value."""
    signature = _SIGNATURE.fullmatch((kind.__doc__ or "").strip())
    fields = [_FIELD.fullmatch(part.strip()) for part in signature.group(1).split(",")] if signature else []
    if fields and all(fields) and tuple(field.group(3) for field in fields) == kind._fields:  # type: ignore[union-attr]
        found = tuple(
            (name, 0 if suffix != "*" else 2 if (kind, name) in _WITH_NONE else 1)
            for grammar_type, suffix, name in (field.groups() for field in fields)  # type: ignore[union-attr]
            if grammar_type not in _NOT_NODES and grammar_type not in _INERT_TYPES
        )
    elif not kind._fields:  # type: ignore[attr-defined]
        found = ()
    else:
        found = tuple((name, 3) for name in kind._fields)  # type: ignore[attr-defined]
    _FIELDS[kind] = found
    return found


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without contexts and operators, in field order."""
    found: list[ast.AST] = []
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _fields_of(kind)
    for name, shape in fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if shape == 0:
            found.append(value)
        elif shape == 1:
            found += value
        elif shape == 2:
            found += [item for item in value if item is not None]
        elif isinstance(value, ast.AST):
            if type(value) not in INERT:
                found.append(value)
        elif isinstance(value, list):
            found += [item for item in value if isinstance(item, ast.AST) and type(item) not in INERT]
    return found


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)`` without contexts and operators: every node under ``node`` (itself
    first), breadth first."""
    queue = deque([node])
    while queue:
        node = queue.popleft()
        queue.extend(child_nodes(node))
        yield node


def lines_naming(text: str, words: Iterable[str]) -> list[int]:
    """The lines (from 1, as ``ast`` counts them) where one of ``words`` stands as a word in
    ``text``, in order. Only a line feed ends a line here: a text with bare carriage returns gets
    every line."""
    if "\r" in text.replace("\r\n", ""):
        return list(range(1, text.count("\r") + text.count("\n") + 2))
    found: list[int] = []
    line, position = 1, 0
    for match in at_word_starts(_words_pattern(frozenset(words)), text):
        line += text.count("\n", position, match.start())
        position = match.start()
        if not found or found[-1] != line:
            found.append(line)
    return found


@lru_cache(maxsize=64)
def _words_pattern(words: frozenset[str]) -> re.Pattern[str]:
    """Any of ``words``, ending a word: where it starts is ``at_word_starts``'s to check."""
    return re.compile(r"(?:{})\b".format("|".join(sorted(map(re.escape, words)))))


_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _holds_a_line(node: ast.AST, lines: Sequence[int]) -> bool:
    start = getattr(node, "lineno", None)
    if start is None:
        return True  # arguments, comprehensions and the like: their parts have positions
    if isinstance(node, _DECORATED) and node.decorator_list:
        start = min(start, *(decorator.lineno for decorator in node.decorator_list))
    index = bisect.bisect_left(lines, start)
    return index < len(lines) and lines[index] <= (getattr(node, "end_lineno", None) or start)


def walk_lines(node: ast.AST, lines: Sequence[int]) -> Iterator[tuple[ast.AST, Optional[ast.AST]]]:
    """(node, the node that holds it) for each node of ``walk(node)`` whose lines take in one of
    ``lines`` (sorted), breadth first: what spans none of them is never entered. Every ancestor of
    a node yielded is yielded before it, so the pairs are its parents as far as it needs them.
    A rule that looks for a few words walks only the statements that hold them."""
    queue: deque[tuple[ast.AST, Optional[ast.AST]]] = deque([(node, None)])
    while queue:
        current, parent = queue.popleft()
        yield current, parent
        queue.extend((child, current) for child in child_nodes(current) if _holds_a_line(child, lines))
