"""Where a project's own files are looked for: the folders from a path up to its repository root.

Every search for project files (the ``[tool.ms-migrate]`` table, the MindSpore pins, the verify
table whose factory `upgrade --verify` imports and runs) walks these folders and no others, so a
``pyproject.toml`` above the repository never configures it. Outside a repository the walk goes
up to the file system's root, as before.
"""

from __future__ import annotations

from pathlib import Path


def project_folders(start: Path) -> list[Path]:
    """``start`` (or its folder, for a file) and its parents, nearest first, up to and including
    the first that holds `.git` (a folder, or the file a worktree or submodule has)."""
    directory = start.resolve()
    if directory.is_file() or not directory.exists():
        directory = directory.parent
    folders: list[Path] = []
    for folder in (directory, *directory.parents):
        folders.append(folder)
        if (folder / ".git").exists():
            break
    return folders
