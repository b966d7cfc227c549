"""A notebook's definitions as a module verify can import: its cells with only what defines things.

Importing a notebook's cells as they are would run all of them: the download, the dataset, the
training loop. Verify needs only what its train steps and grad functions are made of, so the
cells' module keeps imports, classes, functions, and assignments that call nothing but MindSpore,
numpy and a few pure builtins (`BATCH = 32`, `clip_grad = C.MultitypeFuncGraph("clip_grad")`,
`reciprocal = P.Reciprocal()`); every other top-level statement becomes blank lines, so that line
numbers stay those of the cells' module. A class that reads a name the kept statements do not
define (`cfg = edict({...})`) fails in BEFORE as well: the row says "could not run", never "equal".

Pure: text in, text out.
"""

from __future__ import annotations

import ast

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


def _defines_only(statement: ast.stmt, callable_names: frozenset[str]) -> bool:
    if isinstance(statement, _DEFINITIONS):
        return True
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        value = statement.value
        if value is None:
            return False
        nodes = list(ast.walk(value))
        calls = [node for node in nodes if isinstance(node, ast.Call)]
        awaits = any(isinstance(node, ast.Await) for node in nodes)
        return not awaits and all(_root(call.func) in callable_names for call in calls)
    if isinstance(statement, ast.Try):  # `try: import x` / `except ImportError: x = None`
        return all(_defines_only(item, callable_names) for item in statement.body)
    return False


def definitions_text(text: str) -> str:
    """``text`` with every top-level statement that is not a definition blanked out, line for
    line; ``text`` itself when it does not parse (verify then says so)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    callable_names = _library_names(tree) | _PURE_BUILTINS
    lines = text.split("\n")
    for statement in tree.body:
        if _defines_only(statement, callable_names):
            continue
        for index in range(statement.lineno - 1, statement.end_lineno or statement.lineno):
            lines[index] = ""
    return "\n".join(lines)
