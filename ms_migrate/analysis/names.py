"""Resolving names to MindSpore's qualified names through a module's own imports, on ``ast``.

Scope-aware matching through libcst metadata costs about 11 times a bare parse on the model zoo,
so this resolves names itself: module-level imports give the candidates, and a name rebound at
module level or in an enclosing function is treated as unknown rather than guessed.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional, Protocol, Union

from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.diagnostics import source_lines

Scope = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class ParentLookup(Protocol):
    """What holds a node: a parents dict, or ``FileContext.lineage``."""

    def get(self, node: ast.AST, /) -> Optional[ast.AST]: ...


def enclosing_scopes(parents: ParentLookup, node: ast.AST) -> list[Scope]:
    """The functions and lambdas around ``node``, innermost first: where a local name can shadow
    a module-level import."""
    scopes: list[Scope] = []
    current = parents.get(node)
    while current is not None:
        if isinstance(current, SCOPE_TYPES):
            scopes.append(current)
        current = parents.get(current)
    return scopes


def compiled_function(parents: ParentLookup, node: ast.AST) -> Optional[ast.FunctionDef]:
    """The `construct` or jit-decorated function around ``node``, which GRAPH mode compiles (and
    where 1.x cannot build a GradOperation, a Cell or a ParameterTuple), or None."""
    for scope in enclosing_scopes(parents, node):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        compiled = any(re.search(r"jit|ms_function", ast.unparse(item)) for item in scope.decorator_list)
        if scope.name == "construct" or compiled:
            return scope  # type: ignore[return-value]
    return None


def variable_names(node: ast.AST, attributes: bool = False) -> set[str]:
    """Names ``node`` reads or binds: variables, parameters, keyword names, def, class and import
    names. The attribute part of ``a.x`` is not one, unless ``attributes``."""
    found: set[str] = set()
    for child in walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            if attributes:
                found.add(child.attr)
        elif isinstance(child, ast.arg) or (isinstance(child, ast.keyword) and child.arg is not None):
            found.add(child.arg)
        elif isinstance(child, (*FUNCTION_TYPES, ast.ClassDef)):
            found.add(child.name)
        elif isinstance(child, ast.alias):
            found.add(child.asname or child.name.split(".")[0])
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            found.update(child.names)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            found.add(child.name)
    return found


def all_names(tree: ast.AST) -> set[str]:
    """Every name the file binds or reads in any scope, attribute names included: a new import
    must avoid all of them."""
    return variable_names(tree, attributes=True)


class NamesOf(Container[str]):
    """``all_names`` of a tree, read only when a name is looked up: most rewrites reuse an
    import the file has and never ask. With the file's ``text``, a name the text does not hold
    as a word is answered without the walk (ASCII text only: Python reads a non-ASCII identifier
    as its NFKC form, which the text may spell differently). ``add`` takes a name a rewrite
    claims."""

    def __init__(self, tree: ast.AST, text: Optional[str] = None) -> None:
        self._tree = tree
        self._text = text if text is not None and text.isascii() else None
        self._names: Optional[set[str]] = None
        self._claimed: set[str] = set()

    def __contains__(self, name: object) -> bool:
        if name in self._claimed:
            return True
        if self._text is not None and isinstance(name, str) and _as_a_word(name).search(self._text) is None:
            return False
        if self._names is None:
            self._names = all_names(self._tree)
        return name in self._names

    def add(self, name: str) -> None:
        self._claimed.add(name)


@lru_cache(maxsize=256)
def _as_a_word(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}\b")


def loaded_names(tree: ast.AST) -> Counter[str]:
    """How often each name is mentioned outside imports and attribute parts: what keeps an import
    alive. Names in `__all__` and strings that are identifiers count too (star-importers, string
    annotations): a conservative count never drops an import that is still used."""
    counts: Counter[str] = Counter()
    for node in walk(tree):
        if isinstance(node, ast.Name):
            counts[node.id] += 1
        elif isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
            counts[node.name] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            counts.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            counts[node.name] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            counts[node.value] += 1
    return counts


_IMPORT_WORD = re.compile(r"import\b")


def found_after(pattern: re.Pattern[str], text: str, also: str = "") -> bool:
    """Whether ``pattern`` matches ``text`` where no word character (nor one of ``also``) comes
    before the match: ``(?<![\\w...])pattern``, which a regular expression engine tries at every
    position, found instead by searching from the pattern's own literal start."""
    position = 0
    while True:
        match = pattern.search(text, position)
        if match is None:
            return False
        start = match.start()
        if start == 0 or not (text[start - 1].isalnum() or text[start - 1] in also or text[start - 1] == "_"):
            return True  # isalnum() or "_" is what `\\w` matches in a str pattern
        position = start + 1


