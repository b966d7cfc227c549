"""MindSpore runtimes: a Python interpreter with MindSpore X.Y, one per version, made here and cached.

A rewrite is written for a target version and must be proven on it: a downgrade to 1.7 means
nothing until it has run on a real 1.7. ``verify`` and the test suite ask this module for the
interpreter of a version; ``ms-migrate runtime install X.Y`` makes one.

Where they come from:

- 2.7 to 2.10: ``mindspore`` from PyPI, in a virtual environment of this project's Python.
- 1.7 to 1.10: no CPU wheel of 1.x is on PyPI, but the GPU builds are (``mindspore-gpu``), for
  CPython 3.7-3.9, and they run with ``device_target="CPU"``. They need a Python 3.9 (looked for on
  PATH and under pyenv) and old pins (numpy<1.24, protobuf<4, scipy<1.11, pillow<10). 1.8 and later
  load CUDA lazily and want only ``libcudart.so.11.0`` (from ``nvidia-cuda-runtime-cu11``); 1.7
  links the CUDA libraries at import, so stub libraries that define the symbols it asks for, each
  returning an error code, satisfy the loader (nothing calls them on CPU). Both go into
  ``mindspore/lib``, which MindSpore's libraries name in their RPATH, so the interpreter needs no
  environment of its own.
- A project's own: ``[tool.ms-migrate.runtimes] "1.7" = "/opt/ms17/bin/python"``; and the
  interpreter running ms-migrate, when it has MindSpore. A path a repository names is untrusted
  input, as editors treat a workspace's interpreter: it is not run (not even to read its
  MindSpore version) until the user has trusted it with ``ms-migrate runtime trust PATH``, which
  records its real path in ``$XDG_CONFIG_HOME/ms-migrate/trusted-interpreters``, outside every
  repository. An interpreter ms-migrate made needs no trust.

A runtime made here lives in ``$MS_MIGRATE_RUNTIMES`` (default: ``~/.cache/ms-migrate/runtimes``),
one folder per version, with ``runtime.json`` written last: a folder without it is an install that
did not finish, and is made again.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ms_migrate.facts.versions import Version

_OLD_PINS = ("numpy<1.24", "protobuf<4", "scipy<1.11", "pillow<10")


@dataclass(frozen=True)
class Recipe:
    """How to make the runtime of one MindSpore version on this kind of machine."""

    version: Version
    requirement: str  # what pip installs: "mindspore==2.8.0", "mindspore-gpu==1.7.0"
    python: str  # the interpreter line the wheel is built for: "3.9"; "" for this one
    pins: tuple[str, ...] = ()
    cuda_runtime: bool = False  # link libcudart.so.11.0 from nvidia-cuda-runtime-cu11
    cuda_stubs: bool = False  # stub every CUDA library MindSpore links at import

    @property
    def packages(self) -> list[str]:
        return [self.requirement, *self.pins, *(["nvidia-cuda-runtime-cu11"] if self.cuda_runtime else [])]


RECIPES: dict[Version, Recipe] = {
    recipe.version: recipe
    for recipe in (
        Recipe(Version(1, 7), "mindspore-gpu==1.7.0", "3.9", _OLD_PINS, cuda_stubs=True),
        Recipe(Version(1, 8), "mindspore-gpu==1.8.1", "3.9", _OLD_PINS, cuda_runtime=True, cuda_stubs=True),
        Recipe(Version(1, 9), "mindspore-gpu==1.9.0", "3.9", _OLD_PINS, cuda_runtime=True),
        Recipe(Version(1, 10), "mindspore-gpu==1.10.0", "3.9", _OLD_PINS, cuda_runtime=True, cuda_stubs=True),
        Recipe(Version(2, 7), "mindspore==2.7.2", "", ("numpy<2",)),
        Recipe(Version(2, 8), "mindspore==2.8.0", "", ("numpy<2",)),
        Recipe(Version(2, 9), "mindspore==2.9.0", "", ("numpy<2",)),
        Recipe(Version(2, 10), "mindspore==2.10.0", "", ("numpy<2",)),
    )
}
NEWEST = max(RECIPES)


class RuntimeUnavailable(Exception):
    """A runtime cannot be had on this machine; the message says why in one line."""


@dataclass(frozen=True)
class Runtime:
    """An interpreter that imports MindSpore ``release`` (e.g. "1.7.0"), for version ``version``."""

    version: Version
    python: str
    release: str
    origin: str  # "made by ms-migrate", "pyproject.toml [tool.ms-migrate.runtimes]", "this interpreter"

    @property
    def label(self) -> str:
        return f"MindSpore {self.release}"

    def to_json(self) -> dict[str, str]:
        return {
            "version": str(self.version),
            "python": self.python,
            "release": self.release,
            "origin": self.origin,
        }


def cache_root() -> Path:
    configured = os.environ.get("MS_MIGRATE_RUNTIMES")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ms-migrate" / "runtimes"


def _marker(version: Version) -> Path:
    return cache_root() / str(version) / "runtime.json"


def _made_here(version: Version) -> Optional[Runtime]:
    try:
        data = json.loads(_marker(version).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    python = data.get("python", "")
    if not isinstance(python, str) or not os.access(python, os.X_OK):
        return None
    return Runtime(version, python, str(data.get("release", version)), "made by ms-migrate")


def _release_of(python: str, timeout: float = 120) -> str:
    """The MindSpore release ``python`` imports, read from its metadata (no import: fast)."""
    probe = (
        "import importlib.metadata as m\n"
        "for name in ('mindspore', 'mindspore-gpu', 'mindspore-ascend'):\n"
        "    try:\n        print(m.version(name)); break\n"
        "    except m.PackageNotFoundError: pass\n"
    )
    try:
        completed = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return completed.stdout.strip()


def _this_interpreter() -> Optional[Runtime]:
    try:
        import importlib.metadata as metadata

        release = metadata.version("mindspore")
    except Exception:  # no MindSpore here, or metadata that cannot be read
        return None
    try:
        version = Version.parse(release)
    except ValueError:
        return None
    return Runtime(version, sys.executable, release, "this interpreter")


class UntrustedRuntime(RuntimeUnavailable):
    """An interpreter a repository names that the user has not trusted."""


def trust_file() -> Path:
    """The user's list of trusted interpreters (one real path a line), outside every repository."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ms-migrate" / "trusted-interpreters"


