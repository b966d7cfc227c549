"""Verify's reach on real project shapes: an AFTER that only GRAPH mode rejects, an AFTER that
cannot be imported, an operator without a CPU kernel, files that import their own package
relatively, two projects with a `src` package each in one worker, and train steps the probe can
drive only with their real signature (seven inputs, defaulted parameters).

The MindSpore tests run one worker each, in PYNATIVE only where GRAPH adds nothing.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.verify import Pair, Verdict, VerifyOptions, verify_pairs
from ms_migrate.verify.imports import import_place, missing_module_hint, removed_name_hint
from ms_migrate.verify.sites import differing_sites

CASES = Path(__file__).parent / "verify_cases"


def verify_json(before: Path, after: Path, *options: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["verify", "--format", "json", *options, str(before), str(after)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, json.loads(result.output)


def rows(data: dict) -> dict[tuple[str, str], dict]:
    return {(site["site"], site["mode"]): site for site in data["sites"]}


def upgraded(legacy: str, tmp_path: Path, target: str = "2.10") -> tuple[Path, Path]:
    """``legacy`` and what `upgrade` makes of it, as the files verify compares."""
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(legacy)
    after.write_text(migrate_text(legacy, Version.parse(target)).text)
    return before, after


def assert_proven_in_both_modes(before: Path, after: Path) -> None:
    code, data = verify_json(before, after)
    assert code == 0, data
    assert {mode: row["verdict"] for (_, mode), row in rows(data).items()} == {
        "pynative": "equal",
        "graph": "equal",
    }, data


def assert_a_doubled_sens_differs(before: Path, after: Path, *sites: str) -> None:
    """AFTER with its sensitivity doubled (``ops.ones_like(loss) * self.sens``) differs in PYNATIVE
    at each of ``sites``: the harness that proved them can tell a wrong rewrite."""
    text = after.read_text()
    wrong = text.replace("ops.ones_like(loss) * self.sens", "ops.ones_like(loss) * self.sens * 2.0")
    assert wrong != text, text
    after.write_text(wrong)
    _, data = verify_json(before, after, "--mode", "pynative")
    for site in sites:
        assert rows(data)[(site, "pynative")]["verdict"] == "differs", data


def assert_equal_in_graph_and_a_wrong_rewrite_differs(
    before: Path, after: Path, said: str, right: str, wrong: str
) -> None:
    """The one site is equal in GRAPH mode, its row's detail saying ``said``; AFTER with ``right``
    made ``wrong`` differs."""
    code, data = verify_json(before, after, "--mode", "graph")
    assert code == 0, data
    (row,) = data["sites"]
    assert row["verdict"] == "equal" and said in row["detail"], data
    text = after.read_text()
    assert right in text, text
    after.write_text(text.replace(right, wrong))
    _, data = verify_json(before, after, "--mode", "graph")
    (row,) = data["sites"]
    assert row["verdict"] == "differs", data


def legacy_step(inputs: str, network_call: str, header: str = "", init: str = "network, optimizer") -> str:
    """A GradOperation train step taking ``inputs``, passing ``network_call`` to its network."""
    return f"{header}\n" + textwrap.dedent(
        f"""\
        import mindspore.nn as nn
        import mindspore.ops as ops

        class TrainStep(nn.Cell):
            def __init__(self, {init}):
                super().__init__()
                self.network = network
                self.network.set_grad()
                self.optimizer = optimizer
                self.weights = optimizer.parameters
                self.grad = ops.GradOperation(get_by_list=True)

            def construct(self, {inputs}):
                loss = self.network({network_call})
                grads = self.grad(self.network, self.weights)({network_call})
                self.optimizer(grads)
                return loss
        """
    )


def merged_step(inputs: str, network_call: str, header: str = "", init: str = "network, optimizer") -> str:
    """``legacy_step``'s rewrite, the forward merged into value_and_grad."""
    return f"{header}\n" + textwrap.dedent(
        f"""\
        import mindspore
        import mindspore.nn as nn

        class TrainStep(nn.Cell):
            def __init__(self, {init}):
                super().__init__()
                self.network = network
                self.network.set_grad()
                self.optimizer = optimizer
                self.weights = optimizer.parameters

            def construct(self, {inputs}):
                loss, grads = mindspore.value_and_grad(self.network, None, self.weights)({network_call})
                self.optimizer(grads)
                return loss
        """
    )


# ---------------------------------------------------------------------------------------------
# Without MindSpore


def test_the_probe_takes_seven_inputs_and_the_steps_defaulted_parameters() -> None:
    names = "ids, mask, types, labels, positions, lm_ids, lm_weights"
    plans = differing_sites(legacy_step(names, names), merged_step(names, names))
    assert [(plan.kind, plan.network_inputs, plan.problem) for plan in plans] == [("cell", 7, "")]
    plans = differing_sites(
        legacy_step("x, label, mask=None", "x, label"), merged_step("x, label", "x, label")
    )
    assert [(plan.kind, plan.inputs, plan.network_inputs, plan.defaulted) for plan in plans] == [
        ("cell", ("feature", "label"), 2, 1)
    ]


def test_import_place_finds_the_package_and_the_roots_of_absolute_imports(tmp_path: Path) -> None:
    project = tmp_path / "zoo" / "cv" / "gan"
    (project / "src" / "models").mkdir(parents=True)
    for folder in (project / "src", project / "src" / "models"):
        (folder / "__init__.py").write_text("")
    step = project / "src" / "models" / "step.py"
    place = import_place(step, "from ..losses import GanLoss\nfrom src.config import config\n")
    assert place.package == "src.models" and place.roots == (str(project),)
    # No relative import: a top-level module, with the folder that holds `src` on the path.
    assert import_place(step, "from src.config import config\n").package == ""
    # A namespace package (no __init__.py) deep enough for two dots.
    (project / "src" / "__init__.py").unlink()
    (project / "src" / "models" / "__init__.py").unlink()
    assert import_place(step, "from ..losses import GanLoss\n").package == "src.models"


def test_a_definition_is_a_site_for_a_name_whose_binding_changed_not_for_its_neighbours() -> None:
    """The rewrite drops `ops` from `from mindspore import Tensor, ops`: a function that reads
    only `Tensor` is not a site (it had been, with every test of a copy of a test suite)."""
    source = textwrap.dedent(
        """\
        import numpy as np
        from mindspore import Tensor, ops


        def test_grad():
            net, x = make()
            grad_fn = ops.GradOperation(get_all=True)
            return grad_fn(net)(x)


        def test_forward():
            return Tensor(np.ones(3))
        """
    )
    upgraded = migrate_text(source, target=Version(2, 8)).text
    assert "from mindspore import Tensor\n" in upgraded
    assert [plan.name for plan in differing_sites(source, upgraded)] == ["test_grad"]


def test_a_folder_named_like_a_standard_module_is_no_root(tmp_path: Path) -> None:
    """A copy with no .git is looked at up to the file system's root, where `/sys` and `/proc`
    are folders: `import sys` had made `/` a root, every installed package a module of the
    project, and opencv imported twice in one worker (`cv2.dnn has no attribute DictValue`)."""
    (tmp_path / "sys").mkdir()  # a folder with no __init__.py: the standard library comes first
    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "__init__.py").write_text("")  # a regular package shadows it, as import does
    (tmp_path / "helpers").mkdir()
    step = tmp_path / "project" / "src" / "step.py"
    step.parent.mkdir(parents=True)
    assert import_place(step, "import sys\nimport helpers\n").roots == (str(tmp_path),)
    assert import_place(step, "import sys\n").roots == ()
    assert import_place(step, "import math\n").roots == (str(tmp_path),)


def test_the_roots_that_the_modules_a_file_reaches_import_from_go_on_the_path(tmp_path: Path) -> None:
    """MASS: the project's own folder is a package too, so the step is `mass.src.transformer`'s,
    imported from the folder above `mass`; a module it reaches imports `from src.utils import
    ...`, which needs `mass/` on the path, as its training script run from there has it."""
    from ms_migrate.verify.imports import roots_reached_modules_need

    (tmp_path / ".git").mkdir()
    mass = tmp_path / "nlp" / "mass"
    (mass / "src" / "transformer").mkdir(parents=True)
    for folder in (mass, mass / "src", mass / "src" / "transformer"):
        (folder / "__init__.py").write_text("")
    (mass / "src" / "utils.py").write_text("def helper():\n    return 1\n")
    (mass / "src" / "transformer" / "model.py").write_text("import yaml\nfrom src.utils import helper\n")
    step = mass / "src" / "transformer" / "step.py"
    text = "from .model import helper\n"
    place = import_place(step, text)
    assert place.package == "mass.src.transformer" and place.roots == (str(tmp_path / "nlp"),)
    search_path = [str(step.parent), *place.roots]
    assert roots_reached_modules_need(step, text, place, search_path) == [str(mass)]
    assert roots_reached_modules_need(step, text, place, [*search_path, str(mass)]) == []


def test_a_missing_module_hint_names_the_folder_or_says_none_holds_it(tmp_path: Path) -> None:
    (tmp_path / "models" / "toolbox").mkdir(parents=True)
    step = tmp_path / "models" / "gan" / "train" / "step.py"
    step.parent.mkdir(parents=True)
    hint = missing_module_hint("toolbox.layers", step, [str(step.parent)], str(tmp_path))
    assert hint == (
        f"{tmp_path / 'models'} holds 'toolbox': set python-path = [\"models\"] in "
        f"[tool.ms-migrate.verify] of {tmp_path / 'pyproject.toml'}"
    )
    assert missing_module_hint("toolbox", step, [str(tmp_path / "models")], str(tmp_path)) == ""
    assert missing_module_hint("sklearn", step, [], None).startswith(
        "no folder above step.py holds 'sklearn': install it for the MindSpore that runs verify "
        "(`pip install scikit-learn`)"
    )
    # The package to install, into the interpreter that runs verify.
    assert "(`/rt/bin/python -m pip install opencv-python-headless`)" in missing_module_hint(
        "cv2", step, [], None, "/rt/bin/python"
    )
    assert "(`pip install easydict`)" in missing_module_hint("easydict", step, [], None)


# ---------------------------------------------------------------------------------------------
# With MindSpore


@pytest.mark.mindspore
def test_an_after_that_only_graph_mode_rejects_differs_with_its_error() -> None:
    code, data = verify_json(CASES / "defaulted_input_before.py", CASES / "defaulted_input_after.py")
    assert code == 1, data
    graph = rows(data)[("TrainStep", "graph")]
    assert graph["verdict"] == "differs", graph
    assert graph["reason"].startswith("AFTER fails"), graph
    assert "the step's defaulted inputs" in graph["reason"], graph
    assert rows(data)[("TrainStep", "pynative")]["verdict"] == "equal", data
    assert graph["detail"].startswith("AFTER: TypeError: The parameters number of the function is"), graph


