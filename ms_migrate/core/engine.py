"""Running rules over one file's text: select, prefilter, check, drop suppressed, fix, validate.

Pure: text in, text and diagnostics out. Nothing here reads or writes files. The engine knows no
rule by name: each declares its kind, targets and prefilter tokens, and yields diagnostics whose
fixes are text edits. A file that no selected rule's prefilter matches is never parsed.
"""

from __future__ import annotations

import ast
import threading
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from ms_migrate.analysis.names import loaded_names
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.context import FileContext
from ms_migrate.core.codes import all_notes, all_reasons
from ms_migrate.core.parsing import ParseFailure, check_compiles, parse_ast, precheck
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, apply_edits, in_characters, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.reasons import INTERNAL_ERROR
from ms_migrate.rewrite.import_changes import addition_edits, removal_edits
from ms_migrate.rules.base import Rule, all_rules

__all__ = [
    "CHECK_KINDS",
    "FileResult",
    "ParseFailure",
    "downgrade_text",
    "migrate_text",
    "rules_of_kind",
    "run_rules",
]

# What `upgrade` runs: the upgrade rules, and the lint rules, whose exact fixes make code run on
# the target. `downgrade` swaps the first. `check` reports what either would do: a downgrade
# rule finds only what is newer than its target (`mindspore.jit` at 1.9), which no upgrade rule
# rewrites, so the two never meet at one site.
UPGRADE_KINDS = ("upgrade", "lint")
DOWNGRADE_KINDS = ("downgrade", "lint")
CHECK_KINDS = ("upgrade", "downgrade", "lint")


@dataclass
class FileResult:
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)  # positions in the input text
    fixed: list[Diagnostic] = field(default_factory=list)  # those whose fix is in ``text``

    @property
    def converted(self) -> int:
        return len(self.fixed)

    @property
    def sites(self) -> list[tuple[str, int]]:
        """(code, line) of each converted site, in order: what `upgrade --interactive` asks about
        and an editor offers one by one."""
        return list(dict.fromkeys((item.code, item.line) for item in self.fixed))


def rules_of_kind(kinds: Sequence[str]) -> tuple[Rule, ...]:
    return tuple(rule for rule in all_rules() if rule.kind in kinds)


def run_rules(
    text: str,
    target: Version,
    rules: Sequence[Rule],
    project: Optional[ProjectIndex] = None,
    path: Optional[Path] = None,
    fix: bool = True,
    declined: Collection[tuple[str, int]] = (),
    written_for: Optional[Version] = None,
) -> FileResult:
    """Diagnostics of ``rules`` for ``text`` on ``target``, and the text with their fixes when
    ``fix``. Without ``fix`` a rule may leave its fixes out (MS101 then never parses with libcst),
    so what is reported is what the rules find, not what validation would let through.

    ``written_for``: the release the code was written for (the project's pin below the target,
    or `from-version`), which the rules for a change of meaning compare the target with.

    ``declined``: (code, line) pairs suppressed as if the line carried `# ms-migrate: ignore[CODE]`
    (the sites `upgrade --interactive` was told to leave); the fixed point is checked with them
    still suppressed, at their lines in the fixed text.

    A fix that overlaps an earlier one waits: the rules run again on the fixed text, up to
    MAX_PASSES in all, as ruff's fix loop does. The fixed text must compile and be a fixed point
    under the same rules, so a second run changes nothing; otherwise nothing is applied and
    MSR099 says why. Raises ParseFailure for text that Python
    rejects or that is too deep to process.
    """
    applicable = [rule for rule in rules if rule.selected_for(text, target, written_for)]
    if not applicable:
        return FileResult(text)
    outer, made = _made.contexts, []
    _made.contexts = made
    try:
        return _run_rules(text, target, rules, applicable, project, path, fix, declined, written_for)
    finally:
        _made.contexts = outer
        for context in made:
            context.release()


class _Made(threading.local):
    """The contexts one ``run_rules`` made (in this thread: the language server runs rules in
    its own), released when it returns."""

    contexts: Optional[list[FileContext]]

    def __init__(self) -> None:
        self.contexts = None


_made = _Made()


