"""Speed never changes results: one tree checked and upgraded (--dry-run) serially, with two
workers and from a warm cache gives the same findings, the same diff and the same exit code."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ms_migrate.application import runner
from ms_migrate.application.collector import RUN_THRESHOLDS
from ms_migrate.core import parsing
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES

NOTEBOOKS = Path(__file__).parent / "notebooks"
PLAIN = "import numpy as np\n\n\ndef scale(x):\n    return np.sum(x) * 2\n"
# MS101 needs the train step's network class, which another file builds: the step's result
# depends on networks.py and train.py, not on its own bytes only.
NETWORKS = (
    "import mindspore.nn as nn\n\n\nclass StarLoss(nn.Cell):\n    def construct(self, *inputs):\n"
    "        return inputs[0]\n"
)
TRAIN = (
    "from src.networks import StarLoss\nfrom src.step import TrainStep\n\n"
    "step = TrainStep(StarLoss(), None)\n"
)
STEP = """import mindspore.nn as nn
from mindspore.ops import composite as C


class TrainStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True)

    def construct(self, *inputs):
        loss = self.network(*inputs)
        grads = self.grad(self.network, self.optimizer.parameters)(*inputs)
        self.optimizer(grads)
        return loss
"""


def build_tree(root: Path) -> Path:
    """About 40 files: every third MS101 fixture (refusals among them), the downgrade fixtures,
    a notebook, a three-file project and files no rule reads. Not the syntax-error fixture: a file
    that fails to parse is reported afresh on every run (its error is not cached), which the
    reruns below would count as a parse."""
    root.mkdir(parents=True, exist_ok=True)
    inputs = sorted(
        path
        for path in (FIXTURES / "ms101").glob("*.py")
        if not path.name.endswith(".expected.py") and path.name != "syntax_error.py"
    )
    for path in [*inputs[::3], *(FIXTURES / "downgrade").glob("*_1_9.py")]:
        shutil.copy(path, root / path.name)
    shutil.copy(NOTEBOOKS / "tutorial.ipynb", root / "tutorial.ipynb")
    (root / "src").mkdir()
    for name, text in {"__init__.py": "", "networks.py": NETWORKS, "step.py": STEP}.items():
        (root / "src" / name).write_text(text)
    (root / "train.py").write_text(TRAIN)
    for index in range(10):
        (root / f"plain_{index}.py").write_text(PLAIN)
    return root


def run(*args: str) -> tuple[int, str, str]:
    result: Result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_jobs_and_a_warm_cache_give_the_results_of_a_serial_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pools: list[list[Any]] = []  # per pool started, the items it was given

    def counted(task: Any, items: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
        given: list[Any] = []
        pools.append(given)

        def counting() -> Iterator[Any]:
            for item in items:
                given.append(item)
                yield item

        return map_in_workers(task, counting(), *args, **kwargs)

    map_in_workers = runner.map_in_workers
    monkeypatch.setattr(runner, "map_in_workers", counted)
    monkeypatch.setattr(runner, "available_cores", lambda: 2)  # -j 2 starts a pool on any machine
    tree = build_tree(tmp_path)
    for command in (["check"], ["upgrade", "--dry-run"]):
        options = [*command, "--target-version", "2.8"]
        serial = run(*options, "-j", "1", "--no-cache", str(tree))
        assert serial[1], "the tree must give findings or a diff to compare"
        assert run(*options, "-j", "2", "--no-cache", str(tree)) == serial
        # Only the files some rule's prefilter lets through go to the workers.
        assert len(pools) == 1 and 4 <= len(pools[0]) < 40, pools
        pools.clear()
        # Each fills the cache (in workers): check's entries hold findings only, no fixes, so
        # upgrade keeps its own.
        assert run(*options, "-j", "2", str(tree)) == serial
        assert len(pools) == 1, pools
        pools.clear()
        parsed = parsing.prechecks
        assert run(*options, "-j", "1", str(tree)) == serial  # from the cache
        assert parsing.prechecks == parsed, "a rerun over an unchanged tree parsed a file"
        assert run(*options, str(tree)) == serial  # the default: every core, from the cache
        assert pools == [], "a run with nothing to parse started workers"


def _contents(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_upgrade_writes_the_same_files_from_the_cache(tmp_path: Path) -> None:
    original = build_tree(tmp_path / "original")
    cached, fresh = tmp_path / "cached", tmp_path / "fresh"
    shutil.copytree(original, cached)
    shutil.copytree(original, fresh)
    options = ["--target-version", "2.8", "-j", "1"]
    run("upgrade", "--dry-run", *options, str(cached))  # fills the cache
    parsed = parsing.prechecks
    code = run("upgrade", *options, str(cached))[0]
    assert parsing.prechecks == parsed, "the rewrites came from the cache"
    assert code == run("upgrade", *options, "--no-cache", str(fresh))[0]
    assert _contents(cached) == _contents(fresh) != _contents(original)


def test_a_run_paces_the_collector_and_gives_the_callers_pace_back(tmp_path: Path) -> None:
    """Trees are collected less often during a run (ms_migrate.application.collector), and a process that runs
    the tool as a library gets its own thresholds back, also when it stops reading early."""
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import mindspore.ops as ops\nx = ops.Gelu()\n")
    paths = sorted(tmp_path.iterdir())
    own = (900, 11, 12)
    before = gc.get_threshold()
    gc.set_threshold(*own)
    try:
        outcomes = runner.upgrade_files(paths, Version.parse("2.10"), write=False)
        next(outcomes)
        assert gc.get_threshold() == RUN_THRESHOLDS
        outcomes.close()
        assert gc.get_threshold() == own
        assert len(list(runner.upgrade_files(paths, Version.parse("2.10"), write=False))) == 2
        assert gc.get_threshold() == own
    finally:
        gc.set_threshold(*before)
