"""Scan the installed MindSpore for deprecations and write them as a catalogue.

MindSpore marks a deprecation in five places; each is a *channel*, in this order of trust:

- ``decorator``: ``@deprecated(version, substitute)`` from ``mindspore.common._decorator``. Every
  decorated function shares the decorator's ``wrapper`` code object, so a public object is found by
  that identity and its closure gives the version and the substitute.
- ``module-redirect``: ``mark_deprecated(__name__, new_module, version)`` calls at module level.
- ``warning``: ``logger.warning``/``warnings.warn`` calls whose message says "deprecated" or "will be
  removed", found with ``ast``. The enclosing ``def`` is matched to the code object of a public object
  (by file and first line), so the attribution is by identity, never by guessing from a name.
- ``context-table``: the table of deprecated ``set_context`` keys in ``mindspore/context.py``.
- ``docstring``: docstrings of public objects that declare a deprecation.

Imports: the standard library and MindSpore only, because this runs in per-version environments.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from ms_migrate.facts.public_modules import PUBLIC_MODULES

GENERATOR = "ms-migrate catalogue build"
CHANNELS = ("decorator", "module-redirect", "warning", "context-table", "docstring")
KINDS = ("api", "parameter", "module", "context-key")

# Bare replacements such as ``ops.pad`` or ``Tensor.isclose`` are spelled relative to ``mindspore``.
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*")
_WARNING_TEXT = re.compile(r"deprecat|will be removed", re.IGNORECASE)
_SINCE = re.compile(
    r"deprecat\w*\b[^.;]{0,30}?\b(?:from|since|in|as of)\s+(?:MindSpore\s+)?(?:version\s+|v)?"
    r"(\d+\.\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_NAMED_PARAMETER = re.compile(r"\b(?:parameters?|arguments?|args?)\s+[`'\"]*([A-Za-z_]\w*)", re.IGNORECASE)
_ABOUT_SOMETHING_ELSE = re.compile(
    r"\b(?:parameters?|arguments?|args?|kwargs|keys?|keywords?|values?|environment|env|format|device)\b", re.I
)
_ABOUT_A_VALUE = re.compile(r"\b(?:values?|types?|inputs?\s+for)\b[^.]*\bdeprecat", re.IGNORECASE)
_QUOTED_PHRASE = re.compile(r"[`'\"]+([^`'\"]+?)[`'\"]+")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_LITERAL = re.compile(r"``[^`]*``")
_INSTEAD = re.compile(r"\buse\s+(.+?)\s+instead\b", re.IGNORECASE)
_USE = re.compile(
    r"\b(?:please\s+use|use|replaced\s+(?:by|with)|switch\s+to|migrate\s+to)\s+(.+?)(?:\.(?:\s|$)|[,;]|$)",
    re.IGNORECASE,
)
_RECOMMENDED = re.compile(r"(?:^|[,;.]\s*)([^,;.]+?)\s+is\s+recommended\b", re.IGNORECASE)
_SEE = re.compile(r"\bdeprecated\s*\(\s*see\s+([^)]+)\)", re.IGNORECASE)
_ROLE = re.compile(r":\w+:")
_LEADING_NOUN = re.compile(
    r"^(?:the\s+)?(?:new\s+)?(?:api|apis|interface|function|operator|class|method|parameter)\s+", re.I
)
# What a docstring sentence must say to declare a deprecation (a bare mention of the word is not one).
_DOC_DECLARES = re.compile(
    r"\b(?:is|are|was|were|be|been|being|now)\s+deprecated\b"
    r"|\bdeprecated\s+(?:from|since|as\s+of|in\s+version)\b"
    r"|(?:^|[:.]\s*)deprecated\b"
    r"|\b(?:this|the)\s+(?:interface|api|operator|function|class|method|module)\s+will\s+be\s+removed\b",
    re.IGNORECASE,
)
_DOC_SECTION = re.compile(r"^([A-Z][\w ]*?)\s*:\s*$")
_DOC_ARGUMENT_SECTIONS = {"Args", "Arguments", "Parameters", "Keyword Args", "Keyword Arguments", "Kwargs"}
_DOC_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?:\([^)]*\)?[^:]*)?:(?:\s|$)")
# "This interface will be deprecated in future versions" with no version and no replacement
# (set_context's docstring) announces a deprecation to come; the interface is not deprecated yet.
_ANNOUNCED = re.compile(r"\bwill be deprecated in (?:a |the )?future\b", re.IGNORECASE)
_WILL_BE_REMOVED = re.compile(r"\bwill be removed\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[;:]|\.\s|\bwill\b|\brenamed\b|\bchanged?\b|\breplaced\s+by\s+`[^`]+`")
_DEPRECATION_HELPERS = (
    "mindspore.common._decorator.deprecated",
    "mindspore.graph._mark_deprecated.mark_deprecated",
)
_WARNING_CALLS = {"warning", "warn", "warn_once", "warning_once"}
_CONDITIONAL = (ast.If, ast.IfExp, ast.For, ast.While, ast.ExceptHandler)


@dataclasses.dataclass
class Hit:
    """One deprecation found through one channel, before hits on the same thing are merged."""

    kind: str
    channel: str
    target: Any = None  # the deprecated object, for kinds api and parameter
    names: tuple[str, ...] = ()  # set directly for modules and context keys
    parameter: Optional[str] = None
    since: Optional[str] = None
    replacement: Optional[str] = None  # already normalised
    rename: bool = False
    # ``deprecated(..., use_substitute_name=True)``: the old primitive runs under the substitute's name
    runs_as_substitute: bool = False


# -- quiet import -------------------------------------------------------------------------------------


def import_mindspore_quietly() -> Any:
    """Import MindSpore with its own log set to errors only (scanning imports deprecated modules)."""
    if "mindspore" not in sys.modules:
        os.environ["GLOG_v"] = "3"  # noqa: SIM112 (MindSpore reads this spelling)
    warnings.simplefilter("ignore")
    import mindspore

    logging.getLogger("mindspore").setLevel(logging.ERROR)
    return mindspore


def _try_import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # a namespace missing from this version, or one that needs a device
        return None


def resolve(dotted: str) -> Any:
    """The object a ``mindspore.…`` dotted name denotes, or ``_MISSING``."""
    if not dotted.startswith("mindspore"):
        return _MISSING
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut])) or _try_import(".".join(parts[:cut]))
        if module is None:
            continue
        obj = module
        for part in parts[cut:]:
            try:
                obj = getattr(obj, part)
            except Exception:
                return _MISSING
        return obj
    return _MISSING


_MISSING = object()


# -- the public namespace, by identity ----------------------------------------------------------------


def _is_api_object(obj: Any) -> bool:
    """A MindSpore function, class or callable instance (not a constant, nor ``threading.Thread``
    imported into a MindSpore module)."""
    if inspect.ismodule(obj) or isinstance(obj, (int, float, str, bytes, tuple, list, dict, set)):
        return False
    if not (inspect.isroutine(obj) or inspect.isclass(obj) or callable(obj)):
        return False
    owner = obj if inspect.isroutine(obj) or inspect.isclass(obj) else type(obj)
    return str(getattr(owner, "__module__", None) or "").startswith("mindspore")


def _unwrap_member(member: Any) -> Any:
    if isinstance(member, (staticmethod, classmethod)):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    return member


def name_order(name: str) -> tuple[int, int, int, str]:
    """Sort key: the canonical name is the shortest ``mindspore.ops…``/``mindspore.nn…``-style one."""
    parts = name.split(".")
    return (len(parts), 0 if parts[1] in ("ops", "nn") else 1, len(name), name)


class PublicIndex:
    """Every public dotted name, keyed by ``id`` of the object it denotes."""

    def __init__(self, modules: tuple[str, ...] = PUBLIC_MODULES) -> None:
        self._names: dict[int, list[str]] = {}
        self._objects: dict[int, Any] = {}  # keeps each object alive, so its id stays its own
        self.instances_of: dict[int, list[Any]] = {}  # class id -> its public callable instances
        classes: list[tuple[str, type]] = []
        for module_name in modules:
            module = _try_import(module_name)
            if module is None:
                continue
            for attribute in dir(module):
                if attribute.startswith("_"):
                    continue
                try:
                    obj = getattr(module, attribute)
                except Exception:
                    continue
                if not _is_api_object(obj):
                    continue
                self._add(obj, f"{module_name}.{attribute}")
                if inspect.isclass(obj):
                    classes.append((f"{module_name}.{attribute}", obj))
                else:
                    self.instances_of.setdefault(id(type(obj)), []).append(obj)
        for class_name, cls in classes:
            for member_name, member in self._members(cls):
                self._add(member, f"{class_name}.{member_name}")

    def _add(self, obj: Any, name: str) -> None:
        names = self._names.setdefault(id(obj), [])
        if name not in names:
            names.append(name)
            self._objects[id(obj)] = obj

    def _members(self, cls: type) -> Iterator[tuple[str, Any]]:
        """Public methods a class defines, with those of its private bases (Tensor's C++ base)."""
        seen: set[str] = set()
        for base in cls.__mro__:
            if base is object or (
                base is not cls and (id(base) in self._names or base.__module__ == "builtins")
            ):
                break
            for member_name, member in list(vars(base).items()):
                if member_name.startswith("_") or member_name in seen:
                    continue
                seen.add(member_name)
                function = _unwrap_member(member)
                if inspect.isroutine(function):
                    yield member_name, function

    def names(self, obj: Any) -> list[str]:
        return list(self._names.get(id(obj), ()))

    def objects(self) -> list[Any]:
        return list(self._objects.values())

    def targets(self) -> list[Any]:
        """Public objects, and the classes of public instances (``ops.identity`` is a Primitive)."""
        found = self.objects()
        known = {id(obj) for obj in found}
        for obj in list(found):
            if not inspect.isclass(obj) and not inspect.isroutine(obj) and id(type(obj)) not in known:
                known.add(id(type(obj)))
                found.append(type(obj))
        return found

    def names_of_target(self, target: Any, kind: str) -> list[str]:
        names = self.names(target)
        if kind == "api" and inspect.isclass(target):
            for instance in self.instances_of.get(id(target), ()):
                names.extend(self.names(instance))
        return sorted(set(names), key=name_order)


# -- normalising what MindSpore states ----------------------------------------------------------------


def normalise_since(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    text = str(text).strip()
    match = _VERSION.fullmatch(text)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else text


def _strip_quotes(text: str) -> str:
    stripped = text.strip().strip("`'\" ")
    return stripped if not re.search(r"[`'\"]", stripped) else text.strip()


def _clean_reference(text: str) -> str:
    text = _strip_quotes(_ROLE.sub("", text))
    text = _strip_quotes(_LEADING_NOUN.sub("", text))
    return text[:-2] if text.endswith("()") else text


def normalise_replacement(text: Optional[str], context_modules: tuple[str, ...] = ()) -> Optional[str]:
    """A public dotted name when the stated replacement resolves to one, else the stated text."""
    if text is None:
        return None
    cleaned = _clean_reference(" ".join(str(text).split()))
    if not cleaned:
        return None
    if _DOTTED.fullmatch(cleaned):
        candidates = [cleaned] if cleaned.startswith("mindspore.") else [f"mindspore.{cleaned}"]
        candidates += [f"{module}.{cleaned}" for module in context_modules]
        for candidate in candidates:
            if resolve(candidate) is not _MISSING:
                return candidate
    return cleaned


def _context_modules(names: list[str]) -> tuple[str, ...]:
    """Where a bare substitute such as ``GeLU`` is looked up: the modules exporting the old name."""
    return tuple(dict.fromkeys(name.rsplit(".", 1)[0] for name in names))


def stated_replacement(sentence: str) -> Optional[str]:
    """The ``use X instead`` part of a message, or None when it names nothing code-like."""
    sentence = " ".join(sentence.split())
    match = _INSTEAD.search(sentence) or _RECOMMENDED.search(sentence) or _SEE.search(sentence)
    match = match or _USE.search(sentence)
    if not match:
        return None
    clause = match.group(1).strip().rstrip(".,;")
    reference = re.match(r"(?::\w+:)?([`'\"]+)([^`'\"]+)\1(.*)", clause)
    if reference and not re.match(r"\s*(?:or|and|with|combined|,)\b", reference.group(3)):
        return reference.group(2)  # a quoted name followed by prose: the name is the replacement
    looks_like_code = re.search(r"[`'\":(._]|[a-z][A-Z]|^[A-Z]\w*[a-z]\w*$", clause)
    return clause if looks_like_code else None


def stated_since(text: str) -> Optional[str]:
    match = _SINCE.search(" ".join(text.split()))
    return normalise_since(match.group(1)) if match else None


def _parameters(target: Any) -> tuple[set[str], bool]:
    """The keyword names a call to ``target`` takes, and whether it also takes ``**kwargs``."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return set(), False
    named = {
        p.name
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")
    }
    return named, any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())


def _signature_key(obj: Any) -> Optional[list[tuple[str, Any, str]]]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, repr(p.default)) for p in signature.parameters.values()]


def _call_interface(cls: type) -> Optional[list[tuple[str, Any, str]]]:
    """How an instance is called: ``construct`` for a Cell, else ``__call__``; None when it says nothing
    (a Primitive's ``__call__(self, *args)`` hides its inputs)."""
    method = getattr(cls, "construct", None) or inspect.getattr_static(cls, "__call__", None)
    key = _signature_key(method) if method is not None else None
    if key is None or all(
        kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) or name == "self"
        for name, kind, _ in key
    ):
        return None
    return key


def _same_signature(old: Any, new: Any, runs_as_substitute: bool) -> bool:
    old_key, new_key = _signature_key(old), _signature_key(new)
    if old_key is None or old_key != new_key:
        return False
    if inspect.isclass(old) != inspect.isclass(new):
        return False
    if not inspect.isclass(old):
        return True
    old_call, new_call = _call_interface(old), _call_interface(new)
    if old_call is None or new_call is None:
        return runs_as_substitute  # inputs unknowable: only MindSpore's own aliasing proves them equal
    return old_call == new_call


def is_drop_in(olds: list[Any], replacement: Optional[str], runs_as_substitute: bool = False) -> bool:
    """A provable rename: the replacement is the same object, or a callable of the same signature
    (for classes, also called the same way)."""
    if replacement is None or not replacement.startswith("mindspore.") or not _DOTTED.fullmatch(replacement):
        return False
    new = resolve(replacement)
    if new is _MISSING or not callable(new) or inspect.ismodule(new):
        return False
    return all(
        old is new or (callable(old) and _same_signature(old, new, runs_as_substitute)) for old in olds
    )


# -- channel: decorator -------------------------------------------------------------------------------


def _decorator_code() -> Any:
    from mindspore.common._decorator import deprecated

    return deprecated("0", None)(lambda: None).__code__


def _decorator_arguments(function: Any, code: Any) -> Optional[dict[str, Any]]:
    """The ``deprecated(...)`` arguments when ``function`` (or one it wraps) is its wrapper."""
    for _ in range(8):
        if getattr(function, "__code__", None) is code:
            cells = function.__closure__ or ()
            return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells)}
        function = getattr(function, "__wrapped__", None)
        if function is None:
            return None
    return None


