"""Which top-level classes and functions differ between two versions of a file, and how to run each.

Pure: two texts in, a list of ``SitePlan`` out. A plan says which automatic harness fits (a
train-step Cell, or a grad function called with seeded tensors), or why none does. Nothing here
imports MindSpore or the user's code; the worker acts on the plans.

Only top-level definitions are sites: GRAPH mode can only compile Cells defined at module level,
and a method is exercised through its class. A definition that did not change but reads a
module-level name whose binding changed (an import the rewrite dropped, say) is a site too.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Callable, Optional, Union

from ms_migrate.verify import contained

MAX_OUTPUTS = 12  # a detector's step unpacks up to nine losses
STAR_INPUTS = 2  # `construct(self, *inputs)`: the usual (data, label)
NO_INPUTS = "it takes no inputs to seed"
SCALAR_HINTS = ("sens", "scale")  # argument names that carry a loss scale, not a batch

# Base classes whose __init__ is (network, optimizer, sens=...) and that a Cell may inherit it from.
TRAIN_ONE_STEP_BASES = frozenset(
    {
        "TrainOneStepCell",
        "TrainOneStepWithLossScaleCell",
        "BoostTrainOneStepCell",
        "BoostTrainOneStepWithLossScaleCell",
        "TrainOneStepWithClipGradientCell",
    }
)
# Of those, the ones whose third argument, the loss scale (a Cell or a Tensor), is required.
LOSS_SCALE_BASES = frozenset({"TrainOneStepWithLossScaleCell", "BoostTrainOneStepWithLossScaleCell"})
LOSS_SCALE_PARAMETERS = frozenset({"scale_sense", "scale_update_cell", "loss_scale_update_cell"})
GRAD_NAMES = frozenset({"GradOperation", "grad", "value_and_grad", "vjp", "jvp"})

Definition = Union[ast.ClassDef, ast.FunctionDef]


@dataclass(frozen=True)
class NetworkFacts:
    """What the run knows of a train step's network: its construct's positional parameters, how
    many of them have no default, and whether it takes ``*inputs``."""

    positional: int
    required: int
    varargs: bool
    # What builds it when called with no arguments (its class, or a factory function of the
    # project): its file ("" for the file being migrated), name, and the MindSpore loss class an
    # nn.WithLossCell wraps it in (""). Verify runs the step on it where the probes cannot.
    built_from: tuple[str, ...] = ()


# (the step's class, the attribute its network is in) -> the network, when the run knows its class.
NetworkLookup = Callable[[str, str], Optional[NetworkFacts]]


@dataclass(frozen=True)
class SitePlan:
    """A definition to run before and after, and the automatic harness for it (if any).

    ``inputs`` gives the role of each seeded argument: "feature" (a batch of features), "label"
    (targets, the network's last input) or "scalar" (a sens / loss-scale value).
    """

    name: str
    line: int
    kind: str  # "cell", "function", "none" (only a user factory can run it) or "skip" (nothing can)
    inputs: tuple[str, ...] = ()
    network_inputs: int = 0  # arity of the probe network's construct
    outputs: int = 1  # outputs of the probe network: the loss, then auxiliaries
    optimizer: bool = True  # False: no optimizer is passed (a grad Cell, or one that builds its own)
    # What __init__ is given, positionally: "network", "optimizer", "optimizers N" (a tuple of N
    # optimizers, which __init__ unpacks), "loss scale" (a loss-scale
    # update Cell), "settings" (a config object) or a Python literal for a setting (`lr` "0.05");
    # see ``init_value``.
    arguments: tuple[str, ...] = ("network", "optimizer")
    varargs: bool = False  # the Cell passes *inputs to its network: also run a *inputs probe
    defaulted: int = 0  # construct's defaulted parameters (not a sens): a probe network takes as many
    jit: bool = False  # the function is already decorated with jit
    optimizer_extras: bool = False  # the step passes its optimizer more than the gradients
    weight_words: tuple[str, ...] = ()  # words the step looks for in its weights' names
    network_file: str = ""  # the file of what builds the network the step is given ("": this one)
    network_builder: str = ""  # a class or function of that file that builds it when called bare
    network_loss: str = ""  # a MindSpore loss class it is wrapped in with nn.WithLossCell
    # A step given two networks (a GAN's): what stands in for the second ("network 2" among the
    # arguments), "map" or "loss" (see ``_network_pair``), and how many inputs it takes.
    second_network: str = ""
    second_network_inputs: int = 0
    optimizer_networks: tuple[int, ...] = ()  # per optimizer: 0 the main network's weights, 1 the second's
    network_parts: tuple[str, ...] = ()  # sub-Cells the step only switches out of training (stand-ins)
    # The probe returns its prediction, shaped as a label, not the loss: the step seeds the grad
    # with one of its own inputs, which must have the shape of the network's output.
    raw_output: bool = False
    # The step seeds each of the network's outputs with a tensor of its own, in a tuple
    # (`self.grad(self.net)(x, t, (ones, zeros))`, as physics-informed networks' derivative Cells
    # do): a probe whose outputs have those tensors' shape may be needed (``probe.network``'s columns).
    sens_per_output: bool = False
    # A test function that takes no inputs, run as written (``contained``): the locals compared
    # at its end (None for any other site), and the lines of each version the rewrite changed.
    compared_locals: Optional[tuple[str, ...]] = None
    changed_before: tuple[int, ...] = ()
    changed_after: tuple[int, ...] = ()
    problem: str = ""  # for kind "none": why no automatic harness fits
    parameters: tuple[str, ...] = ()  # a function's, one per role of ``inputs``

    def to_json(self) -> dict:
        return dict(self.__dict__)


class SiteSearchError(Exception):
    """A version that does not parse: nothing can be compared."""


def _parse(text: str, label: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as error:
        raise SiteSearchError(f"{label} does not parse: {error.msg} (line {error.lineno})") from error


def _definitions(module: ast.Module) -> dict[str, Definition]:
    return {node.name: node for node in module.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}


def _other_statements(module: ast.Module) -> Counter[str]:
    return Counter(
        ast.dump(node) for node in module.body if not isinstance(node, (ast.ClassDef, ast.FunctionDef))
    )


def _bound_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, ast.alias):
            names.add((child.asname or child.name).split(".")[0])
    return names


def _changed_module_names(before: ast.Module, after: ast.Module) -> set[str]:
    """Names bound by module-level statements present in one version but not the other. Of an
    import that changed, only the names whose binding changed: `from mindspore import Tensor,
    ops` losing `ops` changes what `ops` is, not what `Tensor` is (a copy of a test suite had
    every test of a file run for it, none of them a grad site)."""
    old, new = _other_statements(before), _other_statements(after)
    changed = (old - new) + (new - old)
    names: set[str] = set()
    imported: list[dict[str, set[str]]] = [{}, {}]
    for module, bindings in zip((before, after), imported):
        for node in module.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) or ast.dump(node) not in changed:
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = (alias.asname or alias.name).split(".")[0]
                    source = f"{getattr(node, 'level', 0)}:{getattr(node, 'module', '')}:{alias.name}"
                    bindings.setdefault(bound, set()).add(source)
            else:
                names |= _bound_names(node)
    names |= {name for name in {*imported[0], *imported[1]} if imported[0].get(name) != imported[1].get(name)}
    return names


def _loaded_names(node: ast.AST) -> set[str]:
    return {
        child.id
        for child in ast.walk(node)
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)
    }


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def _mentions_grad(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in GRAD_NAMES:
            return True
        if isinstance(child, ast.Attribute) and child.attr in GRAD_NAMES:
            return True
    return False


def _method(class_def: ast.ClassDef, name: str) -> Optional[ast.FunctionDef]:
    return next(
        (node for node in class_def.body if isinstance(node, ast.FunctionDef) and node.name == name), None
    )


def _is_cell(
    class_def: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()
) -> bool:
    for base in class_def.bases:
        name = _dotted(base).rsplit(".", 1)[-1]
        if name.endswith("Cell"):
            return True
        local = classes.get(name)
        if local is not None and name not in seen and _is_cell(local, classes, seen | {name}):
            return True
    return False


def _inherited_loss_scale(class_def: ast.ClassDef) -> bool:
    return any(_dotted(base).rsplit(".", 1)[-1] in LOSS_SCALE_BASES for base in class_def.bases)


def _inherited_train_one_step(class_def: ast.ClassDef) -> bool:
    return any(_dotted(base).rsplit(".", 1)[-1] in TRAIN_ONE_STEP_BASES for base in class_def.bases)


def _is_scalar_name(name: str) -> bool:
    return any(hint in name.lower() for hint in SCALAR_HINTS)


def default_roles(names: Sequence[str]) -> tuple[str, ...]:
    """Features, then the label last; a parameter named like a loss scale gets a scalar."""
    tensors = [name for name in names if not _is_scalar_name(name)]
    roles = []
    for name in names:
        if _is_scalar_name(name):
            roles.append("scalar")
        else:
            roles.append("label" if len(tensors) > 1 and name == tensors[-1] else "feature")
    return tuple(roles)


def _signature(arguments: ast.arguments, skip_self: bool) -> tuple[list[str], str]:
    """Names to seed (``*inputs`` counts as two), or why the signature does not allow seeding."""
    positional = [arg.arg for arg in [*arguments.posonlyargs, *arguments.args][1 if skip_self else 0 :]]
    names = positional[: len(positional) - len(arguments.defaults)]
    if any(default is None for default in arguments.kw_defaults):
        return [], "it has required keyword-only arguments"
    if arguments.vararg is not None:
        names += [f"*{arguments.vararg.arg}[{index}]" for index in range(max(0, STAR_INPUTS - len(names)))]
    if not names:
        return [], NO_INPUTS
    return names, ""


def _unpacked_varargs(construct: ast.FunctionDef) -> list[str]:
    """The names ``construct(self, *inputs)`` unpacks its inputs into at its top level (RAS's
    `image, label, batchsize = inputs`): how many it takes, and what each one is."""
    vararg = construct.args.vararg
    if vararg is None:
        return []
    for statement in construct.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Tuple)
            and isinstance(statement.value, ast.Name)
            and statement.value.id == vararg.arg
            and all(isinstance(item, ast.Name) for item in statement.targets[0].elts)
        ):
            return [item.id for item in statement.targets[0].elts]  # type: ignore[attr-defined]
    return []


def _defaulted_inputs(arguments: ast.arguments, calls: list[list[ast.expr]]) -> int:
    """Positional parameters with defaults that the step does not pass on to its network, but
    for a loss scale (the step's own, not its network's): the network likely has them defaulted
    too. One the step passes on (`self.network(x, y, mask)`) is an input the network takes."""
    positional = [*arguments.posonlyargs, *arguments.args]
    defaulted = positional[len(positional) - len(arguments.defaults) :]
    passed = {
        node.id for call in calls for arg in call for node in ast.walk(arg) if isinstance(node, ast.Name)
    }
    return sum(not _is_scalar_name(arg.arg) and arg.arg not in passed for arg in defaulted)


def _network_calls(class_def: ast.ClassDef, attribute: str) -> list[list[ast.expr]]:
    """Argument lists the network receives: `self.net(a, b)`, `grad(self.net, ...)(a, b)`, and
    `f = grad(self.net, ...)` then `f(a, b)`. Only a call named like a grad makes a function
    that passes its arguments on to the network: `wrapped = WithLoss(self.net, loss)`, then
    `wrapped(x, y)`, is another cell, whose inputs are not the network's.

    The last argument of a grad function made with `sens_param=True` (`ms.grad(self.net,
    sens_param=True)(x, sens)`, or `self.grad = GradOperation(sens_param=True)` then
    `self.grad(self.net)(x, t, (s1, s2))`) is the sensitivity, not a network input; without that
    keyword at hand, a trailing argument named like a loss scale is taken for one.
    """
    direct, through_grad = [], []
    for args, sens in _calls_and_sens(class_def, attribute):
        (through_grad if sens is not None else direct).append(args)
    return direct + through_grad


def _sensitivities(class_def: ast.ClassDef, attribute: str) -> list[ast.expr]:
    """The sensitivities the class seeds its network's backpropagation with (see
    ``_network_calls``)."""
    return [sens for _, sens in _calls_and_sens(class_def, attribute) if isinstance(sens, ast.expr)]


def _calls_and_sens(
    class_def: ast.ClassDef, attribute: str
) -> Iterator[tuple[list[ast.expr], Union[ast.expr, bool, None]]]:
    """Each call that passes arguments to the network: its arguments, and None for a direct call,
    the sensitivity for one through a grad function that takes it, else False."""
    network = f"self.{attribute}"
    with_sens = _sens_grad_names(class_def)
    grad_functions: dict[str, ast.Call] = {}  # `f = self.grad(self.net)`: f, by name
    for node in ast.walk(class_def):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and _applies_grad(node.value)
            and any(_dotted(arg) == network for arg in node.value.args)
        ):
            grad_functions[node.targets[0].id] = node.value
    for node in ast.walk(class_def):
        if not isinstance(node, ast.Call) or any(isinstance(arg, ast.Starred) for arg in node.args):
            continue
        if _dotted(node.func) == network:
            yield list(node.args), None
            continue
        if (
            isinstance(node.func, ast.Call)
            and _applies_grad(node.func)
            and any(_dotted(arg) == network for arg in node.func.args)
        ):
            maker = node.func
        elif isinstance(node.func, ast.Name) and node.func.id in grad_functions:
            maker = grad_functions[node.func.id]
        else:
            continue
        args = list(node.args)
        if args and (
            _takes_sens(maker, with_sens) or (isinstance(args[-1], ast.Name) and _is_scalar_name(args[-1].id))
        ):
            yield args[:-1], args[-1]
        else:
            yield args, False


def _applies_grad(call: ast.Call) -> bool:
    """Whether ``call`` makes a grad function of its arguments: `ms.grad(net)`, `self.grad(net)`,
    `ops.GradOperation(...)(net)`, a project's `self.grad_fn(net)`: named like a grad."""
    name = _dotted(call.func).rsplit(".", 1)[-1]
    return name in GRAD_NAMES or "grad" in name.lower()


