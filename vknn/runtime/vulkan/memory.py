"""Device memory: buffers, their memory types and host mapping.

Memory strategy (ADR 0004, 0008): the compiled program says which arenas a
segment has (device, const, staging, readback) and where every tensor lives
in them (`plan-memory`); this module only allocates them: device arenas are
host-visible too where the target's memory model writes inputs in place,
readback arenas are host-cached (the CPU reads mapped VRAM uncached).

This module must not know about kernels, programs or command recording.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vknn.runtime.vulkan.device import Device, VulkanError, check, ffi, lib, vk


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------

STORAGE = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT if vk is not None else 0
TRANSFER_SRC = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT if vk is not None else 0
TRANSFER_DST = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT if vk is not None else 0


class Buffer:
    """A VkBuffer with its own VkDeviceMemory (one allocation per buffer: VKNN
    makes a handful per segment, so a sub-allocator would buy nothing).

    `host_visible` buffers are persistently mapped; `.host` is a uint8 numpy
    view of the whole buffer (coherent memory: no flushes needed).
    """

    def __init__(
        self, device: Device, size: int, usage: int, host_visible: bool, readback: bool = False
    ) -> None:
        self.device = device
        self.size = max(int(size), 4)
        self.host_visible = host_visible
        self.handle: Any = None
        self.memory: Any = None
        self.host: np.ndarray | None = None
        dev = device.device
        info = ffi.new(
            "VkBufferCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                "size": self.size,
                "usage": usage,
                "sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE,
            },
        )
        out = ffi.new("VkBuffer*")
        check(lib.vkCreateBuffer(dev, info, ffi.NULL, out), "vkCreateBuffer")
        self.handle = out[0]
        device.on_close(self.destroy)
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetBufferMemoryRequirements(dev, self.handle, req)
        flags = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        preferred = 0
        if host_visible:
            flags = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
            # Device-local too when the device has it (direct mapping); cached
            # host memory makes readback of staging buffers fast.
            preferred = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            if readback:
                # The CPU reads it: cached system memory, not mapped VRAM
                # (uncached over PCIe, ~100x slower to read).
                preferred = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
        mtype = device.memory_type(flags, preferred, req.memoryTypeBits)
        alloc = ffi.new(
            "VkMemoryAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                "allocationSize": req.size,
                "memoryTypeIndex": mtype,
            },
        )
        mem = ffi.new("VkDeviceMemory*")
        res = lib.vkAllocateMemory(dev, alloc, ffi.NULL, mem)
        if res != 0:
            raise VulkanError(f"vkAllocateMemory({req.size} bytes) failed with VkResult {res}")
        self.memory = mem[0]
        check(lib.vkBindBufferMemory(dev, self.handle, self.memory, 0), "vkBindBufferMemory")
        if host_visible:
            ptr = ffi.new("void**")
            check(lib.vkMapMemory(dev, self.memory, 0, self.size, 0, ptr), "vkMapMemory")
            self.host = np.frombuffer(ffi.buffer(ptr[0], self.size), dtype=np.uint8)

    def write(self, offset: int, data: np.ndarray) -> None:
        assert self.host is not None, "write() needs a host-visible buffer"
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.host[offset : offset + raw.size] = raw

    def read(self, offset: int, nbytes: int) -> np.ndarray:
        assert self.host is not None, "read() needs a host-visible buffer"
        return self.host[offset : offset + nbytes].copy()

    def destroy(self) -> None:
        dev = self.device.device
        if dev is None:
            return
        self.host = None
        if self.handle is not None:
            lib.vkDestroyBuffer(dev, self.handle, ffi.NULL)
            self.handle = None
        if self.memory is not None:
            lib.vkFreeMemory(dev, self.memory, ffi.NULL)  # unmaps implicitly
            self.memory = None
