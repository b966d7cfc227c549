"""A baseline: the findings a repository has today, so that `check` reports only new ones.

A legacy repository adopting the pre-commit hook has hundreds of findings nobody can fix in the
commit that adds it (MS210 on `nn.Momentum`, ...). ``check --write-baseline FILE`` records them;
``check --baseline FILE`` (or ``baseline = "FILE"`` in ``[tool.ms-migrate]``) leaves them out.

A finding is matched by its code, its file (relative to the baseline's folder) and a hash of its
source line with whitespace collapsed, never by line number: code that moves, or lines added
above it, do not bring it back. A line that holds the same finding twice, or two equal lines,
are counted, so a third copy of the same deprecated call is new. This is how the baselines of
other ecosystems match (PHPStan's counts per message and file, detekt's and Psalm's signatures
of the code rather than its position).

Pure: findings and source lines in, a JSON text or a filtered list out; the CLI reads and writes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ms_migrate import __version__

FORMAT = 1
Key = tuple[str, str, str]  # (path relative to the baseline's folder, code, line hash)


class BaselineError(Exception):
    """A baseline that cannot be used: missing, not JSON, or not a baseline of this format."""


@dataclass(frozen=True)
class Finding:
    """One reported finding, as a baseline sees it."""

    path: Path
    code: str
    line_text: str  # the source line it is on


def line_hash(line_text: str) -> str:
    normalised = " ".join(line_text.split())
    return hashlib.sha256(normalised.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def relative_path(path: Path, folder: Path) -> str:
    """``path`` as the baseline names it: relative to its folder with `/`, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path(os.path.abspath(folder))).as_posix()
    except ValueError:
        return absolute.as_posix()


def key(finding: Finding, folder: Path) -> Key:
    return (relative_path(finding.path, folder), finding.code, line_hash(finding.line_text))


def dumps(findings: Iterable[Finding], folder: Path, target: str, kept: Optional[Counter[Key]] = None) -> str:
    """The baseline of ``findings`` for a file in ``folder``, with the ``kept`` entries of an
    earlier one: sorted, so that rewriting it after a fix changes only the lines of what was
    fixed."""
    counts = Counter(key(finding, folder) for finding in findings)
    counts.update(kept or Counter())
    entries = [
        {"path": path, "code": code, "line-hash": digest, "count": count}
        for (path, code, digest), count in sorted(counts.items())
    ]
    data = {"ms-migrate-baseline": FORMAT, "tool": f"ms-migrate {__version__}", "target": target}
    data["findings"] = entries  # type: ignore[assignment]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class Baseline:
    folder: Path
    counts: Counter[Key]
    # What ``take`` has not matched yet, over the files of a run so far.
    _left: Optional[Counter[Key]] = field(default=None, repr=False, compare=False)

    @classmethod
    def loads(cls, text: str, folder: Path, where: str) -> Baseline:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise BaselineError(f"{where}: not a baseline (invalid JSON: {error})") from None
        if not isinstance(data, dict) or data.get("ms-migrate-baseline") != FORMAT:
            raise BaselineError(
                f"{where}: not an ms-migrate baseline of format {FORMAT}; write one with "
                "`ms-migrate check --write-baseline FILE`"
            )
        counts: Counter[Key] = Counter()
        for entry in data.get("findings", ()):
            try:
                path, code, digest, count = entry["path"], entry["code"], entry["line-hash"], entry["count"]
            except (KeyError, TypeError):
                message = f"{where}: an entry lacks path, code, line-hash or count: {entry!r}"
                raise BaselineError(message) from None
            strings = all(isinstance(value, str) for value in (path, code, digest))
            if not strings or not isinstance(count, int) or isinstance(count, bool):
                raise BaselineError(f"{where}: an entry of the wrong types: {entry!r}")
            counts[(path, code, digest)] += count
        return cls(folder, counts)

    def outside(self, read: Iterable[Path]) -> Counter[Key]:
        """The entries of files not among ``read``: what a run over part of the tree (`check
        src/ --write-baseline`) did not look at, and so keeps as they were."""
        names = {relative_path(path, self.folder) for path in read}
        return Counter({entry: count for entry, count in self.counts.items() if entry[0] not in names})

    def take(self, findings: Sequence[Finding], keep: bool = True) -> list[bool]:
        """Whether each of ``findings`` is in the baseline, the first ones of a key being the
        baseline's, as ``new_findings`` decides; the entries matched stay taken for the next call
        (`upgrade` asks once per file), unless not ``keep`` (a look ahead)."""
        if self._left is None:
            self._left = Counter(self.counts)
        left = self._left if keep else Counter(self._left)
        taken = []
        for finding in findings:
            found = key(finding, self.folder)
            taken.append(left[found] > 0)
            if taken[-1]:
                left[found] -= 1
        return taken

    @property
    def untaken(self) -> int:
        """How many entries ``take`` has matched nothing to: fixed since the baseline was written."""
        return sum((self.counts if self._left is None else self._left).values())

    def new_findings(self, findings: Sequence[Finding]) -> tuple[list[int], int]:
        """The positions in ``findings`` of those not in the baseline (the first ones of a key
        are the baseline's), and how many baseline entries matched nothing (fixed since)."""
        left = Counter(self.counts)
        new = []
        for position, finding in enumerate(findings):
            found = key(finding, self.folder)
            if left[found] > 0:
                left[found] -= 1
            else:
                new.append(position)
        return new, sum(left.values())
