"""The worker process: ``python -m ms_migrate.verify.worker --memory BYTES`` with a job on stdin.

One worker serves one mode. It pays ``import mindspore`` once, then runs every site of every file
in the job and reports each on the protocol stream as a JSON line:

    {"event": "ready"}                        MindSpore imported, device and mode set
    {"event": "begin", "site": 7}             the parent starts this site's timeout
    {"event": "result", "site": 7, ...}       verdict, differences, reason
    {"event": "fatal", "reason": "..."}       nothing can run here (no MindSpore, no device)

The protocol stream is a duplicate of the original stdout; fd 1 itself is pointed at stderr, so
whatever user code prints (from Python or C++) cannot corrupt it.

BEFORE and AFTER are imported from temporary copies under distinct module names
(``_msm_before_3``, ``_msm_after_3``), registered in ``sys.modules`` because GRAPH mode resolves a
Cell's globals through its module.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import traceback
from types import ModuleType
from typing import IO, Any, Callable, Optional

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


class Versions:
    """Imports one file pair's two versions on first use and remembers success or failure."""

    def __init__(self, file_job: dict, reset: Callable[[], None], describe: Callable[[BaseException], str]):
        self.job = file_job
        self.reset = reset
        self.describe = describe
        self.loaded: dict[str, Any] = {}

    def __call__(self, label: str) -> ModuleType:
        from ms_migrate.verify.harness import ImportFailure

        if label not in self.loaded:
            self.loaded[label] = self._import(label)
        value = self.loaded[label]
        if isinstance(value, str):
            raise ImportFailure(value)
        return value

    def _import(self, label: str) -> Any:
        name = self.job[f"{label}_module"]
        path = self.job[label]
        for directory in reversed(self.job["search_path"]):
            if directory not in sys.path:
                sys.path.insert(0, directory)
        self.reset()
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        except BaseException as error:  # SystemExit included: a module that exits cannot be run
            if isinstance(error, KeyboardInterrupt):
                raise
            sys.modules.pop(name, None)
            return f"{label.upper()} raised at import: {self.describe(error)}"
        self.reset()
        return module


def _load_factory(spec: str, search_path: list[str]) -> Callable[[Any], Any]:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"factory {spec!r} is not 'module:function'")
    for directory in reversed(search_path):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    return getattr(importlib.import_module(module_name), attribute)


def serve(job: dict, channel: Channel) -> None:
    try:
        import mindspore as ms
    except Exception as error:
        channel.send(event="fatal", reason=f"MindSpore cannot be imported by {sys.executable}: {error}")
        return
    device = job["device"]
    try:
        ms.set_device(device)
    except Exception as error:
        reason = f"device {device} is not available in this MindSpore build ({_gist(str(error))})"
        channel.send(event="fatal", reason=reason)
        return
    os.environ["MS_MIGRATE_MODE"] = job["mode"]  # the convention the project's fixtures read
    os.environ["MS_MIGRATE_DEVICE"] = device
    from ms_migrate.verify import harness

    factories: dict[str, tuple[Optional[Callable[[Any], Any]], str]] = {}
    channel.send(event="ready")
    for file_job in job["files"]:
        labels = {file_job["before"]: file_job["before_label"], file_job["after"]: file_job["after_label"]}
        describe = describer(labels)
        context = harness.Context(
            mode=job["mode"],
            steps=job["steps"],
            rtol=job["rtol"],
            atol=job["atol"],
            seed=job["seed"],
            describe=describe,
        )
        spec = file_job.get("factory")
        if spec:
            if spec not in factories:
                try:
                    factories[spec] = (_load_factory(spec, file_job["search_path"]), "")
                except Exception as error:
                    factories[spec] = (None, f"factory {spec!r} cannot be loaded: {describe(error)}")
            context.factory, context.factory_problem = factories[spec]
        modules = Versions(file_job, context.reset, describe)
        for site in file_job["sites"]:
            channel.send(event="begin", site=site["id"])
            try:
                result = harness.run_site(site, context, modules)
            except Exception as error:  # a bug here must not cost the other sites their results
                result = harness.Outcome(
                    harness.Verdict.NOT_RUN, f"internal error in the harness: {describe(error)}"
                ).to_json("none")
            channel.send(event="result", site=site["id"], **result)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ms_migrate.verify.worker")
    parser.add_argument("--memory", type=int, default=0, help="address-space limit in bytes (0: none)")
    arguments = parser.parse_args(argv)
    apply_memory_limit(arguments.memory)
    channel = Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)
    job = json.loads(sys.stdin.read())
    serve(job, channel)


if __name__ == "__main__":
    main()
