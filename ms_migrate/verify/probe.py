"""The automatic harness's network, inputs and optimizers: small, seeded, identical for both versions.

Imported only inside a worker (it needs MindSpore). The networks are module-level classes because
GRAPH mode parses a Cell's source.

One tanh layer is enough to tell most wrong rewrites from exact ones (a dropped loss scale, a
doubled gradient, aux outputs differentiated or not) and compiles about twice as fast as two Dense
layers. A stateless probe cannot see a forward that runs twice, though: two non-exact forms once
passed every test that way. So each train step also runs on variants (``VARIANTS``):

- "stateful": BatchNorm (running statistics, updated once per forward) and a dropout (a new mask
  per forward) between the layer and the tanh, with and without ``set_grad()`` on the network;
- "varargs": the same behind ``construct(self, *inputs)``, which GRAPH mode cannot differentiate
  with ``mindspore.grad``/``value_and_grad`` directly; run for train steps that pass ``*inputs``.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Optional, Union

import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn, ops
from mindspore.nn.learning_rate_schedule import LearningRateSchedule

BATCH, FEATURES, TARGETS = 6, 4, 2
# Features as images (batch, channels, height, width) for a step that needs them (a gradient
# penalty mixing real and fake images by a (batch, 1, 1, 1) weight): FEATURES numbers each.
IMAGE = (BATCH, 1, 2, 2)
# Then as RGB images, channels last (batch, height, width, 3), for a step that normalises them
# itself before the network (CenterNet's `(image / 255 - mean) / std` against a (1, 1, 1, 3) mean):
# more numbers than FEATURES, of which the probe reads the first FEATURES.
IMAGE_CHANNELS_LAST = (BATCH, 2, 2, 3)
IMAGE_SHAPES = (IMAGE, IMAGE_CHANNELS_LAST)
LEARNING_RATE, MOMENTUM = 0.05, 0.9
OPTIMIZERS = ("SGD", "Momentum")


# Rows of the counted dropout's mask: a step may join up to four of the probe's batches.
DROPOUT_ROWS = 4 * BATCH


class CountedDropout(nn.Cell):
    """Dropout whose mask is a function of how many forwards ran before, counted in a Parameter.

    MindSpore's own Dropout is not reproducible inside one process: in PYNATIVE mode its kernels
    keep random state across Cells built from the same seed, so BEFORE and AFTER would draw
    different masks by accident (seen on 2.10, in about half of the runs). This one draws the same
    masks for the same sequence of forwards, a new mask for every forward, and its counter is state
    that differs when one version runs the forward more often.
    """

    def __init__(self, shape: tuple[int, ...] = (DROPOUT_ROWS, TARGETS)) -> None:
        super().__init__()
        self.calls = Parameter(Tensor(np.zeros((), np.float32)), name="dropout_calls", requires_grad=False)
        self.pattern = Tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))

    def construct(self, x):
        calls = ops.assign_add(self.calls, ops.ones((), self.calls.dtype))
        # As many rows of the pattern as the batch has (the first BATCH rows are the same whatever
        # it holds): a step that splits its batch into micro-batches (differential privacy's
        # per-sample clipping) passes a part of it, one that joins two batches (UniSiam's two
        # views) twice as many.
        pattern = self.pattern[: x.shape[0]]
        keep = ops.cast(ops.sin(pattern * 1.3 + calls * 0.7) > -0.4, x.dtype)
        return x * keep * 1.6


class PortableBatchNorm(nn.Cell):
    """BatchNorm1d in training mode, written in elementwise ops so that every MindSpore computes it
    alike: 1.x's BatchNorm updates the moving variance with the biased batch variance, 2.x with
    the unbiased one (measured: 0.954 against 0.965 after one step of the same batch), which says
    nothing about a rewrite. Used when BEFORE and AFTER run on different runtimes; like the real
    one it updates its statistics once per forward, so a forward run twice still shows.
    """

    def __init__(self, features: int, momentum: float = 0.9, eps: float = 1e-5) -> None:
        super().__init__()
        self.gamma = Parameter(Tensor(np.ones(features, np.float32)), name="gamma")
        self.beta = Parameter(Tensor(np.zeros(features, np.float32)), name="beta")
        self.moving_mean = Parameter(Tensor(np.zeros(features, np.float32)), name="mean", requires_grad=False)
        self.moving_variance = Parameter(
            Tensor(np.ones(features, np.float32)), name="variance", requires_grad=False
        )
        self.momentum = momentum
        self.eps = eps

    def construct(self, x):
        mean = ops.reduce_mean(x, 0)
        centered = x - mean
        variance = ops.reduce_mean(centered * centered, 0)
        keep = self.momentum
        new_mean = self.moving_mean * keep + ops.stop_gradient(mean) * (1 - keep)
        new_variance = self.moving_variance * keep + ops.stop_gradient(variance) * (1 - keep)
        updated = ops.assign(self.moving_mean, new_mean)
        updated = ops.depend(ops.assign(self.moving_variance, new_variance), updated)
        out = centered / ops.sqrt(variance + self.eps) * self.gamma + self.beta
        return ops.depend(out, updated)


def batch_norm(features: int, portable: bool) -> nn.Cell:
    return PortableBatchNorm(features) if portable else nn.BatchNorm1d(features, momentum=0.9)


class _Probe(nn.Cell):
    """tanh(x W + b) against a label; extra outputs are weight-dependent auxiliaries."""

    def __init__(
        self,
        outputs: int = 1,
        stateful: bool = False,
        portable: bool = False,
        raw: bool = False,
        columns: bool = False,
        half: bool = False,
    ) -> None:
        super().__init__()
        # Its loss in float16, as a network cast to float16 for Ascend returns it (the dtype kept
        # here: ``finish`` is also copied into generated modules that import no dtypes).
        self.half = ms.float16 if half else None
        self.raw = raw  # return tanh(x W + b) itself, shaped as a label, not the loss
        self.columns = columns  # return one (batch, 1) column of it per output, not the loss
        rng = np.random.RandomState(7)
        self.weight = Parameter(Tensor(rng.randn(FEATURES, TARGETS).astype(np.float32) * 0.5), name="weight")
        self.bias = Parameter(Tensor(rng.randn(TARGETS).astype(np.float32) * 0.1), name="bias")
        self.outputs = outputs
        self.stateful = stateful
        self.norm = batch_norm(TARGETS, portable)
        self.drop = CountedDropout()

    def flat(self, x):
        """Features as (batch, FEATURES): an image flattened, RGB's first FEATURES numbers."""
        if len(x.shape) > 2:
            x = ops.reshape(x, (x.shape[0], -1))
        if x.shape[-1] > FEATURES:
            x = x[:, :FEATURES]
        return x

    def finish(self, x, label):
        if label is None:  # the step passes a defaulted input on as it is (`mask=None`)
            label = 0.0
        x = self.flat(x)  # image-shaped features (IMAGE_SHAPES)
        out = ops.matmul(x, self.weight) + self.bias
        if self.stateful:
            out = self.drop(self.norm(out))
        out = ops.tanh(out)
        if self.raw:
            return out
        if self.columns:
            # A physics-informed network's outputs (u, v, p), each (batch, 1): the step seeds each
            # with its own (batch, 1) tensor to pick one out. Each column another multiple of
            # the prediction, so a sensitivity given to the wrong output shows.
            columns = ()
            for index in range(self.outputs):
                start = index % TARGETS
                columns = columns + (out[:, start : start + 1] * (index + 1.0),)  # noqa: RUF005
            return columns
        loss = ops.reduce_mean((out - label) ** 2)
        if self.half is not None:  # a step that seeds backpropagation with a float16 sensitivity
            loss = ops.cast(loss, self.half)
        if self.outputs == 1:
            return loss
        if self.outputs == 2:
            return loss, ops.reduce_mean(out)
        if self.outputs == 3:
            return loss, ops.reduce_mean(out), ops.reduce_mean(out * out)
        # As many as the step unpacks (a detector's nine losses): each another weight-dependent
        # auxiliary, so a gradient that takes one in, or leaves one out, shows.
        # A loop GRAPH mode unrolls (outputs is a constant), not a starred generator it rejects.
        made = (loss,)
        for index in range(self.outputs - 1):
            made = made + (ops.reduce_mean(out * (index + 1.0)),)  # noqa: RUF005
        return made


