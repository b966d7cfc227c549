"""`set_context(device_target=..., device_id=...)` split into `set_context(...)` + `set_device(...)`
(MS210): which calls split, and why the others are left with a reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.core.engine import run_rules
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.rules.ms210_deprecated_api import DeprecatedApi

HEAD = "import os\nimport mindspore as ms\nfrom utils import get_device_id\n\n"


def _upgraded(line: str) -> tuple[str, list[str]]:
    result = run_rules(HEAD + line + "\n", Version(2, 10), [DeprecatedApi()])
    return result.text[len(HEAD) :], [item.message for item in result.diagnostics]


@pytest.mark.parametrize(
    ("line", "split"),
    [
        (
            'ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend", device_id=get_device_id())',
            'ms.set_context(mode=ms.GRAPH_MODE)\nms.set_device("Ascend", get_device_id())\n',
        ),
        (
            'ms.set_context(device_target=args.device_target, device_id=int(os.getenv("DEVICE_ID", "0")))',
            'ms.set_device(args.device_target, int(os.getenv("DEVICE_ID", "0")))\n',
        ),
    ],
)
def test_a_computed_device_argument_splits(line: str, split: str) -> None:
    assert _upgraded(line)[0] == split


@pytest.mark.parametrize(
    ("line", "why"),
    [
        # split, the id would be read after set_context(mode=...) has run
        (
            'ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU", device_id=ms.get_context("device_id"))',
            "a device argument that may read MindSpore's context",
        ),
        (
            'ms.set_context(mode=pick_mode(), device_target="CPU", device_id=get_device_id())',
            "an argument that is computed in the call",
        ),
    ],
)
def test_a_device_argument_that_may_see_the_other_keys_is_left(line: str, why: str) -> None:
    text, messages = _upgraded(line)
    assert text == line + "\n"
    assert any(f"(not fixed: {why})" in message for message in messages), messages


TARGET_THEN_ID = """\
ms.set_context(mode=ms.GRAPH_MODE, device_target=args.device_target)
if args.device_target == "Ascend":
    ms.set_context(device_id=args.device_id)
"""


def test_the_target_then_the_id_under_an_if_becomes_one_set_device_per_path() -> None:
    assert _upgraded(TARGET_THEN_ID.rstrip("\n"))[0] == (
        "ms.set_context(mode=ms.GRAPH_MODE)\n"
        'if args.device_target == "Ascend":\n'
        "    ms.set_device(args.device_target, args.device_id)\n"
        "else:\n"
        "    ms.set_device(args.device_target)\n"
    )


def test_the_target_then_the_id_right_after_become_one_set_device() -> None:
    text = (
        "def main(target):\n"
        "    ms.set_context(device_target=target)\n"
        "    ms.set_context(device_id=get_device_id())\n\n\n"
        'main("Ascend")'
    )
    assert (
        _upgraded(text)[0]
        == 'def main(target):\n    ms.set_device(target, get_device_id())\n\n\nmain("Ascend")\n'
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (TARGET_THEN_ID.replace('== "Ascend"', "in supported()"), "the condition around the second call"),
        (TARGET_THEN_ID + "elif args.device_target == 'GPU':\n    pass\n", "an elif follows"),
        (TARGET_THEN_ID.replace("\nif", "\nprint(1)\nif"), "sets the device 2 times"),
        (TARGET_THEN_ID + "ms.set_context(device_id=1)\n", "sets the device 3 times"),
    ],
)
def test_two_device_settings_that_are_not_the_pair_are_left(text: str, why: str) -> None:
    upgraded, messages = _upgraded(text.rstrip("\n"))
    assert upgraded == text
    assert messages and all(why in message for message in messages if "device" in message), messages


def test_an_if_that_does_more_and_an_else_that_is_there_take_set_device_too() -> None:
    text = (
        TARGET_THEN_ID.replace("device_id=args.device_id", "device_id=args.device_id, save_graphs=False")
        + "    init()\nelse:\n    pass\n"
    )
    assert _upgraded(text.rstrip("\n"))[0] == (
        "ms.set_context(mode=ms.GRAPH_MODE)\n"
        'if args.device_target == "Ascend":\n'
        "    ms.set_context(save_graphs=False)\n"
        "    ms.set_device(args.device_target, args.device_id)\n"
        "    init()\n"
        "else:\n"
        "    ms.set_device(args.device_target)\n"
        "    pass\n"
    )


EXCLUSIVE = """\
if args.device_target == "Ascend":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="Ascend", device_id=get_device_id())
elif args.device_target == "GPU":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="GPU")
else:
    ms.set_context(device_target="CPU")
