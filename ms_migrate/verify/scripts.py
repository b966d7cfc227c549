"""Script mode: run two whole scripts per mode and compare the numbers they print.

A stdout line that parses as JSON contributes every number in it (dict keys in sorted order);
any other line contributes each number written in it, so ``print(epoch, loss)`` works. The
scripts see ``MS_MIGRATE_MODE`` (pynative or graph) and ``MS_MIGRATE_DEVICE`` and may use them to
set MindSpore's context; a script that ignores them runs as it is written.

Each run gets the timeout, the memory limit and the same seeds (Python, numpy, MindSpore), through
``python -m ms_migrate.verify.limits``. A script runs in the caller's working directory; with
``--sandbox`` it can write only a scratch directory of its own (``$TMPDIR``), not that directory.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ms_migrate.verify import leftovers, sandbox
from ms_migrate.verify.compare import compare_numbers
from ms_migrate.verify.model import SiteResult, Verdict, VerificationReport, VerifyOptions
from ms_migrate.verify.supervisor import tail, worker_environment

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf)\b", re.IGNORECASE)


@dataclass
class ScriptRun:
    failure: str  # empty when the script exited 0
    lines: list[list[float]]

    @property
    def numbers(self) -> list[float]:
        return [number for line in self.lines for number in line]


def _flatten(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [number for key in sorted(value) for number in _flatten(value[key])]
    if isinstance(value, list):
        return [number for item in value for number in _flatten(item)]
    if isinstance(value, (int, float)):  # bool included: a printed flag is a result too
        return [float(value)]
    return []


def printed_numbers(stdout: str) -> list[list[float]]:
    """The numbers on each stdout line that has any."""
    lines = []
    for line in stdout.splitlines():
        text = line.strip()
        numbers: list[float] = []
        if text[:1] in ("{", "["):
            try:
                numbers = _flatten(json.loads(text))
            except ValueError:
                numbers = [float(token) for token in _NUMBER.findall(text)]
        else:
            numbers = [float(token) for token in _NUMBER.findall(text)]
        if numbers:
            lines.append(numbers)
    return lines


def run_script(script: Path, mode: str, options: VerifyOptions) -> ScriptRun:
    if not options.sandbox:
        return _run_script(script, mode, options, [])
    with tempfile.TemporaryDirectory(prefix=leftovers.scratch_prefix("script")) as scratch:
        return _run_script(
            script, mode, options, [*sandbox.command_prefix(Path(scratch), options.interpreter), "--"]
        )


def _run_script(script: Path, mode: str, options: VerifyOptions, prefix: list[str]) -> ScriptRun:
    command = [*prefix, options.interpreter, "-m", "ms_migrate.verify.limits"]
    command += ["--memory", str(options.memory_limit_bytes or 0), "--seed", str(options.seed), str(script)]
    # Files, not pipes: a process the script leaves in the background holds what it inherited,
    # and a pipe would keep the run waiting for that process rather than for the script.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=err,
            env=worker_environment(mode, options.device),
            start_new_session=True,
        )
        timed_out = False
        try:
            process.wait(timeout=options.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            leftovers.end_group(process.pid)  # what the script started in its group ends with it
            process.wait()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if timed_out:
        return ScriptRun(f"timed out after {options.timeout_s:g} s", printed_numbers(stdout))
    failure = ""
    if process.returncode:
        code = process.returncode
        status = f"signal {signal.Signals(-code).name}" if code < 0 else f"status {code}"
        failure = f"exited with {status}: {tail(stderr)}"
    return ScriptRun(failure, printed_numbers(stdout))


def _row(name: str, mode: str, before: ScriptRun, after: ScriptRun, options: VerifyOptions) -> SiteResult:
    row = SiteResult(name, 0, mode, Verdict.NOT_RUN, harness="script")
    if before.failure:
        detail = f"{before.failure}; AFTER: {after.failure}" if after.failure else before.failure
        row.reason = f"{'both versions fail' if after.failure else 'BEFORE fails'}: {detail}"
        return row
    if not before.lines:
        row.reason = "BEFORE printed no numbers to compare"
        return row
    row.steps = len(before.lines)
    if after.failure:
        row.verdict, row.reason = Verdict.DIFFERS, f"AFTER fails while BEFORE runs: {after.failure}"
        return row
    tally = compare_numbers(before.numbers, after.numbers, options.rtol, options.atol)
    row.max_abs_diff, row.max_rel_diff = tally.max_abs, tally.max_rel
    if tally.first_mismatch is None:
        row.verdict = Verdict.EQUAL
    else:
        row.verdict, row.reason = Verdict.DIFFERS, tally.first_mismatch
    return row


def verify_scripts(before: Path, after: Path, options: VerifyOptions) -> VerificationReport:
    """Both scripts in every mode, two runs at a time (raises ``sandbox.SandboxUnavailable`` first
    when ``options.sandbox`` asks for what this machine cannot do)."""
    if options.sandbox:
        sandbox.check(options.interpreter, worker_environment(None, options.device))
    runs = [(mode, script) for mode in options.modes for script in (before, after)]
    children = leftovers.children()
    leftovers.become_subreaper()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda run: run_script(run[1], run[0], options), runs))
    finally:
        leftovers.end_new(children)  # every script has ended: what is new was left by one
    report = VerificationReport(after, ended=leftovers.take_ended())
    for index, mode in enumerate(options.modes):
        report.results.append(_row(before.name, mode, results[2 * index], results[2 * index + 1], options))
    return report
