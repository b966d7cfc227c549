"""Where a file is importable from: the package it belongs to, and the folders its imports need.

A version runs as a module of its own package (``src.models._msm_before_3`` for a copy of
``src/models/cycle_gan.py``), so that ``from .losses import X`` and ``from ..utils import y`` load
the project's real files. The folder above the top package goes on ``sys.path``, and so does the
nearest folder above the file that holds each top-level name the file imports absolutely
(``official/cv/CycleGAN`` for ``from src.config import config`` in ``src/models/cycle_gan.py``),
as a training script run from its project's root would have it. A file without relative imports
stays a top-level module: importing its package would run ``__init__.py`` files it never needed.

The parent calls ``import_place`` (it looks at the file system, it imports nothing); the worker
calls ``missing_module_hint`` when an import fails, to say which ``python-path`` entry would help.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ms_migrate.files.project_root import project_folders


@dataclass(frozen=True)
class ImportPlace:
    package: str = ""  # the dotted package of the file's folder; "" for a top-level module
    roots: tuple[str, ...] = ()  # folders to put on sys.path, nearest first


def _imports(text: str) -> tuple[int, list[str]]:
    """The deepest relative import's level, and the top-level names of the absolute imports."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return 0, []
    level, names = 0, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            level = max(level, node.level)
            if node.level == 0 and node.module:
                names.append(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
    return level, list(dict.fromkeys(names))


# Modules of the standard library: a folder of that name with no __init__.py (`/sys`, `/proc`
# at the file system's root, above a project copied without its .git) is a namespace package,
# and import finds the standard library's module first.
_STANDARD = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)


def holds_module(folder: Path, name: str) -> bool:
    """Whether import would find the module or package ``name`` in ``folder``."""
    if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
        return True
    return name not in _STANDARD and (folder / name).is_dir()


# What a folder holds when the project compiles a module into it (`python setup.py build_ext`):
# RandLA-Net's `utils/nearest_neighbors/lib/python/nearest_neighbors` is built from knn.pyx.
_BUILD_INPUTS = ("setup.py", "CMakeLists.txt", "*.pyx", "*.cpp", "*.cc", "*.cu", "*.c")


def unbuilt_module(folders: Sequence[Path], dotted: str) -> bool:
    """Whether ``dotted``, a module import did not find, is one the project builds and has not:
    its parent package is a folder of the project, which holds no source for it but holds the
    sources of a compiled extension (a setup.py, .pyx, C or C++ files)."""
    *parents, last = dotted.split(".")
    if not parents:
        return False
    for folder in folders:
        place = folder.joinpath(*parents)
        if not place.is_dir() or (place / f"{last}.py").is_file() or (place / last).is_dir():
            continue
        if any(next(place.glob(pattern), None) is not None for pattern in _BUILD_INPUTS):
            return True
    return False


# How many entries ``absent_module`` looks through for the module elsewhere in the project.
_SEARCHED = 50_000


def absent_module(folders: Sequence[Path], dotted: str) -> bool:
    """Whether ``dotted``, a module import did not find, is one the project's copy does not hold:
    its parent package is a folder of the project, and no file or folder of that name lies
    anywhere under the folder that holds the package (a file left out of the repository:
    AECRNet's `from models.edsr_model import EDSR`, beside `models/model.py`). Where one does, or
    the project is too large to look through, the path may be what is wrong: not absent."""
    *parents, last = dotted.split(".")
    if not parents or not last.isidentifier():
        return False
    holders = [folder for folder in folders if folder.joinpath(*parents).is_dir()]
    if not holders:
        return False
    seen = 0
    for _folder, subfolders, files in os.walk(holders[0]):
        seen += len(subfolders) + len(files)
        if last in subfolders or f"{last}.py" in files or seen > _SEARCHED:
            return False
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
    return True


def _package(folder: Path, level: int, ceiling: list[Path]) -> tuple[str, Optional[Path]]:
    """The dotted package of ``folder`` and the folder above its top package: up through every
    folder with an ``__init__.py``, and further (namespace packages) while a relative import of
    ``level`` dots needs more parents than that."""
    top = folder
    while (top / "__init__.py").is_file() and top.parent in ceiling:
        top = top.parent
    while len(folder.relative_to(top).parts) < level and top.parent in ceiling:
        top = top.parent
    parts = folder.relative_to(top).parts
    if len(parts) < level or not all(part.isidentifier() for part in parts):
        return "", None
    return ".".join(parts), top


