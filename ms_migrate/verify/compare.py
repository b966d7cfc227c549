"""Comparing what two runs produced: step outputs and state, with one tolerance rule.

A number passes when ``|after - before| <= atol + rtol * |before|`` (numpy's ``isclose``); NaN
equals NaN. The reported relative difference is ``|after - before| / max(|after|, |before|)``,
which stays finite and is 0 for two zeros.

``Tally`` accumulates across everything compared for one site and mode and remembers the first
mismatch, which is what a person wants to see first. The array path needs numpy (it runs in the
worker); ``compare_numbers`` is plain Python for script mode, where the parent compares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Tally:
    rtol: float
    atol: float
    max_abs: float = 0.0
    max_rel: float = 0.0
    compared: int = 0
    first_mismatch: Optional[str] = None

    def mismatch(self, what: str) -> None:
        if self.first_mismatch is None:
            self.first_mismatch = what

    def arrays(self, before: Any, after: Any, what: str) -> None:
        """Compare two numpy arrays of the same shape."""
        import numpy as np

        left = np.asarray(before, dtype=np.float64)
        right = np.asarray(after, dtype=np.float64)
        if left.shape != right.shape:
            self.mismatch(
                f"{what} differs in shape: {list(left.shape)} in BEFORE, {list(right.shape)} in AFTER"
            )
            return
        if left.size == 0:
            return
        self.compared += left.size
        both_nan = np.isnan(left) & np.isnan(right)
        with np.errstate(invalid="ignore", over="ignore"):
            difference = np.where(both_nan, 0.0, np.abs(right - left))
            difference = np.where(np.isnan(difference), np.inf, difference)
            scale = np.maximum(np.abs(left), np.abs(right))
            relative = np.where(difference == 0, 0.0, difference / np.where(scale == 0, 1.0, scale))
            relative = np.where(np.isnan(relative), np.inf, relative)
        self.max_abs = max(self.max_abs, float(difference.max()))
        self.max_rel = max(self.max_rel, float(relative.max()))
        if not np.all(difference <= self.atol + self.rtol * np.abs(left)):
            self.mismatch(f"{what} differs")

    def numbers(self, before: Sequence[float], after: Sequence[float], what: str) -> None:
        """Plain-Python twin of ``arrays`` for flat lists of floats."""
        if len(before) != len(after):
            self.mismatch(f"{what} differ in count: {len(before)} in BEFORE, {len(after)} in AFTER")
        for index, (left, right) in enumerate(zip(before, after)):
            self.compared += 1
            if math.isnan(left) and math.isnan(right):
                continue
            difference = abs(right - left)
            if math.isnan(difference):
                difference = math.inf
            scale = max(abs(left), abs(right))
            relative = 0.0 if difference == 0 else (difference / scale if scale else math.inf)
            self.max_abs = max(self.max_abs, difference)
            self.max_rel = max(self.max_rel, relative if not math.isnan(relative) else math.inf)
            if not difference <= self.atol + self.rtol * abs(left):
                self.mismatch(f"{what} differ (number {index + 1})")


def compare_numbers(before: Sequence[float], after: Sequence[float], rtol: float, atol: float) -> Tally:
    tally = Tally(rtol, atol)
    tally.numbers(before, after, "printed numbers")
    return tally
