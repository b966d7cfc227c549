"""Verification of before/after pairs: find the differing sites, run them in workers, collect rows.

All pairs of one call share the workers, so ``import mindspore`` is paid once per worker (one per
core, at most four) however many files and sites there are. The texts are written to a scratch directory as
``_msm_before_<n>.py`` and ``_msm_after_<n>.py``; nothing in the user's tree is written.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ms_migrate.verify import leftovers, sandbox
from ms_migrate.verify.config import ConfigError, ProjectConfig, find_config
from ms_migrate.verify.definitions import runs_at_import
from ms_migrate.verify.imports import ImportPlace, import_place, roots_reached_modules_need
from ms_migrate.verify.model import SiteResult, Verdict, VerificationReport, VerifyOptions
from ms_migrate.verify.overlay import encoded_as_declared
from ms_migrate.verify.reached import reached_files, shown_path
from ms_migrate.verify.requirements import installed_for
from ms_migrate.verify.sites import NetworkLookup, SitePlan, SiteSearchError, differing_sites
from ms_migrate.verify.supervisor import run_tasks, worker_environment


@dataclass(frozen=True)
class Pair:
    """Two versions of one file, and where each came from (its folder is importable while it runs)."""

    before: str
    after: str
    before_path: Path
    after_path: Path
    networks: Optional[NetworkLookup] = None  # what the run knows of the train steps' networks
    # AFTER as the sites to run are told from, where it is not AFTER itself: a downgrade's AFTER
    # less its release fixes, which their pairs prove (AFTER runs whole, on the target's runtime)
    sites_after: Optional[str] = None

    @property
    def path(self) -> Path:
        return self.after_path


def _write_copy(path: Path, text: str) -> None:
    # Encoded as its PEP 263 cookie says: linecache (and so GRAPH mode) reads the copy by it.
    path.write_bytes(encoded_as_declared(text))


def _search_path(pair: Pair, config: Optional[ProjectConfig], places: Sequence[ImportPlace]) -> list[str]:
    """The folders of both versions, the roots their imports need, then the project's entries.

    A version imported as a module of its package has the folder above that package first: its
    own folder may hold a module of the package's name (`relationnet/src/relationnet.py`, where
    `relationnet` must be the package for `from .config import cfg`)."""
    folders = [place.roots[0] for place in places if place.package and place.roots]
    folders += [str(pair.before_path.resolve().parent), str(pair.after_path.resolve().parent)]
    folders += [root for place in places for root in place.roots]
    if config is not None:
        folders += config.search_path
    return list(dict.fromkeys(folders))


def _module_name(place: ImportPlace, copy: Path) -> str:
    """The copy as a module of the file's package, so that its relative imports resolve."""
    return f"{place.package}.{copy.stem}" if place.package else copy.stem


