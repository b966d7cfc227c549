"""`ms-migrate runtime list | install | path`: the MindSpore runtimes verification runs on.

Exit codes: 0 done; 2 a runtime cannot be had here (one line each, saying why) or a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from ms_migrate import runtimes
from ms_migrate.application.config import ConfigError, load_config
from ms_migrate.facts.release_notes import releases_noted
from ms_migrate.facts.versions import Version, known_versions

EXIT_OK, EXIT_UNAVAILABLE = 0, 2


def configured(start: Optional[Path] = None) -> dict[Version, runtimes.Runtime]:
    """The project's ``[tool.ms-migrate.runtimes]``, checked; a usage error when it is wrong."""
    try:
        config = load_config(start or Path.cwd())
        if not config.runtimes:
            return {}
        return runtimes.configured_runtimes(
            config.runtimes, f"{config.source.split(' [')[0]} [tool.ms-migrate.runtimes]"
        )
    except (ConfigError, runtimes.RuntimeUnavailable) as error:
        raise click.UsageError(str(error)) from error


def _version(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[Version, ...]:
    try:
        return tuple(Version.parse(value) for value in values)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


@click.group("runtime")
def runtime_group() -> None:
    """The MindSpore runtimes `verify` runs on: one interpreter per version, made and cached here
    (~/.cache/ms-migrate/runtimes, or $MS_MIGRATE_RUNTIMES), or named in pyproject.toml under
    [tool.ms-migrate.runtimes] and trusted by you (`runtime trust`)."""


@runtime_group.command("list")
def list_runtimes() -> None:
    """Every version ms-migrate knows, and the interpreter that runs it here (or why none does)."""
    found = runtimes.available(configured())
    # The release lines a target may name, from the oldest one ms-migrate can make on: those it
    # cannot make (2.0-2.6, and 2.11 where the package index lacks it) are said so, with how to
    # name one's own.
    oldest = min(runtimes.RECIPES)
    known = {version for version in known_versions() if version >= oldest}
    versions = sorted({*runtimes.RECIPES, *found, *known})
    width = max(len(str(version)) for version in versions)
    for version in versions:
        runtime = found.get(version)
        if runtime is not None:
            line = f"{runtime.label} ({runtime.origin}): {runtime.python}"
        else:
            problem = runtimes.obstacle(version)
            line = (
                f"cannot be had here: {problem}"
                if problem
                else f"not installed: ms-migrate runtime install {version}"
            )
            if version not in runtimes.RECIPES:
                line += f'; name your own: [tool.ms-migrate.runtimes] "{version}" = "/path/to/python"'
        click.echo(f"{version!s:<{width}}  {line}")
        noted = releases_noted().get(version)
        if noted and runtime is None:
            # What the rules know of a release no runtime here shows: the changes its notes state.
            click.echo(f"{'':<{width}}  known from its release notes ({noted[0].notes}):")
            for change in noted:
                click.echo(f"{'':<{width}}    {change.kind} ({change.rule}): {change.summary}")


@runtime_group.command("install")
@click.argument("versions", nargs=-1, callback=_version, metavar="X.Y...")
@click.option(
    "--all", "install_all", is_flag=True, help="Every version ms-migrate can make that is not at hand yet."
)
@click.option("--force", is_flag=True, help="Make it again even where it exists.")
@click.option("-q", "--quiet", is_flag=True, help="Only the result of each version.")
def install_runtimes(versions: tuple[Version, ...], install_all: bool, force: bool, quiet: bool) -> None:
    """Make the runtime of each version (about a minute each; the wheels are large)."""
    if install_all == bool(versions):
        raise click.UsageError("name the versions to install (e.g. 1.7 2.8), or pass --all")
    if install_all:
        at_hand = runtimes.available(configured())
        versions = tuple(version for version in runtimes.RECIPES if force or version not in at_hand)
    failed = 0
    for version in versions:
        try:
            runtime = runtimes.install(version, log=(lambda _: None) if quiet else _log, force=force)
        except runtimes.RuntimeUnavailable as error:
            failed += 1
            click.echo(f"{version}: cannot be had here: {error}", err=True)
            continue
        click.echo(f"{version}: {runtime.label}: {runtime.python}")
    sys.exit(EXIT_UNAVAILABLE if failed else EXIT_OK)


def _log(line: str) -> None:
    click.echo(line, err=True)


@runtime_group.command("trust")
@click.argument("interpreters", nargs=-1, required=True, metavar="PATH...")
def trust_runtimes(interpreters: tuple[str, ...]) -> None:
    """Trust interpreters a repository names in [tool.ms-migrate.runtimes]: until then ms-migrate
    never runs them. Their real paths are kept in your configuration
    ($XDG_CONFIG_HOME/ms-migrate/trusted-interpreters), not in the repository."""
    failed = 0
    for python in interpreters:
        try:
            click.echo(f"trusted: {runtimes.trust(python)}")
        except runtimes.RuntimeUnavailable as error:
            failed += 1
            click.echo(f"cannot trust {error}", err=True)
    sys.exit(EXIT_UNAVAILABLE if failed else EXIT_OK)


@runtime_group.command("path")
@click.argument("version", metavar="X.Y")
def runtime_path(version: str) -> None:
    """Print the interpreter of VERSION (exit 2 when there is none here): for scripts and CI."""
    try:
        wanted = Version.parse(version)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error
    runtime = runtimes.available(configured()).get(wanted)
    if runtime is None:
        problem = runtimes.obstacle(wanted) or f"not installed: ms-migrate runtime install {wanted}"
        click.echo(f"{wanted}: {problem}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    click.echo(runtime.python)
