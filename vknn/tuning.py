"""On-device autotuning of the tunable kernels (`Config.autotune`).

A kernel spec with a `tuning` function (conv, matmul, gemm) describes, per
step, a `TuningSpace`: a key (op, shader family, variant, the geometry that
matters, bias/epilogue presence: never the node name, so equal layers share
one measurement and a table carries over between models), the heuristic's
config, and its candidates: `fast` = the heuristic's config and a few
neighbours, `thorough` = every config valid on the device. Both are pure
functions of (step geometry, caps); the heuristic's config is always first.

`tune_module` (the session facade calls it on a module after
`assign-storage`, before `convert-vx-to-vkd`) measures each distinct key
missing from the table on the session's device: for each candidate, the
step's dispatches are recorded into a standalone program over scratch
buffers of the step's tensor sizes (random data) and submitted `WARMUP`
times, then `REPS` timed times; a candidate's time is the median span from
its first dispatch's start to its last's end (timestamp queries, so a
split-K's barrier and sum count), or host wall time on devices without
timestamps. The fastest wins, but the heuristic's config is kept unless a
candidate beats it by more than `MARGIN` (noise must not flip configs); the
choice is deterministic given the timings. The winner goes into the table
(a plain {key: config} dict, msgpack-able), and every op of that key gets
it as its `vkd.config` attribute, which `convert-vx-to-vkd` records with
(so the choice is in the printed module); keys already in the table with a
config valid here are not measured again.

Progress goes to stderr: a bar while it runs when stderr is a terminal,
else one summary line at the end.

It sits above both halves (it measures on a device and feeds the
compiler), like the session facade.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from vknn.errors import InvalidArgument
from vknn.kernels import KERNELS, RecordContext, TensorArg, TuneConfig, TuningSpace
from vknn.kernels.records import Dispatch, TensorRef
from vknn.kernels.shaders import ShaderError, kernel_spirv
from vknn.kernels.spirv import fastmath_float_types
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.program import STAGE_COMPUTE, BarrierCmd, DispatchCmd, Range
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.commands import CommandProgram, copy_once
from vknn.runtime.vulkan.device import Device, VulkanError, check, ffi, lib, vk
from vknn.runtime.vulkan.dtypes import storage_dtype
from vknn.runtime.vulkan.memory import STORAGE, TRANSFER_DST, TRANSFER_SRC, Buffer
from vknn.runtime.vulkan.pipeline import Pipelines

MODES = ("off", "fast", "thorough")
REPS = {"fast": 3, "thorough": 10}
"""Timed submissions per candidate."""
WARMUP = {"fast": 1, "thorough": 2}
MARGIN = 0.03
"""A candidate replaces the heuristic's config only when more than 3% faster."""

Table = MutableMapping[str, dict[str, Any]]


@dataclass
class KernelResult:
    """One measured key: its candidates' median times (ns) and the winner."""

    key: str
    label: str
    candidates: list[TuneConfig]
    times_ns: list[float]
    best: TuneConfig

    @property
    def changed(self) -> bool:
        return self.best != self.candidates[0]

    @property
    def speedup(self) -> float:
        """The heuristic's time over the winner's."""
        best = self.times_ns[self.candidates.index(self.best)]
        return self.times_ns[0] / best if best > 0 else 1.0


@dataclass
class AutotuneReport:
    mode: str = "off"
    kernels: int = 0
    """Keys measured."""
    candidates: int = 0
    """Candidate programs timed."""
    reused: int = 0
    """Keys whose config came from the table (not measured)."""
    seconds: float = 0.0
    clock: str = "gpu"
    """"gpu" (timestamp queries) or "host" (wall time)."""
    results: list[KernelResult] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """Measured keys whose winner is not the heuristic's config."""
        return sum(r.changed for r in self.results)

    def summary(self) -> str:
        reused = f", {self.reused} from the table" if self.reused else ""
        return (
            f"vknn autotune ({self.mode}): {self.kernels} kernels, {self.candidates} candidates, "
            f"{self.seconds:.1f} s, {self.changed} changed{reused}"
        )

    @classmethod
    def merge(cls, reports: Sequence[AutotuneReport]) -> AutotuneReport:
        out = cls(mode=reports[0].mode if reports else "off")
        for r in reports:
            out.kernels += r.kernels
            out.candidates += r.candidates
            out.reused += r.reused
            out.seconds += r.seconds
            out.results += r.results
            if r.clock == "host":
                out.clock = "host"
        return out


