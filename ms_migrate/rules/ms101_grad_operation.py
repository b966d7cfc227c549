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

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

if TYPE_CHECKING:
    from ms_migrate.plan import Plan

ID = "MS101"
TITLE = "GradOperation train step can use value_and_grad"
SAFETY = "exact"
MIN_TARGET = "1.8"  # ops.value_and_grad with weights; below this the site is left alone (MSR001)

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
        loss, grads = mindspore.value_and_grad(self.network, None, self.weights)(data, label)
        self.optimizer(grads)
        return loss
"""


def describe(plan: Plan, function: str) -> str:
    flags = plan.site.flags.describe() if plan.site.flags else ""
    merged = ", forward merged" if plan.forward is not None else ""
    sens = ""
    if plan.sens_param:
        sens = ", sens_param=True"
    elif plan.scaled_by is not None:
        sens = f", sens by scaling the forward ({plan.aux})"
    wrapped = ", through a def (construct takes *args)" if plan.wrapper else ""
    return f"GradOperation({flags}) -> {function}{merged}{sens}{wrapped}"


class GradOperationToFunctional(Rule):
    __doc__ = __doc__

    code = ID
    title = TITLE
    kind = "upgrade"
    severity = Severity.INFO
    targets = VersionRange(low=MIN_TARGET)
    prefilter = ("GradOperation", "TrainOneStep", "PipelineCell")
    examples = Examples(
        valid=(Example("import mindspore\nimport mindspore.nn as nn\n\n\n" + AFTER),),
        invalid=(
            Example(
                "import mindspore\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
                + BEFORE
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        """The sites `upgrade` converts, as diagnostics (the rewrite itself is the engine's)."""
        from ms_migrate.engine import migrate_text
        from ms_migrate.findings import Kind

        for finding in migrate_text(ctx.text, ctx.target, path=ctx.path).findings:
            if finding.kind is Kind.CONVERTED:
                message = f"modernisable: {finding.message}"
                yield Diagnostic(self.code, finding.line, 0, (finding.line, 0), message, self.severity)