def _sens_param_set(call: ast.Call) -> bool:
    return any(
        keyword.arg == "sens_param"
        and isinstance(keyword.value, ast.Constant)
        and keyword.value.value is True
        for keyword in call.keywords
    )


def _sens_grad_names(class_def: ast.ClassDef) -> set[str]:
    """`self.<name>` of each grad operation the class makes with `sens_param=True`."""
    return {
        _dotted(node.targets[0])
        for node in ast.walk(class_def)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.value, ast.Call)
        and _sens_param_set(node.value)
    }


def _takes_sens(maker: ast.Call, with_sens: set[str]) -> bool:
    """Whether the grad function ``maker`` makes takes a sensitivity last: `ms.grad(net,
    sens_param=True)`, or `self.grad(net)` where `self.grad` was made with `sens_param=True`."""
    return _sens_param_set(maker) or _dotted(maker.func) in with_sens


def _passes_starred(class_def: ast.ClassDef, attribute: str) -> bool:
    """True if the network gets `*inputs`, directly or through a grad call: such a train step is
    often given a network whose own construct takes *inputs."""
    network = f"self.{attribute}"
    for node in ast.walk(class_def):
        if not isinstance(node, ast.Call) or not any(isinstance(arg, ast.Starred) for arg in node.args):
            continue
        if _dotted(node.func) == network or (
            isinstance(node.func, ast.Call) and any(_dotted(arg) == network for arg in node.func.args)
        ):
            return True
    return False


