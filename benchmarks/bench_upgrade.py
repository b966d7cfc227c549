"""Speed of `ms-migrate upgrade --dry-run` over a tree, as a ratio to a bare libcst parse.

Run: .venv/bin/python benchmarks/bench_upgrade.py PATH   (default: generated files)

The reference (parsing every file with libcst, nothing else) runs in the same process on the same
files, so the ratio is comparable across machines. Goal: the whole pipeline costs less than a
bare parse of every file, because the prefilter skips files that cannot hold a site.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.files import sources

LEGACY = (Path(__file__).parent.parent / "tests/fixtures/ms101/cell_get_by_list.py").read_text()
PLAIN = "import numpy as np\n\n\ndef f(x):\n    return np.sum(x) * 2\n" * 40


def generated_tree(root: Path, files: int = 400) -> Path:
    for index in range(files):
        # About 2% of files in real model zoos mention GradOperation; use 5% to be pessimistic.
        text = LEGACY if index % 20 == 0 else PLAIN
        (root / f"m{index}.py").write_text(text)
    return root


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(sys.argv[1]) if len(sys.argv) > 1 else generated_tree(Path(scratch))
        texts = [sources.read_source(path).text for path in sources.discover([root])]
        lines = sum(text.count("\n") for text in texts)

        start = time.perf_counter()
        for text in texts:
            with contextlib.suppress(Exception):
                cst.parse_module(text)
        reference = time.perf_counter() - start

        start = time.perf_counter()
        for text in texts:
            with contextlib.suppress(Exception):
                migrate_text(text, Version(2, 8))
        ours = time.perf_counter() - start

    print(f"{len(texts)} files, {lines} lines")
    print(f"bare libcst parse: {reference:.2f} s ({lines / reference:,.0f} lines/s)")
    print(f"ms-migrate upgrade: {ours:.2f} s ({lines / ours:,.0f} lines/s)")
    print(f"ratio ms-migrate / bare parse: {ours / reference:.3f}")


if __name__ == "__main__":
    main()
