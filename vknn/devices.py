"""`vknn devices`: every Vulkan device of this machine, as the compiler sees it.

For each physical device: its index (what `Config(device=...)`, `vknn run
--device` and the onnxruntime `device_id` provider option take), name, type,
driver, device-local memory, the capabilities kernel gates read, and the
most capable target preset (`vknn.kernels.targets`) whose needs it meets.
Nothing here opens a logical device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAPS_SHOWN = (
    "api_version", "subgroup_size", "max_compute_shared_memory_size",
    "max_compute_work_group_invocations", "max_storage_buffer_range", "has_fp16_storage",
    "has_fp16_arith", "has_push_descriptor", "has_float_controls2", "has_cooperative_matrix",
    "rte_fp16", "has_device_local_host_visible", "timestamp_valid_bits",
)  # fmt: skip
"""The DeviceCaps fields kernel gates and the target decide with."""

PRESET_ORDER = ("nvidia", "lavapipe", "generic")
"""Most capable first: a device matches the first whose needs it meets."""


@dataclass
class DeviceInfo:
    index: int
    name: str
    type: str
    driver: str
    memory_bytes: int
    caps: dict[str, Any] = field(default_factory=dict)
    preset: str = "generic"
    preset_misses: dict[str, str] = field(default_factory=dict)
    """Preset -> the first capability the device lacks for it (more capable ones only)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _driver(pd: Any, caps: Any) -> str:
    """`driverName driverInfo` (Vulkan 1.2 driver properties), else the raw version."""
    from vknn.runtime.vulkan.device import _cstr, ffi, lib, vk

    if tuple(caps.api_version[:2]) >= (1, 2):
        drv = ffi.new("VkPhysicalDeviceDriverProperties*")
        drv.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
        props = ffi.new("VkPhysicalDeviceProperties2*")
        props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
        props.pNext = drv
        lib.vkGetPhysicalDeviceProperties2(pd, props)
        text = f"{_cstr(drv.driverName)} {_cstr(drv.driverInfo)}".strip()
        if text:
            return text
    return f"version 0x{caps.driver_version:x}"


def _device_local_bytes(pd: Any) -> int:
    from vknn.runtime.vulkan.device import ffi, lib, vk

    mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
    lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
    local = vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
    return sum(
        int(mem.memoryHeaps[i].size)
        for i in range(mem.memoryHeapCount)
        if mem.memoryHeaps[i].flags & local
    )


def list_devices() -> list[DeviceInfo]:
    """Every Vulkan physical device ([] without a loader or a device)."""
    from vknn.kernels.targets import PRESETS
    from vknn.runtime.target import unmet
    from vknn.runtime.vulkan import device as d

    if d.vulkan_unavailable_reason() is not None:
        return []
    inst = d._create_instance(validation=False, keep=[])
    out: list[DeviceInfo] = []
    try:
        for i, pd in enumerate(d._physical_devices(inst)):
            caps = d.query_caps(pd)
            misses: dict[str, str] = {}
            preset = "none"
            for name in PRESET_ORDER:
                why = unmet(PRESETS[name], caps)
                if why is None:
                    preset = name
                    break
                misses[name] = why
            shown = {k: getattr(caps, k) for k in CAPS_SHOWN}
            shown["api_version"] = ".".join(map(str, caps.api_version))
            out.append(
                DeviceInfo(
                    i,
                    caps.name,
                    caps.device_type,
                    _driver(pd, caps),
                    _device_local_bytes(pd),
                    shown,
                    preset,
                    misses,
                )
            )
    finally:
        d.lib.vkDestroyInstance(inst, d.ffi.NULL)
    return out


def format_devices(devices: list[DeviceInfo]) -> str:
    if not devices:
        from vknn.runtime.vulkan.device import vulkan_unavailable_reason

        return f"no Vulkan device ({vulkan_unavailable_reason() or 'none enumerated'})"
    lines: list[str] = []
    for dev in devices:
        c = dev.caps
        flags = [k.removeprefix("has_") for k, v in c.items() if v is True]
        lines += [
            f"[{dev.index}] {dev.name} ({dev.type})",
            f"    driver   {dev.driver}, Vulkan {c['api_version']}",
            f"    memory   {dev.memory_bytes / 2**30:.1f} GiB device-local",
            f"    compute  subgroup {c['subgroup_size']}, shared memory "
            f"{c['max_compute_shared_memory_size'] // 1024} KiB, workgroup "
            f"{c['max_compute_work_group_invocations']} invocations",
            f"    features {', '.join(flags) or 'none'}",
            f"    target   {dev.preset}"
            + "".join(f"; not {p}: needs {w}" for p, w in dev.preset_misses.items()),
        ]
    return "\n".join(lines)
