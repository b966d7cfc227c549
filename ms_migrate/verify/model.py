"""What a verification is asked to do and what it found: options, one result per site and mode,
and a report per file. Plain values, shared by the parent process, the worker and the renderers.

Defaults fit float32 training over a few steps. The MS101 rewrites are exact in theory, but a
merged forward or a different graph may round differently in the last bit; ``rtol=1e-5`` and
``atol=1e-6`` accept that and nothing larger (a dropped loss scale or a doubled gradient is off
by orders of magnitude more). A number passes when ``|after - before| <= atol + rtol * |before|``,
numpy's ``isclose`` rule.
"""

from __future__ import annotations

import enum
import math
import os
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

MODES = ("pynative", "graph")
DEVICES = ("CPU", "GPU", "Ascend")
DEFAULT_STEPS = 3
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6
DEFAULT_TIMEOUT_S = 300.0
# Importing a training module normally takes seconds (MindSpore is already loaded in the worker);
# a module that waits on a server or loops forever at import should not cost the full run timeout.
DEFAULT_IMPORT_TIMEOUT_S = 60.0
# Address space, not resident memory: MindSpore maps about 2.5 GiB of virtual memory on CPU
# before running anything, and works under 3 GiB. 16 GiB stops a runaway allocation long before it
# hurts the machine. On GPU and Ascend the driver reserves huge address ranges, so no limit there.
DEFAULT_MEMORY_LIMIT_MB = 16384

EXIT_EQUAL, EXIT_DIFFERS, EXIT_NOT_RUN = 0, 1, 2
# --sandbox was asked for and this machine cannot provide it: nothing ran. Apart from 2 so that a
# CI job can tell "this runner cannot sandbox" from "the code could not be run".
EXIT_NO_SANDBOX = 3


class Verdict(str, enum.Enum):
    EQUAL = "equal"
    DIFFERS = "differs"
    NOT_RUN = "could not run"


# Like diff(1): trouble (2) outranks a difference (1), which outranks equality (0).
_RANK = {Verdict.EQUAL: 0, Verdict.DIFFERS: 1, Verdict.NOT_RUN: 2}


@dataclass(frozen=True)
class VerifyOptions:
    device: str = "CPU"
    # The accelerators workers spread over (worker slot i on ids[i % len]); (): MindSpore's
    # default device (verify/devices.py).
    device_ids: tuple[int, ...] = ()
    modes: tuple[str, ...] = MODES
    steps: int = DEFAULT_STEPS
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    timeout_s: float = DEFAULT_TIMEOUT_S  # per site and mode, not counting the imports
    import_timeout_s: float = DEFAULT_IMPORT_TIMEOUT_S  # per module import, at most timeout_s
    memory_limit_mb: Optional[int] = None  # None: the device's default; 0: no limit
    python: Optional[str] = None  # interpreter with MindSpore; default: this one
    # BEFORE's interpreter when it is another runtime than AFTER's (a downgrade: BEFORE on the
    # newest MindSpore, AFTER on the target); None: the same as AFTER's.
    before_python: Optional[str] = None
    workers: Optional[int] = None  # worker processes; default: one per core, at most 4
    seed: int = 0
    sandbox: bool = False  # user code may write only its scratch directory (sandbox.py)
    # What --install-requirements made: (interpreter, requirements file, folders) for each file
    # installed; a pair's workers import from the folders of its nearest file.
    installed: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    @property
    def memory_limit_bytes(self) -> Optional[int]:
        limit = self.memory_limit_mb
        if limit is None:
            limit = DEFAULT_MEMORY_LIMIT_MB if self.device == "CPU" else 0
        return limit * 2**20 if limit else None

    @property
    def import_limit_s(self) -> float:
        """A site's own timeout is also the most its module's import may take."""
        return min(self.import_timeout_s, self.timeout_s)

    @property
    def interpreter(self) -> str:
        # Absolute: workers start in a scratch directory.
        return os.path.abspath(self.python) if self.python else sys.executable

    @property
    def split(self) -> bool:
        """BEFORE and AFTER run on different interpreters (so in different workers)."""
        return self.before_python is not None and os.path.abspath(self.before_python) != self.interpreter

    def but(self, **changes: Any) -> VerifyOptions:
        return replace(self, **changes)


