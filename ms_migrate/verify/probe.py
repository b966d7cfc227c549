"""The automatic harness's network, inputs and optimizers: small, seeded, identical for both versions.

Imported only inside a worker (it needs MindSpore). The networks are module-level classes with
fixed-arity ``construct`` signatures because GRAPH mode parses a Cell's source and rejects
differentiating a ``*inputs`` construct with positional grads.

One tanh layer is enough to tell exact rewrites from wrong ones (a dropped loss scale, a doubled
gradient, aux outputs differentiated or not) and compiles about twice as fast as two Dense layers,
which matters when every site is compiled four times per mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mindspore import Parameter, Tensor, nn, ops

BATCH, FEATURES, TARGETS = 6, 4, 2
LEARNING_RATE, MOMENTUM = 0.05, 0.9
OPTIMIZERS = ("SGD", "Momentum")


class _Probe(nn.Cell):
    """tanh(x W + b) against a label; extra outputs are weight-dependent auxiliaries."""

    def __init__(self, outputs: int = 1) -> None:
        super().__init__()
        rng = np.random.RandomState(7)
        self.weight = Parameter(Tensor(rng.randn(FEATURES, TARGETS).astype(np.float32) * 0.5), name="weight")
        self.bias = Parameter(Tensor(rng.randn(TARGETS).astype(np.float32) * 0.1), name="bias")
        self.outputs = outputs

    def finish(self, x, label):
        out = ops.tanh(ops.matmul(x, self.weight) + self.bias)
        loss = ops.reduce_mean((out - label) ** 2)
        if self.outputs == 1:
            return loss
        if self.outputs == 2:
            return loss, ops.reduce_mean(out)
        return loss, ops.reduce_mean(out), ops.reduce_mean(out * out)


class Probe1(_Probe):
    def construct(self, x):
        return self.finish(x, 0.0)


class Probe2(_Probe):
    def construct(self, x, label):
        return self.finish(x, label)


class Probe3(_Probe):
    def construct(self, x, x2, label):
        return self.finish(x + 0.5 * x2, label)


class Probe4(_Probe):
    def construct(self, x, x2, x3, label):
        return self.finish(x + 0.5 * x2 + 0.25 * x3, label)


class Probe5(_Probe):
    def construct(self, x, x2, x3, x4, label):
        return self.finish(x + 0.5 * x2 + 0.25 * x3 + 0.125 * x4, label)


class Probe6(_Probe):
    def construct(self, x, x2, x3, x4, x5, label):
        return self.finish(x + 0.5 * x2 + 0.25 * x3 + 0.125 * x4 + 0.0625 * x5, label)


_BY_ARITY = {1: Probe1, 2: Probe2, 3: Probe3, 4: Probe4, 5: Probe5, 6: Probe6}


def network(inputs: int, outputs: int) -> nn.Cell:
    return _BY_ARITY[inputs](outputs)


def seeded_inputs(roles: Sequence[str], seed: int) -> tuple[Tensor, ...]:
    """One seeded tensor per role: features (6, 4), a label (6, 2), or a scalar loss scale.

    The scalar is 3.0, not a power of two, so a rewrite that multiplies the gradients by sens
    after the fact rounds differently from one that seeds backprop with it.
    """
    rng = np.random.RandomState(seed + 3)
    made = []
    for role in roles:
        if role == "scalar":
            made.append(Tensor(np.array(3.0, np.float32)))
        else:
            shape = (BATCH, TARGETS) if role == "label" else (BATCH, FEATURES)
            made.append(Tensor(rng.randn(*shape).astype(np.float32)))
    return tuple(made)


def optimizer(kind: str, net: nn.Cell) -> nn.Optimizer:
    if kind == "SGD":
        return nn.SGD(net.trainable_params(), learning_rate=LEARNING_RATE)
    return nn.Momentum(net.trainable_params(), learning_rate=LEARNING_RATE, momentum=MOMENTUM)
