"""The engine owns every edit: a fix belongs to one site, suppressed and declined sites go with
their edits, imports change once per file, and every rule asks one resolver what a name means.

Each test here failed on `main` before the engine took these jobs from the rules."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable

from ms_migrate.context import FileContext
from ms_migrate.core.engine import (
    DOWNGRADE_KINDS,
    downgrade_text,
    migrate_text,
    rules_of_kind,
    run_rules,
)
from ms_migrate.diagnostics import Diagnostic, Edit, Fix
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Rule

TRAIN = """\
def train_{name}(model, loss_fn, optimizer, data, label):
    def forward_fn(x, y):
        return loss_fn(model(x), y)

    grad_fn = {api}(forward_fn, None, optimizer.parameters){comment}
    loss, grads = grad_fn(data, label)
    optimizer(grads)
    return loss
"""


def _two_steps(api: str, comment: str) -> str:
    return "\n\n".join(
        [
            "import mindspore as ms\n",
            TRAIN.format(name="a", api=api, comment=comment),
            TRAIN.format(name="b", api=api, comment=""),
        ]
    )


def _line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_an_ignore_comment_keeps_its_value_and_grad_site_and_the_other_converts() -> None:
    source = _two_steps("ms.value_and_grad", "  # ms-migrate: ignore[MS301]")
    result = downgrade_text(source, Version(1, 7))
    assert "grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)  # ms-migrate" in result.text
    assert result.text.count("ms.value_and_grad(") == 1 and result.converted == 1
    assert [item.code for item in result.fixed] == ["MS301"]


def test_an_ignore_comment_keeps_its_grad_site() -> None:
    source = (
        "import mindspore as ms\n\n\n"
        "def first(net, x):\n    return ms.grad(net)(x)  # ms-migrate: ignore[MS302]\n\n\n"
        "def second(net, x):\n    return ms.grad(net)(x)\n"
    )
    result = downgrade_text(source, Version(1, 7))
    assert "return ms.grad(net)(x)  # ms-migrate: ignore[MS302]" in result.text
    assert result.text.count("_grad_op(net)(x)") == 1 and result.converted == 1


def test_an_ignore_comment_keeps_its_jit_site() -> None:
    source = (
        "import mindspore as ms\n\n\n"
        "@ms.jit  # ms-migrate: ignore[MS303]\ndef first(x):\n    return x\n\n\n"
        "@ms.jit\ndef second(x):\n    return x\n"
    )
    result = downgrade_text(source, Version(1, 9))
    assert "@ms.jit  # ms-migrate: ignore[MS303]" in result.text
    assert "@ms.ms_function\ndef second" in result.text and result.converted == 1


def test_declining_one_of_two_sites_rewrites_only_the_other() -> None:
    source = _two_steps("ms.value_and_grad", "")
    declined = {("MS301", _line_of(source, "grad_fn = ms.value_and_grad"))}
    result = run_rules(source, Version(1, 7), rules_of_kind(DOWNGRADE_KINDS), declined=declined)
    assert result.text.count("ms.value_and_grad(forward_fn") == 1 and result.converted == 1
    assert "def train_a" in result.text.split("ms.value_and_grad(forward_fn")[0]


def test_two_rules_dropping_names_of_one_import_line_both_convert() -> None:
    source = (
        "from mindspore import grad, value_and_grad\n\n\n"
        + TRAIN.format(name="a", api="value_and_grad", comment="")
        + "\n\ndef train_b(net, x):\n    return grad(net)(x)\n"
    )
    result = downgrade_text(source, Version(1, 7))
    codes = [item.code for item in result.diagnostics]
    assert "MSR099" not in codes and sorted(item.code for item in result.fixed) == ["MS301", "MS302"]
    assert "from mindspore import" not in result.text and result.text.startswith("import mindspore as ms\n")
    compile(result.text, "<fixed>", "exec")


def test_one_name_of_an_import_goes_and_the_used_one_stays() -> None:
    source = "from mindspore import grad, ops\n\n\ndef step(net, x):\n    return ops.relu(grad(net)(x))\n"
    result = downgrade_text(source, Version(1, 7))
    assert result.text.startswith("import mindspore as ms\nfrom mindspore import ops\n")


def test_a_parameter_named_ms_is_not_the_module() -> None:
    source = (
        "import mindspore as ms\n\n\n"
        "def train(ms, net, x):\n    return ms.value_and_grad(net, None, net.trainable_params())(x)\n"
    )
    for target in (Version(1, 9), Version(1, 8)):
        result = downgrade_text(source, target)
        assert result.text == source and not result.fixed


def test_every_rule_resolves_names_through_the_scopes() -> None:
    source = "import mindspore as ms\n\n\ndef f(ms):\n    return ms.grad\n\n\ng = ms.grad\n"
    ctx = FileContext(source, Version(1, 9))
    outer, inner = (node for node in ast.walk(ctx.tree) if isinstance(node, ast.Attribute))
    assert ctx.qualified_name(outer) == "mindspore.grad" and ctx.qualified_name(inner) is None


def test_a_rename_to_another_module_drops_the_import_it_left_unused() -> None:
    source = (
        "from mindspore import ops\nfrom mindspore.ops import operations as P\n\n\n"
        "def stack(a, b):\n    return ops.add(P.Pack()((a, b)), 1)\n"
    )
    result = migrate_text(source, Version(2, 10))
    assert result.text == (
        "from mindspore import ops\n\n\ndef stack(a, b):\n    return ops.add(ops.Stack()((a, b)), 1)\n"
    )


def test_a_rename_keeps_an_import_that_is_still_used() -> None:
    source = (
        "from mindspore import ops\nfrom mindspore.ops import operations as P\n\n\n"
        "def stack(a, b):\n    return ops.add(P.Pack()((a, b)), P.ReLU()(a))\n"
    )
    result = migrate_text(source, Version(2, 10))
    assert "from mindspore.ops import operations as P\n" in result.text and "ops.Stack()" in result.text


class _SharedFix(Rule):
    """A rule that wrongly gives two sites one fix: the engine must not let it through."""

    code = "XS901"
    title = "toy"
    kind = "lint"

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        calls = [node for node in ast.walk(ctx.tree) if isinstance(node, ast.Call)]
        fix = Fix(tuple(Edit((call.lineno, 0), (call.lineno, 0), "_") for call in calls))
        for call in calls:
            yield self.diagnostic(call, "toy", fix)


def test_a_fix_shared_with_a_suppressed_site_is_not_applied() -> None:
    source = "a = f()  # ms-migrate: ignore[XS901]\nb = g()\n"
    result = run_rules(source, Version(2, 10), [_SharedFix()])
    assert result.text == source
    assert [item.code for item in result.diagnostics] == ["XS901", "MSR099"]
    assert result.diagnostics[0].fix is None


STEP = """\
import mindspore as ms
from mindspore import nn


