"""``upgrade --verify --install-requirements``: what a project's requirements name, installed for verify.

A model zoo's scripts import PyYAML, easydict or pandas at import time; a runtime made by
``ms-migrate runtime install`` holds MindSpore alone, so those files cannot run and their sites
stay unproven. Asked to, verify reads the ``requirements.txt`` nearest each verified file (in its
folder or one above it, up to the repository's root), and installs what they name with the
runtime's own pip into a folder of the cache that the workers put *after* the runtime's
``site-packages`` on ``sys.path``: MindSpore and numpy stay the runtime's own, and numpy is pinned
to the runtime's version so that compiled packages match it.

A requirements file is the repository's, so untrusted: only plain ``name[extras] (op version)``
lines are taken; options (``-r``, ``-e``, ``--index-url``), URLs, paths and markers are refused and
said, and MindSpore and numpy themselves are left to the runtime. Wheels only
(``--only-binary=:all:``): nothing a package ships is run to install it. A pinned version with no
wheel for the runtime's Python (``pandas==1.0.5`` on 3.11) is installed at the newest version
instead, which both versions of a file run alike, and said; ``sklearn``, a name PyPI keeps only to
refuse installs, is ``scikit-learn``. What could not be installed is said too, and the run goes
on without it.

Each requirement gets a folder of its own, keyed by the interpreter, the runtime's numpy and the
requirement, made once it installs: a later run, or another project naming the same requirement,
reuses it; one that did not install is tried again next run
(``ms-migrate cache clean`` does not touch them; delete a folder to make it again). A file pair
imports from the folders of its nearest requirements file, in the file's order.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Optional

from ms_migrate.files import sources
from ms_migrate.files.project_root import project_folders
from ms_migrate.verify.imports import DISTRIBUTIONS, holds_module, import_place
from ms_migrate.verify.reached import third_party_imports

FILE_NAMES = ("requirements.txt",)
# name, extras, and version clauses: `PyYAML>=5.1`, `opencv-python==4.5.*`, `mindx[cv] ~= 1.0`
_PLAIN = re.compile(
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[A-Za-z0-9._,\s-]*\])?\s*"
    r"(?:(?:==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!-]+\s*(?:,\s*(?:==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!-]+\s*)*)?"
)
# Names PyPI keeps only to fail an install with "use the real name": what they stand for.
RENAMED = {"sklearn": "scikit-learn"}
# The packages installed for a file that imports them when no requirements file above it names
# them, by import name. Model zoos import PyYAML, opencv or easydict in a config helper and leave
# them out of requirements.txt (mindspore-ai/models: 17 converted sites stopped at `Failed to
# parse yaml`). A fixed list: an import name is not a distribution name (`sklearn` on PyPI is a
# package that refuses to install), and installing whatever a file imports would let a
# repository choose what is downloaded.
IMPORTED = {
    name: DISTRIBUTIONS.get(name, name)
    for name in (
        "PIL", "cv2", "easydict", "h5py", "imageio", "matplotlib", "nltk", "pandas", "pycocotools",
        "pytest", "requests", "scipy", "six", "skimage", "sklearn", "tabulate", "termcolor", "tqdm", "yaml",
    )
}  # fmt: skip
_RUNTIME_OWN = re.compile(r"mindspore([-_.].*)?|numpy", re.IGNORECASE)
PIP_TIMEOUT_S = 900


@dataclass(frozen=True)
class Requirements:
    files: tuple[Path, ...] = ()
    specs: tuple[str, ...] = ()  # what is installed, sorted
    refused: tuple[str, ...] = ()  # "line (why)"


@dataclass
class Installed:
    """What installing one requirements file gave: the folders on the workers' path (one per
    requirement, shared by every file that names it), and what did not install."""

    folders: list[Path] = field(default_factory=list)
    distributions: list[str] = field(default_factory=list)  # "PyYAML 6.0.2"
    failed: list[str] = field(default_factory=list)  # "spec (pip's last line)"
    unpinned: list[str] = field(default_factory=list)  # a pinned spec installed at the newest version

    def said(self) -> str:
        """One line for the run's output."""
        parts = []
        if self.distributions:
            parts.append(f"installed for verify: {', '.join(dict.fromkeys(self.distributions))}")
        if self.unpinned:
            parts.append(f"not as pinned: {'; '.join(self.unpinned)}")
        if self.failed:
            parts.append(f"not installed: {'; '.join(self.failed)}")
        return "; ".join(parts) or "nothing to install"


def requirement_files(paths: Iterable[Path]) -> list[Path]:
    """The requirements file nearest each path, from its folder up to its repository's root."""
    found: dict[Path, None] = {}
    folders_seen: dict[Path, Optional[Path]] = {}
    for path in paths:
        folder = path.resolve().parent
        if folder not in folders_seen:
            folders_seen[folder] = next(
                (
                    candidate
                    for above in project_folders(folder)
                    for candidate in (above / name for name in FILE_NAMES)
                    if candidate.is_file()
                ),
                None,
            )
        nearest = folders_seen[folder]
        if nearest is not None:
            found[nearest] = None
    return list(found)


def read_requirements(files: Sequence[Path]) -> Requirements:
    """The plain requirements of ``files``, and the lines refused (see the module doc)."""
    specs: dict[str, None] = {}
    refused: list[str] = []
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as error:
            refused.append(f"{file} ({error.strerror or error})")
            continue
        for raw in lines:
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            match = _PLAIN.fullmatch(line)
            if match is None:
                refused.append(f"{line} (not a plain requirement)")
            elif _RUNTIME_OWN.fullmatch(match.group("name")):
                continue  # the runtime's own
            else:
                name = match.group("name")
                spec = re.sub(r"\s+", "", line)
                if name.lower() in RENAMED:  # a name PyPI retired for the package's own
                    spec = RENAMED[name.lower()] + spec[len(name) :]
                specs[spec] = None
    return Requirements(tuple(files), tuple(sorted(specs)), tuple(refused))


