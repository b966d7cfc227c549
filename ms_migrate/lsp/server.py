"""`ms-migrate server`: the language server (LSP over stdio, on pygls).

What it does for an open `.py` file or notebook (LSP 3.17 notebook sync, the cells as one module):

- diagnostics as `check` reports them, on open, on save and, debounced, on change;
- code actions: a quick fix per site `upgrade` fixes (exactly what it would write there), "fix all
  in file", the downgrade rules' fixes where the target is one they apply to, and "ignore this
  finding" (the suppression comment);
- hover on a diagnostic: `ms-migrate explain`'s text and a link to the rule's section of the docs.

Every analysis reads the editor's text, never the file on disk, and nothing is written: an edit
goes to the editor as a ``WorkspaceEdit`` for it to apply. The rules run on one worker thread, so
the event loop keeps reading the editor's messages (a burst of changes coalesces into one run) and
the engine's per-process caches are never used by two threads at once.

Client settings (``initializationOptions``): ``debounceMs`` (default 60), how long a change that
follows another that closely waits for the next before it is analysed (one after a pause is
analysed at once); ``docsUrl``, where docs/rules.md is published (default: the
checkout's docs folder, when there is one).
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ms_migrate import __version__
from ms_migrate.diagnostics import Diagnostic, source_lines
from ms_migrate.lsp.analysis import Analysis, Rewrite
from ms_migrate.lsp.buffers import Buffer, CellText, notebook_buffer, python_buffer
from ms_migrate.lsp.convert import docs_link, lsp_diagnostic, workspace_edit
from ms_migrate.lsp.settings import SettingsCache

DEFAULT_DEBOUNCE_S = 0.06
_T = TypeVar("_T")


@dataclass
class Open:
    """An open document or notebook: its latest analysis, and the run waiting to replace it."""

    key: str  # the document's URI, or the notebook's
    analysis: Optional[Analysis] = None
    pending: Optional[asyncio.Task[None]] = None
    last_change: float = float("-inf")  # the event loop's time of the latest change


class MigrateServer(LanguageServer):
    def __init__(self) -> None:
        notebooks = types.NotebookDocumentSyncOptions(
            notebook_selector=[
                types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")])
            ],
            save=True,
        )
        super().__init__("ms-migrate", __version__, notebook_document_sync=notebooks)
        self.settings = SettingsCache()
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="ms-migrate-rules")
        self.open: dict[str, Open] = {}
        self.debounce = DEFAULT_DEBOUNCE_S
        self.docs_url: Optional[str] = None

    # --- what is open, as a buffer ----------------------------------------------------------------

    def buffer_of(self, key: str) -> Optional[Buffer]:
        """The text to analyse for ``key``; None for a document that is not Python."""
        notebook = self.workspace.get_notebook_document(notebook_uri=key)
        if notebook is not None:
            path = Path(to_fs_path(key) or key)
            cells = [
                CellText(
                    cell.document,
                    cell.kind == types.NotebookCellKind.Code,
                    self.workspace.get_text_document(cell.document).source,
                )
                for cell in notebook.cells
            ]
            return notebook_buffer(path, cells)
        document = self.workspace.text_documents.get(key)
        if document is None:
            return None
        path = Path(to_fs_path(key) or key)
        if path.suffix not in (".py", ".pyi") and document.language_id != "python":
            return None
        return python_buffer(path, document.source)

    def version_of(self, key: str) -> Optional[int]:
        notebook = self.workspace.get_notebook_document(notebook_uri=key)
        if notebook is not None:
            return notebook.version
        document = self.workspace.text_documents.get(key)
        return None if document is None else document.version

    def key_of(self, uri: str) -> str:
        """The notebook a cell's URI belongs to, else the URI itself."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    # --- analysing ------------------------------------------------------------------------------

    async def on_worker(self, work: Callable[[], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self.worker, work)

    def schedule(self, key: str, delay: float) -> None:
        """Analyse ``key`` after ``delay`` seconds, unless another change comes first.

        The debounce holds back only a change that comes within ``delay`` of the one before (a
        burst of typing coalesces into one run): a change after a pause, with nothing waiting,
        is analysed at once, so its diagnostics do not wait out the debounce too."""
        entry = self.open.setdefault(key, Open(key))
        idle = entry.pending is None or entry.pending.done()
        if delay:  # a change
            now, before = asyncio.get_running_loop().time(), entry.last_change
            entry.last_change = now
            if idle and now - before >= delay:
                delay = 0
        if not idle:
            entry.pending.cancel()  # type: ignore[union-attr]
        entry.pending = asyncio.ensure_future(self._analyse_later(entry, delay))

    async def _analyse_later(self, entry: Open, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        analysis = await self.current(entry.key)
        # Published with the versions of the text it is of: a text changed meanwhile has its own run.
        if (
            analysis is not None
            and self.open.get(entry.key) is entry
            and self.buffer_of(entry.key) == analysis.buffer
        ):
            self.publish(entry.key, analysis)

    async def current(self, key: str) -> Optional[Analysis]:
        """The analysis of ``key``'s text as it is now (the kept one while the text is unchanged)."""
        entry = self.open.get(key)
        buffer = self.buffer_of(key)
        if entry is None or buffer is None:
            return None
        if entry.analysis is not None and entry.analysis.buffer == buffer:
            fresh = entry.analysis
            if self.settings_unchanged(fresh):
                return fresh

        def analyse() -> Analysis:
            analysis = Analysis(buffer, self.settings.settings_for(buffer.path))
            analysis.findings  # noqa: B018 - computed here, on the worker
            return analysis

        analysis = await self.on_worker(analyse)
        if self.buffer_of(key) == buffer:  # a change that came meanwhile gets its own run
            entry.analysis = analysis
        return analysis

    def settings_unchanged(self, analysis: Analysis) -> bool:
        return self.settings.settings_for(analysis.buffer.path) is analysis.settings

    def publish(self, key: str, analysis: Analysis) -> None:
        buffer = analysis.buffer
        codec = self.workspace.position_codec
        if buffer.notebook is None:
            lines = source_lines(buffer.text)
            found = [lsp_diagnostic(item, lines, codec, self.docs_url) for item in analysis.findings]
            self._send(key, found, self.version_of(key))
            return
        by_cell: dict[int, list[types.Diagnostic]] = {position: [] for position in range(len(buffer.cells))}
        for item in analysis.findings:
            position, line_in_cell = buffer.cell_at(item.line)
            if position not in by_cell:
                continue
            cell = buffer.cells[position]
            offset = item.line - line_in_cell
            by_cell[position].append(
                lsp_diagnostic(item, source_lines(cell.text), codec, self.docs_url, line_offset=offset)
            )
        for position, found in by_cell.items():
            uri = buffer.cells[position].uri
            document = self.workspace.text_documents.get(uri)
            self._send(uri, found, None if document is None else document.version)

    def _send(self, uri: str, found: list[types.Diagnostic], version: Optional[int]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=version)
        )

    def reanalyse_all(self) -> None:
        self.settings.forget()
        for key in list(self.open):
            self.schedule(key, 0)

    def close(self, key: str) -> None:
        entry = self.open.pop(key, None)
        if entry is not None and entry.pending is not None:
            entry.pending.cancel()

    # --- code actions and hover -------------------------------------------------------------------

    def findings_at(self, analysis: Analysis, uri: str, span: types.Range) -> list[Diagnostic]:
        """The findings whose lines overlap ``span`` of the document ``uri`` (a cell's, for a notebook)."""
        buffer = analysis.buffer
        first, last = span.start.line + 1, span.end.line + 1
        found = []
        for item in analysis.findings:
            line, end = item.line, item.end[0]
            if buffer.notebook is not None:
                position, line_in_cell = buffer.cell_at(item.line)
                if buffer.cells[position].uri != uri:
                    continue
                line, end = line_in_cell, item.end[0] - (item.line - line_in_cell)
            if line <= last and end >= first:
                found.append(item)
        return found

    def versions(self, key: str, analysis: Analysis) -> Optional[tuple[Optional[int], dict[str, int]]]:
        """The versions of ``key`` (and of its cells) that ``analysis`` is of; None once the text
        has changed since (a request about an older text gets no edits)."""
        if self.buffer_of(key) != analysis.buffer:
            return None
        cells = {}
        for cell in analysis.buffer.cells:
            version = self.workspace.get_text_document(cell.uri).version
            if version is not None:
                cells[cell.uri] = version
        return self.version_of(key), cells

    def action(
        self,
        analysis: Analysis,
        key: str,
        versions: tuple[Optional[int], dict[str, int]],
        rewrite: Rewrite,
        diagnostics: list[types.Diagnostic],
    ) -> Optional[types.CodeAction]:
        buffer = analysis.buffer
        codec = self.workspace.position_codec
        edit = workspace_edit(buffer, key, versions[0], rewrite.text, codec, versions[1])
        if edit is None:
            return None
        kind = (
            types.CodeActionKind.SourceFixAll
            if rewrite.title.startswith("ms-migrate: fix all")
            else types.CodeActionKind.QuickFix
        )
        return types.CodeAction(
            title=rewrite.title,
            kind=kind,
            diagnostics=diagnostics or None,
            edit=edit,
            is_preferred=rewrite.preferred or None,
        )

    def explain(self, item: Diagnostic) -> str:
        from ms_migrate.application.explain import explanation
        from ms_migrate.core.codes import registry

        parts = [f"**{item.code}** {item.message}"]
        if item.code in registry():
            parts.append("```text\n" + explanation(item.code).rstrip("\n") + "\n```")
        link = docs_link(item.code, self.docs_url)
        if link is not None:
            parts.append(f"[{item.code} in the ms-migrate docs]({link})")
        return "\n\n".join(parts)


def _matching(item: Diagnostic, sent: list[types.Diagnostic]) -> list[types.Diagnostic]:
    """The client's copies of ``item`` among the diagnostics a code action request names."""
    return [
        diagnostic
        for diagnostic in sent
        if diagnostic.code == item.code
        and isinstance(diagnostic.data, dict)
        and diagnostic.data.get("line") == item.line
    ]


def build_server() -> MigrateServer:
    server = MigrateServer()
    _serve_documents(server)
    _serve_notebooks(server)
    _serve_requests(server)
    return server


def _serve_documents(server: MigrateServer) -> None:
    """The client's settings, and the text documents' lifecycle: each change is analysed again
    after the debounce, each close clears what was published."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: MigrateServer, params: types.InitializeParams) -> None:
        options: Any = params.initialization_options or {}
        if isinstance(options, dict):
            with contextlib.suppress(TypeError, ValueError):
                ls.debounce = max(0.0, float(options.get("debounceMs", DEFAULT_DEBOUNCE_S * 1000)) / 1000)
            if isinstance(options.get("docsUrl"), str):
                ls.docs_url = options["docsUrl"]

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MigrateServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(ls.key_of(params.text_document.uri), 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MigrateServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(ls.key_of(params.text_document.uri), ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MigrateServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(ls.key_of(params.text_document.uri), 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MigrateServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)
        ls._send(params.text_document.uri, [], None)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: MigrateServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.reanalyse_all()


def _serve_notebooks(server: MigrateServer) -> None:
    """A notebook's lifecycle, as a text document's: analysed whole, published per cell."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: MigrateServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: MigrateServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: MigrateServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: MigrateServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close(params.notebook_document.uri)
        for cell in params.cell_text_documents:
            ls._send(cell.uri, [], None)


def _serve_requests(server: MigrateServer) -> None:
    """What the client asks of a document: its code actions, and a hover's explanation."""

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]
        ),
    )
    async def code_action(
        ls: MigrateServer, params: types.CodeActionParams
    ) -> Optional[list[types.CodeAction]]:
        key = ls.key_of(params.text_document.uri)
        analysis = await ls.current(key)
        if analysis is None:
            return None
        versions = ls.versions(key, analysis)
        if versions is None:
            return None
        return await ls.on_worker(lambda: _code_actions(ls, params, key, analysis, versions))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: MigrateServer, params: types.HoverParams) -> Optional[types.Hover]:
        uri = params.text_document.uri
        analysis = await ls.current(ls.key_of(uri))
        if analysis is None:
            return None
        point = types.Range(start=params.position, end=params.position)
        # A hover anywhere on a finding's lines explains it: the squiggle of a site is often short.
        here = ls.findings_at(analysis, uri, point)
        if not here:
            return None
        text = "\n\n---\n\n".join(ls.explain(item) for item in here)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))