def _starred_names(class_def: ast.ClassDef, attribute: str) -> set[str]:
    """Names the class unpacks into its network's call, directly or through a grad call:
    `self.network(*inputs)` with `def construct(self, inputs)` takes a tuple, not a tensor."""
    network = f"self.{attribute}"
    found: set[str] = set()
    for node in ast.walk(class_def):
        if isinstance(node, ast.Call) and (
            _dotted(node.func) == network
            or (isinstance(node.func, ast.Call) and any(_dotted(arg) == network for arg in node.func.args))
        ):
            found |= {
                arg.value.id
                for arg in node.args
                if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name)
            }
    return found


def _cell_inputs(
    names: list[str], calls: list[list[ast.expr]], packed: set[str] = frozenset()
) -> tuple[str, ...]:
    """Roles of construct's arguments, read from where each one is passed to the network; one the
    step unpacks into the network's call (``packed``) is a tuple of a feature and a label."""
    roles: dict[str, str] = {name: "packed" for name in names if name in packed}
    for args in calls:
        for index, arg in enumerate(args):
            if isinstance(arg, ast.Name) and arg.id in names and arg.id not in roles:
                roles[arg.id] = "label" if len(args) > 1 and index == len(args) - 1 else "feature"
    defaults = default_roles(names)
    return tuple(
        "scalar" if _is_scalar_name(name) else roles.get(name, default)
        for name, default in zip(names, defaults)
    )


def _network_attribute(init: Optional[ast.FunctionDef], network_param: str) -> str:
    """The attribute __init__ stores the network in (`self.network = network`)."""
    if init is not None:
        for node in ast.walk(init):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and node.value.id == network_param
            ):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and _dotted(target.value) == "self":
                        return target.attr
    return "network"


def _wrapper_of(
    init: Optional[ast.FunctionDef], network_param: str, classes: dict[str, ast.ClassDef]
) -> Optional[tuple[ast.ClassDef, str]]:
    """A Cell of this file that ``__init__`` builds around the network (`self.penalty =
    GradientWithInput(discriminator)`), and the attribute it keeps the network in: where the step
    calls its network only through that Cell, that Cell's calls say what the network takes and
    returns (a WGAN-GP gradient penalty's `decision, _ = self.discriminator(interpolates)`)."""
    if init is None:
        return None
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        name = _dotted(node.value.func).rsplit(".", 1)[-1]
        wrapper = classes.get(name)
        wrapper_init = _method(wrapper, "__init__") if wrapper is not None else None
        if wrapper is None or wrapper_init is None:
            continue
        for position, arg in enumerate(node.value.args):
            if isinstance(arg, ast.Name) and arg.id == network_param:
                params = [item.arg for item in [*wrapper_init.args.posonlyargs, *wrapper_init.args.args][1:]]
                if position < len(params):
                    return wrapper, _network_attribute(wrapper_init, params[position])
    return None


