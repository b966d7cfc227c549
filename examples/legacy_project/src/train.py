# -*- coding: utf-8 -*-
"""Training entry point (1.x style)."""
import numpy as np

import mindspore as ms
import mindspore.nn as nn
from mindspore import ParameterTuple, Tensor
from mindspore.ops import composite as C

from model import build_network


class TrainOneStepCell(nn.Cell):
    """One optimisation step: forward, backward, update."""

    def __init__(self, network, optimizer):
        super(TrainOneStepCell, self).__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        # 反向传播的梯度算子
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, data, label):
        weights = self.weights
        loss = self.network(data, label)
        grads = self.grad(self.network, weights)(data, label)
        self.optimizer(grads)
        return loss


def main():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = build_network()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = TrainOneStepCell(net, opt)
    rng = np.random.RandomState(0)
    data = Tensor(rng.randn(4, 8).astype(np.float32))
    label = Tensor(np.array([0, 1, 2, 1], np.int32))
    for epoch in range(3):
        print(epoch, step(data, label))


if __name__ == "__main__":
    main()
