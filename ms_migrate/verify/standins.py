"""Stand-ins for the third-party packages a version imports and the runtime lacks.

A model zoo's file imports more than its train step needs: `import pandas` for a report,
`from easydict import EasyDict` for a config it never builds in the step, `import cv2` for a
dataset. Measured on public repositories never used in development, a package missing from
the runtime was the first reason verify could not run a converted site (19 of 46). Where the
version's import fails on such a package (one no folder of the project holds, and not
MindSpore), the worker imports the version again with a stand-in module for it: every name
taken from it is a placeholder that raises ``StandInUsed``, naming the package, as soon as the
code calls it, indexes it, iterates it, derives a class from it or reads its truth. A site whose
run never touches the package is run for real and its verdict says which packages were stood in
for; one that touches it cannot run, and says why. BEFORE and AFTER import the same packages,
so both stand in alike.

The stand-ins belong to one file pair: the worker hands ``StandIns.activate`` the names of the
pair it runs, and a stand-in no longer named leaves ``sys.modules``, so another file that
imports the package finds it missing for itself and is told so.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any, NoReturn, Optional, TypeVar

# More than this many missing packages in one file: it is not a train step with a stray import.
MAX_STANDINS = 8


class StandInUsed(RuntimeError):
    """The code used a name of a package that only a stand-in provides here."""


class _Absent:
    """A name taken from a stand-in module: any use of it raises ``StandInUsed``."""

    def __init__(self, dotted: str) -> None:
        object.__setattr__(self, "_dotted", dotted)

    def __getattr__(self, name: str) -> _Absent:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # what copy, pickle and inspect probe for: absent
        return type(self)(f"{self._dotted}.{name}")

    def _why(self) -> str:
        top = self._dotted.split(".")[0]
        finder = _installed.get(StandIns)
        if finder is not None and top not in finder.allowed and finder._allows(self._dotted, finder.allowed):
            return "the project builds that module from its sources, and it is not built here"
        return f"{top!r} is not installed in this runtime"

    def _used(self, *_: object, **__: object) -> NoReturn:
        raise StandInUsed(
            f"{self._dotted} was used, and {self._why()} "
            "(ms-migrate stood in for it: the import alone was not enough to run this site)"
        )

    __call__ = __getitem__ = __iter__ = __len__ = __bool__ = __mro_entries__ = _used
    # What issubclass and isinstance read of an object that is not a class: a stand-in is a
    # subclass of nothing and has no instances, so a registry that files classes by their base
    # (MindSpore's own `@vm_impl_getters.register(P.ResizeBilinear)`) passes over it.
    __bases__: tuple = ()
    __setattr__ = __enter__ = __add__ = __mul__ = __eq__ = __hash__ = _used  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<stand-in for {self._dotted}>"


# Names of a stood-in package that only tag what they decorate: pytest's marks and fixtures give
# back the function or class itself, so a test module's `@pytest.mark.skipif(...)` and
# `non_graph_engine = pytest.mark.skipif(...)` at import do what pytest would do with them.
TAGS = frozenset({"pytest.mark", "pytest.fixture"})


class _Tag:
    """A mark or a fixture decorator of a stood-in pytest: applied, it returns what it decorates;
    given its parameters (`skipif(cond, reason=...)`), the decorator that then does so. As pytest
    decides: a single function or class, and nothing else, is what it decorates."""

    def __init__(self, dotted: str) -> None:
        self._dotted = dotted

    def __getattr__(self, name: str) -> _Tag:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Tag(f"{self._dotted}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and (inspect.isfunction(args[0]) or inspect.isclass(args[0])):
            return args[0]
        return self

    def __repr__(self) -> str:
        return f"<stand-in for {self._dotted}, which leaves what it decorates as it is>"


class _StandInModule(ModuleType):
    placeholder: type[_Absent] = _Absent

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        dotted = f"{self.__name__}.{name}"
        return _Tag(dotted) if dotted in TAGS else self.placeholder(dotted)


class _Loader(importlib.abc.Loader):
    def __init__(self, module_type: type[_StandInModule] = _StandInModule) -> None:
        self.module_type = module_type

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = self.module_type(spec.name)
        module.__path__ = []  # a package: `import pkg.sub` and `from pkg.sub import x` work too
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None


class StandIns(importlib.abc.MetaPathFinder):
    """The finder of the stand-in modules allowed now, last on ``sys.meta_path``: a package the
    runtime has is always found before it."""

    def __init__(self) -> None:
        self.allowed: frozenset[str] = frozenset()
        self._loader = _Loader()

    def find_spec(
        self, fullname: str, path: Optional[Iterable[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if not self._allows(fullname, self.allowed):
            return None
        return importlib.machinery.ModuleSpec(fullname, self._loader, is_package=True)

    @staticmethod
    def _allows(fullname: str, allowed: frozenset[str]) -> bool:
        """A package's stand-in serves its modules too; a project's unbuilt module (dotted) its own."""
        parts = fullname.split(".")
        return any(".".join(parts[:end]) in allowed for end in range(1, len(parts) + 1))

    def activate(self, names: Iterable[str]) -> None:
        """Allow the stand-ins of ``names`` (one file pair's), and only those."""
        allowed = frozenset(names)
        if allowed == self.allowed:
            return
        for name, module in list(sys.modules.items()):
            if isinstance(module, _StandInModule) and not self._allows(name, allowed):
                del sys.modules[name]
        self.allowed = allowed


_installed: dict[type, StandIns] = {}
Finder = TypeVar("Finder", bound=StandIns)


def finder(kind: type[Finder] = StandIns) -> Finder:  # type: ignore[assignment]
    """The worker's finder of ``kind``, on ``sys.meta_path`` from the first call."""
    if kind not in _installed:
        _installed[kind] = kind()
        sys.meta_path.append(_installed[kind])
    return _installed[kind]  # type: ignore[return-value]


def listed(names: Iterable[str]) -> tuple[str, str]:
    """The names, sorted and joined, and the pronoun for them ("it", "them")."""
    ordered = sorted(names)
    return ", ".join(ordered), "them" if len(ordered) > 1 else "it"


def describe(names: Iterable[str]) -> str:
    """What a verdict says of the packages stood in for (and of a project's modules, unbuilt or
    absent from its copy, named by their dotted names)."""
    names = set(names)
    packages = {name for name in names if "." not in name}
    built = names - packages
    said = []
    if packages:
        shown, them = listed(packages)
        tags = sorted(tag for tag in TAGS if tag.split(".")[0] in packages)
        decorators = f" ({' and '.join(tags)} stood in as decorators that leave what they decorate as it is)"
        said.append(
            f"stood in for {shown} (not installed in this runtime): the file imports {them}, "
            f"and this site's run never used {them}" + (decorators if tags else "")
        )
    for kind, why in (
        (UNBUILT, "the project compiles {} from its sources, not built here"),
        (ABSENT, ABSENT_SAID),
    ):
        of_kind = {name for name in built if PROJECT_MODULES.get(name, UNBUILT) == kind}
        if of_kind:
            shown, them = listed(of_kind)
            said.append(
                f"stood in for {shown} ({why.format(them)}): "
                f"the file imports {them}, and this site's run never used {them}"
            )
    return "; ".join(said)


# A project's module stood in for by its dotted name: one it compiles and has not built, or one
# its copy does not hold; the worker notes which (``worker.Versions._standable``).
UNBUILT, ABSENT = "unbuilt", "absent"
PROJECT_MODULES: dict[str, str] = {}
ABSENT_SAID = "its package is in the project, and no file of the project holds {}"
