"""List the public names of the installed MindSpore: every module a user can import and what it holds.

Run inside a runtime (``python -m ms_migrate.catalogue api-names``); the release facts in
``rules/releases/`` are the differences between these lists, one per release
(``ms_migrate.catalogue.releases``). A diff of what two real releases export is what says that a
name is gone, where a catalogue built from what a release still marks deprecated cannot: a removed
name is in no catalogue of the release that removed it.

What is listed: each importable module under ``mindspore`` whose dotted path has no segment that
starts with an underscore (plus ``PRIVATE_BUT_USED``, private modules that public code imports),
and in each, the attributes without a leading underscore that are not other packages' modules or
objects (``np``, ``wraps``). Class members are not listed, but for a class named on the command
line (a declared move of kind "members": 1.x's ``Validator``, whose checks 2.0 made functions of
its module). For the modules named on the command line, the call signature of each callable is
listed too (``str(inspect.signature(...))``), so that a moved name can be compared with its
replacement.

Imports: the standard library and MindSpore only, as this runs in per-version environments
(Python 3.9 for the 1.x releases).
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import pkgutil
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any, Optional

from ms_migrate.facts.public_modules import SKIPPED
from ms_migrate.facts.return_probes import DRAWS, GIVES, RETURN_PROBES, RETURNS

# Private modules that public code imports all the same (mindspore-ai/models: `Validator` from
# `mindspore._checkparam` in 60-odd files).
PRIVATE_BUT_USED = ("mindspore._checkparam",)


def _quiet() -> None:
    os.environ.setdefault("GLOG_v", "3")
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)


def _public_path(name: str) -> bool:
    if name in PRIVATE_BUT_USED:
        return True
    parts = name.split(".")
    return not any(part.startswith("_") for part in parts) and not name.startswith(SKIPPED)


def _own(value: Any) -> bool:
    """A value MindSpore defines or re-exports as its own, not another package's module or object.
    A MindSpore module imported under another name is listed there too (2.10's
    `mindspore.train.serialization.Validator` is the module `mindspore._checkparam`, where 1.10
    had a class: an import of it still works)."""
    if inspect.ismodule(value):
        return value.__name__.startswith("mindspore")
    owner = getattr(value, "__module__", None)
    if isinstance(owner, str) and (inspect.isclass(value) or inspect.isroutine(value)):
        return owner.startswith(("mindspore", "_mindspore", "mindspore_"))
    return True


def _facade(module: Any, compared: tuple[str, ...]) -> bool:
    """A module users import names from: a package, or one of the documented namespaces
    (`mindspore.ops.functional`). Another module's imports of functions and classes defined
    elsewhere (`load_checkpoint` in `mindspore.train.model`) are its own business, not listed,
    unless its `__all__` exports them (2.x's `mindspore.nn.metrics`, a module that re-exports
    `mindspore.train.metrics`), or it is one a declared move compares (``compared``: 1.x's
    `c_transforms` hands out `Inter` from `vision.utils`)."""
    from ms_migrate.catalogue.scan import PUBLIC_MODULES

    return hasattr(module, "__path__") or module.__name__ in (*PUBLIC_MODULES, *compared)


def _foreign_of(module: Any, listed: list[str]) -> list[str]:
    """The public attributes of a facade module that are not listed: another package's objects it
    holds (`mindspore.multiprocessing.Pool`, a protobuf class), and lazy ones that failed to load
    here. They are there to use all the same, so a name of the module that no release lists and
    none holds so is one no release has (MS211)."""
    kept = set(listed)
    return sorted(name for name in dir(module) if not name.startswith("_") and name not in kept)


def _names_of(module: Any, compared: tuple[str, ...] = ()) -> list[str]:
    facade = _facade(module, compared)
    exported = set(getattr(module, "__all__", None) or ())
    names = []
    for attribute in dir(module):
        if attribute.startswith("_"):
            continue
        try:
            value = getattr(module, attribute)
        except Exception:  # a lazy attribute that fails to load is not there to use
            continue
        if not _own(value):
            continue
        defined_in = getattr(value, "__module__", None)
        imported = (inspect.isclass(value) or inspect.isroutine(value)) and defined_in != module.__name__
        if facade or not imported or attribute in exported:
            names.append(attribute)
    return sorted(names)


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except BaseException:  # a module that fails to import (a missing library, an exit) is absent
        return None


_OPAQUE = "(*args, **kwargs)"


def _through_closures(function: Any) -> Any:
    """The function a decorator without ``functools.wraps`` closes over (1.x's
    ``deprecator_factory`` wraps the dataset ops' ``__init__`` so): the first callable in its
    closure, followed while the signature says nothing."""
    for _ in range(8):
        if str(inspect.signature(function)) != _OPAQUE:
            break
        inner = [
            cell.cell_contents
            for cell in function.__closure__ or ()
            if inspect.isfunction(cell.cell_contents)
        ]
        if not inner:
            break
        function = inner[0]
    return function


# A default object's repr names where it lies in memory (`<... object at 0x7f02...>`), which
# differs on every run: left out, so that the facts are the same each time they are made.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _parameters(signature: inspect.Signature) -> list[list[Any]]:
    """Each parameter as ``[name, kind, default]``: kind as ``inspect`` names it
    (``POSITIONAL_OR_KEYWORD``), default as its ``repr``, or None where there is none."""
    return [
        [
            parameter.name,
            parameter.kind.name,
            None
            if parameter.default is inspect.Parameter.empty
            else _ADDRESS.sub("", repr(parameter.default)),
        ]
        for parameter in signature.parameters.values()
    ]


def _signature(value: Any) -> Optional[list[list[Any]]]:
    try:
        if inspect.isclass(value) and inspect.isfunction(value.__init__):
            return _parameters(inspect.signature(_through_closures(value.__init__)))[1:]
        if inspect.isfunction(value):
            return _parameters(inspect.signature(_through_closures(value)))
        return _parameters(inspect.signature(value))
    except (TypeError, ValueError):  # a builtin without text signature, or no callable at all
        return None


def _callables(module_name: str) -> Iterator[tuple[str, Any]]:
    """The public callables of one module (not its submodules), by name."""
    module = _import(module_name)
    for name in _names_of(module, (module_name,)) if module is not None else ():
        value = getattr(module, name, None)
        if callable(value) and not inspect.ismodule(value):
            yield name, value


def signatures_of(module_name: str) -> dict[str, Optional[list[list[Any]]]]:
    """``{name: [[parameter, kind, default], ...]}`` for the callables of one module; None for a
    callable whose signature cannot be read."""
    return {name: _signature(value) for name, value in _callables(module_name)}


def origins_of(module_name: str) -> dict[str, str]:
    """``{name: module}``: where each callable of one module is defined, where that is another
    module of MindSpore (`Dense`: `mindspore.nn.layer.basic`). Code reaches the same object
    through each package on that path (`mindspore.nn.layer.Dense`), which the meaning rules
    then know for the name they compare."""
    found = {}
    for name, value in _callables(module_name):
        origin = getattr(value, "__module__", None)
        if isinstance(origin, str) and origin.startswith(module_name + "."):
            found[name] = origin
    return found


def _class_named(dotted: str) -> Any:
    """The class ``module.Class`` names, or None."""
    module_name, _, name = dotted.rpartition(".")
    module = _import(module_name) if module_name else None
    found = getattr(module, name, None) if module is not None else None
    return found if inspect.isclass(found) else None


def members_of(dotted: str) -> tuple[list[str], dict[str, Optional[list[list[Any]]]]]:
    """A class's public members (an enum's members, a holder's static methods), and the
    signatures of the callable ones: for a declared move of kind "members", whose members a
    release made names of a module."""
    found = _class_named(dotted)
    if found is None:
        return [], {}
    names = sorted(name for name in dir(found) if not name.startswith("_"))
    signatures = {}
    for name in names:
        value = getattr(found, name, None)
        if callable(value) and not inspect.isclass(value):
            signatures[name] = _signature(value)
    return names, signatures


def list_names(signature_modules: tuple[str, ...] = ()) -> dict[str, Any]:
    """{"mindspore": release, "modules": {module: [name, ...]}, "signatures": {module: {...}},
    "members": {class: [name, ...]}, "foreign": {module: [name, ...]}} for every importable public
    module (``foreign``: see ``_foreign_of``), with signatures for
    ``signature_modules``; one of them that names a class has its members listed, and their
    signatures."""
    _quiet()
    root = importlib.import_module("mindspore")
    modules: dict[str, list[str]] = {}
    foreign: dict[str, list[str]] = {}
    pending = ["mindspore", *PRIVATE_BUT_USED]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen or not _public_path(name):
            continue
        seen.add(name)
        module = _import(name)
        if module is None:
            continue
        modules[name] = _names_of(module, signature_modules)
        if _facade(module, signature_modules):
            others = _foreign_of(module, modules[name])
            if others:
                foreign[name] = others
        for info in pkgutil.iter_modules(getattr(module, "__path__", None) or []):
            pending.append(f"{name}.{info.name}")
    classes = {name: members_of(name) for name in signature_modules if name not in modules}
    return {
        "mindspore": getattr(root, "__version__", ""),
        "modules": dict(sorted(modules.items())),
        "origins": {name: origins_of(name) for name in signature_modules if name in modules},
        "signatures": {
            **{name: signatures_of(name) for name in signature_modules if name in modules},
            **{name: listed[1] for name, listed in classes.items() if listed[0]},
        },
        "members": {name: listed[0] for name, listed in sorted(classes.items()) if listed[0]},
        "foreign": dict(sorted(foreign.items())),
    }


# What a release does that its names and signatures do not say, each read by running it (in this
# order: the first reads the mode before anything sets it). The meaning rules (MS220-MS222) and
# their messages read the answers from rules/releases/api.json.
PROBES = {
    "default mode": "mindspore.get_context('mode')",
    "Model.train dataset_sink_mode default": (
        "inspect.signature(mindspore.train.Model.train).parameters['dataset_sink_mode'].default"
    ),
    "load_param_into_net returns": (
        "type(mindspore.load_param_into_net(mindspore.nn.Dense(2, 2), {})).__name__"
    ),
    "BatchNorm moving variance": "batch_norm_moving_variance(mindspore)",
    # What a layer built with the drop probability says its keep probability is: not 1 - p.
    "Dropout(p=0.1).keep_prob": "mindspore.nn.Dropout(p=0.1).keep_prob",
    "set_context keys": "set_context_keys(mindspore)",
}


def batch_norm_moving_variance(mindspore: Any) -> str:
    """Which variance one training step of BatchNorm folds into its moving variance: the batch
    [[0], [2]] has a biased variance of 1 and an unbiased one of 2, so from the initial 1 with
    momentum 0.5 the moving variance becomes 1.0 or 1.5."""
    import numpy

    layer = mindspore.nn.BatchNorm1d(1, momentum=0.5)
    layer.set_train(True)
    layer(mindspore.Tensor(numpy.array([[0.0], [2.0]], numpy.float32)))
    value = float(layer.moving_variance.asnumpy()[0])
    return {1.0: "biased", 1.5: "unbiased"}.get(round(value, 4), f"neither: {value:.4f}")


def set_context_keys(mindspore: Any) -> list[str]:
    """The keys `set_context` takes: those with a setter, the context's public attributes and the
    public members of its parameter enum (where its loop looks before it raises "the keyword
    argument ... is not recognized"), and the names its own source spells (`key in
    ('enable_auto_mixed_precision',)`: deprecated, skipped, taken) or its type check lists;
    less those it says "has been removed" of (`invalid_context_dict`, 2.10's `grad_for_scalar`).
    Every key its docstring lists is among them, on 1.10 and 2.10 alike. Read, not set."""
    import ast
    import textwrap

    context = mindspore.context
    current = context._context()
    keys = set(getattr(current, "setters", None) or {})
    keys.update(name for name in dir(current) if not name.startswith("_"))
    parameters = getattr(context, "ms_ctx_param", None)
    if parameters is None:
        from mindspore._c_expression import ms_ctx_param as parameters
    keys.update(name for name in parameters.__members__ if not name.startswith("_"))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(context.set_context)))
    except (OSError, TypeError, SyntaxError):
        tree = ast.Module(body=[], type_ignores=[])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.fullmatch(r"[a-z][a-z0-9_]*", node.value)
        ):
            keys.add(node.value)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            keys.add(node.arg)
    keys.difference_update(getattr(context, "invalid_context_dict", None) or {})
    return sorted(keys)


PROBE_HELPERS = {
    "batch_norm_moving_variance": batch_norm_moving_variance,
    "set_context_keys": set_context_keys,
}


def result_shape(value: Any) -> str:
    """A call's result as its structure and dtypes: `(int32, float32)`, `float32`, `(float32,)`;
    shapes are left out, as they follow the arguments (which MS226 compares) more than the call."""
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(result_shape(item) for item in value) + ("," if len(value) == 1 else "") + ")"
    if hasattr(value, "asnumpy"):
        return str(value.asnumpy().dtype)
    return type(value).__name__


def _return_probes(mindspore: Any) -> dict[str, Any]:
    import numpy

    rng = numpy.random.RandomState(7)
    scope = {
        "ops": mindspore.ops,
        "floats": mindspore.Tensor(rng.standard_normal((4, 6)).astype(numpy.float32)),
        "ints": mindspore.Tensor(numpy.array([3, 1, 3, 0, 1, 2], numpy.int32)),
    }
    answers: dict[str, Any] = {}
    for name, expression in RETURN_PROBES.items():
        try:
            result = eval(expression, dict(scope))
        except Exception as error:  # a release without the name, or rejecting the call
            answers[RETURNS + name] = f"error: {type(error).__name__}"
            continue
        answers[RETURNS + name] = result_shape(result)
        if name not in DRAWS:
            answers[GIVES + name] = first_numbers(result)
    return answers


def first_numbers(value: Any) -> list[float]:
    """The first four numbers of a result's first part, to four significant digits: equal on
    two releases where the call computes the same, whatever the float noise between them."""
    while isinstance(value, (tuple, list)) and value:
        value = value[0]
    if not hasattr(value, "asnumpy"):
        return []
    return [float(f"{number:.4g}") for number in value.asnumpy().ravel()[:4].tolist()]


def run_probes() -> dict[str, Any]:
    import mindspore

    answers: dict[str, Any] = {}
    for name, expression in PROBES.items():
        try:
            scope = {"mindspore": mindspore, "inspect": inspect, **PROBE_HELPERS}
            answers[name] = eval(expression, scope)
        except Exception as error:  # a release that cannot answer says so
            answers[name] = f"error: {type(error).__name__}"
        if name == "default mode":
            _on_cpu(mindspore)
    return {**answers, **_return_probes(mindspore)}


def _on_cpu(mindspore: Any) -> None:
    """1.x runtimes are GPU builds run on CPU: say so before anything builds a network."""
    if hasattr(mindspore, "set_device"):
        mindspore.set_device("CPU")
    else:
        mindspore.set_context(device_target="CPU")


def main() -> None:
    listing = list_names(tuple(sys.argv[1:]))
    listing["probes"] = run_probes()
    sys.stdout.write(json.dumps(listing, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
