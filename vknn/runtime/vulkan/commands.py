"""Command buffers recorded once and replayed: dispatches, copies, barriers and
timestamp queries, submitted with a fence.

`CommandProgram.record(ops)` walks a list of `Dispatch` / `Copy` once: it
binds pipelines, pushes descriptors (vkCmdPushDescriptorSetKHR, fetched with
vkGetDeviceProcAddr) or, on devices without VK_KHR_push_descriptor, binds
descriptor sets it allocated and wrote up front; pushes constants; and puts a
pipeline barrier before any op that reads or overwrites a byte range an
earlier unbarriered op wrote, or overwrites a range one read (arena reuse
makes write-after-read real). Consecutive dispatches of one op (a dispatch
split at maxComputeWorkGroupCount) never wait on each other. `run()` is then
one vkQueueSubmit plus a fence wait; nothing is re-recorded.

Every cffi struct is built at record time and kept alive by the program; the
replay path makes three direct `vulkan.lib` calls (the package's wrappers cost
~6 us each, which is the whole per-dispatch budget on a fast GPU).

This module must not know about steps, kernels or tensor shapes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from vknn.runtime.vulkan.device import Device, VulkanError, check, ffi, lib, vk
from vknn.runtime.vulkan.memory import Buffer
from vknn.runtime.vulkan.pipeline import ComputePipeline


@dataclass
class Binding:
    """Storage-buffer binding i of a dispatch: a byte range of a buffer."""

    buffer: Buffer
    offset: int
    nbytes: int
    write: bool = False


@dataclass
class Dispatch:
    pipeline: ComputePipeline
    bindings: list[Binding]
    push: bytes
    groups: tuple[int, int, int]
    op_index: int = 0
    """Dispatches with equal op_index belong to one op and need no barrier between them."""
    label: str = ""


@dataclass
class Copy:
    src: Buffer
    src_offset: int
    dst: Buffer
    dst_offset: int
    nbytes: int
    op_index: int = -1
    label: str = "copy"


@dataclass
class _Access:
    buffer: Any
    lo: int
    hi: int
    op_index: int


def _overlaps(a: _Access, accesses: list[_Access], op_index: int) -> bool:
    return any(
        b.buffer == a.buffer and b.lo < a.hi and a.lo < b.hi and b.op_index != op_index
        for b in accesses
    )


_ALL_ACCESS = 0
_SHADER = 0
_TRANSFER = 0
if vk is not None:
    _ALL_ACCESS = (
        vk.VK_ACCESS_SHADER_READ_BIT
        | vk.VK_ACCESS_SHADER_WRITE_BIT
        | vk.VK_ACCESS_TRANSFER_READ_BIT
        | vk.VK_ACCESS_TRANSFER_WRITE_BIT
    )
    _SHADER = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
    _TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT


def _write_access(stages: int) -> int:
    """The write accesses that `stages` can perform (access masks must match stages)."""
    out = 0
    if stages & _SHADER:
        out |= vk.VK_ACCESS_SHADER_WRITE_BIT
    if stages & _TRANSFER:
        out |= vk.VK_ACCESS_TRANSFER_WRITE_BIT
    return out


@dataclass
class RecordStats:
    dispatches: int = 0
    copies: int = 0
    barriers: int = 0
    record_seconds: float = 0.0


class CommandProgram:
    """One primary command buffer recorded once, submitted any number of times."""

    def __init__(self, device: Device, profiling: bool = False) -> None:
        self.device = device
        self.profiling = profiling and device.caps.has_timestamps
        self.pool = self.cmd = self.fence = self.query_pool = self.desc_pool = None
        self._keep: list[Any] = []
        self.labels: list[tuple[int, str]] = []
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

    def record(self, ops: list[Dispatch | Copy]) -> None:
        if self._recorded:
            raise VulkanError("a CommandProgram is recorded once; build a new one")
        t0 = time.perf_counter()
        dev = self.device.device
        cmd = self.cmd
        keep = self._keep
        dispatches = [op for op in ops if isinstance(op, Dispatch)]
        use_push = self.device.push_descriptor_fn is not None and all(
            d.pipeline.push_descriptors for d in dispatches
        )
        sets = None if use_push else self._allocate_sets(dispatches)
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

        writes: list[_Access] = []
        reads: list[_Access] = []
        stages = 0
        used_stages = 0
        bound = None
        di = 0
        for op in ops:
            if isinstance(op, Copy):
                op_reads = [_Access(op.src.handle, op.src_offset, op.src_offset + op.nbytes, -1)]
                op_writes = [_Access(op.dst.handle, op.dst_offset, op.dst_offset + op.nbytes, -1)]
                stage = _TRANSFER
            else:
                op_reads = [
                    _Access(b.buffer.handle, b.offset, b.offset + b.nbytes, op.op_index)
                    for b in op.bindings
                    if not b.write
                ]
                op_writes = [
                    _Access(b.buffer.handle, b.offset, b.offset + b.nbytes, op.op_index)
                    for b in op.bindings
                    if b.write
                ]
                stage = _SHADER
            idx = op.op_index if isinstance(op, Dispatch) else -2 - self.stats.copies
            hazard = any(_overlaps(a, writes, idx) for a in op_reads + op_writes) or any(
                _overlaps(a, reads, idx) for a in op_writes
            )
            if hazard:
                self._barrier(writes, stages, stage)
                writes, reads, stages = [], [], 0
            for a in op_reads:
                a.op_index = idx
            for a in op_writes:
                a.op_index = idx
            writes += op_writes
            reads += op_reads
            stages |= stage
            used_stages |= stage

            if isinstance(op, Copy):
                region = ffi.new(
                    "VkBufferCopy*",
                    {"srcOffset": op.src_offset, "dstOffset": op.dst_offset, "size": op.nbytes},
                )
                keep.append(region)
                lib.vkCmdCopyBuffer(cmd, op.src.handle, op.dst.handle, 1, region)
                self.stats.copies += 1
                continue

            pipe = op.pipeline
            if bound is not pipe:
                lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.handle)
                bound = pipe
            if use_push:
                infos = ffi.new("VkDescriptorBufferInfo[]", len(op.bindings))
                wds = ffi.new("VkWriteDescriptorSet[]", len(op.bindings))
                for i, b in enumerate(op.bindings):
                    infos[i].buffer = b.buffer.handle
                    infos[i].offset = b.offset
                    infos[i].range = b.nbytes
                    wds[i].sType = vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                    wds[i].dstBinding = i
                    wds[i].descriptorCount = 1
                    wds[i].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                    wds[i].pBufferInfo = infos + i
                keep += [infos, wds]
                self.device.push_descriptor_fn(
                    cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, len(op.bindings), wds
                )
            else:
                assert sets is not None
                lib.vkCmdBindDescriptorSets(
                    cmd,
                    vk.VK_PIPELINE_BIND_POINT_COMPUTE,
                    pipe.layout,
                    0,
                    1,
                    sets + di,
                    0,
                    ffi.NULL,
                )
            if op.push:
                data = ffi.new("char[]", op.push)
                keep.append(data)
                lib.vkCmdPushConstants(
                    cmd, pipe.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(op.push), data
                )
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(
                    cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query_pool, 2 * di
                )
            lib.vkCmdDispatch(cmd, *op.groups)
            if self.query_pool is not None:
                lib.vkCmdWriteTimestamp(
                    cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query_pool, 2 * di + 1
                )
            self.labels.append((op.op_index, op.label))
            di += 1
            self.stats.dispatches += 1

        # Make every device write (of any earlier command, so the source scope
        # is every stage used) visible to the host before the fence signals:
        # outputs are read through a mapping right after the wait.
        used_stages = used_stages or _SHADER
        mb = ffi.new(
            "VkMemoryBarrier*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                "srcAccessMask": _write_access(used_stages),
                "dstAccessMask": vk.VK_ACCESS_HOST_READ_BIT,
            },
        )
        keep.append(mb)
        lib.vkCmdPipelineBarrier(
            cmd, used_stages, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, mb, 0, ffi.NULL, 0, ffi.NULL
        )
        self.stats.barriers += 1
        check(lib.vkEndCommandBuffer(cmd), "vkEndCommandBuffer")
        self._recorded = True
        self.stats.record_seconds = time.perf_counter() - t0

    def _barrier(self, writes: list[_Access], src_stages: int, dst_stage: int) -> None:
        """Wait for everything since the last barrier; make its writes visible.
        A pure write-after-read hazard needs only the execution dependency."""
        n = len(writes)
        bmb = ffi.new("VkBufferMemoryBarrier[]", max(n, 1))
        for i, w in enumerate(writes):
            bmb[i].sType = vk.VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER
            bmb[i].srcAccessMask = _write_access(src_stages)
            bmb[i].dstAccessMask = _ALL_ACCESS
            bmb[i].srcQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            bmb[i].dstQueueFamilyIndex = vk.VK_QUEUE_FAMILY_IGNORED
            bmb[i].buffer = w.buffer
            bmb[i].offset = w.lo
            bmb[i].size = w.hi - w.lo
        self._keep.append(bmb)
        lib.vkCmdPipelineBarrier(
            self.cmd,
            src_stages,
            dst_stage | _SHADER | _TRANSFER,
            0,
            0,
            ffi.NULL,
            n,
            bmb,
            0,
            ffi.NULL,
        )
        self.stats.barriers += 1

    def _allocate_sets(self, dispatches: list[Dispatch]) -> Any:
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
        layouts = ffi.new("VkDescriptorSetLayout[]", [d.pipeline.set_layout for d in dispatches])
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
                infos[k].buffer = b.buffer.handle
                infos[k].offset = b.offset
                infos[k].range = b.nbytes
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

    def run(self) -> None:
        """Submit the recorded commands and wait for them (the hot path)."""
        dev = self.device.device
        res = lib.vkQueueSubmit(self.device.queue, 1, self._submit, self.fence)
        if res != 0:
            raise VulkanError(f"vkQueueSubmit failed with VkResult {res}")
        res = lib.vkWaitForFences(dev, 1, self._fences, 1, 0xFFFFFFFFFFFFFFFF)
        if res != 0:
            raise VulkanError(f"vkWaitForFences failed with VkResult {res}")
        lib.vkResetFences(dev, 1, self._fences)

    def timings_ns(self) -> list[tuple[int, str, float]]:
        """(op_index, label, GPU ns) per dispatch of the last run (profiling only)."""
        if self.query_pool is None:
            return []
        n = 2 * len(self.labels)
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
            (op, label, ((data[2 * i + 1] - data[2 * i]) & mask) * period)
            for i, (op, label) in enumerate(self.labels)
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


def run_once(device: Device, ops: list[Dispatch | Copy]) -> None:
    """Record, run and free a one-shot program (constant uploads via staging)."""
    prog = CommandProgram(device)
    try:
        prog.record(ops)
        prog.run()
    finally:
        prog.destroy()


__all__ = ["Binding", "CommandProgram", "Copy", "Dispatch", "RecordStats", "run_once"]
