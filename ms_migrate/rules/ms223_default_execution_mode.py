"""MS223: a script that never sets the execution mode runs in GRAPH mode on 1.x, PyNative on 2.x.

MindSpore 2.0 made PYNATIVE_MODE the default, where 1.x compiled every Cell in GRAPH_MODE (2.0.0
release notes, incompatible changes: `mindspore.set_context(mode=PYNATIVE_MODE)`, "default
changed from GRAPH_MODE to PYNATIVE_MODE",
https://www.mindspore.cn/docs/zh-CN/r2.0/RELEASE.html; 2.0.0-alpha: "The default mode of
MindSpore is switched to PyNative"). A 1.x training script that never calls
`set_context(mode=...)` keeps running on 2.x, and then runs every step op by op: slower, with
Python control flow, prints and numpy calls in `construct` that GRAPH mode compiled (or
rejected) now executed as plain Python. The defaults are read by running each release (the
probe `default mode` in rules/releases/api.json), not typed in here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional

from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity
from ms_migrate.facts.releases import api_facts
from ms_migrate.rules.base import Example, Examples, Rule

PROBE = "default mode"  # rules/releases/api.json: get_context("mode") before any set_context
SET_CONTEXT = ("mindspore.set_context", "mindspore.context.set_context")
MODES = {0: "GRAPH_MODE", 1: "PYNATIVE_MODE"}
# What makes a script a training script, whose every step the mode compiles or not: a file that
# only converts a checkpoint or post-processes outputs runs no Cell the mode would compile.
TRAINING = (
    "mindspore.Model",
    "mindspore.train.Model",
    "mindspore.train.model.Model",
    "mindspore.nn.TrainOneStepCell",
    "mindspore.nn.TrainOneStepWithLossScaleCell",
    "mindspore.ops.GradOperation",
    "mindspore.ops.composite.GradOperation",
    "mindspore.value_and_grad",
    "mindspore.grad",
    "mindspore.ops.value_and_grad",
    "mindspore.ops.grad",
)

_SCRIPT = (
    "import mindspore as ms\n\n\ndef main():\n    model = ms.Model(net, loss, optimizer)\n"
    '    model.train(1, dataset)\n\n\nif __name__ == "__main__":\n    main()\n'
)


class DefaultExecutionMode(Rule):
    """A MindSpore training script (a module with `if __name__ == "__main__":` that builds a
    `Model`, a `TrainOneStepCell` or a gradient) in which no call sets the execution mode, where
    the release the code was written for and the target start in different modes (GRAPH on
    1.7-1.10, PYNATIVE on 2.7-2.10 of the releases checked, each run to see).

    The release the code was written for is the project's MindSpore pin when the target is above
    it, or `from-version` in `[tool.ms-migrate]`; where neither says, the rule is silent. A
    `set_context(**options)` may set the mode, and counts as setting it.

    Reported, not fixed: the mode may be set by a module the script imports, or by code that runs
    before the guard, which one file does not show; and which mode to keep is the team's choice
    (GRAPH for 1.x's speed and semantics, PYNATIVE for 2.x's). The message names the call that
    keeps the old behaviour.
    """

    code = "MS223"
    title = "The default execution mode changed (GRAPH on 1.x, PYNATIVE on 2.x)"
    kind = "lint"
    severity = Severity.WARNING
    prefilter = ("__main__",)
    compares_releases = True
    examples = Examples(
        valid=(
            Example(_SCRIPT),  # nothing says which release it was written for
            Example(_SCRIPT, written_for="2.7"),
            Example(
                _SCRIPT.replace("def main", "ms.set_context(mode=ms.GRAPH_MODE)\n\n\ndef main"),
                written_for="1.10",
            ),
            Example(
                "from mindspore import Model, context\ncontext.set_context(**config.context)\n"
                'if __name__ == "__main__":\n    Model(net).train(1, data)\n',
                written_for="1.10",
            ),
            Example(  # converts a checkpoint: no Cell is trained
                "import mindspore as ms\n\n"
                'if __name__ == "__main__":\n    ms.save_checkpoint(params, "net.ckpt")\n',
                written_for="1.10",
            ),
        ),
        invalid=(Example(_SCRIPT, written_for="1.10"),),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        changed = facts and facts.change(PROBE, ctx.written_for, ctx.target, lambda answer: answer in MODES)
        if not changed:
            return
        old, new = changed
        guard = _main_guard(ctx.tree)
        if guard is None or next(ctx.calls_to(TRAINING), None) is None:
            return
        for call in ctx.calls_to(SET_CONTEXT):
            if any(keyword.arg in ("mode", None) for keyword in call.keywords):
                return  # the script sets it (or may, through **options)
        then, now = facts.probe_span(PROBE, old), facts.probe_span(PROBE, new)
        message = (
            f"no call in this script sets the execution mode: MindSpore {then}, which "
            f"this code is written for ({ctx.written_for}), runs it in {MODES[old]}, and "
            f"{now} (target {ctx.target}) in {MODES[new]}; to keep "
            f"{ctx.written_for}'s, call `set_context(mode={MODES[old]})` first thing here (unless a "
            "module it imports sets the mode)"
        )
        yield self.diagnostic(guard, message)


def _main_guard(tree: ast.Module) -> Optional[ast.If]:
    for statement in tree.body:
        if isinstance(statement, ast.If) and isinstance(statement.test, ast.Compare):
            names = [statement.test.left, *statement.test.comparators]
            if any(isinstance(name, ast.Name) and name.id == "__name__" for name in names) and any(
                isinstance(name, ast.Constant) and name.value == "__main__" for name in names
            ):
                return statement
    return None
