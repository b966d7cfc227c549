"""Finding GradOperation sites and modelling how each one is created and applied.

Pure: a parsed module in, a list of ``GradOpSite`` out. Deciding what to do with a site is the
planner's job (``ms_migrate.rules.ms101.plan``); this module only describes what the code does.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from ms_migrate.analysis.names import NameResolver, Scope, variable_names
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.rules.ms101.gate import (
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




Block = Union[cst.Module, cst.IndentedBlock]


@dataclass(frozen=True)
class Statement:
    """A simple statement line and the block that holds it."""

    line: cst.SimpleStatementLine
    block: Block
    index: int

    @property
    def small(self) -> cst.BaseSmallStatement:
        return self.line.body[0]


@dataclass
class Application:
    """One use of a grad op: ``op(net[, weights])(args...)``."""

    inner: cst.Call  # op(net, weights)
    outer: cst.Call  # (...)(args)
    function: Optional[cst.FunctionDef]
    statement: Optional[Statement]  # the line holding the outer call
    binder: Optional[Statement] = None  # `g = op(net, weights)` when applied through a variable
    line: int = 0


@dataclass
class GradOpSite:
    """A GradOperation creation and everything the file shows about its uses."""

    creation: Optional[cst.Call]  # None for an op a MindSpore base class creates (``inherited_from``)
    line: int
    placement: str  # "attribute", "module", "local", "inline" or "other"
    name: Optional[str]
    statement: Optional[Statement]
    class_def: Optional[cst.ClassDef]
    function: Optional[cst.FunctionDef]
    flags: Optional[Flags]
    flag_problem: Optional[str] = None
    applications: list[Application] = field(default_factory=list)
    escapes: list[int] = field(default_factory=list)  # lines where the op is used as a value
    inherited_use: bool = False  # a subclass applies the op too
    inherited_from: Optional[str] = None  # the MindSpore base class whose __init__ creates it


@dataclass
class ModuleAnalysis:
    module: cst.Module
    resolver: NameResolver
    sites: list[GradOpSite]
    inherited: list[InheritedUse]
    parents: dict[cst.CSTNode, cst.CSTNode]
    wrapper: MetadataWrapper
    set_grad_calls: list[cst.Call]  # `x.set_grad()` / `x.set_grad(True)`: x records its forward
    _positions: Optional[Mapping[cst.CSTNode, CodeRange]] = None
    project: Optional[ProjectIndex] = None  # the run's other files, for base classes defined there

    def family_base(self, class_def: cst.ClassDef) -> Optional[str]:
        """The TrainOneStepCell-family base of ``class_def``: a direct base, or one reached through
        user classes of the run that leave the network and the grad ops alone."""
        names = base_names(class_def)
        direct = next((name for name in names if name in TRAIN_ONE_STEP_FAMILY), None)
        if direct is not None or self.project is None:
            return direct
        return self.project.inherited_base(class_def.name.value, base_class_ops(), UNTOUCHED)

    def line_of(self, node: cst.CSTNode) -> int:
        # Positions cost a full code generation pass; most validations never need one.
        if self._positions is None:
            self._positions = self.wrapper.resolve(PositionProvider)
        return self._positions[node].start.line

    def scopes_of(self, node: cst.CSTNode) -> list[Scope]:
        scopes: list[Scope] = []
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.Lambda)):
                scopes.append(current)
            current = self.parents.get(current)
        return scopes

    def enclosing(self, node: cst.CSTNode, kind: type) -> Optional[cst.CSTNode]:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, kind):
            current = self.parents.get(current)
        return current


def same_code(left: cst.CSTNode, right: cst.CSTNode) -> bool:
    """Structural equality of two expressions or argument lists, ignoring layout and comments."""
    module = cst.Module(body=[])
    try:
        return ast.dump(ast.parse(_expr_code(module, left).strip(), mode="eval")) == ast.dump(
            ast.parse(_expr_code(module, right).strip(), mode="eval")
        )
    except SyntaxError:
        return False


def _expr_code(module: cst.Module, node: cst.CSTNode) -> str:
    return "(" + module.code_for_node(node) + ")"


def same_arguments(left: Sequence[cst.Arg], right: Sequence[cst.Arg]) -> bool:
    if len(left) != len(right):
        return False
    module = cst.Module(body=[])

    def render(args: Sequence[cst.Arg]) -> str:
        parts = []
        for arg in args:
            prefix = arg.star + (f"{arg.keyword.value}=" if arg.keyword else "")
            parts.append(prefix + module.code_for_node(arg.value))
        return "f(" + ", ".join(parts) + ")"

    try:
        return ast.dump(ast.parse(render(left), mode="eval")) == ast.dump(
            ast.parse(render(right), mode="eval")
        )
    except SyntaxError:
        return False


def _literal_bool(node: cst.BaseExpression) -> Optional[bool]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.Integer) and node.value in ("0", "1"):
        return node.value == "1"
    return None


def parse_flags(call: cst.Call) -> tuple[Optional[Flags], Optional[str]]:
    """The flags of a GradOperation(...) call, or why they cannot be known statically."""
    values: dict[str, bool] = {}
    legacy_name = False
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in call.args):
        return None, "flags passed through *args or **kwargs"
    if positional and isinstance(positional[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        legacy_name = True
        positional = positional[1:]
    if len(positional) > len(FLAG_NAMES):
        return None, "more positional arguments than GradOperation takes"
    for name, arg in zip(FLAG_NAMES, positional):
        value = _literal_bool(arg.value)
        if value is None:
            return None, f"{name} is not a literal"
        values[name] = value
    for arg in call.args:
        if arg.keyword is None:
            continue
        keyword = arg.keyword.value
        if keyword not in FLAG_NAMES or keyword in values:
            return None, f"unexpected keyword {keyword!r}"
        value = _literal_bool(arg.value)
        if value is None:
            return None, f"{keyword} is not a literal"
        values[keyword] = value
    return Flags(legacy_name=legacy_name, **values), None


def _enables_grad(call: cst.Call) -> bool:
    """`x.set_grad()`, `x.set_grad(True)` or `x.set_grad(requires_grad=True)`."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "set_grad":
        return False
    if not call.args:
        return True
    return len(call.args) == 1 and _literal_bool(call.args[0].value) is True and (
        call.args[0].keyword is None or call.args[0].keyword.value == "requires_grad"
    )


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.self_attributes: list[cst.Attribute] = []
        self.names: list[cst.Name] = []
        self.set_grad_calls: list[cst.Call] = []
        self.class_defs: list[cst.ClassDef] = []
        self._attributes_by_owner: Optional[dict[tuple[int, str], list]] = None
        self._subclasses: Optional[dict[str, list[cst.ClassDef]]] = None
        self._names_by_value: Optional[dict[str, list[cst.Name]]] = None

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        if _enables_grad(node):
            self.set_grad_calls.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.self_attributes.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_defs.append(node)

    # Indexes built once: scanning every name once per site made a file with thousands of sites
    # quadratic (3,572 sites in 50,000 lines took 336 s).
    def owned_attributes(
        self, analysis: ModuleAnalysis, class_def: cst.ClassDef, name: str
    ) -> list[tuple[Optional[cst.CSTNode], cst.Attribute]]:
        """`self.<name>` in ``class_def`` and in the classes that name it as a base."""
        if self._attributes_by_owner is None:
            self._attributes_by_owner = {}
            self._subclasses = {}
            for attribute in self.self_attributes:
                owner = analysis.enclosing(attribute, cst.ClassDef)
                key = (id(owner), attribute.attr.value)
                self._attributes_by_owner.setdefault(key, []).append((owner, attribute))
            for node in self.class_defs:
                for base_name in base_names(node):
                    self._subclasses.setdefault(base_name, []).append(node)
        assert self._subclasses is not None
        found = list(self._attributes_by_owner.get((id(class_def), name), []))
        for subclass in self._subclasses.get(class_def.name.value, []):
            if subclass is not class_def:
                found += self._attributes_by_owner.get((id(subclass), name), [])
        return found

    def names_valued(self, value: str) -> list[cst.Name]:
        if self._names_by_value is None:
            self._names_by_value = {}
            for node in self.names:
                self._names_by_value.setdefault(node.value, []).append(node)
        return self._names_by_value.get(value, [])


