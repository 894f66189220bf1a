"""Command buffers recorded once, exactly as a program's Vulkan segment says,
and replayed: dispatches, copies, barriers and timestamp queries.

`CommandProgram.record(commands, buffers, pipelines)` walks the segment's
commands (`vknn.runtime.program`) once: binds pipelines, pushes descriptors
(vkCmdPushDescriptorSetKHR, fetched with vkGetDeviceProcAddr) or, on devices
without VK_KHR_push_descriptor, binds descriptor sets it wrote up front;
pushes the constants; dispatches the groups; records each barrier as given
(the compiler's `insert-barriers` decided them: this module derives
nothing). `run()` is then one vkQueueSubmit plus a fence wait.

Every cffi struct is built at record time and kept alive by the program; the
replay path makes a few direct `vulkan.lib` calls (the package's wrappers
cost ~6 us each, the whole per-dispatch budget on a fast GPU).

This module must not know about steps, kernels or tensor shapes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vknn.runtime.program import (
    STAGE_COMPUTE,
    STAGE_HOST,
    STAGE_TRANSFER,
    BarrierCmd,
    Command,
    CopyCmd,
    DispatchCmd,
)
from vknn.runtime.vulkan.device import Device, VulkanError, check, ffi, lib, vk
from vknn.runtime.vulkan.memory import Buffer
from vknn.runtime.vulkan.pipeline import ComputePipeline


def _stages(bits: int) -> int:
    out = 0
    if bits & STAGE_COMPUTE:
        out |= vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
    if bits & STAGE_TRANSFER:
        out |= vk.VK_PIPELINE_STAGE_TRANSFER_BIT
    if bits & STAGE_HOST:
        out |= vk.VK_PIPELINE_STAGE_HOST_BIT
    return out


def _writes(bits: int) -> int:
    out = 0
    if bits & STAGE_COMPUTE:
        out |= vk.VK_ACCESS_SHADER_WRITE_BIT
    if bits & STAGE_TRANSFER:
        out |= vk.VK_ACCESS_TRANSFER_WRITE_BIT
    return out


def _accesses(bits: int) -> int:
    out = 0
    if bits & STAGE_COMPUTE:
        out |= vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
    if bits & STAGE_TRANSFER:
        out |= vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
    if bits & STAGE_HOST:
        out |= vk.VK_ACCESS_HOST_READ_BIT
    return out


@dataclass
class RecordStats:
    dispatches: int = 0
    copies: int = 0
    barriers: int = 0
    record_seconds: float = 0.0


@dataclass(frozen=True)
class Recorded:
    """One dispatch as recorded, for the profiler."""

    index: int
    """Its position among the segment's dispatches."""
    label: str
    nodes: str
    kind: str


