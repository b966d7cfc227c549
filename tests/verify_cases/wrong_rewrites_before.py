"""Legacy train steps; wrong_rewrites_after.py holds plausible but wrong rewrites of each."""

import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple
from mindspore.ops import composite as C


class TrainLossScale(nn.Cell):
    def __init__(self, network, optimizer, sens=1024.0):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def construct(self, data, label):
        weights = self.weights
        loss = self.network(data, label)
        sens = ops.fill(ops.dtype(loss), ops.shape(loss), self.sens)
        grads = self.grad(self.network, weights)(data, label, sens)
        self.optimizer(grads)
        return loss


class TrainWithAux(nn.Cell):
    """The network returns (loss, aux); GradOperation differentiates loss + aux."""

    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        loss, aux = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss, aux


class InputGradient(nn.Cell):
    """get_all on a one-input network returns a 1-tuple."""

    def __init__(self, network):
        super().__init__()
        self.network = network
        self.grad_all = C.GradOperation(get_all=True)

    def construct(self, x):
        return self.grad_all(self.network)(x)
