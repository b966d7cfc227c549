"""The example's harness plus a `*inputs` BatchNorm train step (src/train_bn.py) for tests/test_verify.py."""

import numpy as np
import verify_harness
from mindspore import Tensor, nn


class BatchNormNet(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.RandomState(7)
        self.fc = nn.Dense(4, 2, weight_init=Tensor(rng.randn(2, 4).astype(np.float32)))
        self.bn = nn.BatchNorm1d(2)
        self.loss = nn.MSELoss()

    def construct(self, *inputs):
        return self.loss(self.bn(self.fc(inputs[0])), inputs[1])


def build(site):
    """Return (callable, inputs) for TrainBatchNorm; the example's own harness for the rest."""
    if site.__name__ == "TrainBatchNorm":
        rng = np.random.RandomState(0)
        net = BatchNormNet()
        net.set_train()
        step = site(net, nn.SGD(net.trainable_params(), learning_rate=0.05))
        x, y = rng.randn(6, 4).astype(np.float32), rng.randn(6, 2).astype(np.float32)
        return step, (Tensor(x), Tensor(y))
    return verify_harness.build(site)
