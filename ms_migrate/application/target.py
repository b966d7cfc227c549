"""Which MindSpore a run writes for, and which release the code was written for: one resolution
for every front end (the command line, the language server), from --target-version, the
configuration and the project's MindSpore pin."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ms_migrate.facts.release_notes import releases_noted
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.versions import (
    Version,
    default_target,
    newest_allowed,
    newest_known,
    release_spans,
)
from ms_migrate.files.pins import DetectedTarget, detect_target
from ms_migrate.reporting.report import Stream


class TargetError(Exception):
    """No target can be settled without the user: the message says what to pass."""


def resolve_target(
    explicit: Optional[Version],
    paths: tuple[Path, ...],
    err: Stream,
    needs_target: bool = False,
    reads_only: bool = False,
    from_version: Optional[Version] = None,
) -> tuple[Version, str, Optional[Version]]:
    """The version to write code for: --target-version, else the project's lowest allowed one,
    else the default (unless ``needs_target``: downgrade's default would leave every file as is).
    Also the release the code is written for (``from_version``, else the pin where the target is
    another release, as a 1.10 project upgraded to 2.10 or a 2.8 one downgraded to 1.10), which
    the rules for a change of meaning measure from: None where nothing says it.

    The tool never writes code that a version the project allows cannot run, so a pin without a
    lower bound needs --target-version to write anything; what only reads (``reads_only``:
    `check`, the language server) checks for the newest version it allows, and says so (a pin
    such as `mindspore <= 2.3.0` stopped every command). A --target-version above the lowest
    allowed warns. A
    bare `mindspore` sets no bound at all (pip takes the newest), so the default stands. A version
    newer than the newest known is taken, with a warning: the tables read it as the newest known.
    Returns the version, how it was found (for --format json and SARIF), and the written-for release.
    """
    detected: Optional[DetectedTarget] = detect_target(paths[0] if paths else Path.cwd())
    if explicit is not None and needs_target:
        _check_downgrade_target(explicit, detected)
    if explicit is not None:
        if detected is not None and detected.version is not None and explicit > detected.version:
            err.print(
                f"warning: target {explicit} is above MindSpore {detected.version}, the lowest version "
                f"the project allows ({detected.source}); the output may not run there"
            )
        target, source = explicit, "explicit"
    elif detected is not None and detected.version is not None:
        source = f"lowest allowed by {detected.source}"
        err.print(f"target MindSpore {detected.version} ({source})")
        target = detected.version
    elif detected is not None and not detected.unpinned:
        newest = newest_allowed(detected.pin.specifier) if reads_only else None
        if newest is None:
            raise TargetError(
                f"{detected.source}: MindSpore has no lower bound, so the oldest runtime is unknown; "
                "pass --target-version"
            )
        source = f"newest allowed by {detected.source}, which sets no lower bound"
        err.print(f"target MindSpore {newest} ({source}; use --target-version for an older one)")
        target = newest
    else:
        target, source = _default(detected, needs_target, err)
    _say_what_is_known_of(target, err)
    if from_version is not None:
        _check_written_for(from_version, target, needs_target, reads_only, err)
    written_for = from_version
    if written_for is None and detected is not None and detected.version not in (None, target):
        written_for = detected.version
    if written_for is None and (detected is None or detected.version is None):
        _say_meaning_unmeasured(err)
    if written_for is not None and written_for != target:
        _say_how_written_for_is_read(written_for, err)
    return target, source, written_for


def _check_written_for(
    written_for: Version, target: Version, downgrading: bool, reads_only: bool, err: Stream
) -> None:
    """The release the code is written for is one the tables know, and on the side of the target
    the command goes from: an upgrade from a newer release than its target, or a downgrade from
    an older one, would report each change of meaning backwards."""
    newest = newest_known()
    if written_for > newest:
        raise TargetError(
            f"from-version {written_for}: no MindSpore newer than {newest} is known, so nothing says "
            "what code written for it means"
        )
    if reads_only:
        if written_for > target:
            err.print(
                f"warning: the code is written for MindSpore {written_for}, newer than the target "
                f"{target}; to rewrite it for {target}, use `ms-migrate downgrade --target-version {target}`"
            )
        return
    if not downgrading and written_for > target:
        raise TargetError(
            f"from-version {written_for} is newer than the target {target}: `ms-migrate downgrade "
            f"--target-version {target}` rewrites code for an older release"
        )
    if downgrading and written_for < target:
        raise TargetError(
            f"from-version {written_for} is older than the target {target}: `ms-migrate upgrade "
            f"--target-version {target}` rewrites code for a newer release"
        )


def _say_meaning_unmeasured(err: Stream) -> None:
    """Nothing says which release the code was written for: the rules for a change of meaning
    (a default, an update rule that differs between 1.x and 2.x) have nothing to measure from,
    and are silent. Said once, so that a 1.x script upgraded without a pin is not silently
    given 2.x's meanings."""
    from ms_migrate.rules.base import all_rules

    codes = ", ".join(sorted(rule.code for rule in all_rules() if rule.compares_releases))
    err.print(
        "note: no pin or --from-version says which MindSpore the code was written for, so the "
        f"changes of meaning since then ({codes}) are not reported; pass --from-version X.Y "
        "(1.10 for 1.x code)"
    )


def _say_how_written_for_is_read(written_for: Version, err: Stream) -> None:
    """A release whose runtime was not read (2.3, between 1.10 and 2.7) stands for the releases
    checked either side of it: what changed since is known where they agree, and is said so,
    lest a silence read as "nothing changed"."""
    facts = api_facts()
    if facts is None or written_for in facts.releases:
        return
    around = facts.around(written_for)
    read_as = (
        f"{around[0]} and {around[1]}: where those two differ, a call is reported with what it "
        "would mean either way"
        if len(around) == 2
        else f"{around[0]}, the nearest release read"
    )
    err.print(
        f"note: no runtime of MindSpore {written_for} was read (the releases read are "
        f"{release_spans(facts.releases)}), so the code is compared as written for {read_as}"
    )


def _check_downgrade_target(target: Version, detected: Optional[DetectedTarget]) -> None:
    """A downgrade goes to an older release: to one above the project's pin, or newer than any
    release known, it would apply the upgrade's release fixes under another name (`downgrade
    --target-version 3.0` rewrote a 2.10 project's imports), so it is refused, naming the command
    that writes for a newer release."""
    upgrade = f"to write for a newer release, run `ms-migrate upgrade --target-version {target}`"
    if detected is not None and detected.version is not None and target > detected.version:
        raise TargetError(
            f"downgrade goes to an older release: target {target} is above MindSpore {detected.version}, "
            f"the lowest version the project allows ({detected.source}); {upgrade}"
        )
    if target > newest_known():
        raise TargetError(
            f"downgrade goes to an older release: target {target} is newer than the newest version "
            f"ms-migrate knows ({newest_known()}); {upgrade}"
        )


def _default(detected: Optional[DetectedTarget], needs_target: bool, err: Stream) -> tuple[Version, str]:
    """The default target where nothing pins a version (none for a downgrade, which needs one)."""
    if detected is not None:
        why = f"{detected.pin.file} names {detected.pin.package} without a version"
    else:
        why = "no mindspore pin found"
    if needs_target:
        raise TargetError(
            f"downgrade needs an older target: pass --target-version X.Y ({why}, and the default, "
            f"{default_target()}, would leave every file as is)"
        )
    target, source = default_target(), f"default: {why}"
    err.print(f"target MindSpore {target} ({source}; use --target-version)")
    return target, source


def _say_what_is_known_of(target: Version, err: Stream) -> None:
    """A target newer than the newest release known is read as that release, and one known from
    its release notes alone is said to be."""
    newest = newest_known()
    if target > newest:
        err.print(
            f"warning: MindSpore {target} is newer than the newest version ms-migrate knows ({newest}); "
            f"using what it knows of {newest}"
        )
    noted = releases_noted().get(min(target, newest))
    if noted:
        # No runtime of it here: say so once, so that no one takes its names for read from it.
        rules = ", ".join(sorted({change.rule for change in noted}))
        err.print(
            f"note: MindSpore {min(target, newest)} is known from its release notes ({noted[0].notes}), "
            f"not from a runtime of it: the names it has are read as {default_target()}'s, and what "
            f"its notes change is reported ({rules})"
        )