def _output_count(class_def: ast.ClassDef, network_attribute: str) -> int:
    """How many outputs the network must have for the Cell's own unpacking to work.

    `loss, aux = self.network(...)` needs two. `(loss, aux), grads = value_and_grad(..., has_aux=True)`
    also says two. Anything else: a single loss.
    """
    count = 1
    network = f"self.{network_attribute}"
    with_sens = _sens_grad_names(class_def)
    for node in ast.walk(class_def):
        # `self.grad(self.net)(x, t, (s1, s2))` with a sens_param grad: one sensitivity per output.
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Call)
            and any(_dotted(arg) == network for arg in node.func.args)
            and node.args
            and isinstance(node.args[-1], ast.Tuple)
            and _takes_sens(node.func, with_sens)
        ):
            count = max(count, len(node.args[-1].elts))
        # IthOutputCell(network, output_index=1): the network has at least two outputs.
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                index = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
                if keyword.arg == "output_index" and isinstance(index, int):
                    count = max(count, index + 1)
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(value, ast.Call):
            continue
        if _dotted(value.func) == f"self.{network_attribute}":
            count = max(count, len(target.elts))
        elif (
            isinstance(value.func, ast.Call)
            and _dotted(value.func).endswith("value_and_grad")
            and value.func.args
            and _dotted(value.func.args[0]) == f"self.{network_attribute}"
        ):
            has_aux = any(
                keyword.arg == "has_aux" and isinstance(keyword.value, ast.Constant) and keyword.value.value
                for keyword in value.func.keywords
            )
            first = target.elts[0] if target.elts else None
            if has_aux and isinstance(first, (ast.Tuple, ast.List)):
                count = max(count, len(first.elts))
    return min(count, MAX_OUTPUTS)


# Settings a train step's __init__ commonly requires, by the words of the parameter's name:
# values a real run would pass, that keep the probe's few steps finite. A loss scale is 3.0, as
# the seeded sens (probe.LOSS_SCALE): not a power of two, so a misplaced scale rounds differently.
SETTINGS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"lr", "learning"}), "0.05"),
    (frozenset({"eps", "epsilon"}), "1e-08"),
    (frozenset({"momentum"}), "0.9"),
    (frozenset({"decay"}), "0.0"),
    (frozenset({"lower"}), "-0.01"),  # a WGAN's weight clip
    (frozenset({"upper"}), "0.01"),
    (frozenset({"norm", "clip"}), "1.0"),  # max_grad_norm, clip_norm, grad_clip
    (frozenset({"sens", "scale"}), "3.0"),
    (frozenset({"degree", "device_num", "num_devices", "group_size", "rank_size"}), "1"),  # one device
    (frozenset({"target"}), "'CPU'"),  # device_target
    (frozenset({"train", "training"}), "True"),  # is_train
    (frozenset({"steps"}), "1000"),  # total_steps: a schedule longer than the probe's few steps
    (frozenset({"epoch", "epochs"}), "1"),  # epoch_size * steps_per_epoch: a schedule's length
    (frozenset({"temperature", "margin"}), "1.0"),  # a loss's hyperparameters (RotatE's, a triplet's)
    # How many micro-batches a step splits its batch into (differential privacy's per-sample
    # clipping, mindarmour's `micro_batches=None`, which it refuses): 2 divides the probe's 6.
    (frozenset({"micro"}), "2"),
)
NETWORK_WORDS = ("net", "model", "backbone", "generator", "discriminator")
# A config object's parameter (`TrainStepWrap(network, config)`): the harness passes a stand-in
# that answers each setting read from it as SETTINGS says (probe.Settings).
CONFIG_WORDS = frozenset({"config", "cfg", "conf", "args", "hparams"})
# A criterion the step applies itself (`self.criterion(out, label)`, a GAN's `criterion_d`): the
# harness passes MindSpore's nn.MSELoss and says so. A bare `loss` is left out: most are the
# network with its loss.
CRITERION_WORDS = frozenset({"criterion", "fn", "func", "function"})


def init_value(name: str) -> Optional[str]:
    """What the automatic harness passes for ``__init__``'s required parameter ``name``, or None
    when it cannot tell (a criterion, a second network)."""
    lowered = name.lower()
    words = set(lowered.split("_"))
    if words & CONFIG_WORDS:
        return "settings"
    if "opt" in lowered:
        return "optimizer"
    if lowered in LOSS_SCALE_PARAMETERS or "update_cell" in lowered:
        return "loss scale"
    if any(word in lowered for word in NETWORK_WORDS) or lowered in ("g", "d"):
        return "network"
    if "criterion" in words or ("loss" in words and words & CRITERION_WORDS):
        return "criterion"
    return next((value for keys, value in SETTINGS if words & keys or lowered in keys), None)


def _unpacked_optimizers(
    init: ast.FunctionDef, params: Sequence[str], given: tuple[str, ...]
) -> tuple[str, ...]:
    """``given`` with "optimizers N" for an optimizer parameter ``__init__`` unpacks into N
    (`self.optimizer_net, self.optimizer_cri = optimizers`): the harness passes a tuple of N
    optimizers over disjoint shares of the weights, where one optimizer cannot be unpacked."""
    unpacked: dict[str, int] = {}
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], (ast.Tuple, ast.List))
            and isinstance(node.value, ast.Name)
            and not any(isinstance(item, ast.Starred) for item in node.targets[0].elts)
        ):
            unpacked.setdefault(node.value.id, len(node.targets[0].elts))
    return tuple(
        f"optimizers {unpacked[param]}" if role == "optimizer" and unpacked.get(param, 0) > 1 else role
        for param, role in zip(params, given)
    )


def _role(param: str, differentiated: set[str]) -> Optional[str]:
    """What __init__'s ``param`` is given: what its name says, and the network where the class
    differentiates it, whatever its name (a `loss_fn` the step takes the gradient of included)."""
    value = init_value(param)
    return "network" if param in differentiated and value in (None, "criterion") else value


def _differentiated_parameters(class_def: ast.ClassDef, init: ast.FunctionDef) -> set[str]:
    """``__init__``'s parameters that it stores in an attribute the class differentiates
    (`self.loss = loss` and `self.grad(self.loss, weights)`, `grad(self.psnr, ...)`): the
    network, whatever its name says (DBPN's `loss`, ESRGAN's `psnr`, CGAN's `G_with_loss`)."""
    stored: dict[str, str] = {}
    for node in ast.walk(init):
        # `self.penalty = GradientWithInput(discriminator)` and `grad(self.penalty)`: the Cell it
        # wraps (its first argument, as `nn.WithLossCell(net, loss)` takes it) is differentiated.
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value.args:
            value: ast.expr = node.value.args[0]
        elif isinstance(node, ast.Assign):
            value = node.value
        else:
            continue
        if isinstance(value, ast.Name):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _dotted(target.value) == "self":
                    stored[f"self.{target.attr}"] = value.id
    differentiated: set[str] = set()
    for node in ast.walk(class_def):
        if not isinstance(node, ast.Call):
            continue
        if _applies_grad(node) and node.args and _dotted(node.args[0]) in stored:
            differentiated.add(stored[_dotted(node.args[0])])
    return differentiated


