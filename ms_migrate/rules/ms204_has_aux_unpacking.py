"""MS204: the result of a has_aux=True gradient function unpacked as if the aux were flat."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Optional

from ms_migrate.analysis.autodiff import AutodiffFile, GradSite, describe, output_count, own_nodes
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

FORWARD = """\
import mindspore as ms


def forward_fn(x):
    z = x * 3
    return (x * x).sum(), z

"""


# What each invalid example below is fixed to (run alone, on its target).
FIXED_1 = """\
import mindspore as ms


def forward_fn(x):
    z = x * 3
    return (x * x).sum(), z

grads, (z,) = ms.grad(forward_fn, has_aux=True)(x)
print(z.shape)
"""

FIXED_2 = """\
import mindspore as ms


def forward_fn(x):
    z = x * 3
    return (x * x).sum(), z

grad_fn = ms.grad(forward_fn, 0, has_aux=True)
grads, (z,) = grad_fn(x)
print(z.shape)
"""


class HasAuxUnpacking(Rule):
    """`grads, z = grad(f, has_aux=True)(x)` binds `z` to a 1-tuple `(z,)`, not to the tensor.

    With `has_aux=True`, `grad` returns two values, `(gradients, aux)`, and the aux is always a
    tuple, even for one auxiliary output. `value_and_grad` returns `((out0, *aux), gradients)`.
    Unpacking either flat goes wrong at run time:

    - `grads, a, b = grad_fn(x)` and `loss, logits, grads = grad_fn(x)` raise "ValueError: not
      enough values to unpack (expected 3, got 2)";
    - `grads, z = grad_fn(x)` for a function that returns `(loss, z)` binds `z` to `(z,)`, which
      fails (or computes on the wrong shape) only where `z` is used;
    - `loss, grads = grad_fn(x)` from `value_and_grad` binds `loss` to `(loss, *aux)`.

    The gradient function is followed from `grad(...)(x)` itself, or from the name or `self.x` it
    is assigned to. The last two cases are flagged only when the differentiated function is in the
    same file and its returns agree on the number of outputs (exactly two for the 1-tuple), and
    when the name is read, and never indexed or unpacked (code that does treats it as the tuple
    already; a throwaway `_` binds it harmlessly).

    Fix safety: exact, offered where the differentiated function's outputs match the names:
    `grads, (z,) = ...`, `grads, (a, b) = ...`, `(loss, logits), grads = ...`. The last case
    gets none: which names to add is the author's call.
    See https://www.mindspore.cn/docs/en/r2.8/api_python/mindspore/mindspore.grad.html
    """

    code = "MS204"
    title = "has_aux=True result unpacked without the aux tuple"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange(low="1.8")
    prefilter = ("has_aux", "grad(")  # has_aux may be the fourth positional argument
    examples = Examples(
        valid=(
            Example(FORWARD + "grads, (z,) = ms.grad(forward_fn, has_aux=True)(x)\nprint(z.shape)\n"),
            Example(FORWARD + "grads, _ = ms.grad(forward_fn, has_aux=True)(x)\n"),
            Example(
                FORWARD
                + "grad_fn = ms.value_and_grad(forward_fn, has_aux=True)\n(loss, z), grads = grad_fn(x)\n"
            ),
            Example(FORWARD + "grads, aux = ms.grad(forward_fn, has_aux=True)(x)\nz = aux[0]\n"),
        ),
        invalid=(
            Example(
                FORWARD + "grads, z = ms.grad(forward_fn, has_aux=True)(x)\nprint(z.shape)\n", fixed=FIXED_1
            ),
            Example(
                FORWARD + "grad_fn = ms.grad(forward_fn, 0, has_aux=True)\n"
                "grads, z = grad_fn(x)\nprint(z.shape)\n",
                fixed=FIXED_2,
            ),
            Example(
                "from mindspore import ops\n\n"
                "grad_fn = ops.value_and_grad(forward_fn, None, weights, has_aux=True)\n"
                "loss, logits, grads = grad_fn(data, label)\n"
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        for site in analysis.sites():
            if site.api == "GradOperation" or site.option("has_aux") is not True:
                continue
            function = analysis.differentiated(site)
            outputs = output_count(function.function) if function is not None else None
            for call in analysis.calls_of(site.call):
                names = _unpacked_into(analysis, call)
                if names is not None:
                    yield from self._check_unpacking(analysis, site, names, outputs)

    def _check_unpacking(
        self, analysis: AutodiffFile, site: GradSite, target: ast.Tuple, outputs: Optional[int]
    ) -> Iterator[Diagnostic]:
        ctx = analysis.ctx
        names = target.elts
        count = len(names)
        api = site.api
        if count >= 3:
            if api == "grad":
                shape, (edit, whole) = "(gradients, aux)", _respell(ctx, names, 1, count)
                exact = outputs == count
            else:
                shape, (edit, whole) = "((out0, *aux), gradients)", _respell(ctx, names, 0, count - 1)
                exact = outputs == count - 1
            message = (
                f"{api}(..., has_aux=True) returns 2 values, {shape}: unpacking them into {count} names "
                f"raises ValueError: not enough values to unpack (expected {count}, got 2); write `{whole}`"
            )
            fix = Fix((edit,), "exact", f"unpack as {whole}") if exact else None
            yield Diagnostic(
                self.code, target.lineno, target.col_offset, _end(target), message, Severity.ERROR, fix
            )
        elif count == 2 and api == "grad" and outputs == 2 and isinstance(names[1], ast.Name):
            aux = names[1].id
            if not _read_as_value(analysis, target, aux):
                return
            edit, whole = _respell(ctx, names, 1, 2)
            message = (
                f"grad(..., has_aux=True) returns (gradients, aux) and the aux is always a tuple: `{aux}` "
                f"is bound to the 1-tuple ({aux},), not to the tensor, and fails or mis-computes where it is "
                f"used; write `{whole}`"
            )
            yield self.diagnostic(target, message, Fix((edit,), "exact", f"unpack as {whole}"))
        elif (
            count == 2 and api == "value_and_grad" and outputs is not None and isinstance(names[0], ast.Name)
        ):
            value = names[0].id
            if not _read_as_value(analysis, target, value):
                return
            message = (
                f"value_and_grad(..., has_aux=True) returns ((out0, *aux), gradients): `{value}` is bound "
                f"to the tuple of all {outputs} outputs, not to the first, and fails or mis-computes where "
                f"it is used; write `({value}, ...), {describe(names[1], ctx)} = ...` with one name per "
                f"output"
            )
            yield self.diagnostic(names[0], message)


def _unpacked_into(analysis: AutodiffFile, call: ast.Call) -> Optional[ast.Tuple]:
    """The flat tuple of names `a, b = call(...)` unpacks into, if that is what happens."""
    parent = analysis.parents.get(call)
    if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    if not isinstance(target, (ast.Tuple, ast.List)) or len(target.elts) < 2:
        return None
    if any(isinstance(item, ast.Starred) for item in target.elts):
        return None
    return target  # type: ignore[return-value]


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _respell(ctx: FileContext, names: list[ast.expr], start: int, stop: int) -> tuple[Edit, str]:
    """An edit grouping ``names[start:stop]`` into one parenthesised tuple, and the whole target
    as it reads after the edit."""
    texts = [ast.get_source_segment(ctx.text, name) or ast.unparse(name) for name in names]
    inner = ", ".join(texts[start:stop])
    group = f"({inner},)" if stop - start == 1 else f"({inner})"
    first, last = names[start], names[stop - 1]
    edit = Edit((first.lineno, first.col_offset), _end(last), group)
    return edit, f"{', '.join([*texts[:start], group, *texts[stop:]])} = ..."


def _read_as_value(analysis: AutodiffFile, target: ast.AST, name: str) -> bool:
    """Whether the scope of ``target`` reads ``name``, and never as a tuple (indexed, unpacked,
    iterated, measured, handed on whole to another name): a throwaway `_` that is never read, or
    code that already treats it as the aux tuple, is left alone."""
    scope = analysis.scopes(target)[0]
    read = False
    for node in own_nodes(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        read = True
        parent = analysis.parents.get(node)
        if isinstance(parent, (ast.Subscript, ast.Starred)) and parent.value is node:
            return False
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            return False
        if isinstance(parent, ast.Assign) and parent.value is node:
            return False
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _MEASURES:
            return False
    return read


_MEASURES = frozenset({"len", "list", "tuple"})
