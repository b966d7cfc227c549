"""The project files a file's imports reach: what a run of it loads besides MindSpore.

`upgrade --verify` runs each rewritten file on the target release, and the project modules it
imports run there too: a helper that still imports a name the release removed (`ms_function` in
`src/bert_model.py`, `Validator` in `src/adam.py`) stops the file before any site runs. Those
helpers run with the release fixes (the proven pairs of ``rules/releases/``) in both versions;
this module finds them. It reads the file system and parses, it imports nothing.

An import is resolved as Python would resolve it on ``search_path`` (the folders the worker puts
first on ``sys.path``): the first folder that holds the top-level name, then each part below it,
each package's ``__init__.py`` included; a relative import from the importing file's folder.
Imports inside functions count (a file that imports lazily still runs them), those in strings do
not. Only files under the search path are followed, at most ``LIMIT`` of them.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Optional

LIMIT = 400  # files followed from one file: a project that imports more is read no further


def _candidates(folder: Path, parts: Sequence[str]) -> Iterator[Path]:
    """The files a dotted module below ``folder`` runs: each package's ``__init__.py`` on the way,
    then the module itself (a ``.py`` file or a package)."""
    for depth in range(1, len(parts) + 1):
        here = folder.joinpath(*parts[:depth])
        if here.is_dir():
            init = here / "__init__.py"
            if init.is_file():
                yield init
            continue
        module = here.with_name(here.name + ".py")
        if module.is_file():
            yield module
        return


def _absolute(dotted: str, search_path: Sequence[Path]) -> list[Path]:
    parts = dotted.split(".")
    for folder in search_path:
        if (folder / parts[0]).is_dir() or (folder / f"{parts[0]}.py").is_file():
            return list(_candidates(folder, parts))
    return []


Statement = tuple[int, str, tuple[str, ...]]  # level, module ("" for none), names imported


def _statements(tree: ast.Module) -> tuple[Statement, ...]:
    """Every import of ``tree``: `import a.b` is (0, "a.b", ()), `from ..x import y` (2, "x", ("y",))."""
    found: list[Statement] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            found.append((node.level, node.module or "", names))
    return tuple(found)


@lru_cache(maxsize=4096)
def _file_statements(path: Path) -> Optional[tuple[Statement, ...]]:
    """The imports of the file at ``path``, read once per run (the projects' helpers are reached
    from many of their files)."""
    try:
        return _statements(ast.parse(path.read_bytes()))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None


def _imported(path: Path, statements: Sequence[Statement], search_path: Sequence[Path]) -> Iterator[Path]:
    for level, module, names in statements:
        if level == 0:
            if module:
                yield from _absolute(module, search_path)
                for name in names:  # a submodule imported by name: `from src import config`
                    yield from _absolute(f"{module}.{name}", search_path)
            continue
        base = path.parent
        for _ in range(level - 1):
            base = base.parent
        parts = module.split(".") if module else []
        yield from _candidates(base, parts) if parts else ()
        for name in names:
            yield from _candidates(base, [*parts, name])


def reached_files(path: Path, text: str, search_path: Sequence[str], package: str = "") -> list[Path]:
    """The project files (resolved) that importing ``text``, the version of the file at
    ``path``, runs as a module of ``package`` ("" for a top-level module), nearest first; not
    the file itself."""
    folders = [Path(folder).resolve() for folder in search_path]
    own = path.resolve()
    try:
        statements: Optional[tuple[Statement, ...]] = _statements(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError):
        return []
    queue: list[tuple[Path, Optional[tuple[Statement, ...]]]] = [(own, statements)]
    seen: dict[Path, None] = {}
    parts = package.split(".") if package else []
    if parts and len(own.parents) > len(parts):  # the package's own __init__.py files run first
        for init in _candidates(own.parents[len(parts)], parts):
            seen[init.resolve()] = None
            queue.append((init.resolve(), _file_statements(init.resolve())))
    while queue and len(seen) < LIMIT:
        where, imports = queue.pop(0)
        if imports is None:
            continue
        for found in _imported(where, imports, folders):
            found = found.resolve()
            if found in seen or found == own or not any(folder in found.parents for folder in folders):
                continue
            seen[found] = None
            queue.append((found, _file_statements(found)))
    return list(seen)


def shown_path(path: Path) -> str:
    """``path`` as a report names it: relative to the working folder where it lies below it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:  # another drive
        return str(path)


def third_party_imports(path: Path, text: str, search_path: Sequence[str], package: str = "") -> set[str]:
    """The top-level names that ``text`` (the version of the file at ``path``) and the project
    files it reaches import absolutely and that no folder of ``search_path`` holds: the
    third-party packages (and the standard library's modules) a run of it loads."""
    folders = [Path(folder).resolve() for folder in search_path]
    found: set[str] = set()
    try:
        statements = [_statements(ast.parse(text))]
    except (SyntaxError, ValueError, RecursionError):
        return found
    statements += [_file_statements(file) for file in reached_files(path, text, search_path, package)]
    for imports in filter(None, statements):
        for level, module, _names in imports:
            top = module.partition(".")[0]
            if level == 0 and top and top not in found and not _absolute(top, folders):
                found.add(top)
    return found
