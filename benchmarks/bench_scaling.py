"""Cost per site: one generated file with more and more train steps, as a ratio to a bare libcst
parse of the same text in the same process.

Run: .venv/bin/python benchmarks/bench_scaling.py

Goal: linear. The ratio (migrate / parse) stays flat from 1k to 50k lines; before the per-name
indexes in rules/ms101/analysis.py, a 50,000-line file with 3,572 sites took 336 s, quadratic in
the number of sites.
"""

from __future__ import annotations

import time

import libcst as cst

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version

HEADER = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
STEP = """class Step{index}(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.optimizer.parameters)(x, y)
        self.optimizer(grads)
        return loss


"""


def source(lines: int) -> tuple[str, int]:
    per_step = STEP.count("\n")
    steps = max(1, lines // per_step)
    return HEADER + "".join(STEP.format(index=index) for index in range(steps)), steps


def main() -> None:
    print(f"{'lines':>7} {'sites':>6} {'parse s':>8} {'migrate s':>10} {'ratio':>6}")
    for lines in (1_000, 10_000, 50_000):
        text, sites = source(lines)
        started = time.perf_counter()
        cst.parse_module(text)
        parse = time.perf_counter() - started
        started = time.perf_counter()
        result = migrate_text(text, Version(2, 10))
        migrate = time.perf_counter() - started
        assert result.converted == sites, (result.converted, sites)
        print(f"{text.count(chr(10)):>7} {sites:>6} {parse:>8.2f} {migrate:>10.2f} {migrate / parse:>6.1f}")


if __name__ == "__main__":
    main()
