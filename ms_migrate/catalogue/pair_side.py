"""Run one side of a release pair's proof inside a runtime and print what it computed.

``python -m ms_migrate.catalogue.pair_side`` reads a JSON list of ``{"name": dotted, "call":
expression}`` on standard input; for each, it binds ``op`` to the object ``dotted`` names, runs
the expression with the sample inputs below in scope, and prints one JSON line: the outputs as
nested lists with their dtypes, or the error. The same inputs on every release: numpy arrays made
from a fixed seed, and a PNG of the sample image (lossless, so every release decodes the same
pixels).

Imports: the standard library, numpy and MindSpore only, as this runs in per-version environments.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any


def _quiet() -> None:
    os.environ.setdefault("GLOG_v", "3")
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)


def sample_inputs() -> dict[str, Any]:
    import numpy as np

    rng = np.random.RandomState(7)
    image = rng.randint(0, 256, (24, 32, 3)).astype(np.uint8)
    png = b""
    try:
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="PNG")
        png = buffer.getvalue()
    except ImportError:  # no Pillow in this runtime: the Decode cases report it
        pass
    return {
        "np": np,
        "image": image,
        "png": np.frombuffer(png, dtype=np.uint8),
        "floats": rng.standard_normal((4, 6)).astype(np.float32),
        "labels": np.array([0, 3, 1, 4], dtype=np.int32),
        "vector": np.arange(6, dtype=np.int32),
    }


def _plain(value: Any) -> Any:
    """Outputs as JSON: arrays as {"dtype", "values"}, tuples and lists element-wise."""
    import numpy as np

    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if hasattr(value, "asnumpy"):
        value = value.asnumpy()
    if isinstance(value, np.ndarray) or np.isscalar(value):
        array = np.asarray(value)
        return {"dtype": str(array.dtype), "shape": list(array.shape), "values": array.tolist()}
    return repr(value)


def outcome(call: Any) -> str:
    """What calling ``call`` gave: "returned" and the output, or "raised" and the exception's
    type; a check's wording may change between releases, what it accepts may not."""
    try:
        return "returned " + json.dumps(_plain(call()), sort_keys=True)
    except Exception as error:
        return f"raised {type(error).__name__}"


def named(dotted: str) -> Any:
    """The object ``dotted`` names: a module's attribute, or a class's member
    (`mindspore._checkparam.Validator.check_bool`)."""
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:
        return getattr(named(module), name)


_PREAMBLE = """\
import mindspore as ms

from ms_migrate.catalogue.pair_side import named, outcome, sample_inputs

globals().update(sample_inputs())
op = named({name!r})
"""


def run_case(case: dict[str, str], folder: Path, number: int) -> dict[str, Any]:
    """The case's setup written as a module and imported (MindSpore's GRAPH mode reads a
    function's source, which code run by exec has not), then its call evaluated there."""
    name = f"pair_case_{number}"
    (folder / f"{name}.py").write_text(
        _PREAMBLE.format(name=case["name"]) + case.get("setup", ""), encoding="utf-8"
    )
    try:
        module = importlib.import_module(name)
        return {"output": _plain(eval(case["call"], vars(module)))}
    except Exception as error:  # the pair's proof reports it: a side that fails proves nothing
        return {"error": f"{type(error).__name__}: {error}".splitlines()[0][:300]}


def _on_cpu() -> None:
    """1.x runtimes are GPU builds run on CPU: say so before anything compiles."""
    import mindspore as ms

    if hasattr(ms, "set_device"):
        ms.set_device("CPU")
    else:
        ms.set_context(device_target="CPU")


def main() -> None:
    _quiet()
    _on_cpu()
    cases = json.loads(sys.stdin.read())
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, scratch)
        for number, case in enumerate(cases):
            sys.stdout.write(json.dumps(run_case(case, Path(scratch), number)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