class Probe1(_Probe):
    def construct(self, x):
        return self.finish(x, 0.0)


class Probe2(_Probe):
    def construct(self, x, label):
        return self.finish(x, label)


class ProbeVarargs(_Probe):
    """`construct(self, *inputs)`: features first, the label last, as DETR's and FinalMLP's are."""

    def construct(self, *inputs):
        return self.finish(inputs[0], inputs[-1])


class _SecondProbe(nn.Cell):
    """The second network of a step given two (a GAN's generator and discriminator, Pix2Pix's two
    loss networks): dense, seeded apart from the first, with its weights named apart from the
    first's (a step that does not prefix its children's Parameter names would hold two `weight`s).
    A "map" returns tanh(x W + b) in the shape of its input, which the first network takes (a
    generator's fake images); a loss network returns the loss of tanh(x W + b) against its label,
    as the first does."""

    def __init__(self, mapping: bool = False) -> None:
        super().__init__()
        rng = np.random.RandomState(11)
        width = FEATURES if mapping else TARGETS
        self.second_weight = Parameter(
            Tensor(rng.randn(FEATURES, width).astype(np.float32) * 0.5), name="second_weight"
        )
        self.second_bias = Parameter(Tensor(rng.randn(width).astype(np.float32) * 0.1), name="second_bias")

    def dense(self, x):
        flat = ops.reshape(x, (x.shape[0], -1)) if len(x.shape) > 2 else x
        return ops.tanh(ops.matmul(flat, self.second_weight) + self.second_bias)

    def loss(self, x, label):
        if label is None:
            label = 0.0
        return ops.reduce_mean((self.dense(x) - label) ** 2)


