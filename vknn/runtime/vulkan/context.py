"""The process-wide Vulkan devices sessions share, each opened on first use.

Opening an instance and a device costs ~0.5 s on lavapipe, so the sessions of
a process that ask for the same physical device share one `Device` and one
pipeline set; all are closed at interpreter exit. `shared_device(want)`
picks the device: `want` (Config.device: an index into the enumeration or a
substring of the name), else env `VKNN_DEVICE`, else the first discrete GPU,
integrated, virtual, then CPU (lavapipe). A `want` that names no device is an
`InvalidArgument` listing the devices.
"""

from __future__ import annotations

import atexit
import os
import threading

from vknn.errors import InvalidArgument
from vknn.runtime.vulkan.device import Device, vulkan_unavailable_reason
from vknn.runtime.vulkan.pipeline import Pipelines

_lock = threading.Lock()
_opened: dict[int, tuple[Device, Pipelines]] = {}
_failed: dict[int, str] = {}
_unavailable: str | None = None
_names: list[tuple[str, str]] | None = None
_probed = False


def physical_devices() -> list[tuple[str, str]]:
    """(name, type) of every physical device, in enumeration order ([] if none)."""
    global _names, _unavailable, _probed
    with _lock:
        if not _probed:
            _probed = True
            _unavailable = vulkan_unavailable_reason()
            _names = [] if _unavailable is not None else _enumerate()
        return list(_names or [])


def _enumerate() -> list[tuple[str, str]]:
    from vknn.runtime.vulkan import device as d

    inst = d._create_instance(validation=False, keep=[])
    try:
        props = [d._properties(p) for p in d._physical_devices(inst)]
        return [(d._cstr(p.deviceName), d._DEVICE_TYPES.get(p.deviceType, "other")) for p in props]
    finally:
        d.lib.vkDestroyInstance(inst, d.ffi.NULL)


def resolve(want: int | str | None) -> int:
    """The index of the physical device `want` names (see the module doc)."""
    devices = physical_devices()
    if want is None or want == "":
        want = os.environ.get("VKNN_DEVICE") or None
    if want is None:
        from vknn.runtime.vulkan.device import _TYPE_RANK

        return min(range(len(devices)), key=lambda i: (_TYPE_RANK[devices[i][1]], i))
    listing = "; ".join(f"{i}: {n} ({t})" for i, (n, t) in enumerate(devices)) or "none"
    if isinstance(want, int) or str(want).isdigit():
        i = int(want)
        if not 0 <= i < len(devices):
            raise InvalidArgument(f"device {want}: no such Vulkan device; devices are {listing}")
        return i
    for i, (name, _) in enumerate(devices):
        if str(want).lower() in name.lower():
            return i
    raise InvalidArgument(f"device {want!r} matches no Vulkan device; devices are {listing}")


def shared_device(
    want: int | str | None = None,
) -> tuple[Device | None, Pipelines | None, str | None]:
    """(device, pipelines, None) or (None, None, why there is no device)."""
    if not physical_devices():
        return None, None, _unavailable or "no Vulkan physical device"
    index = resolve(want)
    with _lock:
        if index in _opened:
            return (*_opened[index], None)
        if index in _failed:
            return None, None, _failed[index]
        try:
            dev = Device.open(str(index))
            _opened[index] = (dev, Pipelines(dev))
            if len(_opened) == 1:
                atexit.register(_close)
        except Exception as e:  # a broken driver is a fallback reason, not a crash
            _failed[index] = f"Vulkan device {index} could not be opened: {e}"
            return None, None, _failed[index]
        return (*_opened[index], None)


def _close() -> None:
    while _opened:
        _, (device, pipelines) = _opened.popitem()
        close = getattr(pipelines, "close", None)
        if close is not None:
            close()
        device.close()
