"""Legacy train steps behind the exactness defects; old_forms_after.py holds what ms-migrate
emitted for each before those were fixed. verify must tell every pair apart."""

import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple
from mindspore.ops import composite as C


class ScaledTwice(nn.Cell):
    """Defect 1: a loss-scaled step below 2.8, with set_grad() (SSD, WGAN, deep_and_cross)."""

    def __init__(self, network, optimizer, sens=3.0):
        super().__init__()
        self.network = network
        self.network.set_grad()
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


class StarInputs(nn.Cell):
    """Defect 2: a step that passes *inputs to a network that may take only *inputs (DETR)."""

    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, *inputs):
        loss = self.network(*inputs)
        grads = self.grad(self.network, self.weights)(*inputs)
        self.optimizer(grads)
        return loss


class OverwritesInput(nn.Cell):
    """Defect 4: the forward overwrites an input of the grad call."""

    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        label = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return label


class MergedWithoutSetGrad(nn.Cell):
    """The merge the tool made when no set_grad() was visible: PYNATIVE ran the forward twice."""

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
