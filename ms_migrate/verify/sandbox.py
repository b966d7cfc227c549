"""``--sandbox``: the code under verification can write only its scratch directory.

Verification imports and runs the user's code. Without a sandbox that code runs with the user's
rights: it starts in a temporary directory, but nothing stops it from deleting a file by its
absolute path. With one, on Linux, each worker (or script run) starts as

    unshare --user --map-root-user --mount --pid --fork --kill-child \\
        PYTHON -m ms_migrate.verify.sandbox_launcher WRITABLE -- COMMAND...

``unshare`` (util-linux) gives it a user namespace, which needs no privilege, owning a mount
namespace and a PID namespace of its own; ``sandbox_launcher`` makes every mount but WRITABLE
read-only in there, gives up the namespace's privileges and execs COMMAND, which is process 1 of
the PID namespace: when it ends, the kernel ends every process the code left in there. The mounts
are private to the namespace: nothing changes for any other process.

What it does not do: the code can still read whatever the user can and use the network. It keeps
files from being written, replaced or deleted, and its processes from outliving it; nothing more.

Where the platform cannot do this (not Linux, no ``unshare``, user namespaces disabled, as in
Docker's default seccomp profile or under Ubuntu 24.04's AppArmor restriction), ``check`` says why
and the caller runs nothing: a sandbox that was asked for is never silently skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

PROBE_TIMEOUT_S = 60.0
_NAMESPACE_HINT = (
    " (unprivileged user namespaces look disabled here: kernel.unprivileged_userns_clone=0, "
    "AppArmor's kernel.apparmor_restrict_unprivileged_userns=1, or a container's seccomp profile)"
)


class SandboxUnavailable(Exception):
    """``--sandbox`` was asked for and this machine cannot provide it; the message says why."""


def command_prefix(writable: Path, interpreter: str) -> list[str]:
    """Put before ``--`` and a command to run it sandboxed, able to write only ``writable``."""
    unshare = shutil.which("unshare") or "unshare"
    launcher = [interpreter, "-m", "ms_migrate.verify.sandbox_launcher", str(writable)]
    # --pid --fork: the worker is process 1 of a PID namespace of its own, and when it ends the
    # kernel ends every process left in there (a daemon the code started included);
    # --kill-child: unshare's end (the parent's SIGKILL) ends that process 1 too.
    return [unshare, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", *launcher]


def check(interpreter: str, environment: Optional[dict[str, str]] = None) -> None:
    """Raise SandboxUnavailable unless a sandboxed probe, run here and now, can write its scratch
    directory, cannot write beside it, and cannot make the mounts writable again."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"--sandbox needs Linux user and mount namespaces; this is {sys.platform}")
    if shutil.which("unshare") is None:
        raise SandboxUnavailable("--sandbox needs `unshare` (util-linux), which is not on PATH")
    with tempfile.TemporaryDirectory(prefix="ms-migrate-sandbox-probe-") as scratch:
        writable = Path(scratch) / "writable"
        writable.mkdir()
        command = [*command_prefix(writable, interpreter), "--probe"]
        try:
            probe = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env=environment,
                cwd=writable,
                timeout=PROBE_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SandboxUnavailable(f"the sandbox probe could not run: {error}") from error
    if probe.returncode != 0:
        lines = [line.strip() for line in (probe.stderr + probe.stdout).splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {probe.returncode}"
        hint = _NAMESPACE_HINT if detail.startswith("unshare:") else ""
        raise SandboxUnavailable(f"--sandbox cannot be set up on this machine: {detail}{hint}")
