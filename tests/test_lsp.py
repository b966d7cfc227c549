"""`ms-migrate server` end to end: a real LSP client (pytest-lsp) drives the server over stdio.

What the editor is shown is compared with what the CLI says of the same text, run in a child
process: the diagnostics with `check --format json` (codes, messages, severities, positions,
fixability), an applied quick fix with what `upgrade` (or `downgrade`) writes into a copy of the
project. No test needs MindSpore, and none times anything (benchmarks/bench_lsp.py measures).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SERVER = [sys.executable, "-m", "ms_migrate", "server"]


def make_project(folder: Path, target: str = "2.10", extra: str = "") -> Path:
    """A project of its own (its `.git` ends the search for settings) with ``target``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "pyproject.toml").write_text(f'[tool.ms-migrate]\ntarget-version = "{target}"\n{extra}')
    return folder


def copy_fixture(name: str, project: Path, as_name: Optional[str] = None) -> Path:
    path = project / (as_name or Path(name).name)
    shutil.copyfile(FIXTURES / name, path)
    return path


def cli(
    *args: str, stdin: Optional[str] = None, cwd: Optional[Path] = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ms_migrate", *args], input=stdin, capture_output=True, text=True, cwd=cwd
    )


@dataclass(frozen=True)
class Expected:
    """A finding as `check --format json` reports it, in LSP's terms (lines and columns from 0)."""

    code: str
    message: str
    severity: str
    start: tuple[int, int]
    fixable: bool
    cell: int = 0  # for a notebook: the cell's position among all cells


_SEVERITY_NAMES = {
    types.DiagnosticSeverity.Error: "error",
    types.DiagnosticSeverity.Warning: "warning",
    types.DiagnosticSeverity.Information: "info",
}


def check_findings(path: Path, text: Optional[str] = None) -> list[Expected]:
    """What `ms-migrate check` reports for ``path`` (holding ``text``, given on stdin)."""
    # From the project's root, with the path relative to it, as `ms-migrate check .` names files.
    root = next(folder for folder in path.parents if (folder / "pyproject.toml").exists())
    name = str(path.relative_to(root))
    if text is None:
        completed = cli("check", "--no-cache", "--format", "json", name, cwd=root)
    else:
        completed = cli("check", "--format", "json", "--stdin-filename", name, "-", stdin=text, cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    found = []
    for item in json.loads(completed.stdout)["findings"]:
        location = item["location"]
        cell, line = 0, item["line"]
        if location.startswith("cell "):
            number, line = location[len("cell ") :].split(":")
            cell, line = int(number) - 1, int(line)
        start = (line - 1, item["column"] - 1)
        found.append(Expected(item["code"], item["message"], item["severity"], start, item["fixable"], cell))
    return found


def as_expected(diagnostics: Iterable[types.Diagnostic], cell: int = 0) -> list[Expected]:
    return [
        Expected(
            str(item.code),
            item.message,
            _SEVERITY_NAMES[item.severity] if item.severity else "",
            (item.range.start.line, item.range.start.character),
            bool(isinstance(item.data, dict) and item.data.get("fixable")),
            cell,
        )
        for item in diagnostics
    ]


def migrated_copy(path: Path, command: str = "upgrade", target: Optional[str] = None) -> str:
    """What `ms-migrate upgrade` (or downgrade) writes for ``path``: run on a copy of its project."""
    copy = path.parent.parent / f"{path.parent.name}-{command}"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(path.parent, copy)
    arguments = [command, "--no-cache", *(["--target-version", target] if target else []), path.name]
    completed = cli(*arguments, cwd=copy)
    assert completed.returncode == 0, completed.stderr
    return (copy / path.name).read_text(encoding="utf-8")


# --- the client side ----------------------------------------------------------------------------


class Published:
    """Every publishDiagnostics the client receives, in order (pytest-lsp keeps only the last per
    URI, without its version)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.received: list[types.PublishDiagnosticsParams] = []
        self._arm()

    def _arm(self) -> None:
        def record(params: types.PublishDiagnosticsParams) -> None:
            self.received.append(params)
            self._arm()

        self.client.protocol.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, callback=record)

    async def wait(
        self, uri: str, version: Optional[int] = None, timeout: float = 60, since: int = 0
    ) -> list[types.Diagnostic]:
        """The diagnostics of ``uri`` (at ``version``) published after the ``since``-th message."""
        found = await until(lambda: self._latest(uri, version, since), timeout)
        return list(found.diagnostics)

    def _latest(
        self, uri: str, version: Optional[int], since: int
    ) -> Optional[types.PublishDiagnosticsParams]:
        for params in reversed(self.received[since:]):
            if params.uri == uri and (version is None or params.version == version):
                return params
        return None


async def until(condition: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s")
        await asyncio.sleep(0.01)


def apply_text_edits(text: str, edits: Iterable[types.TextEdit]) -> str:
    """``edits`` applied as an editor applies them (ASCII or BMP text: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return starts[position.line] + position.character

    ordered = sorted(
        edits, key=lambda edit: (edit.range.start.line, edit.range.start.character), reverse=True
    )
    for edit in ordered:
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def document_edits(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    assert edit.document_changes is not None
    found: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes:
        assert isinstance(change, types.TextDocumentEdit)
        found.setdefault(change.text_document.uri, []).extend(change.edits)  # type: ignore[arg-type]
    return found


# --- the session ----------------------------------------------------------------------------------


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    project = make_project(tmp_path / "project")
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=project.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
        initialization_options={"debounceMs": 20},
    )
    await lsp_client.initialize_session(params)
    lsp_client.project = project  # type: ignore[attr-defined]
    lsp_client.published = Published(lsp_client)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


LONG_DEBOUNCE_MS = 3000


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def slow_typist_client(lsp_client: LanguageClient, tmp_path: Path) -> Any:
    """A session whose debounce is long enough to tell a held-back change from one run at once."""
    project = make_project(tmp_path / "project")
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=project.as_uri(),
        initialization_options={"debounceMs": LONG_DEBOUNCE_MS},
    )
    await lsp_client.initialize_session(params)
    lsp_client.project = project  # type: ignore[attr-defined]
    lsp_client.published = Published(lsp_client)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def open_file(client: LanguageClient, path: Path, text: Optional[str] = None, version: int = 1) -> str:
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8") if text is None else text
    item = types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
    return uri


def replace_all(client: LanguageClient, uri: str, old: str, new: str, version: int) -> None:
    """Send ``new`` as one incremental change over the whole of ``old``."""
    lines = old.splitlines(keepends=True)
    end = types.Position(line=len(lines), character=0)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=0, character=0), end=end), text=new
    )
    document = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(text_document=document, content_changes=[change])
    )


