"""What the other files of a run say about network classes: does a network's construct take *args?

GRAPH mode cannot differentiate a Cell whose ``construct(self, *inputs)`` takes varargs with
``mindspore.grad``/``value_and_grad`` (GradOperation can), so MS101 must know the class of the
network a train step differentiates. The class is rarely visible where the grad is taken: the
train step gets it as an ``__init__`` argument, and the class and the call that builds the train
step usually live in other files. This module answers from every file of the run.

Pure apart from reading the files it was given. Cheap: one regex pass finds which files define
or instantiate a class by name, and only those are parsed (with ``ast``), once each, on demand.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Optional, Union

from ms_migrate.analysis.text_scan import at_line_starts, at_word_starts
from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.diagnostics import line_of, line_starts
from ms_migrate.files.sources import SourceError, read_guarded

_CALL = re.compile(rb"\b([A-Z]\w*)[ \t]*\(")
_CLASS_BASES = re.compile(rb"class[ \t]+\w+[ \t]*\(([^)]*)\)")  # at a line's start
_CAPITALISED = re.compile(rb"\b([A-Z]\w*)\b")
_DEPTH = 3  # network classes wrapped in loss Cells wrapped in train steps: enough to follow
# MindSpore's train-step bases, whose __init__ starts `(network, optimizer, ...)` and keeps
# `self.network = network` (nn/wrap/cell_wrapper.py, nn/wrap/loss_scale.py, boost/).
MINDSPORE_TRAIN_STEP_INIT = {
    name: ("network", "optimizer", "sens")
    for name in (
        "TrainOneStepCell",
        "TrainOneStepWithLossScaleCell",
        "BoostTrainOneStepCell",
        "BoostTrainOneStepWithLossScaleCell",
    )
}


@dataclass(frozen=True)
class Signature:
    """A construct's parameters after ``self``, as GRAPH mode's grad counts them."""

    positional: int  # positional parameters
    required: int  # of them, those without a default
    varargs: bool  # `*inputs`
    keyword_only: bool  # parameters after `*` or `*inputs`

    @classmethod
    def of(cls, function: ast.FunctionDef) -> Signature:
        arguments = function.args
        positional = len(arguments.posonlyargs) + len(arguments.args) - 1  # self
        return cls(
            positional=max(positional, 0),
            required=max(positional - len(arguments.defaults), 0),
            varargs=arguments.vararg is not None,
            keyword_only=bool(arguments.kwonlyargs),
        )

    def indirect(self, given: Optional[int]) -> Optional[str]:
        """Why GRAPH mode cannot differentiate the network called with ``given`` positional
        arguments directly: "varargs", "defaults" (the call leaves out a defaulted parameter:
        "The parameters number of the function is 3, but the number of provided arguments is
        2"), or "" when it can. None when ``given`` is unknown (a starred argument)."""
        if self.varargs:
            return "varargs"
        if self.keyword_only:
            return "defaults"
        if given is None:  # a call that passes too few or too many fails under GradOperation too
            return "" if self.required == self.positional else None
        return "defaults" if given < self.positional else ""


# MindSpore's own network wrappers that train steps are given, by their construct
# (nn/wrap/cell_wrapper.py): `nn.WithLossCell(backbone, loss_fn)` takes (data, label).
MINDSPORE_NETWORK_CONSTRUCTS = {
    "WithLossCell": Signature(positional=2, required=2, varargs=False, keyword_only=False),
}


@dataclass(frozen=True, eq=False)  # one per class definition: hashed and compared by identity
class ClassFacts:
    name: str
    bases: tuple[str, ...]
    construct: Optional[Signature]  # None: no construct of its own
    init_params: tuple[str, ...]  # positional parameters of __init__ after self
    attributes: dict[str, tuple[str, str]]  # self.x = param / Class(...): ("param"|"class", name)
    assigned: frozenset[str] = frozenset()  # every `self.x` assigned anywhere, and the methods
    # `super().__init__(...)` in __init__: the __init__ parameter each positional argument is
    # ("" for anything else), and the same for keyword arguments; None without such a call.
    # Absent __init__ (``has_init`` False): instantiations call the base's __init__ as they are.
    super_args: Optional[tuple[tuple[str, ...], dict[str, str]]] = None
    has_init: bool = False
    node: Optional[ast.ClassDef] = field(default=None, repr=False, compare=False)

    def mentions(self, attribute: str) -> bool:
        """Whether the class's body mentions `self.<attribute>` (walked only when asked: the
        index reads many classes and asks this of a base's few subclasses)."""
        return self.node is not None and any(
            isinstance(item, ast.Attribute)
            and item.attr == attribute
            and getattr(item.value, "id", None) == "self"
            for item in walk(self.node)
        )

    @property
    def construct_varargs(self) -> Optional[bool]:
        return None if self.construct is None else self.construct.varargs


Call = tuple[list[set[str]], dict[str, set[str]]]  # (positional argument classes, keyword ones)
Calls = dict[str, list[Call]]
Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class FileFacts:
    classes: list[ClassFacts] = field(default_factory=list)
    # `from module import name as local`: local -> (module, level, name)
    imports: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    # Module-level functions, for what a factory returns (`build_net()`, `net, opt = prepare()`).
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict, repr=False)
    tree: Optional[ast.Module] = field(default=None, repr=False)
    text: str = field(default="", repr=False)
    _calls: dict[frozenset[str], Calls] = field(default_factory=dict, repr=False)
    # Built on the first ``calls_of`` and shared by the rest: the file being migrated is asked
    # once per train step it defines, so nothing a question costs may grow with the file.
    _mentions: Optional[dict[str, list[int]]] = field(default=None, repr=False)
    _functions: Optional[_Functions] = field(default=None, repr=False)
    _scope_calls: dict[int, Calls] = field(default_factory=dict, repr=False)
    _classes_named: Optional[dict[str, list[ClassFacts]]] = field(default=None, repr=False)

    def classes_named(self, name: str) -> list[ClassFacts]:
        """The file's classes called ``name``, in file order (a lookup, not a pass over the classes:
        each train step of a file asks for its own)."""
        if self._classes_named is None:
            self._classes_named = defaultdict(list)
            for item in self.classes:
                self._classes_named[item.name].append(item)
        return self._classes_named.get(name, [])

    def calls_of(self, names: Iterable[str]) -> Calls:
        """Class name (of ``names``) -> one entry per call: (positional argument classes, keyword
        argument classes). Built on first need, and only from the functions whose lines mention
        one of ``names``: most files are asked only for their classes and imports, and the rest
        for one class. Each function's calls are gathered once, for every name at once, and the
        file's text is scanned for names once: N questions about one file cost O(N) together."""
        wanted = frozenset(names)
        if wanted not in self._calls:
            found: Calls = defaultdict(list)
            if self.tree is not None:
                if self._mentions is None:
                    self._mentions = _mentions(self.text)
                if self._functions is None:
                    self._functions = _Functions(self.tree)
                lines = sorted({line for name in wanted for line in self._mentions.get(name, ())})
                for index, scope in self._functions.spanning(lines):
                    if index not in self._scope_calls:
                        self._scope_calls[index] = _scope_calls(scope, self._functions.forwarder(index))
                    for name, calls in self._scope_calls[index].items():
                        if name in wanted:
                            found[name] += calls
            self._calls[wanted] = found
        return self._calls[wanted]

    def function_calls_of(self, name: str) -> list[Call]:
        """The calls of the function ``name`` in this file, as ``calls_of`` gives a class's."""
        if self.tree is None:
            return []
        if self._functions is None:
            self._functions = _Functions(self.tree)
        starts = line_starts(self.text)
        pattern = re.compile(rf"\b{re.escape(name)}[ \t]*\(")
        lines = sorted({line_of(starts, match.start()) for match in pattern.finditer(self.text)})
        found: list[Call] = []
        for index, scope in self._functions.spanning(lines):
            found += _scope_calls(scope, self._functions.forwarder(index), only=name).get(name, [])
        return found