def _passes_optimizer_more(
    class_def: ast.ClassDef, init: Optional[ast.FunctionDef], params: Sequence[str]
) -> bool:
    """Whether the class calls an optimizer it was given with more than the gradients
    (`self.optimizer(grads, overflow)`); ``params``: __init__'s parameters that are optimizers."""
    attributes = {"self.optimizer"}  # where the train-step base classes keep it
    if init is not None:
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
                attributes |= {_dotted(target) for target in node.targets}
    return any(
        isinstance(node, ast.Call) and _dotted(node.func) in attributes and len(node.args) > 1
        for node in ast.walk(class_def)
    )


def _weight_words(class_def: ast.ClassDef) -> tuple[str, ...]:
    """The words the class splits its network's weights by (`'wide' in params.name`,
    `param.name.startswith('backbone')`): Wide&Deep's and FiBiNET's steps give one optimizer the
    `wide` weights and another the rest, and an optimizer of no weights is an error."""
    words: list[str] = []
    for node in ast.walk(class_def):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.In)
            and isinstance(node.comparators[0], ast.Attribute)
            and node.comparators[0].attr == "name"
        ):
            word = node.left.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "name"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            word = node.args[0].value
        else:
            continue
        if word and word not in words:
            words.append(word)
    return tuple(words)


def _overridden_option(name: str) -> bool:
    words = name.lower().split("_")
    return init_value(name) == "loss scale" or "steps" in words or "micro" in words


def _init_arguments(
    arguments: ast.arguments, loss_scale_base: bool, differentiated: frozenset[str] = frozenset()
) -> Union[tuple[str, ...], str]:
    """What the harness passes to ``__init__`` positionally (see ``SitePlan.arguments``), or why
    it cannot: one network (named so, or the parameter the class differentiates), any number of
    optimizers (each over the network's weights) and settings it can name."""
    positional = [arg.arg for arg in [*arguments.posonlyargs, *arguments.args][1:]]
    params = positional[: len(positional) - len(arguments.defaults)]
    # A subclass that keeps its base's loss scale, (network, optimizer, scale_sense) or with
    # `scale_update_cell=None`, which the base refuses: a loss-scale Cell is passed for it.
    if loss_scale_base and len(positional) > 2 and positional[2] in LOSS_SCALE_PARAMETERS:
        params = positional[:3] if len(params) <= 3 else params
    # Options the training scripts set and the probe needs set: a loss-scale Cell (BERT's and
    # GPT-2's `scale_update_cell=None`; the scaled path is the one a rewrite can get wrong, and
    # without it GPT-2's step casts a None), a schedule's length (NCF's `total_steps=1` makes
    # a learning-rate list that the second step indexes past) and a number of micro-batches
    # (mindarmour's differentially private steps refuse `micro_batches=None`). Passed with the
    # options before them, when all can be named.
    optional = positional[len(params) :]
    wanted = [index for index, name in enumerate(optional) if _overridden_option(name)]
    if wanted and all(init_value(name) is not None for name in optional[: wanted[-1]]):
        params = [*params, *optional[: wanted[-1] + 1]]
    shown = ", ".join(["self", *positional])
    if arguments.vararg or any(default is None for default in arguments.kw_defaults):
        return f"__init__({shown}) takes *args or required keyword-only arguments"
    if not params:
        return "__init__ takes no network"
    # What the class differentiates is its network, whatever its name says (`loss_fn` included).
    given = tuple(_role(param, differentiated) for param in params)
    unknown = [param for param, value in zip(params, given) if value is None]
    if unknown:
        return f"__init__({shown}) takes {unknown[0]!r}, for which the automatic harness has no value"
    if given.count("network") not in (1, 2):
        count = given.count("network")
        return f"__init__({shown}) takes {count} networks; the automatic harness builds one or two"
    return given  # type: ignore[return-value]


# Words a network's or an optimizer's parameter name is made of, besides the letter or word that
# pairs them (`optimizerG` with `netG`, `optimizer_d` with `loss_netD`).
_PAIRING_NOISE = re.compile(r"optimi[sz]er|optim|opt|loss|network|net|model|with|_")


def _pairing_tag(name: str) -> str:
    """What pairs an optimizer with a network by name: `g` for netG, optimizerG, generator."""
    lowered = name.lower()
    for word in ("generator", "discriminator"):
        if word in lowered:
            return word[0]
    return _PAIRING_NOISE.sub("", lowered)


def _optimizer_networks(
    params: Sequence[str], given: Sequence[str], pair: tuple[str, str]
) -> tuple[int, ...]:
    """For each optimizer ``__init__`` takes (an "optimizer" role, in order), the network whose
    weights it updates: 0 the main one, 1 the second (``pair``: their parameters). By name
    (`optimizerG` updates `netG`); else, for two optimizers, in the order of the networks; else
    the main network."""
    optimizers = [param for param, role in zip(params, given) if role == "optimizer"]
    tags = [_pairing_tag(param) for param in pair]
    order = sorted(range(2), key=lambda index: params.index(pair[index]))
    chosen = []
    for position, param in enumerate(optimizers):
        tag = _pairing_tag(param)
        if tag and tag in tags and tags.count(tag) == 1:
            chosen.append(tags.index(tag))
        elif len(optimizers) == 2:
            chosen.append(order[position])
        else:
            chosen.append(0)
    return tuple(chosen)


def _derived_from(class_def: ast.ClassDef, network: str) -> set[str]:
    """Names that hold what ``network`` (`self.netG`) returns, or something computed from it
    (`fake = self.netG(noise)`, then `fake = ops.stop_gradient(fake)`)."""
    assignments = [node for node in ast.walk(class_def) if isinstance(node, ast.Assign)]
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in assignments:
            if not _mentions(node.value, network, derived):
                continue
            for target in node.targets:
                for item in ast.walk(target):
                    if isinstance(item, ast.Name) and item.id not in derived:
                        derived.add(item.id)
                        changed = True
    return derived


def _mentions(expression: ast.expr, network: str, names: set[str]) -> bool:
    """Whether ``expression`` calls ``network`` or reads one of ``names``."""
    return any(
        (isinstance(node, ast.Call) and _dotted(node.func) == network)
        or (isinstance(node, ast.Name) and node.id in names)
        for node in ast.walk(expression)
    )


