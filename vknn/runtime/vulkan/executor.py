"""`VulkanExecutor`: runs a list of plan steps (a Vulkan segment) on one device.

Built once per segment: gate every step, plan the arena (inputs, outputs and
intermediates share one buffer at planner offsets), upload constants to their
own buffer, build pipelines, and record one command buffer. Each `run(feeds)`
then writes the inputs, submits that command buffer, waits, and reads the
outputs: no re-recording, no per-op host round trips.

Boundary data is host numpy in the model's dtype. With `precision="low"`
tensors are fp16 in device memory (fp32 arithmetic in the shaders); the host
converts at the boundary, clamping to +-65504 so finite values never become
inf. On devices without device-local + host-visible memory (or with
`staging=True`) the arena is device-local and recorded copies move inputs
and outputs through a host-visible staging buffer.

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
from vknn.runtime.vulkan.kernels import KERNELS, RecordContext, TensorArg, gate
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


def _to_storage(x: np.ndarray, storage: np.dtype) -> np.ndarray:
    if storage == np.float16 and x.dtype != np.float16:
        # numpy rounds to nearest even; the clip keeps finite values finite.
        return np.clip(x, -FP16_MAX, FP16_MAX).astype(np.float16)
    return np.ascontiguousarray(x, dtype=storage)


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

        # Live ranges in step order; inputs are live from the start, outputs to the end.
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
        esize = self.storage.itemsize
        align = max(16, self.caps.min_storage_buffer_offset_alignment)
        tensors = [
            (s, esize * max(1, int(np.prod(specs[s].shape))), f, last.get(s, f))
            for s, f in first.items()
        ]
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
            for slot, arr in constants.items():
                coff[slot] = total
                total = align_up(total + esize * max(1, arr.size), align)
            cbuf = self._buffer(total, STORAGE | TRANSFER_DST, not self.staging)
            src = cbuf if not self.staging else Buffer(device, total, TRANSFER_SRC, True)
            for slot, arr in constants.items():
                src.write(coff[slot], _to_storage(arr, self.storage))
                refs[slot] = TensorRef(cbuf, coff[slot], esize * max(1, arr.size))
            if self.staging:
                run_once(device, [Copy(src, 0, cbuf, 0, total)])
                src.destroy()
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
                s: (self.arena, refs[s].offset) for s in [*self.input_specs, *self.outputs]
            }

        variant = "fp16" if self.fp16 else "fp32"
        for i, step in enumerate(self.steps):
            ctx = RecordContext(self.caps, self.pipelines, variant, op_index=i)
            ins = [self._arg(s) for s in step.inputs if s != NO_VALUE]
            outs = [self._arg(s) for s in step.outputs]
            ops += KERNELS[step.op].record(step, ctx, ins, outs)
        if self.staging:
            for s in self.outputs:
                buf, off = self._host[s]
                ops.append(Copy(self.arena, refs[s].offset, buf, off, refs[s].nbytes))

        self.program = CommandProgram(device, profiling=profiling)
        self.program.record(ops)
        self.stats = ExecutorStats(
            arena_bytes=arena_size,
            naive_bytes=sum(align_up(t[1], align) for t in tensors),
            pipelines=len(self.pipelines),
            dispatches=self.program.stats.dispatches,
            barriers=self.program.stats.barriers,
            record_seconds=self.program.stats.record_seconds,
        )

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
            buf.write(off, _to_storage(x, self.storage))
        self.program.run()
        out = {}
        for slot in self.outputs:
            spec = self.specs[slot]
            buf, off = self._host[slot]
            n = int(np.prod(spec.shape))
            raw = buf.read(off, n * self.storage.itemsize).view(self.storage)
            out[slot] = raw.astype(spec.dtype, copy=False).reshape(spec.shape)
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
