"""MS227: a MindSpore call whose result has other parts, in another order or of other dtypes, on
the target than on the release the code is written for.

`ops.max(x, axis=1)` returns `(indices, values)` on 1.x and `(values, indices)` on 2.x
(https://www.mindspore.cn/docs/en/r2.0/api_python/ops/mindspore.ops.max.html); `ops.std(x)` the
pair `(std, mean)` on 1.10 and the deviation alone on 2.x; `ArgMaxWithValue`'s indices are int32
on 1.x and int64 on 2.x. Unpacked as before, the code runs on the target with the values and
indices swapped; no signature shows it, so each release was run to see (rules/releases/api.json).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.releases import ApiFacts, api_facts
from ms_migrate.facts.return_probes import GIVES, RETURN_PROBES, RETURNS
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule


class CallReturnsOtherwise(Rule):
    """A call of a MindSpore function or operation whose result, run on fixed inputs on each
    release (`python -m ms_migrate.catalogue releases`), has other parts, in another order or of
    other dtypes, on the target than on the release the code is written for: `ops.max` and
    `ops.min` with an axis (`(int32, float32)`, indices first, on 1.8-1.10; `(float32, int64)`,
    values first, on 2.7-2.10), `ops.std` (the pair `(std, mean)` on 1.9-1.10, the deviation
    alone on 2.x, and the deviation itself unbiased on 1.10 and biased on 2.x), `ops.dropout`
    (`(output, mask)` on 1.9-1.10, the output alone on 2.x: `out, mask = ops.dropout(x)` then
    splits the output by rows), `ops.argmax` (int32, then int64), and
    `ArgMaxWithValue`/`ArgMinWithValue` (int64 indices on 2.x). Where a call that draws nothing at
    random gives other numbers in a first part of one dtype on both, the finding says so, and a
    call whose parts are the same but whose numbers are not is reported for that alone. The
    finding names the call each release ran and what it gave.

    The release the code is written for is the project's pin below the target or `from-version`
    (a release not read is compared as the releases read either side of it, where they agree);
    without it the rule is silent. A call spelled through a package on the way to where the
    object is defined (`P.ArgMaxWithValue`, from `mindspore.ops.operations`) is the same call.

    Fix safety: none. Swapping the names a pair is unpacked into would still leave the indices
    of another dtype, and a result used any other way (indexed, passed on) cannot be followed:
    each use is left to read.
    """

    code = "MS227"
    title = "a MindSpore call whose result has other parts, order or dtypes on the target"
    kind = "lint"
    severity = Severity.WARNING
    compares_releases = True
    prefilter = ("mindspore",)
    examples = Examples(
        valid=(
            Example("from mindspore import ops\nvalues, indices = ops.max(x, axis=1)\n", written_for="2.7"),
            Example("from mindspore import ops\nvalues, indices = ops.sort(x)\n", written_for="1.10"),
            Example("from mindspore import ops\nindices, values = ops.max(x, axis=1)\n"),
        ),
        invalid=(
            Example("from mindspore import ops\nindices, values = ops.max(x, axis=1)\n", written_for="1.10"),
            Example("from mindspore import ops\nstd, mean = ops.std(x)\n", written_for="1.10"),
            Example(
                "from mindspore.ops import operations as P\nfind = P.ArgMaxWithValue(axis=1)\n",
                written_for="1.10",
            ),
            Example(
                "from mindspore import ops\nvalues, indices = ops.max(x, axis=1)\n",
                "1.10",
                written_for="2.10",
            ),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        pattern = _changed_calls()
        return (
            target in self.targets
            and "mindspore" in text
            and pattern is not None
            and bool(pattern.search(text))
        )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        written_for = ctx.written_for
        if facts is None or written_for is None or written_for == ctx.target:
            return
        changed = _changed(facts, written_for, ctx.target)
        releases = (*facts.around(written_for), *facts.around(ctx.target))
        spellings = {alias: name for name in changed for alias in facts.spellings(name, releases)}
        for call in ctx.calls_to(spellings):
            name = spellings[ctx.qualified_name(call.func) or ""]
            change = changed[name]
            ran = f"`{RETURN_PROBES[name]}` run on each"
            numbers = ""
            if change.numbers is not None:
                before, after = change.numbers
                shown = _listed(before), _listed(after)
                numbers = f"its first part is {shown[0]} on {written_for} and {shown[1]} on {ctx.target}"
            if change.old == change.new:
                message = (
                    f"`{_short(name)}` gives other numbers on MindSpore {ctx.target} than on {written_for}, "
                    f"which this code is written for ({ran}): {numbers}; check how the result is used"
                )
            else:
                also = f"; {numbers}" if numbers else ""
                message = (
                    f"`{_short(name)}` returns {change.old} on MindSpore {written_for}, which this code is "
                    f"written for, and {change.new} on {ctx.target} ({ran}): "
                    f"{_what_changed(change.old, change.new)}{also}; check how the result is used"
                )
            yield self.diagnostic(call.func, message)


def _listed(numbers: list[float]) -> str:
    return ", ".join(f"{number:g}" for number in numbers)


def _short(name: str) -> str:
    return name.replace("mindspore.", "", 1)


def _what_changed(old: str, new: str) -> str:
    parts_old, parts_new = _parts(old), _parts(new)
    if len(parts_old) != len(parts_new):
        return f"{len(parts_old)} part{'s' if len(parts_old) != 1 else ''} became {len(parts_new)}"
    kinds_old, kinds_new = [_kind(part) for part in parts_old], [_kind(part) for part in parts_new]
    if kinds_old != kinds_new and sorted(kinds_old) == sorted(kinds_new):
        return "its parts come in another order"
    changed = [f"{before} became {after}" for before, after in zip(parts_old, parts_new) if before != after]
    return ("its dtype changed: " if len(parts_new) == 1 else "a part's dtype changed: ") + ", ".join(changed)


def _parts(answer: str) -> list[str]:
    return (
        [part.strip() for part in answer.strip("()").split(",") if part.strip()]
        if answer.startswith("(")
        else [answer]
    )


def _kind(dtype: str) -> str:
    """int32 and int64 are both indices; float32 and float16 both values."""
    return re.sub(r"\d+$", "", dtype)


def _answered(answer: object) -> bool:
    """An answer of either probe that says something: a structure, or numbers."""
    return _known(answer) or (isinstance(answer, list) and bool(answer))


def _known(answer: object) -> bool:
    return isinstance(answer, str) and not answer.startswith("error")


@dataclass(frozen=True)
class Change:
    """What a probed call gave on the two releases: its structure and dtypes on each, and the
    first numbers of its first part where that part is of one dtype on both and they differ."""

    old: str
    new: str
    numbers: Optional[tuple[list[float], list[float]]] = None


Changed = dict[str, Change]
_CHANGED: dict[tuple[Version, Version], Changed] = {}


def _changed(facts: ApiFacts, written_for: Version, target: Version) -> Changed:
    """Each probed name whose result differs between the two releases, in its parts or its
    numbers."""
    key = (written_for, target)
    if key not in _CHANGED:
        found = {}
        for name in RETURN_PROBES:
            old, new = facts.probe(RETURNS + name, written_for), facts.probe(RETURNS + name, target)
            if not (_known(old) and _known(new)):
                continue
            before, after = facts.probe(GIVES + name, written_for), facts.probe(GIVES + name, target)
            same_first = _parts(old)[:1] == _parts(new)[:1]
            numbers = (before, after) if same_first and before and after and before != after else None
            if old != new or numbers is not None:
                found[name] = Change(old, new, numbers)
        _CHANGED[key] = found
    return _CHANGED[key]


@cache
def _changed_calls() -> Optional[re.Pattern[str]]:
    """The last parts of the names whose result differs between any two releases read: a file
    that calls none of them is not parsed for this rule."""
    facts = api_facts()
    if facts is None:
        return None
    names = {
        name.rpartition(".")[2]
        for name in RETURN_PROBES
        for probe in (RETURNS + name, GIVES + name)
        if len({str(answer) for _, answer in facts.probes.get(probe, ()) if _answered(answer)}) > 1
    }
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\s*\(") if names else None
