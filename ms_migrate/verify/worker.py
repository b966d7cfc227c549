"""The worker process: ``python -m ms_migrate.verify.worker --memory BYTES``.

It pays ``import mindspore`` once, then runs tasks until its stdin ends. The first stdin line is
the setup (device, steps, tolerances, the files and their sites); each further line is a task,
``{"site": 7, "mode": "graph"}``. The mode is set per task with ``set_context``, so one worker
serves both modes and the parent can keep every core busy. Replies, one JSON line each:

    {"event": "ready"}                               MindSpore imported and the device set
    {"event": "importing", "what": "BEFORE", ...}    a user module's import starts
    {"event": "imported"}                            ... and has finished (or raised)
    {"event": "result", "site": 7, "mode": ...}      verdict, differences, reason
    {"event": "fatal", "reason": "..."}              nothing can run here (no MindSpore, no device)

The import events let the parent hold an import to its own, shorter limit: a module that loops
or waits forever at import is reported as such in seconds, not after the site's whole timeout.

The reply stream is a duplicate of the original stdout; fd 1 itself is pointed at stderr, so
whatever user code prints (from Python or C++) cannot corrupt it.

BEFORE and AFTER are imported from temporary copies under distinct module names
(``_msm_before_3``, ``_msm_after_3``), registered in ``sys.modules`` because GRAPH mode resolves a
Cell's globals through its module.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import sys
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Callable, Optional

from ms_migrate.verify.leftovers import die_with_parent
from ms_migrate.verify.limits import apply_memory_limit


class Channel:
    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def send(self, **event: Any) -> None:
        self.stream.write(json.dumps(event) + "\n")
        self.stream.flush()


def _first_line(text: str) -> str:
    """The first line that says something: MindSpore opens with rules and "- Section:" headers."""
    for line in text.splitlines():
        line = line.strip()
        if line.strip("-= ") and not (line.startswith("- ") and line.endswith(":")):
            return line
    return ""


def _gist(text: str, limit: int = 120) -> str:
    """Whole sentences of the first line, up to about ``limit`` characters (MindSpore is verbose)."""
    kept = ""
    for sentence in _first_line(text).split(". "):
        candidate = f"{kept}. {sentence}" if kept else sentence
        if kept and len(candidate) > limit:
            break
        kept = candidate
    return kept.rstrip(".")


def describer(labels: dict[str, str]) -> Callable[[BaseException], str]:
    """Turns an exception into one line: type, first message line, and the user's file and line."""

    def describe(error: BaseException) -> str:
        message = f"{type(error).__name__}: {_gist(str(error), 160)}".rstrip(": ")
        where = ""
        for frame in traceback.extract_tb(error.__traceback__):
            if frame.filename in labels:
                where = f" ({labels[frame.filename]}:{frame.lineno})"
        if isinstance(error, SyntaxError) and error.filename in labels:
            where = f" ({labels[error.filename]}:{error.lineno})"
        text = message + where
        for temporary, label in labels.items():
            text = text.replace(temporary, label)
        return text

    return describe


Notify = Callable[..., None]  # Channel.send: the parent hears when an import starts and ends


