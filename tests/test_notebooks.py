"""Notebooks: code cells are migrated together; magics, other cells and the JSON layout survive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.files import sources
from ms_migrate.files.notebooks import parse_notebook
from ms_migrate.frontends.cli import main

TUTORIAL = Path(__file__).parent / "notebooks" / "tutorial.ipynb"


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_virtual_text_round_trips_byte_for_byte() -> None:
    text = TUTORIAL.read_text(encoding="utf-8")
    notebook = parse_notebook(text)
    assert notebook.with_virtual_text(notebook.virtual_text()) == text


def test_notebook_upgrade_rewrites_code_cells_only(tmp_path: Path) -> None:
    notebook = tmp_path / "lesson" / "tutorial.ipynb"
    notebook.parent.mkdir()
    shutil.copy(TUTORIAL, notebook)
    checkpoint = tmp_path / "lesson" / ".ipynb_checkpoints" / "tutorial-checkpoint.ipynb"
    checkpoint.parent.mkdir()
    shutil.copy(TUTORIAL, checkpoint)
    before = cells(notebook)

    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "tutorial.ipynb:cell 4:7:1: MS101" in result.output
    after = cells(notebook)
    assert len(after) == len(before)
    assert "".join(after[1]["source"]) == (
        "!pip install mindspore==1.9\n%matplotlib inline\nimport mindspore as ms\nimport mindspore.nn as nn"
    )
    code = "".join("".join(after[3]["source"]).split())  # the call may be split to fit 88 columns
    assert "loss,grads=ms.value_and_grad(self.network,None,self.optimizer.parameters)(x,y)" in code
    for index in (0, 2, 4):
        assert after[index] == before[index]
    assert {key: value for key, value in after[3].items() if key != "source"} == {
        key: value for key, value in before[3].items() if key != "source"
    }
    written = notebook.read_text(encoding="utf-8")
    assert written.endswith("}\n") and '\n "cells": [\n' in written and "训练教程" in written
    assert checkpoint.read_bytes() == TUTORIAL.read_bytes()

    again = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(notebook)])
    assert again.exit_code == 0 and "---" not in again.output


def test_notebook_in_another_json_layout_is_left_alone(tmp_path: Path) -> None:
    notebook = tmp_path / "escaped.ipynb"
    document = json.loads(TUTORIAL.read_text(encoding="utf-8"))
    notebook.write_text(json.dumps(document, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    original = notebook.read_bytes()
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(notebook)])
    assert result.exit_code == 2
    assert "unusual JSON layout" in result.output
    assert notebook.read_bytes() == original
    # The preview says the same: not "would change" (exit 1), but cannot be written (exit 2).
    preview = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(notebook)])
    assert preview.exit_code == 2 and "unusual JSON layout" in preview.output and "+++" not in preview.output


def test_broken_notebook_is_reported(tmp_path: Path) -> None:
    notebook = tmp_path / "broken.ipynb"
    notebook.write_text('{"cells": [', encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 2 and "not valid notebook JSON" in result.output
    assert [path.name for path in sources.discover([tmp_path])] == ["broken.ipynb"]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (["import mindspore\n"], "cell 1 is not an object"),
        ([{"source": ["import mindspore\n"]}], "cell 1 has no cell_type"),
        ([{"cell_type": "markdown", "source": "x"}, {"cell_type": "code"}], "code cell 2 has no source"),
    ],
    ids=["cell-not-an-object", "no-cell-type", "code-cell-without-source"],
)
def test_a_malformed_cell_is_said_not_skipped(tmp_path: Path, cells: list, message: str) -> None:
    """nbformat requires every cell to be an object with a cell_type, and a code cell a source:
    a notebook without them is broken (exit 2, named), not one without code."""
    (tmp_path / "odd.ipynb").write_text(json.dumps({"nbformat": 4, "metadata": {}, "cells": cells}))
    result = CliRunner().invoke(main, ["check", "--target-version", "2.10", str(tmp_path)])
    assert result.exit_code == 2 and f"odd.ipynb: not a notebook: {message}" in result.output


def test_unrelated_notebook_in_another_layout_is_no_error(tmp_path: Path) -> None:
    notebook = tmp_path / "plots.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1\n"]}]}, indent=2))
    result = CliRunner().invoke(main, ["upgrade", str(tmp_path)])
    assert result.exit_code == 0, result.output


@pytest.mark.mindspore
def test_upgrade_verify_runs_a_notebook_s_definitions_only(tmp_path: Path) -> None:
    """The train step of a notebook is verified on the cells' definitions: the cell that would
    train (here: write a file) never runs, and the proven rewrite is written into the notebook."""
    notebook = tmp_path / "tutorial.ipynb"
    marker = tmp_path / "trained.txt"
    document = json.loads(TUTORIAL.read_text(encoding="utf-8"))
    training = f"with open({str(marker)!r}, 'w') as log:\n    log.write('the training cell ran')\n"
    document["cells"].append(
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": training.splitlines(keepends=True),
        }
    )
    notebook.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["upgrade", "--verify", "--target-version", "2.10", str(notebook)])
    assert result.exit_code == 0, result.output
    # Rows name the cell, as findings do.
    assert "TrainStep (cell 4:1)" in result.output and "equal" in result.output, result.output
    assert "value_and_grad" in notebook.read_text(encoding="utf-8")
    assert not marker.exists()


STARRED_STEP_CELLS = (
    "import mindspore.nn as nn\nimport mindspore.ops as ops\n",
    "class Net(nn.Cell):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Dense(4, 2)\n"
    "\n"
    "    def construct(self, x):\n"
    "        return self.fc(x)\n",
    "class StarredStep(nn.Cell):\n"
    "    def __init__(self, network, optimizer):\n"
    "        super().__init__()\n"
    "        self.network = network\n"
    "        self.optimizer = optimizer\n"
    "        self.weights = optimizer.parameters\n"
    "        self.grad = ops.GradOperation(get_by_list=True)\n"
    "\n"
    "    def construct(self, *inputs):\n"
    "        loss = self.network(*inputs)\n"
    "        grads = self.grad(self.network, self.weights)(*inputs)\n"
    "        self.optimizer(grads)\n"
    "        return loss\n",
    "net = Net()\n"
    "optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)\n"
    "step = StarredStep(nn.WithLossCell(net, nn.MSELoss()), optimizer)\n",
)


@pytest.mark.mindspore
def test_a_notebook_s_step_runs_on_the_network_its_other_cells_build(tmp_path: Path) -> None:
    """A step passing `*inputs` is converted because a cell builds it over `nn.WithLossCell`,
    whose construct takes two inputs. Verify imports the definitions only, but knows the network
    from every cell: it runs the two-input probe, equal in GRAPH mode, not a `*inputs` network
    (which GRAPH mode's grad refuses, and which made the proven rewrite look wrong)."""
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in STARRED_STEP_CELLS
    ]
    notebook = tmp_path / "starred.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = CliRunner().invoke(main, ["upgrade", "--verify", "--target-version", "2.10", str(notebook)])
    assert result.exit_code == 1 and "1 site converted" in result.output, result.output  # MSN001 stays
    rows = [line.split() for line in result.output.splitlines() if "StarredStep (cell 3:1)" in line]
    assert {(row[3], row[-1]) for row in rows} == {("pynative", "equal"), ("graph", "equal")}, result.output
    written = notebook.read_text(encoding="utf-8")
    assert "GradOperation" not in written and ".grad(self.network, None, self.weights)" in written


