"""Running one site inside a worker: build each version's harness, train N steps, compare.

Imported only by the worker (it needs MindSpore). Three harnesses, tried in this order:

- the project's factory (``[tool.ms-migrate.verify] factory``), called with the class or function;
  it returns ``(callable, inputs)``, or ``None`` to leave the site to the automatic harnesses;
- a train-step Cell: a seeded probe network and a fresh optimizer (SGD, then Momentum, so optimizer
  state counts), passed to the class as ``(network, optimizer)``; where the original fails on every
  probe and the run knows the step's network, the project's own network (``project_network``);
- a grad function: called with seeded tensors; its state is the Cells held in module globals.

The state compared after every step is every Parameter reachable from the harness: the weights,
the optimizer's moments and counters, BatchNorm statistics, loss-scale values.
"""

from __future__ import annotations

import ast
import base64
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Optional

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from ms_migrate.verify import (
    compat,
    contained,
    device_guard,
    float_status,
    probe,
    project_network,
    removed_names,
    removed_ops,
    sites,
    standins,
)
from ms_migrate.verify.compare import Tally
from ms_migrate.verify.model import Verdict, worst

Describe = Callable[[BaseException], str]


class ImportFailure(Exception):
    """A version's module raised while being imported; the message says where and what."""

    label = "before"  # the version that failed


LABELS = ("before", "after")
ACROSS_RELEASES_ATOL = 1e-5


@dataclass
class Context:
    """What every site in one worker shares.

    ``sides``: the versions this worker runs. Both, when BEFORE and AFTER share a runtime. When
    they do not (a downgrade: BEFORE on the newest MindSpore, AFTER on the target), a first worker
    runs BEFORE alone and sends back what it recorded (``recording``), and a worker of the other
    runtime runs AFTER against it (``recorded``) and compares.
    """

    mode: str
    steps: int
    rtol: float
    atol: float
    seed: int
    describe: Describe
    factory: Optional[Callable[[Any], Any]] = None
    factory_problem: str = ""
    sides: tuple[str, ...] = ("before", "after")
    recorded: dict[str, Any] = field(default_factory=dict)
    recording: dict[str, Any] = field(default_factory=dict)

    def reset(self) -> None:
        """Same mode and seeds before building each version: user code may have changed them."""
        compat.set_mode(ms, self.mode)
        compat.stand_alone(ms)
        compat.clear_pynative_records()
        ms.set_seed(self.seed)
        np.random.seed(self.seed)

    @property
    def portable(self) -> bool:
        """BEFORE and AFTER run on different runtimes: probes that every MindSpore computes alike."""
        return self.sides != LABELS

    @property
    def tolerance(self) -> tuple[float, float]:
        """(rtol, atol) for comparing BEFORE with AFTER. Across two releases the absolute tolerance
        is at least ``ACROSS_RELEASES_ATOL``: their kernels sum in other orders, and a value that
        is zero but for rounding (the gradient of a BatchNorm scale, which cancels over the batch)
        came out as +-6.5e-7 on 2.10 and 1.7 on one CPU; a real mistake is orders larger."""
        atol = max(self.atol, ACROSS_RELEASES_ATOL) if self.portable else self.atol
        return self.rtol, atol

    @property
    def records_only(self) -> bool:
        return self.sides == ("before",)

    def trace(self, key: str, label: str, make: Callable[[], Trace]) -> Trace:
        """``label``'s trace of run ``key``: run here, or (for the side another runtime ran) what
        that worker recorded. While only recording, AFTER's is BEFORE's own, never compared."""
        if label in self.sides:
            made = make()
            if self.records_only:
                self.recording[key] = encode_trace(made)
            return _one_element_as_scalar(made) if self.portable else made
        if self.records_only:
            return _one_element_as_scalar(decode_trace(self.recording[key]))
        if key not in self.recorded:
            return Trace(error=f"BEFORE recorded no run {key!r} on its runtime")
        return _one_element_as_scalar(decode_trace(self.recorded[key]))


@dataclass
class StateEntry:
    name: str
    kind: str  # "parameter", "optimizer state"
    parameter: Any


