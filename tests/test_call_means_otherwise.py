"""MS226: a call whose arguments bind, or whose defaults are, otherwise on the target than on the
release the code is written for, read from both releases' signatures (rules/releases/api.json)."""

from __future__ import annotations

import ast

import pytest

from ms_migrate.core.engine import run_rules
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import rule_for
from ms_migrate.rules.ms226_call_means_otherwise import differences

HEAD = "import mindspore as ms\nfrom mindspore import nn, ops\n\n"


def _messages(line: str, written_for: str | None = "1.10", target: str = "2.10") -> list[str]:
    """What `check` says of ``line`` (findings only, as `check` asks)."""
    result = run_rules(
        HEAD + line + "\n",
        Version.parse(target),
        [rule_for("MS226")],
        fix=False,
        written_for=None if written_for is None else Version.parse(written_for),
    )
    return [item.message for item in result.diagnostics]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # an argument that lands on a parameter which moved: split's axis is third on 2.x
        ("parts = ops.split(x, 1, 1)", "argument 2 is `axis` on 1.10 and `split_size_or_sections` on 2.10"),
        ("parts = ms.ops.split(x, 1, 1)", "argument 3 is `output_num` on 1.10 and `axis` on 2.10"),
        ("n = ops.norm(x, 1)", "argument 2 is `axis` on 1.10 and `ord` on 2.10"),
        # a default the call leaves to the release
        ("largest = ops.max(x)", "`axis` defaults to 0 on 1.10 and None on 2.10"),
        ("dense = nn.Dense(2, 3)", "`weight_init` defaults to 'normal' on 1.10 and None on 2.10"),
        ("loss = nn.BCELoss()", "`reduction` defaults to 'none' on 1.10 and 'mean' on 2.10"),
        # a keyword the target no longer takes, with the spelling it takes where there is one
        ("index = ops.argmax(x, axis=1)", "`axis=` is no parameter on 2.10 (`dim=`)"),
    ],
)
def test_a_call_that_means_something_else_on_the_target_says_what(line: str, said: str) -> None:
    (message,) = _messages(line)
    assert said in message and "which this code is written for" in message, message


@pytest.mark.parametrize(
    "line",
    [
        "product = ops.matmul(a, b)",  # `x2` renamed `other`: the same parameter
        "largest = ops.max(x, 1, True)",  # `keep_dims` renamed `keepdims`
        "mean = ops.mean(x)",  # `()` and `None`: every axis either way
        "pool = ops.AvgPool(2, 2)",  # 'valid' and 'VALID'
        "dense = nn.Dense(2, 3, weight_init='normal', bias_init='zeros')",
        "parts = ops.split(*arguments)",  # what binds where is not known
        "dropout = nn.Dropout(0.9)",  # MS220's
        "parts = split(x, 1, 1)",  # not MindSpore's
    ],
)
def test_a_call_that_binds_alike_is_not_reported(line: str) -> None:
    assert _messages(line) == []


def test_without_the_release_the_code_is_written_for_nothing_is_compared() -> None:
    assert _messages("parts = ops.split(x, 1, 1)", written_for=None) == []
    assert _messages("parts = ops.split(x, 1, 1)", written_for="2.10") == []


def test_code_written_for_a_newer_release_is_compared_the_other_way() -> None:
    (message,) = _messages("parts = ops.split(x, 1, 1)", written_for="2.10", target="1.10")
    assert "argument 2 is `split_size_or_sections` on 2.10 and `axis` on 1.10" in message


def _call(text: str) -> ast.Call:
    call = ast.parse(text).body[0].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call)
    return call


POSITIONAL = "POSITIONAL_OR_KEYWORD"


def test_every_default_that_differs_is_listed() -> None:
    old = tuple((name, POSITIONAL, "1") for name in "abcde")
    new = tuple((name, POSITIONAL, "2") for name in "abcde")
    found = differences(old, new, _call("f()"), Version(1, 10), Version(2, 10))
    assert len(found) == 5 and found[0].said == "`a` defaults to 1 on 1.10 and 2 on 2.10"
    assert found[0].kept == ("a", "1")


