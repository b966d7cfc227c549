"""MS222: `Model.train` without `dataset_sink_mode` sinks on 1.x and feeds step by step on 2.x.

`Model.train(epoch, train_dataset, callbacks=None, dataset_sink_mode=True, ...)` on 1.7-1.10;
`dataset_sink_mode=False` on 2.x (https://www.mindspore.cn/docs/en/r2.0/api_python/train/mindspore.train.Model.html).
A 1.x script that leaves the keyword out keeps running on 2.x, and on a GPU or Ascend its data
no longer goes through the device queue: callbacks then see every step instead of every epoch's
sink, a `LossMonitor` prints other numbers, and the speed changes. The defaults are read by
running each release (the probe `Model.train dataset_sink_mode default` in
rules/releases/api.json), not typed in here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ms_migrate.analysis.instances import InstancesOf
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Fix, Severity, source_lines
from ms_migrate.facts.releases import ApiFacts, api_facts
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.text_edits import keywords_appended
from ms_migrate.rules.base import Example, Examples, Rule

MODEL = ("mindspore.Model", "mindspore.train.Model", "mindspore.train.model.Model")
PROBE = "Model.train dataset_sink_mode default"  # rules/releases/api.json: run on each release
SINK_POSITION = 3  # train(epoch, train_dataset, callbacks, dataset_sink_mode, ...)

_SCRIPT = (
    "from mindspore import Model\n"
    "model = Model(net, loss_fn=loss, optimizer=opt)\n"
    "model.train(10, dataset, callbacks=[LossMonitor()])\n"
)


class ModelTrainSinkModeDefault(Rule):
    """`model.train(epoch, dataset)` with no `dataset_sink_mode`, where the release the code was
    written for and the target give it different defaults (True on 1.7-1.10, False on 2.7-2.10 of
    the releases checked, each run to see).

    The release the code was written for is the project's MindSpore pin when the target is above
    it (a `mindspore==1.10` project upgraded with `--target-version 2.10`), or `from-version` in
    `[tool.ms-migrate]`; where neither says, the rule cannot know what the call meant and is
    silent. `model` is a name (or `self.` attribute) the same function, class or module binds to
    `Model(...)` and to nothing else. A call with `*args` or `**kwargs` may pass the keyword, and
    is left alone.

    The fix writes the old default, `dataset_sink_mode=True`: the call then does on the target
    what it did on the release it was written for, which is what a migration is for. Drop it to
    take the new default.

    Fix safety: exact: the keyword's value is the written-for release's default, read by running
    it; on CPU, where no release sinks, both spellings run the same steps
    (tests/fixtures/scripts/model_train_1x.py prints the same numbers on 1.10 and, upgraded, on
    2.10).
    """

    code = "MS222"
    title = "Model.train's dataset_sink_mode default changed (True on 1.x, False on 2.x)"
    kind = "lint"
    release_fix = True
    severity = Severity.WARNING
    prefilter = (".train(",)
    compares_releases = True
    examples = Examples(
        valid=(
            Example(_SCRIPT, written_for="2.7"),
            Example(_SCRIPT),  # nothing says which release it was written for
            Example(
                _SCRIPT.replace("LossMonitor()])", "LossMonitor()], dataset_sink_mode=False)"),
                written_for="1.10",
            ),
            Example(_SCRIPT.replace("LossMonitor()])", "LossMonitor()], **options)"), written_for="1.10"),
        ),
        invalid=(
            Example(
                _SCRIPT,
                written_for="1.10",
                fixed=_SCRIPT.replace("()])", "()], dataset_sink_mode=True)"),
            ),
            Example(
                "import mindspore as ms\n\n\nclass Trainer:\n    def __init__(self, net):\n"
                "        self.model = ms.train.Model(net)\n\n    def run(self, data):\n"
                "        self.model.train(1, data)\n",
                written_for="1.9",
                fixed="import mindspore as ms\n\n\nclass Trainer:\n    def __init__(self, net):\n"
                "        self.model = ms.train.Model(net)\n\n    def run(self, data):\n"
                "        self.model.train(1, data, dataset_sink_mode=True)\n",
            ),
            Example(
                "from mindspore import Model\nModel(net).train(1, data, dataset_sink_mode=True)\n"
                "Model(net).train(1, data)\n",
                "1.10",
                written_for="2.8",
                fixed="from mindspore import Model\nModel(net).train(1, data, dataset_sink_mode=True)\n"
                "Model(net).train(1, data, dataset_sink_mode=False)\n",
            ),
        ),
    )

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        changed = facts and facts.change(
            PROBE, ctx.written_for, ctx.target, lambda answer: isinstance(answer, bool)
        )
        if not changed:
            return
        old, new = changed
        lines = source_lines(ctx.text)
        models = InstancesOf(ctx, MODEL)
        for call in ctx.calls:
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == "train"):
                continue
            if not models.holds(func.value, call):
                continue
            keywords = {keyword.arg for keyword in call.keywords}
            if len(call.args) > SINK_POSITION or "dataset_sink_mode" in keywords:
                continue  # said explicitly
            if None in keywords or any(isinstance(arg, ast.Starred) for arg in call.args):
                continue  # *args or **kwargs may say it
            yield self._finding(call, ctx.written_for, ctx.target, old, new, facts, lines)

    def _finding(
        self,
        call: ast.Call,
        written_for: Version,
        target: Version,
        old: bool,
        new: bool,
        facts: ApiFacts,
        lines: list[str],
    ) -> Diagnostic:
        message = (
            f"`Model.train` without `dataset_sink_mode` sinks the dataset (default {old}) on MindSpore "
            f"{facts.probe_span(PROBE, old)}, which this code is written for ({written_for}), and does not "
            f"(default {new}) on {facts.probe_span(PROBE, new)} (target {target}): on a GPU or Ascend the "
            f"steps, callbacks and speed change; write `dataset_sink_mode={old}` to keep "
            f"{written_for}'s behaviour"
        )
        if not call.args and not call.keywords:
            return self.diagnostic(call, message)
        edit = keywords_appended(call, lines, f"dataset_sink_mode={old}")
        fix = Fix((edit,), "exact", f"dataset_sink_mode={old}, {written_for}'s default")
        return self.diagnostic(call, message, fix)