def _network_module(path: Path) -> Optional[tuple[str, list[str]]]:
    """How the file that defines what builds a step's network is imported: its dotted name, and
    the folders that go on the path for it (above its package, or its own folder, and its
    imports' roots). None for a file that runs code when imported (a training script)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if runs_at_import(text):
        return None
    place = import_place(path, text)
    if place.package:
        return f"{place.package}.{path.stem}", list(place.roots)
    return path.stem, [str(path.resolve().parent), *place.roots]


# A project module's text with the release fixes applied, and the fixes ("MS211:23"); None
# where none applies.
ModuleFixes = Callable[[Path], Optional[tuple[str, list[str]]]]


def _fixed_modules(
    pair: Pair, places: Sequence[ImportPlace], search_path: list[str], module_fixes: Optional[ModuleFixes]
) -> tuple[dict[str, str], list[str]]:
    """The project modules both versions import that the release fixes change: their texts, by
    path, for the worker to import in place of the files (``ms_migrate.verify.overlay``), and what
    the report says of them ("src/adam.py (MS211:23)")."""
    if module_fixes is None:
        return {}, []
    versions = ((pair.before, pair.before_path, places[0]), (pair.after, pair.after_path, places[1]))
    reached = {
        found: None
        for text, path, place in versions
        for found in reached_files(path, text, search_path, place.package)
    }
    texts: dict[str, str] = {}
    said: list[str] = []
    for found in reached:
        fixed = module_fixes(found)
        if fixed is not None:
            texts[str(found)] = fixed[0]
            said.append(f"{shown_path(found)} ({', '.join(fixed[1])})")
    return texts, said


def _static_rows(plan_name: str, line: int, reason: str, options: VerifyOptions) -> list[SiteResult]:
    return [SiteResult(plan_name, line, mode, Verdict.NOT_RUN, reason=reason) for mode in options.modes]


def _run(files: list[dict], options: VerifyOptions, workdir: Path) -> dict:
    """Every task's result. On one runtime, one worker runs both versions. On two, workers of
    BEFORE's runtime record it first, then workers of AFTER's run AFTER against that record; a task
    whose BEFORE recorded nothing (it could not be imported) keeps the first result."""
    if not options.split:
        return run_tasks(files, options, workdir)
    assert options.before_python is not None
    first = run_tasks(
        files, options.but(python=options.before_python, before_python=None), workdir, sides=("before",)
    )
    payloads = {
        task: {"recorded": result["recorded"]} for task, result in first.items() if result.get("recorded")
    }
    second = run_tasks(files, options, workdir, sides=("after",), payloads=payloads)
    results = {}
    for task, result in first.items():
        result.pop("recorded", None)
        if task in second:
            after = second[task]
            after["runtime"] = f"{result.get('runtime', '?')} -> {after.get('runtime', '?')}"
            result = after
        results[task] = result
    return results


GRAPH_COMPILED = (
    "; in GRAPH mode the lines the rewrite changed are compiled into the Cell's graph, not run line "
    "by line: the PYNATIVE row saw them run, along the same lines of the test function"
)


def reconciled_rows(results: dict) -> dict:
    """Each task's result, with a test function's GRAPH row held to its PYNATIVE row: GRAPH mode
    compiles a Cell's construct, so a rewrite inside one is never seen to run there. Such a row
    whose numbers were equal is equal when the PYNATIVE row of the same site is, having seen the
    changed lines run, and both took the same path through the test function's own lines (the
    same calls, so the same compiled code); otherwise it stays "could not run"."""
    for (site_id, mode), result in results.items():
        path = result.get("path")
        if mode != "graph" or path is None or result.get("verdict") != Verdict.NOT_RUN.value:
            continue
        native = results.get((site_id, "pynative"), {})
        if native.get("verdict") == Verdict.EQUAL.value and native.get("path") == path:
            result.update(
                verdict=Verdict.EQUAL.value, reason="", detail=native.get("detail", "") + GRAPH_COMPILED
            )
    for result in results.values():
        result.pop("path", None)
    return results


def verify_pairs(
    pairs: Sequence[Pair], options: VerifyOptions, module_fixes: Optional[ModuleFixes] = None
) -> list[VerificationReport]:
    """One report per pair, in order. Never raises for problems in user code; they become rows.
    ``module_fixes``: the release-fixed text of a project module the pairs import (see
    ``_fixed_modules``), where there is one.

    Raises ``sandbox.SandboxUnavailable`` before running anything when ``options.sandbox`` asks for
    what this machine cannot do.
    """
    if options.sandbox:
        sandbox.check(options.interpreter, worker_environment(None, options.device))
    reports = [VerificationReport(pair.path) for pair in pairs]
    planned: list[tuple[int, Optional[int], SitePlan]] = []  # (pair, site id or None, plan)
    leftovers.remove_stale_scratch()
    with tempfile.TemporaryDirectory(prefix=leftovers.scratch_prefix("verify")) as scratch:
        workdir = Path(scratch)
        files: list[dict] = []
        next_id = 0
        for index, pair in enumerate(pairs):
            try:
                config = find_config(pair.before_path)
                told_from = pair.after if pair.sites_after is None else pair.sites_after
                plans = differing_sites(pair.before, told_from, pair.networks)
            except (ConfigError, SiteSearchError) as error:
                planned.append((index, None, SitePlan("<module>", 0, "skip", problem=str(error))))
                continue
            factory = config.factory if config is not None else None
            sites = []
            network_roots: list[str] = []
            for plan in plans:
                if plan.kind == "skip" or (plan.kind == "none" and not factory):
                    planned.append((index, None, plan))
                    continue
                site = {"id": next_id, **plan.to_json()}
                if plan.network_file:
                    found = _network_module(Path(plan.network_file))
                    if found is None:
                        site["network_builder"] = ""
                    else:
                        site["network_module"], roots = found
                        network_roots += roots
                sites.append(site)
                planned.append((index, next_id, plan))
                next_id += 1
            if not sites:
                continue
            places = [import_place(pair.before_path, pair.before), import_place(pair.after_path, pair.after)]
            search_path = list(dict.fromkeys([*_search_path(pair, config, places), *network_roots]))
            search_path += roots_reached_modules_need(pair.before_path, pair.before, places[0], search_path)
            overlay, reports[index].fixed_modules = _fixed_modules(pair, places, search_path, module_fixes)
            copies = {label: workdir / f"_msm_{label}_{index}.py" for label in ("before", "after")}
            _write_copy(copies["before"], pair.before)
            _write_copy(copies["after"], pair.after)
            files.append(
                {
                    "before": str(copies["before"]),
                    "after": str(copies["after"]),
                    "before_module": _module_name(places[0], copies["before"]),
                    "after_module": _module_name(places[1], copies["after"]),
                    "before_label": str(pair.before_path),
                    "after_label": str(pair.after_path),
                    # Where each file lies, for the worker, which runs in the scratch directory:
                    # a relative label would resolve there.
                    "before_place": str(Path(pair.before_path).resolve()),
                    "after_place": str(Path(pair.after_path).resolve()),
                    "search_path": search_path,
                    "overlay": overlay,
                    "installed": installed_for(pair.before_path, options.installed),
                    "project_root": str(config.root) if config is not None else None,
                    "factory": factory,
                    "sites": sites,
                }
            )
        results = reconciled_rows(_run(files, options, workdir))
    if reports:
        reports[0].ended = leftovers.take_ended()
    for index, site_id, plan in planned:
        if site_id is None:
            reason = plan.problem
            if plan.kind == "none":
                reason = f"needs a harness: {plan.problem} (name one in [tool.ms-migrate.verify] factory)"
            reports[index].results += _static_rows(plan.name, plan.line, reason, options)
            continue
        for mode in options.modes:
            data = results[(site_id, mode)]
            reports[index].results.append(
                SiteResult.from_json({"site": plan.name, "line": plan.line, "mode": mode, **data})
            )
    return reports


def verify_many(
    items: Sequence[tuple[Path, str, str]],
    options: VerifyOptions,
    networks: Optional[Callable[[Path, str], NetworkLookup]] = None,
    module_fixes: Optional[ModuleFixes] = None,
    sites_after: Optional[Sequence[Optional[str]]] = None,
) -> list[VerificationReport]:
    """``(path, before_text, after_text)`` triples, as ``upgrade --verify`` produces them;
    ``networks(path, before_text)``: what the run knows of that file's train steps' networks;
    ``module_fixes``: the release fixes of the project modules they import; ``sites_after``: for
    each triple, the AFTER its sites are told from where it is not AFTER (``Pair.sites_after``)."""
    told_from = list(sites_after) if sites_after is not None else [None] * len(items)
    return verify_pairs(
        [
            Pair(before, after, path, path, networks(path, before) if networks is not None else None, told)
            for (path, before, after), told in zip(items, told_from)
        ],
        options,
        module_fixes,
    )


def verify_texts(
    path: Path, before_text: str, after_text: str, options: Optional[VerifyOptions] = None
) -> VerificationReport:
    """Run both versions of the file at ``path`` and compare them site by site."""
    return verify_many([(path, before_text, after_text)], options or VerifyOptions())[0]


def verify_files(before: Path, after: Path, options: Optional[VerifyOptions] = None) -> VerificationReport:
    """Compare two files on disk (``ms-migrate verify BEFORE AFTER``).

    Raises ``sources.SourceError`` when a file cannot be read or decoded.
    """
    from ms_migrate.files import sources

    pair = Pair(sources.read_source(before).text, sources.read_source(after).text, before, after)
    return verify_pairs([pair], options or VerifyOptions())[0]
