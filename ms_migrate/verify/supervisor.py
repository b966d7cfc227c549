"""Worker processes seen from the parent: one per mode, fed a job, watched with a timeout per site,
and restarted past a crash so that one bad site never costs the others their results.

Modes run side by side (one thread each, waiting on its worker's pipe). A worker that dies or
overruns is killed with its process group; the site it was running is reported with the reason,
and a fresh worker picks up the sites that are left.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Optional

from ms_migrate.verify.model import Verdict, VerifyOptions

# `import mindspore` takes 2-5 s on an idle machine; a loaded CI box can take much longer.
STARTUP_TIMEOUT_S = 180.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def worker_environment(mode: str, device: str) -> dict[str, str]:
    env = dict(os.environ)
    # The worker must import this very ms_migrate, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.setdefault("GLOG_v", "3")  # MindSpore's C++ logger: errors only
    env["MS_MIGRATE_MODE"] = mode
    env["MS_MIGRATE_DEVICE"] = device
    return env


def not_run(reason: str) -> dict[str, Any]:
    return {"verdict": Verdict.NOT_RUN.value, "reason": reason, "steps": 0, "harness": "none"}


def tail(text: str, lines: int = 1) -> str:
    meaningful = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(meaningful[-lines:])


class Worker:
    """One worker process and a thread that turns its protocol stream into a queue of events."""

    _live: ClassVar[set[Worker]] = set()
    _lock = threading.Lock()

    def __init__(self, job: dict, options: VerifyOptions, workdir: Path) -> None:
        # Closed in stop(); a file, not a pipe, so a chatty worker can never block on stderr.
        self.stderr = tempfile.TemporaryFile(dir=workdir)  # noqa: SIM115
        command = [options.interpreter, "-m", "ms_migrate.verify.worker"]
        command += ["--memory", str(options.memory_limit_bytes or 0)]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=workdir,  # MindSpore writes rank_0/ and analyze_fail.ir into the working directory
            env=worker_environment(job["mode"], job["device"]),
            start_new_session=True,  # its own process group, so a kill takes its children too
            text=True,
            encoding="utf-8",
        )
        with Worker._lock:
            Worker._live.add(self)
        self.events: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(job))
            self.process.stdin.close()
        except OSError:
            pass  # it died already; the empty stream and the exit status will say why

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.events.put(line)
        self.events.put(None)

    def next_event(self, timeout: float) -> Optional[dict]:
        """The next event, None at the end of the stream; raises queue.Empty on timeout."""
        while True:
            line = self.events.get(timeout=timeout)
            if line is None:
                return None
            with contextlib.suppress(ValueError):
                return json.loads(line)

    def death(self) -> str:
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.stop()
            code = self.process.returncode
        self.stderr.seek(0)
        last = tail(self.stderr.read().decode("utf-8", "replace"))
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            text = f"the worker died with signal {name}"
        else:
            text = f"the worker exited with status {code}"
        return f"{text}: {last}" if last else text

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                self.process.kill()
            self.process.wait()
        with Worker._lock:
            Worker._live.discard(self)
        self.stderr.close()

    @classmethod
    def stop_all(cls) -> None:
        with cls._lock:
            live = list(cls._live)
        for worker in live:
            worker.stop()


def _job(files: Sequence[dict], pending: set[int], mode: str, options: VerifyOptions) -> dict:
    selected = []
    for file_job in files:
        sites = [site for site in file_job["sites"] if site["id"] in pending]
        if sites:
            selected.append({**file_job, "sites": sites})
    return {
        "mode": mode,
        "device": options.device,
        "steps": options.steps,
        "rtol": options.rtol,
        "atol": options.atol,
        "seed": options.seed,
        "files": selected,
    }


def run_mode(files: Sequence[dict], mode: str, options: VerifyOptions, workdir: Path) -> dict[int, dict]:
    """Results by site id for every site in ``files``, in one mode."""
    order = [site["id"] for file_job in files for site in file_job["sites"]]
    results: dict[int, dict] = {}
    while True:
        pending = [site for site in order if site not in results]
        if not pending:
            return results
        worker = Worker(_job(files, set(pending), mode, options), options, workdir)
        current: Optional[int] = None
        ready = False
        try:
            while True:
                limit = options.timeout_s if ready else max(STARTUP_TIMEOUT_S, options.timeout_s)
                try:
                    event = worker.next_event(limit)
                except queue.Empty:
                    if not ready:
                        reason = f"MindSpore did not start within {limit:g} s"
                        results.update({site: not_run(reason) for site in pending})
                    else:
                        results[current if current is not None else pending[0]] = not_run(
                            f"timed out after {limit:g} s"
                        )
                    break
                if event is None:
                    if any(site not in results for site in pending):
                        reason = worker.death()
                        if not ready:
                            results.update({site: not_run(reason) for site in pending})
                        else:
                            results[current if current is not None else pending[0]] = not_run(reason)
                    break
                kind = event.pop("event", None)
                if kind == "ready":
                    ready = True
                elif kind == "fatal":
                    results.update(
                        {site: not_run(event["reason"]) for site in pending if site not in results}
                    )
                    break
                elif kind == "begin":
                    current = event["site"]
                elif kind == "result":
                    results[event.pop("site")] = event
                    current = None
        finally:
            worker.stop()


def run_modes(files: Sequence[dict], options: VerifyOptions, workdir: Path) -> dict[str, dict[int, dict]]:
    """Every mode at once, one worker each; on 2 cores the modes overlap almost perfectly."""
    if not any(file_job["sites"] for file_job in files):
        return {mode: {} for mode in options.modes}
    pool = ThreadPoolExecutor(max_workers=len(options.modes))
    try:
        futures = {mode: pool.submit(run_mode, files, mode, options, workdir) for mode in options.modes}
        return {mode: future.result() for mode, future in futures.items()}
    except BaseException:
        Worker.stop_all()  # Ctrl-C: no worker outlives the command
        raise
    finally:
        pool.shutdown(wait=False)