async def code_actions(
    client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic], line: int
) -> list[types.CodeAction]:
    here = [item for item in diagnostics if item.range.start.line <= line <= item.range.end.line]
    span = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
    )
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=span,
        context=types.CodeActionContext(diagnostics=here),
    )
    found = await client.text_document_code_action_async(params)
    return [item for item in found or [] if isinstance(item, types.CodeAction)]


def digests(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# --- diagnostics and the MS101 quick fix ----------------------------------------------------------


@pytest.mark.asyncio
async def test_a_legacy_file_gets_checks_diagnostics_and_its_ms101_quick_fix_writes_what_upgrade_does(
    client: LanguageClient,
) -> None:
    path = copy_fixture("ms101/cell_get_by_list.py", client.project)
    before = digests(client.project)
    text = path.read_text(encoding="utf-8")
    uri = open_file(client, path)
    diagnostics = await client.published.wait(uri, version=1)
    assert as_expected(diagnostics) == check_findings(path) != []
    ms101 = next(item for item in diagnostics if item.code == "MS101")
    assert ms101.code_description is not None and ms101.code_description.href.endswith(
        "rules.md#ms101-gradoperation-train-step-can-use-value_and_grad"
    )

    actions = await code_actions(client, uri, diagnostics, ms101.range.start.line)
    quick = [action for action in actions if action.title.startswith("ms-migrate: fix MS101")]
    assert len(quick) == 1 and quick[0].kind == types.CodeActionKind.QuickFix and quick[0].is_preferred
    assert quick[0].diagnostics and quick[0].diagnostics[0].code == "MS101"
    fixed = apply_text_edits(text, document_edits(quick[0].edit)[uri])
    assert fixed == migrated_copy(path)
    fix_all = [action for action in actions if action.kind == types.CodeActionKind.SourceFixAll]
    assert len(fix_all) == 1 and apply_text_edits(text, document_edits(fix_all[0].edit)[uri]) == fixed

    replace_all(client, uri, text, fixed, version=2)  # the editor applies it
    assert as_expected(await client.published.wait(uri, version=2)) == check_findings(path, fixed)
    assert not any(item.code == "MS101" for item in await client.published.wait(uri, version=2))
    assert digests(client.project) == before, "the server wrote to disk"


@pytest.mark.asyncio
async def test_a_buffer_is_analysed_from_the_editors_text_not_from_disk(client: LanguageClient) -> None:
    path = client.project / "unsaved.py"
    path.write_text("x = 1\n")  # on disk: nothing to report
    legacy = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text(encoding="utf-8")
    uri = open_file(client, path, legacy)
    diagnostics = await client.published.wait(uri, version=1)
    assert as_expected(diagnostics) == check_findings(path, legacy) != []
    assert path.read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_a_change_that_introduces_a_finding_is_reported(client: LanguageClient) -> None:
    path = client.project / "clean.py"
    text = "from mindspore import ops\n\n\ndef full(shape):\n    return ops.full(shape, 1.0)\n"
    path.write_text(text)
    uri = open_file(client, path)
    assert await client.published.wait(uri, version=1) == []
    changed = text.replace("ops.full(shape, 1.0)", "ops.fill(None, shape, 1.0)")
    replace_all(client, uri, text, changed, version=2)
    diagnostics = await client.published.wait(uri, version=2)
    assert [item.code for item in diagnostics] == ["MS210"]
    assert as_expected(diagnostics) == check_findings(path, changed)

    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [
        item.code
        for item in await client.published.wait(uri, version=2, since=len(client.published.received))
    ] == ["MS210"]


@pytest.mark.asyncio
async def test_a_broken_buffer_gets_one_diagnostic_and_the_server_goes_on(client: LanguageClient) -> None:
    path = copy_fixture("ms101/cell_get_by_list.py", client.project)
    text = path.read_text(encoding="utf-8")
    uri = open_file(client, path)
    await client.published.wait(uri, version=1)
    broken = text.replace("def construct(self, data, label):", "def construct(self, data, label)")
    replace_all(client, uri, text, broken, version=2)
    diagnostics = await client.published.wait(uri, version=2)
    assert len(diagnostics) == 1 and diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert "expected ':'" in diagnostics[0].message
    line = next(number for number, content in enumerate(broken.splitlines()) if "def construct" in content)
    assert diagnostics[0].range.start.line == line
    assert await code_actions(client, uri, diagnostics, line) == []

    replace_all(client, uri, broken, text, version=3)
    assert as_expected(await client.published.wait(uri, version=3)) == check_findings(path)

    # A MindSpore buffer no rule looks into gets its syntax error all the same.
    plain = "import mindspore\n\n\ndef f(:\n    pass\n"
    replace_all(client, uri, text, plain, version=4)
    diagnostics = await client.published.wait(uri, version=4)
    assert len(diagnostics) == 1 and diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert diagnostics[0].range.start.line == 3


@pytest.mark.asyncio
async def test_the_server_survives_a_thousand_rapid_changes(client: LanguageClient) -> None:
    path = copy_fixture("ms101/cell_get_by_list.py", client.project)
    text = path.read_text(encoding="utf-8")
    uri = open_file(client, path)
    await client.published.wait(uri, version=1)
    for version in range(2, 1002):
        # Typing at the end of the first line, one character a change, as fast as the pipe takes it.
        at = types.Position(line=0, character=len(text.splitlines()[0]) + version - 2)
        change = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text="#")
        document = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(text_document=document, content_changes=[change])
        )
        if version % 100 == 0:
            await asyncio.sleep(0)
    final = text.replace("\n", "#" * 1000 + "\n", 1)
    diagnostics = await client.published.wait(uri, version=1001)
    assert as_expected(diagnostics) == check_findings(path, final)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostics[0].range.start
        )
    )
    assert hover is not None  # still answering


