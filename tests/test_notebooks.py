"""Notebooks: code cells are migrated together; magics, other cells and the JSON layout survive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from ms_migrate import sources
from ms_migrate.cli import main
from ms_migrate.notebooks import parse_notebook

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
    assert "tutorial.ipynb:cell 3:7:1: MS101" in result.output
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


def test_unrelated_notebook_in_another_layout_is_no_error(tmp_path: Path) -> None:
    notebook = tmp_path / "plots.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": ["x = 1\n"]}]}, indent=2))
    result = CliRunner().invoke(main, ["upgrade", str(tmp_path)])
    assert result.exit_code == 0, result.output


def test_upgrade_verify_never_runs_a_notebook(tmp_path: Path) -> None:
    notebook = tmp_path / "tutorial.ipynb"
    shutil.copy(TUTORIAL, notebook)
    held = CliRunner().invoke(main, ["upgrade", "--verify", "--target-version", "2.8", str(notebook)])
    assert held.exit_code == 2 and "notebooks are not verified by execution" in held.output
    assert notebook.read_bytes() == TUTORIAL.read_bytes()
    forced = CliRunner().invoke(
        main, ["upgrade", "--verify", "--allow-unverified", "--target-version", "2.8", str(notebook)]
    )
    assert forced.exit_code == 0 and "value_and_grad" in notebook.read_text(encoding="utf-8")


def test_continuation_lines_starting_like_magics_stay_python() -> None:
    from ms_migrate.notebooks import parse_notebook

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
    assert f"{notebook}:cell 1:2:19: MS202" in result.output, result.output


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