def test_a_notebook_s_definitions_keep_their_lines_and_drop_what_runs() -> None:
    from ms_migrate.verify.definitions import definitions_text

    cells = (
        "import mindspore.nn as nn\n"
        "import numpy as np\n"
        "from mindspore.ops import composite as C\n"
        "from easydict import EasyDict as edict\n"
        "BATCH = 32\n"
        "clip_grad = C.MultitypeFuncGraph('clip_grad')\n"
        "cfg = edict({'lr': 0.1})\n"
        "config = {'lr': 0.1, 'sizes': (BATCH, 4)}\n"
        "dataset = create_dataset(BATCH)\n"
        "try:\n    import cv2\nexcept ImportError:\n    cv2 = None\n"
        "@clip_grad.register('Number', 'Tensor')\ndef _clip(value, grad):\n    return grad\n"
        "@cfg.register('Tensor')\ndef _unregistered(grad):\n    return grad\n"
        "mae = clip_grad.eval()\n"
        "def decorated(cls):\n    return cls\n"
        "@decorated\nclass Step(nn.Cell):\n    pass\n"
        "@registered(cfg)\nclass Unregistered(nn.Cell):\n    pass\n"
        "def scaled(x, lr=cfg.lr):\n    return x * lr\n"
        "rate = cfg.lr * 2\n"
        "args.device_id = 1\n"
        "list = load_images()\n"
        "img = np.concatenate(list)\n"
        "for epoch in range(10):\n    train(epoch)\n"
        "model.train(1, dataset)\n"
    )
    kept = definitions_text(cells)
    assert kept.count("\n") == cells.count("\n")
    assert "BATCH = 32" in kept and "config = {" in kept and "import cv2" in kept and "class Step" in kept
    assert "clip_grad = C.MultitypeFuncGraph" in kept  # a MindSpore object a Cell registers with
    # Its registrations are kept with it (tinybert's `grad_scale` had none, and both versions
    # failed: "cannot find fn match given args"); one on an object left out is not.
    assert "def _clip" in kept and "def _unregistered" not in kept
    assert "mae =" not in kept  # a kept object called outside a decorator computes (MAE's eval)
    assert "create_dataset" not in kept and "train(" not in kept and "for epoch" not in kept
    assert "edict({" not in kept  # another library's call may read files: left out
    # What reads a name left out, when it is defined, is left out too (it would fail the import).
    assert "registered" not in kept and "Unregistered" not in kept
    assert "def scaled" not in kept and "rate =" not in kept and "args.device_id" not in kept
    assert "np.concatenate" not in kept  # `list` is not the builtin there
    assert definitions_text("def broken(:\n") == "def broken(:\n"