def trusted_interpreters() -> set[str]:
    try:
        return {line for line in trust_file().read_text(encoding="utf-8").splitlines() if line}
    except (OSError, UnicodeDecodeError):
        return set()


def trust(python: str) -> str:
    """Record ``python``'s real path as trusted; returns it. Raises RuntimeUnavailable for a path
    that is not an executable file."""
    real = os.path.realpath(os.path.expanduser(python))
    if not os.path.isfile(real) or not os.access(real, os.X_OK):
        raise RuntimeUnavailable(f"{python}: not an executable interpreter")
    if real not in trusted_interpreters():
        path = trust_file()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(real + "\n")
    return real


def _is_trusted(real: str) -> bool:
    made_here = os.path.realpath(cache_root()) + os.sep
    return real in trusted_interpreters() or real.startswith(made_here)


def configured_runtimes(table: dict[str, str], where: str) -> dict[Version, Runtime]:
    """``[tool.ms-migrate.runtimes]``: version = interpreter. A path that is not an interpreter, or
    one whose MindSpore is another version, is an error naming the key; so is one the user has
    not trusted (UntrustedRuntime), which is never run. What runs is the real path checked, so a
    link the repository changes afterwards runs nothing else."""
    found: dict[Version, Runtime] = {}
    for key, python in table.items():
        try:
            version = Version.parse(str(key))
        except ValueError as error:
            raise RuntimeUnavailable(f"{where}: {error}") from error
        if not isinstance(python, str) or not os.access(os.path.expanduser(python), os.X_OK):
            raise RuntimeUnavailable(f"{where}: {key!r}: {python!r} is not an executable interpreter")
        real = os.path.realpath(os.path.expanduser(python))
        if not _is_trusted(real):
            raise UntrustedRuntime(
                f"{where}: {key!r}: {python} is named by the repository, and ms-migrate runs no "
                f"interpreter a repository names until you trust it: ms-migrate runtime trust {python}"
            )
        python = real
        release = _release_of(python)
        if not release:
            raise RuntimeUnavailable(f"{where}: {key!r}: {python} has no MindSpore installed")
        if Version.parse(release) != version:
            raise RuntimeUnavailable(f"{where}: {key!r}: {python} has MindSpore {release}, not {version}")
        found[version] = Runtime(version, python, release, where)
    return found


