"""A small classifier and its loss.

The weights come from a seeded NumPy generator, so the script prints the same numbers on every
MindSpore release (each release's default initializers draw differently)."""
import numpy as np

import mindspore.nn as nn
from mindspore import Tensor


def _weight(shape, seed):
    return Tensor(np.random.RandomState(seed).standard_normal(shape).astype(np.float32) * 0.3)


class SmallNet(nn.Cell):
    def __init__(self, num_classes=3):
        super(SmallNet, self).__init__()
        self.fc1 = nn.Dense(8, 16, weight_init=_weight((16, 8), 1), bias_init=_weight((16,), 2))
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, num_classes, weight_init=_weight((num_classes, 16), 3), bias_init=_weight((num_classes,), 4))

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def build_network():
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return nn.WithLossCell(SmallNet(), loss)
