"""`Executable`: a compiled program loaded on a device, replayed per run.

Loading does, once: check that the device satisfies the program's target
(`target.unmet`: which capability it lacks, or nothing), build one pipeline
per kernel from the program's SPIR-V (with the process's pipeline cache),
allocate and fill each Vulkan segment's const arena (weights and kernel
tables, in the device bytes the program holds), and make one *execution
context*: per Vulkan segment its arenas (device, staging, readback) and one
command buffer recorded from the segment's commands exactly as written.

`run(feeds)` takes a free context, writes the inputs (uploads: the host
converts each array to its storage words and writes it at its offset),
submits, waits, reads the outputs (downloads), runs CPU segments on the
numpy oracle, and gives the context back. Contexts are a pool: a call that
finds none free makes another, up to `contexts`, then waits, so any number
of threads may call `run` at once and up to `contexts` runs overlap on the
device (queue submissions are serialized by the device's lock). `close()`
waits for the runs in flight, then frees everything; `run` after it is an
error.

Nothing here plans anything: no partitioning, storage, precision, epilogue,
view, memory-planning, kernel-choice or barrier logic. This module must not
import xDSL or the compiler.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vknn.errors import InvalidArgument, Unsupported, VknnError
from vknn.runtime.program import (
    Bucket,
    ConstSegment,
    CpuSegment,
    Program,
    Splat,
    VulkanSegment,
)
from vknn.runtime.target import unmet


class ClosedError(InvalidArgument):
    """run() on a closed session."""


def _from_device(raw: np.ndarray, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    from vknn.runtime.vulkan.dtypes import from_device

    return from_device(raw, dtype, shape)


def _fill(host: np.ndarray, offset: int, w: bytes | Splat) -> None:
    """Write a weight's device bytes (a splat: its element repeated) at `offset`."""
    if not isinstance(w, Splat):
        host[offset : offset + len(w)] = np.frombuffer(w, np.uint8)
        return
    part = host[offset : offset + w.size]
    n = len(w.element)
    if n in (1, 2, 4, 8):  # one typed fill, not a loop over rows of bytes
        word = np.dtype(f"u{n}")
        part.view(word)[:] = np.frombuffer(w.element, word)[0]
    else:
        part.reshape(-1, n)[:] = np.frombuffer(w.element, np.uint8)


@dataclass
class _SegmentContext:
    """One Vulkan segment's memory and command buffer in one context."""

    segment: VulkanSegment
    buffers: list[Any]
    program: Any


@dataclass
class _Context:
    segments: dict[tuple[int, int], _SegmentContext] = field(default_factory=dict)


