"""Running one site inside a worker: build each version's harness, train N steps, compare.

Imported only by the worker (it needs MindSpore). Three harnesses, tried in this order:

- the project's factory (``[tool.ms-migrate.verify] factory``), called with the class or function;
  it returns ``(callable, inputs)``, or ``None`` to leave the site to the automatic harnesses;
- a train-step Cell: a seeded probe network and a fresh optimizer (SGD, then Momentum, so optimizer
  state counts), passed to the class as ``(network, optimizer)``;
- a grad function: called with seeded tensors; its state is the Cells held in module globals.

The state compared after every step is every Parameter reachable from the harness: the weights,
the optimizer's moments and counters, BatchNorm statistics, loss-scale values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Optional

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

from ms_migrate.verify import probe
from ms_migrate.verify.compare import Tally
from ms_migrate.verify.model import Verdict, worst

Describe = Callable[[BaseException], str]


class ImportFailure(Exception):
    """A version's module raised while being imported; the message says where and what."""


@dataclass
class Context:
    """What every site in one worker shares."""

    mode: str
    steps: int
    rtol: float
    atol: float
    seed: int
    describe: Describe
    factory: Optional[Callable[[Any], Any]] = None
    factory_problem: str = ""

    def reset(self) -> None:
        """Same mode and seeds before building each version: user code may have changed them."""
        ms.set_context(mode=ms.GRAPH_MODE if self.mode == "graph" else ms.PYNATIVE_MODE)
        _clear_pynative_records()
        ms.set_seed(self.seed)
        np.random.seed(self.seed)


def _clear_pynative_records() -> None:
    """Forget the forwards PYNATIVE recorded for earlier sites in this worker.

    With set_grad(), PYNATIVE GradOperation reuses a recorded forward. Records left by earlier
    sites' Cells made BEFORE and AFTER of a later site disagree (seen on 2.10, only when several
    sites share a worker), though each agrees with a fresh process.
    """
    try:
        from mindspore.graph.api import _pynative_executor  # 2.9+
    except ImportError:
        from mindspore.common.api import _pynative_executor
    _pynative_executor.clear_res()


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


@dataclass
class Outcome:
    verdict: Verdict
    reason: str = ""
    steps: int = 0
    max_abs: Optional[float] = None
    max_rel: Optional[float] = None
    detail: str = ""  # the error behind ``reason`` when the reason is advice

    def to_json(self, harness: str) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "steps": self.steps,
            "max_abs_diff": self.max_abs,
            "max_rel_diff": self.max_rel,
            "harness": harness,
            "detail": self.detail,
        }


CANNOT_DRIVE = (
    "the automatic harness could not drive this step (the original fails on its probe network "
    "and inputs too); name a harness in [tool.ms-migrate.verify] factory, see "
    "docs/verification.md#a-factory-for-your-own-network"
)


def _automatic(outcome: Outcome) -> Outcome:
    """An automatic harness's NOT_RUN always means BEFORE failed on the probe: the probe did not fit
    the step, which is no fault of the code or the rewrite. Say what to do; keep the error."""
    if outcome.verdict is not Verdict.NOT_RUN:
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


def compare_traces(before: Trace, after: Trace, rtol: float, atol: float) -> Outcome:
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
            Verdict.DIFFERS,
            f"the versions hold different state: {len(shapes_before)} parameters in BEFORE, "
            f"{len(shapes_after)} in AFTER",
            steps,
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
        trace.error = describe(error)
    return trace


def _combine(outcomes: list[tuple[str, Outcome]]) -> Outcome:
    """One row from several runs (SGD and Momentum): the worst verdict, the largest differences."""
    verdict = worst([outcome.verdict for _, outcome in outcomes])
    label, first = next((label, outcome) for label, outcome in outcomes if outcome.verdict is verdict)
    combined = Outcome(verdict, first.reason, min(outcome.steps for _, outcome in outcomes))
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
    found = {}
    for label in ("before", "after"):
        module = modules(label)
        if not hasattr(module, name):
            raise ImportFailure(f"{label.upper()} has no top-level {name!r} after import")
        found[label] = module
    return found


