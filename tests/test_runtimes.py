"""The runtimes module and command: which interpreter runs which version, how one is made, and
verification across two releases (BEFORE on one runtime, AFTER on another)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate import runtimes
from ms_migrate.facts.versions import Version, known_versions
from ms_migrate.frontends.cli import main

LEGACY_STEP = (Path(__file__).parent / "fixtures" / "ms101" / "cell_get_by_list.py").read_text()
NM_LINES = [
    "                 U cublasCreate_v2@libcublas.so.11",
    "                 U __cudaRegisterFunction@libcudart.so.11.0",
    "                 U cudaGetErrorString@libcudart.so.11.0",
    "                 U cuModuleLoadData",
    "                 U nvrtcGetErrorString@libnvrtc.so.11.1",
    "                 U malloc@GLIBC_2.2.5",
    "0000000000001000 T cudaLocalFunction",
]


def _runtime(major: int, minor: int) -> runtimes.Runtime:
    return runtimes.Runtime(
        Version(major, minor), f"/opt/ms{major}{minor}/bin/python", f"{major}.{minor}.0", "test"
    )


def test_cuda_symbols_are_grouped_by_the_library_that_must_define_them() -> None:
    libraries = runtimes.cuda_symbols(NM_LINES)
    assert libraries == {
        "libcublas.so.11": {"cublasCreate_v2": "libcublas.so.11"},
        "libcudart.so.11.0": {
            "__cudaRegisterFunction": "libcudart.so.11.0",
            "cudaGetErrorString": "libcudart.so.11.0",
        },
        "libcuda.so.1": {"cuModuleLoadData": None},  # the driver API: unversioned
        "libnvrtc.so.11.1": {"nvrtcGetErrorString": "libnvrtc.so.11.1"},
    }


@pytest.mark.skipif(
    not (runtimes.shutil.which("cc") and runtimes.shutil.which("nm")), reason="needs cc and nm"
)
def test_a_stub_library_exports_each_symbol_at_the_version_asked_for(tmp_path: Path) -> None:
    symbols = runtimes.cuda_symbols(NM_LINES)["libcudart.so.11.0"]
    source = tmp_path / "stub.c"
    source.write_text(runtimes.stub_source(symbols), encoding="utf-8")
    script = tmp_path / "stub.map"
    script.write_text(runtimes._version_script(symbols), encoding="utf-8")
    library = tmp_path / "libcudart.so.11.0"
    subprocess.run(
        [
            "cc",
            "-shared",
            "-fPIC",
            "-o",
            str(library),
            "-Wl,-soname,libcudart.so.11.0",
            f"-Wl,--version-script={script}",
            str(source),
        ],
        check=True,
    )
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True
    ).stdout
    assert "__cudaRegisterFunction@@libcudart.so.11.0" in exported
    assert "cudaGetErrorString@@libcudart.so.11.0" in exported
    # Called anyway, a stub fails with an error code and names return a string, never a crash.
    import ctypes

    loaded = ctypes.CDLL(str(library))
    assert loaded.__cudaRegisterFunction() == 1
    loaded.cudaGetErrorString.restype = ctypes.c_char_p
    assert b"ms-migrate stub" in loaded.cudaGetErrorString()


def test_the_nearest_runtime_is_of_the_same_major_version() -> None:
    at_hand = {version.version: version for version in (_runtime(1, 7), _runtime(2, 8), _runtime(2, 10))}
    assert runtimes.nearest(Version(2, 8), at_hand).version == Version(2, 8)  # type: ignore[union-attr]
    assert runtimes.nearest(Version(2, 9), at_hand).version == Version(2, 8)  # type: ignore[union-attr]
    assert runtimes.nearest(Version(1, 9), at_hand).version == Version(1, 7)  # type: ignore[union-attr]
    assert runtimes.nearest(Version(1, 9), {Version(2, 10): _runtime(2, 10)}) is None


def test_an_upgrade_runs_on_the_target_and_a_downgrade_from_the_newest() -> None:
    at_hand = {version.version: version for version in (_runtime(1, 7), _runtime(2, 8), _runtime(2, 10))}
    upgrade = runtimes.for_rewrite(Version(2, 8), False, at_hand)
    assert (upgrade.before.version, upgrade.after.version, upgrade.notes) == (
        Version(2, 8),
        Version(2, 8),
        (),
    )
    downgrade = runtimes.for_rewrite(Version(1, 7), True, at_hand)
    assert (downgrade.before.version, downgrade.after.version) == (Version(2, 10), Version(1, 7))
    nearest = runtimes.for_rewrite(Version(2, 9), False, at_hand)
    assert nearest.after.version == Version(2, 8) and "MindSpore 2.9 is not installed" in nearest.notes[0]
    assert "ms-migrate runtime install 2.9 for 2.9 itself" in nearest.notes[0]
    # A version ms-migrate cannot make gets no command that fails: what it can make, and the way
    # to name one's own interpreter.
    (unmade,) = runtimes.for_rewrite(Version(2, 2), False, at_hand).notes
    assert "runtime install 2.2" not in unmade
    assert "ms-migrate makes runtimes for 1.7, 1.8, 1.9, 1.10, 2.7, 2.8, 2.9, 2.10" in unmade
    assert '[tool.ms-migrate.runtimes] "2.2" = "/path/to/python"' in unmade
    with pytest.raises(runtimes.RuntimeUnavailable, match=r"no MindSpore 1\.x runtime"):
        runtimes.for_rewrite(Version(1, 9), True, {Version(2, 10): _runtime(2, 10)})


def _fake_interpreter(tmp_path: Path, release: str) -> Path:
    """A script that answers the metadata question as an interpreter with MindSpore ``release``."""
    path = tmp_path / f"python-{release}"
    path.write_text(f"#!/bin/sh\necho {release}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture(autouse=True)
def _own_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_an_interpreter_the_repository_names_runs_only_once_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`"2.10" = "./evil.sh"` in a checkout's pyproject.toml: runtime list, verify and upgrade
    --verify used to run it. Now it is refused (exit 2, saying how to trust it) and never run."""
    project = tmp_path / "project"
    project.mkdir()
    witness = tmp_path / "ran"
    evil = project / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {witness}\necho 2.10.0\n", encoding="utf-8")
    evil.chmod(0o755)
    (project / "pyproject.toml").write_text('[tool.ms-migrate.runtimes]\n"2.10" = "./evil.sh"\n')
    (project / "step.py").write_text(LEGACY_STEP)
    monkeypatch.chdir(project)
    for command in (["runtime", "list"], ["runtime", "path", "2.10"], ["upgrade", "--verify", "step.py"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, (command, result.output)
        assert "ms-migrate runtime trust ./evil.sh" in result.output, result.output
    assert not witness.exists()
    trusted = CliRunner().invoke(main, ["runtime", "trust", "./evil.sh"])
    assert trusted.exit_code == 0 and str(evil.resolve()) in trusted.output
    listed = CliRunner().invoke(main, ["runtime", "list"])
    assert listed.exit_code == 0 and witness.exists()  # the user said so
    assert str(evil.resolve()) in runtimes.trust_file().read_text()


def test_configured_runtimes_are_checked(tmp_path: Path) -> None:
    good = _fake_interpreter(tmp_path, "1.7.0")
    runtimes.trust(str(good))
    found = runtimes.configured_runtimes({"1.7": str(good)}, "pyproject.toml")
    assert found[Version(1, 7)].release == "1.7.0"
    with pytest.raises(runtimes.RuntimeUnavailable, match=r"has MindSpore 1\.7\.0, not 1\.9"):
        runtimes.configured_runtimes({"1.9": str(good)}, "pyproject.toml")
    with pytest.raises(runtimes.RuntimeUnavailable, match="is not an executable interpreter"):
        runtimes.configured_runtimes({"1.7": str(tmp_path / "missing")}, "pyproject.toml")
    with pytest.raises(runtimes.RuntimeUnavailable, match="not a MindSpore version"):
        runtimes.configured_runtimes({"latest": str(good)}, "pyproject.toml")


def test_runtime_list_names_every_version_and_the_project_s_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    interpreter = _fake_interpreter(tmp_path, "1.7.0")
    runtimes.trust(str(interpreter))
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ms-migrate.runtimes]\n"1.7" = "{interpreter}"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MS_MIGRATE_RUNTIMES", str(tmp_path / "cache"))
    result = CliRunner().invoke(main, ["runtime", "list"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert set(lines) >= {str(version) for version in runtimes.RECIPES}
    assert (
        f"MindSpore 1.7.0 ({tmp_path / 'pyproject.toml'} [tool.ms-migrate.runtimes]): {interpreter}"
        in lines["1.7"]
    )
    assert "ms-migrate runtime install 1.9" in lines["1.9"] or "cannot be had here" in lines["1.9"]
    # A release a target may name but ms-migrate cannot make (the newest one, 2.11, where the
    # package index lacks it) is listed too, with how to name one's own.
    newest = str(max(known_versions()))
    assert "cannot be had here" in lines[newest] and f'"{newest}" = "/path/to/python"' in lines[newest]
    path = CliRunner().invoke(main, ["runtime", "path", "1.7"])
    assert (path.exit_code, path.output.strip()) == (0, str(interpreter))
    missing = CliRunner().invoke(main, ["runtime", "path", "1.9"])
    assert missing.exit_code == 2 and "1.9:" in missing.output


def test_runtime_install_of_an_unknown_version_says_how_to_name_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MS_MIGRATE_RUNTIMES", str(tmp_path))
    result = CliRunner().invoke(main, ["runtime", "install", "1.6"])
    assert result.exit_code == 2
    assert '[tool.ms-migrate.runtimes] "1.6" = "/path/to/python"' in result.output
    assert "Traceback" not in result.output
    typo = CliRunner().invoke(main, ["runtime", "install", "one.seven"])
    assert typo.exit_code == 2 and "not a MindSpore version" in typo.output
    neither = CliRunner().invoke(main, ["runtime", "install"])
    assert neither.exit_code == 2 and "--all" in neither.output


def test_a_runtime_without_its_python_line_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    problem = runtimes.obstacle(Version(1, 7))
    assert problem is not None and "no Python 3.9 on this machine" in problem


# --- verification across two releases (real MindSpore) ------------------------------------------

HAS_AUX_STEP = """import mindspore as ms
from mindspore import nn


class AuxStep(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self.grad_fn = ms.value_and_grad(self.forward, None, optimizer.parameters, has_aux=True)

    def forward(self, data, label):
        loss = self.network(data, label)
        return loss, loss * 2

    def construct(self, data, label):
        (loss, _), grads = self.grad_fn(data, label)
        self.optimizer(grads)
        return loss
"""


def _runtime_or_skip(version: Version) -> runtimes.Runtime:
    runtime = runtimes.available().get(version)
    if runtime is None:
        pytest.skip(f"no MindSpore {version} runtime here: ms-migrate runtime install {version}")
    return runtime


@pytest.mark.mindspore
def test_downgrade_verify_runs_after_on_the_real_target(tmp_path: Path) -> None:
    """The has_aux downgrade, run BEFORE on 2.10 and AFTER on a real 1.7 in both modes: equal
    now; the stop_gradient of a tuple it once wrote differs there (AFTER fails in PYNATIVE),
    though on 2.10 alone both are equal."""
    from ms_migrate.core.engine import downgrade_text
    from ms_migrate.verify import VerifyOptions
    from ms_migrate.verify.verifier import verify_texts

    seventeen, newest = _runtime_or_skip(Version(1, 7)), runtimes.available()[max(runtimes.available())]
    after = downgrade_text(HAS_AUX_STEP, Version(1, 7)).text
    assert "GradOperation" in after and "HyperMap()" in after
    options = VerifyOptions(python=seventeen.python, before_python=newest.python, workers=2)
    report = verify_texts(tmp_path / "step.py", HAS_AUX_STEP, after, options)
    assert [(row.mode, row.verdict.value) for row in report.results] == [
        ("pynative", "equal"),
        ("graph", "equal"),
    ]
    assert all(row.runtime == f"{newest.release} -> {seventeen.release}" for row in report.results)
    tuple_form = after.replace(
        "self.hyper_map(ms.ops.stop_gradient, out[1:])", "ms.ops.stop_gradient(out[1:])"
    )
    assert tuple_form != after
    broken = verify_texts(tmp_path / "step.py", HAS_AUX_STEP, tuple_form, options)
    pynative = next(row for row in broken.results if row.mode == "pynative")
    assert pynative.verdict.value == "differs" and "AFTER fails" in pynative.reason
    same_release = verify_texts(tmp_path / "step.py", HAS_AUX_STEP, tuple_form, VerifyOptions(workers=2))
    assert same_release.ok, "on 2.10 alone the broken form passes: the reason runtimes exist"


@pytest.mark.mindspore
def test_verify_command_takes_the_target_s_runtime(tmp_path: Path) -> None:
    from ms_migrate.core.engine import downgrade_text

    _runtime_or_skip(Version(1, 7))
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(HAS_AUX_STEP, encoding="utf-8")
    after.write_text(downgrade_text(HAS_AUX_STEP, Version(1, 7)).text, encoding="utf-8")
    env = {**os.environ, "GLOG_v": "3"}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "ms_migrate",
            "verify",
            "--target-version",
            "1.7",
            "--before-version",
            "2.10",
            "--format",
            "json",
            "--mode",
            "graph",
            str(before),
            str(after),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    rows = json.loads(completed.stdout)["sites"]
    assert [row["runtime"].split(" -> ")[1] for row in rows] == ["1.7.0"]
    unavailable = subprocess.run(
        [sys.executable, "-m", "ms_migrate", "verify", "--target-version", "0.7", str(before), str(after)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert unavailable.returncode == 2 and "no MindSpore 0.x runtime" in unavailable.stderr
