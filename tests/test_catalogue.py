"""The deprecation catalogues under rules/deprecations/: regenerated, well-formed, and right where checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

import pytest
from click.testing import CliRunner

from ms_migrate.catalogue import scan
from ms_migrate.frontends.cli import main

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = ROOT / "rules" / "deprecations"
VERSIONS = ("2.7", "2.8", "2.9", "2.10")
HEAVY = ("libcst", "click", "rich", "pathspec")  # not packaging: MindSpore imports it itself
# The scanner runs inside each runtime (1.7's Python 3.9 included): it may import, of the tool, only
# itself and the plain data of the namespaces it lists (shared with the rules that read its lists).
SCANNER = [
    "ms_migrate",
    "ms_migrate.catalogue",
    "ms_migrate.catalogue.__main__",
    "ms_migrate.catalogue.scan",
    "ms_migrate.facts",
    "ms_migrate.facts.public_modules",
]


def _catalogue(version: str) -> dict[str, Any]:
    return json.loads((CATALOGUES / f"{version}.json").read_text(encoding="utf-8"))


def _entry(version: str, name: str, kind: str, parameter: Optional[str] = None) -> dict[str, Any]:
    found = [
        e
        for e in _catalogue(version)["entries"]
        if name in e["names"] and e["kind"] == kind and e.get("parameter") == parameter
    ]
    assert len(found) == 1, (name, kind, parameter, found)
    return found[0]


def _installed_mindspore() -> Optional[str]:
    try:
        return metadata.version("mindspore")
    except metadata.PackageNotFoundError:
        return None


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[str]]:
    """Build the catalogue of the installed MindSpore in a fresh interpreter; report what it imported."""
    if _installed_mindspore() != "2.10.0":
        pytest.skip("needs MindSpore 2.10.0 installed (the dev environment)")
    out = tmp_path_factory.mktemp("catalogue") / "2.10.json"
    script = (
        "import sys\n"
        "from ms_migrate.catalogue.__main__ import main\n"
        f"main(['build', '--out', {str(out)!r}])\n"
        f"print('IMPORTED', [m for m in {HEAVY!r} if m in sys.modules or any("
        "k.startswith(m + '.') for k in sys.modules)] + sorted(k for k in sys.modules "
        f"if k.startswith('ms_migrate') and k not in {SCANNER!r}))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    imported = next(line for line in done.stdout.splitlines() if line.startswith("IMPORTED"))
    return out.read_bytes(), json.loads(imported.split(" ", 1)[1].replace("'", '"'))


@pytest.mark.mindspore
def test_committed_2_10_catalogue_is_what_the_installed_mindspore_gives(
    regenerated: tuple[bytes, list[str]],
) -> None:
    built, _ = regenerated
    assert built == (CATALOGUES / "2.10.json").read_bytes(), (
        "rules/deprecations/2.10.json is stale: run python -m ms_migrate.catalogue build "
        "--out rules/deprecations/2.10.json"
    )


@pytest.mark.mindspore
def test_the_scanner_imports_only_the_standard_library_and_mindspore(
    regenerated: tuple[bytes, list[str]],
) -> None:
    _, imported = regenerated
    assert imported == []


@pytest.mark.parametrize("version", VERSIONS)
def test_catalogue_schema(version: str) -> None:
    catalogue = _catalogue(version)
    assert set(catalogue) == {"mindspore", "generator", "entries"}
    assert catalogue["mindspore"].startswith(version + ".")
    assert catalogue["generator"] == "ms-migrate catalogue build"
    entries = catalogue["entries"]
    assert entries
    for entry in entries:
        has_parameter = entry["kind"] in ("parameter", "context-key")
        expected = {"names", "kind", "since", "replacement", "rename", "channel"} | (
            {"parameter"} if has_parameter else set()
        )
        assert set(entry) == expected, entry
        assert entry["kind"] in scan.KINDS and entry["channel"] in scan.CHANNELS
        assert not has_parameter or (isinstance(entry["parameter"], str) and entry["parameter"])
        names = entry["names"]
        assert names and len(set(names)) == len(names)
        assert all(n.startswith("mindspore") and scan._DOTTED.fullmatch(n) for n in names), names
        assert not any(part.startswith("_") for n in names for part in n.split(".")), names
        assert names[1:] == sorted(names[1:]) and names[0] == min(names, key=scan.name_order)
        assert entry["since"] is None or isinstance(entry["since"], str)
        assert entry["replacement"] is None or (
            isinstance(entry["replacement"], str) and entry["replacement"]
        )
        if entry["rename"]:
            assert entry["kind"] in ("api", "module")
            assert entry["replacement"].startswith("mindspore.")
            assert scan._DOTTED.fullmatch(entry["replacement"])
    keys = [(e["kind"], e["names"][0], e.get("parameter") or "") for e in entries]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert (CATALOGUES / f"{version}.json").read_text(encoding="utf-8") == scan.render(catalogue)


def test_decorated_api_with_its_version_and_replacement() -> None:
    identity = _entry("2.10", "mindspore.ops.identity", "api")
    assert identity["names"][:2] == ["mindspore.ops.identity", "mindspore.ops.functional.identity"]
    assert (identity["since"], identity["replacement"], identity["channel"]) == (
        "2.0",
        "mindspore.nn.Identity",
        "decorator",
    )
    assert identity["rename"] is False  # an op instance and a Cell are not called alike


def test_rename_only_when_provably_drop_in() -> None:
    assert _entry("2.10", "mindspore.ops.TensorAdd", "api")["rename"] is True  # runs as Add
    assert _entry("2.10", "mindspore.ops.soft_shrink", "api")["replacement"] == "mindspore.ops.softshrink"
    assert _entry("2.10", "mindspore.ops.soft_shrink", "api")["rename"] is True
    # same name as itself (MindSpore's substitute for Poisson is Poisson): nothing to rename
    assert _entry("2.10", "mindspore.ops.Poisson", "api")["rename"] is False
    # runtime.memory_stats takes another signature than hal.memory_stats
    assert _entry("2.10", "mindspore.hal.memory_stats", "api")["rename"] is False


def test_a_deprecated_argument_is_a_parameter_entry_not_an_api_entry() -> None:
    dropout = _entry("2.10", "mindspore.nn.Dropout", "parameter", "keep_prob")
    assert (dropout["replacement"], dropout["channel"]) == ("p", "warning")
    entries = _catalogue("2.10")["entries"]
    assert not [e for e in entries if "mindspore.nn.Dropout" in e["names"] and e["kind"] == "api"]
    # a once-only guard is not a condition on an argument, an environment variable is
    assert _entry("2.10", "mindspore.hal.memory_stats", "api")["channel"] == "warning"
    assert not [e for e in entries if e["names"][0] == "mindspore.nn.Cell" and e["kind"] == "api"]


def test_context_keys_and_module_redirects() -> None:
    for version in VERSIONS:
        table = [e for e in _catalogue(version)["entries"] if e["channel"] == "context-table"]
        assert len(table) == 26, version  # 23 deprecated set_context keys + 3 removed ones
        assert all(e["names"] == ["mindspore.set_context", "mindspore.context.set_context"] for e in table)
    device = _entry("2.10", "mindspore.set_context", "context-key", "device_target")
    assert device["replacement"] == "mindspore.set_device"
    assert _entry("2.10", "mindspore.set_context", "context-key", "exception_dump")["since"] == "2.6"
    redirects = {v: [e for e in _catalogue(v)["entries"] if e["kind"] == "module"] for v in VERSIONS}
    # mark_deprecated came in 2.9: 34 calls, of which 12 redirect a public module
    assert [len(redirects[v]) for v in VERSIONS] == [0, 0, 12, 12]
    api = _entry("2.10", "mindspore.common.api", "module")
    assert (api["since"], api["replacement"], api["rename"]) == ("2.9", "mindspore.graph.api", True)


def test_docstring_declarations() -> None:
    doc = """Do a thing.

    .. warning::
        This interface is deprecated from version 2.4 and will be removed after version 2.9.0.
        Please use :func:`mindspore.ops.other` instead.

    Args:
        x (Tensor): The input.
        keep (bool): Deprecated(see `p`). Whether to keep.
            - sub_key (str): This parameter is deprecated.

    Supported Platforms:
        Deprecated
    """
    statements = list(scan.doc_statements(doc))
    warning, keep, nested, platforms = statements
    assert (warning.argument, scan.stated_since(warning.paragraph)) == (None, "2.4")
    assert scan.stated_replacement(warning.paragraph) == "mindspore.ops.other"
    assert (keep.argument, keep.nested, scan.stated_replacement(keep.paragraph)) == ("keep", False, "p")
    assert nested.nested and platforms.platforms


@pytest.mark.parametrize(
    ("text", "since"),
    [("2.9.0", "2.9"), ("1.5", "1.5"), ("2.10.0", "2.10"), (None, None), ("future", "future")],
)
def test_since_is_major_minor(text: Optional[str], since: Optional[str]) -> None:
    assert scan.normalise_since(text) == since


def test_cli_catalogue_build_runs_the_scanner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Path] = []

    def fake_write(path: Path) -> dict[str, Any]:
        written.append(path)
        return {"mindspore": "9.9.9", "generator": scan.GENERATOR, "entries": [{}, {}]}

    monkeypatch.setattr(scan, "write_catalogue", fake_write)
    out = tmp_path / "9.9.json"
    result = CliRunner().invoke(main, ["catalogue", "build", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert written == [out] and "2 entries (MindSpore 9.9.9)" in result.output