@dataclass
class Trace:
    """What one version did: outputs per step, and the state before the first and after each step."""

    entries: list[StateEntry] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    states: list[list[np.ndarray]] = field(default_factory=list)
    error: Optional[str] = None
    declined: bool = False  # the project's factory returned None for this version


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {
            "ndarray": [data.dtype.str, list(data.shape), base64.b64encode(data.tobytes()).decode("ascii")]
        }
    if isinstance(value, (tuple, list)):
        return [_encode(item) for item in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "ndarray" in value:
        dtype, shape, data = value["ndarray"]
        return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
    if isinstance(value, list):
        return tuple(_decode(item) for item in value)
    return value


def _scalar(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.reshape(()) if value.shape == (1,) else value
    if isinstance(value, (tuple, list)):
        return type(value)(_scalar(item) for item in value)
    return value


# State whose meaning differs between releases, not between rewrites: 1.9's optimizers leave
# global_step at 0 where 1.7 and 2.x count the steps (measured on 1.9.0 and 2.10.0).
_RELEASE_DEPENDENT = ("global_step",)


def _one_element_as_scalar(trace: Trace) -> Trace:
    """A trace as two releases can compare it: a one-element array as a scalar (2.x reads a 0-d
    Parameter back with shape (1,), 1.x with shape ()), and no state whose meaning differs
    between releases (``_RELEASE_DEPENDENT``)."""
    kept = [index for index, entry in enumerate(trace.entries) if not entry.name.endswith(_RELEASE_DEPENDENT)]
    trace.entries = [trace.entries[index] for index in kept]
    trace.outputs = [_scalar(output) for output in trace.outputs]
    trace.states = [[_scalar(state[index]) for index in kept] for state in trace.states]
    return trace


def encode_trace(trace: Trace) -> dict[str, Any]:
    """A trace as JSON, for a worker of another runtime: exact bytes of every array."""
    return {
        "entries": [[entry.name, entry.kind] for entry in trace.entries],
        "outputs": _encode(trace.outputs),
        "states": [_encode(state) for state in trace.states],
        "error": trace.error,
        "declined": trace.declined,
    }


def decode_trace(data: dict[str, Any]) -> Trace:
    return Trace(
        entries=[StateEntry(name, kind, None) for name, kind in data["entries"]],
        outputs=list(_decode(data["outputs"])),
        states=[list(_decode(state)) for state in data["states"]],
        error=data["error"],
        declined=data["declined"],
    )


@dataclass
class Outcome:
    verdict: Verdict
    reason: str = ""
    steps: int = 0
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    detail: str = ""  # the error behind ``reason`` when the reason is advice
    harness: str = ""  # the harness that decided, where not the one the caller names
    # A test function's run (``contained``): the lines of its own body that ran, in both
    # versions, for the parent to hold a GRAPH row to its PYNATIVE row (``reconciled_rows``).
    path: str = ""

    def to_json(self, harness: str) -> dict[str, Any]:
        data = {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "steps": self.steps,
            "max_abs_diff": self.max_abs,
            "max_rel_diff": self.max_rel,
            "harness": self.harness or harness,
            "detail": self.detail,
        }
        if self.path:
            data["path"] = self.path
        return data


CANNOT_DRIVE = (
    "the automatic harness could not drive this step (the original fails on its probe network "
    "and inputs too); name a harness in [tool.ms-migrate.verify] factory, see "
    "docs/verification.md#a-factory-for-your-own-network"
)


def _automatic(outcome: Outcome) -> Outcome:
    """An automatic harness's NOT_RUN always means BEFORE failed on the probe: the probe did not fit
    the step, which is no fault of the code or the rewrite. Say what to do; keep the error."""
    if outcome.verdict is not Verdict.NOT_RUN or outcome.reason.startswith((NO_KERNEL, BEFORE_VARIES)):
        return outcome
    return Outcome(Verdict.NOT_RUN, CANNOT_DRIVE, outcome.steps, detail=outcome.reason)


# ---------------------------------------------------------------------------------------------
# State and outputs as plain numpy values


def collect_state(sources: Sequence[nn.Cell]) -> list[StateEntry]:
    """Every Parameter reachable from ``sources`` once, labelled weight or optimizer state."""
    weights: set[int] = set()
    optimizer_owned: set[int] = set()
    for source in sources:
        for _, cell in source.cells_and_names():
            if isinstance(cell, nn.Optimizer):
                weights |= {id(parameter) for parameter in cell.parameters}
                optimizer_owned |= {id(parameter) for parameter in cell.get_parameters()}
    entries: list[StateEntry] = []
    seen: set[int] = set()
    for source in sources:
        for name, parameter in source.parameters_and_names():
            if id(parameter) in seen:
                continue
            seen.add(id(parameter))
            key = id(parameter)
            kind = "optimizer state" if key in optimizer_owned and key not in weights else "parameter"
            # The name within its own source: a train-step Cell renames its children's Parameters.
            entries.append(StateEntry(name or parameter.name, kind, parameter))
    return entries


def _read(entries: Sequence[StateEntry]) -> list[np.ndarray]:
    # asnumpy() can share memory with the device buffer on CPU: copy before the next step writes.
    return [np.array(entry.parameter.asnumpy(), copy=True) for entry in entries]


def _load(entries: Sequence[StateEntry], values: Sequence[np.ndarray]) -> None:
    """Start from BEFORE's values when the layouts match, so random initialisers cannot differ."""
    if len(entries) != len(values):
        return
    if any(tuple(entry.parameter.shape) != value.shape for entry, value in zip(entries, values)):
        return
    for entry, value in zip(entries, values):
        if not np.array_equal(entry.parameter.asnumpy(), value):
            entry.parameter.set_data(Tensor(value, dtype=entry.parameter.dtype))


def to_tree(value: Any) -> Any:
    """A step's return value as nested tuples of ("tensor", dtype, array) and other leaves."""
    if isinstance(value, Tensor):
        return ("tensor", str(value.dtype).lower(), np.array(value.asnumpy(), copy=True))
    if isinstance(value, (tuple, list)):
        return ("sequence", tuple(to_tree(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(key), to_tree(value[key])) for key in sorted(value, key=repr)))
    if value is None:
        return ("none",)
    if isinstance(value, (bool, int, float, np.number)):
        return ("number", "", np.asarray(float(value)))
    return ("object", repr(value))


def structure(tree: Any) -> str:
    kind = tree[0]
    if kind == "tensor":
        return f"tensor {tree[1]}{list(tree[2].shape)}"
    if kind == "sequence":
        inner = ", ".join(structure(item) for item in tree[1])
        return f"tuple({inner})"
    if kind == "dict":
        return "{" + ", ".join(f"{key}: {structure(item)}" for key, item in tree[1]) + "}"
    if kind == "number":
        return "number"
    if kind == "none":
        return "None"
    return tree[1]


def _tally_tree(tally: Tally, before: Any, after: Any, what: str) -> None:
    left, right = structure(before), structure(after)
    if left != right:
        tally.mismatch(f"{what} differs in structure: {left} in BEFORE, {right} in AFTER")
        return
    if before[0] in ("tensor", "number"):
        tally.arrays(before[2], after[2], what)
    elif before[0] == "sequence":
        for item_before, item_after in zip(before[1], after[1]):
            _tally_tree(tally, item_before, item_after, what)
    elif before[0] == "dict":
        for (_, item_before), (_, item_after) in zip(before[1], after[1]):
            _tally_tree(tally, item_before, item_after, what)


def _state_difference(before: Trace, after: Trace) -> str:
    """What differs between two layouts of state: the count, else the first parameter that does."""
    if len(before.entries) != len(after.entries):
        return f"{len(before.entries)} parameters in BEFORE, {len(after.entries)} in AFTER"
    pairs = zip(before.entries, after.entries, before.states[0], after.states[0])
    for left, right, left_value, right_value in pairs:
        if left_value.shape != right_value.shape:
            return (
                f"{left.kind} {left.name} {list(left_value.shape)} in BEFORE, "
                f"{right.kind} {right.name} {list(right_value.shape)} in AFTER"
            )
    return "the same number of parameters, in another layout"


# MindSpore's kernel selection, when an operator has no kernel for the device (NPU-only ones on
# CPU): "Unsupported op [NPUAllocFloatStatus] on CPU, Please confirm whether the device target ..."
_NO_KERNEL = re.compile(r"Unsupported op \[(\w+)\] on (\w+)")
NO_KERNEL = "cannot run on "


def _no_kernel(error: str) -> Optional[Outcome]:
    match = _NO_KERNEL.search(error)
    if match is None:
        return None
    operator, device = match.groups()
    reason = f"{NO_KERNEL}{device}: the operator {operator} has no {device} kernel in MindSpore"
    return Outcome(Verdict.NOT_RUN, reason, detail=error)


def compare_traces(before: Trace, after: Trace, rtol: float, atol: float) -> Outcome:
    no_kernel = _no_kernel(before.error) if before.error is not None else None
    if no_kernel is not None:
        return no_kernel
    if before.error is not None:
        if after.error is not None:
            detail = before.error if before.error == after.error else f"{before.error}; AFTER: {after.error}"
            return Outcome(Verdict.NOT_RUN, f"both versions fail: {detail}")
        return Outcome(Verdict.NOT_RUN, f"BEFORE fails, so there is nothing to compare: {before.error}")
    steps = min(len(before.outputs), len(after.outputs))
    shapes_before = [value.shape for value in before.states[0]] if before.states else []
    shapes_after = [value.shape for value in after.states[0]] if after.states else []
    if after.states and shapes_before != shapes_after:
        return Outcome(
            Verdict.DIFFERS, f"the versions hold different state: {_state_difference(before, after)}", steps
        )
    tally = Tally(rtol, atol)
    for step in range(min(len(before.states), len(after.states))):
        for entry, left, right in zip(before.entries, before.states[step], after.states[step]):
            when = f"after step {step}" if step else "before the first step"
            tally.arrays(left, right, f"{entry.kind} {entry.name} {when}")
        if step < steps:
            _tally_tree(
                tally, before.outputs[step], after.outputs[step], f"returned value at step {step + 1}"
            )
    outcome = Outcome(Verdict.EQUAL, "", steps, tally.max_abs, tally.max_rel)
    if after.error is not None:
        outcome.verdict = Verdict.DIFFERS
        where = f"at step {steps + 1}" if after.states else "while building the harness"
        outcome.reason = f"AFTER fails {where} while BEFORE runs: {after.error}"
        outcome.detail = f"AFTER: {after.error}"
    elif tally.first_mismatch is not None:
        outcome.verdict = Verdict.DIFFERS
        outcome.reason = tally.first_mismatch
    return outcome


# ---------------------------------------------------------------------------------------------
# Running versions


Build = Callable[[], tuple[Callable[..., Any], Sequence[Any], list[StateEntry]]]


def run_steps(
    build: Build, steps: int, describe: Describe, start: Optional[list[np.ndarray]] = None
) -> Trace:
    trace = Trace()
    try:
        target, inputs, trace.entries = build()
        if start is not None:
            _load(trace.entries, start)
        trace.states.append(_read(trace.entries))
        for _ in range(steps):
            output = target(*inputs)
            trace.outputs.append(to_tree(output))
            trace.states.append(_read(trace.entries))
    except Exception as error:  # user code: any failure is a result, not a crash
        compat.settle_after_a_failure(error)
        trace.error = describe(error)
    return trace


def _combine(outcomes: list[tuple[str, Outcome]]) -> Outcome:
    """One row from several runs (SGD and Momentum): the deciding verdict, the largest differences.

    A difference on any run decides: it proves the versions differ, whatever the other runs did
    (a variant both versions fail on must not hide an AFTER that fails where BEFORE runs). Else
    the worst verdict."""
    verdicts = [outcome.verdict for _, outcome in outcomes]
    verdict = Verdict.DIFFERS if Verdict.DIFFERS in verdicts else worst(verdicts)
    label, first = next((label, outcome) for label, outcome in outcomes if outcome.verdict is verdict)
    steps = min(outcome.steps for _, outcome in outcomes)
    combined = Outcome(verdict, first.reason, steps, detail=first.detail)
    if first.reason and len(outcomes) > 1:
        combined.reason = f"{first.reason} (with {label})"
    diffs = [outcome for _, outcome in outcomes if outcome.max_abs is not None]
    if diffs:
        combined.max_abs = max(outcome.max_abs for outcome in diffs)  # type: ignore[type-var]
        combined.max_rel = max(outcome.max_rel for outcome in diffs)  # type: ignore[type-var]
    return combined


def _module_cells(module: ModuleType) -> list[nn.Cell]:
    return [value for value in vars(module).values() if isinstance(value, nn.Cell)]


def _versions(context: Context, modules: Callable[[str], ModuleType], name: str) -> dict[str, Any]:
    """Each version's module, imported only where this worker runs that version.

    Raises ImportFailure; its ``label`` says which version failed. BEFORE is imported first, and a
    worker that runs only AFTER has BEFORE's record, so a failing AFTER means BEFORE imported."""
    found: dict[str, Any] = {}
    for label in LABELS:
        if label not in context.sides:
            found[label] = None
            continue
        try:
            module = modules(label)
        except ImportFailure as failure:
            failure.label = label
            raise
        if not hasattr(module, name):
            failure = ImportFailure(f"{label.upper()} has no top-level {name!r} after import")
            failure.label = label
            raise failure
        found[label] = module
    return found


def _import_outcome(failure: ImportFailure) -> Outcome:
    """BEFORE that cannot be imported leaves nothing to compare; AFTER that cannot, where BEFORE
    can, is a difference: the rewrite broke the module."""
    if failure.label == "after":
        return Outcome(Verdict.DIFFERS, "AFTER cannot be imported while BEFORE can", detail=str(failure))
    return Outcome(Verdict.NOT_RUN, str(failure))


def _cell_site(
    site: dict,
    context: Context,
    modules: dict[str, ModuleType],
    project_module: Optional[Callable[[str], ModuleType]] = None,
) -> Outcome:
    """A train step on every probe variant, once per optimizer; a network-only grad Cell likewise
    without an optimizer. The row is the worst of them, named by the variant that decided it.
    Where BEFORE fails on every one, they run again on image-shaped features (``probe.IMAGE``: a
    step that mixes images by a (batch, 1, 1, 1) weight needs four dimensions), then on RGB
    images with their channels last (``probe.IMAGE_CHANNELS_LAST``: a step that normalises them
    itself), then on a network whose outputs are shaped as the step's sensitivities: per-sample
    columns for a step that seeds each output with its own tensor (a physics-informed network's
    derivative Cell), a float16 loss for one that seeds a float16 sensitivity. On each
    input shape, a failure that one of ``_OPTIMIZER_STAND_INS`` answers runs the shape again
    with those optimizers, and they stay for the shapes after it (CenterNet's step needs images
    with channels last and optimizers that return True)."""
    first = outcomes = _probe_outcomes(site, context, modules, image=None)
    suffix, said = "", []
    for shape in (None, *probe.IMAGE_SHAPES):
        if shape is not None:
            outcomes = _probe_outcomes(site, context, modules, image=shape, optimizer_suffix=suffix)
        while site["optimizer"] and all(_probe_did_not_fit(outcome) for _, outcome in outcomes):
            failures = " ".join(f"{outcome.reason} {outcome.detail}" for _, outcome in outcomes)
            answer = next(
                (item for item in _OPTIMIZER_STAND_INS if item[1] not in suffix and item[0] in failures), None
            )
            if answer is None:
                break
            suffix, said = suffix + answer[1], [*said, answer[2]]
            outcomes = _probe_outcomes(site, context, modules, image=shape, optimizer_suffix=suffix)
        if not all(_probe_did_not_fit(outcome) for _, outcome in outcomes):
            combined = _combine(outcomes)
            if combined.verdict is Verdict.EQUAL:
                shaped = [f"ran on image-shaped inputs {shape}"] if shape else []
                combined.detail = "; ".join([*shaped, *said])
            return combined
    failures = " ".join(f"{outcome.reason} {outcome.detail}" for _, outcome in first)
    # BEFORE fits no probe whose output is a float32 loss: a step that seeds each output with a
    # tensor per sample, or seeds a float16 sensitivity (written for a network cast to float16
    # on Ascend: MaskRCNN's, textfusenet's, MMOE's), may fit one whose outputs are shaped so.
    for shaped, wanted, said in (
        ("column_outputs", bool(site.get("sens_per_output")), _COLUMNS_SAID),
        ("half_output", _HALF_ASKED in failures, _HALF_SAID),
    ):
        if wanted:
            found = _probe_outcomes({**site, shaped: True}, context, modules, image=None)
            if not all(_probe_did_not_fit(outcome) for _, outcome in found):
                combined = _combine(found)
                if combined.verdict is Verdict.EQUAL:
                    combined.detail = said
                return combined
    outcomes = first
    # Not across two runtimes: their BatchNorms update the moving variance differently (see
    # probe.PortableBatchNorm), which says nothing about a rewrite.
    fits = all(_probe_did_not_fit(outcome) for _, outcome in outcomes)
    if site.get("network_builder") and fits and not context.portable:
        own = _project_network_site(site, context, modules, project_module)
        if own.verdict is not Verdict.NOT_RUN:
            own.harness = f"train step: the project's {site['network_builder']}(), Momentum"
            return own
        combined = _combine(outcomes)
        combined.reason += f"; on the project's {site['network_builder']}(): {own.reason}"
        return combined
    return _combine(outcomes)


# GRAPH mode's error where a float16 sensitivity meets a float32 loss.
_HALF_ASKED = "Type Join Failed: dtype1 = Float16, dtype2 = Float32"
_HALF_SAID = "ran on a network whose loss is float16, as the sensitivity the step seeds its gradient with is"
_COLUMNS_SAID = (
    "ran on a network whose outputs are (batch, 1) columns, as the tensors the step seeds each "
    "output's gradient with"
)
# GRAPH mode's error for a step that joins its optimizer's result with a bool from another
# branch; the probe's optimizers then return True (``probe.SGDReturningTrue``).
_JOINS_A_BOOL = "Cannot join the return values of different branches"
# What calling a fixed learning rate (a Parameter) says in PYNATIVE and GRAPH mode; the probe's
# optimizers then take their rate from a schedule (``probe.ConstantSchedule``).
_CALLS_ITS_RATE = "object is not callable"
# (what the step's failure on the probe's optimizers says, the optimizers' kind suffix to try
# then, the detail an equal row gets)
_OPTIMIZER_STAND_INS = (
    (
        _JOINS_A_BOOL,
        probe.RETURNING_TRUE,
        "ran with optimizers that return True (the step joins their result with a bool, which "
        "GRAPH mode cannot do with MindSpore's own)",
    ),
    (
        _CALLS_ITS_RATE,
        probe.SCHEDULED,
        "ran with optimizers whose learning rate is a schedule (the step calls its optimizer's "
        "learning rate with the global step, as only a schedule can be called)",
    ),
)


def _probe_outcomes(
    site: dict,
    context: Context,
    modules: dict[str, ModuleType],
    image: Optional[tuple[int, ...]],
    optimizer_suffix: str = "",
) -> list[tuple[str, Outcome]]:
    """Each probe variant's outcome, by the variant's name (see ``_cell_site``). On images the
    first variant that BEFORE fails on ends the try: the shape did not fit either.
    ``optimizer_suffix``: the optimizers' kind suffix (see ``_OPTIMIZER_STAND_INS``)."""
    outcomes = []
    optional: list[tuple[str, Outcome]] = []
    shape = f"image-shaped inputs {image}" if image else ""
    for variant, kind, set_grad, optimizers in _variants(site):
        for optimizer_kind in optimizers if site["optimizer"] else (None,):
            if optimizer_kind:
                optimizer_kind += optimizer_suffix
            traces, builds = {}, {}
            for label in LABELS:

                def build(
                    module: ModuleType = modules[label],
                    optimizer_kind: Optional[str] = optimizer_kind,
                    kind: str = kind,
                    set_grad: bool = set_grad,
                ) -> tuple:
                    context.reset()
                    network = probe.network(
                        site["network_inputs"],
                        site["outputs"],
                        kind,
                        set_grad,
                        portable=context.portable,
                        defaulted=site.get("defaulted", 0),
                        word=probe.naming_word(site.get("weight_words", ())),
                        raw=site.get("raw_output", False),
                        columns=site.get("column_outputs", False),
                        half=site.get("half_output", False),
                        flat=image == probe.IMAGE_CHANNELS_LAST,
                    )
                    probe.with_parts(network, site.get("network_parts", ()))
                    cls = getattr(module, site["name"])
                    arguments, sources = _init_arguments(
                        site["arguments"],
                        network,
                        optimizer_kind,
                        site.get("optimizer_extras", False),
                        _second_network(site),
                        site.get("optimizer_networks", ()),
                    )
                    cell = cls(*arguments)
                    label_too = image is not None and site["network_inputs"] == 1  # not the network's label
                    inputs = probe.seeded_inputs(site["inputs"], context.seed, image, label_too)
                    return cell, inputs, collect_state([*sources, cell])

                key = " ".join(
                    filter(None, ["cell", variant, optimizer_kind, f"image {image}" if image else ""])
                )
                builds[label] = build
                traces[label] = context.trace(
                    key, label, lambda build=build: run_steps(build, context.steps, context.describe)
                )
            outcome = compare_traces(traces["before"], traces["after"], *context.tolerance)
            if outcome.verdict is Verdict.DIFFERS and not context.portable:
                outcome = _unless_before_varies(outcome, traces["before"], builds["before"], context)
            named = (", ".join(filter(None, [variant, optimizer_kind, shape])), outcome)
            (optional if kind in OPTIONAL_KINDS else outcomes).append(named)
            if image and kind not in OPTIONAL_KINDS and _probe_did_not_fit(outcome):
                return outcomes
    # An optional variant that BEFORE fails on says nothing about the rewrite: leave it out.
    return outcomes + [named for named in optional if named[1].verdict is not Verdict.NOT_RUN]


BEFORE_VARIES = (
    "BEFORE gives other numbers when it runs again on the same probe (a random operator in the "
    "step that no seed reaches, such as ops.UniformReal), so a difference says nothing about the rewrite"
)


def _unless_before_varies(
    outcome: Outcome, before: Trace, build: Callable[[], tuple], context: Context
) -> Outcome:
    """A difference stands only if BEFORE, run again the same way, gives its own numbers: MindSpore's
    random operators keep their state from one instance to the next within a process, so a step
    that draws at random (a gradient penalty's mixing weight) draws anew each time, whatever
    the seed, and any two runs differ."""
    again = run_steps(build, context.steps, context.describe)
    if compare_traces(before, again, *context.tolerance).verdict is Verdict.EQUAL:
        return outcome
    return Outcome(Verdict.NOT_RUN, BEFORE_VARIES, outcome.steps, detail=outcome.reason)


def _probe_did_not_fit(outcome: Outcome) -> bool:
    """BEFORE failed on the probe: not for want of a CPU kernel, nor because it ran and varied."""
    return outcome.verdict is Verdict.NOT_RUN and not outcome.reason.startswith((NO_KERNEL, BEFORE_VARIES))


def _project_network_site(
    site: dict,
    context: Context,
    modules: dict[str, ModuleType],
    project_module: Optional[Callable[[str], ModuleType]],
) -> Outcome:
    """The step on the project's own network (see ``project_network``), built by calling its class
    or factory function: each version's own when defined in the file, else the project module's;
    with Momentum. BEFORE runs twice: a network whose numbers change from run to run cannot be
    compared."""
    name = site["network_builder"]
    try:
        where = site.get("network_module")
        if where and project_module is None:
            raise ImportError(f"no importer for {where}")
        builders = {
            label: getattr(project_module(where) if where else modules[label], name)  # type: ignore[misc]
            for label in context.sides
        }
    except Exception as error:  # the project's module: any failure is a reason, not a crash
        reason = f"the project's {name}() cannot be imported: {context.describe(error)}"
        return Outcome(Verdict.NOT_RUN, reason)
    first = builders[context.sides[0]]

    loss = site.get("network_loss", "")

    def fresh(builder: Callable[[], nn.Cell] = first) -> nn.Cell:
        context.reset()
        network = builder()
        if loss:  # the script's nn.WithLossCell(backbone, loss), the loss built with its defaults
            network = nn.WithLossCell(network, getattr(nn, loss)())
        network.set_train()
        project_network.replace_dropouts(network)
        return network

    def forward(network: nn.Cell, inputs: tuple) -> None:
        compat.set_mode(ms, "pynative")  # only to see whether it runs: no compile for each try
        network(*inputs)

    try:
        specs, why = project_network.first_accepted(
            fresh, site["inputs"], context.seed, forward, context.describe
        )
    except Exception as error:  # the project's constructor: any failure is a reason
        specs, why = None, f"{name}() raised: {context.describe(error)}"
    if specs is None:
        return Outcome(Verdict.NOT_RUN, why)
    traces = {}
    for run, label in (("before", "before"), ("before again", "before"), ("after", "after")):

        def build(label: str = label) -> tuple:
            network = fresh(builders.get(label, first))
            arguments, sources = _init_arguments(
                site["arguments"], network, "Momentum", site.get("optimizer_extras", False)
            )
            cell = getattr(modules[label], site["name"])(*arguments)
            inputs = project_network.seeded(specs, site["inputs"], context.seed)
            return cell, inputs, collect_state([*sources, cell])

        # Every run starts from BEFORE's first values: the project's initialisers draw at random.
        start = traces["before"].states[0] if traces.get("before") and traces["before"].states else None
        traces[run] = context.trace(
            f"project {run}",
            label,
            lambda build=build, start=start: run_steps(build, context.steps, context.describe, start),
        )
    outcome = compare_traces(traces["before"], traces["after"], *context.tolerance)
    if traces["before"].error is not None:
        return outcome
    again = compare_traces(traces["before"], traces["before again"], *context.tolerance)
    if again.verdict is not Verdict.EQUAL:
        reason = (
            f"the project's {name}() gives other numbers when BEFORE runs again (state kept outside "
            "its Parameters, or randomness no seed reaches)"
        )
        return Outcome(Verdict.NOT_RUN, reason, detail=again.reason)
    if outcome.verdict is Verdict.EQUAL:
        shown = " ".join(str(spec) for spec in specs)
        outcome.detail = f"ran on the project's {name}(), on inputs {shown}"
    return outcome


def _second_network(site: dict) -> Optional[nn.Cell]:
    """The probe for the second of two networks a step takes (see ``sites._network_pair``)."""
    kind = site.get("second_network")
    return probe.second_network(kind, site.get("second_network_inputs", 1)) if kind else None


def _init_arguments(
    roles: Sequence[str],
    network: nn.Cell,
    optimizer_kind: Optional[str],
    optimizer_extras: bool = False,
    second: Optional[nn.Cell] = None,
    optimizer_networks: Sequence[int] = (),
) -> tuple[list[Any], list[nn.Cell]]:
    """What the train step's __init__ is given (``sites.SitePlan.arguments``), and the Cells
    whose state is compared: the network (and the ``second`` of a step given two), and each
    optimizer, over its share of the weights of the network ``optimizer_networks`` pairs it with
    (0 the first, 1 the second; the first where not said)."""
    arguments: list[Any] = []
    networks = [network] if second is None else [network, second]
    sources: list[nn.Cell] = list(networks)
    # "optimizers N": a tuple of N optimizers, which the step's __init__ unpacks.
    counts = [
        int(role.split()[1]) if role.startswith("optimizers ") else int(role == "optimizer") for role in roles
    ]
    # The network each optimizer made below updates, in order: a tuple's all the first's.
    paired = iter(optimizer_networks)
    owners = [
        min(next(paired, 0), len(networks) - 1) if role == "optimizer" else 0
        for role, count in zip(roles, counts)
        for _ in range(count)
    ]
    shares = [probe.weight_shares(net, owners.count(index)) for index, net in enumerate(networks)]
    owner_of = iter(owners)

    def share() -> list:
        return shares[next(owner_of)].pop(0)

    for role, count in zip(roles, counts):
        if role == "network":
            arguments.append(network)
        elif role == "network 2":
            arguments.append(second)
        elif role == "optimizer":
            made = probe.optimizer(optimizer_kind or "Momentum", share(), optimizer_extras)
            arguments.append(made)
            sources.append(made)
        elif role.startswith("optimizers "):
            several = [probe.optimizer(optimizer_kind or "Momentum", share()) for _ in range(count)]
            arguments.append(tuple(several))
            sources += several
        elif role == "loss scale":
            arguments.append(probe.loss_scale_cell())
        elif role == "settings":
            arguments.append(probe.Settings())
        elif role == "criterion":
            arguments.append(probe.criterion())
        else:
            arguments.append(ast.literal_eval(role))
    return arguments, sources


# Probe kinds beyond what the step is known to take; see probe.DEFAULTED_VARIANTS.
OPTIONAL_KINDS = ("defaulted",)


def _variants(site: dict) -> list[probe.Variant]:
    defaulted = probe.DEFAULTED_VARIANTS if site.get("defaulted") else ()
    varargs = probe.VARARGS_VARIANTS if site.get("varargs") else ()
    return [*probe.VARIANTS, *defaulted, *varargs]


def _start_of(traces: dict[str, Trace], label: str) -> Optional[list[np.ndarray]]:
    """AFTER starts from BEFORE's initial values, so a random initialiser cannot make them differ."""
    if label == "after" and traces["before"].states:
        return traces["before"].states[0]
    return None


def _contained_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Outcome:
    """A test function that takes no inputs, run as written (``contained``): its return value,
    the calls it discards and its locals at the end, compared; in PYNATIVE mode, equal only
    where the rewritten lines ran."""
    traces: dict[str, Trace] = {}
    builds: dict[str, Callable[[], tuple]] = {}
    ran: dict[str, set[int]] = {}
    body: dict[str, set[int]] = {}
    asked: list[str] = []
    compared = site["compared_locals"]
    for label in LABELS:

        def build(label: str = label) -> tuple:
            context.reset()
            function, cases = contained.recording_function(modules[label], site["name"])
            run = contained.Run(function, tuple(site[f"changed_{label}"]))
            ran[label], body[label] = run.ran, run.body

            def once() -> tuple:
                values, discarded, kept = [], [], []
                for case in cases:  # a parametrized test's cases, one after the other
                    with device_guard.mode_held():
                        values.append(run(**case))
                    discarded += run.discarded
                    kept.append([run.locals.get(name) for name in compared])
                asked.extend(device_guard.take_asked())
                kept = [tuple(row[index] for row in kept) for index in range(len(compared))]
                value = values[0] if len(values) == 1 else tuple(values)
                return tuple(contained.numbers(item) for item in (value, discarded, kept))

            return once, (), []

        builds[label] = build
        make = lambda build=build: run_steps(build, 1, context.describe)  # noqa: E731
        traces[label] = context.trace("contained", label, make)
    before = traces["before"]
    kept = before.outputs and contained.has_numbers(_numbers_of(before.outputs[0]))
    if before.error is None and not kept:
        return Outcome(Verdict.NOT_RUN, CONTAINED_NOTHING)
    outcome = compare_traces(before, traces["after"], *context.tolerance)
    if outcome.verdict is Verdict.DIFFERS and traces["after"].error is None:
        outcome.reason = _contained_difference(before, traces["after"], compared, context) or outcome.reason
    if outcome.verdict is Verdict.DIFFERS and not context.portable:
        outcome = _unless_before_varies(outcome, before, builds["before"], context)
    if outcome.verdict is not Verdict.EQUAL:
        return outcome
    path = "; ".join(f"{label}: {sorted(lines)}" for label, lines in body.items())
    missed = _rewrite_not_run(site, context, ran)
    if missed:
        # GRAPH mode compiles a Cell's construct rather than running it line by line: the
        # PYNATIVE row may still show that the same path through the test reaches the lines.
        unseen = Outcome(Verdict.NOT_RUN, CONTAINED_NOT_RUN.format(missed), outcome.steps)
        if context.mode == "graph":
            unseen.max_abs, unseen.max_rel, unseen.path = outcome.max_abs, outcome.max_rel, path
        return unseen
    names = ", ".join(name for name in compared) or "none"
    outcome.detail = CONTAINED_RAN.format(names)
    outcome.path = path
    if asked:
        outcome.detail += (
            f"; the code's {', '.join(dict.fromkeys(asked))} left out: each row runs in its own mode"
        )
    return outcome


def _rewrite_not_run(site: dict, context: Context, ran: dict[str, set[int]]) -> str:
    """The changed lines a test function's run should have reached and did not ("" if it did).
    In PYNATIVE mode: AFTER's (BEFORE's, where the rewrite only removed lines). In GRAPH mode a
    Cell's construct is compiled, not run line by line, so a changed line of either version that
    ran (a grad operation built in __init__) is enough; PYNATIVE's row checks the rest."""
    here = [label for label in LABELS if label in context.sides and site[f"changed_{label}"]]
    if context.mode == "pynative":
        label = "after" if site["changed_after"] else "before"
        here = [label] if label in context.sides else []
    if not here or any(ran.get(label) for label in here):
        return ""
    return "; ".join(
        f"{label.upper()} line {', '.join(map(str, site[f'changed_{label}']))}" for label in here
    )


def _contained_difference(
    before: Trace, after: Trace, compared: list[str], context: Context
) -> Optional[str]:
    """The first difference of a test function's runs, named by what holds it."""
    if not (before.outputs and after.outputs):
        return None
    tally = Tally(*context.tolerance)
    (_, (value_before, calls_before, kept_before)), (_, (value_after, calls_after, kept_after)) = (
        before.outputs[0],
        after.outputs[0],
    )
    _tally_tree(tally, value_before, value_after, "its return value")
    if len(calls_before[1]) != len(calls_after[1]):
        _tally_tree(tally, calls_before, calls_after, "what the calls whose values it discards return")
    for index, (left, right) in enumerate(zip(calls_before[1], calls_after[1]), 1):
        _tally_tree(tally, left, right, f"the value of discarded call {index}")
    for name, left, right in zip(compared, kept_before[1], kept_after[1]):
        _tally_tree(tally, left, right, f"its local {name} at the end")
    return tally.first_mismatch


def _numbers_of(tree: Any) -> Any:
    """A recorded output tree as the values ``contained.has_numbers`` reads: None for a leaf
    that is not a number."""
    if tree[0] == "sequence":
        return tuple(_numbers_of(item) for item in tree[1])
    return None if tree[0] in ("none", "object") else tree


CONTAINED_NOTHING = (
    "the test function (it takes no inputs, and runs as written) returned, discarded and kept no "
    "number to compare"
)
CONTAINED_NOT_RUN = (
    "the test function ran, but not the lines the rewrite changed ({}): its numbers say nothing "
    "about the rewrite"
)
CONTAINED_RAN = (
    "ran the test function as written (it takes no inputs), with the lines the rewrite changed: "
    "compared its return value, the calls whose values it discards and its locals at the end ({})"
)


def _function_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Outcome:
    """A function called with seeded tensors; in GRAPH mode compiled with jit. One that takes its
    network (an optimizer, a criterion) as an argument is given probes for them, and runs as
    Python in both modes, as a script calls it (a Cell cannot be a jit function's argument): in
    GRAPH mode MindSpore compiles what it differentiates."""
    objects = any(role in sites.OBJECT_ROLES for role in site["inputs"])
    traces: dict[str, Trace] = {}
    for label in LABELS:

        def build(module: ModuleType = modules[label]) -> tuple:
            context.reset()
            function = getattr(module, site["name"])
            if context.mode == "graph" and not site["jit"] and not objects:
                function = compat.jit(ms)(function)
            inputs, sources = _function_arguments(site, context)
            return function, inputs, collect_state([*sources, *_module_cells(module)])

        start = _start_of(traces, label)
        traces[label] = context.trace(
            "function",
            label,
            lambda build=build, start=start: run_steps(build, context.steps, context.describe, start),
        )
    outcome = compare_traces(traces["before"], traces["after"], *context.tolerance)
    if objects and outcome.verdict is Verdict.EQUAL:
        given = ", ".join(f"{role} {name}" for name, role in _object_parameters(site) if role)
        outcome.detail = "; ".join(filter(None, [outcome.detail, FUNCTION_OBJECTS.format(given)]))
    return outcome


FUNCTION_OBJECTS = (
    "ran as Python, as a script calls it, given the probe's {} (in GRAPH mode MindSpore compiles "
    "what the function differentiates)"
)


def _object_parameters(site: dict) -> list[tuple[str, str]]:
    """(parameter, role) of a function site's parameters given objects; "" for the tensors."""
    pairs = zip(site.get("parameters", ()), site["inputs"])
    return [(name, role if role in sites.OBJECT_ROLES else "") for name, role in pairs]


def _function_arguments(site: dict, context: Context) -> tuple[tuple, list[nn.Cell]]:
    """A function site's arguments by role (``sites._function_roles``): a probe network for each
    network (stateful: BatchNorm and dropout in training mode), an optimizer over the first
    one's weights, MindSpore's MSELoss for a criterion, the first network's weights for a grad's
    weights, seeded tensors for the rest; and the Cells whose state is compared."""
    roles = site["inputs"]
    seeded = [role for role in roles if role not in sites.OBJECT_ROLES]
    tensors = iter(probe.seeded_inputs(seeded, context.seed))
    networks = [
        probe.network(site.get("network_inputs") or 1, 1, "stateful", portable=context.portable, raw=True)
        for role in roles
        if role == "network"
    ]
    made = iter(networks)
    arguments: list[Any] = []
    sources: list[nn.Cell] = list(networks)
    for role in roles:
        if role == "network":
            arguments.append(next(made))
        elif role == "optimizer":
            optimizer = probe.optimizer("Momentum", networks[0] if networks else [])
            arguments.append(optimizer)
            sources.append(optimizer)
        elif role == "criterion":
            arguments.append(probe.criterion())
        elif role == "weights":
            arguments.append(ms.ParameterTuple(networks[0].trainable_params() if networks else []))
        else:
            arguments.append(next(tensors))
    return tuple(arguments), sources


def _factory_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Optional[Outcome]:
    """Run the user's factory harness; None when it declines the site."""
    assert context.factory is not None
    traces: dict[str, Trace] = {}
    for label in LABELS:
        declined: list[bool] = []

        def build(module: ModuleType = modules[label], declined: list[bool] = declined) -> tuple:
            context.reset()
            made = context.factory(getattr(module, site["name"]))  # type: ignore[misc]
            if made is None:
                declined.append(True)
                raise LookupError("the factory returned None")
            target, inputs = made
            if not isinstance(inputs, (tuple, list)):
                inputs = (inputs,)
            sources = [target] if isinstance(target, nn.Cell) else []
            return target, tuple(inputs), collect_state([*sources, *_module_cells(module)])

        def make(
            build: Build = build, start: Optional[list[np.ndarray]] = None, declined: list[bool] = declined
        ) -> Trace:
            trace = run_steps(build, context.steps, context.describe, start)
            trace.declined = bool(declined)
            return trace

        start = _start_of(traces, label)

        traces[label] = context.trace("factory", label, lambda make=make, start=start: make(start=start))
        if label == "before" and traces[label].declined:
            return None
    return compare_traces(traces["before"], traces["after"], *context.tolerance)


STOOD_IN = (
    "Ascend's float-status operators ({}) ran as CPU stand-ins that read a clear status: the probe's "
    "values are finite, so Ascend reads the same, but an overflow only the device register sees is not tested"
)


EXITED = "the module's import ended in exit(0) ({}), as running it would: what it defines above that ran"
CRITERION = "its criterion was MindSpore's nn.MSELoss, in place of the one the training script passes"
SWITCHED_PARTS = "the probe carried empty stand-ins for the parts the step only switches out of training ({})"
SECOND_NETWORK = {
    "map": "its second network was a second probe that maps the inputs the first takes (a generator's place)",
    "loss": "its second network was a second probe loss network",
}


REMOVED_OPS = (
    "{} (gone since MindSpore 1.2) ran as a stand-in that only orders two operations, as it did; "
    "the file needs it replaced to run on this MindSpore (MS211)"
)


def _removed_stand_ins(context: Context, modules: Callable[[str], ModuleType]) -> list[str]:
    """The stand-ins of ``removed_ops`` that the site's module names (BEFORE's, where this
    worker runs it)."""
    label = "before" if "before" in context.sides else "after"
    try:
        return removed_ops.named_by(modules(label))
    except ImportFailure:
        return []


def run_site(site: dict, context: Context, modules: Callable[[str], ModuleType]) -> dict[str, Any]:
    """Everything about one site in this worker's mode, as the JSON the parent reads; while only
    recording BEFORE, what it recorded under ``"recorded"`` (and no verdict of its own)."""
    float_status.reset_used()
    result = _run_site(site, context, modules)
    if result["verdict"] == Verdict.EQUAL.value:
        stood_in = float_status.used()
        packages = getattr(modules, "stood_in", ())
        asked = getattr(modules, "device_asked", ())
        details = [STOOD_IN.format(", ".join(stood_in))] if stood_in else []
        details += [standins.describe(packages)] if packages else []
        gone = getattr(modules, "removed", ())
        details += [removed_names.describe(gone)] if gone else []
        details += [device_guard.describe(asked, os.environ.get("MS_MIGRATE_DEVICE", "CPU"))] if asked else []
        details += [CRITERION] if "criterion" in site.get("arguments", ()) else []
        details += [SECOND_NETWORK[site["second_network"]]] if site.get("second_network") else []
        parts = ", ".join(site.get("network_parts", ()))
        details += [SWITCHED_PARTS.format(parts)] if parts else []
        exited = getattr(modules, "exited", ())
        details += [EXITED.format(", ".join(exited))] if exited else []
        removed = _removed_stand_ins(context, modules)
        details += [REMOVED_OPS.format(", ".join(removed))] if removed else []
        if details:  # after what the harness said of the run (the project's network, images)
            result["detail"] = "; ".join(filter(None, [result.get("detail"), *details]))
    if context.records_only:
        result["recorded"] = context.recording
    return result


def _run_site(site: dict, context: Context, modules: Callable[[str], ModuleType]) -> dict[str, Any]:
    try:
        versions = _versions(context, modules, site["name"])
    except ImportFailure as failure:
        return _import_outcome(failure).to_json("none")
    if context.factory_problem:
        return Outcome(Verdict.NOT_RUN, context.factory_problem).to_json("factory")
    if context.factory is not None:
        outcome = _factory_site(site, context, versions)
        if outcome is not None:
            return outcome.to_json("factory")
    if site["kind"] == "cell":
        harness = "train step" if site["optimizer"] else "grad cell"
        harness += ": " + "; ".join(variant for variant, *_ in _variants(site))
        outcome = _cell_site(site, context, versions, getattr(modules, "project_module", None))
        return _automatic(outcome).to_json(harness)
    if site["kind"] == "function" and site.get("compared_locals") is not None:
        return _contained_site(site, context, versions).to_json("the test function, as written")
    if site["kind"] == "function":
        return _automatic(_function_site(site, context, versions)).to_json("seeded inputs")
    hint = "the factory returned None" if context.factory else "name one in [tool.ms-migrate.verify] factory"
    return Outcome(Verdict.NOT_RUN, f"needs a harness: {site['problem']} ({hint})").to_json("none")