def _feeds(class_def: ast.ClassDef, source: str, sink: str) -> bool:
    """Whether what network attribute ``source`` returns is passed to network ``sink`` in the
    class (`fake = self.netG(noise)`, then `self.netD(fake)`): the source maps inputs to inputs
    of the sink, as a GAN's generator does its discriminator's."""
    derived = _derived_from(class_def, f"self.{source}")
    return any(
        _mentions(arg, f"self.{source}", derived) for args in _network_calls(class_def, sink) for arg in args
    )


# What a step may do to a part of its network without the part computing anything: switch it out
# of training (ESRGAN's `self.D.generator.set_grad(False)`, CycleGAN's `self.G.D_A.set_train(False)`).
SWITCHES = frozenset({"set_grad", "set_train", "add_flags", "add_flags_recursive"})


def _network_parts(class_def: ast.ClassDef, network_param: str, attribute: str) -> tuple[str, ...]:
    """The sub-Cells of the network that the step only switches (``SWITCHES``), reached from
    ``__init__``'s parameter or the attribute it keeps the network in (`self.G.vgg.set_grad(False)`):
    the probe carries an empty Cell under each name. A part used any other way (called, its
    weights read) is not one: the probe has nothing to stand in for it."""
    roots = {network_param, f"self.{attribute}"}
    switched: set[str] = set()
    used: set[str] = set()
    switch_receivers: set[int] = set()
    for node in ast.walk(class_def):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SWITCHES
            and isinstance(node.func.value, ast.Attribute)
            and _dotted(node.func.value.value) in roots
        ):
            switched.add(node.func.value.attr)
            switch_receivers.add(id(node.func.value))
    for node in ast.walk(class_def):
        if (
            isinstance(node, ast.Attribute)
            and id(node) not in switch_receivers
            and _dotted(node.value) in roots
            and node.attr in switched
        ):
            used.add(node.attr)
    return tuple(sorted(name for name in switched - used if not name.startswith("_")))


def _network_pair(
    init: Optional[ast.FunctionDef],
    versions: list[ast.ClassDef],
    classes: dict[str, ast.ClassDef],
    pair: tuple[str, str],
) -> Union[tuple[str, str, str, int], str]:
    """For an ``__init__`` that takes two networks (``pair``: their parameters), the main one
    (whose output the step's loss is), the second, what stands in for the second ("map": a
    network of its input's shape, whose output the main one takes, as a GAN's generator; "loss":
    another loss network, as Pix2Pix's `loss_netD` beside `loss_netG`), and how many inputs the
    second takes; or why no pair of probes fits."""
    places: dict[str, list[tuple[ast.ClassDef, str]]] = {}
    for param in pair:
        attribute = _network_attribute(init, param)
        if any(_network_calls(version, attribute) for version in versions):
            places[param] = [(version, attribute) for version in versions]
        else:
            wrapper = _wrapper_of(init, param, classes)
            places[param] = [wrapper] if wrapper is not None else []

    def feeds(source: str, sink: str) -> bool:
        return any(
            _feeds(place, attribute, sink_attribute)
            for place, attribute in places[source]
            for other, sink_attribute in places[sink]
            if other is place
        )

    first, second = pair
    forward, backward = feeds(first, second), feeds(second, first)
    if forward and backward:
        return f"its two networks ({first}, {second}) each take what the other returns"
    main, other, kind = (second, first, "map") if forward else (first, second, "map" if backward else "loss")
    calls = [args for place, attribute in places[other] for args in _network_calls(place, attribute)]
    inputs = len(calls[0]) if calls else 1
    if kind == "map" and inputs > 1:
        return f"its second network ({other}) maps {inputs} inputs; a second probe network maps one"
    return main, other, kind, inputs


def _pair_calls(
    init: Optional[ast.FunctionDef],
    versions: list[ast.ClassDef],
    classes: dict[str, ast.ClassDef],
    param: str,
) -> list[list[ast.expr]]:
    """The argument lists network parameter ``param`` is called with, in the step or the Cell of
    this file it is wrapped in."""
    attribute = _network_attribute(init, param)
    calls = [args for version in versions for args in _network_calls(version, attribute)]
    wrapper = None if calls else _wrapper_of(init, param, classes)
    return _network_calls(*wrapper) if wrapper is not None else calls