def test_continuation_lines_starting_like_magics_stay_python() -> None:
    from ms_migrate.files.notebooks import parse_notebook

    source = [
        "ok = (a\n",
        "      != b)\n",
        "y = 10 \\\n",
        "    % 3\n",
        'doc = """\n',
        "!not a magic inside a string\n",
        '"""\n',
        "!pip install mindspore\n",
        "%time f()",
    ]
    notebook = parse_notebook(json.dumps({"cells": [{"cell_type": "code", "source": source}]}, indent=1))
    text = notebook.virtual_text()
    assert "      != b)" in text and "    % 3" in text and "!not a magic inside a string" in text
    assert "# ms-migrate magic: !pip install mindspore" in text and "# ms-migrate magic: %time f()" in text
    compile(text.replace("%time", "time"), "<cell>", "exec")


def test_lint_findings_in_a_notebook_point_at_their_cell(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "source": ["import mindspore as ms\n"]},
        {"cell_type": "code", "source": ["x = 1\n", "fn = ms.grad(net, position=0)\n"]},
    ]
    notebook = tmp_path / "lint.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = CliRunner().invoke(main, ["check", "--target-version", "2.10", str(notebook)])
    assert result.exit_code == 1
    assert f"{notebook}:cell 2:2:19: MS202" in result.output, result.output


