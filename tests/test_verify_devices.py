"""Verify on a machine with several accelerators: each worker gets its own (`--device GPU:0,1`,
or the devices this process can see), never all of them device 0."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from ms_migrate.verify import supervisor
from ms_migrate.verify.devices import DeviceSpecError, id_for_slot, parse_spec, visible_ids
from ms_migrate.verify.model import VerifyOptions


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("CPU", ("CPU", ())),
        ("gpu", ("GPU", ())),
        ("GPU:0,1,3", ("GPU", (0, 1, 3))),
        ("ascend:0-3", ("Ascend", (0, 1, 2, 3))),
        ("GPU: 2, 0-1, 2", ("GPU", (2, 0, 1))),
    ],
)
def test_a_device_spec_names_the_target_and_its_ids(spec: str, parsed: tuple[str, tuple[int, ...]]) -> None:
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["TPU", "CPU:0", "GPU:x", "GPU:3-1", "GPU:0-5000", "GPU:"])
def test_a_bad_device_spec_is_refused(spec: str) -> None:
    if spec == "GPU:":
        assert parse_spec(spec) == ("GPU", ())  # nothing after the colon: no ids named
        return
    with pytest.raises(DeviceSpecError):
        parse_spec(spec)


def test_the_visible_devices_are_the_environment_s_then_the_device_nodes(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "davinci0"):
        (tmp_path / name).touch()
    assert visible_ids("GPU", {}, tmp_path) == (0, 1, 2)
    assert visible_ids("Ascend", {}, tmp_path) == (0,)
    # CUDA_VISIBLE_DEVICES=5,7 leaves two devices, which the driver numbers 0 and 1.
    assert visible_ids("GPU", {"CUDA_VISIBLE_DEVICES": "5,7"}, tmp_path) == (0, 1)
    assert visible_ids("Ascend", {"ASCEND_RT_VISIBLE_DEVICES": ""}, tmp_path) == ()
    assert visible_ids("CPU", {}, tmp_path) == ()
    assert visible_ids("GPU", {}, tmp_path / "missing") == ()


def test_each_worker_slot_keeps_to_its_own_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four tasks over two GPUs: two workers, one per GPU, each started with its device id."""
    assert [id_for_slot((0, 1), slot) for slot in range(4)] == [0, 1, 0, 1]
    assert id_for_slot((), 3) is None
    started: list[object] = []
    lock = threading.Lock()
    both = threading.Barrier(2, timeout=30)  # each slot has taken a task before either fails

    class Refused:
        def __init__(self, setup: dict, options: VerifyOptions, workdir: Path) -> None:
            with lock:
                started.append(setup["device_id"])
            both.wait()
            raise OSError("no interpreter here")

    monkeypatch.setattr(supervisor, "Worker", Refused)
    options = VerifyOptions(device="GPU", device_ids=(0, 1))
    files = [{"path": "a.py", "sites": [{"id": index} for index in range(2)]}]
    results = supervisor.run_tasks(files, options, Path("."))
    assert sorted(started) == [0, 1] and supervisor.worker_count(options, 4) == 2
    assert len(results) == 4 and all(result["verdict"] == "could not run" for result in results.values())


def test_the_verify_command_refuses_a_bad_device_spec_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(
        main, ["verify", "--device", "GPU:x", str(tmp_path / "a.py"), str(tmp_path / "a.py")]
    )
    assert result.exit_code == 2 and "'x' is not a device id" in result.output
