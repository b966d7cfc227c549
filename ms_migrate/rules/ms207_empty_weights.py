"""MS207: weights that are provably empty: an empty tuple of gradients, and nothing trains."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional, Union

from ms_migrate.analysis.autodiff import CELL, GRAD_SITE_TOKENS, PARAMETER_TUPLE, AutodiffFile, describe
from ms_migrate.analysis.walk import child_nodes, walk
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

LOSS_CELL = """\
import mindspore as ms
from mindspore import nn, ops


class MSE(nn.Cell):
    def __init__(self):
        super().__init__()
        self.square = ops.Square()

    def construct(self, pred, label):
        return self.square(pred - label).mean()

"""

_DEPTH = 3


class EmptyWeights(Rule):
    """`grad(fn, None, [])` or the `trainable_params()` of a Cell with no Parameter: no gradients.

    The gradients come back in the order and number of `weights`. An empty list or tuple, or the
    `trainable_params()` of a Cell that creates no Parameter and holds no sub-Cell (a loss Cell
    built from primitives, say), gives an empty tuple `()` of gradients: no error, and the
    optimizer updates nothing. The usual slip is taking the parameters of the wrong Cell (the loss
    instead of the network).

    A Cell class counts as empty only when the file shows it: defined in the same file, based on
    `nn.Cell` (or on such a class of the file), and every `self.x = ...` in its methods assigns a
    constant, a tensor or a mindspore.ops primitive; any other assignment or a call that hands
    `self` out makes it unknown.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.grad.html
    """

    code = "MS207"
    title = "weights for grad / value_and_grad / GradOperation are empty"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange()
    prefilter = GRAD_SITE_TOKENS
    examples = Examples(
        valid=(
            Example(
                "import mindspore as ms\ngrad_fn = ms.value_and_grad(net, None, net.trainable_params())\n"
            ),
            Example(LOSS_CELL + "grad_fn = ms.grad(net, None, model.trainable_params())\n"),
        ),
        invalid=(
            Example("import mindspore as ms\ngrad_fn = ms.value_and_grad(forward_fn, None, weights=[])\n"),
            Example(
                LOSS_CELL + "loss = MSE()\ngrad_fn = ms.grad(forward_fn, None, loss.trainable_params())\n"
            ),
            Example(
                "from mindspore import ops\n\ngrads = ops.GradOperation(get_by_list=True)(net, ())(x)\n",
                "1.5",
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site in analysis.sites():
            weights = site.weights
            if weights is None:
                continue
            why = _empty(analysis, weights, 0)
            if why is None:
                continue
            message = (
                f"weights `{describe(weights, ctx)}` {why}: {site.api} returns an empty tuple () of "
                f"gradients (no error at run time) and the optimizer updates nothing; pass the "
                f"parameters of the network that holds the weights (net.trainable_params() or "
                f"optimizer.parameters)"
            )
            yield self.diagnostic(weights, message)


def _empty(analysis: AutodiffFile, node: ast.AST, depth: int) -> Optional[str]:
    """Why ``node`` is an empty collection of parameters, or None if the file does not show it."""
    if depth > _DEPTH:
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        return "is empty" if not node.elts else None
    if isinstance(node, ast.Name):
        value = analysis.meaning(node)
        return _empty(analysis, value, depth + 1) if isinstance(value, ast.expr) else None
    if not isinstance(node, ast.Call):
        return None
    if analysis.ctx.qualified_name(node.func) in PARAMETER_TUPLE and len(node.args) == 1:
        return _empty(analysis, node.args[0], depth + 1)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "trainable_params" and not node.args:
        cls = analysis.instance_class(node.func.value)
        if cls is not None and _creates_no_parameters(analysis, cls, 0):
            return f"is empty: `{cls.name}` creates no Parameter and no sub-Cell"
    return None


def _creates_no_parameters(analysis: AutodiffFile, cls: ast.ClassDef, depth: int) -> bool:
    if depth > _DEPTH or cls.keywords:
        return False
    for base in cls.bases:
        base_class = analysis.same_file_class(base)
        if base_class is not None:
            if not _creates_no_parameters(analysis, base_class, depth + 1):
                return False
        elif analysis.ctx.qualified_name(base) not in CELL:
            return False
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _method_creates_nothing(
            analysis, item
        ):
            return False
    return True


def _method_creates_nothing(
    analysis: AutodiffFile, method: Union[ast.FunctionDef, ast.AsyncFunctionDef]
) -> bool:
    positional = [*method.args.posonlyargs, *method.args.args]
    if not positional:
        return True
    this = positional[0].arg
    for node in walk(method):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                rooted = any(isinstance(item, ast.Name) and item.id == this for item in walk(target))
                if not rooted:
                    continue
                plain = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                if not plain or not isinstance(node, ast.Assign) or not _inert(analysis, node.value):
                    return False
        elif isinstance(node, ast.Call) and not _harmless_call(
            analysis, node, this, method.name == "__init__"
        ):
            return False
    return True


def _harmless_call(analysis: AutodiffFile, call: ast.Call, this: str, in_init: bool) -> bool:
    """A call that cannot add a Parameter or a sub-Cell to ``this``: ``super().__init__()`` or
    ``nn.Cell.__init__(self)``, or one that is not handed ``this`` (and, in ``__init__``, is not
    made on it: `self.build()` may create anything)."""
    func = call.func
    if isinstance(func, ast.Attribute) and _is_super(func.value):
        return func.attr == "__init__"
    if isinstance(func, ast.Attribute) and func.attr == "__init__":
        base = func.value
        return analysis.ctx.qualified_name(base) in CELL
    handed = [*call.args, *(keyword.value for keyword in call.keywords)]
    mentions_self = any(isinstance(item, ast.Name) and item.id == this for item in handed)
    on_self = isinstance(func, ast.Attribute) and any(
        isinstance(item, ast.Name) and item.id == this for item in walk(func.value)
    )
    return not mentions_self and not (in_init and on_self)


def _is_super(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _inert(analysis: AutodiffFile, value: ast.expr) -> bool:
    """A value that is neither a Parameter nor a Cell: a constant, a tensor, a primitive."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_inert(analysis, item) for item in value.elts)
    if isinstance(value, (ast.UnaryOp, ast.BinOp)):
        return all(_inert(analysis, item) for item in child_nodes(value) if isinstance(item, ast.expr))
    if isinstance(value, ast.Call):
        qualified = analysis.ctx.qualified_name(value.func) or ""
        tensor = qualified in {"mindspore.Tensor", "mindspore.common.tensor.Tensor"}
        return tensor or qualified.startswith(("mindspore.ops.", "mindspore.numpy."))
    return False
