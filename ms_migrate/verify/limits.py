"""Resource limits for code that verification executes, applied inside the child process itself.

The child sets its own ``RLIMIT_AS`` first thing (``preexec_fn`` is unsafe when the parent runs
workers from threads). Script mode uses this module as a launcher:

    python -m ms_migrate.verify.limits --memory BYTES [--seed N] script.py [args...]
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Optional


def apply_memory_limit(limit_bytes: Optional[int]) -> None:
    if not limit_bytes:
        return
    try:
        import resource
    except ImportError:  # Windows: no rlimits; the timeout still applies
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit_bytes = min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, hard))


def seed_everything(seed: int, mindspore: bool) -> None:
    """Both scripts start from the same random state: unseeded initialisers then agree.

    MindSpore's parameter initialisers draw from its global seed, so two runs of a script that
    builds ``nn.Dense`` without weights would otherwise differ before any rewrite is involved.
    MindSpore is imported here only for a script that uses it anyway (the import costs seconds).
    """
    import random

    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
        if mindspore:
            import mindspore as ms

            ms.set_seed(seed)
    except ImportError:
        pass


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m ms_migrate.verify.limits")
    parser.add_argument("--memory", type=int, default=0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    arguments = parser.parse_args(argv)
    apply_memory_limit(arguments.memory)
    script = Path(arguments.script).resolve()
    if arguments.seed is not None:
        seed_everything(arguments.seed, b"mindspore" in script.read_bytes())
    sys.argv = [str(script), *arguments.args]
    sys.path[0] = str(script.parent)  # as `python script.py` would have it
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