class Versions:
    """Imports one file pair's two versions on first use and remembers success or failure."""

    def __init__(
        self,
        file_job: dict,
        reset: Callable[[], None],
        describe: Callable[[BaseException], str],
        notify: Notify,
        projects: ProjectModules,
    ):
        self.job = file_job
        self.projects = projects
        self.reset = reset
        self.describe = describe
        self.notify = notify
        self.loaded: dict[str, Any] = {}
        self.stood_in: set[str] = set()  # the packages this pair's imports are given stand-ins for
        self.removed: set[str] = set()  # the MindSpore modules and names a release removed, stood in for
        self.device_asked: list[str] = []  # the device calls its imports made, left out
        self.exited: list[str] = []  # "BEFORE:158": a version whose import ended in exit(0)

    def __call__(self, label: str) -> ModuleType:
        from ms_migrate.verify.harness import ImportFailure

        if label not in self.loaded:
            self.loaded[label] = self._import(label)
        value = self.loaded[label]
        if isinstance(value, str):
            raise ImportFailure(value)
        return value

    def _import(self, label: str) -> Any:
        """The version's module, or why it cannot be imported. A third-party package it imports
        and the runtime lacks is stood in for (``ms_migrate.verify.standins``), and so is a
        MindSpore module or name a release removed (``ms_migrate.verify.removed_names``), and the
        import tried again."""
        from ms_migrate.verify import removed_names, standins

        while True:
            self.activate()
            outcome = self._import_once(label)
            if isinstance(outcome, ModuleType):
                return outcome
            missing = self._standable(outcome)
            if missing is not None and len(self.stood_in) < standins.MAX_STANDINS:
                self.stood_in.add(missing)
                continue
            gone = self._removed(outcome)
            if gone is not None and len(self.removed) < removed_names.MAX_REMOVED:
                self.removed.add(gone)
                continue
            return self._failure(outcome, label)

    def activate(self) -> None:
        """This pair's roots first on the path, its stand-ins (and no other pair's) allowed, and
        the release-fixed texts of the project modules it reaches in place of their files."""
        from ms_migrate.verify import removed_names, standins
        from ms_migrate.verify.overlay import overlay

        if self.job.get("overlay"):
            overlay().add(self.job["overlay"])
        _installed_first(self.job.get("installed", {}).get(os.path.abspath(sys.executable)))
        self.projects.activate(self.job["search_path"])
        standins.finder().activate(self.stood_in)
        removed_names.finder().activate(self.removed)

    def _import_once(self, label: str) -> Any:
        """The module, or the exception its import raised."""
        from ms_migrate.verify import device_guard

        device_guard.take_asked()
        name = self.job[f"{label}_module"]
        path = self.job[label]
        self.reset()
        self.notify(event="importing", what=label.upper(), path=self.job[f"{label}_label"])
        argv = sys.argv
        # As `python FILE` with no arguments: a module that parses the command line at import
        # (a project's config.py calling argparse) reads its defaults, not the worker's options.
        sys.argv = [self.job[f"{label}_label"]]
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except BaseException as error:  # SystemExit included: a module that exits cannot be run
            if isinstance(error, KeyboardInterrupt):
                raise
            line = _ended_well(error, path)
            if line is None:
                sys.modules.pop(name, None)
                return error
            # A script that ends in `exit(0)` (a tutorial's last line): as `python FILE` does, its
            # import ends there, and what it defined above is what runs.
            self.exited.append(f"{label.upper()}:{line}")
        finally:
            sys.argv = argv
            self.projects.record(self.job["search_path"])
            self.notify(event="imported")
        self.reset()
        self.device_asked += [asked for asked in device_guard.take_asked() if asked not in self.device_asked]
        gc.freeze()  # the module lives as long as the worker: keep it out of every collection
        return module

    def _failure(self, error: BaseException, label: str) -> str:
        return f"{label.upper()} raised at import: {self.describe(error)}{self._hint(error, label)}"

    def _standable(self, error: BaseException) -> Optional[str]:
        """The top-level package a failed import lacks, where a stand-in may take its place: not
        MindSpore (a release removed or moved it), not one a folder of the project holds (the
        path is what is wrong), and not one the runtime has (a part of it is missing). In a
        folder of the project, a module it compiles and has not built (see
        ``imports.unbuilt_module``) or that its copy does not hold (``imports.absent_module``), by
        its dotted name."""
        if not isinstance(error, ModuleNotFoundError) or not error.name:
            return None
        top = error.name.split(".")[0]
        if top in self.stood_in or top.startswith("mindspore") or top.startswith("_msm_"):
            return None
        from ms_migrate.files.project_root import project_folders
        from ms_migrate.verify import standins
        from ms_migrate.verify.imports import absent_module, holds_module, unbuilt_module

        where = Path(self.job.get("before_place", self.job["before_label"]))
        folders = project_folders(where)
        if any(holds_module(folder, top) for folder in folders):
            # The path is wrong, unless what is missing is a module the project compiles, or one
            # its copy does not hold at all.
            if error.name in self.stood_in:
                return None
            for kind, lacks in ((standins.UNBUILT, unbuilt_module), (standins.ABSENT, absent_module)):
                if lacks(folders, error.name):
                    standins.PROJECT_MODULES[error.name] = kind
                    return error.name
            return None
        try:
            if importlib.util.find_spec(top) is not None:
                return None
        except (ImportError, ValueError):
            return None
        return top

    def _removed(self, error: BaseException) -> Optional[str]:
        """The MindSpore module or name a failed import asked for, where a release removed it and
        a stand-in may take its place (one not stood in for already: that it still fails is the
        code's own doing)."""
        from ms_migrate.verify import removed_names

        dotted = removed_names.asked(error)
        if dotted is None:
            return None
        gone = removed_names.removed(dotted, _runtime_version())
        return gone if gone is not None and gone not in self.removed else None

    def project_module(self, name: str) -> ModuleType:
        """A module of the project by its dotted name (the file that defines a train step's
        network), imported as the versions' own imports would: with the file's roots on the path."""
        self.activate()
        argv = sys.argv
        sys.argv = [name]
        try:
            return importlib.import_module(name)
        finally:
            sys.argv = argv
            self.projects.record(self.job["search_path"])

    def _hint(self, error: BaseException, label: str) -> str:
        """For a MindSpore name the release lacks: that it was removed or moved. For another
        module that cannot be found: the python-path entry that would find it."""
        if not isinstance(error, ImportError) or not error.name:
            return ""
        from ms_migrate.verify.imports import missing_module_hint, removed_name_hint

        removed = removed_name_hint(error.name, str(error), _runtime_version() or "(this release)")
        if removed:
            return f" ({removed})"
        if not isinstance(error, ModuleNotFoundError):
            return ""

        where = Path(self.job.get(f"{label}_place", self.job[f"{label}_label"]))
        hint = missing_module_hint(
            error.name, where, self.job["search_path"], self.job.get("project_root"), sys.executable
        )
        return f" ({hint})" if hint else ""


