"""`set_context(device_target=..., device_id=...)` split into `set_context(...)` + `set_device(...)`
(MS210): which calls split, and why the others are left with a reason."""

from __future__ import annotations

import pytest

from ms_migrate.core.engine import run_rules
from ms_migrate.facts.versions import Version
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
        "    ms.set_context(device_id=get_device_id())"
    )
    assert _upgraded(text)[0] == "def main(target):\n    ms.set_device(target, get_device_id())\n"


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
