"""A synthetic model zoo of any size, to show how the cost of a run grows with the tree.

Run: .venv/bin/python benchmarks/synthetic_tree.py OUT --files 4000 [--seed 0]

The mix follows mindspore-ai/models (8,526 files, 1.2M lines): about 2% of its files mention
GradOperation, a few use the functional API, and most hold no autodiff at all, though many say
`requires_grad` or `grad` somewhere (which lets them through some rules' byte prefilters). Here:

- 3% legacy train steps: the MS101 fixture inputs (tests/fixtures/ms101), converted or refused;
- 7% modern code: the fixtures' expected outputs (`value_and_grad` / `grad` train steps);
- 90% unrelated code of 20 to 400 lines: Cells without autodiff, data pipelines, utilities; a
  fifth of them mention `requires_grad`, and half call APIs that MindSpore 2.10 deprecates (a
  `set_context` key, `ops.cast`, `ops.TensorAdd`), as half of the zoo's files pass MS210's
  byte prefilter.

Files go 50 to a package (`pkg_0000/`), so folders look like a zoo's. The same arguments give
the same tree, byte for byte.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ms101"
PER_PACKAGE = 50
LEGACY_SHARE, MODERN_SHARE = 0.03, 0.07
_MAIN = re.compile(r"\n\nif __name__ == \"__main__\":\n.*", re.DOTALL)

HEADER = "import numpy as np\nimport mindspore.nn as nn\nimport mindspore.ops as ops\n"
CELL = '''

class Block{index}(nn.Cell):
    """A residual block, as model zoos write them."""

    def __init__(self, channels={channels}):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, pad_mode="same")
        self.bn = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()

    def construct(self, x):
        out = self.relu(self.bn(self.conv(x)))
        return ops.add(out, x)
'''
FUNCTION = '''

def transform_{index}(batch, size={size}):
    """Resize and normalise a batch (host side)."""
    images = np.asarray(batch, dtype=np.float32)
    images = images[:, :size, :size]
    mean = images.mean(axis=(1, 2), keepdims=True)
    std = images.std(axis=(1, 2), keepdims=True) + 1e-6
    return (images - mean) / std
'''
FROZEN = """

def freeze_{index}(network):
    for param in network.get_parameters():
        param.requires_grad = "backbone" not in param.name
    return network
"""
CONFIG = """

CONFIG_{index} = {{
    "lr": {lr},
    "epochs": {epochs},
    "batch_size": {batch},
    "momentum": 0.9,
}}
"""


def _fixtures() -> tuple[list[str], list[str]]:
    """Legacy inputs (converted or refused) and modern expected outputs, without their
    `__main__` blocks (which drive the equivalence tests)."""
    legacy, modern = [], []
    for path in sorted(FIXTURES.glob("*.py")):
        if path.name.endswith(".expected.py"):
            modern.append(_MAIN.sub("\n", path.read_text(encoding="utf-8")))
        elif "syntax_error" not in path.name:
            legacy.append(_MAIN.sub("\n", path.read_text(encoding="utf-8")))
    return legacy, modern


def unrelated(chance: random.Random, index: int) -> str:
    """20 to 400 lines of Cells, functions and configs; a fifth say `requires_grad`."""
    parts = [HEADER]
    target = chance.randint(20, 400)
    lines = HEADER.count("\n")
    part = 0
    while lines < target:
        kind = chance.choice((CELL, CELL, FUNCTION, FUNCTION, CONFIG))
        text = kind.format(
            index=f"{index}_{part}",
            channels=chance.choice((32, 64, 128)),
            size=chance.choice((224, 256, 384)),
            lr=chance.choice((0.1, 0.01, 0.001)),
            epochs=chance.randint(10, 300),
            batch=chance.choice((16, 32, 64)),
        )
        parts.append(text)
        lines += text.count("\n")
        part += 1
    if chance.random() < 0.2:
        parts.append(FROZEN.format(index=index))
    if chance.random() < 0.5:
        parts[0] = "import mindspore\n" + parts[0]
        parts.append(DEPRECATED.format(index=index))
    return "".join(parts)


DEPRECATED = """

def setup_{index}(x):
    mindspore.set_context(mode=mindspore.GRAPH_MODE, device_target="CPU")
    return ops.TensorAdd()(ops.cast(x, mindspore.float32), x)
"""


def write_tree(root: Path, files: int, seed: int = 0) -> Path:
    legacy, modern = _fixtures()
    chance = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    for index in range(files):
        folder = root / f"pkg_{index // PER_PACKAGE:04}"
        folder.mkdir(parents=True, exist_ok=True)
        draw = chance.random()
        if draw < LEGACY_SHARE:
            name, text = f"train_step_{index}.py", legacy[chance.randrange(len(legacy))]
        elif draw < LEGACY_SHARE + MODERN_SHARE:
            name, text = f"train_{index}.py", modern[chance.randrange(len(modern))]
        else:
            name, text = f"module_{index}.py", unrelated(chance, index)
        (folder / name).write_text(text, encoding="utf-8")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write (replaced if it exists)")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    write_tree(arguments.out, arguments.files, arguments.seed)
    total = sum(1 for _ in arguments.out.rglob("*.py"))
    lines = sum(path.read_text(encoding="utf-8").count("\n") for path in arguments.out.rglob("*.py"))
    print(f"{arguments.out}: {total} files, {lines} lines")


if __name__ == "__main__":
    main()
