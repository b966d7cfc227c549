"""Where the checked files came from, for SARIF's ``versionControlProvenance``: the git checkout
they are in, its commit, branch and remote. Asked of git itself; nothing when git is missing or
the files are not in a checkout."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

GIT_TIMEOUT_S = 10


def _git(folder: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>(?!/).*)$")


def remote_uri(remote: str) -> str:
    """A remote as a URI without credentials: a token in `https://user:token@host/...` must not
    end up in a SARIF log uploaded elsewhere; scp-like `git@host:org/repo.git` becomes ssh://."""
    if "://" not in remote:
        match = _SCP_LIKE.match(remote)
        if match is None:
            return Path(os.path.abspath(remote)).as_uri()
        return f"ssh://{match['host']}/{match['path']}"
    parts = urlsplit(remote)
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, ""))


def git_provenance(start: Path) -> Optional[dict[str, str]]:
    """``root`` (the checkout's folder), ``repositoryUri`` (the ``origin`` remote, else the
    checkout as a file: URI), ``revisionId`` (HEAD) and ``branch`` (absent when detached)."""
    folder = start if start.is_dir() else start.parent
    root = _git(folder, "rev-parse", "--show-toplevel")
    revision = _git(folder, "rev-parse", "HEAD") if root else None
    if root is None or revision is None:  # not a checkout, or one without a commit yet
        return None
    top = Path(os.path.realpath(root))
    provenance = {"root": str(top), "revisionId": revision}
    remote = _git(folder, "remote", "get-url", "origin")
    provenance["repositoryUri"] = remote_uri(remote) if remote else top.as_uri()
    branch = _git(folder, "symbolic-ref", "--short", "-q", "HEAD")
    if branch:
        provenance["branch"] = branch
    return provenance
