"""Worker processes seen from the parent: a few workers pull (site, mode) tasks from one queue,
each task watched with a timeout, and a worker that crashes or overruns is replaced, so one bad
site never costs the others their results. A user module's import has its own, shorter limit: one
that never returns costs its file's tasks that limit once, not the site timeout per task.

One queue for both modes keeps every core busy to the end: GRAPH tasks cost about twice as much
as PYNATIVE ones, so one worker per mode would leave a core idle while GRAPH catches up.
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
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Optional

from ms_migrate.verify import leftovers, sandbox
from ms_migrate.verify.devices import id_for_slot
from ms_migrate.verify.model import Verdict, VerifyOptions

# `import mindspore` takes 2-5 s on an idle machine; a loaded CI box can take much longer.
STARTUP_TIMEOUT_S = 180.0
MAX_AUTO_WORKERS = 4
SIGNAL_DEATH = "the worker died with signal"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def worker_environment(mode: Optional[str], device: str) -> dict[str, str]:
    env = dict(os.environ)
    # The worker must import this very ms_migrate, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.setdefault("GLOG_v", "3")  # MindSpore's C++ logger: errors only
    # The worker imports the project's modules from the user's tree, where Python would leave a
    # __pycache__ beside them: a dry run, or a check, leaves the tree as it found it.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if mode:  # a worker sets it per task itself
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
        if options.sandbox:
            command = [*sandbox.command_prefix(workdir, options.interpreter), "--", *command]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=workdir,  # MindSpore writes rank_0/ and analyze_fail.ir into the working directory
            env=worker_environment(None, job["device"]),
            start_new_session=True,  # its own process group, so a kill takes its children too
            text=True,
            encoding="utf-8",
        )
        with Worker._lock:
            Worker._live.add(self)
        self.events: queue.Queue[Optional[str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(job)

    def send(self, message: dict) -> bool:
        """One line to the worker; False if it is gone (its exit status will say why)."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
            return True
        except OSError:
            return False

    def finish(self) -> None:
        """No more tasks: the worker exits when it reads the end of its stdin; what it started
        and left behind in its process group ends with it (``stop``)."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)

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
        try:
            self.stderr.seek(0)
            last = tail(self.stderr.read().decode("utf-8", "replace"))
        except ValueError:  # stopped meanwhile (Ctrl-C): its stderr is closed, and moot
            last = ""
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            text = f"{SIGNAL_DEATH} {name}"
        else:
            text = f"the worker exited with status {code}"
        return f"{text}: {last}" if last else text

    def stop(self) -> None:
        """End the worker and its whole process group: a process the code under verification
        started (a `sleep 12; touch x` in the background) must not outlive the command, even
        once the worker itself has exited."""
        alive = self.process.poll() is None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:  # no process is left in the group
            if alive:
                self.process.kill()
        if alive:
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


def _setup(files: Sequence[dict], options: VerifyOptions, sides: Sequence[str]) -> dict:
    return {
        "sides": list(sides),
        "device": options.device,
        "steps": options.steps,
        "rtol": options.rtol,
        "atol": options.atol,
        "seed": options.seed,
        "files": list(files),
    }


Task = tuple[int, str]  # (site id, mode)


class Schedule:
    """The shared task queue and the results, for the worker threads."""

    def __init__(
        self,
        tasks: Sequence[Task],
        file_of: Optional[dict[int, int]] = None,
        payloads: Optional[dict[Task, dict]] = None,
    ) -> None:
        self.pending: deque[Task] = deque(tasks)
        self.payloads = payloads or {}  # what a task line carries besides its site and mode
        self.results: dict[Task, dict] = {}
        self.file_of = file_of or {}  # site id -> index of its file
        self.retried: dict[Task, str] = {}  # task -> why its first worker died
        self.lock = threading.Lock()

    def take(self) -> Optional[Task]:
        with self.lock:
            return self.pending.popleft() if self.pending else None

    def again(self, task: Task, problem: str) -> bool:
        """Run ``task`` once more, first, in a fresh worker, when its worker was killed by a
        signal for the first time: MindSpore 2.10 sometimes aborts a process at a random call
        after a GRAPH compile failed ("PyThreadState_Get: ... the GIL is released", about one
        run in two of the same site), and a crash it does not repeat says nothing of the rewrite.
        False (and nothing queued) for a second death, or one that no signal caused."""
        with self.lock:
            if not problem.startswith(SIGNAL_DEATH) or task in self.retried:
                return False
            self.retried[task] = problem
            self.pending.appendleft(task)
            return True

    def why_not_run(self, task: Task, problem: str) -> str:
        """The reason a task that gave no result is reported with, its first death named."""
        with self.lock:
            first = self.retried.get(task)
        if first is None:
            return problem
        if problem.startswith(SIGNAL_DEATH):
            return f"{problem} (a fresh worker died too)"
        return f"{problem} (after {first.partition(':')[0]}, in a fresh worker)"

    def with_retry_said(self, task: Task, result: dict) -> dict:
        """``result``, its detail saying so when it came from a second worker."""
        with self.lock:
            first = self.retried.get(task)
        if first is not None:
            said = f"run again in a fresh worker after {first.partition(':')[0]}"
            result["detail"] = "; ".join(filter(None, [result.get("detail"), said]))
        return result

    def record(self, task: Task, result: dict) -> None:
        with self.lock:
            self.results[task] = result

    def fail_file(self, task: Task, reason: str) -> None:
        """An import of the task's file hung: its other tasks would import it again and hang too."""
        with self.lock:
            file = self.file_of.get(task[0])
            same = [other for other in self.pending if self.file_of.get(other[0]) == file]
            for other in [task, *same]:
                self.results[other] = not_run(reason)
            self.pending = deque(other for other in self.pending if other not in same)

    def fail_all(self, reason: str, also: Optional[Task] = None) -> None:
        """Nothing can run (no MindSpore, no device): every remaining task gets the reason."""
        with self.lock:
            for task in [*([also] if also else []), *self.pending]:
                self.results[task] = not_run(reason)
            self.pending.clear()


