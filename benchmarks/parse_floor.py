"""What any run of `check` over a tree pays at least: `ast.parse` and `compile` of the files
that pass a selected rule's prefilter, in one process, each tree dropped after use, with the
garbage collector paced as in a run.

Run: .venv/bin/python benchmarks/parse_floor.py TREE [--target-version 2.10]

Every file a prefilter lets through is parsed and compiled by the engine's precheck before any
rule reads it, so this time, divided by the number of cores, bounds `check`'s wall time from below
(see docs/performance.md, "Where `check`'s time goes now, and its floor").
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import time
import warnings
from pathlib import Path

from ms_migrate.application.collector import paced_for_a_run
from ms_migrate.application.runner import _any_applies, rules_of_kind
from ms_migrate.core.engine import UPGRADE_KINDS
from ms_migrate.facts.versions import Version
from ms_migrate.files import sources

_PYTHON_REJECTS = (SyntaxError, ValueError, RecursionError)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--target-version", default="2.10")
    options = parser.parse_args()
    target = Version.parse(options.target_version)
    applies = _any_applies(tuple(rules_of_kind(UPGRADE_KINDS)), target)
    paths = [path for path in sources.discover([options.tree]) if sources.is_python_source(path)]
    texts = []
    for path in paths:
        try:
            text = sources.read_source(path).text
        except sources.SourceError:
            continue
        if applies(text):
            texts.append(text)
    warnings.simplefilter("ignore")  # the user's own SyntaxWarnings
    parsing = compiling = 0.0
    with paced_for_a_run():  # the collector's pace of a real run (ms_migrate.application.collector)
        for text in texts:
            started = time.perf_counter()
            try:
                tree = ast.parse(text)
            except _PYTHON_REJECTS:
                continue
            parsed = time.perf_counter()
            with contextlib.suppress(*_PYTHON_REJECTS):
                compile(tree, "<input>", "exec", dont_inherit=True)
            parsing, compiling = parsing + parsed - started, compiling + time.perf_counter() - parsed
            del tree
    print(
        f"{len(texts)} of {len(paths)} files pass a prefilter (target {target}); one process: "
        f"ast.parse {parsing:.2f} s, compile of the parsed trees {compiling:.2f} s, "
        f"together {parsing + compiling:.2f} s"
    )


if __name__ == "__main__":
    main()