def _runtime_version() -> str:
    return str(getattr(sys.modules.get("mindspore"), "__version__", ""))


def _ended_well(error: BaseException, path: str) -> Optional[int]:
    """The line of ``path`` whose `exit(0)` / `sys.exit()` ended its import; None for any other
    exception, or an exit with a failing status."""
    if not isinstance(error, SystemExit) or error.code not in (0, None):
        return None
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
    return lines[-1] if lines and lines[-1] is not None else None


_INSTALLED_FOR: list[str] = []  # the folders --install-requirements made for the pair now served
_EVER_INSTALLED: list[str] = []  # every such folder this worker put on its path, as a prefix


def _installed_first(folders: Optional[list[str]]) -> None:
    """The folders of what the pair's requirements name on the path, after the runtime's own
    packages (MindSpore and numpy stay the runtime's), and no other pair's."""
    folders = list(folders or ())
    if folders == _INSTALLED_FOR:
        return
    for previous in _INSTALLED_FOR:
        if previous in sys.path:
            sys.path.remove(previous)
    _INSTALLED_FOR[:] = folders
    for folder in folders:
        prefix = os.path.join(os.path.realpath(folder), "")
        if prefix not in _EVER_INSTALLED:
            _EVER_INSTALLED.append(prefix)
    sys.path.extend(folders)
    importlib.invalidate_caches()