@pytest.mark.asyncio
async def test_a_change_after_a_pause_is_analysed_at_once_and_a_burst_waits_for_its_end(
    slow_typist_client: LanguageClient,
) -> None:
    """The debounce holds back only changes that follow one another within it: the first change
    after a pause gets its diagnostics without waiting it out; a burst gets one analysis, of its
    last version, once the debounce has passed."""
    client = slow_typist_client
    text = "from mindspore import ops\n\n\ndef full(shape):\n    return ops.full(shape, 1.0)\n"
    path = client.project / "clean.py"
    path.write_text(text)
    uri = open_file(client, path)
    assert await client.published.wait(uri, version=1) == []
    changed = text.replace("ops.full(shape, 1.0)", "ops.fill(None, shape, 1.0)")
    started = time.monotonic()
    replace_all(client, uri, text, changed, version=2)
    assert [item.code for item in await client.published.wait(uri, version=2)] == ["MS210"]
    assert time.monotonic() - started < LONG_DEBOUNCE_MS / 1000 * 0.8
    started = time.monotonic()
    replace_all(client, uri, changed, text, version=3)
    replace_all(client, uri, text, changed, version=4)
    assert [item.code for item in await client.published.wait(uri, version=4)] == ["MS210"]
    assert time.monotonic() - started >= LONG_DEBOUNCE_MS / 1000 * 0.9
    assert not [params for params in client.published.received if params.version == 3]