def available(configured: Optional[dict[Version, Runtime]] = None) -> dict[Version, Runtime]:
    """Every runtime at hand, by version: the project's own win over ours, ours over this one."""
    found: dict[Version, Runtime] = {}
    own = _this_interpreter()
    if own is not None:
        found[own.version] = own
    for version in RECIPES:
        made = _made_here(version)
        if made is not None:
            found[version] = made
    found.update(configured or {})
    return dict(sorted(found.items()))


def nearest(target: Version, runtimes: dict[Version, Runtime]) -> Optional[Runtime]:
    """The runtime of ``target``, else the closest one of the same major version (the older of two
    equally close), else None: 2.10 says nothing about 1.7."""
    if target in runtimes:
        return runtimes[target]
    same_major = [version for version in runtimes if version.major == target.major]
    if not same_major:
        return None
    best = min(same_major, key=lambda version: (abs(version.minor - target.minor), version.minor))
    return runtimes[best]


# --- making one ---------------------------------------------------------------------------------


Log = Callable[[str], None]


def _is_python(candidate: str, line: str) -> bool:
    """Whether ``candidate`` runs and is Python ``line`` (a pyenv shim on PATH may do neither)."""
    try:
        completed = subprocess.run(
            [candidate, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return completed.returncode == 0 and completed.stdout.strip() == line


def _python_for(line: str) -> str:
    """An interpreter of Python ``line`` ("3.9"): this one, one pyenv installed, or one on PATH."""
    if not line or f"{sys.version_info[0]}.{sys.version_info[1]}" == line:
        return sys.executable
    pyenv_root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates = sorted(glob.glob(f"{pyenv_root}/versions/{line}.*/bin/python{line}"), reverse=True)
    on_path = shutil.which(f"python{line}")
    for candidate in [*candidates, *([on_path] if on_path else [])]:
        if _is_python(candidate, line):
            return candidate
    raise RuntimeUnavailable(
        f"no Python {line} on this machine (looked under {pyenv_root}/versions and for python{line} on "
        f"PATH); the MindSpore wheels of this version are built for CPython 3.7-3.9"
    )


def _run(command: Sequence[str], log: Log, what: str) -> None:
    log(f"  $ {' '.join(command)}")
    completed = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        last = [line for line in (completed.stderr or completed.stdout).splitlines() if line.strip()]
        detail = last[-1].strip() if last else f"exit status {completed.returncode}"
        raise RuntimeUnavailable(f"{what} failed: {detail}")


def _site_packages(python: str) -> Path:
    completed = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(completed.stdout.strip())


_LIBRARY_OF_PREFIX = (  # unversioned symbols: which CUDA library defines them
    ("cublas", "libcublas.so.11"),
    ("cudnn", "libcudnn.so.8"),
    ("cufft", "libcufft.so.10"),
    ("curand", "libcurand.so.10"),
    ("cusolver", "libcusolver.so.11"),
    ("cusparse", "libcusparse.so.11"),
    ("nvrtc", "libnvrtc.so.11.1"),
    ("cuda", "libcudart.so.11.0"),
    ("cu", "libcuda.so.1"),  # the driver API: cuInit, cuModuleLoadData, ...
)
_SYMBOL = re.compile(r"^\s*U\s+(_*(?:cu|nvrtc)\w*)(?:@+([\w.]+))?\s*$")


def cuda_symbols(nm_output: Iterable[str]) -> dict[str, dict[str, Optional[str]]]:
    """From ``nm -D --undefined-only`` lines: by library soname, each symbol and its version node
    (None when unversioned)."""
    libraries: dict[str, dict[str, Optional[str]]] = {}
    for line in nm_output:
        match = _SYMBOL.match(line)
        if not match:
            continue
        symbol, node = match.group(1), match.group(2)
        library = node if node and node.startswith("lib") else None
        if library is None:
            bare = symbol.lstrip("_")
            library = next(soname for prefix, soname in _LIBRARY_OF_PREFIX if bare.startswith(prefix))
        libraries.setdefault(library, {})[symbol] = node
    return libraries


def stub_source(symbols: Iterable[str]) -> str:
    """C for a library whose every function fails: error codes for calls, a string for names."""
    lines = ["/* made by ms-migrate: CUDA is never called on CPU; these only satisfy the loader */"]
    for symbol in sorted(symbols):
        if symbol.endswith(("ErrorString", "ErrorName")) and "Get" in symbol:
            lines.append(
                f'const char *{symbol}(void) {{ return "CUDA is not available (ms-migrate stub)"; }}'
            )
        else:
            lines.append(f"int {symbol}(void) {{ return 1; }}")
    return "\n".join(lines) + "\n"


def _version_script(symbols: dict[str, Optional[str]]) -> str:
    """A linker version script giving each versioned symbol the node its caller asks for."""
    nodes: dict[str, list[str]] = {}
    for symbol, node in symbols.items():
        if node:
            nodes.setdefault(node, []).append(symbol)
    return "".join(
        f"{node} {{ global: {' '.join(f'{name};' for name in sorted(names))} }};\n"
        for node, names in nodes.items()
    )


def _make_cuda_stubs(library_dir: Path, log: Log) -> None:
    nm, cc = shutil.which("nm"), shutil.which("cc") or shutil.which("gcc")
    if not nm or not cc:
        raise RuntimeUnavailable(
            "MindSpore 1.7 needs stub CUDA libraries, which need `nm` and a C compiler (binutils, gcc)"
        )
    lines: list[str] = []
    for path in sorted(library_dir.parent.rglob("*.so*")):
        completed = subprocess.run(
            [nm, "-D", "--undefined-only", str(path)], capture_output=True, text=True, check=False
        )
        lines += completed.stdout.splitlines()
    libraries = cuda_symbols(lines)
    log(f"  stub CUDA libraries: {', '.join(sorted(libraries))}")
    with tempfile.TemporaryDirectory(prefix="ms-migrate-stubs-") as scratch:
        for library, symbols in libraries.items():
            if (library_dir / library).exists():
                continue
            source = Path(scratch) / f"{library}.c"
            source.write_text(stub_source(symbols), encoding="utf-8")
            command = [cc, "-shared", "-fPIC", "-o", str(library_dir / library), f"-Wl,-soname,{library}"]
            script = _version_script(symbols)
            if script:
                map_file = Path(scratch) / f"{library}.map"
                map_file.write_text(script, encoding="utf-8")
                command.append(f"-Wl,--version-script={map_file}")
            _run([*command, str(source)], log, f"building the stub {library}")


_SMOKE = (
    "import mindspore as ms, numpy as np\n"
    "ms.context.set_context(device_target='CPU')\n"
    "x = ms.Tensor(np.ones(3, np.float32))\n"
    "assert float(ms.ops.ReduceSum()(ms.ops.Add()(x, x)).asnumpy()) == 6.0\n"
    "print(ms.__version__)\n"
)


def install(version: Version, log: Log = lambda _: None, force: bool = False) -> Runtime:
    """Make (or reuse) the runtime of ``version`` under ``cache_root()``. Raises RuntimeUnavailable
    with one line saying what this machine lacks."""
    recipe = RECIPES.get(version)
    if recipe is None:
        known = ", ".join(str(known) for known in RECIPES)
        raise RuntimeUnavailable(
            f"ms-migrate cannot make a MindSpore {version} runtime (it makes {known}); name your own "
            f'in pyproject.toml: [tool.ms-migrate.runtimes] "{version}" = "/path/to/python", and '
            "trust it: ms-migrate runtime trust /path/to/python"
        )
    if not force:
        made = _made_here(version)
        if made is not None:
            return made
    base = _python_for(recipe.python)
    folder = cache_root() / str(version)
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    log(f"making the MindSpore {version} runtime in {folder}")
    _run([base, "-m", "venv", str(folder)], log, "creating the virtual environment")
    python = str(folder / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *recipe.packages], log, f"pip install {recipe.requirement}")
    library_dir = _site_packages(python) / "mindspore" / "lib"
    if recipe.cuda_runtime:
        cudart = _site_packages(python) / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.11.0"
        link = library_dir / "libcudart.so.11.0"
        if not link.exists():
            link.symlink_to(os.path.relpath(cudart, library_dir))
    if recipe.cuda_stubs:
        _make_cuda_stubs(library_dir, log)
    completed = subprocess.run(
        [python, "-c", _SMOKE],
        capture_output=True,
        text=True,
        check=False,
        cwd=folder,
        env={**os.environ, "GLOG_v": "3"},
    )
    if completed.returncode != 0:
        last = [line for line in completed.stderr.splitlines() if line.strip()]
        detail = last[-1] if last else f"exit status {completed.returncode}"
        raise RuntimeUnavailable(f"MindSpore {version} was installed but does not run on CPU: {detail}")
    release = completed.stdout.strip().splitlines()[-1]
    runtime = Runtime(version, python, release, "made by ms-migrate")
    _marker(version).write_text(json.dumps(runtime.to_json()), encoding="utf-8")
    log(f"MindSpore {release} ready: {python}")
    return runtime


def obstacle(version: Version) -> Optional[str]:
    """Why ``install(version)`` cannot work here, without trying it (None: it may)."""
    recipe = RECIPES.get(version)
    if recipe is None:
        return f"ms-migrate has no recipe for MindSpore {version}"
    try:
        _python_for(recipe.python)
    except RuntimeUnavailable as error:
        return str(error)
    return None


@dataclass(frozen=True)
class RunPlan:
    """Where each version of a rewrite runs, and what the user should know about the choice."""

    before: Runtime
    after: Runtime
    notes: tuple[str, ...] = ()


def for_rewrite(target: Version, downgrade: bool, runtimes: dict[Version, Runtime]) -> RunPlan:
    """An upgrade runs both versions on the target's runtime; a downgrade runs BEFORE (written for
    the newest MindSpore) on the newest at hand and AFTER on the target's. Without the target's
    runtime, the nearest of its major version, said in a note; without one, RuntimeUnavailable."""
    after = nearest(target, runtimes)
    if after is None:
        problem = obstacle(target)
        how = f" ({problem})" if problem else f": ms-migrate runtime install {target}"
        raise RuntimeUnavailable(
            f"no MindSpore {target.major}.x runtime here to run code written for {target} on{how}"
        )
    notes = []
    if after.version != target:
        problem = obstacle(target)
        if problem is None:
            how = f"ms-migrate runtime install {target} for {target} itself"
        else:
            made = ", ".join(str(version) for version in sorted(RECIPES))
            how = (
                f"ms-migrate makes runtimes for {made}; for {target} itself, name its interpreter in "
                f'[tool.ms-migrate.runtimes] "{target}" = "/path/to/python" and trust it '
                "(ms-migrate runtime trust /path/to/python)"
            )
        notes.append(
            f"MindSpore {target} is not installed here: the rewrite runs on {after.label}, "
            f"the nearest ({how})"
        )
    before = runtimes[max(runtimes)] if downgrade else after
    return RunPlan(before, after, tuple(notes))