@dataclass
class SiteResult:
    """One site in one mode: the verdict, how far apart the numbers were, and why."""

    site: str
    line: int
    mode: str
    verdict: Verdict
    steps: int = 0
    max_abs_diff: Optional[float] = None
    max_rel_diff: Optional[float] = None
    reason: str = ""
    harness: str = ""
    detail: str = ""  # the error behind the reason, when the reason is advice (shown under it)
    runtime: str = ""  # the MindSpore release that ran it: "2.8.0", or "2.10.0 -> 1.7.0" (BEFORE -> AFTER)
    where: str = ""  # where a user finds the line, when not in a file's lines: "cell 4:1" of a notebook

    @property
    def label(self) -> str:
        if self.where:
            return f"{self.site} ({self.where})"
        return f"{self.site}:{self.line}" if self.line else self.site

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        for key in ("max_abs_diff", "max_rel_diff"):
            value = data[key]
            # JSON has no inf/nan; a string keeps the fact without breaking strict parsers.
            if value is not None and not math.isfinite(value):
                data[key] = str(value)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SiteResult:
        values = dict(data)
        values["verdict"] = Verdict(values["verdict"])
        for key in ("max_abs_diff", "max_rel_diff"):
            if isinstance(values.get(key), str):
                values[key] = float(values[key])
        return cls(**values)


def worst(verdicts: list[Verdict]) -> Verdict:
    return max(verdicts, key=_RANK.__getitem__, default=Verdict.EQUAL)


@dataclass
class VerificationReport:
    """Everything verification found for one before/after pair."""

    path: Path
    results: list[SiteResult] = field(default_factory=list)
    # Processes the code under verification left running, which verify ended: "PID (command)".
    ended: list[str] = field(default_factory=list)
    # The release fixes of the rewrite ("MS211:15"), taken as proven (each a pair the release
    # facts prove) and applied to BEFORE before it ran; `upgrade --verify` only.
    release_fixes: list[str] = field(default_factory=list)
    # "BEFORE and AFTER" where the run does not select the release rules (`--select MS101`): the
    # output keeps the old names, and AFTER ran with the fixes too.
    release_fixes_on: str = "BEFORE"
    # The project modules both versions imported with the release fixes applied, in place of
    # their files: "src/adam.py (MS211:23)"; `upgrade --verify` only.
    fixed_modules: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        return worst([result.verdict for result in self.results])

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.EQUAL

    @property
    def exit_code(self) -> int:
        return _RANK[self.verdict]

    def summary(self) -> str:
        """One line for people: the counts, then the first problem."""
        if not self.results:
            if self.release_fixes:
                return f"{self.release_fixes_text()}; nothing else to run"
            return "no differing site: nothing to run"
        counts = {verdict: 0 for verdict in Verdict}
        for result in self.results:
            counts[result.verdict] += 1
        parts = [f"{count} {verdict.value}" for verdict, count in counts.items() if count]
        text = f"{len(self.results)} site run{'s' * (len(self.results) != 1)}: " + ", ".join(parts)
        problem = next((result for result in self.results if result.verdict is self.verdict), None)
        if problem is not None and problem.verdict is not Verdict.EQUAL:
            text += f" ({problem.label}, {problem.mode}: {problem.verdict.value}: {problem.reason})"
        return text

    def release_fixes_text(self) -> str:
        """The release fixes, which were not run but taken as proven (docs/release-pairs.md)."""
        count = len(self.release_fixes)
        fixes = ", ".join(self.release_fixes)
        return f"{count} release fix{'es' * (count != 1)} ({fixes}) proven by the release facts"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "verdict": self.verdict.value,
            "exit_code": self.exit_code,
            "sites": [result.to_json() for result in self.results],
            "ended_processes": self.ended,
            "release_fixes": self.release_fixes,
            "release_fixes_on": self.release_fixes_on,
            "fixed_modules": self.fixed_modules,
        }