# --- hover, ignore, downgrade, settings ----------------------------------------------------------


@pytest.mark.asyncio
async def test_hover_on_a_diagnostic_shows_the_explain_text_and_the_docs_link(client: LanguageClient) -> None:
    path = copy_fixture("ms101/cell_get_by_list.py", client.project)
    uri = open_file(client, path)
    diagnostics = await client.published.wait(uri, version=1)
    ms101 = next(item for item in diagnostics if item.code == "MS101")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=ms101.range.start)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    explained = cli("explain", "MS101").stdout.rstrip("\n")
    assert explained in hover.contents.value
    assert "rules.md#ms101-gradoperation-train-step-can-use-value_and_grad" in hover.contents.value
    assert "reasons.md#msn001" in hover.contents.value  # the note on the same line, explained too
    nowhere = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)
        )
    )
    assert nowhere is None


@pytest.mark.asyncio
async def test_ignore_this_finding_adds_the_suppression_comment(client: LanguageClient) -> None:
    path = copy_fixture("ms101/cell_get_by_list.py", client.project)
    text = path.read_text(encoding="utf-8")
    uri = open_file(client, path)
    diagnostics = await client.published.wait(uri, version=1)
    ms101 = next(item for item in diagnostics if item.code == "MS101")
    actions = await code_actions(client, uri, diagnostics, ms101.range.start.line)
    ignore = next(action for action in actions if action.title == "ms-migrate: ignore MS101 on this line")
    ignored = apply_text_edits(text, document_edits(ignore.edit)[uri])
    line = ignored.splitlines()[ms101.range.start.line]
    assert line.endswith("  # ms-migrate: ignore[MS101]")
    replace_all(client, uri, text, ignored, version=2)
    after = await client.published.wait(uri, version=2)
    assert "MS101" not in {item.code for item in after}
    assert as_expected(after) == check_findings(path, ignored)


@pytest.mark.asyncio
async def test_downgrade_fixes_are_offered_when_the_target_asks_for_them(
    client: LanguageClient, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "old", target="1.7")
    path = copy_fixture("downgrade/from_import_value_and_grad_1_7.py", project)
    text = path.read_text(encoding="utf-8")
    uri = open_file(client, path)
    diagnostics = await client.published.wait(uri, version=1)
    assert as_expected(diagnostics) == check_findings(path)
    line = next(
        number for number, content in enumerate(text.splitlines()) if "value_and_grad(forward_fn" in content
    )
    actions = await code_actions(client, uri, diagnostics, line)
    downgrade = [
        action for action in actions if action.title.startswith("ms-migrate: downgrade for MindSpore 1.7")
    ]
    assert len(downgrade) == 1
    assert apply_text_edits(text, document_edits(downgrade[0].edit)[uri]) == migrated_copy(
        path, "downgrade", "1.7"
    )


