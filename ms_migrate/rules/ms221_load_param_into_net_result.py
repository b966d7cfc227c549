"""MS221: what `load_param_into_net` returns changed from a list to a pair.

On 1.x it returns the list of the network's parameters that were not loaded; on 2.x a tuple
`(param_not_load, ckpt_not_load)` (https://www.mindspore.cn/docs/en/r2.0/api_python/mindspore/mindspore.load_param_into_net.html).
`missing = load_param_into_net(net, params); if missing: raise ...` then raises after every load
on 2.x: a pair of two lists is always true.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.releases import ApiFacts, api_facts
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule

LOAD = (
    "mindspore.load_param_into_net",
    "mindspore.train.load_param_into_net",
    "mindspore.train.serialization.load_param_into_net",
)
PROBE = "load_param_into_net returns"  # rules/releases/api.json: run on each release
PROOF = (LOAD[0], LOAD[0])  # 1.10's list and the target's first item: rules/releases/proofs.json


class LoadParamIntoNetResult(Rule):
    """A result of `load_param_into_net` bound to one name, on a target whose
    `load_param_into_net` returns a pair (2.7-2.10 of the releases checked, each run to see), and
    a pair unpacked from it on one whose returns the list (1.7-1.10).

    Upgrading, `x = load_param_into_net(...)` becomes `x, _ = load_param_into_net(...)`: `x` is
    the list of parameters not loaded, as it was. A result used any other way (tested directly,
    returned, passed on) is reported, not fixed. Downgrading, `a, b = load_param_into_net(...)` is
    reported: 1.x has no second list; `a, _ = ...`, where no line of the file reads `_`, becomes
    `a = ...`: `a` is the list, as it was.

    Fix safety: exact: the pair ran on 1.10 and on the target with the same list
    (rules/releases/proofs.json).
    """

    code = "MS221"
    title = "load_param_into_net returns (param_not_load, ckpt_not_load) on 2.x, a list on 1.x"
    kind = "lint"
    release_fix = True
    severity = Severity.WARNING
    prefilter = ("load_param_into_net",)
    examples = Examples(
        valid=(
            Example("from mindspore import load_param_into_net\nload_param_into_net(net, params)\n"),
            Example(
                "from mindspore import load_param_into_net\nmissing, _ = load_param_into_net(net, params)\n"
            ),
            Example(
                "from mindspore import load_param_into_net\nmissing = load_param_into_net(net, params)\n",
                "1.10",
            ),
        ),
        invalid=(
            Example(
                "from mindspore import load_param_into_net\nmissing = load_param_into_net(net, params)\n"
                "if missing:\n    raise ValueError(missing)\n",
                fixed="from mindspore import load_param_into_net\n"
                "missing, _ = load_param_into_net(net, params)\n"
                "if missing:\n    raise ValueError(missing)\n",
            ),
            Example(
                "import mindspore as ms\nif ms.load_param_into_net(net, params):\n    print('incomplete')\n"
            ),
            Example(
                "from mindspore import load_param_into_net\n"
                "missing, unused = load_param_into_net(net, params)\n",
                "1.10",
            ),
            Example(
                "from mindspore import load_param_into_net\nmissing, _ = load_param_into_net(net, params)\n",
                "1.10",
                fixed="from mindspore import load_param_into_net\n"
                "missing = load_param_into_net(net, params)\n",
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        if facts is None:
            return
        returns = facts.probe(PROBE, ctx.target)
        if returns not in ("list", "tuple"):
            return
        lines = source_lines(ctx.text)
        proven = facts.proven.get(PROOF) == "equal"
        discard = _LazyDiscard(ctx)
        for call in ctx.calls_to(LOAD):
            parent = ctx.parent_of(call)
            if returns == "tuple":
                found = self._pair(call, parent, facts, ctx, lines, proven, discard)
            else:
                found = self._list(call, parent, facts, ctx, lines, proven, discard)
            if found is not None:
                yield found

    def _pair(
        self,
        call: ast.Call,
        parent: Optional[ast.AST],
        facts: ApiFacts,
        ctx: FileContext,
        lines: list[str],
        proven: bool,
        discard: _LazyDiscard,
    ) -> Optional[Diagnostic]:
        if isinstance(parent, ast.Expr):
            return None  # the result is not used
        if (
            isinstance(parent, ast.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Tuple)
        ):
            return None  # unpacked: written for the pair
        message = (
            f"load_param_into_net returns the list of parameters not loaded on MindSpore "
            f"{facts.probe_span(PROBE, 'list')}, and the pair (param_not_load, ckpt_not_load) on "
            f"{facts.probe_span(PROBE, 'tuple')} of the releases checked (target {ctx.target}): a pair is "
            "always true and never the list"
        )
        single = (
            isinstance(parent, ast.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0], ast.Name)
        )
        free = discard.name() if single and proven else None
        if free is not None:
            name = parent.targets[0]  # type: ignore[union-attr]
            start = column(lines, name.lineno, name.col_offset)
            end = column(lines, name.lineno, name.end_col_offset or 0)
            edit = Edit((name.lineno, start), (name.lineno, end), f"{name.id}, {free}")  # type: ignore[attr-defined]
            fix = Fix((edit,), "exact", "unpack the pair: the name keeps the list of parameters not loaded")
            return self.diagnostic(call, message + f"; write `{name.id}, {free} = ...`", fix)  # type: ignore[attr-defined]
        return self.diagnostic(call, message + "; take its first item for the list")

    def _list(
        self,
        call: ast.Call,
        parent: Optional[ast.AST],
        facts: ApiFacts,
        ctx: FileContext,
        lines: list[str],
        proven: bool,
        discard: _LazyDiscard,
    ) -> Optional[Diagnostic]:
        unpacked = isinstance(parent, ast.Assign) and any(
            isinstance(target, ast.Tuple) for target in parent.targets
        )
        if not unpacked:
            return None
        message = (
            f"load_param_into_net returns only the list of parameters not loaded on MindSpore "
            f"{facts.probe_span(PROBE, 'list')} (target {ctx.target}), not the pair of "
            f"{facts.probe_span(PROBE, 'tuple')}: bind it to one name, and there is no list of checkpoint "
            "entries not loaded"
        )
        pair = parent.targets[0] if len(parent.targets) == 1 else None  # type: ignore[union-attr]
        kept = _kept_of_discarded_pair(pair) if proven else None
        if kept is None or discard.name() is None:  # the file's every node read only for such a pair
            return self.diagnostic(call, message)
        start = column(lines, pair.lineno, pair.col_offset)  # type: ignore[union-attr]
        end = column(lines, pair.end_lineno or pair.lineno, pair.end_col_offset or 0)  # type: ignore[union-attr]
        edit = Edit((pair.lineno, start), (pair.end_lineno or pair.lineno, end), kept)  # type: ignore[union-attr]
        fix = Fix((edit,), "exact", "bind the list of parameters not loaded, the pair's first item, alone")
        return self.diagnostic(call, message + f"; write `{kept} = ...`", fix)


def _kept_of_discarded_pair(target: Optional[ast.AST]) -> Optional[str]:
    """`missing` of `missing, _ = ...` (the second a discard no line reads: the caller checks the
    file), the name the list binds to where 1.x returns it alone; None for any other target."""
    if not isinstance(target, ast.Tuple) or len(target.elts) != 2:
        return None
    first, second = target.elts
    if isinstance(first, ast.Name) and isinstance(second, ast.Name) and second.id == "_":
        return first.id
    return None


class _LazyDiscard:
    """`_` where the file never reads it (gettext's `_` is a function), else None; looked up
    only for a site that would unpack, as it reads every node of the file."""

    def __init__(self, ctx: FileContext) -> None:
        self._ctx = ctx
        self._found: Optional[tuple[Optional[str]]] = None

    def name(self) -> Optional[str]:
        if self._found is None:
            reads = any(
                isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx, ast.Load)
                for node in self._ctx.nodes
            )
            self._found = (None if reads else "_",)
        return self._found[0]