class SecondMap(_SecondProbe):
    def __init__(self) -> None:
        super().__init__(mapping=True)

    def construct(self, x):
        return ops.reshape(self.dense(x), x.shape)


class SecondLoss1(_SecondProbe):
    def construct(self, x):
        return self.loss(x, 0.0)


class SecondLoss2(_SecondProbe):
    def construct(self, x, label):
        return self.loss(x, label)


def second_network(kind: str, inputs: int) -> nn.Cell:
    """The second network of a step given two (``sites.SitePlan.second_network``): "map" (of
    one input) or a loss network of ``inputs`` inputs."""
    return SecondMap() if kind == "map" else probe_class(inputs, second=True)()


_BY_ARITY = {1: Probe1, 2: Probe2}
_SECOND_BY_ARITY = {1: SecondLoss1, 2: SecondLoss2}
_GENERATED: dict[tuple[int, int, str, bool, bool], type] = {}


def _class_name(inputs: int, defaulted: int, word: str = "", second: bool = False) -> str:
    base = "SecondLoss" if second else "Probe"
    name = f"{base}{inputs}With{defaulted}Defaults" if defaulted else f"{base}{inputs}"
    return f"{name}Naming_{word}" if word else name


def _renamed_weight(word: str) -> str:
    """The probe's methods with its weight kept as ``<word>_weight``: a step that splits its
    weights by name (`'wide' in params.name`) then finds one in each group. A Parameter's name
    is the attribute path to it, so the attribute carries the word; GRAPH mode on 1.x reads a
    Parameter only as a plain attribute, so the methods are rewritten, not the lookup made
    dynamic."""
    attribute = f"{word}_weight"
    init = (
        "    def __init__(self, *args, **kwargs):\n"
        "        super().__init__(*args, **kwargs)\n"
        "        weight = self.weight\n"
        "        del self.weight\n"
        f"        self.{attribute} = weight\n\n"
    )
    finish = inspect.getsource(_Probe.finish).replace("self.weight", f"self.{attribute}")
    return init + finish + "\n"


