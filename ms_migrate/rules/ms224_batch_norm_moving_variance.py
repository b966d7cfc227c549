"""MS224: BatchNorm folds a different variance into its moving variance on 1.x and 2.x.

One training step of `nn.BatchNorm1d(1, momentum=0.5)` on the batch [[0], [2]] leaves a moving
variance of 1.0 on 1.7-1.10 (the biased batch variance, 1) and 1.5 on 2.7-2.10 (the unbiased
one, 2), on CPU (the probe `BatchNorm moving variance` in rules/releases/api.json, run on each
release). Every other number of the step agrees. A network migrated from 1.x and trained further,
then evaluated from its running statistics (`set_train(False)`), gives other outputs than the same
training gave on 1.x: by a factor N/(N-1) in the variance for a batch of N, small for large
batches and not for small ones.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.releases import api_facts
from ms_migrate.rules.base import Example, Examples, Rule

PROBE = "BatchNorm moving variance"  # rules/releases/api.json: run on each release
ANSWERS = ("biased", "unbiased")
BATCH_NORMS = tuple(
    f"{module}.{name}"
    for module in ("mindspore.nn", "mindspore.nn.layer.normalization")
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")
)

_NET = (
    "from mindspore import nn\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
    "        super().__init__()\n        self.bn1 = nn.BatchNorm2d(16)\n"
    "        self.bn2 = nn.BatchNorm2d(32)\n"
)


class BatchNormMovingVariance(Rule):
    """The first BatchNorm layer a file builds (`nn.BatchNorm1d`/`2d`/`3d`), once per file, where
    the release the code was written for and the target update the moving variance with
    different batch variances (biased on 1.7-1.10, unbiased on 2.7-2.10 of the releases checked,
    each run to see).

    The release the code was written for is the project's MindSpore pin when the target is above
    it, or `from-version` in `[tool.ms-migrate]`; where neither says, the rule is silent.

    Reported, not fixed: no argument of the layer restores the other update. What to do depends on
    the model: compare its evaluation after training on both releases, keep its checkpoint's
    statistics (the layer reads whatever a checkpoint holds), or recompute the statistics on the
    target after training.
    """

    code = "MS224"
    title = "BatchNorm's moving variance is updated from the biased variance on 1.x, the unbiased on 2.x"
    kind = "lint"
    severity = Severity.WARNING
    prefilter = ("BatchNorm",)
    compares_releases = True
    examples = Examples(
        valid=(
            Example(_NET),  # nothing says which release it was written for
            Example(_NET, written_for="2.7"),
            Example(_NET, "1.9", written_for="1.7"),
        ),
        invalid=(Example(_NET, written_for="1.10"), Example(_NET, "1.10", written_for="2.8")),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        changed = facts and facts.change(PROBE, ctx.written_for, ctx.target, ANSWERS.__contains__)
        if not changed:
            return
        old, new = changed
        layers: list[ast.Call] = list(ctx.calls_to(BATCH_NORMS))
        if not layers:
            return
        first = min(layers, key=lambda call: (call.lineno, call.col_offset))
        others = f" (and {len(layers) - 1} more in this file)" if len(layers) > 1 else ""
        then, now = facts.probe_span(PROBE, old), facts.probe_span(PROBE, new)
        message = (
            f"BatchNorm updates its moving variance from the {old} batch variance on MindSpore "
            f"{then}, which this code is written for ({ctx.written_for}), and from the "
            f"{new} one on {now} (target {ctx.target}){others}: a network trained on "
            "the target and evaluated from its running statistics gives other outputs (a factor "
            "N/(N-1) in the variance for a batch of N); compare its evaluation on both releases"
        )
        yield self.diagnostic(first, message)
