# -*- coding: utf-8 -*-
"""Training entry point, written for MindSpore 1.10: a dataset pipeline, the context set up for
the CPU, a hand-written train step, a checkpoint saved and reloaded. It prints its numbers as one
JSON line; after `ms-migrate upgrade` it runs on 2.10 and prints the same ones."""
import json
import os
import tempfile

import numpy as np

import mindspore as ms
import mindspore.dataset as ds
import mindspore.nn as nn
from mindspore import ParameterTuple, context
from mindspore.dataset.transforms import c_transforms
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


def make_dataset():
    rng = np.random.RandomState(0)
    samples = {"data": rng.randn(12, 8).astype(np.float32), "label": rng.randint(0, 3, 12)}
    dataset = ds.NumpySlicesDataset(samples, shuffle=False)
    dataset = dataset.map(operations=c_transforms.TypeCast(ms.int32), input_columns="label")
    return dataset.batch(4)


def main():
    mode = context.PYNATIVE_MODE if os.environ.get("MS_MODE") == "pynative" else context.GRAPH_MODE
    context.set_context(mode=mode, device_target="CPU")
    net = build_network()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = TrainOneStepCell(net, opt)
    losses = []
    for _ in range(3):
        for batch in make_dataset().create_dict_iterator():
            losses.append(float(step(batch["data"], batch["label"]).asnumpy()))

    path = os.path.join(tempfile.mkdtemp(), "net.ckpt")
    ms.save_checkpoint(net, path)
    restored = build_network()
    ms.load_param_into_net(restored, ms.load_checkpoint(path))
    weights = {p.name: p.asnumpy().ravel().tolist() for p in restored.trainable_params()}
    print(json.dumps({"losses": losses, "restored": weights}))


if __name__ == "__main__":
    main()
