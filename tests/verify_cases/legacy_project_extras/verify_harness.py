"""Verification harnesses for this project: called with each site's class or function."""

import numpy as np
from mindspore import Tensor, nn


class BatchNormNet(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(7)
        self.fc = nn.Dense(4, 2, weight_init=Tensor(rng.randn(2, 4).astype(np.float32)))
        self.bn = nn.BatchNorm1d(2)
        self.loss = nn.MSELoss()

    def construct(self, x, y):
        return self.loss(self.bn(self.fc(x)), y)


def build(site):
    """Return (callable, inputs) for the sites that need this project's shapes, else None."""
    rng = np.random.RandomState(0)
    if site.__name__ == "train_step":  # src/train_functional.py: 8 features, sparse int labels
        data = Tensor(rng.randn(4, 8).astype(np.float32))
        return site, (data, Tensor(np.array([0, 1, 2, 1], np.int32)))
    if site.__name__ == "TrainBatchNorm":
        net = BatchNormNet()
        net.set_train()
        step = site(net, nn.SGD(net.trainable_params(), learning_rate=0.05))
        x, y = rng.randn(6, 4).astype(np.float32), rng.randn(6, 2).astype(np.float32)
        return step, (Tensor(x), Tensor(y))
    return None