def _probe_source(
    inputs: int, defaulted: int, word: str = "", second: bool = False, flat: bool = False
) -> str:
    """``construct(self, x0, ..., label, extra0=None, ...)``: features weighted by powers of two,
    the label last (no label for one input); the defaulted parameters are taken and ignored. A
    feature after the first may be None (BERT's step passes its own `next_sentence_starts=None`
    on): it adds nothing, as a label of None does. ``word``: see ``_renamed_weight``.
    ``second``: a second loss network (``_SecondProbe``). ``flat``: each feature is flattened
    before they are added (``_Probe.flat``), for one RGB image among plain features."""
    features = [f"x{index}" for index in range(max(1, inputs - 1))]
    label = ["label"] if inputs > 1 else []
    extras = [f"extra{index}=None" for index in range(defaulted)]
    shaped = (lambda name: f"self.flat({name})") if flat else (lambda name: name)
    lines = [f"        total = 1.0 * {shaped(features[0])}\n"]
    for index, name in enumerate(features[1:], start=1):
        lines.append(f"        if {name} is not None:\n")
        lines.append(f"            total = total + {2.0**-index!r} * {shaped(name)}\n")
    base = "_SecondProbe" if second else "_Probe"
    return (
        f"from mindspore import ops\n\nfrom ms_migrate.verify.probe import {base}\n\n\n"
        f"class {_class_name(inputs, defaulted, word, second)}({base}):\n"
        + (_renamed_weight(word) if word else "")
        + f"    def construct(self, {', '.join([*features, *label, *extras])}):\n"
        + "".join(lines)
        + f"        return self.{'loss' if second else 'finish'}(total, {'label' if label else '0.0'})\n"
    )