def _cell_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Outcome:
    """A train step on every probe variant, once per optimizer; a network-only grad Cell likewise
    without an optimizer. The row is the worst of them, named by the variant that decided it."""
    variants = [*probe.VARIANTS, *(probe.VARARGS_VARIANTS if site.get("varargs") else ())]
    outcomes = []
    for variant, kind, set_grad, optimizers in variants:
        for optimizer_kind in optimizers if site["optimizer"] else (None,):
            traces = {}
            for label, module in modules.items():

                def build(
                    module: ModuleType = module,
                    optimizer_kind: Optional[str] = optimizer_kind,
                    kind: str = kind,
                    set_grad: bool = set_grad,
                ) -> tuple:
                    context.reset()
                    network = probe.network(site["network_inputs"], site["outputs"], kind, set_grad)
                    cls = getattr(module, site["name"])
                    if optimizer_kind is None:
                        cell, sources = cls(network), [network]
                    else:
                        optimizer = probe.optimizer(optimizer_kind, network)
                        arguments = (network, optimizer) if site["network_first"] else (optimizer, network)
                        cell, sources = cls(*arguments), [network, optimizer]
                    inputs = probe.seeded_inputs(site["inputs"], context.seed)
                    return cell, inputs, collect_state([*sources, cell])

                traces[label] = run_steps(build, context.steps, context.describe)
            outcome = compare_traces(traces["before"], traces["after"], context.rtol, context.atol)
            outcomes.append((", ".join(filter(None, [variant, optimizer_kind])), outcome))
    return _combine(outcomes)


def _function_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Outcome:
    traces: dict[str, Trace] = {}
    for label, module in modules.items():

        def build(module: ModuleType = module) -> tuple:
            context.reset()
            function = getattr(module, site["name"])
            if context.mode == "graph" and not site["jit"]:
                function = ms.jit(function)
            inputs = probe.seeded_inputs(site["inputs"], context.seed)
            return function, inputs, collect_state(_module_cells(module))

        start = traces["before"].states[0] if label == "after" and traces["before"].states else None
        traces[label] = run_steps(build, context.steps, context.describe, start)
    return compare_traces(traces["before"], traces["after"], context.rtol, context.atol)


def _factory_site(site: dict, context: Context, modules: dict[str, ModuleType]) -> Optional[Outcome]:
    """Run the user's factory harness; None when it declines the site."""
    assert context.factory is not None
    traces: dict[str, Trace] = {}
    declined: list[str] = []
    for label, module in modules.items():

        def build(module: ModuleType = module, label: str = label) -> tuple:
            context.reset()
            made = context.factory(getattr(module, site["name"]))  # type: ignore[misc]
            if made is None:
                declined.append(label)
                raise LookupError("the factory returned None")
            target, inputs = made
            if not isinstance(inputs, (tuple, list)):
                inputs = (inputs,)
            sources = [target] if isinstance(target, nn.Cell) else []
            return target, tuple(inputs), collect_state([*sources, *_module_cells(module)])

        start = traces["before"].states[0] if label == "after" and traces["before"].states else None
        traces[label] = run_steps(build, context.steps, context.describe, start)
        if "before" in declined:
            return None
    return compare_traces(traces["before"], traces["after"], context.rtol, context.atol)


def run_site(site: dict, context: Context, modules: Callable[[str], ModuleType]) -> dict[str, Any]:
    """Everything about one site in this worker's mode, as the JSON the parent reads."""
    try:
        versions = _versions(context, modules, site["name"])
    except ImportFailure as failure:
        return Outcome(Verdict.NOT_RUN, str(failure)).to_json("none")
    if context.factory_problem:
        return Outcome(Verdict.NOT_RUN, context.factory_problem).to_json("factory")
    if context.factory is not None:
        outcome = _factory_site(site, context, versions)
        if outcome is not None:
            return outcome.to_json("factory")
    if site["kind"] == "cell":
        harness = "train step" if site["optimizer"] else "grad cell"
        variants = [*probe.VARIANTS, *(probe.VARARGS_VARIANTS if site.get("varargs") else ())]
        harness += ": " + "; ".join(variant for variant, *_ in variants)
        return _automatic(_cell_site(site, context, versions)).to_json(harness)
    if site["kind"] == "function":
        return _automatic(_function_site(site, context, versions)).to_json("seeded inputs")
    hint = "the factory returned None" if context.factory else "name one in [tool.ms-migrate.verify] factory"
    return Outcome(Verdict.NOT_RUN, f"needs a harness: {site['problem']} ({hint})").to_json("none")