class Step(nn.Cell):
    def __init__(self, net, weights):
        super().__init__()
        self.net = net
        self.net.set_grad()
        self.weights = ms.ParameterTuple(weights)

    def construct(self, x):
        loss, grads = ms.value_and_grad(self.net, None, self.weights)(x){comment}
        loss2, grads2 = ms.value_and_grad(self.net, None, self.weights)(x)
        return loss + loss2, grads, grads2
"""


def test_the_edit_two_sites_share_is_applied_once() -> None:
    result = downgrade_text(STEP.format(comment=""), Version(1, 7))
    assert result.converted == 2 and "value_and_grad" not in result.text
    assert result.text.count("self.grad = ms.ops.GradOperation(get_by_list=True)") == 1


def test_the_site_left_of_two_keeps_the_shared_edit_for_the_other() -> None:
    result = downgrade_text(STEP.format(comment="  # ms-migrate: ignore[MS304]"), Version(1, 7))
    assert result.converted == 1 and result.text.count("ms.value_and_grad(") == 1
    assert result.text.count("self.grad = ms.ops.GradOperation(get_by_list=True)") == 1


def test_a_fix_that_overlaps_another_is_applied_by_a_later_pass() -> None:
    """MS101 rewrites the grad line, MS210 renames an op inside it: the first pass applies
    MS101's, the second MS210's. One pass and a fixed-point check threw both away (MSR099)."""
    source = textwrap.dedent(
        """\
        import mindspore.nn as nn
        from mindspore import ops
        from mindspore.ops import composite as C


        class Step(nn.Cell):
            def __init__(self, network, optimizer):
                super().__init__()
                self.network = network
                self.optimizer = optimizer
                self.grad = C.GradOperation(get_by_list=True)

            def construct(self, x, y):
                grads = self.grad(self.network, self.optimizer.parameters)(x, ops.Pack()((y, y)))
                return self.optimizer(grads)
        """
    )
    result = migrate_text(source, Version(2, 8))
    assert [item.code for item in result.fixed] == ["MS101", "MS210"]
    assert "MSR099" not in [item.code for item in result.diagnostics]
    assert "ops.Stack()((y, y))" in result.text and "GradOperation" not in result.text
    assert migrate_text(result.text, Version(2, 8)).text == result.text


def test_two_sites_classes_above_one_statement_both_go_in_in_order() -> None:
    """Two value_and_grad sites in one `__init__`: each site's fix inserts its generated Cells
    above the class; the insertions are whole lines at one point, and go in together."""
    source = textwrap.dedent(
        """\
        import mindspore


        class Agent:
            def __init__(self, policy, value):
                self.policy, self.value = policy, value
                pw, vw = policy.trainable_params(), value.trainable_params()
                self.grad_policy = mindspore.value_and_grad(self.policy_loss, None, weights=pw)
                self.grad_value = mindspore.value_and_grad(self.value_loss, None, weights=vw)

            def policy_loss(self, x):
                return self.policy(x).sum()

            def value_loss(self, x, y):
                return (self.value(x) - y).sum()
        """
    )
    result = downgrade_text(source, Version(1, 7))
    assert [item.code for item in result.fixed] == ["MS301", "MS301"], result.diagnostics
    assert result.text.index("class _Forward(") < result.text.index("class _Forward2(")
    assert "value_and_grad(" not in result.text.replace("value_and_grad(fn, None", "")
    assert downgrade_text(result.text, Version(1, 7)).text == result.text