class Executable:
    def __init__(
        self,
        program: Program,
        device: Any = None,
        pipelines: Any = None,
        *,
        profiling: bool = False,
        contexts: int = 2,
    ) -> None:
        self.program = program
        self.device = device
        self.profiling = profiling
        self.max_contexts = max(1, int(contexts))
        self._closed = False
        self._lock = threading.Lock()
        self._free: queue.SimpleQueue[_Context] = queue.SimpleQueue()
        self._all: list[_Context] = []
        self._shared: dict[tuple[int, int], list[Any]] = {}
        """(bucket, segment) -> the const arena buffers all contexts read."""
        self._buffers: list[Any] = []
        self.pipelines: list[Any] = []
        vulkan = [
            (bi, si)
            for bi, b in enumerate(program.buckets)
            for si, s in enumerate(b.segments)
            if isinstance(s, VulkanSegment)
        ]
        if vulkan:
            if device is None:
                raise Unsupported("the program has Vulkan segments and there is no Vulkan device")
            why = unmet(program.target, device.caps)
            if why is not None:
                raise Unsupported(
                    f"compiled for target '{program.compiled_for.name}', which needs {why}; "
                    f"the device '{device.caps.name}' does not have it"
                )
            self.pipelines = [
                pipelines.get(k.spirv, len(k.writes), k.push_size, k.spec, k.local_size)
                for k in program.kernels
            ]
            for bi, si in vulkan:
                self._shared[bi, si] = self._const_arenas(program.buckets[bi].segments[si])
        self._release(self._new_context())

    # -- memory ----------------------------------------------------------------

    def _buffer(self, size: int, memory: str) -> Any:
        from vknn.runtime.vulkan.memory import STORAGE, TRANSFER_DST, TRANSFER_SRC, Buffer

        usage = STORAGE | TRANSFER_SRC | TRANSFER_DST
        if memory == "device":
            host = self.program.target.memory != "staging"
            b = Buffer(self.device, size, usage, host)
        elif memory == "readback":
            b = Buffer(self.device, size, TRANSFER_DST, True, readback=True)
        else:  # staging
            b = Buffer(self.device, size, TRANSFER_SRC | TRANSFER_DST, True)
        self._buffers.append(b)
        return b

    def _const_arenas(self, seg: VulkanSegment) -> list[Any]:
        """Const arenas filled with their weights (others are per context)."""
        from vknn.runtime.vulkan.commands import copy_once
        from vknn.runtime.vulkan.memory import STORAGE, TRANSFER_DST, TRANSFER_SRC, Buffer

        out: list[Any] = []
        direct = self.device.caps.has_device_local_host_visible
        for ai, (memory, size) in enumerate(seg.arenas):
            if memory != "const":
                out.append(None)
                continue
            buf = Buffer(self.device, size, STORAGE | TRANSFER_DST | TRANSFER_SRC, direct)
            self._buffers.append(buf)
            src = buf if direct else Buffer(self.device, size, TRANSFER_SRC, True)
            for arena, offset, wi in seg.weights:
                if arena == ai:
                    _fill(src.host, offset, self.program.weights[wi])
            if not direct:
                copy_once(self.device, src, buf, size)
                src.destroy()
            out.append(buf)
        return out

    def _new_context(self) -> _Context:
        from vknn.runtime.vulkan.commands import CommandProgram

        ctx = _Context()
        for (bi, si), shared in self._shared.items():
            seg = self.program.buckets[bi].segments[si]
            assert isinstance(seg, VulkanSegment)
            buffers = [
                shared[ai] if memory == "const" else self._buffer(size, memory)
                for ai, (memory, size) in enumerate(seg.arenas)
            ]
            prog = CommandProgram(self.device, profiling=self.profiling)
            prog.record(seg.commands, buffers, self.pipelines)
            ctx.segments[bi, si] = _SegmentContext(seg, buffers, prog)
        self._all.append(ctx)
        return ctx

    # -- contexts ----------------------------------------------------------------

    def _acquire(self) -> _Context:
        if self._closed:
            raise ClosedError("the session is closed")
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._closed:
                raise ClosedError("the session is closed")
            if len(self._all) < self.max_contexts:
                return self._new_context()
        ctx = self._free.get()
        if self._closed:
            self._free.put(ctx)
            raise ClosedError("the session is closed")
        return ctx

    def _release(self, ctx: _Context) -> None:
        self._free.put(ctx)

    # -- running -----------------------------------------------------------------

    def run(
        self, bucket: int, feeds: dict[str, np.ndarray], profile: list[Any] | None = None
    ) -> dict[str, np.ndarray]:
        """Outputs by name for `feeds` (validated by the caller) on bucket
        `bucket`; with `profile` a list, (segment, Recorded, ns) rows of this
        run are appended to it."""
        ctx = self._acquire()
        try:
            return self._run(ctx, bucket, feeds, profile)
        finally:
            self._release(ctx)

    def _run(
        self, ctx: _Context, bi: int, feeds: dict[str, np.ndarray], profile: list[Any] | None
    ) -> dict[str, np.ndarray]:
        b: Bucket = self.program.buckets[bi]
        values: list[np.ndarray | None] = [None] * b.values
        for io in b.inputs:
            values[io.value] = feeds[io.name]
        for si, seg in enumerate(b.segments):
            if isinstance(seg, VulkanSegment):
                self._run_vulkan(ctx.segments[bi, si], values, si, profile, b)
            elif isinstance(seg, CpuSegment):
                self._run_cpu(seg, values)
            else:
                assert isinstance(seg, ConstSegment)
                values[seg.value] = self.program.arrays[seg.array]
        out: dict[str, np.ndarray] = {}
        for io in b.outputs:
            v = values[io.value]
            assert v is not None
            out[io.name] = np.array(v, dtype=io.dtype, copy=True)
        return out

    def _run_vulkan(
        self,
        sc: _SegmentContext,
        values: list[Any],
        si: int,
        profile: list[Any] | None,
        bucket: Bucket,
    ) -> None:
        from vknn.runtime.vulkan.dtypes import to_device

        seg = sc.segment
        for u in seg.uploads:
            x = np.asarray(values[seg.inputs[u.input]])
            if tuple(x.shape) != u.shape:
                raise InvalidArgument(
                    f"segment input of shape {list(x.shape)}, expected {list(u.shape)}"
                )
            # An error names the graph input (else: a value a CPU segment computed).
            ios = (f"input '{io.name}'" for io in bucket.inputs if io.value == seg.inputs[u.input])
            try:
                data = to_device(x, u.dtype, np.dtype(u.storage), next(ios, "input"))
            except ValueError as e:
                raise InvalidArgument(str(e)) from None
            sc.buffers[u.arena].write(u.offset, data)
        sc.program.run()
        for v, d in zip(seg.outputs, seg.downloads, strict=True):
            st = np.dtype(d.storage)
            n = int(np.prod(d.shape)) if d.shape else 1
            raw = sc.buffers[d.arena].read(d.offset, n * st.itemsize).view(st)
            values[v] = _from_device(raw, d.dtype, d.shape)
        if profile is not None:
            for rec, ns in sc.program.timings_ns():
                profile.append((si, rec, ns))

    def _run_cpu(self, seg: CpuSegment, values: list[Any]) -> None:
        from vknn.runtime.cpu.executor import run_step

        local: list[Any] = [None] * seg.slots
        for v, s in zip(seg.inputs, seg.arg_slots, strict=True):
            local[s] = values[v]
        for s, a in seg.constants:
            local[s] = self.program.arrays[a]
        for step in seg.steps:
            run_step(step, local)
        for v, s in zip(seg.outputs, seg.out_slots, strict=True):
            if local[s] is None:
                raise VknnError(f"CPU segment left output slot {s} uncomputed")
            values[v] = local[s]

    # -- teardown ------------------------------------------------------------------

    def close(self) -> None:
        """Wait for runs in flight, then free every device object."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            count = len(self._all)
        held = [self._free.get() for _ in range(count)]
        for ctx in held:
            for sc in ctx.segments.values():
                sc.program.destroy()
        for b in self._buffers:
            b.destroy()
        self._buffers.clear()
        for ctx in held:  # wake callers waiting for a context: they see the close
            self._free.put(ctx)
