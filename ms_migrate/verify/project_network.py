"""The project's own network, for a train step the probes cannot drive: built from its class
with no arguments, in training mode, and fed inputs its layers say it takes.

A step that reads its network's attributes (`self.network.backbone`), or whose network wants
images, fails on every probe: BEFORE fails, nothing is compared. Where the run knows the class
of the network the step is given (the project index follows it across files and factories) and
that class builds with no arguments, verify runs the step on it instead. Its inputs come from its
first layer (a Dense's, a convolution's input channels, an Embedding's vocabulary; images tried
at a few sizes) and its last (the class count of a label); the first candidate that a plain
forward of BEFORE's network accepts is used for both versions.

Its dropouts are replaced with counted ones (``probe.CountedDropout``'s idea for any shape):
MindSpore's own draw new masks from run to run in one process. Randomness the network draws
some other way shows as BEFORE disagreeing with itself, and the row says so.

Imported only inside a worker (it needs MindSpore).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from mindspore import Parameter, Tensor, nn, ops

from ms_migrate.verify import compat
from ms_migrate.verify.probe import BATCH

# Larger networks take minutes a step on a CPU: verify's timeout would end them, not a verdict.
MAX_PARAMETERS = 5_000_000
IMAGE_SIDES = (32, 28, 64)  # CIFAR, MNIST, then a size most strided backbones still accept
SEQUENCE_LENGTH = 16
_DROPOUTS = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d")


class CountedAnyDropout(nn.Cell):
    """A dropout whose mask depends on each element's position and on how many forwards ran
    before (counted in a Parameter): the same masks for the same forwards in every run."""

    def __init__(self, keep: float, index: int) -> None:
        super().__init__()
        zero = Tensor(np.zeros((), np.float32))
        self.calls = Parameter(zero, name=f"counted_dropout_{index}", requires_grad=False)
        self.keep = keep
        # Primitives, which every release from 1.7 has; a threshold that keeps about `keep`.
        self.cumsum = ops.CumSum()
        self.ones_like = ops.OnesLike()
        self.reshape = ops.Reshape()
        self.threshold = float(np.cos(np.pi * keep))

    def construct(self, x):
        calls = ops.assign_add(self.calls, ops.ones((), self.calls.dtype))
        position = self.reshape(self.cumsum(self.reshape(self.ones_like(x), (-1,)), 0), x.shape)
        kept = ops.cast(ops.sin(position * 1.3 + calls * 0.7) > self.threshold, x.dtype)
        return x * kept / self.keep


def _keep_probability(dropout: nn.Cell) -> float:
    rate = getattr(dropout, "p", None)  # 2.x: the drop rate (its keep_prob is a leftover)
    if isinstance(rate, (int, float)):
        return 1.0 - float(rate)
    keep = getattr(dropout, "keep_prob", 0.5)
    return float(keep) if isinstance(keep, (int, float)) else 0.5


def replace_dropouts(network: nn.Cell) -> int:
    """Replace every MindSpore dropout Cell inside ``network`` with a ``CountedAnyDropout``; how many."""
    replaced = 0
    for _, cell in list(network.cells_and_names()):
        children = cell.name_cells()
        for attribute, child in list(children.items()):
            kind = type(child)
            if kind.__name__ not in _DROPOUTS or not kind.__module__.startswith("mindspore."):
                continue
            cell.insert_child_to_cell(attribute, CountedAnyDropout(_keep_probability(child), replaced))
            replaced += 1
        if replaced and isinstance(getattr(cell, "cell_list", None), list):
            cell.cell_list = list(cell.name_cells().values())  # SequentialCell runs its list
    return replaced


def parameter_count(network: nn.Cell) -> int:
    return int(sum(np.prod(parameter.shape) for parameter in network.get_parameters()))


@dataclass(frozen=True)
class InputSpec:
    """One seeded tensor: its shape, dtype, and for integers the values' upper bound."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    high: int = 0  # integers in [0, high)
    one_hot: bool = False

    def make(self, rng: np.random.RandomState) -> Tensor:
        if self.dtype == "int32":
            return Tensor(rng.randint(0, max(self.high, 1), self.shape).astype(np.int32))
        if self.one_hot:
            classes = self.shape[-1]
            return Tensor(np.eye(classes, dtype=np.float32)[rng.randint(0, classes, self.shape[:-1])])
        return Tensor(rng.randn(*self.shape).astype(np.float32))

    def __str__(self) -> str:
        kind = "one-hot" if self.one_hot else self.dtype
        return f"{kind}{list(self.shape)}"


