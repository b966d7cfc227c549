"""MS225: MindSpore 2.11 raises on a gradient with respect to an input that is not floating point.

MindSpore 2.11.0's release notes list one incompatible change of its API
(https://www.mindspore.cn/docs/en/r2.11.0/RELEASE.html, "Fix PyNative grad metadata",
https://atomgit.com/mindspore/mindspore/pull/93133): a gradient taken in PyNative mode with
respect to an input whose dtype is not floating point now raises, where every release before
gave one back without an error (zeros of the input's dtype: 2.10 gives `[0, 0]` as Int32 for
an int32 label, in both modes; tests/test_release_notes.py runs it). Code that differentiates
all of a loss's inputs, the labels among them (`GradOperation(get_all=True)` over
`net_with_loss(data, label)`, an adversarial attack's usual helper), ran on 2.10 and stops on
2.11 at its first step.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional, Union

from ms_migrate.analysis.autodiff import (
    ALL_INPUTS,
    LABEL_NAMES,
    AutodiffFile,
    Differentiated,
    positions_differentiated,
)
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.release_notes import noted_change
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

CHANGE = "grad-of-non-float-input"  # rules/releases/notes.json

_LOSS_CELL = """\
from mindspore import nn, ops


class NetWithLoss(nn.Cell):
    def __init__(self, net, loss):
        super().__init__()
        self.net, self.loss = net, loss

    def construct(self, data, label):
        return self.loss(self.net(data), label)


"""
_GET_ALL = "grads = ops.GradOperation(get_all=True)(NetWithLoss(net, loss))(x, y)\n"
_LOOKUP = """\
import mindspore as ms


def score(weights, index):
    return (weights * table[index]).sum()


"""


class GradOfNonFloatInput(Rule):
    """A gradient taken with respect to an input the differentiated function shows to be integers,
    on a target of MindSpore 2.11 or later: the labels (an input named `label(s)`, `target(s)`
    or `gt`, or `y` handed to a loss), or an input it indexes with (`table[index]`) or hands to a
    one-hot or gather op. Both `GradOperation(get_all=True)` (every input) and `grad` /
    `value_and_grad` with a `grad_position` that selects it count.

    The fact is 2.11's, from its release notes (rules/releases/notes.json): the package index here
    has no 2.11 to run it on. The notes name PyNative mode; a step compiled in GRAPH mode may still
    run, with the gradient it gave before.

    Where the function is a network passed in as a parameter (`self._grad_all(self._network)(inputs,
    labels)`, mindarmour's attack helper), the argument the call passes there counts when it is
    named as labels.

    Reported, not fixed: leaving the input out changes what the gradient call returns (one entry
    fewer), which the code that unpacks it must follow. Only same-file functions and literal
    options are checked.
    """

    code = "MS225"
    title = "MindSpore 2.11 raises on a gradient with respect to an input that is not floating point"
    kind = "lint"
    severity = Severity.WARNING
    targets = VersionRange(low="2.11")
    prefilter = ("get_all", "grad_position", "grad(")
    examples = Examples(
        valid=(
            Example(_LOSS_CELL + _GET_ALL),
            Example(_LOSS_CELL + "grads = ops.GradOperation()(NetWithLoss(net, loss))(x, y)\n", "2.11"),
            Example(_LOOKUP + "grads = ms.grad(score, grad_position=0)(w, i)\n", "2.11"),
        ),
        invalid=(
            Example(_LOSS_CELL + _GET_ALL, "2.11"),
            Example(_LOOKUP + "grads = ms.grad(score, grad_position=(0, 1))(w, i)\n", "2.11"),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        change = noted_change(CHANGE)
        for site in analysis.sites():
            positions = positions_differentiated(site)
            if not positions:
                continue
            function = analysis.differentiated(site)
            applied = analysis.parents.get(site.call)
            arguments = (
                applied.args
                if isinstance(applied, ast.Call)
                and applied.func is site.call
                and not any(isinstance(item, ast.Starred) for item in applied.args)
                else None
            )
            found = _first_integer_input(positions, function, arguments)
            if found is None:
                continue
            name, evidence = found
            of = f" of `{function.name}`" if function is not None else ""
            message = (
                f"{site.api} takes the gradient with respect to `{name}`{of}, which {evidence}: "
                f"MindSpore {change.label} and later (target {ctx.target}) raise in PyNative mode on a "
                f"gradient with respect to an input that is not floating point, where earlier releases "
                f"returned zeros for it (its release notes: {change.notes}); where `{name}` holds "
                f"integers, take the gradient with respect to the float inputs only"
            )
            yield self.diagnostic(site.fn or site.call, message)


def _first_integer_input(
    positions: Union[tuple[int, ...], str],
    function: Optional[Differentiated],
    arguments: Optional[list[ast.expr]],
) -> Optional[tuple[str, str]]:
    """The first differentiated input the code shows to hold integers, with how it shows it: by
    the function's own parameter where the file has the function, else by the argument the call
    passes (`grad_all(network)(inputs, labels)`)."""
    if positions == ALL_INPUTS:
        count = len(function.params) if function is not None else len(arguments or ())
        positions = tuple(range(count))
    for position in positions:
        if function is not None and position < len(function.params):
            name = function.params[position]
            if function.is_labels(name):
                return name, "holds its labels"
            use = function.integer_use(name)
            if use:
                return name, f"it uses as {use}"
        elif function is None and arguments is not None and position < len(arguments):
            argument = arguments[position]
            if isinstance(argument, ast.Name) and argument.id in LABEL_NAMES:
                return argument.id, "holds the labels"
    return None