def _run_rules(
    text: str,
    target: Version,
    rules: Sequence[Rule],
    applicable: list[Rule],
    project: Optional[ProjectIndex],
    path: Optional[Path],
    fix: bool,
    declined: Collection[tuple[str, int]],
    written_for: Optional[Version],
) -> FileResult:
    project = project or ProjectIndex()
    declined = frozenset(declined)
    context = _context(text, target, path, project, fix, declined, compiled=False, written_for=written_for)
    diagnostics = _collect(context, applicable)
    # Only a file with something to rewrite is compiled: what parses but compiles in no Python
    # (`break` outside a loop) is then the user's syntax error, not a rewrite that failed. A file
    # with findings to read only is Python's to reject, as one with none is: compiling every file
    # cost a fifth of `check` over a model zoo, and those with a finding but no fix (1,510 of
    # 2,812 on mindspore-ai/models) 6% of it. A rewrite whose output compiles (validation
    # compiles it) needs no compile of its input: that is done only when the output fails.
    fixable = any(item.fixable for item in diagnostics)
    if fixable and not fix:
        check_compiles(context.tree)
    fixes = _non_overlapping(diagnostics)
    if not fix:  # reporting only: what a fix would supersede is not reported either
        chosen = [item for item in diagnostics if item.fix in fixes]
        edits, staged, _ = _first_stage(text, fixes)

        def still() -> Optional[set[tuple[str, str]]]:
            try:
                again = _context(staged, target, path, project, fix, declined, False, written_for)
                return _spans(staged, _collect(again, applicable))
            except ParseFailure:
                return None

        return FileResult(text, _superseded_dropped(text, diagnostics, chosen, edits, still))
    if not fixes:
        if fixable:
            check_compiles(context.tree)
        return FileResult(text, diagnostics)
    new_text, stages = _applied(text, fixes)
    applied = stages[0]
    fixed = [item for item in diagnostics if item.fix in fixes]
    skipped = [item for item in diagnostics if item.fix is not None and item.fix not in fixes]
    if skipped:  # fixes that overlapped one applied: the rules run again on the fixed text
        new_text, later = _fix_loop(new_text, stages, target, rules, path, project, declined, written_for)
        fixed += _fixed_later(skipped, Counter(item.code for item, _ in later))
    moved = frozenset((code, _line_after_stages(line, stages)) for code, line in declined)
    problem, after = _validate(new_text, target, applicable, path, project, moved, written_for)
    if problem is not None and not skipped and any(item.fix is not None for item in after):
        # A fix another one made possible: MS211 renames `ms_function` in an import, and then
        # MS210 may move the import to the module that replaces it. The finding the first pass
        # reported with its reason is the one fixed.
        new_text, later = _fix_loop(new_text, stages, target, rules, path, project, declined, written_for)
        moved = frozenset((code, _line_after_stages(line, stages)) for code, line in declined)
        problem, after = _validate(new_text, target, applicable, path, project, moved, written_for)
        if problem is None:
            enabled = _enabled_later([item for item in diagnostics if item.fix is None], later, stages)
            diagnostics = [enabled.get(id(item), item) for item in diagnostics]
            chosen = {id(item) for item in (*fixed, *enabled.values())}
            fixed = [item for item in diagnostics if id(item) in chosen]  # in the file's order
    if problem is None:
        superseded = _superseded_dropped(text, diagnostics, fixed, applied, lambda: _spans(new_text, after))
        return FileResult(new_text, superseded, fixed)
    check_compiles(context.tree)  # the input's own compile error is the user's, not the rewrite's
    rewriters = {rule.code for rule in applicable if rule.kind != "lint"}
    notes = all_notes()
    kept = [
        item
        for item in diagnostics
        if item.code not in notes and not (item in fixed and item.code in rewriters)
    ]
    return FileResult(text, _ordered([*kept, INTERNAL_ERROR.at(min(item.line for item in fixed), problem)]))


# ruff's fix loop runs up to 100 times; here a fix that overlapped another has found its place
# by the second pass in every case seen (MS101 and MS210 on one line), so a small cap does.
MAX_PASSES = 4


def _fix_loop(
    text: str,
    stages: list[tuple[Edit, ...]],
    target: Version,
    rules: Sequence[Rule],
    path: Optional[Path],
    project: ProjectIndex,
    declined: frozenset[tuple[str, int]],
    written_for: Optional[Version] = None,
) -> tuple[str, list[tuple[Diagnostic, int]]]:
    """Run the rules on ``text`` (the first pass's output) and apply their fixes until none is
    left, at most MAX_PASSES in all; ``stages`` gains each pass's edits. Returns the text and
    the findings whose fixes the later passes applied, each at its place in the text of its pass
    with the number of stages that text had been through. Validation decides whether any of it
    is kept."""
    later: list[tuple[Diagnostic, int]] = []
    for _ in range(MAX_PASSES - 1):
        applicable = [rule for rule in rules if rule.selected_for(text, target, written_for)]
        moved = frozenset((code, _line_after_stages(line, stages)) for code, line in declined)
        try:
            # Not compiled: validation compiles the text the loop ends with.
            context = _context(text, target, path, project, True, moved, False, written_for)
            again = _collect(context, applicable)
        except ParseFailure:
            break  # validation says why
        fixes = _non_overlapping(again)
        if not fixes:
            break
        later += [(item, len(stages)) for item in again if item.fix in fixes]
        text, more = _applied(text, fixes)
        stages += more
    return text, later