# A word that can be a class's name: `calls_of` keeps only calls of capitalised names. The `\b`
# and the greedy `\w*` make each match a whole word, as `\bName\b` would find it.
_CAPITALISED_WORD = re.compile(r"\b[^\W\d_a-z]\w*")


def _mentions(text: str) -> dict[str, list[int]]:
    """Each capitalised word of ``text`` -> the lines (from 1, as ``ast`` counts them: `\\r\\n`,
    `\\r` and `\\n` end one) where it occurs as a word, in order."""
    starts = line_starts(text)
    found: dict[str, list[int]] = {}
    for match in _CAPITALISED_WORD.finditer(text):
        word = match.group()
        if not word[:1].isupper():
            continue
        line = line_of(starts, match.start())
        lines = found.setdefault(word, [])
        if not lines or lines[-1] != line:
            lines.append(line)
    return found


class _Functions:
    """A module's functions, in ``walk_statements`` order, and for each line the innermost one
    whose source (decorators included) spans it: the functions that span a line are that one and
    the functions around it, so finding them costs the nesting depth, not the file."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions: list[Union[ast.FunctionDef, ast.AsyncFunctionDef]] = []
        self.outer: list[int] = []  # the index of the function around each one; -1: none
        self.innermost: list[int] = [-1] * ((getattr(tree, "end_lineno", None) or 0) + 2)
        for node in walk_statements(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if last >= len(self.innermost):
                self.innermost += [-1] * (last + 1 - len(self.innermost))
            index = len(self.functions)
            self.functions.append(node)
            # Breadth first, a function comes after the one around it: its lines are painted over.
            self.outer.append(self.innermost[first])
            self.innermost[first : last + 1] = [index] * (last + 1 - first)

    def forwarder(self, index: int) -> Optional[str]:
        """The name of function ``index`` when it is a module-level one (its callers can be found
        by name), else None."""
        if index < 0 or self.outer[index] != -1:
            return None
        function = self.functions[index]
        return function.name if isinstance(function, ast.FunctionDef) else None

    def spanning(self, lines: Sequence[int]) -> Iterator[tuple[int, Scope]]:
        """The module (index -1), then the functions that span one of ``lines``, in walk order."""
        yield -1, self.tree
        found: set[int] = set()
        for line in lines:
            index = self.innermost[line] if 0 <= line < len(self.innermost) else -1
            while index >= 0 and index not in found:
                found.add(index)
                index = self.outer[index]
        for index in sorted(found):
            yield index, self.functions[index]


# The fields through which a statement holds statements, in ``_fields`` order: a walk along them
# meets every statement (and only statements, handlers and match cases) in ``ast.walk``'s order.
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def walk_statements(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` restricted to statements (with the except handlers and match cases that hold
    some): class and function definitions and imports are statements, and the expressions that
    make up most of a tree hold none."""
    queue = deque([tree])
    while queue:
        node = queue.popleft()
        yield node
        for name in _STATEMENT_FIELDS:
            children = getattr(node, name, None)
            if isinstance(children, list):
                queue.extend(children)


