"""MS202: a keyword that grad / value_and_grad do not take on the target version."""

from __future__ import annotations

from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

FUNCTIONS = {
    "mindspore.grad": "grad",
    "mindspore.value_and_grad": "value_and_grad",
    "mindspore.ops.grad": "grad",
    "mindspore.ops.value_and_grad": "value_and_grad",
    "mindspore.ops.functional.grad": "grad",
    "mindspore.ops.functional.value_and_grad": "value_and_grad",
}

# (function, parameter) -> first version that takes it. From the API pages of 1.8, 2.0, 2.3, 2.8.
SINCE = {
    ("grad", "fn"): "1.8",
    ("grad", "grad_position"): "1.8",
    ("grad", "weights"): "1.8",
    ("grad", "has_aux"): "1.8",
    ("grad", "return_ids"): "2.0",
    ("grad", "sens_param"): "2.8",
    ("value_and_grad", "fn"): "1.8",
    ("value_and_grad", "grad_position"): "1.8",
    ("value_and_grad", "weights"): "1.8",
    ("value_and_grad", "has_aux"): "1.8",
    ("value_and_grad", "return_ids"): "2.3",
    ("value_and_grad", "sens_param"): "2.8",
}


def parameters(function: str, target: Version) -> list[str]:
    return [
        name for (owner, name), since in SINCE.items() if owner == function and Version.parse(since) <= target
    ]


class UnknownGradKeyword(Rule):
    """`grad(net, position=0)` raises "got an unexpected keyword argument" when the line runs.

    A keyword grad or value_and_grad does not take on the target fails only at run time, often
    deep in a training script. Typical slips: `position` for `grad_position`, `weight` for
    `weights`, `has_aux` on a runtime that has no such parameter, `sens_param` before 2.8, and
    `return_ids` before 2.0 (grad) or 2.3 (value_and_grad). The message lists what the target takes.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.grad.html
    """

    code = "MS202"
    title = "grad / value_and_grad called with a keyword the target does not take"
    kind = "lint"
    severity = Severity.ERROR
    targets = VersionRange(low="1.8")
    prefilter = ("grad(",)
    examples = Examples(
        valid=(
            Example("import mindspore as ms\nfn = ms.grad(net, grad_position=0, weights=w)\n"),
            Example("import mindspore as ms\nfn = ms.grad(net, None, w, sens_param=True)\n", "2.8"),
        ),
        invalid=(
            Example("import mindspore as ms\nfn = ms.grad(net, position=0)\n"),
            Example("import mindspore as ms\nfn = ms.value_and_grad(net, None, w, sens_param=True)\n", "2.7"),
            Example(
                "from mindspore import ops\nfn = ops.value_and_grad(net, None, w, return_ids=True)\n", "2.0"
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        for node in ctx.calls:
            function = FUNCTIONS.get(ctx.qualified_name(node.func) or "")
            if function is None:
                continue
            allowed = parameters(function, ctx.target)
            for keyword in node.keywords:
                if keyword.arg is None or keyword.arg in allowed:
                    continue
                yield self.diagnostic(
                    keyword,
                    f"{function}() takes no `{keyword.arg}=` on MindSpore {ctx.target}: TypeError at run "
                    f"time; it takes {', '.join(allowed)}",
                )
