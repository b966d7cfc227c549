"""MS209: the input a gradient is taken with respect to (by default) is never read: zeros."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from ms_migrate.analysis.autodiff import (
    GRAD_SITE_TOKENS,
    AutodiffFile,
    Differentiated,
    GradSite,
    sites_with_functions,
)
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

CHECK = """\
import numpy as np
from mindspore import ops


def func(p):
    return ops.reduce_sum(weight * weight)

"""


class DifferentiatedInputNeverRead(Rule):
    """`ops.GradOperation()(func)(p)` where `func(p)` never reads `p`: the gradient is zeros.

    Without `grad_position` (or `get_by_list`), `grad`, `value_and_grad` and GradOperation
    differentiate with respect to the inputs: the first one, or all of them with
    `get_all=True`. A function that computes its output from something else (a global, a
    closure, the network's weights) and ignores the input gets a gradient of zeros, with no
    error. A numerical gradient check written this way compares finite differences against
    zeros, and a training loop built this way never moves.

    Flagged when every differentiated input of a same-file function (a `def`, lambda, method or
    Cell `construct`) is never read in its body; explicit `grad_position` is MS205's.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/ops/mindspore.ops.GradOperation.html
    """

    code = "MS209"
    title = "gradient taken with respect to an input the function never reads"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange()
    prefilter = GRAD_SITE_TOKENS
    examples = Examples(
        valid=(
            Example(
                "from mindspore import ops\n\n\ndef func(p):\n    return ops.reduce_sum(p * p)\n\n\n"
                "analytic = ops.GradOperation()(func)(p)\n"
            ),
            Example(CHECK + "analytic = ops.GradOperation(get_by_list=True)(func, weights)(p)\n"),
            Example(CHECK + "import mindspore as ms\n\ngrads = ms.grad(func, None, weights)(p)\n"),
        ),
        invalid=(
            Example(CHECK + "analytic = ops.GradOperation()(func)(p)\n"),
            Example(
                "from mindspore import nn\nimport mindspore as ms\n\n\nclass Net(nn.Cell):\n"
                "    def construct(self, x, y):\n        return self.w * 2\n\n\n"
                "grads = ms.grad(Net())(x, y)\n"
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site, function in sites_with_functions(analysis):
            inputs = _differentiated_inputs(site, function)
            if not inputs or any(function.reads(name) for name in inputs):
                continue
            which = f"`{inputs[0]}` (its first input)" if len(inputs) == 1 else "all its inputs"
            message = (
                f"{site.api} differentiates `{function.name}` with respect to {which}, which it never "
                f"reads: the gradient is zeros on every call (no error at run time), so a gradient check "
                f"against it compares with zeros; compute the output from the input, or differentiate "
                f"the weights (weights=... / get_by_list=True)"
            )
            yield self.diagnostic(site.fn or site.call, message)


def _differentiated_inputs(site: GradSite, function: Differentiated) -> Optional[list[str]]:
    """The inputs the site differentiates by default, or None when it names them or the weights."""
    if not function.params:
        return None
    if site.api == "GradOperation":
        if site.option("get_by_list") is not False or site.option("sens_param") is not False:
            return None
        get_all = site.option("get_all")
        if get_all is True and not function.varargs:
            return list(function.params)
        return [function.params[0]] if get_all is False else None
    if "grad_position" in site.options or site.option("weights") is not None:
        return None
    return [function.params[0]]