def decorator_hits(index: PublicIndex) -> Iterator[Hit]:
    code = _decorator_code()
    for target in index.targets():
        if inspect.isclass(target):
            arguments = None
            for dunder in ("__init__", "__new__", "__call__"):
                member = vars(target).get(dunder)
                arguments = arguments or (member is not None and _decorator_arguments(member, code))
        else:
            arguments = _decorator_arguments(target, code)
        if not arguments:
            continue
        names = index.names_of_target(target, "api")
        replacement = normalise_replacement(arguments.get("substitute") or None, _context_modules(names))
        yield Hit(
            kind="api",
            channel="decorator",
            target=target,
            since=normalise_since(arguments.get("version")),
            replacement=replacement,
            runs_as_substitute=bool(arguments.get("use_substitute_name")),
        )


# -- the installed package's source ---------------------------------------------------------------------


@dataclasses.dataclass
class SourceFile:
    path: str
    module: str
    tree: ast.Module


def package_sources(package_dir: Path, needles: tuple[str, ...]) -> Iterator[SourceFile]:
    """Parsed ``.py`` files of the installed package whose text holds one of ``needles``."""
    root = package_dir.parent
    for directory, subdirectories, files in os.walk(package_dir):
        subdirectories.sort()
        for file_name in sorted(files):
            if not file_name.endswith(".py"):
                continue
            path = os.path.join(directory, file_name)
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue
            if not any(needle in text for needle in needles):
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            relative = Path(path).relative_to(root).with_suffix("")
            parts = list(relative.parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield SourceFile(os.path.realpath(path), ".".join(parts), tree)


def _string_of(node: Optional[ast.AST]) -> str:
    """The literal text of a message expression, with ``{}`` where a value is formatted in."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            _string_of(value) if isinstance(value, ast.Constant) else "{}" for value in node.values
        )
    if isinstance(node, ast.BinOp):
        return _string_of(node.left) + ("" if isinstance(node.op, ast.Mod) else _string_of(node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _string_of(node.func.value)
    return ""


def _message(call: ast.Call, enclosing: Optional[ast.AST]) -> str:
    argument = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg in ("msg", "message")), None)
    )
    if isinstance(argument, ast.Name) and enclosing is not None:
        pieces = []
        for node in ast.walk(enclosing):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == argument.id for t in node.targets)
            ) or (
                isinstance(node, ast.AugAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == argument.id
            ):
                pieces.append(_string_of(node.value))
        return " ".join(pieces)
    return _string_of(argument)


def _is_warning_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return name in _WARNING_CALLS


@dataclasses.dataclass
class WarningSite:
    message: str
    # the defs around the call, innermost first, each with the guards (tests) between it and the call
    definitions: list[tuple[ast.AST, list[ast.AST]]]


def _guard(node: ast.AST) -> Optional[ast.AST]:
    """What decides whether the body of ``node`` runs (an exception handler always is a guard)."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While)):
        return node.test
    if isinstance(node, ast.For):
        return node.iter
    if isinstance(node, ast.ExceptHandler):
        return node
    return None


def warning_sites(tree: ast.Module) -> Iterator[WarningSite]:
    """Warning calls about deprecation, with the defs around them (innermost first)."""

    def visit(node: ast.AST, definitions: list[tuple[ast.AST, list[ast.AST]]]) -> Iterator[WarningSite]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(child, [(child, []), *definitions])
                continue
            if _is_warning_call(child) and definitions:
                message = _message(child, definitions[0][0])
                if _WARNING_TEXT.search(message):
                    yield WarningSite(message, definitions)
            guard = _guard(child)
            if guard is not None and definitions:
                innermost, guards = definitions[0]
                yield from visit(child, [(innermost, [*guards, guard]), *definitions[1:]])
            else:
                yield from visit(child, definitions)

    yield from visit(tree, [])


def _argument_names(definition: ast.AST) -> set[str]:
    arguments = definition.args
    every = [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        arguments.vararg,
        arguments.kwarg,
    ]
    return {argument.arg for argument in every if argument is not None} - {"self", "cls"}


def _depends_on_arguments(definitions: list[tuple[ast.AST, list[ast.AST]]]) -> bool:
    """Whether a guard around the call reads an argument or the environment (a once-only flag does not)."""
    arguments: set[str] = set()
    for definition, _ in definitions:
        arguments |= _argument_names(definition)
    for _, guards in definitions:
        for guard in guards:
            if isinstance(guard, ast.ExceptHandler):
                return True
            text = ast.unparse(guard)
            names = {n.id for n in ast.walk(guard) if isinstance(n, ast.Name)}
            if names & arguments or "environ" in text or "getenv" in text:
                return True
    return False


def _first_line(definition: ast.AST) -> int:
    decorators = getattr(definition, "decorator_list", [])
    return min([definition.lineno, *(decorator.lineno for decorator in decorators)])


def _code_index(index: PublicIndex) -> dict[tuple[str, int], list[Any]]:
    """(file, first line) of each code object that calling a public object runs first -> the object."""
    by_location: dict[tuple[str, int], list[Any]] = {}

    def add(function: Any, target: Any) -> None:
        for _ in range(8):
            code = getattr(function, "__code__", None)
            if code is not None:
                key = (os.path.realpath(code.co_filename), code.co_firstlineno)
                if all(existing is not target for existing in by_location.get(key, ())):
                    by_location.setdefault(key, []).append(target)
            function = getattr(function, "__wrapped__", None)
            if function is None:
                return

    for target in index.targets():
        if inspect.isclass(target):
            for dunder in ("__init__", "__new__", "__call__"):
                if dunder in vars(target):
                    add(_unwrap_member(vars(target)[dunder]), target)
        elif inspect.isroutine(target):
            add(target, target)
    return by_location


# -- channel: warning ---------------------------------------------------------------------------------


def _mentioned(text: str) -> list[str]:
    """Identifiers a message quotes, or names after "parameter"/"args", in order. A ````literal````
    is a value, not a name."""
    text = _LITERAL.sub(" ", text)
    found = []
    for match in sorted(
        [*_QUOTED_PHRASE.finditer(text), *_NAMED_PARAMETER.finditer(text)], key=lambda m: m.start()
    ):
        found += [word for word in _IDENTIFIER.findall(match.group(1)) if word not in ("and", "or")]
    return list(dict.fromkeys(found))


def deprecated_parameters(text: str, target: Any, own_names: set[str]) -> list[str]:
    """The parameters of ``target`` that a deprecation sentence is about (not those it recommends)."""
    parameters, takes_kwargs = _parameters(target)
    replacement = stated_replacement(text) or ""
    recommended = set(_IDENTIFIER.findall(replacement))
    about = []
    for word in _mentioned(text):
        if word in recommended or word in own_names:
            continue
        if word in parameters or (takes_kwargs and re.fullmatch(r"[a-z_][a-z0-9_]*", word) and "_" in word):
            about.append(word)
        elif not about:
            return []  # the sentence is about something else (``infer_boost`` *in* ``options``)
    return about


def _own_names(target: Any, names: list[str]) -> set[str]:
    return {name.rsplit(".", 1)[-1] for name in names} | {getattr(target, "__name__", "") or ""} - {""}


def classify(
    message: str, target: Any, names: list[str], conditional: bool
) -> list[tuple[str, Optional[str]]]:
    """What a deprecation message is about: [("api", None)], [("parameter", name), ...] or []."""
    if _ABOUT_A_VALUE.search(message):
        return []  # a value of a parameter is deprecated, not the parameter (``backend="GE"``)
    own_names = _own_names(target, names)
    about = deprecated_parameters(message, target, own_names)
    if about:
        return [("parameter", name) for name in about]
    if _ABOUT_SOMETHING_ELSE.search(message):
        return []  # a parameter, value or setting this signature does not name; an api entry would be false
    if any(re.search(rf"(?<!\w){re.escape(own)}\b", message) for own in own_names):
        return [("api", None)]
    return [] if conditional else [("api", None)]


def warning_hits(index: PublicIndex, sources: list[SourceFile]) -> Iterator[Hit]:
    code_index = _code_index(index)
    for source in sources:
        for site in warning_sites(source.tree):
            targets: list[Any] = []
            for depth, (definition, _) in enumerate(site.definitions):
                targets = code_index.get((source.path, _first_line(definition)), [])
                if targets:
                    conditional = _depends_on_arguments(site.definitions[: depth + 1])
                    break
            for target in targets:
                names = index.names_of_target(target, "api")
                for kind, parameter in classify(site.message, target, names, conditional):
                    stated, context = stated_replacement(site.message), _context_modules(names)
                    if kind == "api":
                        replacement = normalise_replacement(stated, context)
                    else:
                        replacement = _parameter_replacement(stated, _parameters(target)[0], context)
                    yield Hit(
                        kind=kind,
                        channel="warning",
                        target=target,
                        parameter=parameter,
                        since=stated_since(site.message),
                        replacement=replacement,
                    )


# -- channel: module-redirect -------------------------------------------------------------------------


def _redirect_default_version(sources: list[SourceFile]) -> Optional[str]:
    for source in sources:
        for node in ast.walk(source.tree):
            if isinstance(node, ast.FunctionDef) and node.name == "mark_deprecated":
                names = [a.arg for a in node.args.args]
                defaults = dict(zip(names[len(names) - len(node.args.defaults) :], node.args.defaults))
                default = defaults.get("version")
                return default.value if isinstance(default, ast.Constant) else None
    return None


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _exposes_all(old_name: str, new_name: str) -> bool:
    """Whether the new module has every public name of the old (bar the redirect's own import)."""
    old, new = _try_import(old_name), _try_import(new_name)
    if old is None or new is None:
        return False
    redirect = getattr(sys.modules.get("mindspore.graph._mark_deprecated"), "mark_deprecated", None)
    public = [n for n in dir(old) if not n.startswith("_") and getattr(old, n) is not redirect]
    return all(hasattr(new, n) for n in public)


def redirect_hits(sources: list[SourceFile]) -> Iterator[Hit]:
    default_version = _redirect_default_version(sources)
    for source in sources:
        for statement in source.tree.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "mark_deprecated"):
                continue
            arguments = dict(zip(("old", "new", "version"), call.args))
            arguments.update({k.arg: k.value for k in call.keywords if k.arg})
            old = arguments.get("old") or arguments.get("deprecated_module_name")
            new = arguments.get("new") or arguments.get("new_module_name")
            version = arguments.get("version")
            old_name = (
                source.module if isinstance(old, ast.Name) and old.id == "__name__" else _string_of(old)
            )
            new_name = _string_of(new)
            if not old_name or not _is_public_module(old_name):
                continue
            replacement = new_name or None
            yield Hit(
                kind="module",
                channel="module-redirect",
                names=(old_name,),
                since=normalise_since(_string_of(version) if version is not None else default_version),
                replacement=replacement,
                rename=bool(replacement) and _is_public_module(new_name) and _exposes_all(old_name, new_name),
            )


