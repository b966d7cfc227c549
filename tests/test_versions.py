from __future__ import annotations

from pathlib import Path

import pytest

from ms_migrate.versions import Version, detect_target, lowest_allowed, spelling_for


@pytest.mark.parametrize(
    ("specs", "expected"),
    [(">=2.2,<3", "2.2"), ("==1.10.1", "1.10"), ("~=2.3.0", "2.3"), (">1.8", "1.9"), ("<3", None)],
)
def test_lowest_allowed(specs: str, expected: str | None) -> None:
    version = lowest_allowed(specs)
    assert (str(version) if version else None) == expected


def test_spelling_table() -> None:
    assert spelling_for(Version(1, 7)).module is None
    assert spelling_for(Version(1, 10)).module == "mindspore.ops"
    assert spelling_for(Version(2, 7)).sens == "forward-scaling"
    assert spelling_for(Version(2, 8)).sens == "sens_param"
    assert Version.parse("2.10") > Version.parse("2.9")


def test_detect_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = [\n  "mindspore>=2.5",\n]\n')
    (tmp_path / "src").mkdir()
    detected = detect_target(tmp_path / "src")
    assert detected is not None and detected.version == Version(2, 5)