def _code_actions(
    ls: MigrateServer,
    params: types.CodeActionParams,
    key: str,
    analysis: Analysis,
    versions: tuple[Optional[int], dict[str, int]],
) -> list[types.CodeAction]:
    """The fixes of the findings in the range, the downgrades of its sites, an ignore comment for
    each finding, then fix-all and downgrade-all: those of the kinds the client asked for."""
    wanted, uri = params.context.only, params.text_document.uri
    actions: list[types.CodeAction] = []

    def add(rewrite: Optional[Rewrite], diagnostics: list[types.Diagnostic]) -> None:
        if rewrite is None:
            return
        made = ls.action(analysis, key, versions, rewrite, diagnostics)
        if made is not None and (not wanted or any(made.kind.startswith(kind) for kind in wanted)):
            actions.append(made)

    here = ls.findings_at(analysis, uri, params.range)
    for item in here:
        if item.fixable:
            add(analysis.fix_for((item.code, item.line)), _matching(item, list(params.context.diagnostics)))
    for site in analysis.downgrade_sites():
        if params.range.start.line + 1 <= site[1] <= params.range.end.line + 1 or any(
            item.line == site[1] for item in here
        ):
            add(analysis.downgrade_for(site), [])
    for item in here:
        add(analysis.ignore(item), _matching(item, list(params.context.diagnostics)))
    add(analysis.fix_all(), [])
    add(analysis.downgrade_all(), [])
    return actions


def serve() -> None:
    build_server().start_io()
