"""``python -m ms_migrate.translations [--check]``: the zh.json entries that are missing, stale or
left over, one a line; exit status 1 where there is one."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from ms_migrate.translations import problems


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ms_migrate.translations", description=__doc__)
    parser.add_argument("--check", action="store_true", help="list what to translate (the default)")
    parser.parse_args(argv)
    found = problems()
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} to fix in ms_migrate/translations/zh.json", file=sys.stderr)
        return 1
    print("ms_migrate/translations/zh.json: every entry is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