def last_name(node: ast.AST) -> Optional[str]:
    """`Cell` for `nn.Cell` or `Cell`; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _super_init_args(
    init: ast.FunctionDef, params: Sequence[str]
) -> Optional[tuple[tuple[str, ...], dict[str, str]]]:
    """What `super().__init__(...)` (or `super(Cls, self).__init__(...)`) passes on of
    ``init``'s own parameters; None without one such call."""
    found = [
        node
        for node in walk(init)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__init__"
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "super"
    ]
    if len(found) != 1:
        return None
    call = found[0]

    def param(value: ast.expr) -> str:
        return value.id if isinstance(value, ast.Name) and value.id in params else ""

    if any(isinstance(value, ast.Starred) for value in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    return tuple(param(value) for value in call.args), {k.arg: param(k.value) for k in call.keywords if k.arg}


def _class_facts(node: ast.ClassDef) -> ClassFacts:
    bases = tuple(name for name in (last_name(base) for base in node.bases) if name)
    construct: Optional[Signature] = None
    init_params: tuple[str, ...] = ()
    attributes: dict[str, tuple[str, str]] = {}
    super_args = None
    has_init = False
    for item in node.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        if item.name == "construct":
            construct = Signature.of(item)
        elif item.name == "__init__":
            has_init = True
            init_params = tuple(arg.arg for arg in [*item.args.posonlyargs, *item.args.args][1:])
            super_args = _super_init_args(item, init_params)
            for statement in walk_statements(item):
                if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
                    continue
                target = statement.targets[0]
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    continue
                value = statement.value
                if isinstance(value, ast.Name) and value.id in init_params:
                    fact = ("param", value.id)
                elif isinstance(value, ast.Call) and last_name(value.func):
                    fact = ("class", last_name(value.func) or "")
                else:
                    fact = ("unknown", "")
                # Assigned twice, differently: unknown.
                if attributes.get(target.attr, fact) != fact:
                    fact = ("unknown", "")
                attributes[target.attr] = fact
    assigned = frozenset(
        target.attr
        for statement in walk_statements(node)
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        for target in walk(target)
        if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == "self"
    )
    methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return ClassFacts(
        node.name,
        bases,
        construct,
        init_params,
        attributes,
        assigned | methods,
        super_args,
        has_init,
        node,
    )


def _own_nodes(scope: ast.AST) -> Iterable[ast.AST]:
    """Nodes of ``scope`` outside nested functions and classes."""
    stack = list(child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(child_nodes(node))


def file_facts(text: str, tree: Optional[ast.Module] = None) -> FileFacts:
    """Classes and class instantiations in one file's source (or its parsed ``tree``); empty when
    it does not parse."""
    facts = FileFacts()
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return facts
    for node in walk_statements(tree):
        if isinstance(node, ast.ClassDef):
            facts.classes.append(_class_facts(node))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                facts.imports[alias.asname or alias.name] = (node.module or "", node.level, alias.name)
    facts.functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    facts.tree, facts.text = tree, text
    return facts


def returned_classes(function: ast.FunctionDef, element: Optional[int]) -> set[str]:
    """The class names (or factory names) ``function`` can return, each `return` counted; with
    ``element``, those at that position of the tuple it returns. "?" stands for anything else."""
    nodes = list(_own_nodes(function))
    made = _assignments(nodes)
    found: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        value = node.value
        if element is not None:
            if not isinstance(value, ast.Tuple) or element >= len(value.elts):
                return {"?"}
            value = value.elts[element]
        elif isinstance(value, ast.Tuple):
            return {"?"}
        found |= _classes_of(value, made, "")
    return found or {"?"}


# Cell methods that return the Cell itself: `Net(...).set_grad()` is a `Net`.
_RETURNING_SELF = frozenset({"set_grad", "set_train", "to_float", "add_flags", "add_flags_recursive"})


def built_by(node: ast.AST) -> Optional[str]:
    """The class or function a call expression builds its value with: `Net` for `Net(...)`,
    `nn.Net(...)` and `Net(...).set_grad()`; None for anything else."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    while (
        isinstance(func, ast.Attribute) and func.attr in _RETURNING_SELF and isinstance(func.value, ast.Call)
    ):
        func = func.value.func
    return last_name(func)


def _target_key(target: ast.AST) -> Optional[str]:
    """A name, or `self.x`: what an argument can read back in the same scope."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return f"self.{target.attr}"
    return None


@dataclass
class _Assignments:
    """Variable (or `self.x`) -> (the line its assignment ends on, what it was built from) for
    each assignment, in line order: a class or function name, `name#i` for element i of
    `a, b = name(...)`, or "?". ``branches``: the lines of each `if`'s body and else part, so that
    an assignment in one is not taken for the value an argument in the other reads."""

    made: dict[str, list[tuple[int, str]]]
    branches: list[tuple[range, range]]

    def last_before(self, key: str, line: int, caller: str = "") -> Optional[str]:
        """What ``key`` holds at ``line``: the last assignment above it, leaving out those in the
        other part of an `if` and `net = Wrapper(net)` (a class is not its own network). Found
        from the nearest one up, so that a scope that assigns a name N times reads it in N
        steps, not N squared."""
        made = self.made.get(key, [])
        for index in range(bisect.bisect_left(made, (line,)) - 1, -1, -1):
            end, callee = made[index]
            if callee != caller and not self.exclusive(end, line):
                return callee
        return None

    def exclusive(self, one: int, other: int) -> bool:
        return any(
            (one in body and other in orelse) or (one in orelse and other in body)
            for body, orelse in self.branches
        )


def _lines(statements: Sequence[ast.stmt]) -> range:
    if not statements:
        return range(0)
    return range(statements[0].lineno, (statements[-1].end_lineno or statements[-1].lineno) + 1)


def _assignments(nodes: Sequence[ast.AST]) -> _Assignments:
    made: dict[str, list[tuple[int, str]]] = defaultdict(list)
    branches: list[tuple[range, range]] = []
    for node in nodes:
        if isinstance(node, ast.If) and node.orelse:
            branches.append((_lines(node.body), _lines(node.orelse)))
        if not isinstance(node, ast.Assign):
            continue
        callee = built_by(node.value)
        end = node.end_lineno or node.lineno  # `net = Step(\n    net, ...)` reads the old net
        for target in node.targets:
            key = _target_key(target)
            if key is not None:
                made[key].append((end, callee or "?"))
            elif isinstance(target, ast.Tuple):
                for index, item in enumerate(target.elts):
                    if isinstance(item, ast.Name):
                        made[item.id].append((end, f"{callee}#{index}" if callee else "?"))
    for assignments in made.values():
        assignments.sort()
    return _Assignments(made, branches)


def _classes_of(argument: ast.AST, made: _Assignments, caller: str) -> set[str]:
    if isinstance(argument, ast.Call):
        callee = built_by(argument)
        return {callee} if callee else {"?"}
    key = _target_key(argument)
    if key is not None:
        last = made.last_before(key, getattr(argument, "lineno", 0), caller)
        return {last} if last is not None else {"?"}
    return {"?"}


def _scope_calls(scope: Scope, forwarder: Optional[str] = None, only: Optional[str] = None) -> Calls:
    """The calls of every capitalised name (or of ``only``) in ``scope`` outside its nested
    functions and classes: what a call's arguments are depends on the scope alone, not on which
    names were asked for. In module-level function ``forwarder``, an argument that is one of its
    parameters is `forwarder@position@name`: what its own callers pass there."""
    calls: Calls = defaultdict(list)
    nodes = list(_own_nodes(scope))

    def wanted(callee: Optional[str]) -> bool:
        return callee is not None and (callee == only if only is not None else callee[:1].isupper())

    if not any(isinstance(node, ast.Call) and wanted(last_name(node.func)) for node in nodes):
        return calls  # no call of a class here (most functions)
    made = _assignments(nodes)
    parameters: dict[str, int] = {}
    if forwarder is not None and isinstance(scope, ast.FunctionDef):
        positional = [*scope.args.posonlyargs, *scope.args.args]
        parameters = {item.arg: index for index, item in enumerate(positional)}

    def classes_of(argument: ast.AST, caller: str) -> set[str]:
        found = _classes_of(argument, made, caller)
        unbound = isinstance(argument, ast.Name) and argument.id in parameters
        if found == {"?"} and unbound and made.last_before(argument.id, argument.lineno) is None:  # type: ignore[attr-defined]
            return {f"{forwarder}@{parameters[argument.id]}@{argument.id}"}  # type: ignore[attr-defined]
        return found

    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        callee = last_name(node.func)
        if not wanted(callee):
            continue
        assert callee is not None
        positional: list[set[str]] = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):  # later positions are unknown
                positional.append({"?"})
                break
            positional.append(classes_of(argument, callee))
        keywords = {
            keyword.arg: classes_of(keyword.value, callee) for keyword in node.keywords if keyword.arg
        }
        calls[callee].append((positional, keywords))
    return calls


def called_names(data: bytes) -> set[str]:
    """The capitalised names a file's bytes call (``Name(``): where a class's instantiations are."""
    return {name.decode("ascii", "replace") for name in _CALL.findall(data)}


def base_names_in(data: bytes) -> set[str]:
    """The capitalised names a file's bytes derive a class from (``class X(Name)``)."""
    return {
        name.decode("ascii", "replace")
        for header in at_line_starts(_CLASS_BASES, data)
        for name in _CAPITALISED.findall(header.group(1))
    }


def call_names(data: bytes) -> set[str]:
    """The names a file's bytes call or derive a class from, as the index finds its classes'
    instantiations and subclasses: a file that gains such a call or subclass may change what the
    index answers."""
    return called_names(data) | base_names_in(data)


@dataclass
class Consulted:
    """What of the other files of a run went into one file's answers, so that a cache can tell
    whether they still hold once some files changed (``ProjectIndex.tracking``).

    ``files``: the files whose facts were read (absolute paths, as the run named them);
    ``names``: the classes whose instantiations were looked for in every file (a file that now
    calls one may change the answer); ``modules``: whether an import was matched against the
    run's paths (an added or removed file may change it); ``everything``: an answer that came
    from somewhere the record cannot name.
    """

    files: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    modules: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.files or self.names or self.modules or self.everything)