def _enabled_later(
    unfixed: list[Diagnostic], later: list[tuple[Diagnostic, int]], stages: Sequence[tuple[Edit, ...]]
) -> dict[int, Diagnostic]:
    """Of the first pass's findings left with a reason, those a later pass fixed at the same
    place once an earlier fix made it possible: by id, each as the later pass reported it, at its
    place in the input. Its fix has no edits to show there: they were made on a later pass's
    text."""
    found: dict[int, Diagnostic] = {}
    for item, passed in later:
        for first in unfixed:
            if (
                id(first) not in found
                and first.code == item.code
                and item.fix is not None
                and _line_after_stages(first.line, stages[:passed]) == item.line
            ):
                applied = Fix((), item.fix.safety, item.fix.description)
                found[id(first)] = replace(
                    first, message=item.message, fix=applied, replacement=item.replacement
                )
                break
    return found


def _fixed_later(skipped: list[Diagnostic], later: Counter[str]) -> list[Diagnostic]:
    """Of the first pass's diagnostics whose fix overlapped another, those a later pass fixed:
    as many of each code as it fixed, in order. Reported at their places in the input."""
    fixed: list[Diagnostic] = []
    left = Counter(later)
    for item in skipped:
        if left[item.code] > 0:
            left[item.code] -= 1
            fixed.append(item)
    return fixed


def migrate_text(
    text: str,
    target: Version,
    project: Optional[ProjectIndex] = None,
    path: Optional[Path] = None,
    written_for: Optional[Version] = None,
) -> FileResult:
    """What ``upgrade`` makes of ``text`` for MindSpore ``target``, with every rule it runs.

    ``project`` knows the other files of the run (network classes defined and built there);
    without it only this file is consulted. ``path`` is where ``text`` lives among them.
    ``written_for``: the release the code was written for, where known (run_rules).
    """
    return run_rules(text, target, rules_of_kind(UPGRADE_KINDS), project, path, written_for=written_for)


def downgrade_text(
    text: str,
    target: Version,
    project: Optional[ProjectIndex] = None,
    path: Optional[Path] = None,
    written_for: Optional[Version] = None,
) -> FileResult:
    """What ``downgrade`` makes of ``text`` for an older MindSpore ``target``."""
    return run_rules(text, target, rules_of_kind(DOWNGRADE_KINDS), project, path, written_for=written_for)


def _context(
    text: str,
    target: Version,
    path: Optional[Path],
    project: ProjectIndex,
    fixes: bool = True,
    declined: frozenset[tuple[str, int]] = frozenset(),
    compiled: bool = True,
    written_for: Optional[Version] = None,
) -> FileContext:
    context = FileContext(text, target, path, project, fixes, declined, written_for)
    if _made.contexts is not None:
        _made.contexts.append(context)
    context.__dict__["tree"] = precheck(text, compiled)  # the checked tree is the one rules read
    return context


def _collect(context: FileContext, rules: Sequence[Rule]) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for rule in rules:
        try:
            diagnostics = list(rule.check(context))
        except ParseFailure:
            raise
        except RecursionError as error:
            raise ParseFailure("too deeply nested to process", 0) from error
        except Exception as error:  # a bug in one rule costs its findings for this file, not the run
            found.append(INTERNAL_ERROR.at(1, f"rule {rule.code} failed: {type(error).__name__}: {error}"))
            continue
        found += _unsuppressed(context, rule, diagnostics)
    return _ordered(in_characters(found, context.text))


