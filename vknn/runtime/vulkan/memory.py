"""Device memory: buffers, their memory types, host mapping, and the arena planner.

Memory strategy (ADR 0004): where the device has a memory type that is both
DEVICE_LOCAL and HOST_VISIBLE (lavapipe, UMA GPUs, NVIDIA with resizable BAR)
tensors live in it and the host reads/writes them through a persistent
mapping; otherwise tensors are device-local and a host-visible staging buffer
plus recorded copies move boundary data. Every intermediate of a segment lives
in one arena buffer at an offset chosen by `plan_arena`, an interval planner
over live ranges in execution order (as ARM's ML emulation layer does).

`plan_arena` is pure Python and usable without a device. This module must not
know about kernels, plans or command recording (beyond exposing handles).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from vknn.runtime.vulkan.device import Device, VulkanError, check, ffi, lib, vk

# ---------------------------------------------------------------------------
# The interval memory planner
# ---------------------------------------------------------------------------


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def plan_arena(
    tensors: Sequence[tuple[Hashable, int, int, int]], alignment: int = 16
) -> tuple[dict[Hashable, int], int]:
    """Offsets in one arena for `tensors` = [(id, size_bytes, first_use, last_use)].

    A tensor occupies its block from step `first_use` through step `last_use`
    inclusive: a step's inputs and outputs are live together, so an output can
    never alias an input of its own step. Allocation walks steps in order;
    at each step the blocks of tensors whose last use has passed return to a
    free list (coalesced with their neighbours), then the step's new tensors,
    largest first, take the best-fitting (smallest sufficient) free block, or
    grow the arena at its end. Returns ({id: offset}, arena_size); offsets are
    multiples of `alignment`, and the size is at most the aligned sum.
    """
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    for tid, size, first, last in tensors:
        if size < 0 or last < first:
            raise ValueError(f"tensor {tid!r}: bad size/live range ({size}, {first}..{last})")
    by_start: dict[int, list[tuple[Hashable, int, int]]] = {}
    for tid, size, first, last in tensors:
        by_start.setdefault(first, []).append((tid, align_up(max(size, 1), alignment), last))

    free: list[tuple[int, int]] = []  # sorted (offset, size), never adjacent (coalesced)
    live: list[tuple[int, int, int]] = []  # (last_use, offset, size), a min-heap by last_use
    offsets: dict[Hashable, int] = {}
    end = 0

    def release(off: int, size: int) -> None:
        i = bisect.bisect_left(free, (off, 0))
        if i > 0 and free[i - 1][0] + free[i - 1][1] == off:  # merge with the left block
            i -= 1
            off, size = free[i][0], free[i][1] + size
            del free[i]
        if i < len(free) and off + size == free[i][0]:  # merge with the right block
            size += free[i][1]
            del free[i]
        free.insert(i, (off, size))

    peak = 0
    for step in sorted(by_start):
        while live and live[0][0] < step:
            _, off, size = heapq.heappop(live)
            release(off, size)
        for tid, size, last in sorted(by_start[step], key=lambda t: -t[1]):
            best = -1
            for j, (_, fsize) in enumerate(free):
                if fsize >= size and (best < 0 or fsize < free[best][1]):
                    best = j
            if best >= 0:
                off, fsize = free[best]
                if fsize == size:
                    del free[best]
                else:
                    free[best] = (off + size, fsize - size)
            elif free and free[-1][0] + free[-1][1] == end:
                # Nothing fits: grow the free tail block rather than leave a hole.
                off = free.pop()[0]
                end = off + size
            else:
                off = end
                end += size
            peak = max(peak, end)
            offsets[tid] = off
            heapq.heappush(live, (last, off, size))
    return offsets, peak


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


class TensorRef:
    """A tensor's place: a buffer, a byte offset and a byte size."""

    __slots__ = ("buffer", "offset", "nbytes")

    def __init__(self, buffer: Buffer, offset: int, nbytes: int) -> None:
        self.buffer = buffer
        self.offset = offset
        self.nbytes = nbytes

    def __repr__(self) -> str:
        return f"TensorRef(+{self.offset}, {self.nbytes}B)"
