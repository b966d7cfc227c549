"""Output that passes the linters the input passed: users run ruff (or flake8 and isort) in
pre-commit, and a migration that breaks their lint gets reverted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from tests.fixture_cases import fixture_cases

RUFF = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--quiet"]
# pycodestyle E3 (blank lines: E306 before a nested def) is a preview rule in ruff.
SELECT = ["--preview", "--select", "E,W,F,I"]
CONVERTING = [case for case in fixture_cases() if case.expected is not None]


def ruff_findings(path: Path) -> str:
    """ruff's findings with its default settings (line length 88, isort order); '' when clean."""
    # `_harness` is first-party to the fixtures; name it so isort sorts it as it would in place.
    command = [*RUFF, *SELECT, "--config", "lint.isort.known-first-party = ['_harness']", str(path)]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=path.parent)
    return completed.stdout if completed.returncode else ""


def test_some_fixture_inputs_are_lint_clean() -> None:
    assert sum(not ruff_findings(case.source) for case in CONVERTING) >= 10


@pytest.mark.parametrize("case", CONVERTING, ids=[case.id for case in CONVERTING])
def test_a_clean_input_gives_a_clean_output(case, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if ruff_findings(case.source):
        pytest.skip("the input itself has lint findings")
    output = tmp_path / case.source.name
    output.write_bytes(case.expected.read_bytes())
    assert ruff_findings(output) == ""


def test_the_new_import_goes_where_isort_puts_it(tmp_path: Path) -> None:
    source = (
        "import os\n\n"
        "import mindspore.nn as nn\n"
        "from mindspore import ParameterTuple\n"
        "from mindspore.ops import composite as C\n\n\n"
        "class Step(nn.Cell):\n"
        "    def __init__(self, network):\n"
        "        super().__init__()\n"
        "        self.network = network\n"
        "        self.weights = ParameterTuple(network.trainable_params())\n"
        "        # the backward op\n"
        "        self.grad = C.GradOperation(get_by_list=True)  # noqa: E501\n\n"
        "    def construct(self, x):\n"
        "        loss = self.network(x)\n"
        "        grads = self.grad(self.network, self.weights)(x)\n"
        "        return loss, grads, os.sep\n"
    )
    result = migrate_text(source, Version(2, 8))
    assert result.text.startswith(
        "import os\n\nimport mindspore as ms\nimport mindspore.nn as nn\n"
        "from mindspore import ParameterTuple\n"
    )
    # The creation's comment and pragma described it; they go with it.
    assert "the backward op" not in result.text and "noqa" not in result.text
    path = tmp_path / "step.py"
    path.write_text(result.text)
    assert ruff_findings(path) == ""
