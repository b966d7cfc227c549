"""MS212: a `set_context` key the target does not take, where the call raises ValueError.

`set_context(enable_dump=False, save_dump_path='.')` ran on 1.10; on 2.10 it raises "For
'context.set_context', the keyword argument enable_dump is not recognized!" before the script
does anything (https://www.mindspore.cn/docs/en/r2.0/RELEASE.html lists the removed keys of
each release). The keys each release takes are read from it (rules/releases/api.json).
"""

from __future__ import annotations

from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.releases import ApiFacts, api_facts
from ms_migrate.facts.versions import release_spans
from ms_migrate.rewrite.set_device import SET_CONTEXT
from ms_migrate.rules.base import Example, Examples, Rule

PROBE = "set_context keys"  # rules/releases/api.json: read from each release


class SetContextKeyNotInTarget(Rule):
    """A keyword of `set_context` (`mindspore.set_context`, `mindspore.context.set_context`) that
    the target does not take: the call raises ValueError there, before anything runs. The keys
    each release takes are read from it (`python -m ms_migrate.catalogue releases`: those with a
    setter, the context's public attributes, its parameter enum's public members and the names
    its source spells, less those it says were removed), so `enable_dump`, `save_dump_path`,
    `grad_for_scalar` and `precompile_only` (1.x) are reported for 2.10, while
    `enable_auto_mixed_precision`, which 2.10 takes with a warning and ignores, is not; a key no
    release read takes (`enable_mem_reuse`, 0.x) is reported for every target. The finding names
    the releases that took it.

    A key passed through `**options` is not seen. A key 2.10 still takes but deprecates is
    MS210's. Not fixed: dropping a key changes what the script asked for, and what replaces it
    (a dump configuration file, an environment variable) is not one keyword.
    """

    code = "MS212"
    title = "a set_context key the target does not take (ValueError)"
    kind = "lint"
    severity = Severity.ERROR
    prefilter = ("set_context",)
    examples = Examples(
        valid=(
            Example("import mindspore as ms\nms.set_context(max_call_depth=2000)\n"),
            Example("from mindspore import context\ncontext.set_context(enable_dump=False)\n", target="1.10"),
            Example("from mindspore import context\ncontext.set_context(**options)\n"),
        ),
        invalid=(
            Example("from mindspore import context\ncontext.set_context(enable_dump=False)\n"),
            Example("import mindspore as ms\nms.set_context(enable_mem_reuse=True)\n", target="1.10"),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        taken = facts.probe(PROBE, ctx.target) if facts is not None else None
        if facts is None or not isinstance(taken, list):
            return  # a target between two releases that disagree: not known
        for call in ctx.calls_to(SET_CONTEXT):
            for keyword in call.keywords:
                if keyword.arg is None or keyword.arg in taken:
                    continue
                took = _taken_by(facts, keyword.arg)
                message = (
                    f"`set_context` takes no `{keyword.arg}` on MindSpore {ctx.target}: the call raises "
                    f"ValueError there; {took}"
                )
                yield self.diagnostic(keyword, message)


def _taken_by(facts: ApiFacts, key: str) -> str:
    releases = sorted(
        release
        for present, answer in facts.probes.get(PROBE, ())
        if isinstance(answer, list) and key in answer
        for release in present
    )
    if not releases:
        return f"no release read ({release_spans(facts.releases)}) takes it"
    return f"MindSpore {release_spans(releases)} took it"
