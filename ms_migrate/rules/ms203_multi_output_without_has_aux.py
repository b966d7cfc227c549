"""MS203: a function with several outputs differentiated without has_aux: the gradient of their sum."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ms_migrate.analysis.autodiff import (
    GRAD_SITE_TOKENS,
    AutodiffFile,
    Differentiated,
    Function,
    describe,
    is_stop_gradient,
    local_value,
    output_tuples,
    sites_with_functions,
)
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

# Attributes of a tensor that carry no gradient.
_METADATA = frozenset({"shape", "dtype", "ndim", "size"})
# Operations whose result is an index or a mask: no gradient flows through them.
_INDEX_OPS = ("argmax", "argmin", "equal", "not_equal", "isclose", "topk")
# Names of extra outputs that carry no gradient, or that are a second loss (see _carries_gradient).
_NO_GRADIENT_WORDS = ("loss", "label", "mask", "index", "indices", "idx", "acc", "correct", "shape")

FORWARD = """\
import mindspore as ms


def forward_fn(data, label):
    logits = net(data)
    loss = loss_fn(logits, label)
    return loss, logits

"""

CELL = """\
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(2, 1)

    def construct(self, x):
        out = self.dense(x)
        return out.sum(), out

"""

TRAIN_STEP = """\
from mindspore import nn
from mindspore.ops import GradOperation as G


class LossWithLogits(nn.Cell):
    def construct(self, data, label):
        logits = self.backbone(data)
        return self.loss(logits, label), logits


class TrainStep(nn.Cell):
    def __init__(self, weights):
        super().__init__()
        self.net = LossWithLogits()
        self.weights = weights
        self.grad = G(get_by_list=True)

    def construct(self, data, label):
        return self.grad(self.net, self.weights)(data, label)
