"""What ms-migrate emitted for old_forms_before.py before the exactness defects were fixed."""

import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple


class ScaledTwice(nn.Cell):
    def __init__(self, network, optimizer, sens=3.0):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.sens = sens

    def construct(self, data, label):
        weights = self.weights
        loss = self.network(data, label)
        sens = ops.fill(ops.dtype(loss), ops.shape(loss), self.sens)
        def _scaled_forward(data, label):
            return self.network(data, label) * sens
        grads = ms.grad(_scaled_forward, None, weights)(data, label)
        self.optimizer(grads)
        return loss


class StarInputs(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())

    def construct(self, *inputs):
        loss, grads = ms.value_and_grad(self.network, None, self.weights)(*inputs)
        self.optimizer(grads)
        return loss


class OverwritesInput(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())

    def construct(self, data, label):
        label, grads = ms.value_and_grad(self.network, None, self.weights)(data, label)
        self.optimizer(grads)
        return label


class MergedWithoutSetGrad(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())

    def construct(self, data, label):
        loss, grads = ms.value_and_grad(self.network, None, self.weights)(data, label)
        self.optimizer(grads)
        return loss
