"""The rewrite of defaulted_input_before.py: equal in PYNATIVE, but in GRAPH mode value_and_grad
counts the network's parameters, defaulted ones too, and fails where GradOperation ran."""

import mindspore
import mindspore.nn as nn


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters

    def construct(self, x, y=None):  # the signature of the network it trains
        loss, grads = mindspore.value_and_grad(self.network, None, self.weights)(x)
        self.optimizer(grads)
        return loss
