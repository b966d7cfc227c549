"""``python -m ms_migrate.catalogue build --out rules/deprecations/2.10.json``
``python -m ms_migrate.catalogue releases --out rules/releases/api.json``
``python -m ms_migrate.catalogue prove --out rules/releases/proofs.json``

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
    releases = commands.add_parser(
        "releases", help="list the public names of every runtime ms-migrate makes and write their differences"
    )
    releases.add_argument("--out", required=True, type=Path, help="where to write rules/releases/api.json")
    prove = commands.add_parser("prove", help="run each release pair on both releases and write the results")
    prove.add_argument("--out", required=True, type=Path, help="where to write rules/releases/proofs.json")
    arguments = parser.parse_args(argv)
    if arguments.command == "releases":
        return _releases(arguments.out)
    if arguments.command == "prove":
        return _prove(arguments.out)

    from ms_migrate.catalogue.scan import write_catalogue

    catalogue = write_catalogue(arguments.out)
    print(f"{arguments.out}: {len(catalogue['entries'])} entries (MindSpore {catalogue['mindspore']})")
    return 0


def _releases(out: Path) -> int:
    import json

    from ms_migrate import runtimes
    from ms_migrate.catalogue.releases import write_facts
    from ms_migrate.facts.data import rules_path

    found = runtimes.available()
    missing = sorted(set(runtimes.RECIPES) - set(found))
    if missing:
        names = ", ".join(str(version) for version in missing)
        print(
            f"missing runtimes: {names}; make them with `ms-migrate runtime install --all`", file=sys.stderr
        )
        return 2
    moves = json.loads(rules_path("releases/moves.json").read_text(encoding="utf-8"))["moves"]
    pythons = {str(version): found[version].python for version in sorted(runtimes.RECIPES)}
    built = write_facts(out, pythons, moves)
    names = sum(len(group) for module in built["modules"].values() for group in module["names"].values())
    print(f"{out}: {len(built['modules'])} modules, {names} names, releases {', '.join(built['releases'])}")
    return 0


def _prove(out: Path) -> int:
    import json

    from ms_migrate import runtimes
    from ms_migrate.catalogue.pairs import load_cases, prove
    from ms_migrate.facts.data import rules_path
    from ms_migrate.facts.releases import api_facts

    facts = api_facts()
    if facts is None:
        print(
            "no rules/releases/api.json: run `python -m ms_migrate.catalogue releases` first", file=sys.stderr
        )
        return 2
    found = runtimes.available()
    pythons = {version: found[version].python for version in facts.releases if version in found}
    if len(pythons) != len(facts.releases):
        print("missing runtimes: make them with `ms-migrate runtime install --all`", file=sys.stderr)
        return 2
    proofs = prove(load_cases(rules_path("releases/proof_cases.json")), facts, pythons)
    out.write_text(json.dumps(proofs, indent=1) + "\n", encoding="utf-8")
    equal = sum(pair["result"] == "equal" for pair in proofs["pairs"])
    print(f"{out}: {equal} of {len(proofs['pairs'])} pairs equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
