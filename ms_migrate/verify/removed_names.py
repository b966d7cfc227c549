"""Stand-ins for the MindSpore names a release removed, where a version's import stops on one.

Code written for 1.x imports names that 2.x no longer has and that nothing replaces
(``P.ResizeBilinear``, ``mindspore.dataset.transforms.py_transforms``, ``mindspore.nn.layer.quant``)
at the top of a helper every script of the project reaches. On the runtime verify runs, the
import of BEFORE and AFTER alike fails there, although the train step never uses the name: 85
converted sites of a public copy of MindSpore's own tests stopped at ``P.ResizeBilinear`` in one
helper module, and no site of them could run.

Where a version's import fails on a MindSpore module or name that the release facts
(``rules/releases/api.json``, generated from the real releases) say an earlier release had and
this runtime lacks, the worker imports the version again with a stand-in for it, as
``standins`` does for a third-party package: every use of the stand-in (a call, an index, a
class derived from it) raises ``StandInUsed``, naming it. A site whose run never touches the
name runs for real, and its verdict names the stand-in; one that touches it cannot run, and says
why. An import that guards itself (``try: ... except ImportError:`` with a fallback) does not
fail, so no stand-in takes its fallback's place. A name no release checked has (a typo, a name
older than 1.7) is not stood in for: the facts cannot tell it from a mistake. The upgraded file
still needs the name replaced (or removed) to run on the target; MS211 reports it.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Optional

from ms_migrate.verify import standins
from ms_migrate.verify.standins import StandIns, _Absent, _Loader, _StandInModule

MAX_REMOVED = 8  # more than this in one file pair: not a stray import of a helper

_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
_NO_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")


def _runtime() -> str:
    return str(getattr(sys.modules.get("mindspore"), "__version__", "this MindSpore"))


class _Removed(_Absent):
    """A name taken from a stood-in MindSpore module or name: any use of it raises."""

    def _why(self) -> str:
        return f"MindSpore {_runtime()} no longer has it (a release removed it)"


class _RemovedModule(_StandInModule):
    placeholder = _Removed


def asked(error: BaseException) -> Optional[str]:
    """The MindSpore module or name (dotted) that a failed import asked for and did not find."""
    if isinstance(error, ModuleNotFoundError):
        return error.name if error.name and error.name.split(".")[0] == "mindspore" else None
    if isinstance(error, ImportError):
        match = _CANNOT_IMPORT.search(str(error))
        found = (match.group(2), match.group(1)) if match else None
    elif isinstance(error, AttributeError):
        match = _NO_ATTRIBUTE.search(str(error))
        found = (match.group(1), match.group(2)) if match else None
    else:
        return None
    if found is None or found[0].split(".")[0] != "mindspore":
        return None
    return ".".join(found)


def removed(dotted: str, version: str) -> Optional[str]:
    """``dotted``, or the module of it that a release removed, where the release facts say an
    earlier release had it and MindSpore ``version`` has not; else None."""
    from ms_migrate.facts.releases import api_facts
    from ms_migrate.facts.versions import Version

    facts = api_facts()
    try:
        runtime = Version.parse(version)
    except ValueError:
        return None
    if facts is None:
        return None
    module = facts.missing_module(dotted, runtime)
    if module is not None:
        return module if facts.last_with(module, runtime) is not None else None
    if facts.has_name(dotted, runtime) is False and facts.last_with(dotted, runtime) is not None:
        return dotted
    return None


class RemovedNames(StandIns):
    """The stood-in removed modules allowed now (a finder last on ``sys.meta_path``, after every
    real one), and the stood-in names set on the modules MindSpore still has."""

    def __init__(self) -> None:
        super().__init__()
        self._loader = _Loader(_RemovedModule)
        self.names: set[str] = set()  # "module.name" set as attributes, by us

    def find_spec(
        self, fullname: str, path: Optional[Iterable[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if not any(fullname == name or fullname.startswith(name + ".") for name in self.allowed):
            return None
        return importlib.machinery.ModuleSpec(fullname, self._loader, is_package=True)

    def activate(self, names: Iterable[str]) -> None:
        """Allow the stand-ins of ``names`` (one file pair's), and only those."""
        wanted = frozenset(names)
        for name, module in list(sys.modules.items()):
            if isinstance(module, _RemovedModule) and not any(
                name == kept or name.startswith(kept + ".") for kept in wanted
            ):
                del sys.modules[name]
                parent, _, short = name.rpartition(".")
                if isinstance(getattr(sys.modules.get(parent), short, None), _RemovedModule):
                    delattr(sys.modules[parent], short)
        for dotted in sorted(self.names - wanted):
            module_name, _, short = dotted.rpartition(".")
            module = sys.modules.get(module_name)
            if module is not None and isinstance(getattr(module, short, None), _Removed):
                delattr(module, short)
        self.names &= wanted
        modules = frozenset(dotted for dotted in wanted if _is_module(dotted))
        for dotted in sorted(wanted - modules - self.names):
            module_name, _, short = dotted.rpartition(".")
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            if not hasattr(module, short):
                setattr(module, short, _Removed(dotted))
                self.names.add(dotted)
        self.allowed = modules


def _is_module(dotted: str) -> bool:
    from ms_migrate.facts.releases import api_facts

    facts = api_facts()
    return facts is not None and dotted in facts.modules


def finder() -> RemovedNames:
    """The worker's finder of removed modules, on ``sys.meta_path`` from the first call."""
    return standins.finder(RemovedNames)


def describe(names: Iterable[str]) -> str:
    """What a verdict says of the removed names stood in for."""
    shown, them = standins.listed(names)
    return (
        f"stood in for {shown} (MindSpore {_runtime()} no longer has {them}; MS211 reports {them}): "
        f"the modules the file imports name {them}, and this site's run never used {them}"
    )