class ProjectModules:
    """The project modules each file's imports brought into ``sys.modules``, by import roots.

    One worker verifies files of many projects, and most of them have a package named ``src``:
    the first one imported would answer every later ``from src.config import config``. So the
    modules loaded from a file's roots belong to those roots, and before a file is imported or
    run, the other roots' modules leave ``sys.modules`` and its own come back (the Cells already
    built keep their modules alive, and GRAPH mode finds a Cell's globals by its module's name).
    Its roots move to the front of ``sys.path`` too.
    """

    def __init__(self) -> None:
        self.owned: dict[tuple[str, ...], dict[str, ModuleType]] = {}
        self.active: Optional[tuple[str, ...]] = None
        # A requirements folder -> the modules of its packages that left with the last project
        # that had it: they come back, not imported again, for the next one that has it.
        self.installed: dict[str, dict[str, ModuleType]] = {}

    def activate(self, search_path: list[str]) -> None:
        key = tuple(search_path)
        if key != self.active and self.active is not None:
            # Another project's roots leave the path, so its packages cannot answer this one's.
            for directory in self.active:
                if directory not in key and directory in sys.path:
                    sys.path.remove(directory)
        for directory in reversed(search_path):
            if sys.path[:1] != [directory]:
                if directory in sys.path:
                    sys.path.remove(directory)
                sys.path.insert(0, directory)
        if key == self.active:
            return
        for other, modules in self.owned.items():
            if other != key:
                for name, module in modules.items():
                    if sys.modules.get(name) is module:
                        del sys.modules[name]
        self._forget_strays(key)
        sys.modules.update(self.owned.get(key, {}))
        importlib.invalidate_caches()
        self.active = key

    def _forget_strays(self, key: tuple[str, ...]) -> None:
        """Project modules no roots claimed (a package found through another project's root, a
        module a Cell imported while it ran) leave ``sys.modules`` too, unless they lie under
        this project's roots: measured on mindspore-ai/models, a BERT ``src`` answered LR-EGAN's
        ``from src import losses``. The versions' own copies stay (GRAPH mode resolves a Cell's
        globals through its module's name)."""
        roots = tuple(os.path.join(os.path.realpath(root), "") for root in key)
        current = tuple(os.path.join(os.path.realpath(folder), "") for folder in _INSTALLED_FOR)
        for name, module in list(sys.modules.items()):
            if "_msm_" in name or name not in sys.modules:
                continue
            where = _module_file(module)
            if not where:
                continue
            folder = next((prefix for prefix in _EVER_INSTALLED if where.startswith(prefix)), None)
            if folder is None and where.startswith(roots):
                continue
            if folder is None:
                del sys.modules[name]
            elif folder not in current:
                self._put_away(name.partition(".")[0], folder)
        for folder in current:
            for name, module in self.installed.pop(folder, {}).items():
                sys.modules.setdefault(name, module)

    def _put_away(self, top: str, folder: str) -> None:
        """A requirement's package leaves ``sys.modules`` whole, the submodules its compiled code
        made (which have no file) included, to come back as it was. Imported again instead, a
        package with compiled code breaks: the extension is not loaded twice, and opencv's
        Python code run over the one loaded before failed with `module 'cv2.dnn' has no attribute
        'DictValue'` (11 sites of mindspore-ai/models, each project importing cv2 after another)."""
        family = {name: module for name, module in sys.modules.items() if name.partition(".")[0] == top}
        self.installed.setdefault(folder, {}).update(family)
        for name in family:
            del sys.modules[name]

    def record(self, search_path: list[str]) -> None:
        """Claim the modules now loaded from files under ``search_path`` for those roots."""
        roots = tuple(os.path.join(os.path.realpath(root), "") for root in search_path)
        owned = self.owned.setdefault(tuple(search_path), {})
        installed = tuple(_EVER_INSTALLED)  # a requirement's package, even under a root, is not the project's
        for name, module in list(sys.modules.items()):
            where = _module_file(module)
            if name not in owned and where.startswith(roots) and not where.startswith(installed):
                owned[name] = module


# Never the project's: MindSpore, ms-migrate and whatever the interpreter has installed, even where
# a root holds them (a virtual environment inside the project).
_INSTALLED = tuple(
    os.path.join(os.path.realpath(folder), "")
    for folder in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
)
_NOT_PROJECT = ("mindspore", "ms_migrate", "numpy", "__main__", "__mp_main__")


def _module_file(module: Any) -> str:
    """The module's file (a namespace package's first folder); "" for one that is not the project's."""
    if getattr(module, "__name__", "").split(".")[0] in _NOT_PROJECT:
        return ""
    where = getattr(module, "__file__", None)
    if not where:
        try:
            where = next(iter(getattr(module, "__path__", None) or ()), "")
        except (KeyError, AttributeError, TypeError):
            # A namespace package recomputes its path from its parent's, which another
            # project's activation took out of sys.modules (`src.utils` without `src`).
            where = ""
    where = os.path.realpath(where) if isinstance(where, str) and where else ""
    return "" if where.startswith(_INSTALLED) else where


def _load_factory(spec: str, search_path: list[str]) -> Callable[[Any], Any]:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"factory {spec!r} is not 'module:function'")
    for directory in reversed(search_path):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    return getattr(importlib.import_module(module_name), attribute)


