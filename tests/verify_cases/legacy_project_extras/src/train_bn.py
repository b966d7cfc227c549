"""A `*inputs` train step whose network's class the tool cannot see (it is built by the project's
verify factory): left alone (MSR019). The factory's network takes only `*inputs`, which GRAPH mode
cannot differentiate directly, as the rewrite once did."""
import mindspore.nn as nn
from mindspore import ParameterTuple
from mindspore.ops import composite as C


class TrainBatchNorm(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, *inputs):
        loss = self.network(*inputs)
        grads = self.grad(self.network, self.weights)(*inputs)
        self.optimizer(grads)
        return loss