def test_an_argument_the_target_has_no_place_for_is_said() -> None:
    old = (("x", POSITIONAL, None), ("y", POSITIONAL, "0"))
    new = (("x", POSITIONAL, None), ("y", "KEYWORD_ONLY", "0"))
    found = differences(old, new, _call("f(a, 1)"), Version(1, 10), Version(2, 10))
    assert [item.said for item in found] == ["MindSpore 2.10 takes no argument 2"]


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        ("dense = nn.Dense(2, 3)", "dense = nn.Dense(2, 3, weight_init='normal', bias_init='zeros')"),
        (
            "dense = nn.Dense(2, 3, weight_init='he')",
            "dense = nn.Dense(2, 3, weight_init='he', bias_init='zeros')",
        ),
        ("loss = nn.BCELoss()", "loss = nn.BCELoss(reduction='none')"),
        (
            "conv = nn.Conv2d(\n    2, 4, 3,  # channels\n)",
            "conv = nn.Conv2d(\n    2, 4, 3, weight_init='normal', bias_init='zeros',  # channels\n)",
        ),
    ],
)
def test_a_proven_default_is_passed_as_the_old_release_had_it(line: str, fixed: str) -> None:
    result = run_rules(HEAD + line + "\n", Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10))
    assert result.text == HEAD + fixed + "\n"
    assert [item.code for item in result.fixed] == ["MS226"]


def test_a_default_without_a_proof_or_going_down_is_only_reported() -> None:
    # ops.max's pair changed its order too: axis=0 would not be 1.10's meaning
    upgraded = run_rules(
        HEAD + "largest = ops.max(x)\n", Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10)
    )
    assert upgraded.text == HEAD + "largest = ops.max(x)\n" and not upgraded.fixed
    # the proof ran 1.10's default against 2.10's spelling, not the other way
    down = run_rules(
        HEAD + "dense = nn.Dense(2, 3)\n", Version(1, 10), [rule_for("MS226")], written_for=Version(2, 10)
    )
    assert down.text == HEAD + "dense = nn.Dense(2, 3)\n" and not down.fixed
    assert "`weight_init` defaults to None on 2.10 and 'normal' on 1.10" in down.diagnostics[0].message


def test_a_default_proven_to_mean_the_same_is_not_reported_either_way() -> None:
    """`TrainOneStepCell`'s `sens` defaults to 1.0 on 1.10 and None on 2.10, which trains as 1.0
    did: a proof case ran the one call on both (rules/releases/proofs.json), so the 68 such
    calls of mindspore-ai/models are not reported; without that proof they would be."""
    line = "step = nn.TrainOneStepCell(net, optimizer)"
    assert _messages(line) == []
    # grid_sample's align_corners: False on 1.10, None on 2.10, the same sampling (proof case)
    assert _messages("sampled = ops.grid_sample(x, grid)") == []
    assert _messages(line, written_for="2.10", target="1.10") == []
    assert _messages("step = nn.TrainOneStepCell(net, optimizer, 2.0)") == []  # passed: the same
    facts = api_facts()
    assert facts is not None and facts.same_default[("mindspore.nn.TrainOneStepCell", "sens")]
    old, new = (facts.signature("mindspore.nn.TrainOneStepCell", Version(*v)) for v in ((1, 10), (2, 10)))
    assert old is not None and new is not None
    (found,) = differences(old, new, _call("op(net, optimizer)"), Version(1, 10), Version(2, 10))
    assert found.said == "`sens` defaults to 1.0 on 1.10 and None on 2.10"
    assert differences(old, new, _call("op(net, optimizer)"), Version(1, 10), Version(2, 10), {"sens"}) == []


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        # the same object through the packages on the way to where it is defined
        (
            "from mindspore.nn.loss import BCELoss\nloss = BCELoss()",
            "from mindspore.nn.loss import BCELoss\nloss = BCELoss(reduction='none')",
        ),
        (
            "dense = nn.layer.Dense(2, 3)",
            "dense = nn.layer.Dense(2, 3, weight_init='normal', bias_init='zeros')",
        ),
        (
            "import mindspore.nn.layer.basic as basic\ndense = basic.Dense(2, 3)",
            "import mindspore.nn.layer.basic as basic\n"
            "dense = basic.Dense(2, 3, weight_init='normal', bias_init='zeros')",
        ),
        # a subclass's super().__init__ binds to the base's parameters
        (
            "class Wide(nn.Dense):\n    def __init__(self, a):\n        super().__init__(a, 2 * a)",
            "class Wide(nn.Dense):\n    def __init__(self, a):\n"
            "        super().__init__(a, 2 * a, weight_init='normal', bias_init='zeros')",
        ),
    ],
)
def test_a_call_by_another_spelling_of_the_same_object_is_fixed_alike(line: str, fixed: str) -> None:
    """A new user's pass: `from mindspore.nn.loss import BCELoss` and `nn.layer.Dense` changed
    their numbers on 2.10 with no finding, the rule knowing `nn.BCELoss` and `nn.Dense` alone."""
    result = run_rules(HEAD + line + "\n", Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10))
    assert result.text == HEAD + fixed + "\n"
    assert [item.code for item in result.fixed] == ["MS226"]


