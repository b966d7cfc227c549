"""MS101's reason codes (why a site is left alone) and notes (what a converted site's user should know).

``docs/reasons.md`` is generated from these; users grep for the codes and tests assert on them.
"""

from __future__ import annotations

from ms_migrate.diagnostics import Diagnostic
from ms_migrate.reasons import Note, Reason, registry

REASONS: dict[str, Reason] = registry(
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
        "shared-statement",
        "two grad sites share a statement",
        "A rewrite replaces or removes whole statements. When the creations, grad calls or forward "
        "calls of two sites are in one statement, rewriting one site would rewrite the other's "
        "code too, so neither is. Split the statement, or convert them by hand. (An op applied "
        "several times, as in a GAN's two steps, is converted: each application gets its own form.)",
    ),
    Reason(
        "MSR005",
        "grad-outside-construct",
        "the grad op is applied where its call path is not visible",
        "At module level or in another class, and, for the forms that merge a forward call, scale "
        "by sens or wrap the network, in a Cell method other than construct: the call path and "
        "execution mode are not visible there. The direct `grad` form, exact in both modes, is "
        "written in any method of the Cell that creates the op.",
    ),
    Reason(
        "MSR006",
        "inherited-grad",
        "the grad op comes from a base class whose flags are not known",
        "The op is created in a base class's __init__ that is not in rules/inherited_grad_ops.json "
        "(PipelineCell, TrainOneStepWithClipGradientCell, ...), so its flags, and whether the base "
        "calls set_grad(), are unknown. Ops from nn.TrainOneStepCell, TrainOneStepWithLossScaleCell "
        "and the Boost pair are converted like ops created in the file.",
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
        "MSR014",
        "scaled-forward-not-exact",
        "this loss-scaled step needs the scaled-forward form, which is not exact here",
        "Without sens_param (before MindSpore 2.8), and at any version for a network whose construct "
        "takes *inputs (GRAPH mode cannot differentiate it directly), the loss scale is applied inside "
        "a function that "
        "runs the forward once and returns loss * sens. That is exact only when the legacy code "
        "also ran the forward once: when set_grad() is called on the network (and in GRAPH mode). "
        "Without set_grad(), PYNATIVE runs the legacy forward twice per step (BatchNorm statistics "
        "update twice, Dropout draws two masks), and no single form matches both modes. Also "
        "left alone: a forward and sens fill that cannot move next to the grad call.",
    ),
    Reason(
        "MSR015",
        "varargs-network",
        "the network's construct takes *args, which GRAPH mode cannot differentiate directly",
        "mindspore.grad and value_and_grad on a Cell whose construct is `construct(self, *inputs)` "
        'fail in GRAPH mode ("The parameters number of the function is 1, but the number of '
        'provided arguments is 2"); GradOperation works. A def that calls the network is exact '
        "only when it runs the only forward pass: no separate forward, or one merged into "
        "value_and_grad with set_grad() called on the network. Other shapes are left alone.",
    ),
    Reason(
        "MSR016",
        "forward-not-reused",
        "set_grad() makes PYNATIVE reuse a recorded forward, and this step's forward cannot merge",
        "With set_grad() on the network, PYNATIVE GradOperation reuses the forward it recorded; "
        "when that forward ran on other inputs (or overwrote them), or when set_grad() was called "
        "on another Cell (perhaps part of the network), MindSpore 2.10 gives different gradients "
        "for GradOperation and mindspore.grad, so no functional form is exact.",
    ),
    Reason(
        "MSR017",
        "defaulted-parameter-left-out",
        "the network's construct has a defaulted parameter the call leaves out, which GRAPH mode "
        "cannot differentiate directly",
        "GradOperation differentiates `construct(self, x, y, weight=None)` called with two "
        'arguments; mindspore.grad and value_and_grad on the Cell fail in GRAPH mode ("The '
        'parameters number of the function is 3, but the number of provided arguments is 2"). '
        "A def that passes exactly the call's arguments is exact when it runs the only forward "
        "pass: no separate forward, or one merged into value_and_grad with set_grad() called on "
        "the network. Other shapes are left alone.",
    ),
    Reason(
        "MSR018",
        "forward-count-differs",
        "an argument of the forward is not one tensor shared with the grad call, so GRAPH mode ran "
        "the legacy forward twice",
        "In GRAPH mode the legacy forward and GradOperation's forward are one computation when "
        "each argument is the same tensor. With a None, a Python number, a tuple, a tensor "
        "attribute or an expression written out in both calls, the network runs twice per step, "
        "and BatchNorm statistics and Dropout masks follow from that. The scaled-forward form "
        "(loss scale before 2.8, or a network GRAPH mode cannot differentiate directly) runs it "
        "once, so the site is left alone.",
    ),
    Reason(
        "MSR019",
        "unknown-network",
        "the network's class is not among the files of this run, and the step passes *args or its "
        "construct takes them",
        "Whether GRAPH mode can differentiate a network directly depends on its construct: one that "
        "takes *args, or has defaulted parameters the call leaves out, makes mindspore.grad and "
        'value_and_grad fail in GRAPH mode ("The parameters number of the function is N, but the '
        'number of provided arguments is M"), while GradOperation works. Here the class is unknown '
        "and the call's arity is hidden in *args, so no form is known to be exact. Of five such sites "
        "in public repositories converted and run by hand, three failed in GRAPH mode, so the site "
        "stays. Run the tool over the file that defines the network and the script that builds the "
        "step, and the site is converted with the form its signature needs.",
    ),
    # Found on a public repository never used in development (a Fisher-trace helper that binds
    # `grad_op` twice in one loop), where an op bound again with other flags was rewritten with
    # the first op's.
    Reason(
        "MSR027",
        "grad-op-rebound",
        "the name the grad op is bound to is bound again in its scope",
        "`grad_op = GradOperation(get_all=True)` and later `grad_op = GradOperation(get_all=True, "
        "sens_param=True)` in one function: which op an application of `grad_op` calls depends on "
        "the order the lines run in (a loop, a branch), and each op's flags decide its form. The "
        "sites of that name stay. Give each op a name of its own, and each is converted.",
    ),
    # Measured on a public copy of MindSpore's tests (`grad_net(x1, 1, dy)`), where the rewrite had
    # changed the result's structure silently.
    Reason(
        "MSR026",
        "number-at-grad-position",
        "get_all=True, and this file gives a Python number for an input, leaving one Tensor",
        "GradOperation(get_all=True) returns a tuple of the gradients of the Tensor inputs, a "
        "Python number (an axis, a scale) having none: a 1-tuple where only one input is a "
        "Tensor. mindspore.grad with grad_position=(0, 1, ...) drops the number's position too, "
        "but returns the one gradient left bare, not in a tuple, so `out[0]` would read its first "
        "row. Where this file calls the Cell (or the grad function) with a number at an input "
        "and at most one other input, the site stays. With two Tensors or more the forms agree.",
    ),
)

