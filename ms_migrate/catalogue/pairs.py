"""Prove each release pair by running it: the old spelling on the last release that has it, the new
one on the target, the same inputs, the numbers compared. A pair that is not equal is not a fix.

``python -m ms_migrate.catalogue prove --out rules/releases/proofs.json`` runs every case of
``rules/releases/proof_cases.json`` (each runtime made first: ``ms-migrate runtime install
--all``) and writes one row per pair; ``docs/release-pairs.md`` is rendered from those rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ms_migrate.catalogue.releases import run_in_runtime
from ms_migrate.facts.releases import ApiFacts
from ms_migrate.facts.versions import Version

GENERATOR = "ms-migrate catalogue prove"
RTOL = 1e-6  # floats: jit may fuse differently across releases; pixels and ints compare exactly


@dataclass(frozen=True)
class Case:
    old: str
    new: str
    call: str
    setup: str
    inputs: str
    new_call: str = ""  # where the new spelling is called otherwise (a call split in two)
    old_release: str = ""  # where the old side runs, when not the last release before the target
    # Keywords the case passes where both spellings take them only through **kwargs: proven for
    # these, a use passing them binds alike (releases.binds_alike); any other is not fixed.
    keywords: tuple[str, ...] = ()
    # Parameters whose default the releases changed, left out by one call run on both sides:
    # equal results say the new default does what the old one did (TrainOneStepCell's `sens`,
    # 1.0 then None), so leaving it out is no change of meaning. Such a case is no fix pair.
    unchanged: tuple[str, ...] = ()

    def side(self, new_side: bool) -> dict[str, str]:
        name = self.new if new_side else self.old
        module = name.rpartition(".")[0]
        call = self.new_call if new_side and self.new_call else self.call
        return {"name": name, "call": call, "setup": self.setup.replace("{module}", module)}


def load_cases(path: Path) -> list[Case]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Case(
            item["old"],
            item["new"],
            item["call"],
            item.get("setup", ""),
            item.get("inputs", ""),
            item.get("new_call", ""),
            item.get("old_release", ""),
            tuple(item.get("keywords", ())),
            tuple(item.get("unchanged", ())),
        )
        for item in data["cases"]
    ]


def run_side(python: str, cases: list[dict[str, str]], timeout: float = 600) -> list[dict[str, Any]]:
    """``pair_side`` run by a runtime's interpreter on ``cases``: one row each, or the error
    that stopped the runtime for those it did not reach."""
    completed = run_in_runtime(
        python, "ms_migrate.catalogue.pair_side", stdin=json.dumps(cases), timeout=timeout
    )
    rows = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
    if len(rows) != len(cases):
        tail = completed.stderr.strip().splitlines()[-1:] or ["no output"]
        rows += [{"error": f"the runtime stopped: {tail[0][:200]}"}] * (len(cases) - len(rows))
    return rows


def same(before: Any, after: Any) -> bool:
    """Outputs equal: the same structure, dtypes and shapes, integers exactly, floats to RTOL."""
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(same(x, y) for x, y in zip(before, after))
    if isinstance(before, dict) and isinstance(after, dict):
        if before.get("dtype") != after.get("dtype") or before.get("shape") != after.get("shape"):
            return False
        return _values_close(before.get("values"), after.get("values"))
    return bool(before == after)


def _values_close(before: Any, after: Any) -> bool:
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(_values_close(x, y) for x, y in zip(before, after))
    if isinstance(before, float) or isinstance(after, float):
        return math.isclose(before, after, rel_tol=RTOL, abs_tol=RTOL)
    return bool(before == after)


def verdict(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    if "error" in before:
        return f"the old spelling fails: {before['error']}"
    if "error" in after:
        return f"the new spelling fails: {after['error']}"
    return "equal" if same(before["output"], after["output"]) else "differs"


def prove(cases: list[Case], facts: ApiFacts, pythons: Mapping[Version, str]) -> dict[str, Any]:
    """Run every case; the old side on the newest release before the target that has it."""
    target = max(facts.releases)
    plans: dict[Version, list[tuple[int, str]]] = {}
    old_on: list[Optional[Version]] = []
    for index, case in enumerate(cases):
        release = Version.parse(case.old_release) if case.old_release else facts.last_with(case.old, target)
        old_on.append(release)
        if release is not None:
            plans.setdefault(release, []).append((index, "old"))
        plans.setdefault(target, []).append((index, "new"))
    outputs: dict[tuple[int, str], dict[str, Any]] = {}
    for release, work in plans.items():
        sides = [cases[index].side(side == "new") for index, side in work]
        for key, row in zip(work, run_side(pythons[release], sides)):
            outputs[key] = row
    pairs = []
    for index, case in enumerate(cases):
        release = old_on[index]
        before = outputs.get((index, "old"), {"error": "no release checked has it"})
        pairs.append(
            {
                "old": case.old,
                "new": case.new,
                "old_on": facts.labels.get(release, "") if release is not None else "",
                "new_on": facts.labels[target],
                "call": f"{case.call} / {case.new_call}" if case.new_call else case.call,
                "inputs": case.inputs,
                **({"keywords": list(case.keywords)} if case.keywords else {}),
                **({"unchanged": list(case.unchanged)} if case.unchanged else {}),
                "result": verdict(before, outputs[(index, "new")]),
            }
        )
    return {"generator": GENERATOR, "pairs": pairs}


def _through_kwargs(keywords: Sequence[str]) -> str:
    if not keywords:
        return ""
    named = ", ".join(f"`{keyword}=`" for keyword in keywords)
    return f"; {named} through `**kwargs` on both sides, the only keywords a fix passes so"


def _left_out(parameters: Sequence[str]) -> str:
    if not parameters:
        return ""
    named = ", ".join(f"`{parameter}`" for parameter in parameters)
    return f"; the same call on both sides, leaving out {named}, whose default changed: no fix, no finding"


def render_table(proofs: Mapping[str, Any]) -> str:
    """The Markdown table of ``docs/release-pairs.md``."""
    rows = [
        "| old spelling | new spelling | old on | new on | call | inputs | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for pair in proofs["pairs"]:
        cells = [
            f"`{pair['old']}`",
            f"`{pair['new']}`",
            pair["old_on"],
            pair["new_on"],
            f"`{pair['call']}`",
            pair["inputs"] + _through_kwargs(pair.get("keywords", ())) + _left_out(pair.get("unchanged", ())),
            pair["result"],
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"