def analyse(wrapper: MetadataWrapper, project: Optional[ProjectIndex] = None) -> ModuleAnalysis:
    module = wrapper.module
    parents = wrapper.resolve(ParentNodeProvider)
    resolver = NameResolver.for_module(module)
    collector = _Collector()
    module.visit(collector)
    analysis = ModuleAnalysis(module, resolver, [], [], parents, wrapper, collector.set_grad_calls)
    analysis.project = project

    for call in collector.calls:
        if resolver.qualified_name(call.func, analysis.scopes_of(call)) in GRAD_OPERATION:
            analysis.sites.append(_describe_creation(analysis, call))

    for site in analysis.sites:
        _collect_uses(analysis, site, collector)
    _find_inherited_uses(analysis, collector)
    return analysis


def _as_statement(analysis: ModuleAnalysis, line: object) -> Optional[Statement]:
    """``line`` with its block and position, if it is a one-statement line in a block."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    block = analysis.parents.get(line)
    if not isinstance(block, (cst.Module, cst.IndentedBlock)):
        return None
    index = next(i for i, statement in enumerate(block.body) if statement is line)
    return Statement(line, block, index)


def _statement_of(analysis: ModuleAnalysis, node: cst.CSTNode) -> Optional[Statement]:
    """The simple statement line that directly holds ``node`` as its only small statement."""
    small = analysis.parents.get(node)
    return _as_statement(analysis, analysis.parents.get(small) if small is not None else None)


_SCOPE_BOUNDARIES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef)


def _enclosing_statement(analysis: ModuleAnalysis, node: cst.CSTNode) -> Optional[Statement]:
    """The one-statement line that evaluates ``node`` directly (not inside a lambda or a
    comprehension, which would run it a different number of times)."""
    current = analysis.parents.get(node)
    while current is not None and not isinstance(current, cst.SimpleStatementLine):
        if isinstance(current, (*_SCOPE_BOUNDARIES, cst.BaseCompoundStatement)):
            return None
        current = analysis.parents.get(current)
    return _as_statement(analysis, current)


def _describe_creation(analysis: ModuleAnalysis, call: cst.Call) -> GradOpSite:
    flags, problem = parse_flags(call)
    function = analysis.enclosing(call, cst.FunctionDef)
    class_def = analysis.enclosing(call, cst.ClassDef)
    line = analysis.line_of(call)
    site = GradOpSite(call, line, "other", None, None, class_def, function, flags, problem)
    parent = analysis.parents.get(call)
    if isinstance(parent, cst.Call) and parent.func is call:
        site.placement = "inline"
        return site
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return site
    target = parent.targets[0].target
    site.statement = _statement_of(analysis, call)
    if site.statement is None:
        return site
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
        and function is not None
        and function.name.value == "__init__"
        and class_def is not None
    ):
        site.placement, site.name = "attribute", target.attr.value
    elif isinstance(target, cst.Name) and function is None and class_def is None:
        site.placement, site.name = "module", target.value
    elif isinstance(target, cst.Name) and function is not None:
        site.placement, site.name = "local", target.value
    return site


def _collect_uses(analysis: ModuleAnalysis, site: GradOpSite, collector: _Collector) -> None:
    if site.placement == "inline":
        _add_use(analysis, site, site.creation)
        return
    if site.placement == "attribute":
        assert site.class_def is not None
        target = site.statement.small.targets[0].target if site.statement is not None else None  # type: ignore[attr-defined]
        for owner, attribute in collector.owned_attributes(analysis, site.class_def, site.name or ""):
            if attribute is target:
                continue
            if owner is site.class_def:
                _add_use(analysis, site, attribute)
            else:  # a subclass applies the op too
                site.inherited_use = True
                site.escapes.append(analysis.line_of(attribute))
        return
    if site.placement in ("module", "local"):
        target = site.statement.small.targets[0].target  # type: ignore[union-attr]
        for name in collector.names_valued(site.name or ""):
            if name is target or not _is_load(analysis, name):
                continue
            scopes = analysis.scopes_of(name)
            if site.placement == "module":
                if any(site.name in analysis.resolver.locals_of(scope) for scope in scopes):
                    continue
            elif site.function not in scopes:
                continue
            _add_use(analysis, site, name)
        return
    site.escapes.append(site.line)


def _is_load(analysis: ModuleAnalysis, name: cst.Name) -> bool:
    parent = analysis.parents.get(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.ImportAlias, cst.AsName)):
        return False
    return not isinstance(parent, cst.AssignTarget)


def base_names(class_def: cst.ClassDef) -> list[str]:
    """The last name of each base: `TrainOneStepCell` for `nn.TrainOneStepCell`."""
    names = []
    for base in class_def.bases:
        value = base.value
        if isinstance(value, cst.Attribute):
            names.append(value.attr.value)
        elif isinstance(value, cst.Name):
            names.append(value.value)
    return names


def _add_use(analysis: ModuleAnalysis, site: GradOpSite, reference: cst.BaseExpression) -> None:
    """Record ``reference`` (the op) as an application if it is called twice, else an escape."""
    inner = analysis.parents.get(reference)
    if not isinstance(inner, cst.Call) or inner.func is not reference:
        site.escapes.append(analysis.line_of(reference))
        return
    function = analysis.enclosing(inner, cst.FunctionDef)
    outer = analysis.parents.get(inner)
    if isinstance(outer, cst.Call) and outer.func is inner:
        site.applications.append(
            Application(
                inner,
                outer,
                function,
                _enclosing_statement(analysis, outer),
                line=analysis.line_of(inner),
            )
        )
        return
    # `g = op(net, weights)`, then `g(args)` in the same function.
    binder = _statement_of(analysis, inner)
    if (
        binder is not None
        and isinstance(binder.small, cst.Assign)
        and len(binder.small.targets) == 1
        and isinstance(binder.small.targets[0].target, cst.Name)
        and function is not None
    ):
        bound = binder.small.targets[0].target.value
        uses = [
            node
            for node in _names_in(function)
            if node.value == bound and node is not binder.small.targets[0].target
        ]
        if len(uses) == 1:
            call = analysis.parents.get(uses[0])
            if isinstance(call, cst.Call) and call.func is uses[0]:
                application = Application(
                    inner,
                    call,
                    function,
                    _enclosing_statement(analysis, call),
                    binder=binder,
                    line=analysis.line_of(inner),
                )
                site.applications.append(application)
                return
    site.escapes.append(analysis.line_of(reference))


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    collector = _Collector()
    node.visit(collector)
    return collector.names


def _find_inherited_uses(analysis: ModuleAnalysis, collector: _Collector) -> None:
    created = {(id(site.class_def), site.name) for site in analysis.sites if site.placement == "attribute"}
    inherited_sites: dict[tuple[int, str], GradOpSite] = {}
    assigned: set[tuple[int, str]] = set()
    for attribute in collector.self_attributes:
        parent = analysis.parents.get(attribute)
        if isinstance(parent, cst.AssignTarget):
            owner = analysis.enclosing(attribute, cst.ClassDef)
            assigned.add((id(owner), attribute.attr.value))
    for class_def in collector.class_defs:  # a method of that name: self.x is the method
        for item in class_def.body.body:
            if isinstance(item, cst.FunctionDef):
                assigned.add((id(class_def), item.name.value))
    for attribute in collector.self_attributes:
        inner = analysis.parents.get(attribute)
        outer = analysis.parents.get(inner) if inner is not None else None
        if not (
            isinstance(inner, cst.Call)
            and inner.func is attribute
            and isinstance(outer, cst.Call)
            and outer.func is inner
        ):
            continue
        owner = analysis.enclosing(attribute, cst.ClassDef)
        if owner is None:
            continue
        key = (id(owner), attribute.attr.value)
        if key in created or key in assigned:
            continue
        base = analysis.family_base(owner)
        if base is None:
            continue
        use = InheritedUse(analysis.line_of(attribute), owner.name.value, base, attribute.attr.value)
        if use.flags is None:
            analysis.inherited.append(use)
        elif key not in inherited_sites:
            # The base class created it with known flags: a site like any other, minus the creation.
            site = GradOpSite(None, use.line, "attribute", use.attribute, None, owner, None, use.flags)
            site.inherited_from = base
            inherited_sites[key] = site
    for site in inherited_sites.values():
        _collect_uses(analysis, site, collector)
        analysis.sites.append(site)


# Bases whose __init__ calls `self.network.set_grad()` (MindSpore 2.x nn/wrap/cell_wrapper.py).
def implicit_set_grad(analysis: ModuleAnalysis, function: Optional[cst.FunctionDef]) -> Optional[str]:
    """The base class that calls `self.network.set_grad()` for the class holding ``function``."""
    class_def = analysis.enclosing(function, cst.ClassDef) if function is not None else None
    if not isinstance(class_def, cst.ClassDef):
        return None
    base = analysis.family_base(class_def)
    return base if base in set_grad_bases() else None


def _assigned_in_class(class_def: cst.ClassDef, attribute: cst.Attribute) -> list[cst.BaseExpression]:
    """The values assigned to ``self.<attr>`` in the methods of ``class_def``."""
    values: list[cst.BaseExpression] = []
    for method in class_def.body.body:
        if isinstance(method, cst.FunctionDef):
            values += _assigned_from(method, attribute)
    return values


def _assigned_from(function: cst.FunctionDef, attribute: cst.Attribute) -> list[cst.BaseExpression]:
    """The values assigned to ``self.<attr>`` in ``function``."""
    values: list[cst.BaseExpression] = []

    class _Assignments(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if any(same_code(target.target, attribute) for target in node.targets):
                values.append(node.value)

    function.visit(_Assignments())
    return values


def set_grad_on(
    analysis: ModuleAnalysis, net: cst.BaseExpression, function: Optional[cst.FunctionDef]
) -> bool:
    """True when the code visibly calls ``set_grad()`` on the very network that is differentiated.

    In PYNATIVE mode only such a network records its forward pass, so "forward, then grad" runs
    the forward once; otherwise the grad call runs it again (BatchNorm statistics update twice,
    Dropout draws a second mask). A ``set_grad()`` on another Cell (a sub-cell, the train step
    itself) says nothing about this one.
    """
    class_def = analysis.enclosing(function, cst.ClassDef) if function is not None else None
    is_self_attribute = (
        isinstance(net, cst.Attribute) and isinstance(net.value, cst.Name) and net.value.value == "self"
    )
    if is_self_attribute:
        if class_def is None:
            return False
        assert isinstance(net, cst.Attribute)
        sources = _assigned_in_class(class_def, net)
        for call in analysis.set_grad_calls:
            if analysis.enclosing(call, cst.ClassDef) is not class_def:
                continue
            receiver = call.func.value  # type: ignore[attr-defined]
            if same_code(receiver, net) or (
                isinstance(receiver, cst.Name)
                and sources
                and all(isinstance(value, cst.Name) and value.value == receiver.value for value in sources)
            ):
                return True
        return (
            net.attr.value == "network"
            and analysis.family_base(class_def) in set_grad_bases()
            and all(isinstance(value, cst.Name) for value in sources)
        )
    if isinstance(net, cst.Name):
        for call in analysis.set_grad_calls:
            receiver = call.func.value  # type: ignore[attr-defined]
            owner = analysis.enclosing(call, cst.FunctionDef)
            if same_code(receiver, net) and (owner is None or owner is function):
                return True
    return False


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """`a` for `a`, `a.b.c`; None for anything else (a call builds a new Cell)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _sources(class_def: Optional[cst.ClassDef], node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What ``self.x`` is assigned from in the class's methods; ``node`` itself otherwise."""
    if (
        class_def is None
        or not isinstance(node, cst.Attribute)
        or not (isinstance(node.value, cst.Name) and node.value.value == "self")
    ):
        return [node]
    return _assigned_in_class(class_def, node) or [node]


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def other_set_grad(
    analysis: ModuleAnalysis, net: cst.BaseExpression, function: Optional[cst.FunctionDef]
) -> Optional[cst.BaseExpression]:
    """A ``set_grad()`` receiver near the grad site that may be a sub-cell of the network.

    Measured on MindSpore 2.10 PYNATIVE: with `network.backbone.set_grad()` (a sub-cell), the
    legacy GradOperation and mindspore.grad compute different gradients, so no form is exact.
    A sibling that merely shares a sub-cell (Wide&Deep's two IthOutputCell wrappers) changes
    nothing, also measured. A receiver may be a sub-cell when it is reached through the network
    (`self.network.backbone`, `model.net.G` with `self.model = model`) or is one of the things the
    network was built from (`self.net = net; self.network = WithLoss(net)`).
    """
    class_def = analysis.enclosing(function, cst.ClassDef) if function is not None else None
    net_sources = _sources(class_def, net)
    net_code = code_of(net)
    built_from: set[str] = set()
    for source in net_sources:
        built_from |= variable_names(source) - {"self"}
    for call in analysis.set_grad_calls:
        receiver = call.func.value  # type: ignore[attr-defined]
        if same_code(receiver, net):
            continue
        if class_def is not None and analysis.enclosing(call, cst.ClassDef) is not class_def:
            continue
        if class_def is None and analysis.enclosing(call, cst.FunctionDef) not in (None, function):
            continue
        for source in _sources(class_def, receiver):
            code = code_of(source)
            if any(code == code_of(item) for item in net_sources):
                continue  # the network itself, under its __init__ name
            if code.startswith(net_code + ".") or _root_name(source) in built_from:
                return receiver
    return None