class CommandProgram:
    """One primary command buffer recorded once, submitted any number of times."""

    def __init__(self, device: Device, profiling: bool = False) -> None:
        self.device = device
        self.profiling = profiling and device.caps.has_timestamps
        self.pool = self.cmd = self.fence = self.query_pool = self.desc_pool = None
        self._keep: list[Any] = []
        self.recorded: list[Recorded] = []
        self.stats = RecordStats()
        self._recorded = False
        dev = device.device
        device.on_close(self.destroy)
        pinfo = ffi.new(
            "VkCommandPoolCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                "queueFamilyIndex": device.queue_family,
            },
        )
        out = ffi.new("VkCommandPool*")
        check(lib.vkCreateCommandPool(dev, pinfo, ffi.NULL, out), "vkCreateCommandPool")
        self.pool = out[0]
        ainfo = ffi.new(
            "VkCommandBufferAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                "commandPool": self.pool,
                "level": vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                "commandBufferCount": 1,
            },
        )
        cb = ffi.new("VkCommandBuffer*")
        check(lib.vkAllocateCommandBuffers(dev, ainfo, cb), "vkAllocateCommandBuffers")
        self.cmd = cb[0]
        finfo = ffi.new("VkFenceCreateInfo*", {"sType": vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO})
        fence = ffi.new("VkFence*")
        check(lib.vkCreateFence(dev, finfo, ffi.NULL, fence), "vkCreateFence")
        self.fence = fence[0]
        self._fences = ffi.new("VkFence[]", [self.fence])
        self._cmds = ffi.new("VkCommandBuffer[]", [self.cmd])
        self._submit = ffi.new(
            "VkSubmitInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                "commandBufferCount": 1,
                "pCommandBuffers": self._cmds,
            },
        )

    # -- recording ---------------------------------------------------------

    def record(
        self,
        commands: Sequence[Command],
        buffers: Sequence[Buffer],
        pipelines: Sequence[ComputePipeline],
    ) -> None:
        """Record `commands`; ranges name `buffers` (one per arena) and
        dispatches `pipelines` (one per kernel of the program)."""
        if self._recorded:
            raise VulkanError("a CommandProgram is recorded once; build a new one")
        t0 = time.perf_counter()
        dev = self.device.device
        cmd = self.cmd
        keep = self._keep
        dispatches = [c for c in commands if isinstance(c, DispatchCmd)]
        use_push = self.device.push_descriptor_fn is not None and all(
            pipelines[d.kernel].push_descriptors for d in dispatches
        )
        sets = None if use_push else self._allocate_sets(dispatches, buffers, pipelines)
        if self.profiling and dispatches:
            qinfo = ffi.new(
                "VkQueryPoolCreateInfo*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                    "queryType": vk.VK_QUERY_TYPE_TIMESTAMP,
                    "queryCount": 2 * len(dispatches),
                },
            )
            qp = ffi.new("VkQueryPool*")
            check(lib.vkCreateQueryPool(dev, qinfo, ffi.NULL, qp), "vkCreateQueryPool")
            self.query_pool = qp[0]

        binfo = ffi.new(
            "VkCommandBufferBeginInfo*", {"sType": vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}
        )
        check(lib.vkBeginCommandBuffer(cmd, binfo), "vkBeginCommandBuffer")
        if self.query_pool is not None:
            lib.vkCmdResetQueryPool(cmd, self.query_pool, 0, 2 * len(dispatches))
        bound = None
        di = 0
        for c in commands:
            if isinstance(c, BarrierCmd):
                self._barrier(c, buffers)
                continue
            if isinstance(c, CopyCmd):
                region = ffi.new(
                    "VkBufferCopy*",
                    {"srcOffset": c.src.offset, "dstOffset": c.dst.offset, "size": c.src.size},
                )
                keep.append(region)
                lib.vkCmdCopyBuffer(
                    cmd, buffers[c.src.arena].handle, buffers[c.dst.arena].handle, 1, region
                )
                self.stats.copies += 1
                continue
            pipe = pipelines[c.kernel]
            if bound is not pipe:
                lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.handle)
                bound = pipe
            if use_push:
                n = len(c.bindings)
                infos = ffi.new("VkDescriptorBufferInfo[]", n)
                wds = ffi.new("VkWriteDescriptorSet[]", n)
                for i, b in enumerate(c.bindings):
                    infos[i].buffer = buffers[b.arena].handle
                    infos[i].offset = b.offset
                    infos[i].range = b.size
                    wds[i].sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                    wds[i].dstBinding = i
                    wds[i].descriptorCount = 1
                    wds[i].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                    wds[i].pBufferInfo = infos + i
                keep += [infos, wds]
                self.device.push_descriptor_fn(
                    cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, n, wds
                )
            else:
                assert sets is not None
                lib.vkCmdBindDescriptorSets(
                    cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, 1, sets + di, 0,
                    ffi.NULL,
                )  # fmt: skip
            if c.push:
                data = ffi.new("char[]", c.push)
                keep.append(data)
                lib.vkCmdPushConstants(
                    cmd, pipe.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(c.push), data
                )
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(
                    cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 2 * di
                )
            lib.vkCmdDispatch(cmd, *c.groups)
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(
                    cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query_pool, 2 * di + 1
                )
            self.recorded.append(Recorded(di, c.label, c.nodes, c.kind))
            di += 1
            self.stats.dispatches += 1
        check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
        self._recorded = True
        self.stats.record_seconds = time.perf_counter() - t0

    def _barrier(self, c: BarrierCmd, buffers: Sequence[Buffer]) -> None:
        """The barrier as the program states it: buffer memory barriers over
        the written ranges it lists; none listed, a global memory barrier
        when the host reads next, else an execution dependency only."""
        src, dst = _stages(c.src), _stages(c.dst)
        n = len(c.buffers)
        bmb = ffi.new("VkBufferMemoryBarrier[]", max(n, 1))
        for i, r in enumerate(c.buffers):
            bmb[i].sType = vk.VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER
            bmb[i].srcAccessMask = _writes(c.src)
            bmb[i].dstAccessMask = _accesses(c.dst)
            bmb[i].srcQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            bmb[i].dstQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            bmb[i].buffer = buffers[r.arena].handle
            bmb[i].offset = r.offset
            bmb[i].size = r.size
        mb = ffi.NULL
        n_mb = 0
        if not n and c.dst & STAGE_HOST:
            mb = ffi.new(
                "VkMemoryBarrier*",
                {
                    "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                    "srcAccessMask": _writes(c.src),
                    "dstAccessMask": vk.VK_ACCESS_HOST_READ_BIT,
                },
            )
            n_mb = 1
        self._keep += [bmb, mb]
        lib.vkCmdPipelineBarrier(
            self.cmd, src, dst, 0, n_mb, mb, n, bmb if n else ffi.NULL, 0, ffi.NULL
        )
        self.stats.barriers += 1

    def _allocate_sets(
        self,
        dispatches: list[DispatchCmd],
        buffers: Sequence[Buffer],
        pipelines: Sequence[ComputePipeline],
    ) -> Any:
        """The fallback without push descriptors: one set per dispatch, written now."""
        dev = self.device.device
        n = max(len(dispatches), 1)
        total = max(sum(len(d.bindings) for d in dispatches), 1)
        size = ffi.new(
            "VkDescriptorPoolSize*",
            {"type": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, "descriptorCount": total},
        )
        pinfo = ffi.new(
            "VkDescriptorPoolCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                "maxSets": n,
                "poolSizeCount": 1,
                "pPoolSizes": size,
            },
        )
        out = ffi.new("VkDescriptorPool*")
        check(lib.vkCreateDescriptorPool(dev, pinfo, ffi.NULL, out), "vkCreateDescriptorPool")
        self.desc_pool = out[0]
        sets = ffi.new("VkDescriptorSet[]", n)
        if not dispatches:
            return sets
        layouts = ffi.new(
            "VkDescriptorSetLayout[]", [pipelines[d.kernel].set_layout for d in dispatches]
        )
        ainfo = ffi.new(
            "VkDescriptorSetAllocateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                "descriptorPool": self.desc_pool,
                "descriptorSetCount": len(dispatches),
                "pSetLayouts": layouts,
            },
        )
        check(lib.vkAllocateDescriptorSets(dev, ainfo, sets), "vkAllocateDescriptorSets")
        infos = ffi.new("VkDescriptorBufferInfo[]", total)
        wds = ffi.new("VkWriteDescriptorSet[]", total)
        k = 0
        for si, d in enumerate(dispatches):
            for i, b in enumerate(d.bindings):
                infos[k].buffer = buffers[b.arena].handle
                infos[k].offset = b.offset
                infos[k].range = b.size
                wds[k].sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                wds[k].dstSet = sets[si]
                wds[k].dstBinding = i
                wds[k].descriptorCount = 1
                wds[k].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                wds[k].pBufferInfo = infos + k
                k += 1
        lib.vkUpdateDescriptorSets(dev, k, wds, 0, ffi.NULL)
        self._keep += [sets, layouts, infos, wds]
        return sets

    # -- replay ------------------------------------------------------------

    def submit(self) -> None:
        """Submit the recorded commands (the queue is shared: submissions of
        other threads' command buffers are serialized by the device lock)."""
        with self.device.queue_lock:
            res = lib.vkQueueSubmit(self.device.queue, 1, self._submit, self.fence)
        if res != 0:
            raise VulkanError(f"vkQueueSubmit failed with VkResult {res}")

    def wait(self) -> None:
        dev = self.device.device
        res = lib.vkWaitForFences(dev, 1, self._fences, 1, 0xFFFFFFFFFFFFFFFF)
        if res != 0:
            raise VulkanError(f"vkWaitForFences failed with VkResult {res}")
        lib.vkResetFences(dev, 1, self._fences)

    def run(self) -> None:
        """Submit and wait (the hot path)."""
        self.submit()
        self.wait()

    def timings_ns(self) -> list[tuple[Recorded, float]]:
        """(dispatch, GPU ns) per dispatch of the last run (profiling only)."""
        if self.query_pool is None:
            return []
        n = 2 * len(self.recorded)
        data = ffi.new("uint64_t[]", n)
        flags = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
        check(
            lib.vkGetQueryPoolResults(
                self.device.device, self.query_pool, 0, n, 8 * n, data, 8, flags
            ),
            "vkGetQueryPoolResults",
        )
        period = self.device.caps.timestamp_period_ns
        bits = self.device.caps.timestamp_valid_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        return [
            (r, ((data[2 * i + 1] - data[2 * i]) & mask) * period)
            for i, r in enumerate(self.recorded)
        ]

    def destroy(self) -> None:
        dev = self.device.device
        if dev is None:
            return
        # run() always waits for its fence, so nothing of ours is in flight.
        if self.query_pool is not None:
            lib.vkDestroyQueryPool(dev, self.query_pool, ffi.NULL)
        if self.desc_pool is not None:
            lib.vkDestroyDescriptorPool(dev, self.desc_pool, ffi.NULL)
        if self.fence is not None:
            lib.vkDestroyFence(dev, self.fence, ffi.NULL)
        if self.pool is not None:
            lib.vkDestroyCommandPool(dev, self.pool, ffi.NULL)  # frees the command buffer
        self.pool = self.cmd = self.fence = self.query_pool = self.desc_pool = None
        self._keep.clear()


def copy_once(device: Device, src: Buffer, dst: Buffer, nbytes: int) -> None:
    """Record, run and free a one-shot copy (weights through staging)."""
    prog = CommandProgram(device)
    try:
        prog.record([CopyCmd(_r(0, nbytes), _r(1, nbytes))], [src, dst], [])
        prog.run()
    finally:
        prog.destroy()


def _r(arena: int, nbytes: int):  # type: ignore[no-untyped-def]
    from vknn.runtime.program import Range

    return Range(arena, 0, nbytes)


__all__ = ["CommandProgram", "RecordStats", "Recorded", "copy_once"]
