"""MS220: `nn.Dropout(keep_prob)` against `nn.Dropout(p=...)`: the same number means the opposite.

1.x's `nn.Dropout(keep_prob=0.5, dtype)` takes the probability to *keep*; 2.x adds `p`, the
probability to *drop*, and MindSpore 2.10's docstring announces that after 2.9.0 `keep_prob` is
removed and `p` becomes the first argument
(https://www.mindspore.cn/docs/en/r2.10/api_python/nn/mindspore.nn.Dropout.html). Then
`nn.Dropout(0.9)`, which keeps 90% today, drops 90%: the script keeps running and trains
something else.
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Optional

from ms_migrate.analysis.instances import InstancesOf
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule

DROPOUT = ("mindspore.nn.Dropout", "mindspore.nn.layer.Dropout", "mindspore.nn.layer.basic.Dropout")
# The pair's proof (rules/releases/proofs.json): keep_prob=k on 1.10 and p=1-k on the target give
# the same outputs (the same scale 1/k in training, the input itself in evaluation).
PROOF = ("mindspore.nn.Dropout", "mindspore.nn.Dropout")
KEEP_PROB_OF_P = "Dropout(p=0.1).keep_prob"  # rules/releases/api.json: run on each release


def _float32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def complement(literal: ast.AST, of_p: bool = False) -> Optional[str]:
    """`1 - k` written as the decimal literal it is (`0.9` -> `"0.1"`), for a literal of at most two
    decimals (0.01 ... 1.00, measured exact) where MindSpore's own `1 - p` gives back `k` in
    float32; None for anything else (a name, an expression, a longer literal, a value outside
    (0, 1], the keep probabilities 1.x takes). ``of_p``: the literal is a `p`, taken in [0, 1)
    as 2.x takes it (`p=0.0`, no dropout, is `keep_prob=1.0`)."""
    if not isinstance(literal, ast.Constant) or isinstance(literal.value, bool):
        return None
    value = literal.value
    if not isinstance(value, (int, float)) or not (0 <= value < 1 if of_p else 0 < value <= 1):
        return None
    try:
        given = Decimal(repr(literal.value))
    except InvalidOperation:
        return None
    if given.as_tuple().exponent < -2:  # type: ignore[operator]
        return None  # measured exact for 0.01 ... 1.00; a longer literal is left to a human
    other = Decimal(1) - given
    text = format(other.normalize(), "f")
    text = text if "." in text else f"{text}.0"
    if _float32(1 - float(text)) != _float32(float(literal.value)):
        return None
    return text


class DropoutKeepProb(Rule):
    """`nn.Dropout(0.9)` or `nn.Dropout(keep_prob=0.9)` on a target that has `p`, and
    `nn.Dropout(p=0.1)` on one that has not.

    Upgrading (a target whose `nn.Dropout` takes `p`, read from the real releases'
    signatures: 2.7 and later of the releases checked) the keep probability `k` is written as
    `p=1-k`, with `1-k` as the literal it is (`0.1`, not `1 - 0.9`), where MindSpore's `1 - p` gives
    back `k` exactly in float32 (every two-decimal `k` in (0, 1]). Downgrading (a target without
    `p`, 1.x) `p=x` is written `keep_prob=1-x` the same way. A computed probability, or one passed
    with other positional arguments after it, is reported with what to write, not fixed.

    A layer built with `p=` keeps `keep_prob` at its default (0.5 on 2.7-2.10, measured), not 1 - p:
    in a file that reads `.keep_prob`, the rewrite is reported and not made, and where the file
    already builds a Dropout with `p=`, each `.keep_prob` read is reported (read `.p` instead).

    Fix safety: exact. The pair ran on both releases (1.10's keep_prob and 2.10's p) with the same
    numbers: rules/releases/proofs.json, docs/release-pairs.md.
    """

    code = "MS220"
    title = "nn.Dropout's keep_prob: the probability to keep, where p is the probability to drop"
    kind = "lint"
    release_fix = True
    severity = Severity.WARNING
    prefilter = ("Dropout",)
    examples = Examples(
        valid=(
            Example("from mindspore import nn\nlayer = nn.Dropout(p=0.1)\n"),
            Example("from mindspore import nn\nlayer = nn.Dropout(keep_prob=0.9)\n", "1.10"),
            Example("from mindspore import nn\nlayer = nn.Dropout(p=1 - config.keep_prob)\n"),
        ),
        invalid=(
            Example(
                "from mindspore import nn\nlayer = nn.Dropout(0.9)\n",
                fixed="from mindspore import nn\nlayer = nn.Dropout(p=0.1)\n",
            ),
            Example(
                "import mindspore.nn as nn\nlayer = nn.Dropout(keep_prob=0.95)\n",
                fixed="import mindspore.nn as nn\nlayer = nn.Dropout(p=0.05)\n",
            ),
            Example("from mindspore import nn\n\n\ndef layer(rate):\n    return nn.Dropout(1 - rate)\n"),
            # The layer's keep probability is read: p= would leave it at 0.5 (reported, not fixed).
            Example("from mindspore import nn\nlayer = nn.Dropout(keep_prob=0.9)\nprint(layer.keep_prob)\n"),
            Example("from mindspore import nn\nlayer = nn.Dropout(p=0.1)\nrate = 1 - layer.keep_prob\n"),
            Example(
                "from mindspore import nn\nlayer = nn.Dropout(p=0.2)\n",
                "1.10",
                fixed="from mindspore import nn\nlayer = nn.Dropout(keep_prob=0.8)\n",
            ),
            # No dropout at all: what the upgrade of `keep_prob=1.0` writes, written back.
            Example(
                "from mindspore import nn\nlayer = nn.Dropout(p=0.0)\n",
                "1.10",
                fixed="from mindspore import nn\nlayer = nn.Dropout(keep_prob=1.0)\n",
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        if facts is None:
            return
        standing = facts.around(ctx.target)
        parameters = [facts.signature(DROPOUT[0], release) for release in standing]
        if any(found is None for found in parameters):
            return
        answers = {any(name == "p" for name, _, _ in found) for found in parameters}  # type: ignore[union-attr]
        if len(answers) != 1:
            return  # a target between releases that disagree: nothing is known
        (has_p,) = answers
        proven = facts.proven.get(PROOF) == "equal"
        lines = source_lines(ctx.text)
        calls = list(ctx.calls_to(DROPOUT))
        # What `.keep_prob` holds on a layer built with `p=` (the default, not 1 - p: measured).
        held = facts.probe(KEEP_PROB_OF_P, ctx.target) if has_p else None
        reads = _keep_prob_reads(ctx) if isinstance(held, float) else []
        for call in calls:
            if has_p:
                found = self._keep_prob(call, ctx.target, proven, lines, reads, held)
            else:
                found = self._p(call, ctx.target, proven, lines)
            if found is not None:
                yield found
        if reads and any(keyword.arg == "p" for call in calls for keyword in call.keywords):
            span = facts.probe_span(KEEP_PROB_OF_P, held)
            layers = InstancesOf(ctx, DROPOUT)
            for read in (read for read in reads if layers.holds(read.value, read)):
                message = (
                    f"`{ast.unparse(read)}`: a Dropout built with `p=` keeps `keep_prob` at {held} on "
                    f"MindSpore {span}, not 1 - p; read `.p`, the probability to drop, instead"
                )
                yield self.diagnostic(read, message)

    def _keep_prob(
        self,
        call: ast.Call,
        target: Version,
        proven: bool,
        lines: list[str],
        reads: list[ast.Attribute],
        held: object,
    ) -> Optional[Diagnostic]:
        keyword = next((item for item in call.keywords if item.arg == "keep_prob"), None)
        if keyword is not None:
            argument: ast.AST = keyword
            value = keyword.value
            shown = f"keep_prob={ast.unparse(value)}"
        elif call.args:
            argument = value = call.args[0]
            shown = ast.unparse(value)
            if isinstance(value, ast.Starred):
                return None
        else:
            return None
        p = complement(value)
        message = (
            f"`nn.Dropout({shown})` keeps each input with probability {ast.unparse(value)}; MindSpore "
            f"{target}'s `p` is the probability to drop, and its docstring announces `p` as the first "
            f"argument after 2.9.0, where `nn.Dropout({ast.unparse(value)})` would drop that share"
        )
        fix = None
        if p is not None and (keyword is not None or len(call.args) == 1) and proven and reads:
            # The layer would drop alike, but `.keep_prob` would no longer say so.
            message += (
                f"; write `p={p}`, and read `.p` where line {reads[0].lineno} reads `.keep_prob` (not "
                f"fixed: a Dropout built with p= keeps keep_prob at {held} on MindSpore {target})"
            )
        elif p is not None and (keyword is not None or len(call.args) == 1) and proven:
            message += f"; write `p={p}`"
            fix = Fix((_replace(lines, argument, f"p={p}"),), "exact", f"p={p}, the same dropout")
        else:
            message += f"; write `p=1 - ({ast.unparse(value)})` by hand if that is what it keeps"
        return self.diagnostic(argument, message, fix)

    def _p(self, call: ast.Call, target: Version, proven: bool, lines: list[str]) -> Optional[Diagnostic]:
        keyword = next((item for item in call.keywords if item.arg == "p"), None)
        if keyword is None:
            return None
        value = keyword.value
        keep = complement(value, of_p=True)
        message = (
            f"`nn.Dropout(p={ast.unparse(value)})`: MindSpore {target}'s nn.Dropout has no `p`, only "
            f"`keep_prob`, the probability to keep"
        )
        fix = None
        if keep is not None and proven:
            message += f"; write `keep_prob={keep}`"
            fix = Fix((_replace(lines, keyword, f"keep_prob={keep}"),), "exact", f"keep_prob={keep}")
        else:
            message += f"; write `keep_prob=1 - ({ast.unparse(value)})` by hand"
        return self.diagnostic(keyword, message, fix)


def _keep_prob_reads(ctx: FileContext) -> list[ast.Attribute]:
    """Every `X.keep_prob` of the file (most files have none: the text says so first)."""
    if ".keep_prob" not in ctx.text:
        return []
    return [node for node in ctx.nodes if isinstance(node, ast.Attribute) and node.attr == "keep_prob"]


def _replace(lines: list[str], node: ast.AST, text: str) -> Edit:
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    start = column(lines, first, node.col_offset)  # type: ignore[attr-defined]
    end = column(lines, last, node.end_col_offset or 0)  # type: ignore[attr-defined]
    return Edit((first, start), (last, end), text)