@pytest.mark.mindspore
def test_an_after_that_cannot_be_imported_differs(tmp_path: Path) -> None:
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(legacy_step("x, label", "x, label"))
    after.write_text(merged_step("x, label", "x, label", header="import mindspore.no_such_module"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 1, data
    row = rows(data)[("TrainStep", "pynative")]
    assert (row["verdict"], row["reason"]) == ("differs", "AFTER cannot be imported while BEFORE can"), row
    assert "ModuleNotFoundError: No module named 'mindspore.no_such_module'" in row["detail"], row


@pytest.mark.mindspore
def test_an_operator_without_a_cpu_kernel_is_named(tmp_path: Path) -> None:
    """LambApplyOptimizerAssign is Ascend-only: MindSpore 2.10 on CPU says "Unsupported op [...] on
    CPU". (The float-status operators of loss-scaled steps have stand-ins: see below.)"""
    status = "status = ops.operations.LambApplyOptimizerAssign()(*((x,) * 12))"
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(
        legacy_step("x, label", "x, label").replace(
            "loss = self.network", f"{status}\n        loss = self.network"
        )
    )
    after.write_text(
        merged_step("x, label", "x, label").replace("loss, grads =", f"{status}\n        loss, grads =")
    )
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 2, data
    row = rows(data)[("TrainStep", "pynative")]
    assert row["reason"].startswith(
        "cannot run on CPU: the operator LambApplyOptimizerAssign has no CPU kernel"
    ), row
    assert "Unsupported op [LambApplyOptimizerAssign] on CPU" in row["detail"], row


PACKAGE_FILES = {
    "pyproject.toml": '[tool.ms-migrate.verify]\nmode = "pynative"\n',
    "models/gan/__init__.py": "",
    "models/gan/losses.py": "SCALE = 0.5\n",
    "models/gan/train/__init__.py": "from .helpers import twice\n",
    "models/gan/train/helpers.py": "def twice(value):\n    return value * 2\n",
}
RELATIVE = "from ..losses import SCALE\nfrom .helpers import twice\nassert twice(SCALE) == 1.0\n"


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.mindspore
def test_relative_imports_resolve_in_the_files_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python would cache the bytecode of the project's modules beside them: verify leaves the
    # project as it found it, --dry-run included.
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    write_tree(tmp_path, PACKAGE_FILES)
    train = tmp_path / "models" / "gan" / "train"
    # A module in the file's folder named as its top package (relationnet/src/relationnet.py,
    # MaskedFaceRecognition/model/model.py): the package must win, or `from .` finds no parent.
    (train / "gan.py").write_text("raise ImportError('the gan package was shadowed')\n")
    (train / "_step_before.py").write_text(legacy_step("x, label", "x, label", header=RELATIVE))
    (train / "step.py").write_text(merged_step("x, label", "x, label", header=RELATIVE))
    # A module of the project that only a module the file imports needs, in a folder above it
    # that no import root of the file itself reaches: that folder goes on the path too (the hint
    # that would name it, when an import still fails, is test_a_missing_module_hint_...'s).
    (tmp_path / "models" / "gan" / "toolbox.py").write_text("")
    (train / "uses_toolbox.py").write_text("import toolbox\n")
    header = "from . import uses_toolbox"
    (train / "_other_before.py").write_text(legacy_step("x, label", "x, label", header=header))
    (train / "other.py").write_text(merged_step("x, label", "x, label", header=header))

    code, data = verify_json(train / "_step_before.py", train / "step.py")
    assert code == 0, data
    assert rows(data)[("TrainStep", "pynative")]["verdict"] == "equal", data
    code, data = verify_json(train / "_other_before.py", train / "other.py")
    assert code == 0, data
    assert rows(data)[("TrainStep", "pynative")]["verdict"] == "equal", data
    assert not list(tmp_path.rglob("__pycache__")), list(tmp_path.rglob("*.pyc"))


@pytest.mark.mindspore
def test_two_projects_with_a_src_package_each_share_a_worker(tmp_path: Path) -> None:
    pairs = []
    for project, name in (("first", "SCALE"), ("second", "OTHER")):
        write_tree(tmp_path / project, {"src/__init__.py": "", "src/config.py": f"{name} = 1.0\n"})
        header = f"from src.config import {name}"
        path = tmp_path / project / "scripts" / "step.py"
        path.parent.mkdir()
        pairs.append(
            Pair(
                legacy_step("x, label", "x, label", header),
                merged_step("x, label", "x, label", header),
                path,
                path,
            )
        )
    reports = verify_pairs(pairs, VerifyOptions(modes=("pynative",), workers=1))
    for report in reports:
        assert [result.verdict for result in report.results] == [Verdict.EQUAL], report.results


@pytest.mark.mindspore
def test_a_step_of_seven_inputs_with_a_defaulted_parameter_is_driven(tmp_path: Path) -> None:
    names = "ids, mask, types, labels, positions, lm_ids, lm_weights"
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(legacy_step(f"{names}, sens=None", names))
    after.write_text(merged_step(f"{names}, sens=None", names))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 0, data
    assert rows(data)[("TrainStep", "pynative")]["verdict"] == "equal", data


LOSS_SCALED = """\
import mindspore.nn as nn
import mindspore.ops as ops


class Step(nn.TrainOneStepWithLossScaleCell):
    def construct(self, x, label):
        loss = self.network(x, label){scaled}
        sens = ops.ones_like(loss) * ops.cast(self.scale_sense, ops.dtype(loss))
        grads = self.grad(self.network, self.weights)(x, label, sens)
        self.optimizer(grads)
        return loss
"""


def test_a_loss_scale_subclass_gets_its_required_scale_sense() -> None:
    plans = differing_sites(LOSS_SCALED.format(scaled=""), LOSS_SCALED.format(scaled=" * 1.0"))
    scaled = ("network", "optimizer", "loss scale")
    assert [(plan.kind, plan.arguments) for plan in plans] == [("cell", scaled)]
    # BERT's: a default of None, which the base class refuses.
    init = (
        "    def __init__(self, network, optimizer, scale_update_cell=None):\n"
        "        super().__init__(network, optimizer, scale_update_cell)\n\n"
    )
    with_init = [
        text.replace("    def construct", init + "    def construct")
        for text in (LOSS_SCALED.format(scaled=""), LOSS_SCALED.format(scaled=" * 1.0"))
    ]
    assert [plan.arguments for plan in differing_sites(*with_init)] == [scaled]
    # GPT-2's: any Cell whose optional loss-scale Cell the training script passes (without it,
    # the step casts a None), with the options before it that the harness can name; likewise a
    # schedule's length.
    for signature, given in (
        ("network, optimizer, scale_update_cell=None", scaled),
        ("network, optimizer, lr=0.1, scale_update_cell=None", (*scaled[:2], "0.05", "loss scale")),
        ("network, optimizer, vocabulary=None, scale_update_cell=None", scaled[:2]),
        ("network, optimizer, loss_fn=None, scale_update_cell=None", (*scaled[:2], "criterion", scaled[2])),
        # NCF's: a learning-rate schedule one step long, which the probe's second step outruns.
        ("network, optimizer, total_steps=1, sens=16384.0", (*scaled[:2], "1000")),
    ):
        init = f"    def __init__(self, {signature}):\n        pass\n\n"
        texts = [
            text.replace("(nn.TrainOneStepWithLossScaleCell)", "(nn.Cell)").replace(
                "    def construct", init + "    def construct"
            )
            for text in (LOSS_SCALED.format(scaled=""), LOSS_SCALED.format(scaled=" * 1.0"))
        ]
        assert [plan.arguments for plan in differing_sites(*texts)] == [given], signature


@pytest.mark.mindspore
def test_a_loss_scale_subclass_is_driven_with_a_loss_scale_cell(tmp_path: Path) -> None:
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(LOSS_SCALED.format(scaled=""))
    after.write_text(LOSS_SCALED.format(scaled=" * 1.0"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 0, data
    assert rows(data)[("Step", "pynative")]["verdict"] == "equal", data


def test_a_namespace_package_whose_parent_left_sys_modules_has_no_file(tmp_path: Path) -> None:
    """centerface, then centernet, in one worker: a namespace package (`src/model_utils/` has no
    `__init__.py`) recomputes its path from its parent's, and the parent `src` left sys.modules when
    the next project's modules came in: that raised KeyError: 'src' in the harness (46 rows of
    mindspore-ai/models)."""
    import importlib
    import sys

    from ms_migrate.verify.worker import _module_file

    write_tree(tmp_path, {"nsparent_xyz/__init__.py": "", "nsparent_xyz/tools/helpers.py": "X = 1\n"})
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("nsparent_xyz.tools")
        assert _module_file(module).startswith(str(tmp_path.resolve()))
        del sys.modules["nsparent_xyz"]
        assert _module_file(module) == ""
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith("nsparent_xyz")]:
            del sys.modules[name]


# ---------------------------------------------------------------------------------------------
# The network the run knows: the probes stand in for it, not for any network the step might get

STAR_STEP = legacy_step("*inputs", "*inputs")
STAR_STEP_AFTER = merged_step("*inputs", "*inputs")


def test_a_known_network_decides_the_probe_variants() -> None:
    from ms_migrate.verify.sites import NetworkFacts

    def known(facts: NetworkFacts):
        return lambda name, attribute: facts if (name, attribute) == ("TrainStep", "network") else None

    assert [plan.varargs for plan in differing_sites(STAR_STEP, STAR_STEP_AFTER)] == [True]
    fixed = known(NetworkFacts(positional=2, required=2, varargs=False))
    assert [plan.varargs for plan in differing_sites(STAR_STEP, STAR_STEP_AFTER, fixed)] == [False]
    star = known(NetworkFacts(positional=0, required=0, varargs=True))
    assert [plan.varargs for plan in differing_sites(STAR_STEP, STAR_STEP_AFTER, star)] == [True]
    # A step with a defaulted input it does not pass on: a variant only if the network has one too.
    texts = legacy_step("x, label, mask=None", "x, label"), merged_step("x, label, mask=None", "x, label")
    assert [plan.defaulted for plan in differing_sites(*texts)] == [1]
    assert [plan.defaulted for plan in differing_sites(*texts, fixed)] == [0]
    defaults = known(NetworkFacts(positional=3, required=2, varargs=False))
    assert [plan.defaulted for plan in differing_sites(*texts, defaults)] == [1]


FIXED_NETWORK = """\
import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 2)
        self.norm = nn.BatchNorm1d(2)
        self.loss = nn.MSELoss()

    def construct(self, x, label):
        return self.loss(self.norm(self.dense(x)), label)
"""

STAR_TRAIN = """\
import mindspore.nn as nn

from net import Net
from step import TrainStep

net = Net()
step = TrainStep(net, nn.Momentum(net.trainable_params(), 0.1, 0.9))
"""


@pytest.mark.mindspore
def test_upgrade_verify_proves_a_star_step_whose_network_the_run_knows(tmp_path: Path) -> None:
    """mindspore-ai/models' RetinaNet, brdnet, PoseNet...: a step passing *inputs to a network
    whose construct the run shows fixed. MS101 writes the direct form, which GRAPH accepts for that
    network; a *inputs probe made it differ (21 files of the zoo, none of them wrong)."""
    (tmp_path / "net.py").write_text(FIXED_NETWORK)
    (tmp_path / "step.py").write_text(STAR_STEP)
    (tmp_path / "train.py").write_text(STAR_TRAIN)
    (tmp_path / "pyproject.toml").write_text('[tool.ms-migrate.verify]\nworkers = 1\nmode = "graph"\n')
    result = CliRunner().invoke(
        main, ["upgrade", "--target-version", "2.8", "--verify", "--format", "json", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "value_and_grad(self.network, None, self.weights)(*inputs)" in (tmp_path / "step.py").read_text()


# ---------------------------------------------------------------------------------------------
# __init__ settings, a command line read at import, more outputs, stray project modules


def test_the_probe_has_as_many_outputs_as_the_step_takes_apart() -> None:
    five = legacy_step("x, label", "x, label").replace(
        "loss = self.network(x, label)", "_, loss, _, _, _ = self.network(x, label)"
    )
    (plan,) = differing_sites(five, five.replace("return loss", "return loss * 1.0"))
    assert plan.outputs == 5
    # Wide&Deep's: IthOutputCell(network, output_index=1) differentiates the second output.
    held = "        self.second = IthOutputCell(network, output_index=1)\n"
    second = legacy_step("x, label", "x, label").replace("        self.grad =", held + "        self.grad =")
    (plan,) = differing_sites(second, second.replace("return loss", "return loss * 1.0"))
    assert plan.outputs == 2


SENS_STEP = """\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Tensor
import numpy as np


class GradWithSens(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.grad_op = ops.GradOperation(sens_param=True)
        self.scale = Tensor(np.full((1,), 0.1, np.float32))

    def construct(self, x):
        gradient_function = self.grad_op(self.net)
        return gradient_function(x, self.scale)
"""


def test_the_sensitivity_of_a_sens_param_grad_is_not_a_network_input() -> None:
    """`GradOperation(sens_param=True)` then `f = self.grad_op(self.net)`, `f(x, self.scale)`:
    the network takes x alone, in BEFORE and in AFTER (`ms.grad(self.net, sens_param=True)(x,
    self.scale)`); the probe once took two inputs there, and both versions failed on it."""
    after = migrate_text(SENS_STEP, Version(2, 8)).text
    assert "sens_param=True)(x, self.scale)" in after
    (plan,) = differing_sites(SENS_STEP, after)
    assert (plan.kind, plan.network_inputs, plan.outputs, plan.problem) == ("cell", 1, 1, "")
    # One sensitivity per output: `self.grad(self.net)(x, t, (s1, s2))` says two outputs.
    two = SENS_STEP.replace("def construct(self, x):", "def construct(self, x, t):").replace(
        "        gradient_function = self.grad_op(self.net)\n        return gradient_function(x, self.scale)",
        "        return self.grad_op(self.net)(x, t, (self.scale, self.scale))",
    )
    (plan,) = differing_sites(two, two.replace("return self", "return 1.0 * self"))
    assert (plan.network_inputs, plan.outputs) == (2, 2)


def test_only_a_grad_passes_its_arguments_on_to_the_network() -> None:
    """`f = self.grad_op(self.net)` then `f(x, sens)` gives the network x; `wrapped =
    WithLoss(self.net, loss)` then `wrapped(x, y)` gives another cell two inputs, which say
    nothing of the network's: the probe keeps the one input the step's own grad call shows."""
    wrapped = SENS_STEP.replace(
        "        gradient_function = self.grad_op(self.net)\n",
        "        gradient_function = self.grad_op(self.net)\n"
        "        wrapped = nn.WithLossCell(self.net, nn.MSELoss())\n"
        "        wrapped(x, x, x)\n",
    )
    (plan,) = differing_sites(wrapped, migrate_text(wrapped, Version(2, 8)).text)
    assert (plan.network_inputs, plan.problem) == (1, "")
    # Named like a grad, a project's own maker is followed as before.
    own = SENS_STEP.replace("self.grad_op", "self.my_grad_fn")
    (plan,) = differing_sites(own, migrate_text(own, Version(2, 8)).text)
    assert (plan.network_inputs, plan.problem) == (1, "")


@pytest.mark.mindspore
def test_a_sens_param_step_of_a_tutorial_is_proven_in_both_modes(tmp_path: Path) -> None:
    before, after = upgraded(SENS_STEP, tmp_path, target="2.8")
    assert_proven_in_both_modes(before, after)


def test_a_step_that_unpacks_one_input_into_its_network_gets_a_tuple() -> None:
    """`construct(self, inputs)` then `self.network(*inputs)` (the model zoo's TrainOneStepWithEMA):
    the input is a tuple, a feature and a label, and the network takes two inputs; a tensor
    there made the probe take six, one per row."""
    (plan,) = differing_sites(legacy_step("inputs", "*inputs"), merged_step("inputs", "*inputs"))
    assert (plan.inputs, plan.network_inputs, plan.varargs, plan.problem) == (("packed",), 2, True, "")


@pytest.mark.mindspore
def test_a_step_that_unpacks_a_tuple_into_its_network_is_proven(tmp_path: Path) -> None:
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(legacy_step("inputs", "*inputs"))
    # A merged step runs the forward once where the legacy one runs it twice, which GRAPH's
    # BatchNorm statistics tell apart (as they should): PYNATIVE shows the tuple goes through.
    after.write_text(merged_step("inputs", "*inputs"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 0, data
    assert rows(data)[("TrainStep", "pynative")]["verdict"] == "equal", data


TWO_OPTIMIZERS = """\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple


class TrainStep(nn.Cell):
    def __init__(self, network, optimizers):
        super().__init__()
        self.network = network
        self.optimizer_net, self.optimizer_cri = optimizers
        self.weights_net = self.optimizer_net.parameters
        self.weights = ParameterTuple(self.weights_net + self.optimizer_cri.parameters)
        self.count = len(self.weights_net)
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, x, label):
        loss = self.network(x, label)
        grads = self.grad(self.network, self.weights)(x, label)
        self.optimizer_net(grads[: self.count])
        self.optimizer_cri(grads[self.count :])
        return loss
"""


def test_an_optimizers_parameter_that_init_unpacks_gets_a_tuple_of_optimizers() -> None:
    """ReID's step: `self.optimizer_net, self.optimizer_cri = optimizers`, one optimizer cannot
    be unpacked, and both versions failed on it ("cannot unpack non-iterable SGD object")."""
    after = TWO_OPTIMIZERS.replace("return loss", "return loss * 1.0")
    (plan,) = differing_sites(TWO_OPTIMIZERS, after)
    assert (plan.arguments, plan.optimizer, plan.problem) == (("network", "optimizers 2"), True, "")


@pytest.mark.mindspore
def test_a_step_given_a_tuple_of_optimizers_is_proven_in_both_modes(tmp_path: Path) -> None:
    before, after = upgraded(TWO_OPTIMIZERS, tmp_path, target="2.8")
    assert "ms.grad(self.network, None, self.weights)(x, label)" in after.read_text()
    assert_proven_in_both_modes(before, after)


def test_init_settings_are_named_by_their_parameters() -> None:
    def plan(init: str):
        legacy = legacy_step("x, label", "x, label", init=init)
        (found,) = differing_sites(legacy, legacy.replace("return loss", "return loss * 1.0"))
        return found

    assert plan("network, lr, eps, loss_scale").arguments == ("network", "0.05", "1e-08", "3.0")
    assert plan("optimizer, network").arguments == ("optimizer", "network")
    assert plan("net, optimizer, clip_norm, device_num").arguments == ("network", "optimizer", "1.0", "1")
    assert plan("network, opt_backbone, opt_head").arguments == ("network", "optimizer", "optimizer")
    assert plan("D, optimizer, sens").arguments == ("network", "optimizer", "3.0")  # SRGAN's
    assert plan("generator, optimizer").arguments == ("network", "optimizer")
    assert not plan("network, lr, eps, loss_scale").optimizer  # it builds its own
    assert plan("network, config").arguments == ("network", "settings")  # Fat-DeepFFM's
    # mindarmour's differentially private steps refuse their default `micro_batches=None`.
    private = plan("network, optimizer, scale_update_cell=None, micro_batches=None, norm_bound=1.0")
    assert private.arguments == ("network", "optimizer", "loss scale", "2")
    # A criterion the step applies itself: MindSpore's nn.MSELoss (the verdict says so).
    assert plan("network, optimizer, criterion").arguments == ("network", "optimizer", "criterion")
    unknown = plan("network, optimizer, vocabulary")
    assert unknown.kind == "none" and "takes 'vocabulary', for which the automatic harness" in unknown.problem
    three = plan("netG, netD, netE, optimizer")
    assert (
        three.kind == "none" and "takes 3 networks; the automatic harness builds one or two" in three.problem
    )


OWN_OPTIMIZER = """\
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
{header}

class TrainStep(nn.Cell):
    def __init__(self, network, lr, eps, loss_scale):
        super().__init__()
        self.network = network
        self.weights = ms.ParameterTuple(network.trainable_params())
        self.optimizer = nn.Adam(self.weights, learning_rate=lr, eps=eps, loss_scale=loss_scale)
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = loss_scale

    def construct(self, x, label):
        {outputs} = self.network(x, label)
        sens = ops.fill(ops.dtype(loss), ops.shape(loss), self.sens)
        grads = self.grad(self.network, self.weights)(x, label, {sens})
        return ops.depend(loss, self.optimizer(grads))
"""
# A project's config module, as model_zoo's `model_utils/config.py`: it parses the command line
# when imported, and exits on an option it does not know (the worker's own).
READS_ARGV = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
ARGS = parser.parse_args()
"""


@pytest.mark.mindspore
@pytest.mark.parametrize(
    ("header", "outputs", "sens"),
    [
        ("", "loss", "sens"),
        (READS_ARGV, "loss, first, second, third, fourth", "(sens, sens, sens, sens, sens)"),
    ],
    ids=["settings", "argv-and-five-outputs"],
)
def test_a_step_that_builds_its_optimizer_from_settings_is_proven(
    tmp_path: Path, header: str, outputs: str, sens: str
) -> None:
    """Each failed before: __init__(network, lr, eps, loss_scale) had no harness; a module that
    parses argv at import raised SystemExit 2; a step unpacking five outputs got a probe of three."""
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    legacy = OWN_OPTIMIZER.format(header=header, outputs=outputs, sens=sens)
    before, after = tmp_path / "step_before.py", tmp_path / "step.py"
    before.write_text(legacy)
    after.write_text(migrate_text(legacy, Version(2, 8)).text)
    assert after.read_text() != legacy
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        assert rows(data)[("TrainStep", mode)]["verdict"] == "equal", data


@pytest.mark.mindspore
def test_a_module_a_step_imported_while_running_does_not_answer_the_next_project(tmp_path: Path) -> None:
    """The first project's step imports its `src` package only when built (no root claims it at
    import); the second project's `from src.beta import OTHER` found that `src` in sys.modules."""
    write_tree(tmp_path / "first", {"src/__init__.py": "", "src/alpha.py": "SCALE = 1.0\n"})
    write_tree(tmp_path / "second", {"src/__init__.py": "", "src/beta.py": "OTHER = 1.0\n"})
    lazy = "import sys\nsys.path.insert(0, {root!r})\n"
    built = ("        super().__init__()\n", "        super().__init__()\n        import src.alpha\n")
    first = legacy_step("x, label", "x, label", lazy.format(root=str(tmp_path / "first"))).replace(*built)
    first_after = merged_step("x, label", "x, label", lazy.format(root=str(tmp_path / "first")))
    first_after = first_after.replace(*built)
    header = "from src.beta import OTHER"
    pairs = [
        Pair(first, first_after, tmp_path / "first" / "step.py", tmp_path / "first" / "step.py"),
        Pair(
            legacy_step("x, label", "x, label", header),
            merged_step("x, label", "x, label", header),
            tmp_path / "second" / "scripts" / "step.py",
            tmp_path / "second" / "scripts" / "step.py",
        ),
    ]
    (tmp_path / "second" / "scripts").mkdir()
    reports = verify_pairs(pairs, VerifyOptions(modes=("pynative",), workers=1))
    for report in reports:
        assert [result.verdict for result in report.results] == [Verdict.EQUAL], report.results


# ---------------------------------------------------------------------------------------------
# Loss-scaled steps: float-status operators on CPU


@pytest.mark.mindspore
def test_loss_scaled_steps_run_on_cpu_with_float_status_stand_ins(tmp_path: Path) -> None:
    """No CPU kernel exists for NPUAllocFloatStatus and its kin, nor for the base class's own
    overflow check (2.x's takes the Ascend branch on CPU): the worker stands in for them. A row
    that ran the NPU stand-ins says so; the base class's check is computed from the gradients,
    which needs no note. A rewrite that drops the loss scale still differs."""
    code, data = verify_json(CASES / "float_status_before.py", CASES / "float_status_after.py")
    assert code == 0, data
    found = rows(data)
    assert {key: row["verdict"] for key, row in found.items()} == {
        (site, mode): "equal" for site in ("FinetuneCell", "SquadCell") for mode in ("pynative", "graph")
    }
    for mode in ("pynative", "graph"):
        stood_in = "NPUAllocFloatStatus, NPUClearFloatStatus, NPUGetFloatStatus"
        assert stood_in in found[("FinetuneCell", mode)]["detail"]
        assert found[("SquadCell", mode)]["detail"] == ""
    after = (CASES / "float_status_after.py").read_text()
    scaled = """ms.grad(self.network, None, weights, sens_param=True)(
            input_ids, label_ids, self.cast(scaling_sens, mstype.float32)
        )"""
    assert after.count(scaled) == 2
    dropped = tmp_path / "float_status_after.py"
    dropped.write_text(after.replace(scaled, "ms.grad(self.network, None, weights)(input_ids, label_ids)"))
    code, data = verify_json(CASES / "float_status_before.py", dropped)
    assert code == 1, data
    assert {row["verdict"] for row in data["sites"]} == {"differs"}, data


OVERFLOW_CHECK = """
import numpy as np, mindspore as ms
from mindspore import Tensor, nn
from ms_migrate.verify import float_status
ms.set_device("CPU")
float_status.install()
ms.set_context(mode=ms.GRAPH_MODE if "{mode}" == "graph" else ms.PYNATIVE_MODE)
net = nn.WithLossCell(nn.Dense(4, 2), nn.MSELoss())
optimizer = nn.SGD(net.trainable_params(), 0.1)
step = nn.TrainOneStepWithLossScaleCell(net, optimizer, nn.FixedLossScaleUpdateCell(3.0))
label = Tensor(np.ones((6, 2), np.float32))
finite = Tensor(np.ones((6, 4), np.float32))
huge = Tensor(np.full((6, 4), 1e30, np.float32))
status = float_status.FloatStatus()
print(int(step(finite, label)[1].asnumpy()), int(step(huge, label)[1].asnumpy()),
      float(status(finite).asnumpy()[0]), float(status(huge * huge).asnumpy()[0]))
"""


@pytest.mark.mindspore
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_the_stand_in_overflow_check_sees_an_overflow(mode: str, tmp_path: Path) -> None:
    """The base class's overflow check and FloatStatus on CPU compute what MindSpore does on a GPU:
    overflow when a gradient (a tensor) holds an inf or a NaN."""
    import subprocess
    import sys

    script = tmp_path / "overflow.py"
    script.write_text(OVERFLOW_CHECK.format(mode=mode))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1", "0.0", "1.0"], done.stdout


def test_a_step_that_passes_its_optimizer_more_than_the_gradients_gets_one_that_takes_it() -> None:
    call = "x, label"
    legacy = legacy_step(call, call).replace("self.optimizer(grads)", "self.optimizer(grads, loss)")
    merged = merged_step(call, call).replace("self.optimizer(grads)", "self.optimizer(grads, loss)")
    assert [plan.optimizer_extras for plan in differing_sites(legacy, merged)] == [True]
    assert [plan.optimizer_extras for plan in differing_sites(legacy_step(call, call), merged)] == [False]


@pytest.mark.mindspore
def test_bert_shapes_run_a_none_feature_and_an_optimizer_given_the_overflow(tmp_path: Path) -> None:
    """BERT's pre-training steps pass their own `next_sentence_starts=None` on to the network, and
    the overflow flag to their optimizer: the probe network takes a None feature as adding
    nothing, and the probe optimizers take (and ignore) what follows the gradients. The upgrade's
    form is proven; the merged form, which runs the forward once where GRAPH ran it twice (the
    None is not one shared tensor), differs."""
    inputs, call = "x, label, starts=None", "x, starts, label"
    overflow = "self.optimizer(grads, loss > 100.0)"
    before, after = upgraded(legacy_step(inputs, call).replace("self.optimizer(grads)", overflow), tmp_path)
    merged = tmp_path / "merged.py"
    merged.write_text(merged_step(inputs, call).replace("self.optimizer(grads)", overflow))
    code, data = verify_json(before, after)
    assert code == 0, data
    assert {row["verdict"] for row in data["sites"]} == {"equal"}, data
    code, data = verify_json(before, merged)
    assert code == 1, data
    assert rows(data)[("TrainStep", "graph")]["verdict"] == "differs", data


@pytest.mark.mindspore
def test_a_step_s_optimizers_update_disjoint_shares_of_the_probe_s_weights() -> None:
    """Two optimizers updating one Parameter race in GRAPH mode (advent's step gave different
    numbers from run to run): each gets its own share, as a real GAN's or segmentation net's do."""
    from ms_migrate.verify import probe

    network = probe.network(2, 1)
    names = [[weight.name for weight in share] for share in probe.weight_shares(network, 2)]
    assert len(names) == 2 and all(names) and not set(names[0]) & set(names[1]), names
    assert sorted(names[0] + names[1]) == sorted(weight.name for weight in network.trainable_params())
    assert probe.weight_shares(network, 1) == [network.trainable_params()]


SPLIT_BY_NAME = """\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple


class TrainStepWrap(nn.Cell):
    def __init__(self, network, sens=1024.0):
        super().__init__()
        self.network = network
        wide = [param for param in network.trainable_params() if 'wide' in param.name]
        deep = [param for param in network.trainable_params() if 'wide' not in param.name]
        self.weights_w = ParameterTuple(wide)
        self.weights_d = ParameterTuple(deep)
        self.optimizer_w = nn.SGD(self.weights_w, learning_rate=0.1)
        self.optimizer_d = nn.Momentum(self.weights_d, learning_rate=0.05, momentum=0.9)
        self.grad_w = ops.GradOperation(get_by_list=True)
        self.grad_d = ops.GradOperation(get_by_list=True)

    def construct(self, ids, label):
        loss = self.network(ids, label)
        grads_w = self.grad_w(self.network, self.weights_w)(ids, label)
        grads_d = self.grad_d(self.network, self.weights_d)(ids, label)
        self.optimizer_w(grads_w)
        self.optimizer_d(grads_d)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_that_splits_its_weights_by_name_finds_each_group(tmp_path: Path) -> None:
    """Wide&Deep's and FiBiNET's steps give one optimizer the weights whose name holds `wide` and
    another the rest; the probe's weight carries the word, so neither optimizer is empty."""
    before, after = upgraded(SPLIT_BY_NAME, tmp_path)
    assert [plan.weight_words for plan in differing_sites(SPLIT_BY_NAME, after.read_text())] == [("wide",)]
    code, data = verify_json(before, after)
    assert code == 0, data
    assert {row["verdict"] for row in data["sites"]} == {"equal"}, data


CONFIGURED = """\
import mindspore.nn as nn
import mindspore.ops as ops


class TrainStepWrap(nn.Cell):
    def __init__(self, network, config):
        super().__init__()
        self.network = network
        self.weights = network.trainable_params()
        scale = config.loss_scale
        self.optimizer = nn.Momentum(self.weights, config.lr_init, config["momentum"], loss_scale=scale)
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = config.get("loss_scale", 1.0)

    def construct(self, ids, label):
        loss = self.network(ids, label)
        sens = ops.fill(ops.dtype(loss), ops.shape(loss), self.sens)
        grads = self.grad(self.network, self.weights)(ids, label, sens)
        return ops.depend(loss, self.optimizer(grads))
"""


@pytest.mark.mindspore
def test_a_step_built_from_a_config_object_reads_the_settings_it_names(tmp_path: Path) -> None:
    """Fat-DeepFFM's `TrainStepWrap(network, config)`: a stand-in config answers each setting as
    a parameter of that name would be; one it cannot name stops the row, saying which."""
    before, after = upgraded(CONFIGURED, tmp_path)
    after_text = after.read_text()
    assert [plan.arguments for plan in differing_sites(CONFIGURED, after_text)] == [("network", "settings")]
    code, data = verify_json(before, after)
    assert code == 0, data
    assert {row["verdict"] for row in data["sites"]} == {"equal"}, data
    before.write_text(CONFIGURED.replace("config.lr_init", "config.vocab_size"))
    after.write_text(after_text.replace("config.lr_init", "config.vocab_size"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 2, data
    row = rows(data)[("TrainStepWrap", "pynative")]
    assert "stand-in config has no value for 'vocab_size'" in row["detail"], row


# ---------------------------------------------------------------------------------------------
# The project's own network, where the probes cannot drive a step

OWN_NETWORK = '''\
import mindspore.nn as nn

WARM_UP = [0]


class Backbone(nn.Cell):
    """28x28 images only: the Dense after the pooling fixes the size."""

    def __init__(self, channels=3, classes=5):
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 3, pad_mode="same")
        self.norm = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()
        self.drop = nn.Dropout(p=0.25)
        self.head = nn.Dense(4 * 14 * 14, classes)

    def construct(self, x):
        x = self.pool(self.relu(self.norm(self.conv(x))))
        return self.head(self.drop(self.flatten(x)))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, image, label):
        return self.loss(self.backbone(image), label)


class ScheduledNet(Net):
    """Warms its loss up by a step count kept in a module global, which outlives each run."""

    def construct(self, image, label):
        WARM_UP[0] += 1
        return self.loss(self.backbone(image), label) * min(1.0, WARM_UP[0] / 10)


class Sized(Net):
    def __init__(self, classes):
        super().__init__()
'''

OWN_STEP = '''\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple


class TrainStep(nn.Cell):
    """Trains the backbone only: the probes have none, so only the project's network runs it."""

    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.backbone.trainable_params())
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, image, label):
        loss = self.network(image, label)
        grads = self.grad(self.network, self.weights)(image, label)
        self.optimizer(grads)
        return loss
'''

OWN_TRAIN = """\
import mindspore.nn as nn

from src.net import {network}
from src.step import TrainStep

net = {network}()
step = TrainStep(net, nn.Momentum(net.backbone.trainable_params(), 0.1, 0.9))
"""


def own_network_project(tmp_path: Path, network: str = "Net") -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "__init__.py").write_text("")
    (project / "src" / "net.py").write_text(OWN_NETWORK)
    (project / "src" / "step.py").write_text(OWN_STEP)
    (project / "train.py").write_text(OWN_TRAIN.format(network=network))
    (project / "pyproject.toml").write_text("[tool.ms-migrate.verify]\nworkers = 1\n")
    return project


OWN_FACTORY = """\
from src.net import Sized


def build_network(classes=5):
    return Sized(classes)
"""

FACTORY_TRAIN = """\
import mindspore.nn as nn

from src.factory import build_network
from src.step import TrainStep

net = build_network()
step = TrainStep(net, nn.Momentum(net.backbone.trainable_params(), 0.1, 0.9))
"""


def test_the_run_names_what_builds_the_network_with_no_arguments(tmp_path: Path) -> None:
    from ms_migrate.analysis.project import ProjectIndex

    project = own_network_project(tmp_path)
    net = (project / "src" / "net.py").resolve()

    def index() -> ProjectIndex:
        return ProjectIndex(sorted(project.rglob("*.py"))).with_local(OWN_STEP, project / "src" / "step.py")

    view = index()
    ((where, found),) = view.attribute_classes("TrainStep", "network")
    assert where == net and getattr(found, "name", None) == "Net"
    names = ("Backbone", "Net", "ScheduledNet", "Sized")
    built = {name: view.builds_without_arguments(view.resolve(name, net)[0]) for name in names}
    # Defaults build, an inherited __init__ builds as its base does, a required argument does not.
    assert built == {"Backbone": True, "Net": True, "ScheduledNet": True, "Sized": False}
    assert view.network_builder("TrainStep", "network") == (net, "Net", "")
    # A class that needs an argument, got from the project's factory function that supplies it.
    (project / "src" / "factory.py").write_text(OWN_FACTORY)
    (project / "train.py").write_text(FACTORY_TRAIN)
    factory = ((project / "src" / "factory.py").resolve(), "build_network", "")
    assert index().network_builder("TrainStep", "network") == factory
    # Its defaults stand in for the script's arguments, as a class's do: a network of that kind.
    (project / "train.py").write_text(FACTORY_TRAIN.replace("build_network()", "build_network(7)"))
    assert index().network_builder("TrainStep", "network") == factory
    (project / "src" / "factory.py").write_text(OWN_FACTORY.replace("classes=5", "classes"))
    assert index().network_builder("TrainStep", "network") is None
    (project / "train.py").write_text(OWN_TRAIN.format(network="Sized"))
    assert index().network_builder("TrainStep", "network") is None


def test_a_file_that_runs_code_when_imported_is_not_imported_for_its_network() -> None:
    from ms_migrate.verify.definitions import runs_at_import

    assert not runs_at_import(OWN_NETWORK) and not runs_at_import(OWN_FACTORY)
    assert not runs_at_import(FACTORY_TRAIN + 'if __name__ == "__main__":\n    step(1, 2)\n')
    assert runs_at_import(FACTORY_TRAIN + "model.train(10, dataset)\n")
    assert runs_at_import("for epoch in range(10):\n    pass\n")
    assert runs_at_import("def broken(:\n")


@pytest.mark.mindspore
def test_upgrade_verify_proves_a_step_only_the_project_s_own_network_can_drive(tmp_path: Path) -> None:
    """A step that reads its network's attributes (`network.backbone`) fails on every probe; the
    run knows the class it is given, which builds with no arguments and takes 28x28 images, so the
    step runs on it (BatchNorm in training mode, its dropout counted) and the rewrite is proven."""
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    after_text = migrate_text(OWN_STEP, Version.parse("2.10")).text
    assert "value_and_grad(self.network, None, self.weights)(image, label)" in after_text
    plain = verify_pairs([Pair(OWN_STEP, after_text, tmp_path / "a.py", tmp_path / "b.py")], VerifyOptions())
    assert {row.verdict for row in plain[0].results} == {Verdict.NOT_RUN}  # the probes alone

    project = own_network_project(tmp_path)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["upgrade", "--target-version", "2.10", "--verify", "--report", str(report), str(project)]
    )
    assert result.exit_code == _exit_for(result.output), result.output
    assert (project / "src" / "step.py").read_text() == after_text
    (verified,) = [item["verified"] for item in json.loads(report.read_text())["files"] if item["verified"]]
    assert {(row["mode"], row["verdict"]) for row in verified} == {("pynative", "equal"), ("graph", "equal")}
    assert "ran on the project's Net(), on inputs float32[6, 3, 28, 28]" in result.output
    # What qualifies the proof is in the report too, as in the output.
    assert all("ran on the project's Net()" in row["detail"] for row in verified)


@pytest.mark.mindspore
def test_upgrade_verify_builds_the_network_with_the_project_s_factory_function(tmp_path: Path) -> None:
    """`net = build_network()` in the training script, defined in `src/factory.py`: the step runs
    on what that function builds (a class that needs an argument, which the function supplies)."""
    project = own_network_project(tmp_path)
    (project / "src" / "factory.py").write_text(OWN_FACTORY)
    (project / "train.py").write_text(FACTORY_TRAIN)
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", "--verify", str(project)])
    assert result.exit_code == _exit_for(result.output), result.output
    assert "value_and_grad" in (project / "src" / "step.py").read_text()
    assert "ran on the project's build_network(), on inputs float32[6, 3, 28, 28]" in result.output


WITH_LOSS_STEP = OWN_STEP.replace(
    "network.backbone.trainable_params()", "network.backbone_network.trainable_params()"
)

WITH_LOSS_TRAIN = """\
import mindspore.nn as nn

from src.net import Backbone
from src.step import TrainStep


def main():
    backbone = Backbone()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_with_loss = nn.WithLossCell(backbone, loss)
    return TrainStep(net_with_loss, nn.Momentum(backbone.trainable_params(), 0.1, 0.9))
"""


@pytest.mark.mindspore
def test_upgrade_verify_builds_the_script_s_with_loss_cell_around_the_project_s_backbone(
    tmp_path: Path,
) -> None:
    """The tutorials' shape: `TrainStep(nn.WithLossCell(Backbone(), loss), optimizer)`, the step
    reading `network.backbone_network`. The run knows the backbone and the MindSpore loss; the
    step runs on `nn.WithLossCell(Backbone(), SoftmaxCrossEntropyWithLogits())` (the loss with its
    defaults: one-hot labels are found by trying)."""
    from ms_migrate.analysis.project import ProjectIndex

    project = own_network_project(tmp_path)
    (project / "src" / "step.py").write_text(WITH_LOSS_STEP)
    (project / "train.py").write_text(WITH_LOSS_TRAIN)
    view = ProjectIndex(sorted(project.rglob("*.py"))).with_local(WITH_LOSS_STEP, project / "src" / "step.py")
    net = (project / "src" / "net.py").resolve()
    assert view.network_builder("TrainStep", "network") == (net, "Backbone", "SoftmaxCrossEntropyWithLogits")
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", "--verify", str(project)])
    assert result.exit_code == _exit_for(result.output), result.output
    assert "value_and_grad" in (project / "src" / "step.py").read_text()
    assert "ran on the project's Backbone(), on inputs float32[6, 3, 28, 28] one-hot[6, 5]" in result.output
    # A loss of another library, or two different backbones, and nothing is built.
    (project / "train.py").write_text(
        WITH_LOSS_TRAIN.replace(
            "net_with_loss = nn.WithLossCell(backbone, loss)",
            "net_with_loss = nn.WithLossCell(backbone, loss)\n    other = nn.WithLossCell(Net(), loss)",
        ).replace("import Backbone", "import Backbone, Net")
    )
    view = ProjectIndex(sorted(project.rglob("*.py"))).with_local(WITH_LOSS_STEP, project / "src" / "step.py")
    assert view.network_builder("TrainStep", "network") is None


def own_network_pair(tmp_path: Path, after_text: str, network: str = "Net") -> Pair:
    from ms_migrate.verify.sites import NetworkFacts

    project = own_network_project(tmp_path, network)
    facts = NetworkFacts(2, 2, False, built_from=(str(project / "src" / "net.py"), network, ""))
    step = project / "src" / "step.py"
    step_after = project / "src" / "step_after.py"
    step_after.write_text(after_text)
    return Pair(OWN_STEP, after_text, step, step_after, lambda name, attribute: facts)


@pytest.mark.mindspore
def test_on_the_project_s_network_a_loss_from_another_forward_differs(tmp_path: Path) -> None:
    """A rewrite that returns the loss of a second forward, after the gradient's: its counted
    dropout draws another mask, so the returned loss differs, and the row says so."""
    reordered = OWN_STEP.replace(
        "        loss = self.network(image, label)\n"
        "        grads = self.grad(self.network, self.weights)(image, label)\n",
        "        grads = ms.grad(self.network, None, self.weights)(image, label)\n"
        "        loss = self.network(image, label)\n",
    ).replace("import mindspore.ops as ops", "import mindspore as ms\nimport mindspore.ops as ops")
    (report,) = verify_pairs([own_network_pair(tmp_path, reordered)], VerifyOptions(modes=("pynative",)))
    (row,) = report.results
    assert row.verdict is Verdict.DIFFERS, row
    assert "returned value" in row.reason and "the project's Net" in row.harness, row


@pytest.mark.mindspore
def test_a_project_network_whose_numbers_change_between_runs_is_not_compared(tmp_path: Path) -> None:
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version

    after_text = migrate_text(OWN_STEP, Version.parse("2.10")).text
    (report,) = verify_pairs(
        [own_network_pair(tmp_path, after_text, "ScheduledNet")], VerifyOptions(modes=("pynative",))
    )
    (row,) = report.results
    assert row.verdict is Verdict.NOT_RUN, row
    assert "gives other numbers when BEFORE runs again" in row.detail, row


def _exit_for(output: str) -> int:
    """upgrade's exit status for a run whose rewrites were all proven and written: 1 while
    findings remain (MS210 on a loss MindSpore deprecates), else 0."""
    remaining = re.search(r"; (\d+) findings? remaining", output)
    assert remaining is not None, output
    return 1 if int(remaining.group(1)) else 0


def test_a_mindspore_name_the_release_lacks_is_said_so_not_to_be_installed() -> None:
    """`from mindspore.dataset.vision import c_transforms` on 2.10 is not a package to install."""
    hint = removed_name_hint("mindspore.dataset.vision.c_transforms", "No module named ...", "2.10.0")
    assert hint.startswith("MindSpore 2.10.0 has no mindspore.dataset.vision.c_transforms, which a release")
    assert "--before-version X.Y" in hint and "pip" not in hint
    message = "cannot import name 'Validator' from 'mindspore._checkparam' (/x/_checkparam.py)"
    assert "has no mindspore._checkparam.Validator," in removed_name_hint(
        "mindspore._checkparam", message, "2.8.0"
    )
    assert removed_name_hint("sklearn", "No module named 'sklearn'", "2.10.0") == ""


@pytest.mark.mindspore
def test_verify_names_a_removed_mindspore_import_for_what_it_is(tmp_path: Path) -> None:
    """A module no release checked lists (a private one) is not stood in for: the import fails
    and says the release removed or moved it. A public name 1.x had is stood in for, and said."""
    source = (CASES / "raises_at_import.py").read_text(encoding="utf-8")
    for name, imported in (
        ("private", "from mindspore.ops._grad import bprop_getters"),
        ("public", "from mindspore._checkparam import Validator"),
    ):
        before, after = tmp_path / f"{name}_before.py", tmp_path / f"{name}_after.py"
        legacy = source.replace('raise RuntimeError("configuration server unreachable")', imported)
        before.write_text(legacy, encoding="utf-8")
        after.write_text(migrate_text(legacy, Version(2, 10)).text, encoding="utf-8")
        result = CliRunner().invoke(main, ["verify", "--mode", "pynative", str(before), str(after)])
        if name == "private":
            assert result.exit_code == 2, result.output
            assert "BEFORE raised at import: ModuleNotFoundError" in result.output
            assert "has no mindspore.ops._grad, which a release removed or moved" in result.output
        else:
            assert result.exit_code == 0, result.output
            assert "stood in for mindspore._checkparam.Validator (MindSpore 2.10" in result.output


GRADIENT_PENALTY = """\
import numpy as np
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


def mixing_weight(batch_size):
    return ms.Tensor(np.random.randn(batch_size, 1, 1, 1), ms.float32)


class CriticOnInput(nn.Cell):
    def __init__(self, critic):
        super().__init__()
        self.critic = critic

    def construct(self, mixed):
        score, _ = self.critic(mixed)
        return ops.ReduceSum()(score, 0)


class Penalty(nn.Cell):
    def __init__(self, critc):
        super().__init__()
        self.critc = critc
        self.on_input = CriticOnInput(critc)
        self.gradient = ops.GradOperation()

    def construct(self, real, fake):
        alpha = mixing_weight(real.shape[0]).expand_as(real)
        mixed = real + alpha * (ops.stop_gradient(fake) - real)
        grads = self.gradient(self.on_input)(mixed)
        norms = ops.sqrt(ops.ReduceSum()(ops.reshape(grads, (real.shape[0], -1)) ** 2, 1))
        return ops.ReduceMean()((norms - 1.0) ** 2)
"""


def test_a_network_reached_through_a_cell_the_step_wraps_it_in_is_planned_by_that_cell() -> None:
    """A WGAN-GP gradient penalty differentiates `CriticOnInput(critic)`, which unpacks two
    outputs of the critic it wraps: the parameter (misspelt, so its name says nothing) is the
    network, of one input and two outputs, and the step's two inputs are both images."""
    (plan,) = differing_sites(GRADIENT_PENALTY, migrate_text(GRADIENT_PENALTY, Version(2, 8)).text)
    assert (plan.arguments, plan.network_inputs, plan.outputs, plan.problem) == (("network",), 1, 2, "")


@pytest.mark.mindspore
def test_a_gradient_penalty_on_images_is_proven_and_a_wrong_rewrite_of_it_differs(tmp_path: Path) -> None:
    """Its mixing weight is (batch, 1, 1, 1), expanded as the images: on the (6, 4) features the
    original fails, on image-shaped ones it runs, and the report says which it ran on."""
    before, after = upgraded(GRADIENT_PENALTY, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        row = rows(data)[("Penalty", mode)]
        assert row["verdict"] == "equal" and "image-shaped inputs (6, 1, 2, 2)" in row["detail"], data
    after.write_text(after.read_text().replace("(mixed)\n", "(mixed * 2.0)\n"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert rows(data)[("Penalty", "pynative")]["verdict"] == "differs", data


NORMALISES_RGB_IMAGES = """\
import numpy as np
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class ImagePreProcess(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mean = ms.Tensor(np.array([0.40, 0.45, 0.48], np.float32).reshape((1, 1, 1, 3)))
        self.std = ms.Tensor(np.array([0.28, 0.27, 0.29], np.float32).reshape((1, 1, 1, 3)))

    def construct(self, image):
        image = (ops.cast(image, ms.float32) / 255.0 - self.mean) / self.std
        return ops.transpose(image, (0, 3, 1, 2))


class DetectorTrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__(auto_prefix=False)
        self.image = ImagePreProcess()
        self.network = network
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, image, heatmap, mask, index, size):
        image = self.image(image)
        loss = self.network(image, heatmap, mask, index, size)
        grads = self.grad(self.network, self.weights)(image, heatmap, mask, index, size)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_that_normalises_rgb_images_itself_is_proven_on_them(tmp_path: Path) -> None:
    """A detector's step (CenterNet's, 17 sites of the zoo and two never-seen repositories)
    normalises channels-last RGB images against a (1, 1, 1, 3) mean before its network: every
    probe input and the (6, 1, 2, 2) images fail it, (6, 2, 2, 3) images of the first input run,
    and a wrong rewrite still differs."""
    before, after = upgraded(NORMALISES_RGB_IMAGES, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        row = rows(data)[("DetectorTrainStep", mode)]
        assert row["verdict"] == "equal" and "image-shaped inputs (6, 2, 2, 3)" in row["detail"], data
    after.write_text(
        after.read_text().replace(
            "(image, heatmap, mask, index, size)\n        self.optimizer",
            "(image * 2.0, heatmap, mask, index, size)\n        self.optimizer",
        )
    )
    assert "image * 2.0" in after.read_text()
    code, data = verify_json(before, after, "--mode", "pynative")
    assert rows(data)[("DetectorTrainStep", "pynative")]["verdict"] == "differs", data


# CenterNet's loss-scale step, in short: channels-last images, the learning rate called with the
# global step, and the optimizer's result joined with a bool (an overflow skips the update).
NORMALISES_IMAGES_CALLS_ITS_RATE_JOINS_A_BOOL = (
    NORMALISES_RGB_IMAGES.replace(
        "import numpy as np\n", "import numpy as np\nfrom mindspore import Parameter\n", 1
    )
    .replace(
        "        self.grad = ops.GradOperation(get_by_list=True)\n",
        "        self.grad = ops.GradOperation(get_by_list=True)\n"
        "        self.learning_rate = optimizer.learning_rate\n"
        "        self.global_step = optimizer.global_step\n"
        "        self.skipped = Parameter(ms.Tensor(0, ms.int32), requires_grad=False)\n",
    )
    .replace(
        "        self.optimizer(grads)\n        return loss\n",
        "        lr = self.learning_rate(self.global_step)\n"
        "        if self.skipped > 0:\n"
        "            succ = False\n"
        "        else:\n"
        "            succ = self.optimizer(grads)\n"
        "        return ops.depend(loss, succ), lr\n",
    )
)


@pytest.mark.mindspore
def test_the_optimizers_a_failure_asks_for_stay_for_the_image_shapes(tmp_path: Path) -> None:
    """The features fail the step (its images have their channels last), and so does the probe's
    fixed learning rate, which it calls: the images run with optimizers on a schedule, and in
    GRAPH mode, where the bool join fails next, with optimizers that also return True. Each
    row names all it ran with; a wrong rewrite differs."""
    legacy = NORMALISES_IMAGES_CALLS_ITS_RATE_JOINS_A_BOOL
    assert "lr = self.learning_rate(self.global_step)" in legacy and "succ = False" in legacy
    before, after = upgraded(legacy, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        detail = rows(data)[("DetectorTrainStep", mode)]["detail"]
        assert rows(data)[("DetectorTrainStep", mode)]["verdict"] == "equal", data
        assert "image-shaped inputs (6, 2, 2, 3)" in detail and "learning rate is a schedule" in detail, data
    assert "optimizers that return True" in rows(data)[("DetectorTrainStep", "graph")]["detail"], data
    text = after.read_text()
    assert "self.weights)(image, heatmap" in text
    after.write_text(text.replace("self.weights)(image, heatmap", "self.weights)(image * 2.0, heatmap"))
    code, data = verify_json(before, after, "--mode", "graph")
    assert rows(data)[("DetectorTrainStep", "graph")]["verdict"] == "differs", data


@pytest.mark.mindspore
def test_a_step_that_draws_at_random_is_not_called_different(tmp_path: Path) -> None:
    """`ops.UniformReal` in the step draws anew in every run whatever the seed (MindSpore keeps a
    random operator's state from one instance to the next): BEFORE against itself differs, so
    an exact rewrite must not be called `differs`; it is "could not run", with the reason."""
    random = GRADIENT_PENALTY.replace(
        "alpha = mixing_weight(real.shape[0]).expand_as(real)",
        "alpha = ops.UniformReal()((1, 1, 1, 1))",
    )
    before, after = upgraded(random, tmp_path, target="2.8")
    _, data = verify_json(before, after, "--mode", "pynative")
    row = rows(data)[("Penalty", "pynative")]
    assert row["verdict"] == "could not run" and "BEFORE gives other numbers" in row["reason"], data


# BERT's gradient accumulation steps: the optimizer's result is joined with a bool from the
# other branch, which GRAPH mode cannot do with the tuple a MindSpore optimizer returns.
JOINED_WITH_A_BOOL = """\
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Parameter, Tensor


class AccumulatingStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)
        self.skipped = Parameter(Tensor(0, ms.int32), requires_grad=False)

    def construct(self, data, label):
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        if self.skipped > 0:
            succ = False
        else:
            succ = self.optimizer(grads)
        return ops.depend(loss, succ)
"""


@pytest.mark.mindspore
def test_a_step_that_joins_its_optimizers_result_with_a_bool_is_proven_and_a_wrong_rewrite_differs(
    tmp_path: Path,
) -> None:
    """With MindSpore's optimizers the original fails in GRAPH mode ("Cannot join the return
    values of different branches"); the probe's optimizers then return True there, the report
    says so, and the updates still run: a rewrite that takes the gradients at twice the data
    differs by its weights.

    The wrong rewrite compiles. One that does not (`[g * 0.5 for g in grads]`, a list where
    HyperMap wants the tuple) left MindSpore 2.10 aborting the worker at a random later call in
    about half the runs ("PyThreadState_Get: ... the GIL is released"), so this test was flaky."""
    before, after = upgraded(JOINED_WITH_A_BOOL, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    assert rows(data)[("AccumulatingStep", "pynative")]["verdict"] == "equal", data  # no join there
    graph = rows(data)[("AccumulatingStep", "graph")]
    assert graph["verdict"] == "equal" and "optimizers that return True" in graph["detail"], data
    text = after.read_text()
    assert "succ = self.optimizer(grads)" in text and "self.weights)(data, label)" in text
    after.write_text(text.replace("self.weights)(data, label)", "self.weights)(data * 2.0, label)"))
    code, data = verify_json(before, after, "--mode", "graph")
    graph = rows(data)[("AccumulatingStep", "graph")]
    assert graph["verdict"] == "differs" and "parameter weight" in graph["reason"], data


# A detector's step (CenterNet's, CenterPoint's shape): it reads its optimizer's learning rate
# and global step in __init__ and calls the one with the other in construct, as a schedule is.
CALLS_ITS_RATE = """\
import mindspore.nn as nn
import mindspore.ops as ops


class ScheduledStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__(auto_prefix=False)
        self.network = network
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.learning_rate = self.optimizer.learning_rate
        self.global_step = self.optimizer.global_step
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, data, label):
        lr = self.learning_rate(self.global_step)
        loss = self.network(data, label)
        grads = self.grad(self.network, self.weights)(data, label)
        self.optimizer(grads)
        return loss, lr
"""


@pytest.mark.mindspore
def test_a_step_that_calls_its_optimizers_learning_rate_is_proven_and_a_wrong_rewrite_differs(
    tmp_path: Path,
) -> None:
    """`self.learning_rate(self.global_step)` fails on a fixed rate (a Parameter) in both versions;
    the probe's optimizers then take a constant schedule, the row says so, and a rewrite that
    takes the gradients at twice the data differs."""
    before, after = upgraded(CALLS_ITS_RATE, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        row = rows(data)[("ScheduledStep", mode)]
        assert row["verdict"] == "equal" and "learning rate is a schedule" in row["detail"], data
    text = after.read_text()
    assert "self.weights)(data, label)" in text
    after.write_text(text.replace("self.weights)(data, label)", "self.weights)(data * 2.0, label)"))
    code, data = verify_json(before, after)
    for mode in ("pynative", "graph"):
        row = rows(data)[("ScheduledStep", mode)]
        assert row["verdict"] == "differs" and "parameter" in row["reason"], data


# RAS's step: `*inputs` unpacked at the top of construct, one of them a number it divides by.
UNPACKS_ITS_INPUTS = """\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore.ops import functional as F


class UnpackingStep(nn.Cell):
    def __init__(self, network, optimizer, sens=1024):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def construct(self, *inputs):
        image, label, batchsize = inputs
        loss = self.network(image, label)
        loss = loss / batchsize
        sens = F.fill(loss.dtype, loss.shape, self.sens)
        grads = self.grad(self.network, self.weights)(image, label, sens)
        return F.depend(loss, self.optimizer(grads))


class Regression(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 2)

    def construct(self, image, label):
        return ((self.dense(image) - label) ** 2).mean()


def train_step():
    network = Regression()
    return UnpackingStep(network, nn.SGD(network.trainable_params()))
"""


@pytest.mark.mindspore
def test_a_step_that_unpacks_its_inputs_gets_one_per_name_and_a_number_for_what_its_network_is_not_given(
    tmp_path: Path,
) -> None:
    """`image, label, batchsize = inputs`: three inputs, the third a number (it never reaches the
    network); proven in both modes, and a rewrite that drops the sensitivity differs."""
    from ms_migrate.verify.sites import differing_sites

    before, after = upgraded(UNPACKS_ITS_INPUTS, tmp_path, target="2.8")
    (plan,) = differing_sites(before.read_text(), after.read_text())
    assert plan.inputs == ("feature", "label", "scalar"), plan
    assert_proven_in_both_modes(before, after)
    text = after.read_text()
    assert "image, label, sens\n" in text, text
    after.write_text(text.replace("image, label, sens\n", "image, label, sens * 2\n"))
    code, data = verify_json(before, after, "--mode", "pynative")
    assert code == 1, data
    assert rows(data)[("UnpackingStep", "pynative")]["verdict"] == "differs", data


# A GAN's two train steps: the generator's, given both networks and wrapping them in a Cell of
# the file (the generator maps noise to what the discriminator takes), and Pix2Pix's, given two
# loss networks and an optimizer for each.
GAN_STEPS = """\
import mindspore.nn as nn
import mindspore.ops as ops


class GenWithLoss(nn.Cell):
    def __init__(self, netG, netD):
        super().__init__()
        self.netG = netG
        self.netD = netD

    def construct(self, noise):
        fake = self.netG(noise)
        fake = ops.tanh(fake)
        return self.netD(fake)


class GenTrainStep(nn.Cell):
    def __init__(self, netG, netD, optimizerG, sens=1.0):
        super().__init__()
        self.netD = netD
        self.weights = optimizerG.parameters
        self.optimizer = optimizerG
        self.net = GenWithLoss(netG, netD)
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def construct(self, noise):
        loss = self.net(noise)
        sens = ops.ones_like(loss) * self.sens
        grads = self.grad(self.net, self.weights)(noise, sens)
        self.optimizer(grads)
        return loss


class PairTrainStep(nn.Cell):
    def __init__(self, loss_netD, loss_netG, optimizerD, optimizerG):
        super().__init__()
        self.loss_netD = loss_netD
        self.loss_netG = loss_netG
        self.optimizerD = optimizerD
        self.optimizerG = optimizerG
        self.weights_D = optimizerD.parameters
        self.weights_G = optimizerG.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, realA, realB):
        d_loss = self.loss_netD(realA, realB)
        d_grads = self.grad(self.loss_netD, self.weights_D)(realA, realB)
        self.optimizerD(d_grads)
        g_loss = self.loss_netG(realA, realB)
        g_grads = self.grad(self.loss_netG, self.weights_G)(realA, realB)
        self.optimizerG(g_grads)
        return d_loss, g_loss
"""


def test_a_step_given_two_networks_gets_a_second_probe_by_what_it_does_with_them() -> None:
    """The generator step's netG feeds netD through the Cell it wraps both in: netD is the main
    network (one input, the loss), netG a map of its input's shape, and optimizerG updates
    netG's weights. Pix2Pix's two loss networks each take the step's two inputs, and each
    optimizer updates the network its name pairs it with."""
    plans = {
        plan.name: plan for plan in differing_sites(GAN_STEPS, migrate_text(GAN_STEPS, Version(2, 8)).text)
    }
    generator, pair = plans["GenTrainStep"], plans["PairTrainStep"]
    assert (generator.kind, generator.problem) == ("cell", ""), generator
    assert generator.arguments == ("network 2", "network", "optimizer")
    assert (generator.network_inputs, generator.inputs) == (1, ("feature",))
    assert (generator.second_network, generator.second_network_inputs, generator.optimizer_networks) == (
        "map",
        1,
        (1,),
    )
    assert pair.arguments == ("network", "network 2", "optimizer", "optimizer")
    assert (pair.network_inputs, pair.inputs, pair.second_network, pair.second_network_inputs) == (
        2,
        ("feature", "label"),
        "loss",
        2,
    )
    assert pair.optimizer_networks == (0, 1)
    swapped = GAN_STEPS.replace(
        "loss_netD, loss_netG, optimizerD, optimizerG", "loss_netD, loss_netG, optimizerG, optimizerD"
    )
    (plan,) = [
        item
        for item in differing_sites(swapped, migrate_text(swapped, Version(2, 8)).text)
        if item.name == "PairTrainStep"
    ]
    assert plan.optimizer_networks == (1, 0)  # by name, not by place


def test_two_networks_that_each_take_what_the_other_returns_are_left_to_a_factory() -> None:
    looped = GAN_STEPS.replace("fake = self.netG(noise)", "fake = self.netG(self.netD(noise))")
    plans = {plan.name: plan for plan in differing_sites(looped, migrate_text(looped, Version(2, 8)).text)}
    assert plans["GenTrainStep"].kind == "none"
    assert "each take what the other returns" in plans["GenTrainStep"].problem


@pytest.mark.mindspore
def test_steps_given_two_networks_are_proven_and_a_wrong_rewrite_of_each_differs(tmp_path: Path) -> None:
    """On a second probe network (the report names it), both steps are equal in both modes; an
    AFTER that scales the generator's sensitivity, or updates Pix2Pix's generator with the
    discriminator's gradients, differs."""
    before, after = upgraded(GAN_STEPS, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for site in ("GenTrainStep", "PairTrainStep"):
        for mode in ("pynative", "graph"):
            row = rows(data)[(site, mode)]
            assert row["verdict"] == "equal" and "second probe" in row["detail"], data
    text = after.read_text()
    assert "self.sens" in text and "g_grads" in text, text
    wrong = text.replace("ops.ones_like(loss) * self.sens", "ops.ones_like(loss) * self.sens * 2.0")
    wrong = wrong.replace("self.optimizerG(g_grads)", "self.optimizerG(d_grads)")
    assert wrong.count("2.0") > text.count("2.0") and "self.optimizerG(d_grads)" in wrong, text
    after.write_text(wrong)
    _, data = verify_json(before, after, "--mode", "pynative")
    for site in ("GenTrainStep", "PairTrainStep"):
        assert rows(data)[(site, "pynative")]["verdict"] == "differs", data


# ESRGAN's discriminator step: the network it is given holds the generator, which the step only
# switches out of training; the probe has no such part.
SWITCHED_PART = """\
import mindspore.nn as nn
import mindspore.ops as ops


class TrainOneStepD(nn.Cell):
    def __init__(self, D, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.optimizer = optimizer
        self.D = D
        self.D.set_grad()
        self.D.set_train()
        self.D.generator.set_grad(False)
        self.D.generator.set_train(False)
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens
        self.weights = optimizer.parameters

    def construct(self, hr, lr):
        loss = self.D(hr, lr)
        sens = ops.ones_like(loss) * self.sens
        grads = self.grad(self.D, self.weights)(hr, lr, sens)
        self.optimizer(grads)
        return loss
"""


def test_parts_a_step_only_switches_out_of_training_get_stand_ins_and_parts_it_uses_do_not() -> None:
    def parts(text: str) -> tuple[str, ...]:
        (plan,) = differing_sites(text, migrate_text(text, Version(2, 8)).text)
        return plan.network_parts

    assert parts(SWITCHED_PART) == ("generator",)
    # A part the step keeps (to call it), or whose weights it reads, is not one the probe can
    # stand in for.
    kept = SWITCHED_PART.replace("self.sens = sens\n", "self.sens = sens\n        self.part = D.generator\n")
    assert kept != SWITCHED_PART and parts(kept) == ()
    read = SWITCHED_PART.replace(
        "self.weights = optimizer.parameters", "self.weights = self.D.generator.trainable_params()"
    )
    assert parts(read) == ()


@pytest.mark.mindspore
def test_a_step_that_switches_a_part_of_its_network_is_proven_and_says_so(tmp_path: Path) -> None:
    before, after = upgraded(SWITCHED_PART, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        row = rows(data)[("TrainOneStepD", mode)]
        assert (
            row["verdict"] == "equal" and "empty stand-ins" in row["detail"] and "generator" in row["detail"]
        )
    assert_a_doubled_sens_differs(before, after, "TrainOneStepD")


# A MindSpore 1.1 loss-scaled step: ControlDepend orders the overflow check, and no release from
# 1.7 on has it.
CONTROL_DEPEND = """\
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore.ops import functional as F
from mindspore.ops import operations as P


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer, sens=1.0):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens
        self.depend_parameter_use = P.ControlDepend(depend_mode=1)

    def construct(self, x, label):
        loss = self.network(x, label)
        sens = ops.ones_like(loss) * self.sens
        grads = self.grad(self.network, self.weights)(x, label, sens)
        self.depend_parameter_use(loss, sens)
        F.control_depend(loss, sens)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_that_orders_with_the_removed_control_depend_is_proven_and_says_so(tmp_path: Path) -> None:
    """Without the stand-in both versions fail as the step is built; with it each runs, the row
    names it, and a rewrite that scales the sensitivity still differs."""
    before, after = upgraded(CONTROL_DEPEND, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    for mode in ("pynative", "graph"):
        row = rows(data)[("TrainStep", mode)]
        assert row["verdict"] == "equal", data
        assert "ControlDepend, control_depend (gone since MindSpore 1.2) ran as a stand-in" in row["detail"]
    assert_a_doubled_sens_differs(before, after, "TrainStep")


# An attack library's Jacobian helper: the step seeds backpropagation with one of its own inputs,
# which has the shape of the network's output, not of a loss.
SENS_GIVEN = """\
import mindspore.nn as nn
from mindspore.ops import GradOperation


class GradWithSens(nn.Cell):
    def __init__(self, network):
        super().__init__()
        self.grad = GradOperation(get_all=False, sens_param=True)
        self.network = network

    def construct(self, inputs, weight):
        gout = self.grad(self.network)(inputs, weight)
        return gout
"""


def test_a_step_that_seeds_the_grad_with_its_own_input_gets_a_probe_that_returns_its_prediction() -> None:
    (plan,) = differing_sites(SENS_GIVEN, migrate_text(SENS_GIVEN, Version(2, 8)).text)
    assert (plan.kind, plan.inputs, plan.network_inputs, plan.raw_output) == (
        "cell",
        ("feature", "label"),
        1,
        True,
    )
    # A sensitivity the step makes itself, or a scalar, keeps the loss.
    made = SENS_GIVEN.replace("(inputs, weight)", "(inputs, weight * 1.0)")
    (plan,) = differing_sites(made, migrate_text(made, Version(2, 8)).text)
    assert not plan.raw_output
    scalar = SENS_GIVEN.replace("weight", "sens")
    (plan,) = differing_sites(scalar, migrate_text(scalar, Version(2, 8)).text)
    assert plan.inputs[-1] == "scalar" and not plan.raw_output


@pytest.mark.mindspore
def test_a_jacobian_helper_is_proven_and_a_wrong_rewrite_of_it_differs(tmp_path: Path) -> None:
    """On the loss-returning probe both versions failed ("Bprop ReduceMean ... x_shape {6, 2}")."""
    before, after = upgraded(SENS_GIVEN, tmp_path, target="2.8")
    code, data = verify_json(before, after)
    assert code == 0, data
    assert {mode: row["verdict"] for (_, mode), row in rows(data).items()} == {
        "pynative": "equal",
        "graph": "equal",
    }
    text = after.read_text()
    assert "(inputs, weight)" in text, text
    after.write_text(text.replace("(inputs, weight)", "(inputs, weight * 2.0)"))
    _, data = verify_json(before, after, "--mode", "pynative")
    assert rows(data)[("GradWithSens", "pynative")]["verdict"] == "differs", data


# A physics-informed network's derivative Cell (SciAI's PINNs): the network returns one (batch, 1)
# column per output, and the step picks one by seeding it with ones and the other with zeros.
PER_OUTPUT_SENS = """\
import numpy as np
import mindspore.common.dtype as mstype
from mindspore import Tensor, nn, ops
from mindspore.ops import constexpr


@constexpr
def _ones(batch):
    return Tensor(np.ones((batch, 1), np.float32), mstype.float32)


@constexpr
def _zeros(batch):
    return Tensor(np.zeros((batch, 1), np.float32), mstype.float32)


class GradSecondOutput(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.grad = ops.GradOperation(get_all=True, sens_param=True)

    def construct(self, x, y, t):
        first = _zeros(x.shape[0])
        second = _ones(x.shape[0])
        return self.grad(self.net)(x, y, t, (first, second))
"""


def test_a_step_that_seeds_each_output_in_a_tuple_is_planned_so() -> None:
    (plan,) = differing_sites(PER_OUTPUT_SENS, migrate_text(PER_OUTPUT_SENS, Version(2, 8)).text)
    assert (plan.kind, plan.network_inputs, plan.outputs, plan.sens_per_output) == ("cell", 3, 2, True)
    one = PER_OUTPUT_SENS.replace("(x, y, t, (first, second))", "(x, y, t, second)")
    (plan,) = differing_sites(one, migrate_text(one, Version(2, 8)).text)
    assert not plan.sens_per_output


@pytest.mark.mindspore
def test_a_derivative_cell_seeding_each_output_is_proven_and_a_swapped_seed_differs(tmp_path: Path) -> None:
    """On the probe whose outputs are losses GRAPH mode failed in both versions ("Bprop ReduceMean
    ... x_shape {6, 1}, out_shape {1, 1}"); PYNATIVE broadcast the seeds and ran."""
    before, after = upgraded(PER_OUTPUT_SENS, tmp_path, target="2.8")
    assert_equal_in_graph_and_a_wrong_rewrite_differs(
        before, after, "(batch, 1) columns", "(x, y, t, (first, second))", "(x, y, t, (second, first))"
    )


# MindSpore's parallel tests set a parallel mode in each test and reset it in a pytest fixture
# that verify does not run.
LEAVES_A_PARALLEL_MODE = """\
import numpy as np
import mindspore.nn as nn
from mindspore import Tensor, context
from mindspore.ops import composite as C

grad_all = C.GradOperation(get_all=True)


def test_auto_parallel_dense():
    context.set_auto_parallel_context(device_num=8, global_rank=0, parallel_mode="auto_parallel")
    x = Tensor(np.ones((2, 4), np.float32))
    return grad_all(nn.Dense(4, 2))(x)


class GradWrap(nn.Cell):
    def __init__(self, network):
        super().__init__()
        self.network = network

    def construct(self, x):
        return grad_all(self.network)(x)
"""


@pytest.mark.mindspore
def test_a_parallel_mode_the_code_asks_for_is_left_out_and_named(tmp_path: Path) -> None:
    """MindSpore refuses a parallel mode on CPU ("Invalid communication backend: CPU for
    semi_auto_parallel/auto_parallel mode"): 101 sites of a copy of its tests failed so."""
    before, after = upgraded(LEAVES_A_PARALLEL_MODE, tmp_path, target="2.8")
    code, data = verify_json(before, after, "--mode", "graph")
    assert code == 0, data
    for (site, _), row in rows(data).items():
        assert row["verdict"] == "equal", data
        if site.startswith("test_auto_parallel_dense"):
            assert "set_auto_parallel_context(parallel_mode='auto_parallel') left out" in row["detail"], row


@pytest.mark.mindspore
def test_a_parallel_mode_left_by_earlier_code_is_undone() -> None:
    import mindspore as ms

    from ms_migrate.verify import compat

    ms.context.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)
    compat.stand_alone(ms)
    assert ms.context.get_auto_parallel_context("parallel_mode") == "stand_alone"
    compat.stand_alone(ms)  # already alone: nothing to undo


# A step written for a network cast to float16 on Ascend (MaskRCNN's, textfusenet's): its
# sensitivity is float16, which GRAPH mode cannot join with a float32 loss.
HALF_SENS = """\
import numpy as np
import mindspore.nn as nn
from mindspore import ParameterTuple, Tensor
from mindspore.ops import composite as C


class TrainOneStepCell(nn.Cell):
    def __init__(self, network, optimizer, sens=3.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.weights = ParameterTuple(network.trainable_params())
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.sens = Tensor((np.ones((1,)) * sens).astype(np.float16))

    def construct(self, x, label):
        weights = self.weights
        loss = self.network(x, label)
        grads = self.grad(self.network, weights)(x, label, self.sens)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_seeding_a_float16_sensitivity_is_proven_and_a_wrong_seed_differs(tmp_path: Path) -> None:
    """On the float32 probe GRAPH mode failed in both versions ("Type Join Failed: dtype1 =
    Float16, dtype2 = Float32"): 9 sites of the zoos and two never-seen sets."""
    before, after = upgraded(HALF_SENS, tmp_path, target="2.8")
    assert_equal_in_graph_and_a_wrong_rewrite_differs(
        before, after, "loss is float16", "x, label, self.sens\n", "x, label, self.sens * 2\n"
    )


# A tutorial's functions that take their network (and its optimizer and loss) as arguments: the
# automatic harness seeded a tensor for `model`, and both versions failed (mindspore-ai/contrib's
# attack helpers, a federated paper's training functions).
FUNCTIONS_GIVEN_A_NETWORK = """\
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


def train_step(model, optimizer, criterion, images, labels):
    weights = optimizer.parameters
    grad_op = ops.GradOperation(get_by_list=True)

    def forward(x, y):
        return criterion(model(x), y)

    loss = forward(images, labels)
    grads = grad_op(forward, weights)(images, labels)
    optimizer(grads)
    return loss


def saliency(model, images):
    grad_op = ops.GradOperation()
    return grad_op(model)(images)
"""


def test_a_function_s_network_optimizer_and_criterion_parameters_are_planned_as_objects() -> None:
    after = migrate_text(FUNCTIONS_GIVEN_A_NETWORK, Version(2, 8)).text
    plans = {plan.name: plan for plan in differing_sites(FUNCTIONS_GIVEN_A_NETWORK, after)}
    step, saliency = plans["train_step"], plans["saliency"]
    assert (step.kind, step.inputs) == ("function", ("network", "optimizer", "criterion", "feature", "label"))
    assert (saliency.kind, saliency.inputs, saliency.network_inputs) == (
        "function",
        ("network", "feature"),
        1,
    )
    # A seed the function passes would have to be planned as a Cell's is; a starred call has no arity.
    header = "import mindspore.ops as ops\n\n\n"
    seeded = header + "def f(net, x, s):\n    return ops.GradOperation(sens_param=True)(net)(x, s)\n"
    starred = (
        header + "def f(net, x, y):\n    print(net(*[x, y]))\n    return ops.GradOperation()(net)(x, y)\n"
    )
    # A grad's weights get the probe's (a tensor there made the releases disagree: a false
    # "differs"); a parameter in another slot of a maker is not guessed at.
    given = "import mindspore as ms\nimport mindspore.ops as ops\n\n\ndef f(net, weights, x):\n"
    weighed = given + "    return ops.GradOperation(get_by_list=True)(net, weights)(x)\n"
    (plan,) = differing_sites(weighed, migrate_text(weighed, Version(2, 8)).text)
    assert plan.inputs == ("network", "weights", "feature"), plan
    positioned = (
        header + "def f(net, position, x):\n    return ops.GradOperation()(net)(x) + ms_grad(net, position)\n"
    )
    positioned = positioned.replace("ms_grad(net, position)", "ops.grad(net, position)(x)")
    (plan,) = differing_sites(positioned, migrate_text(positioned, Version(2, 8)).text)
    assert plan.kind == "none" and "passes position to a grad maker" in plan.problem, plan
    stopped = header + "def f(net, x):\n    return ops.GradOperation()(net)(ops.stop_gradient(x))\n"
    (plan,) = differing_sites(stopped, migrate_text(stopped, Version(2, 8)).text)
    assert plan.inputs == ("network", "feature"), plan  # stop_gradient makes no grad of `x`
    for legacy, problem in ((seeded, "seeds the gradient of net"), (starred, "starred")):
        (plan,) = differing_sites(legacy, migrate_text(legacy, Version(2, 8)).text)
        assert plan.kind == "none" and problem in plan.problem, plan


@pytest.mark.mindspore
def test_functions_given_their_network_are_proven_and_a_wrong_rewrite_of_each_differs(tmp_path: Path) -> None:
    before, after = upgraded(FUNCTIONS_GIVEN_A_NETWORK, tmp_path, target="2.8")
    code, data = verify_json(before, after, "--mode", "graph")
    assert code == 0, data
    assert {row["site"]: row["verdict"] for row in data["sites"]} == {
        "train_step": "equal",
        "saliency": "equal",
    }
    assert all("given the probe's network model" in row["detail"] for row in data["sites"]), data
    text = after.read_text()
    wrong = text.replace("(images, labels)\n    optimizer", "(images, labels * 2.0)\n    optimizer")
    wrong = wrong.replace("ms.grad(model)(images)", "ms.grad(model)(images * 2.0)")
    assert wrong.count("2.0") == 2, text
    after.write_text(wrong)
    _, data = verify_json(before, after, "--mode", "graph")
    assert {row["site"]: row["verdict"] for row in data["sites"]} == {
        "train_step": "differs",
        "saliency": "differs",
    }


# mindarmour's differentially private steps: the batch split into micro-batches, each one's
# gradient taken apart; the step refuses its default `micro_batches=None`.
MICRO_BATCHES = """\
import mindspore.nn as nn
import mindspore.ops as ops


class PrivateStep(nn.Cell):
    def __init__(self, network, optimizer, sens=1.0, micro_batches=None):
        super().__init__()
        if micro_batches is None:
            raise ValueError("micro_batches must be given")
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)
        self.split = ops.Split(0, micro_batches)
        self.micro_batches = micro_batches
        self.hyper_map = ops.HyperMap()
        self.add = ops.Add()

    def construct(self, data, label):
        datas = self.split(data)
        labels = self.split(label)
        loss = self.network(datas[0], labels[0])
        grads = self.grad(self.network, self.weights)(datas[0], labels[0])
        for index in range(1, self.micro_batches):
            loss = self.network(datas[index], labels[index])
            more = self.grad(self.network, self.weights)(datas[index], labels[index])
            grads = self.hyper_map(self.add, grads, more)
        self.optimizer(grads)
        return loss
"""


@pytest.mark.mindspore
def test_a_step_of_micro_batches_is_proven_and_a_wrong_rewrite_differs(tmp_path: Path) -> None:
    """Given no value for `micro_batches`, both versions raised; on micro-batches of 3 the
    probe's dropout took a mask for 6 ("For 'Mul', input1.shape and input2.shape need to
    broadcast")."""
    before, after = upgraded(MICRO_BATCHES, tmp_path, target="2.8")
    assert_equal_in_graph_and_a_wrong_rewrite_differs(
        before, after, "", "    datas[index], labels[index]\n", "    datas[index] * 2.0, labels[index]\n"
    )


# UniSiam's step: two views joined into one batch of twice the probe's size before the network.
JOINED_VIEWS = """\
import mindspore.nn as nn
import mindspore.ops as ops


class TrainOneStep(nn.Cell):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, images1, images2):
        def forward_fn(images1, images2):
            images = ops.Concat(axis=0)((images1, images2))
            return self.model(images)

        loss = forward_fn(images1, images2)
        grads = self.grad(forward_fn, self.weights)(images1, images2)
        loss = ops.depend(loss, self.optimizer(grads))
        return loss
"""


@pytest.mark.mindspore
def test_a_step_that_joins_two_batches_is_proven_and_a_wrong_rewrite_differs(tmp_path: Path) -> None:
    """The probe's counted dropout had a mask for one batch ("For 'Mul', input1.shape and
    input2.shape need to broadcast" on the twelve rows)."""
    before, after = upgraded(JOINED_VIEWS, tmp_path, target="2.8")
    assert_equal_in_graph_and_a_wrong_rewrite_differs(
        before,
        after,
        "",
        "(images1, images2)\n        loss = ops",
        "(images1, images2 * 2.0)\n        loss = ops",
    )