"""


def test_device_settings_on_exclusive_branches_are_each_split() -> None:
    assert _upgraded(EXCLUSIVE.rstrip("\n"))[0] == (
        'if args.device_target == "Ascend":\n'
        "    ms.set_context(mode=ms.GRAPH_MODE)\n"
        '    ms.set_device("Ascend", get_device_id())\n'
        'elif args.device_target == "GPU":\n'
        "    ms.set_context(mode=ms.GRAPH_MODE)\n"
        '    ms.set_device("GPU")\n'
        "else:\n"
        '    ms.set_device("CPU")\n'
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("for i in range(2):\n    ms.set_context(device_target='CPU', device_id=i)\n", "inside a loop"),
        (EXCLUSIVE + "ms.set_context(device_id=0)\n", "sets the device 4 times"),
    ],
)
def test_settings_a_run_may_reach_twice_are_left(text: str, why: str) -> None:
    upgraded, messages = _upgraded(text.rstrip("\n"))
    assert upgraded == text
    assert messages and all(why in message for message in messages if "device" in message), messages


# --- set_device must come before any kernel runs --------------------------------------------------

ARGS = """\
import argparse


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="CPU")
    return parser.parse_args()


"""


@pytest.mark.parametrize(
    "text",
    [
        # arguments parsed by the file's own function, MindSpore objects built (no kernel runs)
        ARGS + "args = get_args()\nargmax = ms.ops.Argmax(axis=1)\nms.set_context(device_target=args.device)",
        # in a function that the module calls once it has only defined things
        ARGS + "def main():\n    args = get_args()\n    ms.set_context(device_target=args.device)\n\n\n"
        'if __name__ == "__main__":\n    main()',
    ],
)
def test_a_device_set_before_anything_runs_takes_set_device(text: str) -> None:
    upgraded, messages = _upgraded(text)
    assert "ms.set_device(args.device)" in upgraded and "device_target" not in upgraded, messages


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # what a ReID trainer did: the model built (its __init__ ran a Tensor.view), then the device
        (
            "class Trainer:\n    def __init__(self, cfg):\n        self.model = build_model(cfg)\n"
            '        ms.set_context(mode=ms.PYNATIVE_MODE, device_target="GPU")',
            "line 7 calls `build_model` before it",
        ),
        (
            'x = ms.ops.ones((2, 2)) + 1\nms.set_context(device_target="CPU")',
            "line 5 calls `ms.ops.ones` before it",
        ),
        # the measured crash: a Tensor built, then an operator on it (no call to show the kernel)
        (
            'print(ms.Tensor([1.0, 2.0]) + 1)\nms.set_context(device_target="CPU")',
            "line 5 calls `ms.Tensor` before it",
        ),
        (
            'def setup():\n    ms.set_context(device_target="CPU")\n\n\nnet = Net()\nsetup()',
            "line 9 calls `Net` before it",
        ),
        (
            'def setup():\n    ms.set_context(device_target="CPU")',
            "`setup` is not called in this file, so another file may call it after one",
        ),
        (
            "from mindspore.communication import init\n\ninit()\n"
            'ms.set_context(device_target="Ascend", device_id=get_device_id())',
            "line 7 calls `init` before it",
        ),
    ],
)
def test_a_device_set_after_something_may_have_run_is_left(text: str, why: str) -> None:
    upgraded, messages = _upgraded(text)
    assert upgraded == text + "\n"
    reason = f"(not fixed: set_device must come before any kernel runs, and {why})"
    assert any(reason in message for message in messages), messages


@pytest.mark.mindspore
def test_set_device_after_a_kernel_raises_where_set_context_did_not(tmp_path: Path) -> None:
    """Why the rewrite waits for the device to be set first: the fact, on the MindSpore here."""
    pytest.importorskip("mindspore")
    script = tmp_path / "late.py"
    script.write_text(
        "import sys\nimport mindspore as ms\n\n"
        "print(ms.Tensor([1.0, 2.0]) + 1)\n"  # a kernel, and its result read
        "if sys.argv[1] == 'set_context':\n    ms.set_context(device_target='CPU', device_id=0)\n"
        "else:\n    ms.set_device('CPU', 0)\n"
    )
    ran = {
        way: subprocess.run([sys.executable, str(script), way], capture_output=True, text=True, timeout=300)
        for way in ("set_context", "set_device")
    }
    assert ran["set_context"].returncode == 0, ran["set_context"].stderr[-2000:]
    assert ran["set_device"].returncode != 0 and "runtime has been initialized" in ran["set_device"].stderr


@pytest.mark.parametrize(
    "before",
    [
        # libraries that do not import MindSpore: numpy, pandas, easydict, the standard library
        "np.random.seed(1)\npd.DataFrame({'a': [1]})\nsys.path.insert(0, '.')\ncfg = edict({'lr': 0.1})",
        "cfg = yaml.load(open('c.yaml'), Loader=yaml.FullLoader)",
    ],
)
def test_calls_into_libraries_that_do_not_import_mindspore_start_nothing(before: str) -> None:
    libraries = "import sys\nimport numpy as np\nimport pandas as pd\nimport yaml\n"
    libraries += "from easydict import EasyDict as edict\n"
    upgraded, messages = _upgraded(libraries + before + '\nms.set_context(device_target="CPU")')
    assert 'ms.set_device("CPU")' in upgraded, messages


def test_a_thread_may_run_a_kernel() -> None:
    text = 'import threading\n\nthread = threading.Thread(target=print)\nms.set_context(device_target="CPU")'
    upgraded, messages = _upgraded(text)
    assert upgraded == text + "\n"
    assert any("line 7 calls `threading.Thread` before it" in message for message in messages), messages


CONFIG = """\
import argparse
import time

