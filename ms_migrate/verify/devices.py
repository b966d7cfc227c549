"""Which accelerator each verify worker runs on.

`--device GPU` on a machine with several GPUs used to start every worker on device 0: they
shared one device's memory and time while the others idled. A device spec names the ids
(`GPU:0,1,3`, `Ascend:0-3`); without ids, the devices this process can see are used: the ones
CUDA_VISIBLE_DEVICES or ASCEND_RT_VISIBLE_DEVICES leaves visible (renumbered from 0, as the
driver does), else the device nodes Linux shows (/dev/nvidia0..., /dev/davinci0...). Worker
slot i runs on ids[i % len(ids)]: passed to `mindspore.set_device(target, device_id)`
(https://www.mindspore.cn/docs/en/r2.10/api_python/mindspore/mindspore.set_device.html), or on
1.x `set_context(device_target=..., device_id=...)`.

Pure except ``visible_ids``, which reads the environment and /dev.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from ms_migrate.verify.model import DEVICES

# Where each target's visible devices are listed, and the device nodes that count them.
_VISIBLE = {"GPU": "CUDA_VISIBLE_DEVICES", "Ascend": "ASCEND_RT_VISIBLE_DEVICES"}
_NODES = {"GPU": re.compile(r"nvidia\d+"), "Ascend": re.compile(r"davinci\d+")}
# More ids than this in a spec is a typo (`0-1000`), not a machine.
MAX_IDS = 64


class DeviceSpecError(ValueError):
    pass


def parse_spec(text: str) -> tuple[str, tuple[int, ...]]:
    """`GPU` -> ("GPU", ()); `gpu:0,2` -> ("GPU", (0, 2)); `Ascend:0-3` -> ("Ascend", (0, 1, 2, 3)).
    The target as MindSpore spells it; ids in the order given, each once."""
    target, _, listed = text.strip().partition(":")
    names = {name.lower(): name for name in DEVICES}
    if target.lower() not in names:
        known = "CPU, GPU or Ascend, with ids as GPU:0,1 or GPU:0-3"
        raise DeviceSpecError(f"unknown device {target!r}: {known}")
    device = names[target.lower()]
    if not listed:
        return device, ()
    if device == "CPU":
        raise DeviceSpecError("CPU takes no device ids")
    ids: list[int] = []
    for part in listed.split(","):
        bounds = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if bounds is None:
            raise DeviceSpecError(f"{part.strip()!r} is not a device id or a range such as 0-3")
        low, high = int(bounds.group(1)), int(bounds.group(2) or bounds.group(1))
        if high < low or high - low >= MAX_IDS:
            raise DeviceSpecError(f"{part.strip()!r} is not a range of at most {MAX_IDS} ids")
        ids += [number for number in range(low, high + 1) if number not in ids]
    if len(ids) > MAX_IDS:
        raise DeviceSpecError(f"more than {MAX_IDS} device ids")
    return device, tuple(ids)


def visible_ids(
    device: str, environ: Mapping[str, str] = os.environ, dev: Path = Path("/dev")
) -> tuple[int, ...]:
    """The ids of the ``device`` accelerators this process can use; () where none are known (then
    MindSpore picks its default, device 0)."""
    if device not in _VISIBLE:
        return ()
    listed = environ.get(_VISIBLE[device])
    if listed is not None:
        entries = [entry for entry in listed.split(",") if entry.strip()]
        return tuple(range(min(len(entries), MAX_IDS)))  # the driver renumbers them from 0
    try:
        count = sum(1 for entry in dev.iterdir() if _NODES[device].fullmatch(entry.name))
    except OSError:
        return ()
    return tuple(range(min(count, MAX_IDS)))


def id_for_slot(ids: tuple[int, ...], slot: int) -> Optional[int]:
    """The device id worker slot ``slot`` runs on; None: MindSpore's default."""
    return ids[slot % len(ids)] if ids else None