def test_only_the_packages_on_the_way_to_the_definition_are_other_spellings() -> None:
    facts = api_facts()
    assert facts is not None
    releases = (Version(1, 10), Version(2, 10))
    assert facts.spellings("mindspore.nn.Dense", releases) == {
        "mindspore.nn.Dense",
        "mindspore.nn.layer.Dense",
        "mindspore.nn.layer.basic.Dense",
    }
    # nn.probability.bijector.Softplus is a bijector, nn.Softplus an activation
    assert not any("probability" in name for name in facts.spellings("mindspore.nn.Softplus", releases))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("        self.which_linear = nn.Dense", "`nn.Dense` is passed on here, not called"),
        ("        self.block = partial(nn.Conv2d, has_bias=True)", "`nn.Conv2d` is passed on here"),
        ("        def make(layer=nn.Dense):\n            return layer(2, 3)", "`nn.Dense` is passed on here"),
    ],
)
def test_a_class_held_to_be_called_elsewhere_is_reported_with_its_defaults(line: str, said: str) -> None:
    """EAL-GAN's discriminator sets `self.which_linear = nn.Dense` and builds each layer with it:
    every bias drawn from zeros on 1.10 and at random on 2.10, unreported. Which arguments those
    calls pass is not known here, so the finding lists the defaults and fixes nothing."""
    text = f"from functools import partial\n\nclass Net(nn.Cell):\n    def __init__(self):\n{line}\n"
    result = run_rules(HEAD + text, Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10))
    (finding,) = result.diagnostics
    assert (
        said in finding.message
        and "`bias_init` defaults to 'zeros' on 1.10 and None on 2.10" in finding.message
    )
    assert result.text == HEAD + text and not result.fixed


@pytest.mark.parametrize(
    "line",
    [
        "dense = isinstance(cell, nn.Dense)",
        "kinds = (nn.Dense, nn.Conv2d)",  # types to test against
        "same = type(cell) is nn.Dense",
        "init = {nn.Dense: normal}",
        "step = nn.TrainOneStepCell",  # its one changed default means the same (proven)
    ],
)
def test_a_class_only_asked_about_is_not_reported(line: str) -> None:
    assert _messages(line) == []


@pytest.mark.parametrize(
    ("line", "unless"),
    [
        ("dense = nn.Dense(4, 3, **cfg)", "unless `**cfg` passes them"),
        ("conv = nn.Conv2d(*shape, has_bias=True)", "unless `*shape` passes them"),
        (
            "class Wide(nn.Dense):\n    def __init__(self, a, **more):\n        super().__init__(a, **more)",
            "`Wide`'s `super().__init__`: `nn.Dense` may mean something else",
        ),
    ],
)
def test_a_call_that_passes_what_it_does_not_name_says_what_it_may_mean(line: str, unless: str) -> None:
    """`nn.Dense(4, 3, **cfg)` was passed over in silence (a new user's pass): which parameters
    `cfg` holds is not known, so the defaults that differ among those the call does not name are
    said, with the condition, and nothing is fixed."""
    (message,) = _messages(line)
    assert unless in message and "`weight_init` defaults to 'normal' on 1.10 and None on 2.10" in message
    result = run_rules(HEAD + line + "\n", Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10))
    assert result.text == HEAD + line + "\n"
    assert _messages("dense = nn.Dense(4, 3, weight_init='he', bias_init='zeros', **cfg)") == []


def test_a_base_init_called_by_its_name_binds_without_self() -> None:
    line = "class Wide(nn.Dense):\n    def __init__(self, a):\n        nn.Dense.__init__(self, a, 2 * a)"
    result = run_rules(HEAD + line + "\n", Version(2, 10), [rule_for("MS226")], written_for=Version(1, 10))
    assert (
        result.text == HEAD + line.replace("2 * a)", "2 * a, weight_init='normal', bias_init='zeros')") + "\n"
    )
