"""The process-wide Vulkan device sessions share, opened on first use.

Opening an instance and a device costs ~0.5 s on lavapipe, and every session
of a process would pick the same device anyway, so sessions share one
`Device` and one pipeline set; both are closed at interpreter exit.
"""

from __future__ import annotations

import atexit
import threading

from vknn.runtime.vulkan.device import Device, vulkan_unavailable_reason
from vknn.runtime.vulkan.pipeline import Pipelines

_lock = threading.Lock()
_device: Device | None = None
_pipelines: Pipelines | None = None
_unavailable: str | None = None
_probed = False


def shared_device() -> tuple[Device | None, Pipelines | None, str | None]:
    """(device, pipelines, None) or (None, None, why there is no device)."""
    global _device, _pipelines, _unavailable, _probed
    with _lock:
        if not _probed:
            _probed = True
            _unavailable = vulkan_unavailable_reason()
            if _unavailable is None:
                try:
                    _device = Device.open()
                    _pipelines = Pipelines(_device)
                    atexit.register(_close)
                except Exception as e:  # a broken driver is a fallback reason, not a crash
                    _unavailable = f"Vulkan device could not be opened: {e}"
                    _device = None
        return _device, _pipelines, _unavailable


def _close() -> None:
    global _device, _pipelines
    if _pipelines is not None:
        close = getattr(_pipelines, "close", None)
        if close is not None:
            close()
    if _device is not None:
        _device.close()
    _device = _pipelines = None
