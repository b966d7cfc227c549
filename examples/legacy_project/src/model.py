"""A small classifier and its loss."""
import mindspore.nn as nn


class SmallNet(nn.Cell):
    def __init__(self, num_classes=3):
        super(SmallNet, self).__init__()
        self.fc1 = nn.Dense(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, num_classes)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def build_network():
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return nn.WithLossCell(SmallNet(), loss)