class _RunFiles:
    """The run's Python files, resolved on first need: most runs never ask (a path's resolve()
    costs a system call per component, and every worker holds the whole list)."""

    def __init__(self, paths: tuple[Path, ...]) -> None:
        self._given = paths

    @cached_property
    def given(self) -> dict[Path, Path]:
        """Resolved path -> the path as the run named it."""
        return {path.resolve(): path for path in self._given if path.suffix == ".py"}

    @cached_property
    def paths(self) -> list[Path]:
        return list(self.given)

    @cached_property
    def path_set(self) -> frozenset[Path]:
        return frozenset(self.paths)

    @cached_property
    def order(self) -> dict[Path, int]:
        """Resolved path -> its place in the run."""
        return {path: index for index, path in enumerate(self.paths)}

    @cached_property
    def by_module_name(self) -> dict[str, list[Path]]:
        """`b` -> the run's `.../b.py` and `.../b/__init__.py`, in run order."""
        found: dict[str, list[Path]] = defaultdict(list)
        for path in self.paths:
            found[path.parent.name if path.name == "__init__.py" else path.stem].append(path)
        return found

    @cached_property
    def packages(self) -> list[Path]:
        """The run's `__init__.py` files, where re-exports live."""
        return [path for path in self.paths if path.name == "__init__.py"]

    def named(self, path: Path) -> Optional[str]:
        given = self.given.get(path)
        return os.path.abspath(given) if given is not None else None


Located = tuple[Optional[Path], ClassFacts]  # the defining file (None: the file being migrated)
# What a network argument is built from: a class of the run, or a name the run does not define
# (a library's class, "?" for anything else) with the file that names it.
Source = tuple[Optional[Path], Union[ClassFacts, str]]


def _takes_no_arguments(arguments: ast.arguments, bound: int = 0) -> bool:
    """Whether a call with no arguments fills every parameter (after ``bound`` ones, `self`)."""
    positional = len(arguments.posonlyargs) + len(arguments.args) - bound
    return positional <= len(arguments.defaults) and None not in arguments.kw_defaults


def _common_prefix(left: Path, right: Optional[Path]) -> int:
    if right is None:
        return 0
    count = 0
    for a, b in zip(left.parts, right.parts):
        if a != b:
            break
        count += 1
    return count