def _plan_cell(
    name: str,
    line: int,
    versions: list[ast.ClassDef],
    classes: dict[str, ast.ClassDef],
    networks: Optional[NetworkLookup] = None,
) -> SitePlan:
    first = versions[0]
    if not _is_cell(first, classes):
        return SitePlan(name, line, "none", problem="not an nn.Cell subclass")
    init = _method(first, "__init__")
    construct = _method(first, "construct")
    if construct is None:
        return SitePlan(name, line, "none", problem="no construct method in the class itself")
    if init is None:
        if not _inherited_train_one_step(first):
            return SitePlan(name, line, "none", problem="__init__ is inherited from a class not in this file")
        params = ["network", "optimizer"]
        init_given = ("network", "optimizer", *(("loss scale",) if _inherited_loss_scale(first) else ()))
    else:
        given_or_problem = _init_arguments(
            init.args, _inherited_loss_scale(first), frozenset(_differentiated_parameters(first, init))
        )
        if isinstance(given_or_problem, str):
            return SitePlan(name, line, "none", problem=given_or_problem)
        positional = [arg.arg for arg in [*init.args.posonlyargs, *init.args.args][1:]]
        params = positional[: len(given_or_problem)]
        init_given = _unpacked_optimizers(init, params, given_or_problem)
    second: tuple[str, str, int, tuple[int, ...]] = ("", "", 0, ())  # parameter, kind, inputs, optimizers
    if init_given.count("network") == 2:
        pair = tuple(param for param, role in zip(params, init_given) if role == "network")
        found = _network_pair(init, versions, classes, pair)  # type: ignore[arg-type]
        if isinstance(found, str):
            return SitePlan(name, line, "none", problem=found)
        main, other, kind, other_inputs = found
        init_given = tuple("network 2" if param == other else role for param, role in zip(params, init_given))
        second = (other, kind, other_inputs, _optimizer_networks(params, init_given, (main, other)))
    network_param = params[init_given.index("network")]
    names, why = _signature(construct.args, skip_self=True)
    if not names:
        return SitePlan(name, line, "none", problem=f"construct cannot be seeded: {why}")
    unpacked = _unpacked_varargs(construct)
    if unpacked:
        names = [*names[: len(names) - sum(name.startswith("*") for name in names)], *unpacked]
    attribute = _network_attribute(init, network_param)
    calls = [args for version in versions for args in _network_calls(version, attribute)]
    wrapper = None if calls else _wrapper_of(init, network_param, classes)
    if wrapper is not None:  # the step calls its network only through a Cell it wraps it in
        calls = _network_calls(*wrapper)
    # The second network's inputs are the step's too (a generator's noise).
    second_calls = _pair_calls(init, versions, classes, second[0]) if second[0] else []
    starred = set().union(*(_starred_names(version, attribute) for version in versions))
    inputs = _cell_inputs(names, calls + second_calls, starred)
    if unpacked and calls:  # what the step unpacks and never gives its network: a number it uses
        passed = {arg.id for args in calls for arg in args if isinstance(arg, ast.Name)}
        inputs = tuple(
            "scalar" if name in unpacked and name not in passed else role for name, role in zip(names, inputs)
        )
    # A step that seeds backpropagation with one of its own tensors (a Jacobian's `weight`, as
    # attack libraries' `GradWithSens` do) wants a network whose output has that tensor's shape.
    given_sens = {
        sens.id
        for version in versions
        for sens in _sensitivities(version, attribute)
        if isinstance(sens, ast.Name)
    }
    raw_output = any(name in given_sens and role != "scalar" for name, role in zip(names, inputs))
    sens_per_output = any(
        isinstance(sens, ast.Tuple) for version in versions for sens in _sensitivities(version, attribute)
    )
    # A packed input is a feature and a label: the probe's two inputs.
    arity = len(calls[0]) if calls else sum({"scalar": 0, "packed": 2}.get(role, 1) for role in inputs)
    if arity < 1:
        return SitePlan(name, line, "none", problem="the network takes no inputs")
    varargs = any(_passes_starred(version, attribute) for version in versions)
    defaulted = _defaulted_inputs(construct.args, calls)
    # The project's own network stands in for one network only.
    known = networks(name, attribute) if networks is not None and not second[0] else None
    if known is not None:
        # The probe variants stand in for a network the step might be given; the run knows the
        # one it is given, and a variant it is not (a *inputs network for a fixed construct)
        # would call a rewrite decided by the real network wrong.
        varargs = known.varargs
        given = len(calls[0]) if calls else None
        defaulted = 0 if known.varargs or given is None else max(known.positional - given, 0)
    network_file, network_builder, network_loss = (
        known.built_from if known is not None and known.built_from else ("", "", "")
    )
    return SitePlan(
        name,
        line,
        "cell",
        inputs=inputs,
        network_inputs=arity,
        outputs=max(
            [
                *(_output_count(version, attribute) for version in versions),
                *([_output_count(*wrapper)] if wrapper else []),
            ]
        ),
        optimizer=any(role == "optimizer" or role.startswith("optimizers ") for role in init_given),
        optimizer_extras=_passes_optimizer_more(
            first, init, [param for param, role in zip(params, init_given) if role == "optimizer"]
        ),
        arguments=init_given,
        weight_words=_weight_words(first),
        varargs=varargs,
        defaulted=defaulted,
        network_file=network_file,
        network_builder=network_builder,
        network_loss=network_loss,
        second_network=second[1],
        second_network_inputs=second[2],
        optimizer_networks=second[3],
        network_parts=_network_parts(first, network_param, attribute),
        raw_output=raw_output,
        sens_per_output=sens_per_output,
    )


def _plan_function(name: str, line: int, versions: list[ast.FunctionDef], texts: tuple[str, str]) -> SitePlan:
    if not any(_mentions_grad(version) for version in versions):
        return SitePlan(name, line, "none", problem="not a train step or grad function")
    first = versions[0]
    names, _ = _signature(first.args, skip_self=False)
    if not names or contained.is_test(name, first):
        facts = contained.plan(name, versions, texts)
        if isinstance(facts, str):
            return SitePlan(name, line, "none", problem=f"cannot be called with seeded tensors: {facts}")
        return SitePlan(
            name,
            line,
            "function",
            compared_locals=facts.compared_locals,
            changed_before=facts.changed_before,
            changed_after=facts.changed_after,
        )
    jit = any(_dotted(decorator).rsplit(".", 1)[-1] == "jit" for decorator in first.decorator_list)
    passed = _passed_to_grad_makers(first, set(names))
    unclear = sorted(name for name, slot in passed.items() if slot != "weights")
    if unclear:
        # A tensor where the maker takes a position or the weights makes MindSpore's releases
        # disagree (a false "differs"); the harness gives a value only to the weights' slot.
        return SitePlan(
            name,
            line,
            "none",
            problem=f"it passes {unclear[0]} to a grad maker where the harness cannot tell what it is",
        )
    roles = _function_roles(first, names, weights=frozenset(passed))
    networks = [item for item, role in zip(names, roles) if role == "network"]
    if networks and _seeds_a_gradient(first, texts[0]):
        # Which input is the seed would have to be planned as a Cell's is (``_calls_and_sens``).
        return SitePlan(name, line, "none", problem=f"it seeds the gradient of {networks[0]} (sens_param)")
    arity = _network_arity(first, networks)
    if isinstance(arity, str):
        return SitePlan(name, line, "none", problem=arity)
    return SitePlan(
        name, line, "function", inputs=roles, jit=jit, network_inputs=arity, parameters=tuple(names)
    )


def _seeds_a_gradient(function: ast.FunctionDef, module_text: str) -> bool:
    """Whether the function, or an op its module makes, takes a sensitivity (`sens_param=True`)."""
    calls = (node for node in ast.walk(function) if isinstance(node, ast.Call))
    return any(map(_sens_param_set, calls)) or re.search(r"sens_param\s*=\s*True", module_text) is not None


# What a function's parameter is given when the function uses it as an object rather than a
# tensor (`def train(model, optimizer, criterion, x, y)`): see ``_function_roles``.
OBJECT_ROLES = ("network", "optimizer", "criterion", "weights")
# Makers whose arguments are (fn, grad_position, weights, ...); a GradOperation's are (fn, weights).
_FUNCTIONAL_MAKERS = frozenset({"grad", "value_and_grad", "vjp", "jvp"})


