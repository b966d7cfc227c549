"""Speed of verification by execution: generated train-step Cells, before and after, both modes.

Run: .venv/bin/python benchmarks/bench_verify.py [PAIRS]   (default 30)

Each pair is one file with one legacy train-step Cell in the shape of
tests/fixtures/ms101/cell_get_by_list.py (names, argument names and weight spellings vary), and its
rewrite by the engine. All pairs go to ``verify_many`` at once, as ``upgrade --verify`` sends them:
workers pulling (site, mode) tasks, each site run with SGD and with Momentum, before and after, 3 steps.
Goal: at least 60 sites per minute on 2 cores, both modes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.verify import VerifyOptions, verify_many

TEMPLATE = """import mindspore.nn as nn
from mindspore import ParameterTuple
from mindspore.ops import composite as C


class {name}(nn.Cell):
    def __init__(self, network, optimizer):
        super({name}, self).__init__()
        self.{net} = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.{grad} = C.GradOperation(get_by_list=True)

    def construct(self, {x}, {y}):
        weights = {weights}
        loss = self.{net}({x}, {y})
        grads = self.{grad}(self.{net}, weights)({x}, {y})
        self.optimizer(grads)
        return loss
"""
NAMES = ("TrainOneStep", "TrainStep", "StepCell", "Trainer", "OneStep")
NETS = ("network", "net", "backbone")
GRADS = ("grad", "grad_op", "grad_fn")
ARGUMENTS = (("data", "label"), ("x", "y"), ("inputs", "targets"), ("images", "labels"))
WEIGHTS = ("self.weights", "self.optimizer.parameters")


def generated_pair(index: int) -> tuple[str, str]:
    x, y = ARGUMENTS[index % len(ARGUMENTS)]
    before = TEMPLATE.format(
        name=f"{NAMES[index % len(NAMES)]}{index}",
        net=NETS[index % len(NETS)],
        grad=GRADS[index % len(GRADS)],
        x=x,
        y=y,
        weights=WEIGHTS[index % len(WEIGHTS)],
    )
    after = migrate_text(before, Version(2, 10)).text
    assert after != before, "the engine must rewrite every generated pair"
    return before, after


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    with tempfile.TemporaryDirectory() as scratch:
        items = []
        for index in range(count):
            before, after = generated_pair(index)
            items.append((Path(scratch) / f"step_{index}.py", before, after))
        options = VerifyOptions()
        start = time.perf_counter()
        reports = verify_many(items, options)
        wall = time.perf_counter() - start
    rows = [row for report in reports for row in report.results]
    sites = len(rows) // len(options.modes)
    verdicts = Counter(row.verdict.value for row in rows)
    print(f"{count} pairs, {sites} sites x {len(options.modes)} modes, {os.cpu_count()} cores")
    print(f"verdicts: {dict(verdicts)}")
    print(f"wall: {wall:.1f} s (includes starting the workers)")
    print(f"throughput: {sites / wall * 60:.0f} sites/minute (both modes)")


if __name__ == "__main__":
    main()
