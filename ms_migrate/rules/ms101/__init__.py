"""MS101: rewrite GradOperation train steps into mindspore.value_and_grad / mindspore.grad.

Why: MindSpore 2.x documents the functional autodiff API as the way to take gradients
(https://www.mindspore.cn/docs/en/r2.3/api_python/mindspore/mindspore.value_and_grad.html).
One `value_and_grad` call returns the loss and the gradients from a single forward pass. The
legacy "forward, then GradOperation" pattern runs the forward twice in PYNATIVE mode unless
`set_grad()` was called on the network, so the forward is merged only where it is: elsewhere the
forward stays and `grad` replaces GradOperation, which is exact in both modes. GradOperation
itself is not deprecated (nn.TrainOneStepCell still uses it), so this is a modernisation,
reported as such.

Fix safety: exact. Each emitted form returns the same numbers as the GradOperation it replaces,
checked by running both on MindSpore CPU in PYNATIVE and GRAPH mode (tests/test_equivalence.py).
Sites where exactness cannot be shown are left alone with a reason code (docs/reasons.md).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Fix, Severity, edits_between
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange
from ms_migrate.rules.ms101.reasons import NOTES, REASONS

# `self.x(...)(...)`: an op held on self, applied to a network and then to its inputs.
_APPLIED_ATTRIBUTE = re.compile(r"self\.\w+\([^()]*\)\s*\(")

ID = "MS101"
TITLE = "GradOperation train step can use value_and_grad"
SAFETY = "exact"
BEFORE = """\
class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""

AFTER = """\
class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters

    def construct(self, data, label):
        loss, grads = mindspore.value_and_grad(self.network, None, self.weights)(
            data, label
        )
        self.optimizer(grads)
        return loss
"""


# What each invalid example below is fixed to (run alone, on its target).
FIXED = """\
import mindspore
import mindspore.nn as nn


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters

    def construct(self, data, label):
        loss, grads = mindspore.value_and_grad(self.network, None, self.weights)(
            data, label
        )
        self.optimizer(grads)
        return loss
"""


class GradOperationToFunctional(Rule):
    __doc__ = __doc__

    code = ID
    title = TITLE
    kind = "upgrade"
    severity = Severity.INFO
    # ops.value_and_grad takes weights from 1.8; the rule runs on every target all the same, to say
    # why each site stays below it (MSR001).
    targets = VersionRange()
    prefilter = ("GradOperation", "TrainOneStep", "PipelineCell")
    reads_the_project = True
    reasons = REASONS
    notes = NOTES
    examples = Examples(
        valid=(Example("import mindspore\nimport mindspore.nn as nn\n\n\n" + AFTER),),
        invalid=(
            Example(
                "import mindspore\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
                + BEFORE,
                fixed=FIXED,
            ),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        """The tokens, or a grad op a class applies without creating it, `self.grad(net, w)(x)`:
        a subclass of a train-step base in another file need not mention either."""
        return super().applies_to(text, target) or (
            target in self.targets and _APPLIED_ATTRIBUTE.search(text) is not None
        )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        """Every site: converted ones carry the file's rewrite as their fix, the others a reason.

        Sites are found and planned on the `ast` tree; only a file with a conversion is parsed
        with libcst, to carry the plans out, and only when the caller wants fixes.
        """
        # The analysis is imported on a file's first GradOperation, not by every run's start-up.
        from ms_migrate.rules.ms101.decide import decide

        decision = decide(ctx)
        if not decision.converted:
            yield from decision.diagnostics
            return
        converted = {id(item) for item in decision.converted}
        if not ctx.fixes:  # reporting only: the rewrite is not built, but upgrade would make it
            for diagnostic in decision.diagnostics:
                pending = id(diagnostic) in converted
                yield dataclasses.replace(diagnostic, fix_pending=True) if pending else diagnostic
            return
        from ms_migrate.rules.ms101.rewrite import rewrite  # libcst: only for files that change

        edits = edits_between(ctx.text, rewrite(ctx, decision))
        fix = Fix(edits, SAFETY, "rewrite this file's GradOperation sites (applied together)")
        for diagnostic in decision.diagnostics:
            yield dataclasses.replace(diagnostic, fix=fix) if id(diagnostic) in converted else diagnostic
