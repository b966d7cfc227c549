"""Resolving names to MindSpore's qualified names through a module's own imports.

Scope-aware matching through libcst metadata costs about 11 times a bare parse on the model zoo,
so this resolves names itself: module-level imports give the candidates, and a name rebound at
module level or in an enclosing function is treated as unknown rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

Scope = Union[cst.FunctionDef, cst.Lambda]


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def variable_names(node: cst.CSTNode) -> set[str]:
    """Variable names read or written in ``node``; the attribute part of ``a.x`` is not one."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

    node.visit(_Names())
    return found


def _import_module_name(node: Union[cst.Attribute, cst.Name]) -> str:
    name = dotted_name(node)
    assert name is not None
    return name


@dataclass(frozen=True)
class ImportBinding:
    """A local name bound by an import statement at module level."""

    local: str
    qualified: str
    statement: Union[cst.Import, cst.ImportFrom]
    alias: cst.ImportAlias


def _import_bindings(statement: Union[cst.Import, cst.ImportFrom]) -> list[ImportBinding]:
    bindings = []
    if isinstance(statement, cst.Import):
        for alias in statement.names:
            module = _import_module_name(alias.name)
            if alias.asname is not None:
                local = alias.asname.name.value  # type: ignore[union-attr]
                bindings.append(ImportBinding(local, module, statement, alias))
            else:
                root = module.split(".")[0]
                bindings.append(ImportBinding(root, root, statement, alias))
        return bindings
    if statement.relative or statement.module is None or isinstance(statement.names, cst.ImportStar):
        return bindings
    module = _import_module_name(statement.module)
    for alias in statement.names:
        name = _import_module_name(alias.name)
        local = alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
        bindings.append(ImportBinding(local, f"{module}.{name}", statement, alias))
    return bindings


class _BindingCollector(cst.CSTVisitor):
    """Names bound directly in one scope, not descending into nested scopes."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.imports: list[Union[cst.Import, cst.ImportFrom]] = []
        self._depth = 0

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def _enter_scope(self, name: Optional[str]) -> bool:
        if self._depth == 0 and name is not None:
            self.names.add(name)
        self._depth += 1
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._enter_scope(node.name.value)

    def visit_If(self, node: cst.If) -> bool:
        # Imports under `if TYPE_CHECKING:` do not exist at run time; generated code must not
        # rely on them, and a GradOperation named through them cannot run either.
        test = dotted_name(node.test) or ""
        if test.split(".")[-1] == "TYPE_CHECKING":
            if node.orelse is not None:
                node.orelse.visit(self)
            return False
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._enter_scope(node.name.value)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self._enter_scope(None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._depth -= 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._depth -= 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        if not isinstance(node.name, (cst.Name, cst.Tuple, cst.List)):
            return
        self._bind_target(node.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name)

    def visit_Import(self, node: cst.Import) -> bool:
        self.imports.append(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.imports.append(node)
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.names.add(item.name.value)


def _bound_in(body: Iterable[cst.CSTNode]) -> _BindingCollector:
    collector = _BindingCollector()
    for statement in body:
        statement.visit(collector)
    return collector


@dataclass
class NameResolver:
    """Maps expressions to qualified names using the module's imports and scopes."""

    module: cst.Module
    imports: dict[str, ImportBinding] = field(default_factory=dict)
    rebound: set[str] = field(default_factory=set)
    _local_cache: dict[int, set[str]] = field(default_factory=dict)

    @classmethod
    def for_module(cls, module: cst.Module) -> NameResolver:
        resolver = cls(module)
        collected = _bound_in(module.body)
        import_locals: dict[str, list[ImportBinding]] = {}
        for statement in collected.imports:
            for binding in _import_bindings(statement):
                import_locals.setdefault(binding.local, []).append(binding)
        for name, bindings in import_locals.items():
            qualified = {binding.qualified for binding in bindings}
            if len(qualified) == 1 and name not in collected.names:
                resolver.imports[name] = bindings[0]
            else:
                resolver.rebound.add(name)
        return resolver

    def locals_of(self, scope: Scope) -> set[str]:
        cached = self._local_cache.get(id(scope))
        if cached is not None:
            return cached
        names: set[str] = set()
        params = scope.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            names.add(param.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                names.add(star.name.value)
        if isinstance(scope, cst.FunctionDef):
            body = scope.body.body if isinstance(scope.body, cst.IndentedBlock) else [scope.body]
            collected = _bound_in(body)
            names |= collected.names
            for statement in collected.imports:
                names |= {binding.local for binding in _import_bindings(statement)}
        self._local_cache[id(scope)] = names
        return names

    def is_free(self, name: str, scopes: Iterable[Scope] = ()) -> bool:
        """True if ``name`` at this point refers to the module-level import binding."""
        return name in self.imports and not any(name in self.locals_of(scope) for scope in scopes)

    def qualified_name(self, node: cst.BaseExpression, scopes: Iterable[Scope] = ()) -> Optional[str]:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        if not self.is_free(root, scopes):
            return None
        qualified = self.imports[root].qualified
        return f"{qualified}.{rest}" if rest else qualified

    def alias_for(self, qualified: str, scopes: Iterable[Scope] = ()) -> Optional[str]:
        """A local name that refers to the module ``qualified`` here, if the imports give one."""
        scopes = tuple(scopes)
        candidates = sorted(
            (binding.local for binding in self.imports.values() if binding.qualified == qualified),
            key=lambda local: (local != qualified.split(".")[-1], local),
        )
        for local in candidates:
            if self.is_free(local, scopes):
                return local
        return None