# -- channel: context-table ---------------------------------------------------------------------------


def _context_tables(sources: list[SourceFile]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    deprecated: dict[str, str] = {}
    removed: dict[str, dict[str, str]] = {}
    for source in sources:
        if source.module != "mindspore.context":
            continue
        for function in ast.walk(source.tree):
            if not (isinstance(function, ast.FunctionDef) and function.name == "_check_context_deprecated"):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    try:
                        value = ast.literal_eval(node.value)
                    except ValueError:
                        continue
                    if node.targets[0].id == "deprecated_context_dict":
                        deprecated.update(value)
                    elif node.targets[0].id == "invalid_context_dict":
                        removed.update(value)
    return deprecated, removed


def _context_replacement(text: Optional[str]) -> Optional[str]:
    """``'api mindspore.set_device()'`` -> ``mindspore.set_device``; ``'env X'`` stays as stated."""
    text = " ".join((text or "").split())
    if not text:
        return None
    if text.startswith("api "):
        text = text[len("api ") :]
    return normalise_replacement(text)


def context_hits(index: PublicIndex, sources: list[SourceFile]) -> Iterator[Hit]:
    set_context = resolve("mindspore.context.set_context")
    if set_context is _MISSING:
        return
    names = tuple(index.names_of_target(set_context, "parameter"))
    deprecated, removed = _context_tables(sources)
    for key, replacement in deprecated.items():
        yield Hit(
            kind="context-key",
            channel="context-table",
            target=set_context,
            names=names,
            parameter=key,
            replacement=_context_replacement(replacement),
        )
    for key, info in removed.items():
        yield Hit(
            kind="context-key",
            channel="context-table",
            target=set_context,
            names=names,
            parameter=key,
            since=normalise_since(info.get("version")),
            replacement=_context_replacement(info.get("interface")),
        )


# -- channel: docstring -------------------------------------------------------------------------------


@dataclasses.dataclass
class DocStatement:
    paragraph: str  # the paragraph (or argument entry) holding the declaration, on one line
    argument: Optional[str]  # the documented argument it sits under, if any
    nested: bool  # under a ``- key (type):`` bullet inside an argument (a sub-key such as a dict's)
    platforms: bool  # "Supported Platforms: Deprecated"
    declares: bool = True  # False: the line only says that some parameters "will be removed"


def doc_statements(doc: str) -> Iterator[DocStatement]:
    """Each line of a docstring that declares a deprecation, with where in the docstring it sits."""
    lines = inspect.cleandoc(doc).splitlines()
    section: Optional[str] = None
    entry_indent: Optional[int] = None
    argument: Optional[str] = None
    nested_indent: Optional[int] = None
    for number, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        heading = _DOC_SECTION.match(line)
        if heading and indent == 0:
            section, entry_indent, argument, nested_indent = heading.group(1), None, None, None
            continue
        in_arguments = section in _DOC_ARGUMENT_SECTIONS
        if in_arguments and stripped:
            if nested_indent is not None and indent <= nested_indent:
                nested_indent = None
            if entry_indent is None or indent <= entry_indent:
                entry = _DOC_ENTRY.match(stripped)
                if entry:
                    entry_indent, argument = indent, entry.group(1).lstrip("*")
            elif stripped.startswith("- ") and _DOC_ENTRY.match(stripped[2:]):
                nested_indent = indent
        if section == "Supported Platforms":
            if stripped == "Deprecated":
                yield DocStatement("", None, False, True)
            continue
        declares = bool(_DOC_DECLARES.search(line))
        if not (declares or _WILL_BE_REMOVED.search(line)) or "Deprecated numpy argument" in line:
            continue
        yield DocStatement(
            _paragraph(lines, number, in_arguments),
            argument if in_arguments else None,
            in_arguments and nested_indent is not None,
            False,
            declares,
        )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _paragraph(lines: list[str], number: int, in_arguments: bool) -> str:
    """The block holding line ``number``: a paragraph, a bullet, a directive's body or one argument's
    entry, on one line."""

    def starts_block(line: str) -> bool:
        text = line.strip()
        return text.startswith(("- ", "* ", ".. ")) or bool(in_arguments and _DOC_ENTRY.match(text))

    def continues(line: str) -> bool:
        return bool(line.strip()) and not (_DOC_SECTION.match(line) and _indent(line) == 0)

    start = number
    while not starts_block(lines[start]) and start > 0 and continues(lines[start - 1]):
        if _indent(lines[start - 1]) > _indent(lines[start]):
            break
        start -= 1
    end = number + 1
    while end < len(lines) and continues(lines[end]) and not starts_block(lines[end]):
        if _indent(lines[end]) < _indent(lines[start]):
            break
        end += 1
    return " ".join(line.strip() for line in lines[start:end])


def _declaring_sentence(paragraph: str) -> tuple[str, str]:
    """The sentence declaring the deprecation, alone and with the next one ("Please use X instead.")."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z`:])", paragraph)
    for number, sentence in enumerate(sentences):
        if _DOC_DECLARES.search(sentence):
            return sentence, " ".join(sentences[number : number + 2])
    return paragraph, paragraph


def removed_parameters(text: str, parameters: set[str]) -> list[str]:
    """Quoted parameters in the clause before each "will be removed" (``a`` and ``b`` will be removed)."""
    found = []
    for match in _WILL_BE_REMOVED.finditer(text):
        clause = _CLAUSE_BREAK.split(text[: match.start()])[-1]
        found += [word for word in _mentioned(clause) if word in parameters]
    return list(dict.fromkeys(found))


def docstring_hits(index: PublicIndex) -> Iterator[Hit]:
    set_context = resolve("mindspore.context.set_context")
    helpers = {id(resolve(name)) for name in _DEPRECATION_HELPERS}
    for target in index.targets():
        if not (inspect.isroutine(target) or inspect.isclass(target)) or id(target) in helpers:
            continue  # the decorator's own docstring explains "deprecated"; it deprecates nothing
        doc = getattr(target, "__doc__", None)
        if not isinstance(doc, str) or not _WARNING_TEXT.search(doc):
            continue
        names = index.names_of_target(target, "api")
        if names:
            yield from _docstring_hits_of(target, doc, names, target is set_context)


def _docstring_hits_of(target: Any, doc: str, names: list[str], is_set_context: bool) -> Iterator[Hit]:
    parameters, takes_kwargs = _parameters(target)
    context = _context_modules(names)
    for statement in doc_statements(doc):
        if statement.platforms:
            yield Hit(kind="api", channel="docstring", target=target)
            continue
        if statement.nested:
            continue  # a sub-key of a dict argument: the catalogue has no place for it
        sentence, with_next = _declaring_sentence(statement.paragraph)
        since, stated = stated_since(with_next), stated_replacement(with_next)
        if not statement.declares:
            for parameter in removed_parameters(statement.paragraph, parameters):
                yield Hit("parameter", "docstring", target, parameter=parameter)
            continue
        if statement.argument is not None:
            if statement.argument in parameters or takes_kwargs:
                kind = "context-key" if is_set_context else "parameter"
                yield Hit(
                    kind,
                    "docstring",
                    target,
                    parameter=statement.argument,
                    since=since,
                    replacement=_parameter_replacement(stated, parameters, context),
                )
            continue
        about_a_value = _ABOUT_A_VALUE.search(sentence)
        about = [] if about_a_value else deprecated_parameters(sentence, target, _own_names(target, names))
        for parameter in about:
            yield Hit(
                "parameter",
                "docstring",
                target,
                parameter=parameter,
                since=since,
                replacement=_parameter_replacement(stated, parameters, context),
            )
        announced = _ANNOUNCED.search(sentence) and since is None and stated is None
        about_other = _ABOUT_SOMETHING_ELSE.search(sentence.split("deprecat")[0][-60:])
        # "Tensor type input for `shape` is deprecated": a kind of value, not the API, is deprecated.
        if not about and not announced and not about_other and not about_a_value:
            yield Hit(
                "api", "docstring", target, since=since, replacement=normalise_replacement(stated, context)
            )


def _parameter_replacement(
    stated: Optional[str], parameters: set[str], context: tuple[str, ...]
) -> Optional[str]:
    """A parameter's replacement: another parameter's bare name, else what the text names."""
    if stated and stated.strip("`'\" ") in parameters:
        return stated.strip("`'\" ")
    return normalise_replacement(stated, context)


# -- merging and writing ------------------------------------------------------------------------------


def _entry_key(hit: Hit) -> tuple[Any, ...]:
    identity = id(hit.target) if hit.target is not None else hit.names
    return (hit.kind, identity, hit.parameter)


def merge(hits: list[Hit], index: PublicIndex) -> list[dict[str, Any]]:
    """One entry per deprecated thing: the highest-priority channel's, with gaps filled from others."""
    grouped: dict[tuple[Any, ...], list[Hit]] = {}
    for hit in hits:
        if hit.kind == "parameter" and hit.target is resolve("mindspore.context.set_context"):
            hit.kind = "context-key"
        grouped.setdefault(_entry_key(hit), []).append(hit)
    entries = []
    for group in grouped.values():
        group.sort(key=lambda hit: CHANNELS.index(hit.channel))
        best = group[0]
        names = list(best.names) or index.names_of_target(best.target, best.kind)
        if not names:
            continue
        since = next((hit.since for hit in group if hit.since), None)
        replacement = next((hit.replacement for hit in group if hit.replacement), None)
        if replacement in names:
            rename = False  # MindSpore names the API itself (Poisson's substitute is Poisson): nothing to do
        elif best.kind == "api":
            olds = [best.target, *index.instances_of.get(id(best.target), ())]
            rename = is_drop_in(olds, replacement, any(hit.runs_as_substitute for hit in group))
        else:
            rename = best.rename and best.kind == "module"
        canonical = min(names, key=name_order)
        entry: dict[str, Any] = {"names": [canonical, *sorted(set(names) - {canonical})], "kind": best.kind}
        if best.kind in ("parameter", "context-key"):
            entry["parameter"] = best.parameter
        entry.update(since=since, replacement=replacement, rename=rename, channel=best.channel)
        entries.append(entry)
    entries.sort(key=lambda e: (e["kind"], e["names"][0], e.get("parameter") or ""))
    return entries


def build_catalogue() -> dict[str, Any]:
    mindspore = import_mindspore_quietly()
    index = PublicIndex()
    package_dir = Path(mindspore.__file__).resolve().parent
    sources = list(package_sources(package_dir, ("deprecat", "will be removed", "mark_deprecated")))
    hits: list[Hit] = []
    hits += decorator_hits(index)
    hits += redirect_hits(sources)
    hits += warning_hits(index, sources)
    hits += context_hits(index, sources)
    hits += docstring_hits(index)
    return {"mindspore": mindspore.__version__, "generator": GENERATOR, "entries": merge(hits, index)}


def render(catalogue: dict[str, Any]) -> str:
    return json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n"


def write_catalogue(path: Path) -> dict[str, Any]:
    catalogue = build_catalogue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(catalogue), encoding="utf-8")
    return catalogue