def _await(worker: Worker, timeout: float) -> tuple[Optional[dict], str]:
    """The next event, or None and why none came (timeout, or the worker's death)."""
    try:
        event = worker.next_event(timeout)
    except queue.Empty:
        return None, f"timed out after {timeout:g} s"
    if event is None:
        return None, worker.death()
    return event, ""


class Reply(NamedTuple):
    event: Optional[dict]  # the task's result, or None
    problem: str = ""  # why no result came
    import_hung: bool = False  # the file's import, not the site, ran out of time


def _await_result(worker: Worker, options: VerifyOptions) -> Reply:
    """The task's result, each user-module import held to the import limit and the run to the
    site's timeout (which starts again after an import)."""
    importing: Optional[dict] = None
    while True:
        limit = options.import_limit_s if importing else options.timeout_s
        try:
            event = worker.next_event(limit)
        except queue.Empty:
            if importing is None:
                return Reply(None, f"timed out after {limit:g} s")
            where = f" ({importing['path']})" if importing.get("path") else ""
            return Reply(None, f"{importing['what']}: import did not finish in {limit:g} s{where}", True)
        if event is None:
            return Reply(None, worker.death())
        kind = event.get("event")
        if kind == "importing":
            importing = event
        elif kind == "imported":
            importing = None
        else:
            return Reply(event)


def _serve(schedule: Schedule, setup: dict, options: VerifyOptions, workdir: Path, slot: int = 0) -> None:
    """One worker slot: start a worker, feed it tasks, replace it when it dies or overruns. Slot
    ``slot`` keeps to one accelerator of ``options.device_ids``."""
    setup = {**setup, "device_id": id_for_slot(options.device_ids, slot)}
    while True:
        task = schedule.take()
        if task is None:
            return
        try:
            worker = Worker(setup, options, workdir)
        except OSError as error:  # the interpreter is gone or cannot be run
            schedule.fail_all(f"cannot start {options.interpreter}: {error.strerror or error}", also=task)
            return
        try:
            startup = max(STARTUP_TIMEOUT_S, options.timeout_s)
            event, problem = _await(worker, startup)
            if event is None or event.get("event") == "fatal":
                reason = problem or event["reason"]  # type: ignore[index]
                if problem.startswith("timed out"):
                    reason = f"MindSpore did not start within {startup:g} s"
                schedule.fail_all(reason, also=task)
                return
            while task is not None:
                if not worker.send({"site": task[0], "mode": task[1], **schedule.payloads.get(task, {})}):
                    schedule.record(task, not_run(worker.death()))
                    break
                event, problem, import_hung = _await_result(worker, options)
                if event is None:
                    if import_hung:
                        schedule.fail_file(task, problem)
                    elif not schedule.again(task, problem):
                        schedule.record(task, not_run(schedule.why_not_run(task, problem)))
                    break
                event.pop("event", None)
                event.pop("site", None)
                event.pop("mode", None)
                schedule.record(task, schedule.with_retry_said(task, event))
                task = schedule.take()
            else:
                worker.finish()
        finally:
            worker.stop()


def worker_count(options: VerifyOptions, tasks: int) -> int:
    if options.workers:
        return max(1, min(options.workers, tasks))
    if options.device_ids:  # one worker per accelerator
        return max(1, min(len(options.device_ids), tasks))
    # Each worker costs an `import mindspore` (2-5 s) and ~0.5 GB: more than the cores never pays.
    return max(1, min(os.cpu_count() or 1, tasks, MAX_AUTO_WORKERS))


def run_tasks(
    files: Sequence[dict],
    options: VerifyOptions,
    workdir: Path,
    sides: Sequence[str] = ("before", "after"),
    payloads: Optional[dict[Task, dict]] = None,
) -> dict[Task, dict]:
    """Results by (site id, mode) for every site in ``files`` and every mode in ``options`` (only
    the tasks of ``payloads``, with what each carries, when that is given), on ``options``'
    interpreter, running the versions named by ``sides``."""
    tasks = [(site["id"], mode) for file_job in files for site in file_job["sites"] for mode in options.modes]
    if payloads is not None:
        tasks = [task for task in tasks if task in payloads]
    if not tasks:
        return {}
    file_of = {site["id"]: index for index, file_job in enumerate(files) for site in file_job["sites"]}
    schedule = Schedule(tasks, file_of, payloads)
    setup = _setup(files, options, sides)
    count = worker_count(options, len(tasks))
    threads = [
        threading.Thread(target=_serve, args=(schedule, setup, options, workdir, slot), daemon=True)
        for slot in range(count)
    ]
    before = leftovers.children()
    leftovers.become_subreaper()
    try:
        with _terminate_as_interrupt():
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.5)  # short waits keep Ctrl-C responsive
    except BaseException:
        Worker.stop_all()  # Ctrl-C, SIGTERM: no worker outlives the command
        raise
    finally:
        leftovers.end_new(before)
    return schedule.results


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP end the run as Ctrl-C does: workers stopped, the scratch directory
    (copies of the user's files) removed. Their default ends the process on the spot, leaving
    both."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    caught = [sig for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if sig]
    previous = {sig: signal.signal(sig, interrupt) for sig in caught}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