def _unsuppressed(context: FileContext, rule: Rule, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` without the suppressed and declined sites, whose fixes go with them. A fix
    that a kept site shares with a dropped one is not applied at all: applied, it would rewrite
    the site the user asked to keep."""
    dropped = [item for item in diagnostics if context.suppressed(item.code, item.line)]
    if not dropped:
        return diagnostics
    shared = {item.fix for item in dropped if item.fix is not None}
    kept: list[Diagnostic] = []
    for item in diagnostics:
        if item in dropped:
            continue
        if item.fix is not None and item.fix in shared:
            detail = f"rule {rule.code} gave it one fix with a suppressed site: none of it is applied"
            kept += [replace(item, fix=None), INTERNAL_ERROR.at(item.line, detail)]
        else:
            kept.append(item)
    return kept


def _superseded_dropped(
    text: str,
    diagnostics: list[Diagnostic],
    fixed: list[Diagnostic],
    applied: Sequence[Edit],
    still: Callable[[], Optional[Collection[tuple[str, str]]]] = lambda: None,
) -> list[Diagnostic]:
    """Without another rule's unfixed finding at the very place a fix was applied, or in text the
    fixes deleted (``applied``: their edits in ``text``, with the imports they left unused):
    that fix rewrote the code the finding was about (MS201's "no value_and_grad before 2.0" where
    MS301 downgraded the call and its import went). A finding whose line a fix moved (deleted
    here, the whole line inserted there: MS101 moves a loss-scale line into the forward it builds)
    stays, as it does where the fix replaces the lines around it: the code is still in the fixed
    text. A finding inside text another rule's fix replaced goes where the fixed text has no
    finding of its rule on the same text (``still``: the code and text of each finding there, asked
    for only then; None where not known): MS202's `sens_param=True` in the grad call MS302 made a
    GradOperation, whose own `sens_param=True` MS202 does not report."""
    places = {(item.line, item.col): item.code for item in fixed}
    distinct = {id(item.fix): (item.fix, item.code) for item in fixed if item.fix is not None}
    owners = {edit: code for fix, code in distinct.values() for edit in fix.edits}
    # Text deleted, with the rule that deleted it; "" for the engine's import changes.
    deleted = [
        (edit.start, edit.end, owners.get(edit, ""))
        for edit in applied
        if not edit.replacement and edit.start < edit.end
    ]
    replaced = [
        (edit.start, edit.end, owners.get(edit, ""))
        for edit in applied
        if edit.replacement and edit.start < edit.end
    ]
    kept_anyway = {**all_reasons(), **all_notes()}  # about the site, not the code that went
    found_after: list[Optional[Collection[tuple[str, str]]]] = []
    lines: list[str] = []  # the text's lines, split only for a finding in deleted text

    def superseded(item: Diagnostic) -> bool:
        if item.fix is not None or item.code in kept_anyway:
            return False
        if places.get((item.line, item.col), item.code) != item.code:
            return True
        where = (item.line, item.col)
        if any(start <= where < end and code != item.code for start, end, code in deleted):
            lines[:] = lines or source_lines(text)
            moved = _line_of(lines, item.line)  # the whole line: a name alone is in many insertions
            return not (moved and any(moved in edit.replacement for edit in applied))
        if not any(start <= where and item.end <= end and code != item.code for start, end, code in replaced):
            return False
        found_after[:] = found_after or [still()]
        lines[:] = lines or source_lines(text)
        written = _text_between(lines, where, item.end)
        return bool(written) and found_after[0] is not None and (item.code, written) not in found_after[0]

    return [item for item in diagnostics if not superseded(item)]


def _spans(text: str, diagnostics: list[Diagnostic]) -> set[tuple[str, str]]:
    """Each finding's code with the text it is about (one line's; "" across lines)."""
    lines = source_lines(text)
    return {(item.code, _text_between(lines, (item.line, item.col), item.end)) for item in diagnostics}


def _text_between(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text from ``start`` to ``end`` (lines from 1, columns from 0, in characters), on one
    line; "" where they are not on one line of ``lines``."""
    if start[0] != end[0] or not 1 <= start[0] <= len(lines):
        return ""
    return lines[start[0] - 1][start[1] : end[1]]


def _line_of(lines: list[str], line: int) -> str:
    """Line ``line`` (from 1) without its indentation and line break; "" outside ``lines``."""
    return lines[line - 1].strip() if 1 <= line <= len(lines) else ""


def _ordered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Unique, by line; on a line a rule's own finding first, then reasons, then notes."""
    reasons, notes = all_reasons(), all_notes()

    def key(item: Diagnostic) -> tuple[int, int, int, str]:
        group = 2 if item.code in notes else 1 if item.code in reasons else 0
        return (item.line, group, item.col, item.code)

    return sorted(dict.fromkeys(diagnostics), key=key)


def _overlaps(edit: Edit, taken: list[Edit]) -> bool:
    # Touching ranges overlap too when both are insertions at one point: their order is unknown,
    # except for whole lines inserted at a line's start (two sites' generated classes above one
    # statement), which go in the order of the fixes. The same edit twice is one edit (two fixes
    # sharing a generated attribute).
    return any(
        edit != other
        and not (_line_insertion(edit) and _line_insertion(other))
        and ((edit.start < other.end and other.start < edit.end) or edit.start == other.start)
        for other in taken
    )


def _line_insertion(edit: Edit) -> bool:
    return edit.start == edit.end and edit.start[1] == 0 and edit.replacement.endswith("\n")


def _merged(edits: Sequence[Edit]) -> tuple[Edit, ...]:
    """``edits`` without repeats, whole-line insertions at one point joined in their order."""
    merged: dict[tuple[object, ...], Edit] = {}
    for edit in dict.fromkeys(edits):
        key = ("insert", edit.start) if _line_insertion(edit) else ("edit", edit)
        earlier = merged.get(key)
        if earlier is not None:
            edit = Edit(edit.start, edit.end, earlier.replacement + edit.replacement)
        merged[key] = edit
    return tuple(merged.values())


def _non_overlapping(diagnostics: list[Diagnostic]) -> list[Fix]:
    chosen: list[Fix] = []
    taken: list[Edit] = []
    for item in diagnostics:
        if item.fix is None or item.fix in chosen:
            continue
        if any(_overlaps(edit, taken) for edit in item.fix.edits):
            continue
        chosen.append(item.fix)
        taken += item.fix.edits
    return chosen


def _applied(text: str, fixes: Sequence[Fix]) -> tuple[str, list[tuple[Edit, ...]]]:
    """``text`` with ``fixes`` applied and its imports settled once for all of them, and the
    edits of each stage, each on the text the one before left. The first stage is in ``text``'s
    positions: the fixes' edits (one that several fixes share, such as the attribute two sites of
    one Cell both use, once) and the imports they left unused; the second adds the imports."""
    edits, new_text, after = _first_stage(text, fixes)
    needed = [name for item in fixes for name in item.imports]
    if not needed:
        return new_text, [edits]
    try:
        after = after or parse_ast(new_text)
    except SyntaxError:
        return new_text, [edits]  # validation says why
    additions = addition_edits(new_text, after, needed)
    if not additions:
        return new_text, [edits]
    return apply_edits(new_text, additions), [edits, additions]


def _first_stage(text: str, fixes: Sequence[Fix]) -> tuple[tuple[Edit, ...], str, Optional[ast.Module]]:
    """The first stage of ``_applied``: its edits, the text they make, and that text's tree where
    finding the imports left unused parsed it. All that a report (no ``fix``) needs: which text
    the fixes would rewrite or delete."""
    edits = _merged([edit for item in fixes for edit in item.edits])
    new_text = apply_edits(text, edits)
    unused = [name for item in fixes for name in item.unused]
    if not unused:
        return edits, new_text, None
    try:
        after = parse_ast(new_text)
    except SyntaxError:
        return edits, new_text, None
    removals = removal_edits(text, parse_ast(text), unused, loaded_names(after))
    removals = tuple(edit for edit in removals if not _overlaps(edit, list(edits)))
    if not removals:
        return edits, new_text, after
    edits += removals
    new_text = apply_edits(text, edits)
    try:
        return edits, new_text, parse_ast(new_text)
    except SyntaxError:
        return edits, new_text, None


def _line_after_stages(line: int, stages: Sequence[tuple[Edit, ...]]) -> int:
    for edits in stages:
        line = _line_after(line, edits)
    return line


def _line_after(line: int, edits: Sequence[Edit]) -> int:
    """Where the start of ``line`` is once ``edits`` are applied. A line that an edit rewrote
    maps to where that edit starts: its site was changed, and the fixed-point check says so."""
    moved = line
    for edit in sorted(edits, key=lambda item: item.start):
        if edit.end <= (line, 0):
            moved += edit.replacement.count("\n") - (edit.end[0] - edit.start[0])
        elif edit.start <= (line, 0):
            return moved - (line - edit.start[0])
    return moved


def _validate(
    new_text: str,
    target: Version,
    rules: Sequence[Rule],
    path: Optional[Path],
    project: ProjectIndex,
    declined: frozenset[tuple[str, int]] = frozenset(),
    written_for: Optional[Version] = None,
) -> tuple[Optional[str], list[Diagnostic]]:
    """What is wrong with ``new_text`` (None: nothing), and its findings."""
    try:
        # The precheck parses and compiles it.
        context = _context(new_text, target, path, project, declined=declined, written_for=written_for)
    except ParseFailure as error:
        return f"output does not compile: {error.message} (line {error.line})", []
    applicable = [rule for rule in rules if rule.selected_for(new_text, target, written_for)]
    try:
        again = _collect(context, applicable)
    except ParseFailure as error:
        return f"output does not parse: {error.message}", []
    remaining = [item for item in again if item.fix is not None]
    if remaining:
        return f"output is not a fixed point: {len(remaining)} site(s) would change again", again
    return None, again
