"""Locating the rule data that ships with the package (``rules/`` in the source tree)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

_PACKAGED = Path(__file__).parents[1] / "_rules"
_SOURCE_TREE = Path(__file__).parents[2] / "rules"


def rules_path(name: str) -> Path:
    """Path of a data file from ``rules/``, in a wheel or in a source checkout."""
    for folder in (_PACKAGED, _SOURCE_TREE):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"rule data {name!r} is missing from this installation")


def rules_folder(name: str) -> Optional[Path]:
    """A folder of data files from ``rules/``, or None where this installation has none."""
    for folder in (_PACKAGED, _SOURCE_TREE):
        candidate = folder / name
        if candidate.is_dir():
            return candidate
    return None