class FileState:
    """One file pair inside the worker: its labels, its imported versions, its factory."""

    def __init__(
        self,
        file_job: dict,
        setup: dict,
        factories: dict[str, tuple[Any, str]],
        notify: Notify,
        projects: ProjectModules,
    ) -> None:
        from ms_migrate.verify import harness

        self.job = file_job
        self.setup = setup
        labels = {file_job["before"]: file_job["before_label"], file_job["after"]: file_job["after_label"]}
        self.describe = describer(labels)
        self.sites = {site["id"]: site for site in file_job["sites"]}
        self.mode = "pynative"
        self.projects = projects
        self.versions = Versions(file_job, self._reset, self.describe, notify, projects)
        self.factory: Optional[Callable[[Any], Any]] = None
        self.factory_problem = ""
        spec = file_job.get("factory")
        if spec:
            if spec not in factories:
                notify(event="importing", what=f"the factory {spec!r}", path="")
                try:
                    factories[spec] = (_load_factory(spec, file_job["search_path"]), "")
                except Exception as error:
                    factories[spec] = (None, f"factory {spec!r} cannot be loaded: {self.describe(error)}")
                finally:
                    notify(event="imported")
            self.factory, self.factory_problem = factories[spec]
        self._harness = harness

    def _reset(self) -> None:
        self.context(self.mode).reset()

    def context(self, mode: str, recorded: Optional[dict] = None) -> Any:
        return self._harness.Context(
            mode=mode,
            steps=self.setup["steps"],
            rtol=self.setup["rtol"],
            atol=self.setup["atol"],
            seed=self.setup["seed"],
            describe=self.describe,
            factory=self.factory,
            factory_problem=self.factory_problem,
            sides=tuple(self.setup.get("sides", ("before", "after"))),
            recorded=recorded or {},
        )

    def run(self, site_id: int, mode: str, recorded: Optional[dict] = None) -> dict[str, Any]:
        self.mode = mode
        self.versions.activate()
        try:
            return self._harness.run_site(self.sites[site_id], self.context(mode, recorded), self.versions)
        except Exception as error:  # a bug here must not cost the other sites their results
            reason = f"internal error in the harness: {self.describe(error)}"
            return self._harness.Outcome(self._harness.Verdict.NOT_RUN, reason).to_json("none")


def serve(setup: dict, tasks: IO[str], channel: Channel) -> None:
    """Set up MindSpore, then run each task line ``{"site": id, "mode": m}`` until stdin ends."""
    try:
        import mindspore as ms
    except Exception as error:
        reason = (
            f"MindSpore cannot be imported by {sys.executable}: {error} (pip install 'ms-migrate[verify]')"
        )
        channel.send(event="fatal", reason=reason)
        return
    device = setup["device"]
    from ms_migrate.verify import compat

    device_id = setup.get("device_id")
    try:
        compat.set_device(ms, device, device_id)
    except Exception as error:
        named = device if device_id is None else f"{device}:{device_id}"
        reason = f"device {named} is not available in this MindSpore build ({_gist(str(error))})"
        channel.send(event="fatal", reason=reason)
        return
    os.environ["MS_MIGRATE_DEVICE"] = device
    from ms_migrate.verify import harness  # noqa: F401  (imports MindSpore's nn and ops)

    if device == "CPU":
        from ms_migrate.verify import float_status

        float_status.install()  # before any project module binds the operators
    from ms_migrate.verify import removed_ops

    removed_ops.install()
    from ms_migrate.verify import device_guard

    device_guard.install(ms)  # the device is --device's: a script's own choice is left out

    # MindSpore runs a full gc.collect() before compiling every Cell; with MindSpore's own
    # objects frozen out of the collector's view that costs ~3 ms instead of ~80 ms.
    gc.freeze()
    files = {site["id"]: file_job for file_job in setup["files"] for site in file_job["sites"]}
    states: dict[int, FileState] = {}
    factories: dict[str, tuple[Any, str]] = {}
    projects = ProjectModules()
    channel.send(event="ready")
    for line in tasks:
        if not line.strip():
            continue
        task = json.loads(line)
        site_id, mode = task["site"], task["mode"]
        os.environ["MS_MIGRATE_MODE"] = mode  # the convention the project's fixtures read
        file_job = files[site_id]
        key = id(file_job)
        if key not in states:
            states[key] = FileState(file_job, setup, factories, channel.send, projects)
        result = states[key].run(site_id, mode, task.get("recorded"))
        channel.send(event="result", site=site_id, mode=mode, runtime=ms.__version__, **result)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ms_migrate.verify.worker")
    parser.add_argument("--memory", type=int, default=0, help="address-space limit in bytes (0: none)")
    arguments = parser.parse_args(argv)
    die_with_parent()  # a verify killed outright takes its workers with it
    apply_memory_limit(arguments.memory)
    channel = Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)
    # The tasks come on a duplicate of stdin, and fd 0 reads nothing: the code under verification
    # cannot consume them, and its `exit()` (which closes sys.stdin) no longer ends the worker for
    # every other file it serves (4 sites of a public tutorial repository were lost so).
    tasks = os.fdopen(os.dup(0), "r", encoding="utf-8")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    setup = json.loads(tasks.readline())
    serve(setup, tasks, channel)


if __name__ == "__main__":
    main()
