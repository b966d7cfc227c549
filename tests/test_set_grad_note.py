"""MSN001 says where set_grad() belongs: in a train step Cell's __init__, or, for a function-style
step, where the network is built (it has no __init__)."""

from __future__ import annotations

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version

IMPORTS = "import mindspore\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n"
CELL_STEP = """
class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.optimizer.parameters)(x, y)
        self.optimizer(grads)
        return loss
"""
FUNCTION_STEP = """
net = build_network()
optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
weights = optimizer.parameters
grad_op = C.GradOperation(get_by_list=True)


@mindspore.jit
def train_step(data, label):
    loss = net(data, label)
    grads = grad_op(net, weights)(data, label)
    optimizer(grads)
    return loss
"""


def _note(source: str) -> str:
    result = migrate_text(IMPORTS + source, Version(2, 10))
    assert "GradOperation" not in result.text  # converted, the forward kept separate
    (message,) = [item.message for item in result.diagnostics if item.code == "MSN001"]
    return message


def test_a_train_step_cell_is_told_to_call_set_grad_in_init() -> None:
    message = _note(CELL_STEP)
    assert message.startswith("the forward call stays separate: set_grad() is not called")
    assert message.endswith("call network.set_grad() in __init__ to have it merged.")


def test_a_function_style_step_is_told_where_else_to_call_set_grad() -> None:
    message = _note(FUNCTION_STEP)
    assert message.startswith("the forward call stays separate: set_grad() is not called")
    assert "__init__" not in message
    assert message.endswith(
        "call network.set_grad() where the network is built, before the first step, to have it merged."
    )
