"""Finding GradOperation sites and modelling how each one is created and applied, on ``ast``.

Pure: a parsed module in, a list of ``GradOpSite`` out. Deciding what to do with a site is the
planner's job (``ms_migrate.rules.ms101.plan``); this module only describes what the code does.
Nothing here imports libcst: a file is parsed with libcst only once a plan says it will change.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

from ms_migrate.analysis.names import (
    FUNCTION_TYPES,
    NameResolver,
    Scope,
    enclosing_scopes,
    variable_names,
)
from ms_migrate.analysis.project import ProjectIndex, last_name
from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.context import FileContext
from ms_migrate.rules.ms101.bases import (
    FLAG_NAMES,
    TRAIN_ONE_STEP_FAMILY,
    UNTOUCHED,
    Flags,
    InheritedUse,
    base_class_ops,
    set_grad_bases,
)

GRAD_OPERATION = frozenset(
    {
        "mindspore.ops.GradOperation",
        "mindspore.ops.composite.GradOperation",
        "mindspore.ops.composite.base.GradOperation",
    }
)

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# Python's own line breaks: str.splitlines() also breaks at form feeds and other separators.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLOCK_FIELDS = ("body", "orelse", "finalbody")
_COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    *FUNCTION_TYPES,
    ast.ClassDef,
    *((ast.Match,) if hasattr(ast, "Match") else ()),
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


@dataclass(frozen=True)
class Statement:
    """A simple statement alone on its line(s), and the block (statement list) that holds it."""

    node: ast.stmt
    block: list[ast.stmt]
    index: int


@dataclass(frozen=True)
class Argument:
    """One argument of a call, in source order: ``*x`` has star "*", ``**x`` has star "**"."""

    value: ast.expr
    keyword: Optional[str] = None
    star: str = ""


def arguments(call: ast.Call) -> list[Argument]:
    """The arguments of ``call`` as written, positional and keyword in their source order."""
    found: list[tuple[tuple[int, int], Argument]] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            found.append(((arg.lineno, arg.col_offset), Argument(arg.value, star="*")))
        else:
            found.append(((arg.lineno, arg.col_offset), Argument(arg)))
    for keyword in call.keywords:
        star = "**" if keyword.arg is None else ""
        found.append(((keyword.lineno, keyword.col_offset), Argument(keyword.value, keyword.arg, star)))
    return [argument for _, argument in sorted(found, key=lambda item: item[0])]


@dataclass
class Application:
    """One use of a grad op: ``op(net[, weights])(args...)``."""

    inner: ast.Call  # op(net, weights)
    outer: ast.Call  # (...)(args)
    function: Optional[Function]
    statement: Optional[Statement]  # the line holding the outer call
    binder: Optional[Statement] = None  # `g = op(net, weights)` when applied through a variable
    line: int = 0


@dataclass
class GradOpSite:
    """A GradOperation creation and everything the file shows about its uses."""

    creation: Optional[ast.Call]  # None for an op a MindSpore base class creates (``inherited_from``)
    line: int
    placement: str  # "attribute", "module", "local", "inline" or "other"
    name: Optional[str]
    statement: Optional[Statement]
    class_def: Optional[ast.ClassDef]
    function: Optional[Function]
    flags: Optional[Flags]
    flag_problem: Optional[str] = None
    applications: list[Application] = field(default_factory=list)
    escapes: list[int] = field(default_factory=list)  # lines where the op is used as a value
    rebound: list[int] = field(default_factory=list)  # lines where its name is bound to another value
    inherited_use: bool = False  # a subclass applies the op too
    subclass_uses: list[str] = field(default_factory=list)  # `path:Class` in other files that do
    inherited_from: Optional[str] = None  # the MindSpore base class whose __init__ creates it


@dataclass
class ModuleAnalysis:
    tree: ast.Module
    lines: list[str]
    resolver: NameResolver
    parents: dict[ast.AST, ast.AST]
    sites: list[GradOpSite] = field(default_factory=list)
    inherited: list[InheritedUse] = field(default_factory=list)
    set_grad_calls: list[ast.Call] = field(default_factory=list)  # `x.set_grad()`: x records its forward
    project: Optional[ProjectIndex] = None  # the run's other files, for base classes defined there
    # class -> attribute -> values assigned to self.<attribute> in its methods, built on demand
    _assignments: dict[int, dict[str, list[ast.expr]]] = field(default_factory=dict)
    # id of the class around each set_grad() call (of None outside classes) -> the calls, in order
    _set_grad_by_class: Optional[dict[int, list[ast.Call]]] = None

    def set_grad_calls_in(self, class_def: Optional[ast.ClassDef]) -> list[ast.Call]:
        """The `set_grad()` calls inside ``class_def`` (None: outside every class), in file order:
        grouped once, since each site asks about its own class (one pass over every call per site
        made a file of 1,600 train steps quadratic)."""
        if self._set_grad_by_class is None:
            self._set_grad_by_class = {}
            for call in self.set_grad_calls:
                self._set_grad_by_class.setdefault(id(self.enclosing_class(call)), []).append(call)
        return self._set_grad_by_class.get(id(class_def), [])

    def family_base(self, class_def: ast.ClassDef) -> Optional[str]:
        """The TrainOneStepCell-family base of ``class_def``: a direct base, or one reached through
        user classes of the run that leave the network and the grad ops alone."""
        names = base_names(class_def)
        direct = next(
            (name for name in names if name in TRAIN_ONE_STEP_FAMILY and not self.user_class(name)), None
        )
        if direct is not None or self.project is None:
            return direct
        return self.project.inherited_base(class_def.name, base_class_ops(), UNTOUCHED)

    def user_class(self, name: str) -> bool:
        """Whether ``name`` means a class of this file or of the run (CTSDG defines its own
        `TrainOneStepCell`), not MindSpore's."""
        if self.project is not None:
            return self.project.is_user_class(name)
        return any(isinstance(node, ast.ClassDef) and node.name == name for node in self.tree.body)

    def scopes_of(self, node: ast.AST) -> list[Scope]:
        return enclosing_scopes(self.parents, node)

    def enclosing_function(self, node: Optional[ast.AST]) -> Optional[Function]:
        current = self.parents.get(node) if node is not None else None
        while current is not None and not isinstance(current, FUNCTION_TYPES):
            current = self.parents.get(current)
        return current

    def enclosing_class(self, node: Optional[ast.AST]) -> Optional[ast.ClassDef]:
        current = self.parents.get(node) if node is not None else None
        while current is not None and not isinstance(current, ast.ClassDef):
            current = self.parents.get(current)
        return current

    def assigned(self, class_def: ast.ClassDef, attribute: str) -> list[ast.expr]:
        """The values assigned to ``self.<attribute>`` in the methods of ``class_def``."""
        found = self._assignments.get(id(class_def))
        if found is None:
            found = self._assignments[id(class_def)] = {}
            for method in class_def.body:
                if not isinstance(method, FUNCTION_TYPES):
                    continue
                for node in walk(method):
                    if not isinstance(node, ast.Assign):
                        continue
                    names = {target.attr for target in node.targets if _is_self_attribute(target)}
                    for name in names:
                        found.setdefault(name, []).append(node.value)
        return found.get(attribute, [])

    def statement(self, node: ast.AST) -> Optional[Statement]:
        """``node`` as a simple statement alone on its lines, in a block; else None.

        A line holding several statements (`a = 1; b = 2`) or a one-line block (`if x: a = 1`)
        cannot have one statement replaced or removed on its own.
        """
        if not isinstance(node, ast.stmt) or isinstance(node, _COMPOUND):
            return None
        parent = self.parents.get(node)
        for name in _BLOCK_FIELDS:
            block = getattr(parent, name, None)
            if not isinstance(block, list):
                continue
            for index, item in enumerate(block):
                if item is node:
                    return Statement(node, block, index) if self.alone(block, index) else None
        return None

    def alone(self, block: Sequence[ast.stmt], index: int) -> bool:
        node = block[index]
        if index > 0 and block[index - 1].end_lineno == node.lineno:
            return False
        if index + 1 < len(block) and block[index + 1].lineno == node.end_lineno:
            return False
        line = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
        return len(line) - len(line.lstrip(" \t\f")) == node.col_offset