def probe_class(
    inputs: int, defaulted: int = 0, word: str = "", second: bool = False, flat: bool = False
) -> type:
    """The probe class whose construct takes ``inputs`` tensors and ``defaulted`` more parameters
    with defaults (``word``: in its weight's name; ``second``: a second loss network). Beyond the
    hand-written ones it is generated into a module file in the working directory (the worker's
    scratch directory): GRAPH mode compiles a Cell from its source file."""
    hand_written = _SECOND_BY_ARITY if second else _BY_ARITY
    if not defaulted and not word and inputs in hand_written:
        return hand_written[inputs]  # one feature at most: ``finish`` flattens it
    key = (inputs, defaulted, word, second, flat)
    if key not in _GENERATED:
        name = f"_msm_{'second' if second else 'probe'}_{inputs}_{defaulted}_{word}{'_flat' if flat else ''}"
        path = Path(os.getcwd()) / f"{name}.py"
        path.write_text(_probe_source(inputs, defaulted, word, second, flat), encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _GENERATED[key] = getattr(module, _class_name(inputs, defaulted, word, second))
    return _GENERATED[key]


def naming_word(words: Sequence[str]) -> str:
    """The first of the words a step looks for in weight names that can be part of an attribute."""
    return next((word for word in words if word.isidentifier()), "")


# (name, network kind, call set_grad() on it, optimizers): the dense probe with both optimizers
# (optimizer state counts), then the stateful ones with Momentum.
Variant = tuple[str, str, bool, tuple[str, ...]]
VARIANTS: tuple[Variant, ...] = (
    ("dense", "dense", False, OPTIMIZERS),
    ("BatchNorm+Dropout", "stateful", False, ("Momentum",)),
    ("BatchNorm+Dropout, set_grad()", "stateful", True, ("Momentum",)),
)
# For a step whose own construct takes defaulted parameters (`construct(self, x, y=None)`), the
# dense probe again with that many more, defaulted, as the step's real network likely has them:
# GRAPH mode's grad and value_and_grad count every parameter of the network, defaulted ones too,
# and fail where GradOperation runs. Optional: a step whose BEFORE fails on it is not blamed.
DEFAULTED_VARIANTS: tuple[Variant, ...] = (
    ("the step's defaulted inputs", "defaulted", False, ("Momentum",)),
)
VARARGS_VARIANTS: tuple[Variant, ...] = (
    ("*inputs", "varargs", False, ("Momentum",)),
    ("*inputs, set_grad()", "varargs", True, ("Momentum",)),
)


def network(
    inputs: int,
    outputs: int,
    kind: str = "dense",
    set_grad: bool = False,
    portable: bool = False,
    defaulted: int = 0,
    word: str = "",
    raw: bool = False,
    flat: bool = False,
    columns: bool = False,
    half: bool = False,
) -> nn.Cell:
    """A seeded probe; stateful kinds are in training mode, so BatchNorm updates its statistics.
    ``portable``: a BatchNorm every MindSpore computes alike, for runs on two runtimes.
    ``defaulted``: for the "defaulted" kind, how many parameters with defaults follow the inputs.
    ``word``: to be part of its weight's name (see ``naming_word``). ``raw``: it returns its
    prediction (a label's shape), not the loss (``sites.SitePlan.raw_output``). ``flat``: its
    features are flattened before they are added (``_probe_source``). ``columns``: it returns one
    (batch, 1) column of its prediction per output (``sites.SitePlan.sens_per_output``). ``half``:
    its loss is float16."""
    shape = {"raw": raw, "columns": columns, "half": half}
    if kind == "varargs":
        net = ProbeVarargs(outputs, stateful=True, portable=portable, **shape)
    else:
        extra = defaulted if kind == "defaulted" else 0
        made = probe_class(inputs, extra, word, flat=flat)
        net = made(outputs, stateful=kind == "stateful", portable=portable, **shape)
    if kind not in ("dense", "defaulted"):
        net.set_train()
    if set_grad:
        net.set_grad()
    return net


class SwitchedPart(nn.Cell):
    """A part of a network that a step only switches out of training (`self.G.vgg.set_grad(False)`):
    the probe has no such part, and this empty one takes the switch. Called, it returns its input."""

    def construct(self, x):
        return x


def with_parts(net: nn.Cell, names: Sequence[str]) -> nn.Cell:
    """``net`` with a ``SwitchedPart`` under each of ``names`` that it lacks."""
    for name in names:
        if not hasattr(net, name):
            setattr(net, name, SwitchedPart())
    return net


def seeded_inputs(
    roles: Sequence[str], seed: int, image: Optional[tuple[int, ...]] = None, image_label: bool = False
) -> tuple[Tensor, ...]:
    """One seeded tensor per role: features (6, 4), a label (6, 2), or a scalar loss scale; for a
    "packed" input, the tuple of a feature and a label the step unpacks into its network.
    ``image``: the features in that shape (one of ``IMAGE_SHAPES``): as ``IMAGE``, the same
    numbers; channels last, the first features alone, as many seeded numbers as it holds (the
    probe flattens them);
    ``image_label``: the label too, where the network is not given it (a gradient penalty's
    second input is the fake image, not a target).

    The scalar is 3.0, not a power of two, so a rewrite that multiplies the gradients by sens
    after the fact rounds differently from one that seeds backprop with it.
    """
    rng = np.random.RandomState(seed + 3)
    made: list = []
    for role in roles:
        if role == "scalar":
            made.append(Tensor(np.array(3.0, np.float32)))
        elif role == "packed":  # `construct(self, inputs)` then `self.network(*inputs)`
            features = Tensor(rng.randn(BATCH, FEATURES).astype(np.float32))
            made.append((features, Tensor(rng.randn(BATCH, TARGETS).astype(np.float32))))
        elif role == "label" and not image_label:
            made.append(Tensor(rng.randn(BATCH, TARGETS).astype(np.float32)))
        elif image is not None and image != IMAGE:  # channels last: the first features alone
            first = not any(role in ("feature", "packed") for role in roles[: len(made)])
            shape = image if first else (BATCH, FEATURES)
            made.append(Tensor(rng.randn(*shape).astype(np.float32)))
        else:
            features = rng.randn(BATCH, FEATURES).astype(np.float32)
            made.append(Tensor(features if image is None else features.reshape(image)))
    return tuple(made)


class SGDTakingMore(nn.SGD):
    """SGD for a step that passes its optimizer more than the gradients (BERT's pre-training
    steps pass the overflow flag to their own Adam); the rest is ignored, alike in both versions."""

    def construct(self, gradients, *extras):
        return super().construct(gradients)


class MomentumTakingMore(nn.Momentum):
    """Momentum, as ``SGDTakingMore``."""

    def construct(self, gradients, *extras):
        return super().construct(gradients)


# An optimizer kind with this suffix returns True (see ``SGDReturningTrue``).
RETURNING_TRUE = " returning True"


class SGDReturningTrue(nn.SGD):
    """SGD whose result is True, for a step that joins the optimizer's result with a bool from
    another branch (`succ = False` there, `succ = self.optimizer(grads)` here: BERT's gradient
    accumulation steps, ERNIE's). GRAPH mode cannot join a bool with the tuple ``nn.SGD``
    returns, and the step fails with any real optimizer of MindSpore. The update still runs: a
    side effect, which GRAPH mode keeps whatever becomes of the result."""

    def construct(self, gradients, *extras):
        return ops.depend(True, super().construct(gradients))


class MomentumReturningTrue(nn.Momentum):
    """Momentum, as ``SGDReturningTrue``."""

    def construct(self, gradients, *extras):
        return ops.depend(True, super().construct(gradients))


# An optimizer kind with this suffix takes its rate from a schedule (see ``ConstantSchedule``).
SCHEDULED = " with a learning-rate schedule"


class ConstantSchedule(LearningRateSchedule):
    """LEARNING_RATE at every step, as a schedule: for a step that calls its optimizer's learning
    rate with the global step (`lr = self.learning_rate(self.global_step)`: CenterNet's and
    CenterPoint's steps), which only a schedule can be; with a fixed rate it is a Parameter,
    and calling it fails in both versions. The updates are those of the fixed rate."""

    def __init__(self) -> None:
        super().__init__()
        self.rate = Tensor(np.float32(LEARNING_RATE))

    def construct(self, global_step):
        return self.rate


def weight_shares(net: nn.Cell, optimizers: int) -> list[list[Parameter]]:
    """The weights each of a step's ``optimizers`` updates: disjoint shares, as a real step's
    (a GAN's generator and discriminator, a segmentation net's feature and classifier parts).
    Two optimizers updating one Parameter race in GRAPH mode: one update is sometimes lost, so
    the same code gave different numbers from run to run (seen on 2.8 with advent's step)."""
    weights = net.trainable_params()
    if optimizers <= 1 or len(weights) < optimizers:
        return [weights for _ in range(max(optimizers, 1))]
    return [weights[index::optimizers] for index in range(optimizers)]


def optimizer(kind: str, net_or_weights: Union[nn.Cell, list], takes_more: bool = False) -> nn.Optimizer:
    """An optimizer over a network's weights (or over the weights given); ``takes_more``: one
    whose construct takes (and ignores) arguments after the gradients. A ``kind`` ending in
    ``RETURNING_TRUE``: one that returns True; with ``SCHEDULED`` in it: one whose rate is a
    schedule."""
    weights = net_or_weights.trainable_params() if isinstance(net_or_weights, nn.Cell) else net_or_weights
    rate: Union[float, LearningRateSchedule] = LEARNING_RATE
    if SCHEDULED in kind:
        kind, rate = kind.replace(SCHEDULED, ""), ConstantSchedule()
    if kind.endswith(RETURNING_TRUE):  # its construct takes (and ignores) more, as takes_more
        returning = SGDReturningTrue if kind.startswith("SGD") else MomentumReturningTrue
        if returning is SGDReturningTrue:
            return returning(weights, learning_rate=rate)
        return returning(weights, learning_rate=rate, momentum=MOMENTUM)
    if kind == "SGD":
        sgd = SGDTakingMore if takes_more else nn.SGD
        return sgd(weights, learning_rate=rate)
    momentum = MomentumTakingMore if takes_more else nn.Momentum
    return momentum(weights, learning_rate=rate, momentum=MOMENTUM)


LOSS_SCALE = 3.0  # as the seeded sens: not a power of two, so a misplaced scale rounds differently


def loss_scale_cell() -> nn.Cell:
    """The loss scale of a TrainOneStepWithLossScaleCell (its required ``scale_sense``): fixed, so
    both versions scale alike, and a Cell, which the base class and its subclasses all accept."""
    return nn.FixedLossScaleUpdateCell(LOSS_SCALE)


def criterion() -> nn.Cell:
    """The criterion a step that applies its own is given: MindSpore's nn.MSELoss, which takes the
    probe's outputs and labels of any shapes that broadcast (the verdict names it)."""
    return nn.MSELoss()


class Settings:
    """The config object a train step's ``__init__`` reads settings from (Fat-DeepFFM's
    `config.lr_init`, `config.loss_scale`): each setting as the harness would pass a parameter
    of that name (``sites.init_value``), read as an attribute, a key or with ``get``. A setting
    it cannot name is an AttributeError that says so, which the row reports."""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        from ms_migrate.verify.sites import init_value

        value = init_value(name)
        if value is None or value in ("network", "optimizer", "loss scale", "settings", "criterion"):
            raise AttributeError(f"the automatic harness's stand-in config has no value for {name!r}")
        return ast.literal_eval(value)

    def __getitem__(self, name: str) -> object:
        try:
            return getattr(self, name)
        except AttributeError as error:
            raise KeyError(name) from error

    def get(self, name: str, default: object = None) -> object:
        return getattr(self, name, default)
