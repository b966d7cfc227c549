"""A function-style training step."""
import mindspore
import mindspore.ops as ops
from mindspore import nn

from model import build_network

net = build_network()
optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
weights = optimizer.parameters
grad_op = ops.GradOperation(get_by_list=True)


@mindspore.jit
def train_step(data, label):
    loss = net(data, label)
    grads = grad_op(net, weights)(
        data,
        label,
    )
    optimizer(grads)
    return loss