_NO_SET_GRAD = (
    "the forward call stays separate: set_grad() is not called on this network, so in PYNATIVE mode "
    "the legacy code ran the forward twice per step, and one merged value_and_grad would change "
    "BatchNorm statistics and Dropout masks; "
)
# Where MSN001 says set_grad() belongs: a train step Cell (its network is `self.network`) has an
# __init__; a function-style step (a def, or a notebook's loop) uses a network built elsewhere.
_SET_GRAD_IN_CELL = "call network.set_grad() in __init__ to have it merged."
_SET_GRAD_FOR_FUNCTION = (
    "call network.set_grad() where the network is built, before the first step, to have it merged."
)

_NOTE_TEXTS = {
    "MSN001": _NO_SET_GRAD + "call network.set_grad() to have it merged: in __init__ for a train step "
    "Cell, or where the network is built, before the first step, for a function-style step.",
    "MSN002": "the network returns several outputs and the gradient is of their sum, as it was "
    "with GradOperation; if only the first output is the loss, value_and_grad(..., has_aux=True) "
    "is probably what was meant (a deliberate change of numbers, not made here).",
    "MSN005": "the forward call stays separate: an argument it shares with the grad call is not "
    "one tensor (a None, a number, a tuple, an attribute or an expression written in both), so in "
    "GRAPH mode the legacy code ran the forward twice per step, and one merged value_and_grad "
    "would change BatchNorm statistics and Dropout masks.",
}

NOTES: dict[str, Note] = {code: Note(code, text) for code, text in _NOTE_TEXTS.items()}


def left_alone(line: int, code: str, detail: str = "") -> Diagnostic:
    return REASONS[code].at(line, detail)


def note(line: int, code: str, network_on_self: bool = True) -> Diagnostic:
    """The note ``code`` at ``line``; MSN001 says where set_grad() goes, in the Cell's __init__
    when the network is reached through ``self``, else where the network is built."""
    if code == "MSN001":
        where = _SET_GRAD_IN_CELL if network_on_self else _SET_GRAD_FOR_FUNCTION
        return Note(code, _NO_SET_GRAD + where).at(line)
    return NOTES[code].at(line)
