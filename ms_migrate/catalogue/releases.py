"""Build ``rules/releases/api.json``: which MindSpore releases have each public module and name.

For each runtime ms-migrate can make (1.7-1.10, 2.7-2.10), ``api_names`` runs inside it and lists
its importable modules and their names. The facts file keeps, for each module, the releases that
have it and its names grouped by the releases that have them::

    "mindspore.dataset.vision": {"in": "1.7-2.10", "names": {"1.7-2.10": ["Resize", ...], ...}}

Release ranges are written over the ordered releases checked: ``"1.7-1.10"``, ``"1.8-1.10,2.7"``.
A name in no release checked is not in the file: nothing is said about it. ``foreign`` lists, per
module whose names are listed whole, the attributes it holds that are not MindSpore's own (another
package's objects) or that failed to load: there, though not listed as names, so that a name such a
module is asked for which is in neither list is one no release has (MS211).

For the modules the declared moves (``rules/releases/moves.json``) name, ``signatures`` holds
each callable's parameters on each release, grouped the same way; for a move of kind "members"
(a class whose members a release made names of a module), ``members`` lists the class's names::

    "mindspore.dataset.vision.Decode": {"1.8-2.10": [["to_pil", "POSITIONAL_OR_KEYWORD", "False"]]}

``origins`` says where each of those callables is defined, where that is a module below the one
that exports it (`"mindspore.nn.Dense": {"1.7-2.10": "mindspore.nn.layer.basic"}`): the packages on
that path are other spellings of the same object (`mindspore.nn.layer.Dense`).

``python -m ms_migrate.catalogue releases --out rules/releases/api.json`` (every runtime made
first: ``ms-migrate runtime install --all``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ms_migrate.facts.versions import Version

GENERATOR = "ms-migrate catalogue releases"


def run_in_runtime(
    python: str, module: str, arguments: tuple[str, ...] = (), stdin: str = "", timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``python -m module`` by a runtime's interpreter (its own MindSpore, with only the standard
    library beside it), with this checkout importable and MindSpore's C++ log at errors only."""
    checkout = str(Path(__file__).resolve().parents[2])
    environment = {**os.environ, "PYTHONPATH": checkout, "GLOG_v": "3"}
    return subprocess.run(
        [python, "-m", module, *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        check=False,
        cwd=checkout,
    )


def listing_of(python: str, signature_modules: tuple[str, ...] = ()) -> dict[str, Any]:
    """What ``api_names`` lists in the runtime of ``python``."""
    completed = run_in_runtime(python, "ms_migrate.catalogue.api_names", signature_modules)
    completed.check_returncode()
    return json.loads(completed.stdout.strip().splitlines()[-1])


def ranges(present: list[str], order: list[str]) -> str:
    """``["1.7", "1.8", "2.7"]`` over the releases in ``order`` -> ``"1.7-1.8,2.7"``."""
    runs: list[list[str]] = []
    previous = -2
    for index, release in enumerate(order):
        if release not in present:
            continue
        if index == previous + 1:
            runs[-1].append(release)
        else:
            runs.append([release])
        previous = index
    return ",".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def expand(spec: str, order: list[str]) -> frozenset[str]:
    """The inverse of ``ranges``."""
    found: set[str] = set()
    for part in spec.split(","):
        first, _, last = part.partition("-")
        start, end = order.index(first), order.index(last or first)
        found.update(order[start : end + 1])
    return frozenset(found)


def facts(listings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The facts file's content from ``{"1.10": listing, ...}``."""
    order = [str(version) for version in sorted(Version.parse(key) for key in listings)]
    module_releases: dict[str, list[str]] = {}
    name_releases: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for module, names in listings[release]["modules"].items():
            module_releases.setdefault(module, []).append(release)
            held = name_releases.setdefault(module, {})
            for name in names:
                held.setdefault(name, []).append(release)
    modules: dict[str, Any] = {}
    for module in sorted(module_releases):
        modules[module] = {
            "in": ranges(module_releases[module], order),
            "names": _grouped(name_releases[module], order),
        }
    foreign: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for module, names in listings[release].get("foreign", {}).items():
            for name in names:
                foreign.setdefault(module, {}).setdefault(name, []).append(release)
    members: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for owner, names in listings[release].get("members", {}).items():
            for name in names:
                members.setdefault(owner, {}).setdefault(name, []).append(release)
    signature_releases: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for module, signatures in listings[release].get("signatures", {}).items():
            for name, parameters in signatures.items():
                key = json.dumps(parameters)
                signature_releases.setdefault(f"{module}.{name}", {}).setdefault(key, []).append(release)
    signatures = {
        dotted: {ranges(present, order): json.loads(key) for key, present in sorted(by_key.items())}
        for dotted, by_key in sorted(signature_releases.items())
    }
    origin_releases: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for module, origins in listings[release].get("origins", {}).items():
            for name, origin in origins.items():
                origin_releases.setdefault(f"{module}.{name}", {}).setdefault(origin, []).append(release)
    origins = {
        dotted: {ranges(present, order): origin for origin, present in sorted(by_origin.items())}
        for dotted, by_origin in sorted(origin_releases.items())
    }
    probe_releases: dict[str, dict[str, list[str]]] = {}
    for release in order:
        for name, answer in listings[release].get("probes", {}).items():
            probe_releases.setdefault(name, {}).setdefault(json.dumps(answer), []).append(release)
    probes = {
        name: {ranges(present, order): json.loads(key) for key, present in sorted(by_answer.items())}
        for name, by_answer in sorted(probe_releases.items())
    }
    return {
        "generator": GENERATOR,
        "releases": {release: listings[release]["mindspore"] for release in order},
        "modules": modules,
        "signatures": signatures,
        "origins": origins,
        "members": {owner: _grouped(by_name, order) for owner, by_name in sorted(members.items())},
        "probes": probes,
        "foreign": {module: _grouped(by_name, order) for module, by_name in sorted(foreign.items())},
    }


def _grouped(releases_of: dict[str, list[str]], order: list[str]) -> dict[str, list[str]]:
    """``{name: releases}`` -> ``{"1.7-1.10": [names, ...]}``, sorted."""
    grouped: dict[str, list[str]] = {}
    for name, present in sorted(releases_of.items()):
        grouped.setdefault(ranges(present, order), []).append(name)
    return dict(sorted(grouped.items()))


# Modules whose callables' signatures the meaning rules read (nn.Dropout's keep_prob and p).
MEANING_MODULES = ("mindspore.nn", "mindspore.ops")


def signature_modules(moves: list[dict[str, Any]]) -> tuple[str, ...]:
    """The modules whose callables' signatures the moves are judged by (both sides of each), and
    those the meaning rules read."""
    found: set[str] = set(MEANING_MODULES)
    for move in moves:
        for side in (move["old"], move.get("new")):
            if side:
                # A module's names, or a class's members and the module they moved to.
                whole = move["kind"] in ("module", "members")
                found.add(side if whole else side.rpartition(".")[0])
    return tuple(sorted(found))


def write_facts(path: Path, pythons: dict[str, str], moves: list[dict[str, Any]]) -> dict[str, Any]:
    modules = signature_modules(moves)
    built = facts({release: listing_of(python, modules) for release, python in pythons.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(built, indent=0) + "\n", encoding="utf-8")
    return built
