"""Which expressions hold an instance of a given class, as far as one file shows it.

`model.train(...)` is `Model.train` where `model` is bound to `Model(...)` and to nothing else in
its function (or module); `self.dropout.keep_prob` reads a Dropout's attribute where the class
binds `self.dropout` only to `nn.Dropout(...)`. Pure: a FileContext in, answers out.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from typing import Optional

from ms_migrate.analysis.names import SCOPE_TYPES, ParentLookup
from ms_migrate.context import FileContext


class InstancesOf:
    """The receivers that hold an instance of one of ``classes`` (qualified names): a call of it
    itself, or a name or `self.` attribute that its function, class or module binds to such a
    call and to nothing else. A function's parameter of that name is unknown, so never one."""

    def __init__(self, ctx: FileContext, classes: Collection[str]) -> None:
        self.ctx, self.classes = ctx, classes
        self._bindings: Optional[dict[tuple[int, str], bool]] = None

    def holds(self, receiver: ast.AST, at: ast.AST) -> bool:
        """Whether ``receiver``, read at ``at``, is an instance of one of the classes."""
        if isinstance(receiver, ast.Call):
            return self.ctx.qualified_name(receiver.func) in self.classes
        key = self._key(receiver, at)
        if key is None:
            return False
        if key in self.bindings:
            return self.bindings[key]
        function = _scope(self.ctx.lineage, at, SCOPE_TYPES)
        if not isinstance(receiver, ast.Name) or function is None or receiver.id in _parameters(function):
            return False
        return self.bindings.get((id(None), receiver.id), False)  # a module-level name the function reads

    @property
    def bindings(self) -> dict[tuple[int, str], bool]:
        """(id of the scope, name) -> whether every binding of it is a call of one of the classes."""
        if self._bindings is None:
            self._bindings = {}
            for node in self.ctx.nodes:
                if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value
                made = (
                    not isinstance(node, ast.AugAssign)
                    and isinstance(value, ast.Call)
                    and self.ctx.qualified_name(value.func) in self.classes
                )
                for target in targets:
                    for bound in _bound(target):
                        key = self._key(bound, node)
                        if key is not None:
                            self._bindings[key] = self._bindings.get(key, True) and made and target is bound
        return self._bindings

    def _key(self, receiver: ast.AST, at: ast.AST) -> Optional[tuple[int, str]]:
        """Where ``receiver`` is bound: its function (or the module) for a name, its class for a
        `self.` attribute."""
        if isinstance(receiver, ast.Name):
            return (id(_scope(self.ctx.lineage, at, SCOPE_TYPES)), receiver.id)
        if isinstance(receiver, ast.Attribute) and getattr(receiver.value, "id", None) == "self":
            return (id(_scope(self.ctx.lineage, at, (ast.ClassDef,))), f"self.{receiver.attr}")
        return None


def _parameters(function: ast.AST) -> set[str]:
    arguments = function.args  # type: ignore[attr-defined]
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [arguments.vararg, arguments.kwarg]
    return {argument.arg for argument in every if argument is not None}


def _bound(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            yield from _bound(item)
    elif isinstance(target, ast.Starred):
        yield from _bound(target.value)
    else:
        yield target


def _scope(parents: ParentLookup, node: ast.AST, kinds: tuple[type, ...]) -> Optional[ast.AST]:
    current = parents.get(node)
    while current is not None and not isinstance(current, kinds):
        current = parents.get(current)
    return current
