"""Cost per site in one file: 50, 400 and 3,200 GradOperation train steps, each migrated to 2.8
and set against a bare libcst parse of the same text in the same process.

Run: .venv/bin/python benchmarks/bench_sites.py [SITES ...]

Goal: linear. The per-site cost of the largest file is at most 1.3x that of the smallest. Before
``edits_between`` anchored its diff on unique lines and the project index gathered a file's calls
once, 200 sites took 30 s and 400 took 190 s (quadratic: a whole-text SequenceMatcher, and a
walk of the whole tree per site).
"""

from __future__ import annotations

import sys
import time

import libcst as cst
from bench_scaling import HEADER, STEP  # the same train step, one file of N of them

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version

SITES = (50, 400, 3_200)
GOAL = 1.3  # largest / smallest per-site cost


def source(sites: int) -> str:
    return HEADER + "".join(STEP.format(index=index) for index in range(sites))


def main(sizes: tuple[int, ...] = SITES) -> None:
    print(f"{'sites':>6} {'lines':>7} {'parse s':>8} {'migrate s':>10} {'ms/site':>8} {'ratio':>6}")
    per_site: list[float] = []
    for sites in sizes:
        text = source(sites)
        started = time.perf_counter()
        cst.parse_module(text)
        parse = time.perf_counter() - started
        started = time.perf_counter()
        result = migrate_text(text, Version(2, 8))
        migrate = time.perf_counter() - started
        assert result.converted == sites, (result.converted, sites)
        per_site.append(migrate / sites)
        print(
            f"{sites:>6} {text.count(chr(10)):>7} {parse:>8.2f} {migrate:>10.2f}"
            f" {1000 * migrate / sites:>8.2f} {migrate / parse:>6.1f}",
            flush=True,
        )
    growth = per_site[-1] / per_site[0]
    verdict = "linear" if growth <= GOAL else f"superlinear (goal: at most {GOAL}x)"
    print(f"per-site cost, largest / smallest: {growth:.2f}x: {verdict}")


if __name__ == "__main__":
    main(tuple(int(argument) for argument in sys.argv[1:]) or SITES)