def import_place(path: Path, text: str) -> ImportPlace:
    """How ``text``, the version of the file at ``path``, is best imported; see the module doc."""
    folder = path.resolve().parent
    ceiling = project_folders(folder)
    level, names = _imports(text)
    roots: list[Path] = []
    package = ""
    if level:
        package, top = _package(folder, level, ceiling)
        if top is not None:
            roots.append(top)
    for name in names:
        holder = next((place for place in ceiling if holds_module(place, name)), None)
        if holder is not None and holder != folder:
            roots.append(holder)
    return ImportPlace(package, tuple(dict.fromkeys(str(root) for root in roots)))


def roots_reached_modules_need(
    path: Path, text: str, place: ImportPlace, search_path: Sequence[str]
) -> list[str]:
    """The folders above the file at ``path`` that hold a top-level name which ``text`` or a
    project module it reaches imports absolutely and ``search_path`` does not find: MASS's
    `src/transformer/transformer_for_train.py` is a module of the package `mass.src.transformer`
    (`mass/` has an `__init__.py`), and the modules it reaches import `from src.utils import ...`,
    as its training script, run from `mass/`, has them."""
    from ms_migrate.verify.reached import third_party_imports

    ceiling = project_folders(path.resolve().parent)
    found: list[str] = []
    for name in sorted(third_party_imports(path, text, search_path, place.package)):
        holder = next((folder for folder in ceiling if holds_module(folder, name)), None)
        if holder is not None and str(holder) not in search_path:
            found.append(str(holder))
    return list(dict.fromkeys(found))


# Import names whose package on PyPI is named otherwise (the ones model zoos import).
DISTRIBUTIONS = {
    "cv2": "opencv-python-headless",
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "bs4": "beautifulsoup4",
    "Levenshtein": "python-Levenshtein",
    "google.protobuf": "protobuf",
}


def removed_name_hint(module: str, message: str, version: str) -> str:
    """For an import of MindSpore that fails (``module``, as ImportError names it, and its
    message): that the release verify runs lacks the name, and where its replacement is said. A
    missing MindSpore module is not a package to install: the release removed or moved it."""
    if module.split(".")[0] != "mindspore":
        return ""
    imported = re.search(r"cannot import name '(\w+)'", message)
    name = f"{module}.{imported.group(1)}" if imported else module
    return (
        f"MindSpore {version} has no {name}, which a release removed or moved: code written for an "
        f"older release runs on it with --before-version X.Y; `ms-migrate check --select MS211` "
        f"says what replaces the name, where anything does"
    )


def missing_module_hint(
    name: str, path: Path, search_path: list[str], project_root: Optional[str], python: str = ""
) -> str:
    """What to set when module ``name`` cannot be found for the file at ``path``: the folder above
    it that holds the module (as a ``python-path`` entry), or that no folder of the project does,
    and then the package to install into ``python`` (the interpreter that runs verify)."""
    top = name.split(".")[0]
    table = "[tool.ms-migrate.verify]"
    if project_root:
        table += f" of {Path(project_root) / 'pyproject.toml'}"
    holder = next((place for place in project_folders(path) if holds_module(place, top)), None)
    if holder is None:
        package = DISTRIBUTIONS.get(".".join(name.split(".")[:2]), DISTRIBUTIONS.get(top, top))
        install = f"`{python} -m pip install {package}`" if python else f"`pip install {package}`"
        return (
            f"no folder above {path.name} holds {top!r}: install it for the MindSpore that runs "
            f"verify ({install}), or add the folder that holds it to python-path in {table}"
        )
    if str(holder) in search_path:
        return ""  # on the path already: what is missing lies inside it, no entry brings it
    entry = os.path.relpath(holder, project_root) if project_root else str(holder)
    return f'{holder} holds {top!r}: set python-path = ["{entry}"] in {table}'