"""


class MultiOutputWithoutHasAux(Rule):
    """A function that returns `(loss, logits)` differentiated without `has_aux=True` gets the
    gradient of `loss + sum(logits)`, not of the loss.

    `grad`, `value_and_grad` (without `has_aux=True`) and every GradOperation seed each output
    with ones and differentiate the sum of all outputs. Training then follows a gradient that
    mixes in the logits (or whatever else is returned for logging), with no error and no warning.
    `has_aux=True` differentiates only the first output and returns the others as auxiliary
    values; wrapping the extra outputs in `ops.stop_gradient` does the same for GradOperation
    and for MindSpore before 1.8.

    The rule follows the differentiated function through one level: a `def` (or lambda, or
    method) of the same file every return of which is a tuple of two or more, or the
    `construct` of a Cell class built in the same file (`grad(net)` after `net = Net()`,
    `self.net = Net()`, `grad(Net())`). Extra outputs that carry no gradient (already
    `stop_gradient`, constants, pass-through inputs, `.shape`) are not counted. `sens_param=True`
    (the caller seeds each output) is left alone.
    See https://www.mindspore.cn/tutorials/en/r2.8/beginner/autograd.html (Stop Gradient, Auxiliary data).
    """

    code = "MS203"
    title = "function with several outputs differentiated without has_aux (gradient of their sum)"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange()
    prefilter = GRAD_SITE_TOKENS
    examples = Examples(
        valid=(
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights, has_aux=True)\n"),
            Example(
                "import mindspore as ms\nfrom mindspore import ops\n\n\ndef forward_fn(x, w):\n"
                "    z = ops.matmul(x, w)\n    return z.sum(), ops.stop_gradient(z)\n\n\n"
                "grads = ms.grad(forward_fn, 1)(x, w)\n"
            ),
            Example(
                "import mindspore as ms\n\n\ndef loss_fn(x):\n    return (x * x).sum()\n\n\n"
                "grads = ms.grad(loss_fn)(x)\n"
            ),
            Example(
                "import mindspore as ms\nfrom model import forward_fn\n\ngrads = ms.grad(forward_fn)(x)\n"
            ),
        ),
        invalid=(
            Example(FORWARD + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n"),
            Example(CELL + "net = Net()\ngrads = ops.grad(net, None, net.trainable_params())(x)\n"),
            Example(TRAIN_STEP),
            Example(
                "import mindspore as ms\n\n\ndef forward_fn(x):\n    loss_a = (x * x).sum()\n"
                "    loss_b = x.sum()\n    loss = loss_a + loss_b\n    return loss, loss_a, loss_b\n\n\n"
                "grads = ms.grad(forward_fn)(x)\n"
            ),
            Example(
                "from mindspore.ops import composite as C\n\n"
                "grads = C.GradOperation()(lambda x: (x * x, x + 1))(x)\n",
                "1.5",
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site, function in sites_with_functions(analysis):
            if site.api != "GradOperation" and site.option("has_aux") is not False:
                continue
            if site.option("sens_param") is not False:
                continue
            tuples = output_tuples(function.function)
            if tuples is None:
                continue
            extras = [
                item
                for items in tuples
                for item in items[1:]
                if _carries_gradient(item, function, ctx, items[0])
            ]
            if not extras or site.fn is None:
                continue
            yield self.diagnostic(site.fn, _message(site.api, function, tuples, extras, ctx))


def _carries_gradient(output: ast.expr, function: Differentiated, ctx: FileContext, first: ast.expr) -> bool:
    """Whether an extra output may add its own gradient. Not: a constant, an input passed
    through, a tensor's metadata, a comparison, an index (`argmax`), a `stop_gradient`; nor an
    output named like a label, a mask or an index (`out["pred_labels"]`, `correct`), nor a second
    loss, whose sum with the first may well be the intended objective (`return actor_loss,
    entropy_loss`), unless the first output is made of it: `return loss, loss_a, loss_b` after
    `loss = loss_a + loss_b` (or `return loss, loss`) differentiates twice the loss."""
    value = output
    if isinstance(output, ast.Name):
        if output.id in function.params:
            return False
        if _part_of(output.id, first, function):
            return not is_stop_gradient(output, function.function, ctx)
        value = local_value(function.function, output.id) or output
    if _named_without_gradient(output) or _named_without_gradient(value):
        return False
    if isinstance(value, (ast.Constant, ast.Compare)):
        return False
    if isinstance(value, ast.Attribute) and value.attr in _METADATA:
        return False
    if isinstance(value, ast.Call) and _callee_name(value.func).lower().startswith(_INDEX_OPS):
        return False
    return not is_stop_gradient(output, function.function, ctx)


def _part_of(name: str, first: ast.expr, function: Differentiated) -> bool:
    """Whether the first output is ``name`` or is computed from it (in its expression, or in the
    one assignment of the local it returns)."""
    if isinstance(first, ast.Name):
        if first.id == name:
            return True
        value = local_value(function.function, first.id)
        if value is None:
            return False
        first = value
    return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(first))


def _named_without_gradient(node: ast.expr) -> bool:
    name = ""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = str(node.slice.value)
    return any(word in name.lower() for word in _NO_GRADIENT_WORDS)


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Call):  # `ops.Argmax()(x)`
        func = func.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _message(
    api: str, function: Differentiated, tuples: list[list[ast.expr]], extras: list[ast.expr], ctx: FileContext
) -> str:
    function_node: Function = function.function
    first = tuples[0]
    line = getattr(first[0], "lineno", function_node.lineno)
    shown = ", ".join(f"`{describe(item, ctx, 24)}`" for item in dict.fromkeys(extras))
    counts = sorted({len(items) for items in tuples})
    outputs = " or ".join(str(count) for count in counts)
    head = (
        f"{api} takes the gradient of the sum of all outputs: `{function.name}` returns {outputs} "
        f"outputs (line {line}), so {shown} add{'s' if len(extras) == 1 else ''} "
        f"{'its' if len(extras) == 1 else 'their'} own gradient to the first output's (no error at run time)"
    )
    if api == "GradOperation":
        if ctx.target >= Version(1, 8):
            return head + (
                "; wrap the extra outputs in ops.stop_gradient, or use value_and_grad / grad with "
                "has_aux=True"
            )
        return head + "; wrap the extra outputs in ops.stop_gradient"
    return head + (
        "; pass has_aux=True to differentiate only the first output (the others come back as auxiliary "
        "values), or wrap the extra outputs in ops.stop_gradient"
    )