class ProjectIndex:
    """Network-class facts over the files of one run, read lazily and cached.

    A class name is resolved as Python would: a class defined in the same file, else the module
    a `from ... import` names, matched against the run's files by path (the nearest match when a
    model zoo holds several `src/model.py`). A name neither defined nor imported is unknown.
    """

    def __init__(self, paths: Sequence[Path] = ()) -> None:
        # Shared by every view (with_local copies references): the run's files are read once.
        self._run = _RunFiles(tuple(paths))
        # file -> the names it calls, and those it derives classes from, read on first need
        self._called: dict[Path, frozenset[str]] = {}
        self._bases: dict[Path, frozenset[str]] = {}
        self._facts: dict[Path, FileFacts] = {}
        self._imported_words: dict[Path, frozenset[str]] = {}
        # from-imported word -> the run's files that from-import it, built on first need
        self._importers: dict[str, list[Path]] = {}
        self._importers_built: list[bool] = [False]
        # The same over the run's package `__init__.py` files only
        self._package_importers: dict[str, list[Path]] = {}
        self._package_importers_built: list[bool] = [False]
        self._modules: dict[tuple[str, int, Optional[Path]], list[Path]] = {}
        # Re-exported names of a class of the file being migrated: (that file, class) -> names.
        self._aliases_of: dict[tuple[Optional[Path], str], set[str]] = {}
        self._local_text = ""
        self._local_path: Optional[Path] = None
        self._local: Optional[FileFacts] = None
        self._local_tree: Optional[ast.Module] = None
        self._consulted = Consulted()

    def tracking(self) -> ProjectIndex:
        """A view that records in ``consulted`` what of the other files of the run its answers
        used (the views ``with_local`` makes from it record there too): a result that used
        nothing may change only when its own file does."""
        view = ProjectIndex.__new__(ProjectIndex)
        view.__dict__.update(self.__dict__)
        view._consulted = Consulted()
        return view

    @property
    def consulted(self) -> Consulted:
        return self._consulted

    def with_local(
        self, text: str, path: Optional[Path] = None, tree: Optional[ast.Module] = None
    ) -> ProjectIndex:
        """A view that also knows ``text``, the file being migrated (read only when asked), and
        its ``tree`` when already parsed."""
        view = ProjectIndex.__new__(ProjectIndex)
        view.__dict__.update(self.__dict__)
        view._local_text, view._local, view._local_tree = text, None, tree
        view._local_path = path.resolve() if path is not None else None
        return view

    @property
    def local_path(self) -> Optional[Path]:
        return self._local_path

    @property
    def local(self) -> FileFacts:
        if self._local is None:
            self._local = file_facts(self._local_text, self._local_tree)
        return self._local

    def _called_in(self, path: Path) -> frozenset[str]:
        """The capitalised names ``path`` calls: read once per process, and only for a file that
        from-imports a class asked about (a regex pass over every file of a model zoo was
        0.64 s of each worker's time, measured over mindspore-ai/models)."""
        if path not in self._called:
            self._called[path] = frozenset(called_names(_bytes_of(path)))
        return self._called[path]

    def _derived_in(self, path: Path) -> frozenset[str]:
        """The capitalised names ``path`` derives a class from (``class X(Name)``)."""
        if path not in self._bases:
            self._bases[path] = frozenset(base_names_in(_bytes_of(path)))
        return self._bases[path]

    def _importing_any(self, names: Iterable[str]) -> list[Path]:
        """The run's files whose from-imports may bind one of ``names``, in run order."""
        found = set().union(*(self._importers_of(name) for name in names))
        return sorted(found, key=self._run.order.__getitem__)

    def _file(self, path: Optional[Path]) -> FileFacts:
        if path is None or path == self._local_path:
            return self.local
        named = self._run.named(path)
        if named is None:
            self._consulted.everything = True
        else:
            self._consulted.files.add(named)
        if path not in self._facts:
            self._facts[path] = file_facts(_text_of(path))
        return self._facts[path]

    def _importers_of(self, name: str) -> list[Path]:
        """The run's files whose from-imports may bind ``name``: each file's words read once per
        process, on the first question, not once per question."""
        return self._importing(name, self._run.paths, self._importers, self._importers_built)

    def _package_importers_of(self, name: str) -> list[Path]:
        """The same of the run's package `__init__.py` files only (a model zoo has hundreds, and
        each train step's class was looked for in all of them)."""
        return self._importing(
            name, self._run.packages, self._package_importers, self._package_importers_built
        )

    def _importing(
        self, name: str, paths: Sequence[Path], index: dict[str, list[Path]], built: list[bool]
    ) -> list[Path]:
        """Of ``paths``, in order, those whose from-imports may bind ``name``, from ``index`` (word
        -> paths), which the first question builds."""
        if not built[0]:
            built[0] = True
            for path in paths:
                for word in self._from_imported(path):
                    index.setdefault(word, []).append(path)
        return index.get(name, [])

    def _from_imported(self, path: Path) -> frozenset[str]:
        if path not in self._imported_words:
            self._imported_words[path] = from_imported_words(_text_of(path))
        return self._imported_words[path]

    def _module_files(self, module: str, level: int, importer: Optional[Path]) -> list[Path]:
        """Files of the run that `from <level dots><module> import ...` in ``importer`` can mean."""
        self._consulted.modules = True
        key = (module, level, importer.parent if importer is not None else None)
        if key not in self._modules:
            self._modules[key] = self._find_module_files(module, level, importer)
        return self._modules[key]

    def _find_module_files(self, module: str, level: int, importer: Optional[Path]) -> list[Path]:
        parts = [part for part in module.split(".") if part]
        if level and importer is not None:
            base = importer.parent
            for _ in range(level - 1):
                base = base.parent
            wanted = [base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")]
            return [path for path in wanted if path in self._run.path_set]
        if not parts:
            return []
        tail = ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py")
        candidates = self._run.by_module_name.get(parts[-1], [])
        found = [path for path in candidates if path.as_posix().endswith(tuple("/" + t for t in tail))]
        if len(found) > 1 and importer is not None:
            best = max(_common_prefix(path, importer) for path in found)
            found = [path for path in found if _common_prefix(path, importer) == best]
        return found

    def resolve(self, name: str, where: Optional[Path], depth: int = 0) -> list[Located]:
        """The classes ``name`` means in the file ``where`` (None: the file being migrated),
        through the re-exports of a package's `__init__.py` (`from src import Step`)."""
        facts = self._file(where)
        own = [(where, item) for item in facts.classes_named(name)]
        if own:
            return own
        if name not in facts.imports or depth > _DEPTH:
            return []
        module, level, original = facts.imports[name]
        importer = where if where is not None else self._local_path
        found: list[Located] = []
        for path in self._module_files(module, level, importer):
            found += self.resolve(original, path, depth + 1)
        return found

    def construct_signatures(self, located: Located, depth: int = 0) -> set[Optional[Signature]]:
        """The construct a class has, its own or inherited: a signature per candidate (None: one
        not known)."""
        where, facts = located
        if facts.construct is not None:
            return {facts.construct}
        if depth > 2 * _DEPTH or not facts.bases:
            return {None}
        found: set[Optional[Signature]] = set()
        for base in facts.bases:
            bases = self.resolve(base, where)
            found |= (
                set().union(*(self.construct_signatures(item, depth + 1) for item in bases))
                if bases
                else {None}
            )
        return found

    def construct_varargs(self, located: Located) -> Optional[bool]:
        """Whether a class's construct (own or inherited) takes *args; None if unknown."""
        return _combine(
            {None if item is None else item.varargs for item in self.construct_signatures(located)}
        )

    def inherited_base(
        self, class_name: str, bases: Iterable[str], untouched: Iterable[str], depth: int = 0
    ) -> Optional[str]:
        """The first of ``bases`` reached from class ``class_name`` (defined in the file being
        migrated) through user classes of the run, each defined once and assigning none of
        ``untouched`` on self (a subclass of a subclass of nn.TrainOneStepCell); None if unsure."""
        owners = self.local.classes_named(class_name)
        if len(owners) != 1:
            return None
        return self._base_through((None, owners[0]), frozenset(bases), frozenset(untouched), 0)

    def _base_through(
        self, located: Located, wanted: frozenset[str], untouched: frozenset[str], depth: int
    ) -> Optional[str]:
        where, facts = located
        if depth > _DEPTH:
            return None
        found: set[Optional[str]] = set()
        for base in facts.bases:
            parents = self.resolve(base, where)
            if base in wanted and not parents:  # a project's own `TrainOneStepCell` is not MindSpore's
                found.add(base)
                continue
            if len(parents) != 1 or parents[0][1].assigned & untouched:
                found.add(None)
                continue
            found.add(self._base_through(parents[0], wanted, untouched, depth + 1))
        candidates = found - {None}
        return candidates.pop() if len(candidates) == 1 and None not in found else None

    def builds_without_arguments(self, located: Located, depth: int = 0) -> bool:
        """Whether ``Class()`` builds the class: its __init__, own or inherited from a class of the
        run, takes nothing without a default, and a class with no __init__ derives from nn.Cell."""
        where, facts = located
        if facts.has_init and facts.node is not None:
            init = next(
                item
                for item in facts.node.body
                if isinstance(item, ast.FunctionDef) and item.name == "__init__"
            )
            return _takes_no_arguments(init.args, bound=1)  # self
        if depth > _DEPTH or len(facts.bases) != 1:
            return False
        parents = self.resolve(facts.bases[0], where)
        if not parents:
            return facts.bases[0] == "Cell"
        return len(parents) == 1 and self.builds_without_arguments(parents[0], depth + 1)

    def display(self, path: Path) -> str:
        """A file of the run as the run named it."""
        return str(self._run.given.get(path, path))

    def is_user_class(self, name: str) -> bool:
        """Whether ``name`` in the file being migrated means a class of the run (its own or
        imported from another file), not a library's."""
        return bool(self.resolve(name, None))

    def inherited_creator(self, class_name: str, attribute: str) -> Optional[tuple[str, Optional[Path]]]:
        """The user base class (and its file; None: this one) whose __init__ builds
        ``self.<attribute> = SomeClass(...)`` that class ``class_name`` of the file being migrated
        inherits, through user classes that do not assign it; None if there is none."""
        owners = self.local.classes_named(class_name)
        if len(owners) != 1:
            return None
        located: Located = (None, owners[0])
        for _ in range(_DEPTH + 1):
            where, facts = located
            kind = facts.attributes.get(attribute, ("", ""))[0]
            if located[1] is not owners[0] and kind == "class":
                return facts.name, where
            if kind or attribute in facts.assigned or len(facts.bases) != 1:
                return None
            parents = self.resolve(facts.bases[0], where)
            if len(parents) != 1:
                return None
            located = parents[0]
        return None

    def subclass_mentions(self, class_name: str, attribute: str) -> list[str]:
        """Classes in other files of the run that derive from class ``class_name`` of the file
        being migrated (directly or through each other) and mention ``self.<attribute>``, as
        `path:Class`. A base's grad op that such a subclass applies must stay."""
        self._consulted.names.add(class_name)
        found: list[str] = []
        queue: list[tuple[Optional[Path], str]] = [(None, class_name)]
        seen: set[tuple[Optional[Path], str]] = set(queue)
        while queue and len(seen) <= 4 * _DEPTH:
            defined_in, name = queue.pop(0)
            for path in self._importers_of(name):
                if path == self._local_path or name not in self._derived_in(path):
                    continue
                facts = self._file(path)
                for item in facts.classes:
                    derives = any(
                        (where or self._local_path) == (defined_in or self._local_path) and base.name == name
                        for base_name in item.bases
                        for where, base in self.resolve(base_name, path)
                    )
                    if not derives or (path, item.name) in seen:
                        continue
                    seen.add((path, item.name))
                    queue.append((path, item.name))
                    if item.mentions(attribute):
                        found.append(f"{self.display(path)}:{item.name}")
        return found

    def _name_signatures(self, name: str, where: Optional[Path], depth: int = 0) -> set[Optional[Signature]]:
        """The construct signatures of what an argument built by ``name`` can be (see
        ``_name_sources``); a MindSpore Cell the run does not define by its known construct."""
        answers: set[Optional[Signature]] = set()
        for defined_in, found in self._name_sources(name, where, depth):
            if isinstance(found, ClassFacts):
                answers |= self.construct_signatures((defined_in, found))
            else:
                answers.add(self._mindspore_construct(found, defined_in))
        return answers

    def _name_sources(self, name: str, where: Optional[Path], depth: int = 0) -> set[Source]:
        """What an argument built by ``name`` can be: a class, a factory function the run defines
        (`build_net()` returning `Net(...)`), or `prepare#0`, the first of what `prepare()`
        returns as a tuple; followed to the classes of the run, or to a name it does not define."""
        if "@" in name:
            return self._parameter_sources(name, where, depth)
        called, _, element = name.partition("#")
        located = self.resolve(called, where) if called != "?" and not element else []
        if located:
            return set(located)
        function = self._resolve_function(called, where) if called != "?" and depth <= _DEPTH else None
        if function is None:
            return {(where, called)}
        defined_in, node = function
        names = returned_classes(node, int(element) if element else None)
        return set().union(*(self._name_sources(item, defined_in, depth + 1) for item in names))

    def _mindspore_construct(self, name: str, where: Optional[Path]) -> Optional[Signature]:
        """The construct of a MindSpore Cell the run does not define (`nn.WithLossCell(net,
        loss)`, or the name from-imported from mindspore); None for any other name."""
        imported = self._file(where).imports.get(name)
        if imported is not None and not imported[0].startswith("mindspore"):
            return None
        return MINDSPORE_NETWORK_CONSTRUCTS.get(name)

    def _parameter_sources(self, name: str, where: Optional[Path], depth: int) -> set[Source]:
        """What the callers of a module-level function pass for one of its parameters
        (`function@position@parameter`): `get_train_one_step(args, net_with_loss, opt)` building
        `TrainClipGrad(net_with_loss, ...)`, with its callers in other files of the run."""
        function, position, parameter = name.split("@")
        if depth > _DEPTH:
            return {(where, "?")}
        # Any file that starts calling the function may change the answer: not a name the cache
        # records, so the answer is taken as depending on everything.
        self._consulted.everything = True
        index = int(position)
        answers: set[Source] = set()
        for called_in, (positional, keywords) in self._function_calls(function, where):
            names = positional[index] if index < len(positional) else keywords.get(parameter, {"?"})
            for item in names:
                answers |= self._name_sources(item, called_in, depth + 1)
        return answers or {(where, "?")}

    def _function_calls(self, function: str, where: Optional[Path]) -> list[tuple[Optional[Path], Call]]:
        """Calls of module-level function ``function`` of the file ``where``, in that file and in
        the files of the run that import it from there."""
        found = [(where, call) for call in self._file(where).function_calls_of(function)]
        defined = self._file(where).functions.get(function)
        for path in self._importers_of(function):
            if path == (where or self._local_path):
                continue
            resolved = self._resolve_function(function, path)
            if resolved is None or resolved[1] is not defined:
                continue
            found += [(path, call) for call in self._file(path).function_calls_of(function)]
        return found

    def _resolve_function(
        self, name: str, where: Optional[Path], depth: int = 0
    ) -> Optional[tuple[Optional[Path], ast.FunctionDef]]:
        """The module-level function ``name`` means in the file ``where``, as ``resolve`` finds
        classes; None unless exactly one."""
        facts = self._file(where)
        if name in facts.functions:
            return where, facts.functions[name]
        if name not in facts.imports or depth > _DEPTH:
            return None
        module, level, original = facts.imports[name]
        importer = where if where is not None else self._local_path
        found = [
            self._resolve_function(original, path, depth + 1)
            for path in self._module_files(module, level, importer)
        ]
        known = [item for item in found if item is not None]
        return known[0] if len(known) == 1 else None

    def definition(
        self, name: str, where: Optional[Path] = None
    ) -> Optional[tuple[Optional[Path], FileFacts, Union[ast.FunctionDef, ast.ClassDef]]]:
        """The module-level function or class ``name`` means in the file ``where`` (None: the
        file being migrated), followed through the imports to a file of the run: that file (None:
        the file being migrated), its facts (its tree and text) and the definition; None unless
        exactly one."""
        found: list[tuple[Optional[Path], Union[ast.FunctionDef, ast.ClassDef]]] = []
        function = self._resolve_function(name, where)
        if function is not None:
            found.append(function)
        for path, item in self.resolve(name, where):
            tree = self._file(path).tree
            if item.node is not None and tree is not None and any(node is item.node for node in tree.body):
                found.append((path, item.node))
        if len(found) != 1:
            return None
        path, node = found[0]
        return (None if path == self._local_path else path), self._file(path), node

    def attribute_signatures(self, class_name: str, attribute: str) -> set[Optional[Signature]]:
        """The construct signatures ``self.<attribute>`` of class ``class_name`` (defined in the
        file being migrated) can have: the class it is built from, or the classes of the argument
        every instantiation passes for the ``__init__`` parameter it is, own or inherited (None
        in the set: a candidate not known)."""
        sources = self.attribute_sources(class_name, attribute)
        if sources is None:
            return {None}
        return set().union(*(self._name_signatures(name, where) for where, name in sources))

    def attribute_classes(self, class_name: str, attribute: str) -> set[Source]:
        """The classes of the run (or names it does not define) ``self.<attribute>`` of class
        ``class_name`` can be built from; empty when not known."""
        sources = self.attribute_sources(class_name, attribute)
        if sources is None:
            return set()
        return set().union(*(self._name_sources(name, where) for where, name in sources))

    def network_builder(self, class_name: str, attribute: str) -> Optional[tuple[Optional[Path], str, str]]:
        """What builds the network ``self.<attribute>`` of class ``class_name`` when called with
        no arguments: the one class of the run it is built from, when ``Class()`` builds it, else
        the function of the run every instantiation gets it from, when that takes no arguments
        (`build_net()`); or MindSpore's `nn.WithLossCell(backbone, loss)` where the backbone is
        built so and the loss is a MindSpore class. Its file (None: the file being migrated), its
        name, and the loss's name ("" when not wrapped); None if none of these."""
        classes = self.attribute_classes(class_name, attribute)
        if len(classes) == 1:
            where, found = next(iter(classes))
            if isinstance(found, ClassFacts) and self.builds_without_arguments((where, found)):
                return where, found.name, ""
            if found == "WithLossCell" and self._mindspore_construct(found, where) is not None:
                return self._with_loss_builder(where)
        sources = self.attribute_sources(class_name, attribute) or set()
        if len(sources) != 1:
            return None
        where, name = next(iter(sources))
        built = self._bare_builder(name, where)
        return (*built, "") if built is not None else None

    def _bare_builder(self, name: str, where: Optional[Path]) -> Optional[tuple[Optional[Path], str]]:
        """The class or module-level function ``name`` means in ``where``, when calling it with
        no arguments builds it."""
        if name == "?" or "#" in name or "@" in name:
            return None
        located = self.resolve(name, where)
        if located:
            if len(located) == 1 and self.builds_without_arguments(located[0]):
                return located[0][0], located[0][1].name
            return None
        function = self._resolve_function(name, where)
        if function is None:
            return None
        defined_in, node = function
        return (defined_in, node.name) if _takes_no_arguments(node.args) else None

    def _with_loss_builder(self, where: Optional[Path]) -> Optional[tuple[Optional[Path], str, str]]:
        """`nn.WithLossCell(Backbone(), nn.SomeLoss(...))` in ``where``: every such call there
        wraps one backbone that builds bare in one MindSpore loss (built with its defaults)."""
        pairs = set()
        for positional, keywords in self._file(where).calls_of(["WithLossCell"]).get("WithLossCell", []):
            backbone = positional[0] if positional else keywords.get("backbone")
            loss = positional[1] if len(positional) > 1 else keywords.get("loss_fn")
            if backbone is None or loss is None:
                return None
            pairs.add((frozenset(backbone), frozenset(loss)))
        if len(pairs) != 1:
            return None
        ((backbone, loss),) = pairs
        if len(backbone) != 1 or len(loss) != 1:
            return None
        (backbone_name,), (loss_name,) = backbone, loss
        imported = self._file(where).imports.get(loss_name)
        library = imported is None or imported[0].startswith("mindspore")
        if loss_name == "?" or self.resolve(loss_name, where) or not library:
            return None
        built = self._bare_builder(backbone_name, where)
        return (*built, loss_name) if built is not None else None

    def built_nowhere(self, class_name: str) -> bool:
        """Whether no file of the run calls class ``class_name`` of the file being migrated, or
        derives a class from it (a copy no script uses)."""
        owners = self.local.classes_named(class_name)
        if len(owners) != 1 or self._instantiations(owners[0]):
            return False
        if any(class_name in item.bases for item in self.local.classes):
            return False
        return not any(class_name in self._derived_in(path) for path in self._run.paths)

    def attribute_sources(self, class_name: str, attribute: str) -> Optional[set[tuple[Optional[Path], str]]]:
        """The names (with the file that uses each) ``self.<attribute>`` of class ``class_name``
        is built by: the class it is made from, or what each instantiation passes for the
        ``__init__`` parameter it is ("?": not known); None when nothing is known."""
        owners = self.local.classes_named(class_name)
        if len(owners) > 1:
            # Several classes of the name (a test suite's `GradNet`, one in each test): what any
            # of them may hold, so that a network one of them is given decides the form for all
            # (a def around the network is exact whatever it is); unknown if any is.
            found = [self._owner_sources(owner, attribute) for owner in owners]
            return None if any(item is None for item in found) else set().union(*found)  # type: ignore[arg-type]
        return self._owner_sources(owners[0], attribute) if owners else None

    def _owner_sources(self, owner: ClassFacts, attribute: str) -> Optional[set[tuple[Optional[Path], str]]]:
        source = self._attribute_source((None, owner), attribute, 0)
        if source is None:
            return None
        kind, value, where, params = source
        if kind == "class":
            return {(where, value)}
        position = params.index(value)
        answers: set[tuple[Optional[Path], str]] = set()
        for called_in, (positional, keywords) in self._instantiations(owner):
            names = positional[position] if position < len(positional) else keywords.get(value, {"?"})
            answers |= {(called_in, name) for name in names}
        return answers or None

    def _attribute_source(
        self, located: Located, attribute: str, depth: int
    ) -> Optional[tuple[str, str, Optional[Path], tuple[str, ...]]]:
        """Where ``self.<attribute>`` of a class comes from: ("class", its class's name, the file
        that names it, ()) or ("param", the __init__ parameter whose argument it is, None, the
        parameters an instantiation binds); None if not known. A subclass without an __init__
        passes its arguments to the base's; one with an __init__ through `super().__init__`."""
        where, facts = located
        if attribute in facts.attributes:
            kind, value = facts.attributes[attribute]
            if kind == "class":
                return ("class", value, where, ())
            return ("param", value, None, facts.init_params) if kind == "param" else None
        if depth > _DEPTH or len(facts.bases) != 1:
            return None
        parents = self.resolve(facts.bases[0], where)
        if len(parents) > 1:
            return None
        if parents:
            found = self._attribute_source(parents[0], attribute, depth + 1)
        elif facts.bases[0] in MINDSPORE_TRAIN_STEP_INIT and attribute == "network":
            found = ("param", "network", None, MINDSPORE_TRAIN_STEP_INIT[facts.bases[0]])
        else:
            return None
        if found is None or found[0] == "class" or not facts.has_init:
            return found
        if facts.super_args is None:
            return None
        _, base_param, _, base_params = found
        positional, keywords = facts.super_args
        index = base_params.index(base_param)
        mine = positional[index] if index < len(positional) else keywords.get(base_param, "")
        return ("param", mine, None, facts.init_params) if mine else None

    def _instantiations(
        self, owner: ClassFacts
    ) -> list[tuple[Optional[Path], tuple[list[set[str]], dict[str, set[str]]]]]:
        """Calls of the class defined in the file being migrated, wherever the run holds them,
        under its own name or an alias a package's `__init__.py` re-exports it as."""
        found: list[tuple[Optional[Path], tuple[list[set[str]], dict[str, set[str]]]]] = [
            (None, call) for call in self.local.calls_of([owner.name]).get(owner.name, [])
        ]
        names = {owner.name, *self._aliases(owner.name)}
        self._consulted.names.update(names)
        # Without a from-import of one of the names, a file calling it can only mean its own class.
        importing = self._importing_any(names)
        paths = dict.fromkeys(
            path for name in sorted(names) for path in importing if name in self._called_in(path)
        )
        for path in paths:
            if path == self._local_path:
                continue
            facts = self._file(path)
            # The names that can mean this class there, resolved before the file's calls are
            # gathered: in a model zoo most files calling a `TrainOneStepCell` mean their own.
            local_names = [local for local, item in facts.imports.items() if item[2] in names]
            if owner.name not in facts.imports:
                local_names.append(owner.name)
            meaning_this = [local for local in local_names if self._means_local(local, path, owner.name)]
            calls = facts.calls_of(meaning_this)
            for local_name in meaning_this:
                found += [(path, call) for call in calls.get(local_name, [])]
        return found

    def _means_local(self, name: str, where: Path, class_name: str) -> bool:
        return any(
            place == self._local_path and item.name == class_name for place, item in self.resolve(name, where)
        )

    def _aliases(self, class_name: str) -> set[str]:
        """Other names the run's package `__init__.py` files re-export the local class as
        (`from .step import TrainOneStepWithLossScaleCellGlobalNormClip as TrainClipGrad`)."""
        key = (self._local_path, class_name)
        if key in self._aliases_of:
            return self._aliases_of[key]
        found: set[str] = set()
        self._aliases_of[key] = found
        for path in self._package_importers_of(class_name):
            if path == self._local_path:
                continue
            for local, (_, _, original) in self._file(path).imports.items():
                if (
                    original == class_name
                    and local != class_name
                    and self._means_local(local, path, class_name)
                ):
                    found.add(local)
        return found


def _bytes_of(path: Path) -> bytes:
    """Another file of the run's bytes (empty if it cannot be read, as ``_text_of``)."""
    try:
        return read_guarded(path, follow_links=True)[0]
    except SourceError:
        return b""


def _text_of(path: Path) -> str:
    """Another file of the run as text, for what the index learns from it ("" if it cannot be
    read: a FIFO, a device behind a link, a file too large are reported as the run's own)."""
    return _bytes_of(path).decode("utf-8", "replace")


_FROM_IMPORT = re.compile(r"from[ \t]+[\w.]+[ \t]+import\b[ \t]*(\()?")  # after no word character
_WORD = re.compile(r"\w+")


def from_imported_words(text: str) -> frozenset[str]:
    """Every word that follows `from ... import` in ``text``, to the end of its line or, when
    parenthesised, to the closing parenthesis (comments included; backslash continuations joined).

    A superset of the names the file's from-imports bind: without ``name`` among them,
    ``resolve`` can find ``name`` only among the file's own classes. A look at the text, once per
    file, so that a zoo of files calling their own `TrainStep(` is not parsed."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    words: set[str] = set()
    for match in at_word_starts(_FROM_IMPORT, text):
        start = match.end()
        end = text.find("\n", start)
        line_end = len(text) if end < 0 else end
        words.update(_WORD.findall(text, start, line_end))
        if match.group(1):
            words.update(_WORD.findall(text, start, _closing_parenthesis(text, start)))
    return frozenset(words)


def _closing_parenthesis(text: str, start: int) -> int:
    """Where the first `)` after ``start`` that is not inside a `#` comment is (or the end)."""
    position = start
    while True:
        close, comment = text.find(")", position), text.find("#", position)
        if close < 0:
            return len(text)
        if comment < 0 or close < comment:
            return close
        newline = text.find("\n", comment)
        if newline < 0:
            return len(text)
        position = newline


def _combine(answers: set[Optional[bool]]) -> Optional[bool]:
    """Any varargs candidate makes it varargs; all known fixed makes it fixed; else unknown."""
    if True in answers:
        return True
    if answers == {False}:
        return False
    return None