def _layers(network: nn.Cell) -> list[nn.Cell]:
    kinds = (nn.Dense, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)
    return [cell for _, cell in network.cells_and_names() if isinstance(cell, kinds)]


def _features(first: nn.Cell) -> list[InputSpec]:
    if isinstance(first, nn.Embedding):
        return [InputSpec((BATCH, SEQUENCE_LENGTH), "int32", high=min(int(first.vocab_size), 64))]
    channels = int(first.in_channels)
    if isinstance(first, nn.Dense):
        return [InputSpec((BATCH, channels))]
    if isinstance(first, nn.Conv1d):
        return [InputSpec((BATCH, channels, side)) for side in (32, 64)]
    if isinstance(first, nn.Conv3d):
        return [InputSpec((BATCH, channels, side, side, side)) for side in (8, 16)]
    return [InputSpec((BATCH, channels, side, side)) for side in IMAGE_SIDES]


def _labels(last: nn.Cell, feature: InputSpec) -> list[InputSpec]:
    classes = int(getattr(last, "out_channels", 0) or getattr(last, "embedding_size", 0) or 1)
    return [
        InputSpec((BATCH,), "int32", high=classes),
        InputSpec((BATCH, classes), one_hot=True),
        InputSpec(feature.shape) if feature.dtype == "float32" else InputSpec((BATCH, classes)),
        InputSpec((BATCH,)),
    ]


def candidates(network: nn.Cell, roles: Sequence[str]) -> list[tuple[InputSpec, ...]]:
    """Inputs to try for a step whose inputs have ``roles`` ("feature", "label", "scalar"), in
    order; the scalars are left out (the step's loss scale, not the network's)."""
    layers = _layers(network)
    wanted = [role for role in roles if role != "scalar"]
    if not layers or wanted not in (["feature"], ["feature", "label"]):
        return []
    made = []
    for feature in _features(layers[0]):
        if len(wanted) == 1:
            made.append((feature,))
        else:
            made += [(feature, label) for label in _labels(layers[-1], feature)]
    return made


def seeded(specs: Sequence[InputSpec], roles: Sequence[str], seed: int) -> tuple[Tensor, ...]:
    """The step's inputs: the specs in order for its batch, 3.0 for each loss scale."""
    rng = np.random.RandomState(seed + 3)
    batch = iter(specs)
    return tuple(
        Tensor(np.array(3.0, np.float32)) if role == "scalar" else next(batch).make(rng) for role in roles
    )


def first_accepted(
    build: Callable[[], nn.Cell],
    roles: Sequence[str],
    seed: int,
    forward: Callable[[nn.Cell, tuple], None],
    describe: Callable[[BaseException], str],
) -> tuple[Optional[tuple[InputSpec, ...]], str]:
    """The first candidate that ``forward(network, inputs)`` runs on, with a fresh network from
    ``build`` for each; else None and why."""
    network = build()
    count = parameter_count(network)
    if count > MAX_PARAMETERS:
        return None, f"the project's network has {count:,} parameters, more than verify runs on a CPU"
    tried = candidates(network, roles)
    if not tried:
        return None, "no Dense, convolution or Embedding layer says what the project's network takes"
    error = ""
    for specs in tried:
        try:
            forward(build(), seeded(specs, [role for role in roles if role != "scalar"], seed))
        except Exception as failure:  # user code: a shape it rejects is the next candidate
            compat.settle_after_a_failure(failure)
            error = describe(failure)
            continue
        return specs, ""
    shown = "; ".join(" ".join(str(spec) for spec in specs) for specs in tried)
    return None, f"the project's network took none of the inputs tried ({shown}); last: {error}"
