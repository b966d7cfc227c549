"""The language server under an editor's load: latency of diagnostics, and memory over a session.

Run: .venv/bin/python benchmarks/bench_lsp.py [latency|memory|both] [--sites N] [--minutes M]

- latency: a 2,000-line legacy file is open (train-step Cells with GradOperation, the Cells,
  functions and configs of a model zoo around them, some deprecated calls); after a warm-up, each
  edit is one `textDocument/didChange`, and the time is until the `publishDiagnostics` of that
  version arrives. Measured with the server's default debounce and with none (the analysis
  alone). Goal: under 150 ms on a 2-core machine.
- memory: a compressed hour of editing the same file. A minute of editing is taken as 60
  keystrokes in 12 bursts of 5 (each burst ends in a pause, so diagnostics are published 12
  times), a quick-fix request every 2 minutes and a hover every minute: the same messages an
  hour brings, sent without the pauses' wall time. The server's resident memory is read from
  /proc every 5 simulated minutes. Goal: flat (what the first minutes allocate, no growth after).

The server is the real one (`python -m ms_migrate server`) over stdio, driven by pygls' client.
Nothing here asserts: benchmarks are not tests.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from synthetic_tree import CELL, CONFIG, DEPRECATED, FUNCTION

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ms101"
LEGACY_STEP = (FIXTURES / "cell_get_by_list.py").read_text(encoding="utf-8")
STEP = LEGACY_STEP[LEGACY_STEP.index("class TrainOneStep") : LEGACY_STEP.index('if __name__ == "__main__"')]
HEADER = (
    "import numpy as np\n"
    "import mindspore\n"
    "import mindspore.nn as nn\n"
    "import mindspore.ops as ops\n"
    "from mindspore import ParameterTuple\n"
    "from mindspore.ops import composite as C\n"
)


def legacy_file(lines: int = 2000, sites: int = 6, seed: int = 0) -> str:
    """About ``lines`` lines: ``sites`` legacy train steps spread among ordinary code."""
    chance = random.Random(seed)
    parts, count, part = [HEADER], HEADER.count("\n"), 0
    every = max(lines // max(sites, 1), 1)
    placed = 0
    while count < lines:
        if placed < sites and count >= placed * every:
            text = "\n\n" + STEP.replace("TrainOneStep", f"TrainOneStep{placed}")
            placed += 1
        else:
            template = chance.choice((CELL, CELL, FUNCTION, FUNCTION, CONFIG, DEPRECATED))
            text = template.format(
                index=part,
                channels=chance.choice((32, 64, 128)),
                size=chance.choice((224, 256, 384)),
                lr=chance.choice((0.1, 0.01, 0.001)),
                epochs=chance.randint(10, 300),
                batch=chance.choice((16, 32, 64)),
            )
            part += 1
        parts.append(text)
        count += text.count("\n")
    return "".join(parts)


class Session:
    """One server and one open file; ``edit`` changes a comment on the last line."""

    def __init__(self, path: Path, text: str, debounce_ms: Optional[float]) -> None:
        self.path, self.text, self.debounce_ms = path, text, debounce_ms
        self.uri = path.as_uri()
        self.version = 1
        self.client = LanguageClient("ms-migrate-bench", "1")
        self.arrived: dict[int, float] = {}  # version -> when its diagnostics came
        self.waiting: dict[int, asyncio.Future[float]] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            now = time.perf_counter()
            if params.version is not None:
                self.arrived[params.version] = now
                future = self.waiting.pop(params.version, None)
                if future is not None and not future.done():
                    future.set_result(now)

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "ms_migrate", "server")
        options = {} if self.debounce_ms is None else {"debounceMs": self.debounce_ms}
        params = types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=self.path.parent.as_uri(),
            initialization_options=options,
        )
        await self.client.initialize_async(params)
        self.client.initialized(types.InitializedParams())
        item = types.TextDocumentItem(uri=self.uri, language_id="python", version=1, text=self.text)
        waiting = self._expect(1)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        await waiting

    def _expect(self, version: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if version in self.arrived:
            future.set_result(self.arrived[version])
        else:
            self.waiting[version] = future
        return future

    def edit(self) -> int:
        """Type one character into a comment at the end of the file; returns the new version."""
        lines = self.text.splitlines(keepends=True)
        at = types.Position(line=len(lines), character=0)
        addition = f"# edit {self.version}\n"
        self.text += addition
        self.version += 1
        change = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=addition)
        document = types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(text_document=document, content_changes=[change])
        )
        return self.version

    async def edit_and_wait(self) -> float:
        """One edit, and the seconds until its diagnostics arrive."""
        started = time.perf_counter()
        version = self.edit()
        return await self._expect(version) - started

    async def burst(self, keystrokes: int) -> None:
        for _ in range(keystrokes - 1):
            self.edit()
        await self.edit_and_wait()

    async def quick_fixes(self, line: int) -> None:
        span = types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
        )
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri),
            range=span,
            context=types.CodeActionContext(diagnostics=[]),
        )
        await self.client.text_document_code_action_async(params)

    async def hover(self, line: int) -> None:
        position = types.Position(line=line, character=8)
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri), position=position
        )
        await self.client.text_document_hover_async(params)

    def resident_kib(self) -> int:
        server = self.client._server
        assert server is not None
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return -1

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def _site_line(text: str) -> int:
    return next(number for number, line in enumerate(text.splitlines()) if "GradOperation(" in line)


async def latency(text: str, path: Path, edits: int = 40, warm_up: int = 5) -> None:
    print(f"file: {text.count(chr(10))} lines, {text.count('GradOperation(')} GradOperation sites")
    for debounce, label in ((None, "default debounce"), (0, "no debounce (the analysis alone)")):
        session = Session(path, text, debounce)
        await session.start()
        for _ in range(warm_up):
            await session.edit_and_wait()
        times = []
        for _ in range(edits):
            times.append(await session.edit_and_wait())
            await asyncio.sleep(0.05)  # a pause between keystrokes: each edit is analysed on its own
        await session.stop()
        times.sort()
        print(
            f"didChange -> publishDiagnostics, {label}: median {statistics.median(times) * 1000:.0f} ms, "
            f"p90 {times[int(len(times) * 0.9)] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms ({edits} edits)"
        )


async def memory(text: str, path: Path, minutes: int = 60) -> None:
    session = Session(path, text, None)
    await session.start()
    line = _site_line(text)
    samples: list[tuple[int, int]] = []
    started = time.perf_counter()
    for minute in range(minutes + 1):
        if minute % 5 == 0:
            samples.append((minute, session.resident_kib()))
        if minute == minutes:
            break
        for burst in range(12):
            await session.burst(5)
            if burst == 0:
                await session.hover(line)
        if minute % 2 == 0:
            await session.quick_fixes(line)
    elapsed = time.perf_counter() - started
    await session.stop()
    print(
        f"simulated {minutes} min of editing ({minutes * 60} keystrokes, {minutes * 12} analyses, "
        f"{(minutes + 1) // 2} quick-fix requests, {minutes} hovers) in {elapsed:.0f} s"
    )
    print("minute  resident memory (MiB)")
    for minute, kib in samples:
        print(f"{minute:6}  {kib / 1024:8.1f}")
    after_warm_up = [kib for minute, kib in samples if minute >= 10] or [samples[-1][1]]
    print(
        f"growth from minute 10 to the end: {(after_warm_up[-1] - after_warm_up[0]) / 1024:+.1f} MiB "
        f"(peak {max(kib for _, kib in samples) / 1024:.1f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", choices=("latency", "memory", "both"), default="both")
    parser.add_argument("--sites", type=int, default=6, help="legacy train steps in the file (default 6)")
    parser.add_argument("--minutes", type=int, default=60, help="simulated minutes of editing (default 60)")
    arguments = parser.parse_args()
    text = legacy_file(sites=arguments.sites)
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / ".git").mkdir()
        (project / "pyproject.toml").write_text('[tool.ms-migrate]\ntarget-version = "2.10"\n')
        path = project / "legacy_train.py"
        path.write_text(text)
        if arguments.what in ("latency", "both"):
            asyncio.run(latency(text, path))
        if arguments.what in ("memory", "both"):
            asyncio.run(memory(text, path, arguments.minutes))


if __name__ == "__main__":
    main()
