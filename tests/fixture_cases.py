"""Discovering golden fixture pairs under tests/fixtures/<rule>/."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

FIXTURES = Path(__file__).parent / "fixtures"
_PRAGMA = re.compile(rb"#\s*fixture:(?P<body>[^\r\n]*)")


@dataclass(frozen=True)
class FixtureCase:
    source: Path
    expected: Optional[Path]  # None: the file must stay byte-identical
    target: str
    left_alone: frozenset[str]
    expects_error: bool
    written_for: Optional[str] = None  # `from-version=1.10`: the release the code is written for

    @property
    def id(self) -> str:
        return f"{self.source.parent.name}/{self.source.stem}"

    @property
    def command(self) -> str:
        """`downgrade` for the cases under fixtures/downgrade/, else `upgrade`."""
        return "downgrade" if self.source.parent.name == "downgrade" else "upgrade"

    def migrate(self, text: str):  # type: ignore[no-untyped-def]
        """What the case's command makes of ``text`` on the case's target."""
        from ms_migrate.core.engine import downgrade_text, migrate_text
        from ms_migrate.facts.versions import Version

        run = downgrade_text if self.command == "downgrade" else migrate_text
        written_for = None if self.written_for is None else Version.parse(self.written_for)
        return run(text, Version.parse(self.target), written_for=written_for)

    @property
    def runnable(self) -> bool:
        """Runs before and after on the same MindSpore (tests/test_equivalence.py). The whole 1.x
        scripts under fixtures/scripts/ run before on 1.10 and after on the target instead
        (tests/test_whole_scripts.py)."""
        if self.source.parent.name == "scripts":
            return False
        return self.expected is not None and b'if __name__ == "__main__":' in self.source.read_bytes()


def _pragmas(*paths: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for path in paths:
        if not path.exists():
            continue
        for match in _PRAGMA.finditer(path.read_bytes()):
            for item in match.group("body").decode().split():
                key, _, value = item.partition("=")
                values[key] = value
    return values


def fixture_cases() -> list[FixtureCase]:
    cases = []
    for source in sorted(FIXTURES.glob("*/*.py")):
        if source.name.startswith("_") or source.name.endswith(".expected.py"):
            continue
        expected = source.with_name(source.stem + ".expected.py")
        unchanged = source.with_name(source.stem + ".unchanged")
        if expected.exists() == unchanged.exists():
            raise AssertionError(f"{source}: needs exactly one of .expected.py or .unchanged")
        pragmas = _pragmas(source, unchanged)
        codes = pragmas.get("left-alone", "")
        cases.append(
            FixtureCase(
                source=source,
                expected=expected if expected.exists() else None,
                target=pragmas.get("target-version", "2.10"),
                left_alone=frozenset(code for code in codes.split(",") if code),
                expects_error="error" in pragmas,
                written_for=pragmas.get("from-version"),
            )
        )
    return cases


def write_missing_expectations() -> None:
    """Dev aid: write `.expected.py` for new cases from the current output, for review by eye.

    `python -m tests.fixture_cases` - then read every new file before committing it.
    """
    from ms_migrate.files import sources

    for source in sorted(FIXTURES.glob("*/*.py")):
        if source.name.startswith("_") or source.name.endswith(".expected.py"):
            continue
        expected = source.with_name(source.stem + ".expected.py")
        unchanged = source.with_name(source.stem + ".unchanged")
        if expected.exists() or unchanged.exists():
            continue
        read = sources.read_source(source)
        pragmas = _pragmas(source)
        target = pragmas.get("target-version", "2.10")
        case = FixtureCase(source, None, target, frozenset(), False, pragmas.get("from-version"))
        result = case.migrate(read.text)
        if result.text == read.text:
            unchanged.write_text("")
            print(f"unchanged: {unchanged}")
        else:
            expected.write_bytes(read.encode(result.text))
            print(f"expected:  {expected}")
        for item in result.diagnostics:
            print(f"    {source.name}:{item.line} {item.code} {item.message}")


if __name__ == "__main__":
    write_missing_expectations()
