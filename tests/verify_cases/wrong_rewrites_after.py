"""Plausible but wrong rewrites of wrong_rewrites_before.py."""

import mindspore as ms
import mindspore.nn as nn
from mindspore import ParameterTuple


class TrainLossScale(nn.Cell):
    def __init__(self, network, optimizer, sens=1024.0):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.sens = sens

    def construct(self, data, label):
        weights = self.weights
        loss, grads = ms.value_and_grad(self.network, None, weights)(data, label)  # sens dropped
        self.optimizer(grads)
        return loss


class TrainWithAux(nn.Cell):
    """has_aux=True: only the loss is differentiated now."""

    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())

    def construct(self, data, label):
        (loss, aux), grads = ms.value_and_grad(self.network, None, self.weights, has_aux=True)(data, label)
        self.optimizer(grads)
        return loss, aux


class InputGradient(nn.Cell):
    """grad(f, 0) returns a bare tensor, not the 1-tuple GradOperation(get_all=True) returned."""

    def __init__(self, network):
        super().__init__()
        self.network = network

    def construct(self, x):
        return ms.grad(self.network, 0)(x)
