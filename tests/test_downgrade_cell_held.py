"""MS301 on a Cell that holds value_and_grad (`self.grad_fn = value_and_grad(self.forward, ...)`):
what it converts, and what it leaves alone with which reason. The numbers and the parameter names
of the converted form are proven by tests/fixtures/downgrade/cell_held_wrapper_1_7.py."""

from __future__ import annotations

import pytest

from ms_migrate.core.engine import downgrade_text
from ms_migrate.facts.versions import Version

STEP = """\
import mindspore as ms
from mindspore import nn


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad_fn = ms.value_and_grad(self.forward, None, optimizer.parameters)

    def forward(self, x, y):
        return self.network(x, y)

    def construct(self, x, y):
        loss, grads = self.grad_fn(x, y)
        self.optimizer(grads)
        return loss
"""


def _codes(text: str) -> list[str]:
    return [item.code for item in downgrade_text(text, Version(1, 7)).diagnostics]


def test_a_cell_holds_the_weights_unregistered_and_is_told_about_set_grad() -> None:
    result = downgrade_text(STEP, Version(1, 7))
    assert result.fixed and "ms.value_and_grad" not in result.text
    assert 'object.__setattr__(self, "weights", weights)' in result.text
    assert "self.grad_fn = _ValueAndGrad(_Forward(self.forward), optimizer.parameters)" in result.text
    assert [item.code for item in result.diagnostics] == ["MS301", "MSN004"]


def test_a_plain_class_registers_the_weights_as_before() -> None:
    plain = STEP.replace("class TrainStep(nn.Cell):", "class TrainStep:")
    plain = plain.replace("        super().__init__()\n", "")
    result = downgrade_text(plain, Version(1, 7))
    assert result.fixed and "        self.weights = weights\n" in result.text
    assert "object.__setattr__" not in result.text and "MSN004" not in _codes(plain)


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        # PYNATIVE records the whole step of a set_grad() Cell: GradOperation runs the forward again.
        (("    self.grad_fn =", "    self.set_grad()\n        self.grad_fn ="), "set_grad() is called"),
        (("", "\nstep = TrainStep(None, None)\nstep.set_grad()\n"), "set_grad() is called on"),
        (("", "\nTrainStep(None, None).set_grad(True)\n"), "set_grad() is called on"),
        # Cell.__setattr__ of a Cell before Cell.__init__ raises where the function did not.
        (("        super().__init__()\n", ""), "assigned before TrainStep's super().__init__()"),
        # A base of the user's own may hold or call what the analysis cannot see.
        (("class TrainStep(nn.Cell):", "class TrainStep(MyCell):"), "base class other than object or"),
        (("loss, grads = self.grad_fn(x, y)", "loss, grads = run(self.grad_fn, x, y)"), "used other than"),
        (("", "\n\nclass Tuned(TrainStep):\n    pass\n"), "Tuned subclasses TrainStep"),
        (("import mindspore as ms\n", "import mindspore as ms\nobject = None\n"), "binds `object`"),
    ],
)
def test_a_cell_is_left_alone_with_why(change: tuple[str, str], detail: str) -> None:
    old, new = change
    source = STEP.replace(old, new, 1) if old else STEP + new
    assert source != STEP
    result = downgrade_text(source, Version(1, 7))
    refusals = [item for item in result.diagnostics if item.code == "MSR020"]
    assert result.text == source and len(refusals) == 1, result.diagnostics
    assert detail in refusals[0].message


def test_set_grad_on_the_network_inside_still_converts() -> None:
    """Measured on MindSpore 2.10: set_grad() on the network the step holds changes nothing."""
    inside = "        self.network = network\n"
    source = STEP.replace(inside, inside + "        network.set_grad()\n")
    assert downgrade_text(source, Version(1, 7)).fixed