@dataclass
class Job:
    """One key to measure: the first step that has it, and its candidates."""

    step: Step
    variant: str
    space: TuningSpace
    candidates: tuple[TuneConfig, ...]


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidArgument(f"autotune must be one of {list(MODES)}, got '{mode}'")


def tuning_space(
    step: Step, caps: DeviceCaps, specs: Mapping[int, TensorSpec], variant: str
) -> TuningSpace | None:
    """The step's tuning space (split-K available, as in an executor), None
    when its kernel is not tunable."""
    spec = KERNELS.get(step.op)
    if spec is None or spec.tuning is None:
        return None
    ins = [specs[s] for s in step.inputs if s != NO_VALUE]
    return spec.tuning(step, caps, ins, variant, True)


def plan_jobs(
    steps: Sequence[Step],
    variants: Sequence[str],
    caps: DeviceCaps,
    specs: Mapping[int, TensorSpec],
    mode: str,
    table: Mapping[str, Mapping[str, Any]],
) -> tuple[list[Job], int]:
    """(the keys to measure in step order, how many keys the table already
    settles). `variants`: each step's shader variant. A key with a single
    candidate needs no measurement."""
    check_mode(mode)
    jobs: list[Job] = []
    seen: set[str] = set()
    reused = 0
    if mode == "off":
        return jobs, reused
    for step, variant in zip(steps, variants, strict=True):
        space = tuning_space(step, caps, specs, variant)
        if space is None or space.key in seen:
            continue
        seen.add(space.key)
        entry = table.get(space.key)
        if entry is not None and dict(entry) in space.thorough:
            reused += 1
            continue
        candidates = space.candidates(mode)
        if len(candidates) > 1:
            jobs.append(Job(step, variant, space, candidates))
    return jobs, reused


def pick(candidates: Sequence[TuneConfig], times_ns: Sequence[float]) -> TuneConfig:
    """The winner: the fastest candidate, unless the first (the heuristic's)
    is within MARGIN of it; ties go to the earlier candidate."""
    best = min(range(len(candidates)), key=lambda i: (times_ns[i], i))
    if times_ns[0] <= times_ns[best] * (1.0 + MARGIN):
        best = 0
    return dict(candidates[best])


class _Scratch:
    """Tuner-owned buffers for one key: the step's tensors (random data),
    kernel tables and split-K partials (`RecordContext.table` / `.scratch`)."""

    def __init__(self, device: Device, caps: DeviceCaps, seed: int) -> None:
        self.device = device
        self.mapped = caps.has_device_local_host_visible
        self.rng = np.random.default_rng(seed)
        self.buffers: list[Buffer] = []

    def _alloc(self, nbytes: int) -> Buffer:
        usage = STORAGE | TRANSFER_DST | TRANSFER_SRC
        buf = Buffer(self.device, max(4, nbytes), usage, self.mapped)
        self.buffers.append(buf)
        return buf

    def table(self, arr: np.ndarray) -> TensorRef:
        data = np.ascontiguousarray(arr)
        buf = self._alloc(data.nbytes)
        self._fill(buf, data)
        return TensorRef(buf, 0, buf.size)

    def scratch(self, nbytes: int) -> TensorRef:
        buf = self._alloc(nbytes)
        return TensorRef(buf, 0, buf.size)

    def tensor(self, spec: TensorSpec, storage: np.dtype) -> TensorArg:
        n = max(1, int(np.prod(spec.shape)))
        if storage.kind == "f":
            data = self.rng.uniform(-1.0, 1.0, n).astype(storage)
        else:
            data = np.zeros(n, storage)
        buf = self._alloc(data.nbytes)
        self._fill(buf, data)
        return TensorArg(TensorRef(buf, 0, data.nbytes), tuple(spec.shape), spec.dtype)

    def _fill(self, buf: Buffer, data: np.ndarray) -> None:
        if self.mapped:
            buf.write(0, data)
            return
        src = Buffer(self.device, buf.size, TRANSFER_SRC, True)
        try:
            src.write(0, data)
            copy_once(self.device, src, buf, data.nbytes)
        finally:
            src.destroy()

    def close(self) -> None:
        for b in self.buffers:
            b.destroy()
        self.buffers.clear()


