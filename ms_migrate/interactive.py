"""`upgrade --interactive`: show each file's rewrite and ask before writing it.

Fixit's interactive mode asks about each fix. Here the question is per file: a file's rewrite is
one validated whole (the engine checks that the result compiles and is a fixed point), and a
subset of its fixes was never validated.
"""

from __future__ import annotations

import enum

import click

from ms_migrate.report import Stream, print_diff, unified_diff
from ms_migrate.runner import FileOutcome


class Answer(enum.Enum):
    WRITE = "y"
    SKIP = "n"
    QUIT = "q"


def ask(out: Stream, outcome: FileOutcome) -> Answer:
    """Show the rewrite of one file as a diff and ask what to do with it. The end of the input (or
    Ctrl-C at the prompt) counts as quit: nothing more is written."""
    print_diff(out, unified_diff(str(outcome.path), outcome.before, outcome.after))
    try:
        choice = click.prompt(
            f"Write {outcome.path}? [y]es, [n]o (skip it), [q]uit",
            type=click.Choice([answer.value for answer in Answer], case_sensitive=False),
            show_choices=False,
        )
    except click.Abort:
        return Answer.QUIT
    return Answer(choice.lower())