@cache
def _numpy_of(python: str) -> Optional[str]:
    """The runtime's numpy version, which what is installed for it must keep; None where unknown."""
    try:
        completed = subprocess.run(
            [python, "-c", "import numpy; print(numpy.__version__)"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = completed.stdout.strip()
    return version if completed.returncode == 0 and re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", version) else None


def _pip(
    python: str, folder: Path, specs: Sequence[str], constraints: Path
) -> subprocess.CompletedProcess[str]:
    command = [python, "-m", "pip", "install", "--target", str(folder), "--no-input"]
    command += ["--disable-pip-version-check", "--only-binary=:all:", "--no-warn-script-location"]
    command += ["-c", str(constraints), *specs]
    environment = {**os.environ, "PIP_REQUIRE_VIRTUALENV": "0"}
    try:
        return subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, env=environment, check=False
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", f"pip took over {PIP_TIMEOUT_S} s")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else "no output")[:200]


def _distributions(folder: Path) -> list[str]:
    found = []
    for info in sorted(folder.glob("*.dist-info")):
        name, _, version = info.name[: -len(".dist-info")].rpartition("-")
        found.append(f"{name} {version}")
    return found


def install(python: str, requirements: Requirements, cache: Path) -> Installed:
    """Install each of ``requirements`` for the interpreter ``python`` into a folder of ``cache``
    of its own (made once, then reused: the 47 projects of a zoo that name PyYAML share one)."""
    numpy = _numpy_of(python) if requirements.specs else None
    installed = Installed()
    for spec in requirements.specs:
        folder, distributions, failure = _installed_spec(python, spec, numpy, cache)
        bare = _PLAIN.fullmatch(spec)
        if failure and bare is not None and bare.group("name") != spec:
            # A version pinned for an older Python has no wheel for this runtime: both versions
            # of every file run with the newest one alike, and the run says so.
            pinned, (folder, distributions, failure) = (
                failure,
                _installed_spec(python, bare.group("name"), numpy, cache),
            )
            if not failure:
                installed.unpinned.append(f"{spec} ({pinned}): the newest installed")
        if failure:
            installed.failed.append(f"{spec} ({failure})")
        else:
            installed.folders.append(folder)
            installed.distributions += distributions
    return installed


def _installed_spec(python: str, spec: str, numpy: Optional[str], cache: Path) -> tuple[Path, list[str], str]:
    """The folder holding ``spec`` and what it depends on, its distributions, and why it could
    not be installed ("" where it was)."""
    identity = json.dumps([os.path.realpath(python), numpy, spec])
    folder = cache / hashlib.sha256(identity.encode()).hexdigest()[:16]
    record = folder / "ms-migrate-installed.json"
    if record.is_file():
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            if not data["failed"]:  # an earlier release kept failures too: those are tried again
                return folder, list(data["distributions"]), ""
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged record: make the folder again
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".making-") as scratch:
        made = Path(scratch) / "site"
        constraints = Path(scratch) / "constraints.txt"
        constraints.write_text(f"numpy=={numpy}\n" if numpy else "", encoding="utf-8")
        completed = _pip(python, made, [spec], constraints)
        if completed.returncode != 0:
            # Not kept: the index may answer next time (a failure offline is not a fact of the spec).
            return folder, [], _last_line(completed.stderr or completed.stdout)
        made.mkdir(exist_ok=True)
        distributions = _distributions(made)
        data = {"spec": spec, "distributions": distributions, "failed": ""}
        (made / record.name).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # another run made it meanwhile: theirs is as good
            os.replace(made, folder)
    return folder, distributions, ""


def imported_packages(path: Path) -> tuple[str, ...]:
    """The names of ``IMPORTED`` that the file at ``path`` (a notebook: its code cells), and the
    project files it reaches, import."""
    if path.suffix not in (".py", ".ipynb"):
        return ()
    try:
        text = sources.read_source(path).text
    except sources.SourceError:
        return ()
    place = import_place(path, text)
    search_path = [str(path.resolve().parent), *place.roots]
    return tuple(sorted(set(IMPORTED) & third_party_imports(path, text, search_path, place.package)))


@cache
def runtime_lacks(python: str, names: tuple[str, ...]) -> frozenset[str]:
    """Those of ``names`` the interpreter ``python`` cannot import (none where it cannot be asked)."""
    if not names:
        return frozenset()
    asked = "import importlib.util as u, sys; print(*[n for n in sys.argv[1:] if u.find_spec(n) is None])"
    try:
        completed = subprocess.run(
            [python, "-c", asked, *names], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(completed.stdout.split()) & set(names) if completed.returncode == 0 else frozenset()


def folders_hold(folders: Iterable[str], name: str) -> bool:
    """Whether one of ``folders`` (what a requirements file installed) has the module ``name``."""
    pattern = f"{glob.escape(name)}.*"  # an extension module too: `cv2.abi3.so`
    return any(holds_module(Path(folder), name) or any(Path(folder).glob(pattern)) for folder in folders)


def installed_for(path: Path, installed: Sequence[tuple[str, str, tuple[str, ...]]]) -> dict[str, list[str]]:
    """For the file at ``path``: interpreter -> the folders made for its nearest requirements file,
    then those made for what it imports and no requirements file names."""
    keys = {*requirement_files([path]), path.resolve()}  # its requirements file, then the file
    found: dict[str, list[str]] = {}
    for python, file, folders in installed:
        if Path(file) in keys:
            found.setdefault(python, []).extend(folders)
    return found