def same_code(left: ast.AST, right: ast.AST) -> bool:
    """Structural equality of two expressions, ignoring layout, comments and load/store context."""
    return ast.unparse(left) == ast.unparse(right)


def code_of(node: ast.AST) -> str:
    return ast.unparse(node)


def same_arguments(left: Sequence[Argument], right: Sequence[Argument]) -> bool:
    return len(left) == len(right) and all(
        a.star == b.star and a.keyword == b.keyword and same_code(a.value, b.value)
        for a, b in zip(left, right)
    )


def literal_bool(node: ast.AST) -> Optional[bool]:
    """True/False for a literal `True`, `False`, `1` or `0`; None otherwise."""
    if isinstance(node, ast.Constant) and (node.value is True or node.value is False):
        return node.value
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value in (0, 1):
        return node.value == 1
    return None


def parse_flags(call: ast.Call) -> tuple[Optional[Flags], Optional[str]]:
    """The flags of a GradOperation(...) call, or why they cannot be known statically."""
    values: dict[str, bool] = {}
    legacy_name = False
    given = arguments(call)
    if any(arg.star for arg in given):
        return None, "flags passed through *args or **kwargs"
    positional = [arg for arg in given if arg.keyword is None]
    first = positional[0].value if positional else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        legacy_name = True
        positional = positional[1:]
    if len(positional) > len(FLAG_NAMES):
        return None, "more positional arguments than GradOperation takes"
    for name, arg in zip(FLAG_NAMES, positional):
        value = literal_bool(arg.value)
        if value is None:
            return None, f"{name} is not a literal"
        values[name] = value
    for arg in given:
        if arg.keyword is None:
            continue
        if arg.keyword not in FLAG_NAMES or arg.keyword in values:
            return None, f"unexpected keyword {arg.keyword!r}"
        value = literal_bool(arg.value)
        if value is None:
            return None, f"{arg.keyword} is not a literal"
        values[arg.keyword] = value
    return Flags(legacy_name=legacy_name, **values), None