from easydict import EasyDict as ed


def get_config():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="CPU")
    args = parser.parse_args()
    return ed({"device": args.device, "stamp": time.strftime("%H%M%S")})


class Config:
    def __init__(self, device="CPU"):
        self.device = device


class Derived(Config):
    def __init__(self):
        super().__init__("CPU")
        self.lr = 0.1


class Scaled(Config):
    def __init__(self):
        super().__init__()
        self.scale = Tensor([2.0]) * 2
"""

TRAIN = """\
import mindspore as ms
from src.config import {name}


def main():
    cfg = {name}()
    ms.set_context(mode=ms.GRAPH_MODE, device_target=cfg.device)


if __name__ == "__main__":
    main()
"""


def _project_upgraded(root: Path, name: str) -> tuple[str, list[str]]:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "config.py").write_text("from mindspore import Tensor\n" + CONFIG)
    train = root / "train.py"
    train.write_text(TRAIN.format(name=name))
    project = ProjectIndex(sorted(root.rglob("*.py")))
    result = run_rules(train.read_text(), Version(2, 10), [DeprecatedApi()], project, train)
    return result.text, [item.message for item in result.diagnostics]


@pytest.mark.parametrize("name", ["get_config", "Config", "Derived"])
def test_a_config_helper_of_another_file_is_read_there(tmp_path: Path, name: str) -> None:
    upgraded, messages = _project_upgraded(tmp_path, name)
    assert "ms.set_device(cfg.device)" in upgraded and "device_target" not in upgraded, messages


def test_a_class_of_another_file_whose_base_computes_is_left(tmp_path: Path) -> None:
    upgraded, messages = _project_upgraded(tmp_path, "Scaled")
    assert "device_target=cfg.device" in upgraded
    reason = "set_device must come before any kernel runs, and line 6 calls `Scaled` before it"
    assert any(reason in message for message in messages), messages


def test_without_the_project_a_helper_of_another_file_is_left() -> None:
    text, messages = _upgraded(
        "from src.config import get_config\n\ncfg = get_config()\nms.set_context(device_target=cfg.device)"
    )
    assert "device_target=cfg.device" in text
    assert any("calls `get_config` before it" in message for message in messages), messages


def test_a_cached_split_is_not_kept_once_the_helper_it_read_computes(tmp_path: Path) -> None:
    _project_upgraded(tmp_path, "get_config")

    def check() -> str:
        result = CliRunner().invoke(main, ["check", "-j", "1", "--target-version", "2.10", str(tmp_path)])
        return result.stdout

    assert "[*]" in check() and "[*]" in check()  # the second from the cache
    config = tmp_path / "src" / "config.py"
    config.write_text(config.read_text().replace("    return ed(", "    Tensor([1.0]) + 1\n    return ed("))
    assert "line 6 calls `get_config` before it" in check()
