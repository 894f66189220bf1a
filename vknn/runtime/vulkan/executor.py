"""`VulkanExecutor`: runs a list of plan steps (a Vulkan segment) on one device.

Built once per segment: gate every step, plan the arena (inputs, outputs and
intermediates share one buffer at planner offsets), upload constants to their
own buffer, build pipelines, and record one command buffer. Each `run(feeds)`
then writes the inputs, submits that command buffer, waits, and reads the
outputs: no re-recording, no per-op host round trips.

Boundary data is host numpy in the model's dtype. Storage is dtype-aware
(`vulkan/dtypes.py`): float tensors are fp32, or fp16 with `precision="low"`
(fp32 arithmetic in the shaders; the host clamps to +-65504 so finite values
never become inf); integer and bool tensors are int32 words (int64 narrowed:
values must fit, checked at the boundary). On devices without device-local
+ host-visible memory (or with `staging=True`) the arena is device-local and
recorded copies move inputs and outputs through a host-visible staging
buffer.

Aliases: a step whose kernel spec `aliases` (reshape, convert_layout; every
tensor is row-major, whatever its `vx.layout`) gets its input's memory for
its output and records nothing. A batch-1 channel concat (every dim before
the axis 1) has its inputs *placed*: their producers write straight into
the concat's output, which then copies nothing. Both are one union-find of
slots onto (root slot, byte offset): the planner sees only roots, each live
from its first member's first use to its last member's last use.

This module must not import xDSL or the CPU backend, and must not gate by
anything but `kernels.gate`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vknn.errors import InvalidArgument, Unsupported
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.caps import DeviceCaps
from vknn.runtime.vulkan.commands import CommandProgram, Copy, Dispatch, run_once
from vknn.runtime.vulkan.device import Device
from vknn.runtime.vulkan.dtypes import from_device, storage_dtype, to_device
from vknn.runtime.vulkan.kernels import KERNELS, RecordContext, TensorArg, gate
from vknn.runtime.vulkan.kernels.data_movement import concat_in_place
from vknn.runtime.vulkan.memory import (
    STORAGE,
    TRANSFER_DST,
    TRANSFER_SRC,
    Buffer,
    TensorRef,
    align_up,
    plan_arena,
)
from vknn.runtime.vulkan.pipeline import Pipelines

FP16_MAX = 65504.0


@dataclass
class ExecutorStats:
    arena_bytes: int
    naive_bytes: int
    """The sum of all arena tensors' sizes (what no planner would need)."""
    pipelines: int
    dispatches: int
    barriers: int
    record_seconds: float
    aliased: int = 0
    """Slots that share another slot's memory (reshapes, placed concat inputs)."""


