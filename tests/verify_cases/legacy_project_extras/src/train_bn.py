"""A train step on a BatchNorm network: the legacy forward-then-grad runs the forward twice in
PYNATIVE (no set_grad), so the moving statistics move twice. The merged rewrite runs it once."""
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

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss
