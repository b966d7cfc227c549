"""What the analysis says about a site: converted, left alone (with a named reason), or a note.

A refusal is a value with a code, never a bare ``None``: users grep for codes, the docs explain
each one (``docs/reasons.md`` is generated from ``REASONS``), and tests assert on them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional


class Kind(str, enum.Enum):
    CONVERTED = "converted"
    LEFT_ALONE = "left-alone"
    NOTE = "note"


@dataclass(frozen=True)
class Reason:
    code: str
    slug: str
    summary: str
    explanation: str


def _reasons(*items: Reason) -> dict[str, Reason]:
    return {item.code: item for item in items}


REASONS: dict[str, Reason] = _reasons(
    Reason(
        "MSR001",
        "target-too-old",
        "the target version has no functional autodiff API with weights",
        "MindSpore before 1.8 has no value_and_grad/grad that takes weights. GradOperation is the "
        "right spelling there, so the site stays as it is.",
    ),
    Reason(
        "MSR002",
        "non-literal-flags",
        "GradOperation flags are not literal True/False",
        "The flags decide the shape of the result (inputs, weights, sens). When they come from a "
        "variable the rewrite cannot know which functional form is equal.",
    ),
    Reason(
        "MSR003",
        "grad-op-escapes",
        "the grad op is used as a value (passed, returned, stored or called elsewhere)",
        "A GradOperation that is handed to helpers or kept in a data structure may be applied in "
        "ways this file does not show. Rewriting its one visible use could break the others.",
    ),
    Reason(
        "MSR004",
        "multiple-applications",
        "the grad op is applied more than once",
        "Several grad calls or weight sets on one op (GANs, multi-loss training) need a decision "
        "per call about the forward pass and the outputs; convert them by hand.",
    ),
    Reason(
        "MSR005",
        "grad-outside-construct",
        "the grad op is applied outside construct",
        "Grads taken in another method of the Cell are not rewritten: their call path and "
        "execution mode are not visible from the method itself.",
    ),
    Reason(
        "MSR006",
        "inherited-grad",
        "self.grad comes from a base class (e.g. nn.TrainOneStepCell)",
        "The op is created in a base class the tool does not rewrite, such as "
        "nn.TrainOneStepCell or TrainOneStepWithLossScaleCell. Changing only the subclass would "
        "leave the base class inconsistent.",
    ),
    Reason(
        "MSR007",
        "sens-from-arguments",
        "sens comes from construct arguments or *args",
        "When the caller passes the backprop seed, its value is unknown here, and before 2.8 no "
        "exact functional form exists for an arbitrary seed.",
    ),
    Reason(
        "MSR008",
        "unsupported-sens",
        "sens is not a recognised loss-scale form",
        "Only sens built from the loss as fill(dtype(loss), shape(loss), scale) or an equivalent "
        "scalar form is converted exactly. A tuple sens or a computed tensor needs a human.",
    ),
    Reason(
        "MSR009",
        "unsupported-application",
        "the grad op is applied in a shape the tool does not convert",
        "The application is not `grads = op(net, weights)(args)` or `g = op(net, weights)` "
        "followed by `g(args)` in one function. Left for a human.",
    ),
    Reason(
        "MSR010",
        "unsupported-flags",
        "this flag combination is not converted yet",
        "The combination of get_all, get_by_list and sens_param has no exact form implemented for "
        "this target.",
    ),
    Reason(
        "MSR011",
        "shadowed-name",
        "a name the rewrite needs is bound to something else here",
        "The rewrite must refer to mindspore, but the name is already used locally for something "
        "else, and no other alias is available.",
    ),
    Reason(
        "MSR012",
        "unused-grad-op",
        "the grad op is created but never applied in this file",
        "Without an application there is nothing to rewrite; the op may be used from another file.",
    ),
    Reason(
        "MSR013",
        "ambiguous-arity",
        "the number of inputs is unknown (e.g. *args with get_all=True)",
        "get_all=True returns one gradient per input. With *args the count is not visible, so the "
        "grad_position tuple cannot be written out.",
    ),
    Reason(
        "MSR099",
        "internal-error",
        "the rewrite failed validation and was discarded",
        "The rewritten file did not compile or was not a fixed point. The file is left unchanged. "
        "Please report it with the input.",
    ),
)

NOTES: dict[str, str] = {
    "MSN001": "PYNATIVE: the legacy forward ran twice unless network.set_grad() was called; the "
    "merged value_and_grad runs it once, so BatchNorm statistics and Dropout masks can differ.",
    "MSN002": "the network returns several outputs and the gradient is of their sum, as it was "
    "with GradOperation; if only the first output is the loss, value_and_grad(..., has_aux=True) "
    "is probably what was meant (a deliberate change of numbers, not made here).",
}


@dataclass(frozen=True)
class Finding:
    """One thing to tell the user about one site."""

    line: int
    kind: Kind
    code: str
    message: str

    def render(self, path: str, where: Optional[str] = None) -> str:
        return f"{path}:{where or self.line} {self.code} {self.message}"


def left_alone(line: int, code: str, detail: str = "") -> Finding:
    reason = REASONS[code]
    message = f"{reason.summary} ({reason.slug})"
    if detail:
        message = f"{message}: {detail}"
    return Finding(line, Kind.LEFT_ALONE, code, message)


def converted(line: int, rule: str, message: str) -> Finding:
    return Finding(line, Kind.CONVERTED, rule, message)


def note(line: int, code: str) -> Finding:
    return Finding(line, Kind.NOTE, code, NOTES[code])