def _enables_grad(call: ast.Call) -> bool:
    """`x.set_grad()`, `x.set_grad(True)` or `x.set_grad(requires_grad=True)`."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "set_grad":
        return False
    given = arguments(call)
    if not given:
        return True
    return (
        len(given) == 1
        and not given[0].star
        and literal_bool(given[0].value) is True
        and given[0].keyword in (None, "requires_grad")
    )


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_self_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and _is_self(node.value)


class _Index:
    """One walk of the tree: the nodes the analysis looks up, each list in source order."""

    def __init__(self, tree: ast.Module, walked: Optional[FileContext] = None) -> None:
        """``walked``: the file's context, whose ``nodes`` and ``parents`` this walk reads where
        another rule built them, and keeps for the rules after it where none did (the same
        order and the same map: one walk of the file for all of them)."""
        self.parents: dict[ast.AST, ast.AST] = {}
        self.calls: list[ast.Call] = []
        self.self_attributes: list[ast.Attribute] = []
        self.set_grad_calls: list[ast.Call] = []
        self.class_defs: list[ast.ClassDef] = []
        self.names: dict[str, list[ast.Name]] = {}
        known = walked.walked() if walked is not None else None
        if known is not None:
            nodes, self.parents = known
        else:
            nodes = self._walk(tree)
            if walked is not None:
                walked.keep_walk(nodes, self.parents)
        for node in nodes:
            if isinstance(node, ast.Call):
                self.calls.append(node)
                if _enables_grad(node):
                    self.set_grad_calls.append(node)
            elif isinstance(node, ast.Attribute) and _is_self(node.value):
                self.self_attributes.append(node)
            elif isinstance(node, ast.Name):
                self.names.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.class_defs.append(node)
        for found in (self.calls, self.self_attributes, self.set_grad_calls, self.class_defs):
            found.sort(key=_position)
        self._attributes_by_owner: Optional[dict[tuple[int, str], list]] = None
        self._subclasses: dict[str, list[ast.ClassDef]] = {}

    def _walk(self, tree: ast.Module) -> list[ast.AST]:
        """Every node in ``walk``'s order (breadth first), each node's parent noted on the way."""
        nodes: list[ast.AST] = []
        queue = deque([tree])
        while queue:
            node = queue.popleft()
            nodes.append(node)
            children = child_nodes(node)
            for child in children:
                self.parents[child] = node
            queue.extend(children)
        return nodes

    # Indexes built once: scanning every name once per site made a file with thousands of sites
    # quadratic (3,572 sites in 50,000 lines took 336 s).
    def owned_attributes(
        self, analysis: ModuleAnalysis, class_def: ast.ClassDef, name: str
    ) -> list[tuple[Optional[ast.ClassDef], ast.Attribute]]:
        """`self.<name>` in ``class_def`` and in the classes that name it as a base."""
        if self._attributes_by_owner is None:
            self._attributes_by_owner = {}
            for attribute in self.self_attributes:
                owner = analysis.enclosing_class(attribute)
                key = (id(owner), attribute.attr)
                self._attributes_by_owner.setdefault(key, []).append((owner, attribute))
            for node in self.class_defs:
                for base_name in base_names(node):
                    self._subclasses.setdefault(base_name, []).append(node)
        found = list(self._attributes_by_owner.get((id(class_def), name), []))
        for subclass in self._subclasses.get(class_def.name, []):
            if subclass is not class_def:
                found += self._attributes_by_owner.get((id(subclass), name), [])
        return found


def _position(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def analyse(
    tree: ast.Module, text: str, project: Optional[ProjectIndex] = None, ctx: Optional[FileContext] = None
) -> ModuleAnalysis:
    """What MS101 knows of the module; ``ctx``, the file's context where at hand, shares its walk
    and its name resolver with the other rules."""
    index = _Index(tree, ctx)
    resolver = ctx.resolver if ctx is not None else NameResolver.for_module(tree, text)
    analysis = ModuleAnalysis(tree, _LINE_BREAK.split(text), resolver, index.parents)
    analysis.set_grad_calls = index.set_grad_calls
    analysis.project = project
    for call in index.calls:
        if resolver.qualified_name(call.func, analysis.scopes_of(call)) in GRAD_OPERATION:
            analysis.sites.append(_describe_creation(analysis, call))
    for site in analysis.sites:
        _collect_uses(analysis, site, index)
    _find_inherited_uses(analysis, index)
    return analysis


_SCOPE_BOUNDARIES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _enclosing_statement(analysis: ModuleAnalysis, node: ast.AST) -> Optional[Statement]:
    """The one-statement line that evaluates ``node`` directly (not inside a lambda or a
    comprehension, which would run it a different number of times)."""
    current = analysis.parents.get(node)
    while current is not None and not isinstance(current, ast.stmt):
        if isinstance(current, _SCOPE_BOUNDARIES):
            return None
        current = analysis.parents.get(current)
    return analysis.statement(current) if current is not None else None


def _describe_creation(analysis: ModuleAnalysis, call: ast.Call) -> GradOpSite:
    flags, problem = parse_flags(call)
    function = analysis.enclosing_function(call)
    class_def = analysis.enclosing_class(call)
    site = GradOpSite(call, call.lineno, "other", None, None, class_def, function, flags, problem)
    parent = analysis.parents.get(call)
    if isinstance(parent, ast.Call) and parent.func is call:
        site.placement = "inline"
        return site
    if not isinstance(parent, ast.Assign) or len(parent.targets) != 1 or parent.value is not call:
        return site
    target = parent.targets[0]
    site.statement = analysis.statement(parent)
    if site.statement is None:
        return site
    if (
        isinstance(target, ast.Attribute)
        and _is_self(target.value)
        and function is not None
        and function.name == "__init__"
        and class_def is not None
    ):
        site.placement, site.name = "attribute", target.attr
    elif isinstance(target, ast.Name) and function is None and class_def is None:
        site.placement, site.name = "module", target.id
    elif isinstance(target, ast.Name) and function is not None:
        site.placement, site.name = "local", target.id
    return site


def assigned_target(statement: Statement) -> Optional[ast.expr]:
    """The one target of `target = value`, else None."""
    node = statement.node
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0]
    return None


def _collect_uses(analysis: ModuleAnalysis, site: GradOpSite, index: _Index) -> None:
    if site.placement == "inline":
        assert site.creation is not None
        _add_use(analysis, site, site.creation)
        return
    target = assigned_target(site.statement) if site.statement is not None else None
    if site.placement == "attribute":
        assert site.class_def is not None
        for owner, attribute in index.owned_attributes(analysis, site.class_def, site.name or ""):
            if attribute is target:
                continue
            if owner is site.class_def:
                _add_use(analysis, site, attribute)
            else:  # a subclass applies the op too
                site.inherited_use = True
                site.escapes.append(attribute.lineno)
        if analysis.project is not None:
            site.subclass_uses = analysis.project.subclass_mentions(site.class_def.name, site.name or "")
            site.inherited_use = site.inherited_use or bool(site.subclass_uses)
        return
    if site.placement in ("module", "local"):
        for name in sorted(index.names.get(site.name or "", []), key=_position):
            if name is target:
                continue
            scopes = analysis.scopes_of(name)
            if site.placement == "module":
                if any(site.name in analysis.resolver.locals_of(scope) for scope in scopes):
                    continue
            elif site.function not in scopes:
                continue
            if not _is_load(analysis, name):
                # `g = GradOperation(get_all=True)` ... `g = GradOperation(sens_param=True)`: which
                # op a later `g(net)(...)` applies depends on the order the lines run in.
                site.rebound.append(name.lineno)
                continue
            _add_use(analysis, site, name)
        return
    site.escapes.append(site.line)


def _is_load(analysis: ModuleAnalysis, name: ast.Name) -> bool:
    """Every mention but the plain target of `name = value`: `name += 1`, `a, name = ...`, `for
    name in ...` and `del name` all count as uses (the op would not survive them unchanged)."""
    if isinstance(name.ctx, ast.Load):
        return True
    parent = analysis.parents.get(name)
    return not (isinstance(parent, ast.Assign) and any(target is name for target in parent.targets))


def base_names(class_def: ast.ClassDef) -> list[str]:
    """The last name of each base: `TrainOneStepCell` for `nn.TrainOneStepCell`."""
    return [name for name in (last_name(base) for base in class_def.bases) if name]


def _mentions(function: ast.AST, name: str) -> list[ast.AST]:
    """Every node of ``function`` that spells ``name``: variables, attributes, parameters,
    keywords, defs and imports."""
    found: list[ast.AST] = []
    for node in walk(function):
        if (
            (isinstance(node, ast.Name) and node.id == name)
            or (isinstance(node, ast.Attribute) and node.attr == name)
            or (isinstance(node, ast.arg) and node.arg == name)
            or (isinstance(node, ast.keyword) and node.arg == name)
            or (isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)) and node.name == name)
            or (isinstance(node, ast.alias) and name in (node.asname, node.name))
        ):
            found.append(node)
    return found


def _add_use(analysis: ModuleAnalysis, site: GradOpSite, reference: ast.expr) -> None:
    """Record ``reference`` (the op) as an application if it is called twice, else an escape."""
    inner = analysis.parents.get(reference)
    if not isinstance(inner, ast.Call) or inner.func is not reference:
        site.escapes.append(reference.lineno)
        return
    function = analysis.enclosing_function(inner)
    outer = analysis.parents.get(inner)
    if isinstance(outer, ast.Call) and outer.func is inner:
        statement = _enclosing_statement(analysis, outer)
        site.applications.append(Application(inner, outer, function, statement, line=inner.lineno))
        return
    # `g = op(net, weights)`, then `g(args)` in the same function.
    parent = analysis.parents.get(inner)
    binder = analysis.statement(parent) if isinstance(parent, ast.Assign) and parent.value is inner else None
    bound = assigned_target(binder) if binder is not None else None
    if isinstance(bound, ast.Name) and function is not None:
        uses = [node for node in _mentions(function, bound.id) if node is not bound]
        if len(uses) == 1:
            call = analysis.parents.get(uses[0])
            if isinstance(call, ast.Call) and call.func is uses[0]:
                statement = _enclosing_statement(analysis, call)
                application = Application(inner, call, function, statement, binder=binder, line=inner.lineno)
                site.applications.append(application)
                return
    site.escapes.append(reference.lineno)


def _find_inherited_uses(analysis: ModuleAnalysis, index: _Index) -> None:
    created = {(id(site.class_def), site.name) for site in analysis.sites if site.placement == "attribute"}
    inherited_sites: dict[tuple[int, str], GradOpSite] = {}
    reported: set[tuple[int, str]] = set()
    assigned: set[tuple[int, str]] = set()
    for attribute in index.self_attributes:
        parent = analysis.parents.get(attribute)
        if isinstance(parent, ast.Assign) and any(target is attribute for target in parent.targets):
            owner = analysis.enclosing_class(attribute)
            assigned.add((id(owner), attribute.attr))
    for class_def in index.class_defs:  # a method of that name: self.x is the method
        for item in class_def.body:
            if isinstance(item, FUNCTION_TYPES):
                assigned.add((id(class_def), item.name))
    for attribute in index.self_attributes:
        inner = analysis.parents.get(attribute)
        outer = analysis.parents.get(inner) if inner is not None else None
        if not (
            isinstance(inner, ast.Call)
            and inner.func is attribute
            and isinstance(outer, ast.Call)
            and outer.func is inner
        ):
            continue
        owner = analysis.enclosing_class(attribute)
        if owner is None:
            continue
        key = (id(owner), attribute.attr)
        if key in created or key in assigned:
            continue
        base = analysis.family_base(owner)
        if base is None:
            creator = (
                analysis.project.inherited_creator(owner.name, attribute.attr) if analysis.project else None
            )
            if creator is not None and key not in reported:
                reported.add(key)
                name, where = creator
                shown = "" if where is None else analysis.project.display(where)  # type: ignore[union-attr]
                analysis.inherited.append(
                    InheritedUse(attribute.lineno, owner.name, name, attribute.attr, shown)
                )
            continue
        use = InheritedUse(attribute.lineno, owner.name, base, attribute.attr)
        if use.flags is None:
            analysis.inherited.append(use)
        elif key not in inherited_sites:
            # The base class created it with known flags: a site like any other, minus the creation.
            site = GradOpSite(None, use.line, "attribute", use.attribute, None, owner, None, use.flags)
            site.inherited_from = base
            inherited_sites[key] = site
    for site in inherited_sites.values():
        _collect_uses(analysis, site, index)
        analysis.sites.append(site)


def implicit_set_grad(analysis: ModuleAnalysis, function: Optional[Function]) -> Optional[str]:
    """The base class that calls `self.network.set_grad()` for the class holding ``function``
    (bases whose __init__ does it: MindSpore 2.x nn/wrap/cell_wrapper.py)."""
    class_def = analysis.enclosing_class(function)
    if class_def is None:
        return None
    base = analysis.family_base(class_def)
    return base if base in set_grad_bases() else None


def set_grad_on(analysis: ModuleAnalysis, net: ast.expr, function: Optional[Function]) -> bool:
    """True when the code visibly calls ``set_grad()`` on the very network that is differentiated.

    In PYNATIVE mode only such a network records its forward pass, so "forward, then grad" runs
    the forward once; otherwise the grad call runs it again (BatchNorm statistics update twice,
    Dropout draws a second mask). A ``set_grad()`` on another Cell (a sub-cell, the train step
    itself) says nothing about this one.
    """
    class_def = analysis.enclosing_class(function)
    if isinstance(net, ast.Attribute) and _is_self(net.value):
        if class_def is None:
            return False
        sources = analysis.assigned(class_def, net.attr)
        for call in analysis.set_grad_calls_in(class_def):
            receiver = call.func.value  # type: ignore[attr-defined]
            if same_code(receiver, net) or (
                isinstance(receiver, ast.Name)
                and sources
                and all(isinstance(value, ast.Name) and value.id == receiver.id for value in sources)
            ):
                return True
        return (
            net.attr == "network"
            and analysis.family_base(class_def) in set_grad_bases()
            and all(isinstance(value, ast.Name) for value in sources)
        )
    if isinstance(net, ast.Name):
        for call in analysis.set_grad_calls:
            receiver = call.func.value  # type: ignore[attr-defined]
            # `same_code` for a name, without unparsing both for every pair of calls and sites
            if not (isinstance(receiver, ast.Name) and receiver.id == net.id):
                continue
            owner = analysis.enclosing_function(call)
            if owner is None or owner is function:
                return True
    return False


def _root_name(node: ast.expr) -> Optional[str]:
    """`a` for `a`, `a.b.c`; None for anything else (a call builds a new Cell)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _sources(analysis: ModuleAnalysis, class_def: Optional[ast.ClassDef], node: ast.expr) -> list[ast.expr]:
    """What ``self.x`` is assigned from in the class's methods; ``node`` itself otherwise."""
    if class_def is None or not (isinstance(node, ast.Attribute) and _is_self(node.value)):
        return [node]
    return analysis.assigned(class_def, node.attr) or [node]