class VulkanExecutor:
    """Runs `steps` (all accepted by `kernels.gate`) on `device`.

    - `input_specs`: slot -> spec of every slot the steps read that no step
      produces and that is not in `constants`.
    - `outputs`: the slots `run` returns.
    - `constants`: slot -> array, uploaded once.
    - `precision`: "high" (fp32 storage) or "low"/"normal" (fp16 storage when
      the device has 16-bit storage; fp32 otherwise).
    - `caps`: overrides the device's caps for recording (tests shrink
      maxComputeWorkGroupCount to exercise split dispatches).
    """

    def __init__(
        self,
        device: Device,
        steps: Sequence[Step],
        input_specs: Mapping[int, TensorSpec],
        outputs: Sequence[int],
        constants: Mapping[int, np.ndarray] | None = None,
        precision: str = "high",
        profiling: bool = False,
        staging: bool | None = None,
        caps: DeviceCaps | None = None,
        pipelines: Pipelines | None = None,
    ) -> None:
        self.device = device
        self.caps = caps or device.caps
        self.steps = list(steps)
        self.outputs = list(outputs)
        constants = dict(constants or {})
        self.input_specs = dict(input_specs)
        self.fp16 = precision in ("low", "normal") and self.caps.has_fp16_storage
        self.storage = np.dtype(np.float16 if self.fp16 else np.float32)
        self.staging = not self.caps.has_device_local_host_visible if staging is None else staging
        self.pipelines = pipelines or Pipelines(device)
        self._buffers: list[Buffer] = []

        specs: dict[int, TensorSpec] = dict(self.input_specs)
        for slot, arr in constants.items():
            specs[slot] = TensorSpec(f"const{slot}", tuple(arr.shape), arr.dtype.name)
        refusals = []
        for step in self.steps:
            ins = [specs.get(s) for s in step.inputs if s != NO_VALUE]
            if any(s is None for s in ins):
                missing = [s for s in step.inputs if s not in specs]
                raise InvalidArgument(
                    f"step '{step.node}' reads slot(s) {missing} that nothing provides"
                )
            why = gate(step, self.caps, ins)  # type: ignore[arg-type]
            if why is not None:
                refusals.append(f"'{step.node}': {why}")
            for slot, spec in zip(step.outputs, step.out_specs, strict=True):
                specs[slot] = spec
        if refusals:
            raise Unsupported("the Vulkan backend refuses: " + "; ".join(refusals))
        for slot in self.outputs:
            if slot not in specs:
                raise InvalidArgument(f"output slot {slot} is produced by no step")
        self.specs = specs

        # Aliases: slot -> (the slot whose memory it is, byte offset in it).
        self._parent: dict[int, tuple[int, int]] = {}
        self._place_aliases(constants)

        # Live ranges in step order; inputs are live from the start, outputs
        # to the end. A root lives as long as any slot placed on it.
        end = len(self.steps)
        first: dict[int, int] = {s: 0 for s in self.input_specs}
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.inputs:
                if s != NO_VALUE and s not in constants:
                    last[s] = i
            for s in step.outputs:
                first.setdefault(s, i)
        for s in self.outputs:
            last[s] = end
        rfirst: dict[int, int] = {}
        rlast: dict[int, int] = {}
        for s, f in first.items():
            r, _ = self._root(s)
            if r in constants:
                continue
            rfirst[r] = min(rfirst.get(r, f), f)
            rlast[r] = max(rlast.get(r, f), last.get(s, f))
        align = max(16, self.caps.min_storage_buffer_offset_alignment)
        tensors = [(r, self._nbytes(r), f, rlast[r]) for r, f in rfirst.items()]
        offsets, arena_size = plan_arena(tensors, align)
        self.arena = self._buffer(
            arena_size, STORAGE | TRANSFER_SRC | TRANSFER_DST, not self.staging
        )
        refs: dict[int, TensorRef] = {
            s: TensorRef(self.arena, offsets[s], size) for s, size, _, _ in tensors
        }

        # Constants: their own buffer, written once.
        if constants:
            coff, total = {}, 0
            for slot in constants:
                coff[slot] = total
                total = align_up(total + self._nbytes(slot), align)
            cbuf = self._buffer(total, STORAGE | TRANSFER_SRC | TRANSFER_DST, not self.staging)
            src = cbuf if not self.staging else Buffer(device, total, TRANSFER_SRC, True)
            for slot, arr in constants.items():
                spec = specs[slot]
                try:
                    data = to_device(arr, spec.dtype, self.storage, f"constant {spec.name}")
                except ValueError as e:
                    raise Unsupported(str(e)) from None
                src.write(coff[slot], data)
                refs[slot] = TensorRef(cbuf, coff[slot], self._nbytes(slot))
            if self.staging:
                run_once(device, [Copy(src, 0, cbuf, 0, total)])
                src.destroy()
        for s in self._parent:
            r, off = self._root(s)
            refs[s] = TensorRef(refs[r].buffer, refs[r].offset + off, self._nbytes(s))
        self.refs = refs

        # Staging: one host-visible buffer holding every input and output.
        ops: list[Dispatch | Copy] = []
        self._host: dict[int, tuple[Buffer, int]] = {}
        if self.staging:
            soff, total = {}, 0
            for s in [*self.input_specs, *self.outputs]:
                if s not in soff:
                    soff[s] = total
                    total = align_up(total + refs[s].nbytes, align)
            self.stage_buf = self._buffer(total, TRANSFER_SRC | TRANSFER_DST, True)
            for s in self.input_specs:
                ops.append(
                    Copy(self.stage_buf, soff[s], self.arena, refs[s].offset, refs[s].nbytes)
                )
            self._host = {s: (self.stage_buf, soff[s]) for s in soff}
        else:
            self._host = {
                s: (refs[s].buffer, refs[s].offset) for s in [*self.input_specs, *self.outputs]
            }

        variant = "fp16" if self.fp16 else "fp32"
        for i, step in enumerate(self.steps):
            ctx = RecordContext(self.caps, self.pipelines, variant, op_index=i, upload=self._upload)
            ins = [self._arg(s) for s in step.inputs if s != NO_VALUE]
            outs = [self._arg(s) for s in step.outputs]
            ops += KERNELS[step.op].record(step, ctx, ins, outs)
        if self.staging:
            for s in self.outputs:
                buf, off = self._host[s]
                ops.append(Copy(refs[s].buffer, refs[s].offset, buf, off, refs[s].nbytes))

        self.program = CommandProgram(device, profiling=profiling)
        self.program.record(ops)
        self.stats = ExecutorStats(
            arena_bytes=arena_size,
            naive_bytes=sum(align_up(self._nbytes(s), align) for s in first if s not in constants),
            pipelines=len(self.pipelines),
            dispatches=self.program.stats.dispatches,
            barriers=self.program.stats.barriers,
            record_seconds=self.program.stats.record_seconds,
            aliased=len(self._parent),
        )

    # -- storage -----------------------------------------------------------

    def _storage(self, slot: int) -> np.dtype:
        return storage_dtype(self.specs[slot].dtype, self.storage)

    def _nbytes(self, slot: int) -> int:
        spec = self.specs[slot]
        return self._storage(slot).itemsize * max(1, int(np.prod(spec.shape)))

    def _root(self, slot: int) -> tuple[int, int]:
        off = 0
        while slot in self._parent:
            slot, o = self._parent[slot]
            off += o
        return slot, off

    def _place_aliases(self, constants: Mapping[int, np.ndarray]) -> None:
        """Fill `_parent`: reshape-like outputs onto their input, then the
        inputs of batch-1 concats into their slice of the output."""
        producer: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.outputs:
                producer[s] = i
        for step in self.steps:
            if KERNELS[step.op].aliases:
                self._parent[step.outputs[0]] = (step.inputs[0], 0)
                continue
            if step.op != "vx.concat":
                continue
            ins = [s for s in step.inputs if s != NO_VALUE]
            offs = concat_in_place(step, [self.specs[s].shape for s in ins])
            if offs is None:
                continue
            out = step.outputs[0]
            esize = self._storage(out).itemsize
            align = max(16, self.caps.min_storage_buffer_offset_alignment)
            seen: set[int] = set()
            for s, off in zip(ins, offs, strict=True):
                # Only a value this segment computes, still in memory of its
                # own (not a reshape of something, not placed elsewhere), and
                # at an offset its own bindings may start at.
                if (
                    s in seen
                    or s in constants
                    or s in self.input_specs
                    or s not in producer
                    or s in self._parent
                    or self._root(out)[0] == s
                    or (off * esize) % align
                ):
                    continue
                seen.add(s)
                self._parent[s] = (out, off * esize)

    def _upload(self, arr: np.ndarray) -> TensorRef:
        """A device copy of `arr` (raw words a kernel computed at record time)
        that lives as long as the executor."""
        data = np.ascontiguousarray(arr)
        size = max(4, data.nbytes)
        buf = self._buffer(size, STORAGE | TRANSFER_DST, not self.staging)
        if self.staging:
            src = Buffer(self.device, size, TRANSFER_SRC, True)
            src.write(0, data)
            run_once(self.device, [Copy(src, 0, buf, 0, size)])
            src.destroy()
        else:
            buf.write(0, data)
        return TensorRef(buf, 0, size)

    def _buffer(self, size: int, usage: int, host_visible: bool) -> Buffer:
        b = Buffer(self.device, size, usage, host_visible)
        self._buffers.append(b)
        return b

    def _arg(self, slot: int) -> TensorArg:
        spec = self.specs[slot]
        return TensorArg(self.refs[slot], tuple(spec.shape), spec.dtype)

    def run(self, feeds: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Outputs (slot -> array of the spec's dtype) for inputs `feeds` (slot -> array)."""
        for slot, spec in self.input_specs.items():
            x = feeds.get(slot)
            if x is None:
                raise InvalidArgument(f"missing input for slot {slot} ({spec.name})")
            if tuple(x.shape) != tuple(spec.shape):
                raise InvalidArgument(
                    f"input {spec.name}: shape {tuple(x.shape)}, "
                    f"the plan expects {tuple(spec.shape)}"
                )
            buf, off = self._host[slot]
            try:
                data = to_device(np.asarray(x), spec.dtype, self.storage, f"input {spec.name}")
            except ValueError as e:
                raise InvalidArgument(str(e)) from None
            buf.write(off, data)
        self.program.run()
        out = {}
        for slot in self.outputs:
            spec = self.specs[slot]
            buf, off = self._host[slot]
            n = int(np.prod(spec.shape))
            st = self._storage(slot)
            raw = buf.read(off, n * st.itemsize).view(st)
            out[slot] = from_device(raw, spec.dtype, tuple(spec.shape))
        return out

    def profile(self) -> list[tuple[str, float]]:
        """(label, GPU milliseconds) per step of the last run (profiling=True)."""
        per: dict[int, float] = defaultdict(float)
        labels: dict[int, str] = {}
        for op, label, ns in self.program.timings_ns():
            per[op] += ns
            labels[op] = label
        return [(labels[i], per[i] / 1e6) for i in sorted(per)]

    def close(self) -> None:
        self.program.destroy()
        for b in self._buffers:
            b.destroy()
        self._buffers.clear()

    def __enter__(self) -> VulkanExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
