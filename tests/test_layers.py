"""What may import what: the front ends (the command line, the language server) stand on the
application layer and the public names of the modules below it, and nothing below imports them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "ms_migrate"
# The command line (its `runtime` and `verify` commands too) and the language server.
FRONT_ENDS = [
    *sorted((PACKAGE / "frontends").glob("*.py")),
    PACKAGE / "verify" / "command.py",
    *sorted((PACKAGE / "lsp").glob("*.py")),
]


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, module, name) for each `from ms_migrate... import name` and `import ms_migrate...`
    (name "") of a file, wherever in the file it stands (imports inside functions count)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ms_migrate"):
            for alias in node.names:
                yield node.lineno, node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ms_migrate"):
                    yield node.lineno, alias.name, ""


def test_no_front_end_imports_a_private_name() -> None:
    found = []
    for path in FRONT_ENDS:
        own = _module_of(path).rpartition(".")[0] if path.parent.name == "lsp" else _module_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "ms_migrate"
            for alias in node.names
        }
        for line, module, name in _imports(path):
            if name.startswith("_") and not name.endswith("__") and not module.startswith(own):
                found.append(f"{path.name}:{line}: {module}.{name}")
        for node in ast.walk(tree):  # `sources._excluded(...)` on a module imported whole
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
            ):
                found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not found, found


def test_nothing_below_the_front_ends_imports_them() -> None:
    front = {"ms_migrate.frontends", "ms_migrate.verify.command", "ms_migrate.lsp"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in FRONT_ENDS or path.name == "__main__.py":
            continue
        for line, module, name in _imports(path):
            imported = {module, f"{module}.{name}" if name else module}
            if any(item == end or item.startswith(end + ".") for item in imported for end in front):
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {module} {name}")
    # The language server is a front end too: it does not import the command line.
    for path in sorted((PACKAGE / "lsp").glob("*.py")):
        for line, module, name in _imports(path):
            if module == "ms_migrate.frontends.cli" or (module == "ms_migrate" and name == "cli"):
                found.append(f"lsp/{path.name}:{line}: {module} {name}")
    assert not found, found


# Each layer of the package, lowest first: a module may import its own layer and those below it,
# never one above. The engine and the rules are one layer, as the rules and the engine that runs
# them need each other (the code registry names each rule; a rule's fix goes through the engine's
# import manager); the project index in `analysis` reads the files a step's network lives in.
LAYERS = [
    {"diagnostics", "facts"},  # a finding's values; what the releases are
    {"files"},  # the user's files and the tool's caches
    {"context", "reasons", "core", "rules", "analysis", "rewrite"},  # the engine and the rules
    {"reporting", "runtimes"},  # output formats; the MindSpore runtimes verify runs on
    {"verify", "catalogue"},  # running code on the runtimes
    {"application"},
    {"frontends", "lsp", "verify.command", "__main__"},
    {"docs", "translations"},  # maintainers' generators of docs/
]
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _layer_of(module: str) -> str:
    parts = module.split(".")[1:]  # without "ms_migrate"
    if parts[:1] == ["__version__"]:
        return "__init__"
    if parts[:2] == ["verify", "command"]:
        return "verify.command"
    return parts[0] if parts else "__init__"


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = {
        _layer_of(_module_of(path))
        for path in PACKAGE.rglob("*.py")
        if path != PACKAGE / "__init__.py" and _layer_of(_module_of(path)) not in RANK
    }
    assert not unplaced, f"place these in LAYERS (and docs/layout.md): {sorted(unplaced)}"


def test_no_module_imports_a_layer_above_its_own() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer_of(_module_of(path))
        if own == "__init__":
            continue
        for line, module, name in _imports(path):
            target = _layer_of(f"{module}.{name}" if module == "ms_migrate" else module)
            if target != "__init__" and RANK[target] > RANK[own]:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {own} imports {target}")
    assert not found, found


def test_the_top_level_holds_only_the_rule_api_the_entry_points_and_one_module_layers() -> None:
    """A rule written outside the package imports `context`, `diagnostics` and `reasons`; `docs`
    is the generator of docs/ (`python -m ms_migrate.docs`), `runtimes` a layer of one module.
    Everything else lives in the package of its layer."""
    flat = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert flat == [
        "__init__.py",
        "__main__.py",
        "context.py",
        "diagnostics.py",
        "docs.py",
        "reasons.py",
        "runtimes.py",
    ]
