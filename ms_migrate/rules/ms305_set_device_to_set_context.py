"""MS305: `mindspore.set_device` for a MindSpore that lacks it, where `set_context` sets the device."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.releases import api_facts
from ms_migrate.reasons import Reason, registry
from ms_migrate.rewrite.set_device import DEVICE_KEYS, SET_CONTEXT
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

SET_DEVICE = "mindspore.set_device"

REASONS = registry(
    Reason(
        "MSR028",
        "downgrade-set-device-form",
        "this set_device call has no set_context spelling known to do the same",
        "`ms.set_device(target)`, `ms.set_device(target, device_id)` and their keyword forms, each a "
        "statement of its own, respell exactly as `ms.set_context(device_target=target, "
        "device_id=device_id)`. A call whose value is used, one with starred or unknown arguments or "
        "no device_target, one with a comment inside it, and one spelled through `from mindspore "
        "import set_device` (whose import would have to change with it) are left as they are. Write the "
        "`set_context(device_target=..., device_id=...)` call by hand.",
    ),
)

# What each invalid example below is fixed to (run alone, on its target).
FIXED_TARGET = """\
import mindspore as ms

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_context(device_target="CPU")
"""

FIXED_BOTH = """\
import mindspore

mindspore.set_context(device_target=target, device_id=int(rank))
"""


class SetDeviceToSetContext(Rule):
    """`mindspore.set_device(device_target, device_id=None)` does not exist on the target; the same
    device is set by `set_context(device_target=..., device_id=...)`.

    MindSpore 2.x added `mindspore.set_device` and deprecated the `device_target` and `device_id`
    keys of `set_context` (https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.set_device.html);
    of the releases checked, 1.7 to 1.10 lack it ("module 'mindspore' has no attribute
    'set_device'"). The two spellings leave the same context (mode, device target, device id:
    rules/releases/proofs.json, the pair MS210 splits `set_context` into when upgrading, with
    set_context run on 2.9 and on the real 1.7-1.10), so a downgrade writes MS210's split
    backwards, where the proof ran on the target's releases (a release fix: `downgrade --verify`
    takes it as proven): `ms.set_device("Ascend", 1)` becomes
    `ms.set_context(device_target="Ascend", device_id=1)`, through the same module reference. A
    call in another form is left alone (MSR028).
    """

    code = "MS305"
    title = "set_device for a MindSpore without it is set_context(device_target=...)"
    kind = "downgrade"
    release_fix = True
    severity = Severity.ERROR
    targets = VersionRange(high="2.7")
    prefilter = ("set_device",)
    reasons = REASONS
    examples = Examples(
        valid=(Example('import mindspore as ms\n\nms.set_context(device_target="CPU")\n', "1.10"),),
        invalid=(
            Example(
                'import mindspore as ms\n\nms.set_context(mode=ms.GRAPH_MODE)\nms.set_device("CPU")\n',
                "1.10",
                fixed=FIXED_TARGET,
            ),
            Example(
                "import mindspore\n\nmindspore.set_device(target, device_id=int(rank))\n",
                "1.7",
                fixed=FIXED_BOTH,
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        if facts is None or facts.has_name(SET_DEVICE, ctx.target) is not False:
            return
        pair = (SET_CONTEXT[1], SET_DEVICE)
        # The pair's proof ran set_context on the target's own releases (each of 1.7-1.10).
        proven = facts.proven.get(pair) == "equal" and set(facts.around(ctx.target)) <= facts.proven_on.get(
            pair, frozenset()
        )
        lines = source_lines(ctx.text)
        message = (
            f"mindspore.set_device is not in MindSpore {ctx.target}: first in "
            f"{facts.first_with(SET_DEVICE, ctx.target)} of the releases checked ({facts.checked()}); "
            "set the device with set_context(device_target=..., device_id=...)"
        )
        for call in ctx.calls_to((SET_DEVICE,)):
            problem = _problem(ctx, call) if proven else "the pair is not proven"
            if problem is not None:
                yield REASONS["MSR028"].at(call.lineno, problem)
                continue
            func = call.func
            assert isinstance(func, ast.Attribute)
            base = ast.get_source_segment(ctx.text, func.value) or ast.unparse(func.value)
            values = [ast.get_source_segment(ctx.text, arg) or ast.unparse(arg) for arg in call.args]
            values += [
                ast.get_source_segment(ctx.text, item.value) or ast.unparse(item.value)
                for item in call.keywords
            ]
            keys = [*DEVICE_KEYS[: len(call.args)], *(item.arg or "" for item in call.keywords)]
            written = ", ".join(f"{key}={value}" for key, value in zip(keys, values))
            end = call.end_lineno or call.lineno
            edit = Edit(
                (call.lineno, column(lines, call.lineno, call.col_offset)),
                (end, column(lines, end, call.end_col_offset or 0)),
                f"{base}.set_context({written})",
            )
            fix = Fix((edit,), "exact", "set the device with set_context (the same context)")
            yield self.diagnostic(call, message, fix)


def _problem(ctx: FileContext, call: ast.Call) -> Optional[str]:
    """Why ``call`` has no exact set_context spelling here, or None."""
    if not isinstance(ctx.parent_of(call), ast.Expr):
        return "its value is used (set_context returns nothing to stand in for it)"
    if not isinstance(call.func, ast.Attribute):
        return "it is spelled through `from mindspore import set_device`, whose import would change with it"
    if any(isinstance(arg, ast.Starred) for arg in call.args) or len(call.args) > len(DEVICE_KEYS):
        return "its positional arguments are not (device_target, device_id)"
    keys = [item.arg for item in call.keywords]
    allowed = DEVICE_KEYS[len(call.args) :]
    if any(key not in allowed for key in keys) or len(set(keys)) != len(keys):
        return "its keyword arguments are not device_target and device_id"
    if not call.args and DEVICE_KEYS[0] not in keys:
        return "it names no device_target, which set_device requires (the call raises as it is)"
    if "#" in (ast.get_source_segment(ctx.text, call) or ""):
        return "a comment inside the call would be lost"
    return None