def _span_ns(prog: CommandProgram) -> float:
    """GPU ns from the first dispatch's start to the last's end, last run."""
    n = 2 * len(prog.recorded)
    data = ffi.new("uint64_t[]", n)
    flags = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
    check(
        lib.vkGetQueryPoolResults(prog.device.device, prog.query_pool, 0, n, 8 * n, data, 8, flags),
        "vkGetQueryPoolResults",
    )
    caps = prog.device.caps
    mask = (1 << min(caps.timestamp_valid_bits, 64)) - 1
    start = min(data[i] for i in range(0, n, 2))
    end = max(data[i] for i in range(1, n, 2))
    return float((end - start) & mask) * caps.timestamp_period_ns


def _commands(
    ops: list[Dispatch], pipelines: Pipelines, caps: DeviceCaps
) -> tuple[list[Any], list[Buffer], list[Any]]:
    """Recorded dispatches as a program's commands over their own buffers, a
    barrier wherever the op's pass changes (split-K: partials, then sum) over
    the ranges the passes before wrote: a barrier listing no range is an
    execution dependency only (`commands.py`), which would let the sum read
    partials not yet visible."""
    buffers: list[Buffer] = []
    index: dict[int, int] = {}
    kernels: dict[Any, int] = {}
    pipes: list[Any] = []
    commands: list[Any] = []
    written: list[Range] = []
    last_pass: Any = None
    types = fastmath_float_types(caps)
    for op in ops:
        key = (int(op.op_index), getattr(op.op_index, "phase", 0))
        if last_pass is not None and key != last_pass and written:
            commands.append(BarrierCmd(STAGE_COMPUTE, STAGE_COMPUTE, tuple(dict.fromkeys(written))))
            written = []
        last_pass = key
        k = op.kernel
        if k not in kernels:
            spirv = kernel_spirv(
                k.shader, k.variant, k.fastmath and caps.has_float_controls2,
                k.variant == "fp16" and caps.rte_fp16, types,
            )  # fmt: skip
            spec = tuple(
                (i, "f" if isinstance(v, float) else "i", int(v) if isinstance(v, bool) else v)
                for i, v in k.spec
            )
            kernels[k] = len(pipes)
            pipes.append(pipelines.get(spirv, k.bindings, k.push_size, spec, k.local_size))
        binds = []
        for b in op.bindings:
            if id(b.buffer) not in index:
                index[id(b.buffer)] = len(buffers)
                buffers.append(b.buffer)  # type: ignore[arg-type]
            binds.append(Range(index[id(b.buffer)], b.offset, b.nbytes))
            if b.write:
                written.append(binds[-1])
        commands.append(DispatchCmd(kernels[k], tuple(binds), op.push, op.groups, op.label, "", ""))
    return commands, buffers, pipes


def time_dispatches(
    device: Device,
    pipelines: Pipelines,
    caps: DeviceCaps,
    ops: list[Dispatch],
    warmup: int,
    reps: int,
) -> float:
    """Median ns of `ops` as one submitted program (GPU span, or host wall time)."""
    prog = CommandProgram(device, profiling=True)
    try:
        commands, buffers, pipes = _commands(ops, pipelines, caps)
        prog.record(commands, buffers, pipes)
        for _ in range(warmup):
            prog.run()
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            prog.run()
            wall = (time.perf_counter() - t0) * 1e9
            samples.append(_span_ns(prog) if prog.query_pool is not None else wall)
        return float(statistics.median(samples))
    finally:
        prog.destroy()


class _Progress:
    """A bar on a terminal (vknn.progress); the summary line anywhere."""

    def __init__(self, stream: TextIO | None, total: int) -> None:
        from vknn.progress import Bar

        self.stream = stream
        self.bar = Bar(total, "vknn autotune", stream) if stream is not None else None

    def update(self, done: int, label: str) -> None:
        if self.bar is not None:
            self.bar.update(done - self.bar.done, label)

    def done(self, summary: str) -> None:
        if self.bar is None or self.stream is None:
            return
        self.bar.close()
        self.stream.write(summary + "\n")
        self.stream.flush()


