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

Device-resident tensors (`DeviceTensor`, the io-binding path): a feed that
is one, with the storage and shape of the upload it meets, is copied on the
device into its arena (one submit before the segment's); an output asked
for on the device is copied out of its arena into one (one submit after),
so neither crosses the host. Any other meeting reads it back first.

With `trace` a list, each run appends (kind, segment, t0_ns, t1_ns, detail)
host-timed rows: "upload", "gpu" (detail: the dispatch timings, with
profiling), "readback", "cpu" (detail: the steps' ops).

Nothing here plans anything: no partitioning, storage, precision, epilogue,
view, memory-planning, kernel-choice or barrier logic. This module must not
import xDSL or the compiler.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vknn.errors import InvalidArgument, Unsupported, VknnError
from vknn.runtime.program import (
    BarrierCmd,
    Bucket,
    ConstSegment,
    CopyCmd,
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


@dataclass(eq=False)
class DeviceTensor:
    """A tensor in a device buffer of its own, in storage words, row-major."""

    device: Any
    buffer: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    """The model dtype (what `numpy()` returns)."""
    storage: np.dtype

    @classmethod
    def empty(cls, device: Any, shape: Any, dtype: Any, storage: Any = None) -> DeviceTensor:
        from vknn.runtime.vulkan.dtypes import storage_dtype
        from vknn.runtime.vulkan.memory import STORAGE, TRANSFER_DST, TRANSFER_SRC, Buffer

        dtype = np.dtype(dtype)
        st = np.dtype(storage if storage is not None else storage_dtype(dtype.name, np.float32))
        n = int(np.prod(shape, dtype=np.int64)) * st.itemsize
        usage = STORAGE | TRANSFER_SRC | TRANSFER_DST
        buf = Buffer(device, n, usage, device.caps.has_device_local_host_visible)
        return cls(device, buf, tuple(int(d) for d in shape), dtype, st)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.storage.itemsize

    def write(self, x: np.ndarray, what: str = "tensor") -> None:
        from vknn.runtime.vulkan.dtypes import to_device

        if tuple(x.shape) != self.shape:
            raise InvalidArgument(f"{what}: shape {list(x.shape)}, expected {list(self.shape)}")
        try:
            data = to_device(np.asarray(x), self.dtype.name, self.storage, what)
        except ValueError as e:
            raise InvalidArgument(str(e)) from None
        if self.buffer.host is None:
            self._staging(data)
        else:
            self.buffer.write(0, data)

    def numpy(self) -> np.ndarray:
        mapped = self.buffer.host is not None
        raw = self.buffer.read(0, self.nbytes) if mapped else self._staging()
        return _from_device(raw.view(self.storage), self.dtype.name, self.shape)

    def _staging(self, data: np.ndarray | None = None) -> Any:
        """Write `data` (else read the bytes) through a staging buffer."""
        from vknn.runtime.vulkan.commands import copy_once
        from vknn.runtime.vulkan.memory import TRANSFER_DST, TRANSFER_SRC, Buffer

        st = Buffer(self.device, self.nbytes, TRANSFER_SRC | TRANSFER_DST, True)
        try:
            if data is not None:
                st.write(0, data)
                return copy_once(self.device, st, self.buffer, self.nbytes)
            copy_once(self.device, self.buffer, st, self.nbytes)
            return st.read(0, self.nbytes)
        finally:
            st.destroy()

    def __del__(self) -> None:
        buf = getattr(self, "buffer", None)
        if buf is not None and buf.handle is not None:
            buf.destroy()
            try:  # the device no longer needs to close it
                self.device._closers.remove(buf.destroy)
            except ValueError:
                pass


def _host(v: Any) -> Any:
    return v.numpy() if isinstance(v, DeviceTensor) else v


def _device_copies(sc: _SegmentContext, pairs: list[tuple[Any, int, Any, int, int]]) -> None:
    """Buffer-to-buffer copies (src, offset, dst, offset, bytes) in one submit,
    after the compute/transfer writes of earlier submits to the sources and
    before any later reads or writes of the destinations. The command buffer
    is kept per set of buffers (a batch loop binds the same tensors every
    run) while those buffers live; at most 8 per segment context."""
    from vknn.runtime.program import STAGE_COMPUTE, STAGE_HOST, STAGE_TRANSFER, Range
    from vknn.runtime.vulkan.commands import CommandProgram

    key = tuple((id(a), ao, id(b), bo, n) for a, ao, b, bo, n in pairs)
    hit = sc.copies.pop(key, None)
    if hit is not None and all(b.handle is not None for b in hit[1]):
        sc.copies[key] = hit  # most recent last
        hit[0].run()
        return
    if hit is not None:  # a tensor of it was freed
        hit[0].destroy()
    bufs: list[Any] = []
    cmds: list[Any] = []
    srcs, dsts = [], []
    for src, so, dst, do, n in pairs:
        bufs += [src, dst]
        s, d = Range(len(bufs) - 2, so, n), Range(len(bufs) - 1, do, n)
        srcs.append(s)
        dsts.append(d)
        cmds.append(CopyCmd(s, d))
    every = STAGE_COMPUTE | STAGE_TRANSFER
    cmds = [BarrierCmd(every, STAGE_TRANSFER, tuple(srcs + dsts)), *cmds,
            BarrierCmd(STAGE_TRANSFER, every | STAGE_HOST, tuple(dsts))]  # fmt: skip
    prog = CommandProgram(sc.program.device)
    prog.record(cmds, bufs, [])
    if len(sc.copies) >= 8:
        sc.copies.pop(next(iter(sc.copies)))[0].destroy()
    sc.copies[key] = (prog, bufs)  # the Buffer objects held: their ids stay unique
    prog.run()


@dataclass
class _SegmentContext:
    """One Vulkan segment's memory and command buffer in one context."""

    segment: VulkanSegment
    buffers: list[Any]
    program: Any
    copies: dict[Any, Any] = field(default_factory=dict)
    """Device-copy command buffers by the buffers they copy (`_device_copies`)."""


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
        elif memory == "readback":  # a copy source too: outputs kept on the device
            b = Buffer(self.device, size, TRANSFER_DST | TRANSFER_SRC, True, readback=True)
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
        self,
        bucket: int,
        feeds: dict[str, Any],
        profile: list[Any] | None = None,
        device_outputs: dict[str, DeviceTensor | None] | None = None,
        trace: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Outputs by name for `feeds` (validated by the caller; arrays or
        DeviceTensors) on bucket `bucket`; with `profile` a list, (segment,
        Recorded, ns) rows of this run are appended to it. `device_outputs`:
        output name -> the DeviceTensor to write it to (None: a new one)."""
        ctx = self._acquire()
        try:
            return self._run(ctx, bucket, feeds, profile, device_outputs or {}, trace)
        finally:
            self._release(ctx)

    def _run(
        self,
        ctx: _Context,
        bi: int,
        feeds: dict[str, Any],
        profile: list[Any] | None,
        dev_out: dict[str, DeviceTensor | None],
        trace: list[Any] | None,
    ) -> dict[str, Any]:
        b: Bucket = self.program.buckets[bi]
        device = self.device  # where new device outputs go: else where the bound tensors are
        for t in (*feeds.values(), *dev_out.values()):
            if device is None and isinstance(t, DeviceTensor):
                device = t.device
        if dev_out and device is None:
            from vknn.runtime.vulkan.context import shared_device

            device = shared_device()[0]
            if device is None:
                raise InvalidArgument("outputs on the device need a Vulkan device")
        values: list[Any] = [None] * b.values
        for io in b.inputs:
            values[io.value] = feeds[io.name]
        want: dict[int, DeviceTensor | None] = {}
        for io in b.outputs:
            if io.name in dev_out:
                t = want[io.value] = dev_out[io.name]
                if t is not None and t.shape != io.shape:
                    raise InvalidArgument(
                        f"output '{io.name}' is bound to a tensor of shape {list(t.shape)}; "
                        f"the output has shape {list(io.shape)}"
                    )
        for si, seg in enumerate(b.segments):
            if isinstance(seg, VulkanSegment):
                self._run_vulkan(ctx.segments[bi, si], values, si, profile, b, want, trace)
            elif isinstance(seg, CpuSegment):
                t0 = time.perf_counter_ns()
                self._run_cpu(seg, values)
                if trace is not None:
                    ops = [(s.op, s.node) for s in seg.steps]
                    trace.append(("cpu", si, t0, time.perf_counter_ns(), ops))
            else:
                assert isinstance(seg, ConstSegment)
                values[seg.value] = self.program.arrays[seg.array]
        out: dict[str, Any] = {}
        for io in b.outputs:
            v = values[io.value]
            assert v is not None
            if io.name not in dev_out:
                out[io.name] = np.array(_host(v), dtype=io.dtype, copy=True)
            elif (
                isinstance(v, DeviceTensor)
                and want[io.value] in (None, v)
                and all(v is not f for f in feeds.values())
            ):
                out[io.name] = v  # copied there on the device
            else:  # computed on the host (or in another storage): written through
                t = want[io.value] or DeviceTensor.empty(device, io.shape, io.dtype)
                t.write(np.asarray(_host(v), dtype=io.dtype), f"output '{io.name}'")
                out[io.name] = t
        return out

    def _run_vulkan(
        self,
        sc: _SegmentContext,
        values: list[Any],
        si: int,
        profile: list[Any] | None,
        bucket: Bucket,
        want: dict[int, DeviceTensor | None],
        trace: list[Any] | None,
    ) -> None:
        from vknn.runtime.vulkan.dtypes import to_device

        seg = sc.segment
        t0 = time.perf_counter_ns()
        copies: list[tuple[Any, int, Any, int, int]] = []
        for u in seg.uploads:
            x = values[seg.inputs[u.input]]
            if (
                isinstance(x, DeviceTensor)
                and x.device is self.device
                and (x.shape, x.storage) == (u.shape, np.dtype(u.storage))
            ):
                copies.append((x.buffer, 0, sc.buffers[u.arena], u.offset, u.nbytes))
                continue
            x = np.asarray(_host(x))
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
        if copies:
            _device_copies(sc, copies)
        t1 = time.perf_counter_ns()
        sc.program.run()
        t2 = time.perf_counter_ns()
        copies = []
        for v, d in zip(seg.outputs, seg.downloads, strict=True):
            st = np.dtype(d.storage)
            if v in want:
                t = want[v]
                if t is None:
                    t = DeviceTensor.empty(self.device, d.shape, d.dtype, st)
                if t.storage == st:
                    copies.append((sc.buffers[d.arena], d.offset, t.buffer, 0, d.nbytes))
                    values[v] = t
                    continue
            n = int(np.prod(d.shape)) if d.shape else 1
            raw = sc.buffers[d.arena].read(d.offset, n * st.itemsize).view(st)
            values[v] = _from_device(raw, d.dtype, d.shape)
        if copies:
            _device_copies(sc, copies)
        if profile is not None or trace is not None:
            timings = sc.program.timings_ns()
            for rec, ns in timings if profile is not None else ():
                profile.append((si, rec, ns))
            if trace is not None:
                t3 = time.perf_counter_ns()
                up, down = sum(u.nbytes for u in seg.uploads), sum(d.nbytes for d in seg.downloads)
                trace += [("upload", si, t0, t1, up), ("gpu", si, t1, t2, timings),
                          ("readback", si, t2, t3, down)]  # fmt: skip

    def _run_cpu(self, seg: CpuSegment, values: list[Any]) -> None:
        from vknn.oracle.executor import run_step

        local: list[Any] = [None] * seg.slots
        for v, s in zip(seg.inputs, seg.arg_slots, strict=True):
            local[s] = _host(values[v])
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
                for prog, _ in sc.copies.values():
                    prog.destroy()
        for b in self._buffers:
            b.destroy()
        self._buffers.clear()
        for ctx in held:  # wake callers waiting for a context: they see the close
            self._free.put(ctx)
