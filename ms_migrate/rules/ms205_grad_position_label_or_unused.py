"""MS205: grad_position selects the labels, or an input the function never reads."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ms_migrate.analysis.autodiff import (
    AutodiffFile,
    Differentiated,
    GradSite,
    describe,
    literal,
    sites_with_functions,
)
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

FORWARD = """\
import mindspore as ms


def forward_fn(data, label):
    logits = net(data)
    return loss_fn(logits, label)

"""


class GradPositionLabelOrUnused(Rule):
    """`grad(forward_fn, grad_position=1)` on `forward_fn(data, label)` differentiates the labels.

    `grad_position` counts the inputs of the differentiated function. Pointing it at the labels
    (a parameter named `label(s)`, `target(s)` or `gt`, or `y` handed to a loss) returns
    d(loss)/d(label), which no training step uses; the usual intent is the data (position 0) or
    the weights (`grad_position=None, weights=...`). Pointing it at a parameter the body never reads returns
    zeros, every time, without an error.

    Only functions defined in the same file (a `def`, a lambda, a method, or a Cell class's
    `construct`, whose `self` is not counted) are checked, and only literal positions.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.grad.html
    """

    code = "MS205"
    title = "grad_position selects the labels or an input the function never reads"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange(low="1.8")
    prefilter = ("grad_position", "grad(")
    examples = Examples(
        valid=(
            Example(FORWARD + "grads = ms.grad(forward_fn, 0)(data, label)\n"),
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n"),
            Example(
                "from mindspore import ops\n\n\ndef f(x, w, b):\n    return ops.matmul(x, w) + b\n\n\n"
                "grads = ops.grad(f, grad_position=(1, 2))(x, w, b)\n"
            ),
        ),
        invalid=(
            Example(FORWARD + "grads = ms.grad(forward_fn, grad_position=1)(data, label)\n"),
            Example(
                "import mindspore.ops.functional as F\n\n\ndef f(x, mask):\n    return (x * x).sum()\n\n\n"
                "grads = F.grad(f, (0, 1))(x, mask)\n"
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site, function in sites_with_functions(analysis):
            if site.api == "GradOperation" or "grad_position" not in site.options:
                continue
            yield from self._check_positions(ctx, site, function)

    def _check_positions(
        self, ctx: FileContext, site: GradSite, function: Differentiated
    ) -> Iterator[Diagnostic]:
        node = site.options["grad_position"]
        value = literal(node)
        positions = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(item, int) and not isinstance(item, bool) for item in positions):
            return
        selected = f"grad_position={describe(node, ctx)}"
        for position in positions:
            if not 0 <= position < len(function.params):  # type: ignore[operator]
                continue
            name = function.params[position]  # type: ignore[index]
            if function.is_labels(name):
                message = (
                    f"{selected} selects `{name}`, the labels of `{function.name}`: {site.api} returns the "
                    f"gradient with respect to the labels, which training does not use (no error at run "
                    f"time); select the data (grad_position=0) or the weights (grad_position=None, "
                    f"weights=...)"
                )
            elif not function.reads(name):
                message = (
                    f"{selected} selects `{name}`, which `{function.name}` never reads: its gradient is "
                    f"zeros on every call (no error at run time); select an input the output is computed "
                    f"from, or read `{name}` in the function"
                )
            else:
                continue
            yield self.diagnostic(node, message)
