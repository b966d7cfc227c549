"""``python -m ms_migrate.catalogue build --out rules/deprecations/2.10.json``

Standard library only (argparse, not click): the per-version environments hold MindSpore alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ms_migrate.catalogue")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="scan the installed MindSpore and write its catalogue")
    build.add_argument("--out", required=True, type=Path, help="where to write the JSON catalogue")
    arguments = parser.parse_args(argv)

    from ms_migrate.catalogue.scan import write_catalogue

    catalogue = write_catalogue(arguments.out)
    print(f"{arguments.out}: {len(catalogue['entries'])} entries (MindSpore {catalogue['mindspore']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