@pytest.mark.asyncio
async def test_the_configuration_is_read_again_when_it_changes(client: LanguageClient) -> None:
    path = client.project / "deprecated.py"
    text = "from mindspore import ops\n\n\ndef full(shape):\n    return ops.fill(None, shape, 1.0)\n"
    path.write_text(text)
    uri = open_file(client, path)
    assert [item.code for item in await client.published.wait(uri, version=1)] == ["MS210"]
    pyproject = client.project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'ignore = ["MS210"]\n')
    since = len(client.published.received)
    change = types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[change]))
    assert await client.published.wait(uri, version=1, since=since) == []
    assert check_findings(path) == []

    # A baseline named in the table: the findings it holds are not shown, as `check` shows them.
    pyproject.write_text('[tool.ms-migrate]\ntarget-version = "2.10"\nbaseline = "baseline.json"\n')
    written = cli(
        "check", "--no-cache", "--write-baseline", "baseline.json", "deprecated.py", cwd=client.project
    )
    assert written.returncode == 0, written.stderr
    added = text + "\n\ndef more(shape):\n    return ops.fill(None, shape, 2.0)\n"
    replace_all(client, uri, text, added, version=2)  # no watched-files event: the signature shows it
    diagnostics = await client.published.wait(uri, version=2)
    assert as_expected(diagnostics) == check_findings(path, added)
    assert [item.range.start.line for item in diagnostics] == [8]


@pytest.mark.asyncio
async def test_per_file_ignores_and_excludes_apply_as_check_applies_them(client: LanguageClient) -> None:
    pyproject = client.project / "pyproject.toml"
    extra = 'exclude = ["generated/"]\nper-file-ignores = { "tests/*" = ["MS210"] }\n'
    pyproject.write_text(pyproject.read_text() + extra)
    text = "from mindspore import ops\n\n\ndef full(shape):\n    return ops.fill(None, shape, 1.0)\n"
    for folder in ("src", "tests", "generated"):
        (client.project / folder).mkdir()
        (client.project / folder / "module.py").write_text(text)
    shown = {}
    for folder in ("src", "tests", "generated"):
        path = client.project / folder / "module.py"
        uri = open_file(client, path)
        shown[folder] = [item.code for item in await client.published.wait(uri, version=1)]
        assert as_expected(await client.published.wait(uri, version=1)) == check_findings(path)
    assert shown == {"src": ["MS210"], "tests": [], "generated": []}


# --- notebooks ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_notebook_document_is_checked_as_one_module_and_fixed_in_its_cells(
    client: LanguageClient,
) -> None:
    path = client.project / "tutorial.ipynb"
    shutil.copyfile(ROOT / "tests" / "notebooks" / "tutorial.ipynb", path)
    document = json.loads(path.read_text(encoding="utf-8"))
    cells, items = [], []
    for index, cell in enumerate(document["cells"]):
        cell_uri = f"vscode-notebook-cell:{path.as_posix()}#cell{index}"
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        code = cell["cell_type"] == "code"
        kind = types.NotebookCellKind.Code if code else types.NotebookCellKind.Markup
        cells.append(types.NotebookCell(kind=kind, document=cell_uri))
        language = "python" if code else "markdown"
        items.append(types.TextDocumentItem(uri=cell_uri, language_id=language, version=1, text=text))
    notebook = types.NotebookDocument(
        uri=path.as_uri(), notebook_type="jupyter-notebook", version=1, cells=cells
    )
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(notebook_document=notebook, cell_text_documents=items)
    )
    await client.published.wait(items[-1].uri)
    shown = [
        found
        for position, item in enumerate(items)
        for found in as_expected(client.diagnostics.get(item.uri, []), position)
    ]
    assert shown == check_findings(path) != []

    finding = next(item for item in shown if item.code == "MS101")
    cell_uri = items[finding.cell].uri
    actions = await code_actions(client, cell_uri, list(client.diagnostics[cell_uri]), finding.start[0])
    quick = next(action for action in actions if action.title.startswith("ms-migrate: fix MS101"))
    edits = document_edits(quick.edit)
    upgraded = json.loads(migrated_copy(path))
    for position, item in enumerate(items):
        expected = "".join(upgraded["cells"][position]["source"])
        assert apply_text_edits(item.text, edits.get(item.uri, [])) == expected


# --- without the extra ----------------------------------------------------------------------------


def test_without_pygls_the_server_command_says_which_extra_to_install() -> None:
    script = (
        "import sys\n"
        "sys.modules['pygls'] = None  # as if the lsp extra were not installed\n"
        "from ms_migrate.frontends.cli import main\n"
        "main(['server'])\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 2
    assert "pip install 'ms-migrate[lsp]'" in completed.stderr