def test_a_future_import_opening_a_later_cell_is_kept_and_the_cell_still_migrates(tmp_path: Path) -> None:
    # IPython compiles each cell alone: `from __future__` may open any cell. Joined with the
    # cells above it, it would be a syntax error.
    document = json.loads(TUTORIAL.read_text(encoding="utf-8"))
    document["cells"][3]["source"].insert(0, "from __future__ import annotations\n")
    notebook = tmp_path / "future.ipynb"
    notebook.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert parse_notebook(notebook.read_text(encoding="utf-8")).with_virtual_text(
        parse_notebook(notebook.read_text(encoding="utf-8")).virtual_text()
    ) == notebook.read_text(encoding="utf-8")

    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(notebook)])
    assert result.exit_code == 0, result.output
    source = "".join(cells(notebook)[3]["source"])
    assert source.startswith("from __future__ import annotations\n")
    assert "ms.value_and_grad(" in source


def _write_notebook(path: Path, sources: list[list[str]]) -> Path:
    """A notebook as Jupyter writes it: a markdown cell first, then one code cell per source."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Lesson\n"]}]
    cells += [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
        for source in sources
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_cell_numbers_count_from_one_as_jupyter_and_ruff_do(tmp_path: Path) -> None:
    # Cell 1 is markdown; the grad call is on line 2 of cell 3.
    notebook = _write_notebook(
        tmp_path / "lint.ipynb",
        [["import mindspore as ms\n"], ["x = 1\n", "fn = ms.grad(net, position=0)\n"]],
    )
    text = CliRunner().invoke(main, ["check", "--target-version", "2.10", str(notebook)])
    assert f"{notebook}:cell 3:2:19: MS202" in text.output, text.output
    found = CliRunner().invoke(main, ["check", "--format", "json", "--target-version", "2.10", str(notebook)])
    assert [item["location"] for item in json.loads(found.stdout)["findings"]] == ["cell 3:2"]
    assert parse_notebook(notebook.read_text(encoding="utf-8")).cell_of_line(1) == (2, 0)  # its marker


WGAN_DOWNLOAD = [
    "import os\n",
    "if not os.path.exists('./data'):\n",
    "    !wget -N https://example.com/lsun.zip\n",
    "    !unzip lsun.zip -d ./data\n",
    "else:\n",
    "    %ls ./data\n",
    "for name in ('a', 'b'):\n",
    "    if name:\n",
    "        !echo {name}\n",
    "%matplotlib inline",
]
LEGACY_STEP = [
    "import mindspore as ms\n",
    "from mindspore.ops import composite as C\n",
    "grad_op = C.GradOperation(get_by_list=True)\n",
    "\n",
    "\n",
    "def train_step(x, y):\n",
    "    return grad_op(net, weights)(x, y)",
]


def test_indented_magics_are_masked_in_their_block_and_written_back_as_they_were(tmp_path: Path) -> None:
    # mindspore-courses' wgan.ipynb downloads its data with `!wget` inside an `if`: the only line
    # of the block, so a comment there left an `if` without a body, a syntax error.
    notebook = _write_notebook(tmp_path / "wgan.ipynb", [WGAN_DOWNLOAD, LEGACY_STEP])
    original = notebook.read_text(encoding="utf-8")
    parsed = parse_notebook(original)
    virtual = parsed.virtual_text()
    compile(virtual, "<notebook>", "exec")
    assert "    pass  # ms-migrate magic: !wget -N https://example.com/lsun.zip" in virtual
    assert "        pass  # ms-migrate magic: !echo {name}" in virtual
    assert "\n# ms-migrate magic: %matplotlib inline" in virtual  # at the top level, a comment
    assert parsed.with_virtual_text(virtual) == original

    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.8", str(notebook)])
    assert result.exit_code == 0, result.output
    written = cells(notebook)
    assert written[1]["source"] == WGAN_DOWNLOAD
    assert "ms.grad(net, None, weights)(x, y)" in "".join(written[2]["source"])


def test_an_indented_magic_above_all_code_stays_a_comment() -> None:
    # IPython drops a cell's leading indent; `pass` there would be an unexpected indent.
    notebook = parse_notebook(json.dumps({"cells": [{"cell_type": "code", "source": ["  !ls\n", "x = 1"]}]}))
    assert notebook.virtual_text() == "# %% ms-migrate cell 0\n  # ms-migrate magic: !ls\nx = 1\n"


def test_a_syntax_error_names_its_cell_counted_from_one(tmp_path: Path) -> None:
    broken = ["if ready:\n", "    !wget https://example.com/data.zip\n", "x = = 1\n"]
    notebook = _write_notebook(tmp_path / "broken.ipynb", [LEGACY_STEP, broken])
    result = CliRunner().invoke(main, ["check", "--target-version", "2.8", str(notebook)])
    assert result.exit_code == 2
    assert f"{notebook}:cell 3:3: syntax error" in result.output, result.output


def test_dry_run_shows_one_diff_per_changed_cell_numbered_within_it(tmp_path: Path) -> None:
    notebook = tmp_path / "tutorial.ipynb"
    shutil.copy(TUTORIAL, notebook)
    result = CliRunner().invoke(main, ["upgrade", "--dry-run", "--target-version", "2.8", str(notebook)])
    assert result.exit_code == 1, result.output
    headers = [line for line in result.stdout.splitlines() if line.startswith(("---", "+++", "@@"))]
    assert headers[:3] == [f"--- {notebook}:cell 2", f"+++ {notebook}:cell 2", "@@ -1,4 +1,4 @@"]
    assert headers[3:5] == [f"--- {notebook}:cell 4", f"+++ {notebook}:cell 4"]
    assert headers[5].startswith("@@ -4,")  # the GradOperation line is line 7 of its cell
    # What the notebook shows: magics as written, no cell markers, no end-of-file remark.
    assert " !pip install mindspore==1.9\n" in result.stdout and "ms-migrate" not in result.stdout
    assert "No newline" not in result.stdout


def test_a_relative_notebook_path_gets_a_and_b_prefixes() -> None:
    from ms_migrate.reporting.report import unified_diff

    text = TUTORIAL.read_text(encoding="utf-8")
    virtual = parse_notebook(text).virtual_text()
    diff = unified_diff("lesson/tutorial.ipynb", virtual, virtual.replace("import mindspore.nn", "import x"))
    assert diff.splitlines()[:2] == [
        "--- a/lesson/tutorial.ipynb:cell 2",
        "+++ b/lesson/tutorial.ipynb:cell 2",
    ]


def test_an_import_the_rewrite_adds_goes_to_the_cell_that_imports_not_above_the_first(
    tmp_path: Path,
) -> None:
    """A notebook that opens with a `!pip install` cell: the import a fix needs (`import mindspore
    as ms` for set_device) goes at the top of the first cell that imports, so it runs after the
    install, not in front of the first cell (which used to leave the notebook unchanged)."""
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Setup\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["version = '2.10'\n", "!pip install mindspore==$version"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": [
                "import time\n",
                "from mindspore import context\n",
                "\n",
                "context.set_context(mode=context.GRAPH_MODE, device_target='CPU')",
            ],
        },
    ]
    notebook = tmp_path / "setup.ipynb"
    notebook.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}, indent=1) + "\n"
    )
    result = CliRunner().invoke(main, ["upgrade", "--target-version", "2.10", str(notebook)])
    assert result.exit_code == 0, result.output
    written = json.loads(notebook.read_text())["cells"]
    assert written[1]["source"] == cells[1]["source"]  # the install cell is as it was
    assert "".join(written[2]["source"]).startswith("import mindspore as ms\nimport time\n")
    assert "ms.set_device('CPU')" in "".join(written[2]["source"]) or 'ms.set_device("CPU")' in "".join(
        written[2]["source"]
    )