def autotune_steps(
    device: Device,
    pipelines: Pipelines,
    caps: DeviceCaps,
    steps: Sequence[Step],
    variants: Sequence[str],
    specs: Mapping[int, TensorSpec],
    mode: str,
    table: Table,
    fastmath: bool = False,
    stream: TextIO | None = None,
) -> AutotuneReport:
    """Measure the candidates of every key of `steps` that `table` lacks and
    put the winners into `table`. `variants`: each step's shader variant
    ("fp32"/"fp16": its float tensors' storage); `specs`: slot -> spec of
    every tensor the steps touch. `stream`: where progress goes (stderr)."""
    t0 = time.perf_counter()
    jobs, reused = plan_jobs(steps, variants, caps, specs, mode, table)
    report = AutotuneReport(mode=mode, reused=reused)
    report.clock = "gpu" if device.caps.has_timestamps else "host"
    if not jobs:
        report.seconds = time.perf_counter() - t0
        return report
    total = sum(len(j.candidates) for j in jobs)
    progress = _Progress(sys.stderr if stream is None else stream, total)
    done = 0
    for n, job in enumerate(jobs):
        step, variant = job.step, job.variant
        floats = np.dtype(np.float16 if variant == "fp16" else np.float32)
        scratch = _Scratch(device, caps, seed=n)
        try:
            args: dict[int, TensorArg] = {}
            for s in step.inputs:
                if s != NO_VALUE and s not in args:
                    args[s] = scratch.tensor(specs[s], storage_dtype(specs[s].dtype, floats))
            ins = [args[s] for s in step.inputs if s != NO_VALUE]
            outs = [
                scratch.tensor(spec, storage_dtype(spec.dtype, floats)) for spec in step.out_specs
            ]
            times = []
            for i, cand in enumerate(job.candidates):
                progress.update(done, f"{job.space.label} [{i + 1}/{len(job.candidates)}]")
                ctx = RecordContext(
                    caps, variant, op_index=0, table=scratch.table, scratch=scratch.scratch,
                    fastmath=fastmath, config=cand,
                )  # fmt: skip
                try:
                    ops = KERNELS[step.op].record(step, ctx, ins, outs)
                    times.append(
                        time_dispatches(device, pipelines, caps, ops, WARMUP[mode], REPS[mode])
                    )
                except (VulkanError, ShaderError):
                    if i == 0:  # the heuristic's config is what runs otherwise
                        raise
                    # A driver that cannot build one alternative loses only it.
                    times.append(math.inf)
                done += 1
        finally:
            scratch.close()
        best = pick(job.candidates, times)
        table[job.space.key] = best
        report.results.append(
            KernelResult(job.space.key, job.space.label, list(job.candidates), times, best)
        )
        report.kernels += 1
        report.candidates += len(job.candidates)
    report.seconds = time.perf_counter() - t0
    progress.done(report.summary())
    return report


def tune_module(
    module: Any,
    device: Device,
    pipelines: Pipelines,
    mode: str,
    table: Table,
    fastmath: bool = False,
    stream: TextIO | None = None,
) -> AutotuneReport:
    """Measure the tunable ops of a module's Vulkan segments (after
    `assign-storage`) whose keys `table` lacks, and pin every tunable op to
    its key's winner as `vkd.config` (module docstring)."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64

    from vknn.dialects import vkd
    from vknn.transforms import segment_steps
    from vknn.transforms.convert_vx_to_vkd import CONFIG_ATTR
    from vknn.transforms.target_option import module_target

    check_mode(mode)
    caps = module_target(module)
    reports = []
    for seg in module.walk():
        if not (isinstance(seg, vkd.SegmentOp) and seg.backend.data == "vulkan"):
            continue
        view = segment_steps.build(seg.body.block)
        variants = []
        for st in view.steps:
            v = st.attrs.get("vkd.variant")
            variants.append(v if isinstance(v, str) else "fp32")
        reports.append(
            autotune_steps(
                device, pipelines, caps, view.steps, variants, view.specs, mode, table,
                fastmath, stream,
            )
        )  # fmt: skip
        for st, variant in zip(view.steps, variants, strict=True):
            space = tuning_space(st, caps, view.specs, variant)
            entry = table.get(space.key) if space is not None else None
            if space is None or entry is None or dict(entry) not in space.thorough:
                continue
            view.op_of(st).attributes[CONFIG_ATTR] = DictionaryAttr(
                {
                    k: IntegerAttr(v, i64) if isinstance(v, int) else StringAttr(str(v))
                    for k, v in entry.items()
                }
            )
    return AutotuneReport.merge(reports)
