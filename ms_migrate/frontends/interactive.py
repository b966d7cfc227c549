"""`upgrade --interactive`: show each site's change on its own and ask whether to make it.

A site is a diagnostic whose fix the engine applied, known by its code and line. The change shown
for a site is the file migrated with every other site declined, so it is a validated rewrite of
its own. A declined site is treated as if its line carried `# ms-migrate: ignore[CODE]` (without
the comment being written): once every site of a file has an answer, the file is migrated again
with the declined ones, and that text is written only if it converts exactly the accepted sites.
Like every rewrite it compiles and is a fixed point (the engine's checks).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

import click

from ms_migrate.application.runner import FileOutcome
from ms_migrate.core.engine import FileResult
from ms_migrate.reasons import INTERNAL_ERROR
from ms_migrate.reporting.report import Stream, print_diff, unified_diff

Site = tuple[str, int]  # (code, line in the text as read)
# The file migrated again with these sites declined.
Migrate = Callable[[frozenset[Site]], FileResult]


class Answer(enum.Enum):
    YES = "y"
    NO = "n"
    REST = "a"  # this site and the rest of the file's
    QUIT = "q"


@dataclass
class Review:
    """What to make of one file once its sites have answers."""

    text: Optional[str] = None  # what to write; None: nothing
    converted: int = 0  # diagnostics whose fix is in ``text``
    quit: bool = False  # stop after this file
    problem: Optional[str] = None  # why nothing is written although sites were accepted
    declined: list[Site] = field(default_factory=list)  # answered no, not convertible alone, or after quit


def review(out: Stream, outcome: FileOutcome, migrate: Migrate) -> Review:
    """Ask about each site of ``outcome``'s file, then settle what to write.

    The end of the input (or Ctrl-C at the prompt) counts as quit. Quitting keeps the answers
    already given for this file (as `git add -p` does); no site after it is changed.
    """
    whole = migrate(frozenset())
    every = whole.sites
    accepted: list[Site] = []
    declined: list[Site] = []
    answer: Optional[Answer] = None
    for number, site in enumerate(every, 1):
        if answer is Answer.REST:
            accepted.append(site)
            continue
        code, line = site
        alone = whole if len(every) == 1 else migrate(frozenset(every) - {site})
        heading = f"{outcome.path}:{outcome.where(line)}: {code} {_message(whole, site)}"
        if alone.sites != [site] or _problem(alone):
            out.print(f"{heading}: cannot be converted on its own; left as it is")
            declined.append(site)
            continue
        out.print(f"{heading} (site {number} of {len(every)})")
        print_diff(out, unified_diff(str(outcome.path), outcome.before, alone.text))
        answer = _ask()
        if answer is Answer.QUIT:
            declined += every[number - 1 :]
            break
        if answer is Answer.NO:
            declined.append(site)
        else:
            accepted.append(site)
    reviewed = _settled(outcome, every, accepted, migrate, whole, quit=answer is Answer.QUIT)
    # A rewrite the engine refused in the end leaves every site as it is.
    reviewed.declined = declined if reviewed.text is not None else list(every)
    return reviewed


def _settled(
    outcome: FileOutcome,
    every: list[Site],
    accepted: list[Site],
    migrate: Migrate,
    whole: FileResult,
    quit: bool,
) -> Review:
    """The file migrated with the sites not accepted declined, if that converts exactly the
    accepted ones and passes the engine's checks."""
    if not accepted:
        return Review(quit=quit)
    declined = frozenset(every) - set(accepted)
    result = migrate(declined) if declined else whole
    problem = _problem(result)
    if problem is None and set(result.sites) != set(accepted):
        problem = "without the declined sites the rewrite would change other sites than those accepted"
    if problem is not None or result.text == outcome.before:
        return Review(quit=quit, problem=problem or "the accepted sites change nothing on their own")
    return Review(result.text, len(result.fixed), quit)


def _problem(result: FileResult) -> Optional[str]:
    """Why the engine refused the rewrite (MSR099), if it did."""
    return next((item.message for item in result.diagnostics if item.code == INTERNAL_ERROR.code), None)


def _message(result: FileResult, site: Site) -> str:
    return next(item.message for item in result.fixed if (item.code, item.line) == site)


def _ask() -> Answer:
    try:
        choice = click.prompt(
            "Convert this site? [y]es, [n]o (leave it), [a]ll the rest of this file, [q]uit",
            type=click.Choice([answer.value for answer in Answer], case_sensitive=False),
            show_choices=False,
        )
    except click.Abort:
        return Answer.QUIT
    return Answer(choice.lower())