def _passed_to_grad_makers(function: ast.FunctionDef, names: set[str]) -> dict[str, str]:
    """Each of ``names`` the function passes to a grad maker after the function it differentiates:
    "weights" where it is the weights (`value_and_grad(net, None, weights)`, `weights=weights`,
    `grad_op(net, weights)` of a GradOperation), "other" anywhere else (a grad position)."""
    found: dict[str, str] = {}
    for node in ast.walk(function):
        if not isinstance(node, ast.Call) or not _makes_a_grad(node):
            continue
        maker = "" if isinstance(node.func, ast.Call) else _dotted(node.func).rsplit(".", 1)[-1]
        slot = 2 if maker in _FUNCTIONAL_MAKERS else 1
        given = [(index, arg) for index, arg in enumerate(node.args) if index > 0]
        given += [(slot if item.arg == "weights" else -1, item.value) for item in node.keywords]
        for index, arg in given:
            if isinstance(arg, ast.Name) and arg.id in names:
                kind = "weights" if index == slot else "other"
                found[arg.id] = kind if found.get(arg.id, kind) == kind else "other"
    return found


def _function_roles(
    function: ast.FunctionDef, names: Sequence[str], weights: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """The role of each of ``names`` (a function's parameters to seed): "network" for one it
    differentiates (`grad_op(model, weights)`) or calls (`teacher(x)`), unless its name says it
    is a criterion (`criterion(model(x), y)`: "criterion") or an optimizer (`optimizer(grads)`,
    `optimizer.parameters`: "optimizer"); "weights" for one it passes as a grad's weights
    (``weights``); the rest are tensors (``default_roles``)."""
    used = _object_uses(function, set(names))
    objects: dict[str, str] = {name: "weights" for name in weights}
    for name, (differentiated, called, attributes) in used.items():
        kind = init_value(name)
        if kind == "optimizer" and (called or attributes):
            objects[name] = "optimizer"
        elif kind == "criterion" and called:
            objects[name] = "criterion"
        elif differentiated or called:
            objects[name] = "network"
    tensors = iter(default_roles([item for item in names if item not in objects]))
    return tuple(objects[item] if item in objects else next(tensors) for item in names)


def _object_uses(function: ast.FunctionDef, names: set[str]) -> dict[str, tuple[bool, bool, bool]]:
    """For each of ``names`` the function uses as an object: (whether it is the first argument of
    a grad application, whether it is called, whether an attribute of it is read)."""
    found: dict[str, list[bool]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in names:
                found.setdefault(node.func.id, [False, False, False])[1] = True
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Name) and first.id in names and _makes_a_grad(node):
                found.setdefault(first.id, [False, False, False])[0] = True
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            found.setdefault(node.value.id, [False, False, False])[2] = True
    return {name: (uses[0], uses[1], uses[2]) for name, uses in found.items() if uses[0] or uses[1]}


def _makes_a_grad(call: ast.Call) -> bool:
    """Whether ``call`` makes a grad function of its first argument: `grad_op(model)`,
    `ops.GradOperation()(model)`; not `grad_op(model)(x)`, which applies one to `x`."""
    if isinstance(call.func, ast.Call):  # `GradOperation(...)(model)`, not `...(model)(x)`
        made = call.func.func
        return not isinstance(made, ast.Call) and _dotted(made).rsplit(".", 1)[-1] == "GradOperation"
    name = _dotted(call.func).rsplit(".", 1)[-1]
    return name in GRAD_NAMES or _GRAD_MAKER.fullmatch(name.lower()) is not None


# `grad_op`, `grad_fn`, `get_grad`: a word `grad` (`stop_gradient` and `clip_grad` are no maker).
_GRAD_MAKER = re.compile(r"(?:(?!clip_|stop_)\w*_)?grads?(?:_\w*)?")


def _network_arity(function: ast.FunctionDef, networks: Sequence[str]) -> Union[int, str]:
    """How many inputs the probe network for ``networks`` takes: as many as the function passes
    where it calls one or applies a grad of one (1 where it does neither); a string says why
    no probe fits (a starred argument, or calls of different lengths)."""
    lengths: set[int] = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if isinstance(called, ast.Call) and _makes_a_grad(called) and called.args:
            called = called.args[0]  # `grad_op(model, weights)(x, y)`: the network is given (x, y)
        if isinstance(called, ast.Name) and called.id in networks:
            if any(isinstance(arg, ast.Starred) for arg in node.args) or node.keywords:
                return f"it passes {called.id} starred or keyword arguments, which a probe cannot take"
            lengths.add(len(node.args))
    if len(lengths) > 1:
        return f"it calls its networks with {' and '.join(map(str, sorted(lengths)))} inputs"
    return lengths.pop() if lengths else 1


def differing_sites(
    before_text: str, after_text: str, networks: Optional[NetworkLookup] = None
) -> list[SitePlan]:
    """The sites to run, in BEFORE's order (sites only in AFTER last). ``networks`` says what
    the run knows of a train step's network (``upgrade --verify``: the project index).

    Raises ``SiteSearchError`` when a version does not parse, and returns a single ``<module>``
    plan when the versions differ only in module-level statements that no definition reads.
    """
    before, after = _parse(before_text, "BEFORE"), _parse(after_text, "AFTER")
    if ast.dump(before) == ast.dump(after):
        return []
    old, new = _definitions(before), _definitions(after)
    changed_names = _changed_module_names(before, after)
    classes = {name: node for name, node in {**new, **old}.items() if isinstance(node, ast.ClassDef)}
    plans: list[SitePlan] = []
    for name in [*old, *(name for name in new if name not in old)]:
        versions = [node for node in (old.get(name), new.get(name)) if node is not None]
        line = versions[0].lineno
        if name not in new:
            plans.append(SitePlan(name, line, "skip", problem="missing from AFTER"))
            continue
        if name not in old:
            continue  # a helper the rewrite added; it runs through the sites that call it
        same = ast.dump(versions[0]) == ast.dump(versions[1])
        if same and not (_loaded_names(versions[0]) & changed_names):
            continue
        if isinstance(versions[0], ast.ClassDef) and isinstance(versions[1], ast.ClassDef):
            plans.append(_plan_cell(name, line, versions, classes, networks))  # type: ignore[arg-type]
        elif isinstance(versions[0], ast.FunctionDef) and isinstance(versions[1], ast.FunctionDef):
            plans.append(_plan_function(name, line, versions, (before_text, after_text)))  # type: ignore[arg-type]
        else:
            plans.append(
                SitePlan(name, line, "none", problem="a class in one version, a function in the other")
            )
    if not plans:
        plans.append(
            SitePlan("<module>", 0, "skip", problem="the versions differ only in module-level statements")
        )
    return plans
