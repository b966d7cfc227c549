"""A legacy train step whose construct, like its network's, takes a defaulted input, `(x, y=None)`;
defaulted_input_after.py holds its rewrite, which GRAPH mode cannot run on such a network."""

import mindspore.nn as nn
import mindspore.ops as ops


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x, y=None):  # the signature of the network it trains
        loss = self.network(x)
        grads = self.grad(self.network, self.weights)(x)
        self.optimizer(grads)
        return loss
