"""The release facts in rules/releases/ (what each MindSpore release has, which moves are proven)
and MS211, which reads them."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Optional

import pytest

from ms_migrate import runtimes
from ms_migrate.catalogue.releases import expand, facts, ranges
from ms_migrate.context import FileContext
from ms_migrate.core.engine import downgrade_text, migrate_text
from ms_migrate.facts.data import rules_path
from ms_migrate.facts.releases import Parameter, api_facts, binds_alike
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import rule_for
from ms_migrate.rules.ms211_name_not_in_target import _Finder, missing_at
from tests.fixture_cases import FIXTURES

ORDER = ["1.7", "1.8", "1.9", "1.10", "2.7", "2.8", "2.9", "2.10"]
MS211_FIXTURES = FIXTURES / "ms211"


def test_release_ranges_round_trip() -> None:
    for present in (["1.7"], ["1.8", "1.9", "1.10", "2.7"], ["1.7", "1.10", "2.9", "2.10"], ORDER):
        spec = ranges(present, ORDER)
        assert expand(spec, ORDER) == frozenset(present)
    assert ranges(["1.8", "1.9", "1.10", "2.7"], ORDER) == "1.8-2.7"
    assert ranges(["1.7", "1.9"], ORDER) == "1.7,1.9"


def test_facts_keep_each_module_and_name_with_the_releases_that_have_it() -> None:
    listings = {
        "1.10": {"mindspore": "1.10.0", "modules": {"m": ["a", "gone"], "m.old": ["x"]}},
        "2.7": {"mindspore": "2.7.2", "modules": {"m": ["a", "new"]}},
    }
    built = facts(listings)
    assert built["releases"] == {"1.10": "1.10.0", "2.7": "2.7.2"}
    assert built["modules"]["m"] == {
        "in": "1.10-2.7",
        "names": {"1.10": ["gone"], "1.10-2.7": ["a"], "2.7": ["new"]},
    }
    assert built["modules"]["m.old"]["in"] == "1.10"


def _call(source: str) -> ast.Call:
    node = ast.parse(source, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


P = "POSITIONAL_OR_KEYWORD"
DECODE_OLD: tuple[Parameter, ...] = (("rgb", P, "True"),)
DECODE_NEW: tuple[Parameter, ...] = (("to_pil", P, "False"),)
NORMALIZE_OLD: tuple[Parameter, ...] = (("mean", P, None), ("std", P, None))
NORMALIZE_NEW: tuple[Parameter, ...] = (("mean", P, None), ("std", P, None), ("is_hwc", P, "True"))
JIT_OLD: tuple[Parameter, ...] = (("fn", P, "None"), ("input_signature", P, "None"))
JIT_NEW: tuple[Parameter, ...] = (("function", P, "None"), ("capture_mode", "KEYWORD_ONLY", "'ast'"))
SLICE: tuple[Parameter, ...] = (("slices", "VAR_POSITIONAL", None),)


@pytest.mark.parametrize(
    ("old", "new", "call", "why"),
    [
        (DECODE_OLD, DECODE_NEW, "op()", None),
        (DECODE_OLD, DECODE_NEW, "op(rgb=True)", "keyword rgb="),
        (DECODE_OLD, DECODE_NEW, "op(True)", None),  # positional: the proof decides what True does
        (NORMALIZE_OLD, NORMALIZE_NEW, "op(m, s)", None),
        (NORMALIZE_OLD, NORMALIZE_NEW, "op(mean=m, std=s)", None),
        (JIT_OLD, JIT_NEW, "op(f)", None),
        (JIT_OLD, JIT_NEW, "op(f, sig)", "positional argument 2"),
        (JIT_OLD, JIT_NEW, "op(f, input_signature=sig)", "keyword input_signature="),
        (SLICE, SLICE, "op(1, 2, 3)", None),
        (NORMALIZE_OLD, NORMALIZE_NEW, "op(*args)", "arguments passed with * or **"),
        ((("x", P, "1"),), (("x", P, "2"),), "op()", "the default of x changed from 1 to 2"),
        ((), (("x", P, None),), "op()", "the new side requires x"),
        (None, DECODE_NEW, "op()", "a signature that cannot be read"),
    ],
)
def test_a_use_is_fixed_only_when_it_binds_alike(
    old: Optional[tuple[Parameter, ...]], new: tuple[Parameter, ...], call: str, why: Optional[str]
) -> None:
    found = binds_alike(old, new, _call(call))
    assert (found is None) == (why is None), found
    if why is not None:
        assert found is not None and why in found


def test_a_use_that_is_not_a_call_needs_the_same_signature() -> None:
    assert binds_alike(DECODE_OLD, DECODE_OLD, None) is None
    assert binds_alike(DECODE_OLD, DECODE_NEW, None) == "not called here, and the signatures differ"


def test_the_shipped_facts_know_the_removals_users_meet_first() -> None:
    facts_ = api_facts()
    assert facts_ is not None
    assert facts_.has_module("mindspore.dataset.vision.c_transforms", Version(2, 7))
    assert facts_.has_module("mindspore.dataset.vision.c_transforms", Version(2, 8)) is False
    assert facts_.has_name("mindspore.ms_function", Version(1, 10))
    assert facts_.has_name("mindspore.ms_function", Version(2, 10)) is False
    assert facts_.has_name("mindspore.jit", Version(1, 10)) is False
    # 2.3 lies between 1.10 and 2.7, which disagree: nothing is said.
    assert facts_.has_name("mindspore.ms_function", Version(2, 3))
    assert facts_.has_name("mindspore.not_a_name", Version(2, 10)) is None


def _findings(name: str, target: str = "2.10") -> list[str]:
    text = (MS211_FIXTURES / name).read_text(encoding="utf-8")
    run = downgrade_text if Version.parse(target) < Version(2, 0) else migrate_text
    return [item.message for item in run(text, Version.parse(target)).diagnostics if item.code == "MS211"]


def test_a_keyword_the_new_op_lacks_keeps_the_module_and_says_where() -> None:
    (message,) = _findings("decode_rgb_keyword.py")
    assert "module `mindspore.dataset.vision.c_transforms`) is not in MindSpore 2.10: last in 2.7" in message
    assert (
        "use `mindspore.dataset.vision` instead (not fixed: line 7: keyword rgb= has no parameter" in message
    )


def test_an_unproven_move_is_reported_with_what_to_do() -> None:
    (profiler,) = _findings("profiler_is_detail.py")
    assert "use `mindspore.Profiler` instead (not fixed: line 7: keyword is_detail= has no" in profiler


def test_a_class_whose_members_became_module_names_is_fixed_only_where_each_use_is_proven() -> None:
    validator, rel = _findings("checkparam_validator.py")
    assert "`mindspore._checkparam.Validator` is not in MindSpore 2.10: last in 1.10" in validator
    assert validator.endswith("its members are names of `mindspore._checkparam` now: use the module")
    assert rel.endswith("its members are names of `mindspore._checkparam` now: use the module")
    unproven, as_value = _findings("checkparam_unproven.py")
    assert unproven.endswith(
        "(not fixed: mindspore._checkparam.Validator.check_number_range -> "
        "mindspore._checkparam.check_number_range is not proven (no proof case))"
    )
    assert as_value.endswith("(not fixed: line 12: checks is used as a value)")
    facts_ = api_facts()
    assert facts_ is not None
    check = facts_.signature("mindspore._checkparam.Validator.check_positive_int", Version(1, 10))
    assert check == facts_.signature("mindspore._checkparam.check_positive_int", Version(2, 10))
    assert facts_.has_name("mindspore._checkparam.Rel.INC_NEITHER", Version(1, 10))
    assert not facts_.callable_somewhere("mindspore._checkparam.Rel.INC_NEITHER")


def test_a_keyword_both_sides_take_through_kwargs_binds_alike_only_where_the_proof_passed_it() -> None:
    profiler: tuple[Parameter, ...] = (("kwargs", "VAR_KEYWORD", None),)
    proven = frozenset({"output_path"})
    assert binds_alike(profiler, profiler, _call("op(output_path=p)"), proven) is None
    assert binds_alike(profiler, profiler, _call("op()"), proven) is None
    why = binds_alike(profiler, profiler, _call("op(output_path=p, is_detail=True)"), proven)
    assert why == "keyword is_detail= has no parameter of that name on one side"
    assert binds_alike(profiler, profiler, _call("op(output_path=p)")) is not None  # nothing proven
    assert binds_alike(profiler, (), _call("op(output_path=p)"), proven) is not None  # one side lacks **


def test_a_name_newer_than_a_downgrade_target_is_an_error() -> None:
    (message,) = _findings("mint_on_1_10.py", "1.10")
    assert message.startswith("module `mindspore.mint` is not in MindSpore 1.10: first in 2.7")


def test_a_module_a_newer_release_renamed_goes_back_to_its_old_spelling_going_down() -> None:
    """`upgrade` to 2.10 respells `mindspore.common.api` as 2.9's `mindspore.graph.api` (MS210, the
    old module a redirect there); a downgrade to 2.7 of that said "MindSpore names no replacement".
    The renames come from the deprecation catalogue; a name is written back where its pair's proof
    ran the old spelling on the target (jit, on 2.7 and 2.8), and named without a fix elsewhere."""
    text = (
        "from mindspore.graph.api import jit\nfrom mindspore.graph.mutable import mutable\n\n"
        "step = jit(f)\nm = mutable(x)\n"
    )
    result = downgrade_text(text, Version(2, 7))
    assert result.text.splitlines()[0] == "from mindspore.common.api import jit"
    messages = [item.message for item in result.diagnostics if item.code == "MS211"]
    assert len(messages) == 2 and all("names no replacement" not in message for message in messages)
    assert "use `mindspore.common.mutable` instead (not fixed: " in messages[1]
    assert "is not proven (no proof case)" in messages[1]
    # Upgrading, the old spelling is MS210's to respell; MS211 has nothing to say of it.
    upgraded = migrate_text("from mindspore.common.api import jit\n", Version(2, 10))
    assert not [item for item in upgraded.diagnostics if item.code == "MS211"]


def test_the_autodiff_and_jit_names_other_rules_rewrite_are_left_to_them() -> None:
    text = "from mindspore import value_and_grad, jit\n"
    assert not [item for item in downgrade_text(text, Version(1, 9)).diagnostics if item.code == "MS211"]


def test_a_local_that_rebinds_the_moved_name_stops_the_fix() -> None:
    text = "from mindspore import ms_function\n\nms_function = print\n"
    result = migrate_text(text, Version(2, 10))
    assert result.text == text
    (message,) = [item.message for item in result.diagnostics if item.code == "MS211"]
    assert "not fixed: ms_function is bound more than once in this file" in message


def test_a_module_used_as_a_value_is_not_fixed() -> None:
    text = "import mindspore.dataset.vision.c_transforms as CV\n\nops = [CV.Resize(32)]\nmodule = CV\n"
    result = migrate_text(text, Version(2, 10))
    assert result.text == text
    assert any("line 4: CV is used as a value" in item.message for item in result.diagnostics)


def test_a_move_into_another_module_of_one_name_rewrites_the_statement() -> None:
    text = "from mindspore.nn.metrics.metric import Metric\n\n\nclass Top(Metric):\n    pass\n"
    result = migrate_text(text, Version(2, 10))
    assert result.text.startswith("from mindspore.train import Metric\n")


# --- the data is what the releases say ----------------------------------------------------------


def _runtimes_or_skip() -> dict[Version, runtimes.Runtime]:
    found = runtimes.available()
    missing = sorted(set(runtimes.RECIPES) - set(found))
    if missing:
        pytest.skip(
            f"runtimes missing here: {', '.join(map(str, missing))} (ms-migrate runtime install --all)"
        )
    return found


@pytest.mark.mindspore
def test_the_committed_release_facts_are_what_the_releases_export(tmp_path: Path) -> None:
    from ms_migrate.catalogue.releases import write_facts

    found = _runtimes_or_skip()
    moves = json.loads(rules_path("releases/moves.json").read_text(encoding="utf-8"))["moves"]
    out = tmp_path / "api.json"
    write_facts(out, {str(version): found[version].python for version in sorted(runtimes.RECIPES)}, moves)
    committed = rules_path("releases/api.json").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed, "run python -m ms_migrate.catalogue releases"


@pytest.mark.mindspore
def test_each_pair_proof_is_what_running_it_gives() -> None:
    from ms_migrate.catalogue.pairs import load_cases, prove

    found = _runtimes_or_skip()
    facts_ = api_facts()
    assert facts_ is not None
    proofs = prove(
        load_cases(rules_path("releases/proof_cases.json")), facts_, {v: found[v].python for v in found}
    )
    committed = json.loads(rules_path("releases/proofs.json").read_text(encoding="utf-8"))
    assert proofs == committed, "run python -m ms_migrate.catalogue prove"
    assert sum(pair["result"] == "equal" for pair in proofs["pairs"]) >= 40


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        # `Tensor` is missing only as `mindspore.ops.functional.Tensor`: after `functional`.
        ("from mindspore.ops import functional as F\nimport mindspore as ms\nx = ms.Tensor\n", False),
        ("from mindspore.ops import functional as F\nx = F.Tensor\n", True),
        ("import mindspore.ops.functional\nx = mindspore.ops.functional.Tensor\n", True),
        ("from mindspore.ops.functional import (\n    Tensor,\n)\n", True),
        ("from mindspore.ops import functional\nfrom mindspore import Tensor\n", False),
        # A CRLF file: the from-import's last name ends in a carriage return.
        ("import mindspore as ms\r\nfrom mindspore import ms_function\r\n", True),
        ("import mindspore as ms\rfrom mindspore import ms_function\r", True),  # an old Mac file
        ("import mindspore.dataset.vision.c_transforms as C\n", True),
    ],
)
def test_a_file_is_parsed_for_a_missing_name_only_where_it_follows_its_module(
    text: str, parsed: bool
) -> None:
    """MS211's prefilter: a missing name's last part must follow what it is missing from (the
    module's last part, an alias bound to it, or a from-import of it); `ms.Tensor` beside an
    import of `functional` named 1,291 files of a model zoo for 110 with a finding."""
    assert rule_for("MS211").applies_to(text, Version(2, 10)) is parsed


def _ms211(text: str, target: str = "2.8") -> list[str]:
    run = downgrade_text if Version.parse(target) < Version(2, 0) else migrate_text
    return [item.message for item in run(text, Version.parse(target)).diagnostics if item.code == "MS211"]


def test_a_name_no_release_has_is_reported_where_its_module_is_listed_whole() -> None:
    """Code of MindSpore 1.1 orders its steps with ControlDepend (gone in 1.2), which no release
    checked has: its module's names are listed whole, so the absence is known, and said, never
    fixed. A misspelt name and a module no release has are reported alike."""
    text = (
        "import mindspore.nn as nn\n"
        "import mindspore.nn.functional as NF\n"
        "from mindspore.ops import functional as F\n"
        "from mindspore.ops import operations as P\n"
        "from mindspore.ops.operations import ControlDepend\n"
        "order = P.ControlDepend(depend_mode=1)\n"
        "F.control_depend(1, 2)\n"
        "loss = nn.BCEloss()\n"
    )
    found = _ms211(text)
    assert len(found) == 5, found
    assert found[0].startswith(
        "`import mindspore.nn.functional` (`mindspore.nn.functional`) is in no MindSpore"
    )
    assert (
        "`mindspore.ops.operations.ControlDepend` is in no MindSpore release checked (1.7-1.10, 2.7-2.10)"
        in found[1]
    )
    assert (
        "gone before 1.7, or never a name of `mindspore.ops.operations`; MindSpore names no replacement"
        in found[1]
    )
    assert found[2].startswith("`P.ControlDepend` (`mindspore.ops.operations.ControlDepend`) is in no")
    assert found[3].startswith("`F.control_depend` (`mindspore.ops.functional.control_depend`) is in no")
    assert found[4].startswith("`nn.BCEloss` (`mindspore.nn.BCEloss`) is in no")
    assert _ms211(text, "1.10") == found  # in no release, whichever the target
    assert migrate_text(text, Version(2, 8)).text == text  # never fixed


def test_a_name_is_not_called_unknown_where_a_release_holds_it_or_its_module_is_not_listed_whole() -> None:
    facts_ = api_facts()
    assert facts_ is not None
    # Another package's object that a module listed whole holds (a protobuf class): there to use.
    assert "mindspore.train.serialization.Checkpoint" in facts_.foreign
    assert _ms211("from mindspore.train import serialization\nc = serialization.Checkpoint()\n") == []
    # A module whose own names only are listed (it also holds what it imports): nothing is said.
    assert _ms211("import mindspore.train.model as m\nx = m.load_checkpoint\n") == []
    # A local that shadows the import, an attribute of a value, and a name a release has.
    assert (
        _ms211("from mindspore.ops import operations as P\n\ndef f(P):\n    return P.ControlDepend\n") == []
    )
    assert _ms211("import mindspore.nn as nn\nnet = nn.Dense(2, 2)\nnet.not_a_layer\n") == []
    assert _ms211("import mindspore.nn as nn\nnn.Dense(2, 2)\n") == []


DOWN = """\
import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as transforms
from mindspore.dataset.vision import HWC2CHW, Inter, Resize

image = [Resize(8, Inter.LINEAR), ds.vision.Normalize([0.5], [0.5]), HWC2CHW()]
label = [transforms.TypeCast(ms.int32), transforms.Compose([transforms.Fill(1)]), transforms.Unique()]
"""


def test_a_downgrade_writes_the_old_spelling_of_a_name_its_target_does_not_have_yet() -> None:
    result = downgrade_text(DOWN, Version(1, 7))
    assert "from mindspore.dataset.vision.c_transforms import HWC2CHW, Inter, Resize\n" in result.text
    assert "ds.vision.c_transforms.Normalize([0.5], [0.5])" in result.text
    assert "transforms.c_transforms.TypeCast(ms.int32)" in result.text
    assert "transforms.Compose([transforms.c_transforms.Fill(1)])" in result.text
    left = {item.message.split("`")[1]: item.message for item in result.diagnostics if item.fix is None}
    assert sorted(left) == ["transforms.Compose", "transforms.Unique"]
    assert "1.7's c_transforms.Compose takes only C ops" in left["transforms.Compose"]
    assert "is not proven (the old spelling fails" in left["transforms.Unique"]
    # 1.8 has the unified names: nothing to do there.
    assert not downgrade_text(DOWN, Version(1, 8)).diagnostics
    # And upgrade takes each spelling back: the round trip is the original.
    assert migrate_text(result.text, Version(2, 10)).text == DOWN


def test_a_downgrade_writes_an_old_spelling_only_where_its_proof_ran_on_the_target() -> None:
    facts_ = api_facts()
    assert facts_ is not None
    old, new = "mindspore.dataset.vision.c_transforms.Resize", "mindspore.dataset.vision.Resize"
    assert {Version(1, 7), Version(2, 7)} <= facts_.proven_on[(old, new)]
    move_back = facts_.move_back(new, Version(1, 7))
    assert move_back is not None and move_back[1] == old  # c_transforms, not py_transforms
    # A pair proven only on 2.7 (as every pair was before the 1.7 cases) is no fix going down.
    only_27 = {**facts_.proven_on, (old, new): frozenset({Version(2, 7)})}
    facts_27 = dataclasses.replace(facts_, proven_on=only_27)
    text = "import mindspore.dataset.vision as vision\n\nresize = vision.Resize((32, 32))\n"
    missing = missing_at(Version(1, 7))
    assert missing is not None
    proven, unproven = (
        _Finder(rule_for("MS211"), FileContext(text, Version(1, 7)), dataclasses.replace(missing, facts=f))
        for f in (facts_, facts_27)
    )
    ((fixed,), (left,)) = (list(proven.findings()), list(unproven.findings()))
    assert fixed.fix is not None
    assert left.fix is None and "is not proven on MindSpore 1.7" in left.message


def test_upgrade_takes_a_moved_module_named_through_its_new_parent_back() -> None:
    text = (
        "import mindspore.dataset as ds\nimport mindspore.dataset.vision as vision\n\n"
        "ops = [ds.vision.c_transforms.Resize(8), vision.c_transforms.HWC2CHW()]\n"
        "C = vision.c_transforms\ndecode = vision.c_transforms.Decode(rgb=True)\n"
    )
    result = migrate_text(text, Version(2, 10))
    assert "ops = [ds.vision.Resize(8), vision.HWC2CHW()]\n" in result.text
    assert "C = vision.c_transforms\ndecode = vision.c_transforms.Decode(rgb=True)\n" in result.text


def test_a_downgrade_leaves_a_vision_op_whose_input_may_be_a_pil_image() -> None:
    """2.x's unified vision ops take PIL images too; 1.7's c_transforms ops only numpy arrays, and
    each pair's proof ran on a numpy image: an op called at once on an input, or any in a file
    that works with PIL images, is left with the reason."""
    eager = (
        "import mindspore.dataset.vision as vision\n\n\ndef invert(img):\n    return vision.Invert()(img)\n"
    )
    (finding,) = downgrade_text(eager, Version(1, 7)).diagnostics
    assert finding.fix is None
    assert finding.message.endswith("this op is called at once on an input (line 5))")
    with_pil = "from PIL import Image\nimport mindspore.dataset.vision as vision\n\nops = [vision.Invert()]\n"
    (finding,) = downgrade_text(with_pil, Version(1, 7)).diagnostics
    assert finding.fix is None and finding.message.endswith("this file works with PIL images)")
    pipeline = "import mindspore.dataset.vision as vision\n\nops = [vision.Invert()]\n"
    assert downgrade_text(pipeline, Version(1, 7)).text.endswith("ops = [vision.c_transforms.Invert()]\n")