def other_set_grad(
    analysis: ModuleAnalysis, net: ast.expr, function: Optional[Function]
) -> Optional[ast.expr]:
    """A ``set_grad()`` receiver near the grad site that may be a sub-cell of the network.

    Measured on MindSpore 2.10 PYNATIVE: with `network.backbone.set_grad()` (a sub-cell), the
    legacy GradOperation and mindspore.grad compute different gradients, so no form is exact.
    A sibling that merely shares a sub-cell (Wide&Deep's two IthOutputCell wrappers) changes
    nothing, also measured. A receiver may be a sub-cell when it is reached through the network
    (`self.network.backbone`, `model.net.G` with `self.model = model`) or is one of the things the
    network was built from (`self.net = net; self.network = WithLoss(net)`).
    """
    class_def = analysis.enclosing_class(function)
    net_sources = _sources(analysis, class_def, net)
    net_code = code_of(net)
    built_from: set[str] = set()
    for source in net_sources:
        built_from |= variable_names(source) - {"self"}
    for call in analysis.set_grad_calls_in(class_def):
        receiver = call.func.value  # type: ignore[attr-defined]
        if class_def is None and analysis.enclosing_function(call) not in (None, function):
            continue
        if same_code(receiver, net):
            continue
        for source in _sources(analysis, class_def, receiver):
            code = code_of(source)
            if any(code == code_of(item) for item in net_sources):
                continue  # the network itself, under its __init__ name
            if code.startswith(net_code + ".") or _root_name(source) in built_from:
                return receiver
    return None
