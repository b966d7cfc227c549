"""What of a module verify may import: a notebook's definitions, and whether a project file runs code.

Importing a notebook's cells as they are would run all of them: the download, the dataset, the
training loop. Verify needs only what its train steps and grad functions are made of, so the
cells' module keeps imports, classes, functions, and assignments that call nothing but MindSpore,
numpy and a few pure builtins (`BATCH = 32`, `clip_grad = C.MultitypeFuncGraph("clip_grad")`,
`reciprocal = P.Reciprocal()`), and defs that those objects decorate (`@clip_grad.register("Number",
"Tensor")`); every other top-level statement becomes blank lines, so that line
numbers stay those of the cells' module. What reads a name left out when it is defined (an
assignment from `cfg`, a default argument `lr=cfg.lr`) is left out too; a class whose methods read
one (`cfg = edict({...})`) fails in BEFORE as well: the row says "could not run", never "equal".

``runs_at_import`` says whether a project file (the one that builds a step's network) may be
imported as it is. Pure: text in, text or a verdict out.
"""

from __future__ import annotations

import ast
import builtins

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Libraries whose module-level objects a train step is made of, and which build them without
# touching files or devices.
_LIBRARIES = frozenset({"mindspore", "numpy"})
_PURE_BUILTINS = frozenset({"dict", "list", "tuple", "set", "int", "float", "str", "bool", "range", "len"})


def _library_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's top-level imports bind to MindSpore and numpy objects."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            names |= {
                (alias.asname or alias.name).split(".")[0]
                for alias in statement.names
                if alias.name.split(".")[0] in _LIBRARIES
            }
        elif isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] in _LIBRARIES:
            names |= {alias.asname or alias.name for alias in statement.names}
    return frozenset(names)


def _root(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _evaluated_at_definition(statement: ast.stmt) -> list[ast.AST]:
    """What Python evaluates when the statement runs at import: a def's decorators, defaults and
    annotations, a class's decorators, bases and keywords (not their bodies), an assignment's value."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = statement.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [item for item in (arguments.vararg, arguments.kwarg) if item is not None]
        annotations = [item.annotation for item in every if item.annotation is not None]
        defaults = [item for item in arguments.kw_defaults if item is not None]
        returns = [statement.returns] if statement.returns is not None else []
        return [*statement.decorator_list, *arguments.defaults, *defaults, *annotations, *returns]
    if isinstance(statement, ast.ClassDef):
        return [*statement.decorator_list, *statement.bases, *(item.value for item in statement.keywords)]
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        return [statement.value]
    return []


def _bound(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, ast.Try):
        return set().union(*(_bound(item) for item in [*statement.body, *statement.orelse]))
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    names = (node for target in targets if target is not None for node in ast.walk(target))
    return {node.id for node in names if isinstance(node, ast.Name)}


def _names_only(target: ast.expr) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_names_only(item) for item in target.elts)
    return isinstance(target, ast.Name)


def _guarded_imports(statement: ast.stmt) -> bool:
    """`try: import x` / `except ImportError: x = None`."""
    return isinstance(statement, ast.Try) and all(
        isinstance(item, (ast.Import, ast.ImportFrom)) for item in statement.body
    )


def _keeps(
    statement: ast.stmt, callable_names: frozenset[str], defined: set[str], made: frozenset[str] = frozenset()
) -> bool:
    """Whether importing ``statement`` only defines things, from names already ``defined``.
    ``made``: the library objects kept assignments made, which a decorator may call
    (`@grad_scale.register("Tensor")`), and nothing else (`mae = metric.eval()` computes)."""
    if isinstance(statement, ast.Try):
        return _guarded_imports(statement)
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if not isinstance(statement, (*_DEFINITIONS, ast.Assign, ast.AnnAssign)):
        return False
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        # `args.device_id = 1` changes an object, `x: int` binds nothing: neither defines a name.
        if statement.value is None or not all(_names_only(target) for target in targets):
            return False
    nodes = [node for part in _evaluated_at_definition(statement) for node in ast.walk(part)]
    if any(isinstance(node, (ast.Await, ast.Lambda, ast.NamedExpr)) for node in nodes):
        return False
    calls = [node for node in nodes if isinstance(node, ast.Call)]
    read = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    decorators = {id(item) for item in getattr(statement, "decorator_list", ())}
    return (
        all(
            _root(call.func) in callable_names or (id(call) in decorators and _root(call.func) in made)
            for call in calls
        )
        and read <= defined
    )


def definitions_text(text: str) -> str:
    """``text`` with every top-level statement that is not a definition blanked out, line for
    line; ``text`` itself when it does not parse (verify then says so). A definition that reads
    a name left out is left out too."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    callable_names = _library_names(tree) | _PURE_BUILTINS
    defined = set(dir(builtins))
    lines = text.split("\n")
    made: frozenset[str] = frozenset()
    for statement in tree.body:
        if _keeps(statement, callable_names, defined, made):
            defined |= _bound(statement)
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, ast.Call):
                # A library's object (`grad_scale = C.MultitypeFuncGraph(...)`), which a def's
                # decorator may register with.
                made |= _bound(statement)
            continue
        defined -= _bound(statement)  # `list = load(...)` left out: the name is not the builtin
        decorators = getattr(statement, "decorator_list", [])
        first = min([statement.lineno, *(item.lineno for item in decorators)])
        for index in range(first - 1, statement.end_lineno or statement.lineno):
            lines[index] = ""
    return "\n".join(lines)


def runs_at_import(text: str) -> bool:
    """Whether importing ``text`` does more than define things: a module-level call or loop
    outside an ``if __name__ == "__main__"`` guard (a training script that trains when imported).
    Unlike ``definitions_text``, assignments count as quiet whatever they call (a config read at
    import is a project's normal): the file is imported as it is, or not at all."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return True
    for statement in tree.body:
        if isinstance(statement, (*_DEFINITIONS, ast.Assign, ast.AnnAssign)) or _guarded_imports(statement):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, ast.If) and "__main__" in ast.dump(statement.test):
            continue
        return True
    return False