@dataclass(frozen=True)
class ImportBinding:
    """A local name bound by an import statement at module level."""

    local: str
    qualified: str


def import_bindings(statement: Union[ast.Import, ast.ImportFrom]) -> list[ImportBinding]:
    if isinstance(statement, ast.Import):
        return [
            ImportBinding(alias.asname, alias.name)
            if alias.asname
            else ImportBinding(alias.name.split(".")[0], alias.name.split(".")[0])
            for alias in statement.names
        ]
    if statement.level or statement.module is None:
        return []
    return [
        ImportBinding(alias.asname or alias.name, f"{statement.module}.{alias.name}")
        for alias in statement.names
        if alias.name != "*"
    ]


def _is_type_checking(test: ast.expr) -> bool:
    return (dotted_name(test) or "").split(".")[-1] == "TYPE_CHECKING"


def _bind(target: ast.AST, names: set[str]) -> None:
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _bind(element, names)
    elif isinstance(target, ast.Starred):
        _bind(target.value, names)


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "items", "cases")


def bound_in(
    body: Iterable[ast.AST], expressions: bool = True
) -> tuple[set[str], list[Union[ast.Import, ast.ImportFrom]]]:
    """Names bound directly in one scope (not in nested ones), and its import statements.

    Imports under `if TYPE_CHECKING:` do not exist at run time: generated code must not rely on
    them, and a GradOperation named through them cannot run either. Without ``expressions`` only
    statements are walked, which is exact for code without `:=` (the one binding an expression
    can hold) and costs a fraction of a walk through every node.
    """
    names: set[str] = set()
    imports: list[Union[ast.Import, ast.ImportFrom]] = []
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, names)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
            _bind(node.target, names)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _bind(node.optional_vars, names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            names.update(node.names)
        if expressions:
            stack.extend(child_nodes(node))
        else:
            for block in _BLOCKS:
                stack.extend(getattr(node, block, ()))
    return names, imports


def parameter_names(arguments: ast.arguments) -> set[str]:
    names = {arg.arg for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    for star in (arguments.vararg, arguments.kwarg):
        if star is not None:
            names.add(star.arg)
    return names


@dataclass
class NameResolver:
    """Maps expressions to qualified names using the module's imports and scopes."""

    imports: dict[str, ImportBinding] = field(default_factory=dict)
    rebound: set[str] = field(default_factory=set)
    # The module's lines, when given: a scope whose text never names ``x`` other than as `x.attr`
    # cannot bind ``x``, which a look at its lines tells without walking its tree.
    lines: Optional[list[str]] = None
    _local_cache: dict[int, set[str]] = field(default_factory=dict)
    _unbound_cache: dict[tuple[int, str], bool] = field(default_factory=dict)

    @classmethod
    def for_module(cls, tree: ast.Module, text: Optional[str] = None) -> NameResolver:
        resolver = cls(lines=None if text is None else source_lines(text))
        names, statements = bound_in(tree.body, expressions=text is None or ":=" in text)
        import_locals: dict[str, list[ImportBinding]] = {}
        for statement in statements:
            for binding in import_bindings(statement):
                import_locals.setdefault(binding.local, []).append(binding)
        for name, bindings in import_locals.items():
            qualified = {binding.qualified for binding in bindings}
            if len(qualified) == 1 and name not in names:
                resolver.imports[name] = bindings[0]
            else:
                resolver.rebound.add(name)
        return resolver

    def locals_of(self, scope: Scope) -> set[str]:
        cached = self._local_cache.get(id(scope))
        if cached is not None:
            return cached
        names = parameter_names(scope.args)
        if isinstance(scope, FUNCTION_TYPES):
            bound, statements = bound_in(scope.body, expressions=self._may_hold_walrus(scope))
            names |= bound
            for statement in statements:
                names |= {binding.local for binding in import_bindings(statement)}
        self._local_cache[id(scope)] = names
        return names

    def _may_hold_walrus(self, scope: Scope) -> bool:
        if self.lines is None:
            return True
        return ":=" in "".join(self.lines[scope.lineno - 1 : scope.end_lineno or scope.lineno])

    def is_free(self, name: str, scopes: Iterable[Scope] = ()) -> bool:
        """True if ``name`` at this point refers to the module-level import binding."""
        return name in self.imports and not any(
            not self._surely_unbound(scope, name) and name in self.locals_of(scope) for scope in scopes
        )

    def _surely_unbound(self, scope: Scope, name: str) -> bool:
        """``scope``'s text mentions ``name`` only as the start of `name.attr` and imports nothing
        (`import name.sub` binds ``name``): no statement in it can bind the name."""
        if self.lines is None:
            return False
        key = (id(scope), name)
        known = self._unbound_cache.get(key)
        if known is None:
            start = min([scope.lineno, *(item.lineno for item in getattr(scope, "decorator_list", ()))])
            text = "".join(self.lines[start - 1 : scope.end_lineno or scope.lineno])
            # `(?<![\w.])name\b(?!\s*\.)|\bimport\b`, each part found from its literal start.
            mention = re.compile(rf"{re.escape(name)}\b(?!\s*\.)")
            known = not found_after(mention, text, ".") and not found_after(_IMPORT_WORD, text)
            self._unbound_cache[key] = known
        return known

    def qualified_name(self, node: ast.AST, scopes: Iterable[Scope] = ()) -> Optional[str]:
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


# `import mindspore as ms` is the spelling MindSpore's own docs use.
ALIAS_CANDIDATES = ("ms", "mindspore")


@dataclass(frozen=True)
class ModuleReference:
    """How generated code spells a MindSpore module, and the import to add if any."""

    expression: str
    new_import: Optional[str] = None  # local name of an `import mindspore [as x]` to add


def module_reference(
    resolver: NameResolver,
    module_names: Container[str],
    qualified: str,
    scopes: Iterable[Scope],
    pending_import: Optional[str] = None,
) -> Optional[ModuleReference]:
    """Spell ``qualified`` (mindspore or mindspore.ops) at a point inside ``scopes``.

    Reuses an existing alias when one is visible there; otherwise picks a name for a new
    `import mindspore` that nothing in the file uses, so no local name is ever shadowed.
    """
    scopes = tuple(scopes)
    if qualified != "mindspore":
        alias = resolver.alias_for(qualified, scopes)
        if alias is not None:
            return ModuleReference(alias)
        base = module_reference(resolver, module_names, "mindspore", scopes, pending_import)
        if base is None:
            return None
        suffix = qualified[len("mindspore") :]
        return ModuleReference(base.expression + suffix, base.new_import)
    alias = resolver.alias_for("mindspore", scopes)
    if alias is not None:
        return ModuleReference(alias)
    if pending_import is not None:
        if not any(pending_import in resolver.locals_of(scope) for scope in scopes):
            return ModuleReference(pending_import, pending_import)
        return None
    for candidate in ALIAS_CANDIDATES:
        if candidate not in module_names and candidate not in resolver.rebound:
            return ModuleReference(candidate, candidate)
    return None


def bindings_in(scope: Union[Scope, ast.Module], name: str) -> list[ast.AST]:
    """Statements of ``scope`` (not of nested functions or classes) that bind ``name``; a nested
    def or class of that name counts, its body does not."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(scope.body)  # type: ignore[arg-type]
    while stack:
        node = stack.pop()
        if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
            if node.name == name:
                found.append(node)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if _binds(node, name):
            found.append(node)
        stack.extend(child_nodes(node))
    return found


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    return isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names


def own_returns(function: ast.AST) -> list[ast.Return]:
    """The `return` statements of ``function`` itself, not of the defs, classes and lambdas in it."""
    found: list[ast.Return] = []
    stack = list(child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
        stack.extend(child_nodes(node))
    return found


def free_name(base: str, taken: Union[set[str], NamesOf], separator: str = "") -> str:
    """``base``, or ``base`` + separator + 2, 3, ... : the first not in ``taken``, which it joins."""
    name, counter = base, 1
    while name in taken:
        counter += 1
        name = f"{base}{separator}{counter}"
    taken.add(name)
    return name
