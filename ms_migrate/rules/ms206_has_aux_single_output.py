"""MS206: has_aux=True on a function that returns a single value: a ValueError when it runs."""

from __future__ import annotations

from collections.abc import Iterable

from ms_migrate.analysis.autodiff import AutodiffFile, describe, is_single, returned, sites_with_functions
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

FORWARD = """\
import mindspore as ms
from mindspore import nn

loss_fn = nn.CrossEntropyLoss()


def forward_fn(data, label):
    logits = model(data)
    loss = loss_fn(logits, label)
    return loss

"""


class HasAuxSingleOutput(Rule):
    """`value_and_grad(forward_fn, ..., has_aux=True)` where `forward_fn` returns only the loss.

    `has_aux=True` splits the outputs into the one to differentiate and the auxiliary rest, so the
    function must return a tuple of two or more. With one output, the first call raises
    "ValueError: When has_aux is True, origin fn requires more than one outputs." (a RuntimeError
    with the same text in GRAPH mode). Usually
    `has_aux=True` was copied from a tutorial whose function returned `(loss, logits)`.

    Flagged only where every return of the same-file function provably is one value: arithmetic
    a tuple does not support, a reduction (`.sum()`, `ops.reduce_mean`), a mindspore.ops loss, an
    `nn.*Loss` instance called, or a local name assigned one of these once.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.value_and_grad.html
    """

    code = "MS206"
    title = "has_aux=True on a function that returns one value"
    kind = "lint"
    severity = Severity.ERROR
    targets = VersionRange(low="1.8")
    prefilter = ("has_aux", "grad(")  # has_aux may be the fourth positional argument
    examples = Examples(
        valid=(
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n"),
            Example(
                "import mindspore as ms\n\n\ndef forward_fn(x):\n    out = net(x)\n    return out\n\n\n"
                "grad_fn = ms.grad(forward_fn, has_aux=True)\n"
            ),
        ),
        invalid=(
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights, has_aux=True)\n"),
            Example(
                "from mindspore import ops\n\n\ndef f(x):\n    return (x * x).sum()\n\n\n"
                "grads = ops.grad(f, 0, None, True)(x)\n"
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site, function in sites_with_functions(analysis):
            if site.api == "GradOperation" or site.option("has_aux") is not True:
                continue
            values = returned(function.function)
            if not values or not all(is_single(value, function.function, analysis) for value in values):
                continue
            message = (
                f"has_aux=True needs `{function.name}` to return (loss, *aux), but it returns one value "
                f"(`{describe(values[0], ctx)}`, line {values[0].lineno}): the gradient function raises "
                f"ValueError (RuntimeError in GRAPH mode): When has_aux is True, origin fn requires more "
                f"than one outputs; drop "
                f"has_aux=True, or return the auxiliary values after the loss"
            )
            yield self.diagnostic(site.options["has_aux"], message)
