"""Vulkan kernel specs, the compiler's side of every dispatch: for each op, a
gate (does the Vulkan backend take this op on this target?) and a recorder
(the op's dispatches, as plain records over symbolic buffers: records.py).

`gate(step, target, in_specs)` is the one function the `partition` pass, the
support report and `convert-vx-to-vkd` all call, so they cannot drift. It is
pure: plain `Step` data (an op's kind, attributes and specs) and a `Target`
(`vknn.runtime.target`), no device. It returns None when the op is accepted,
else "<Kind>: <reason>" a user can act on. Recorders are pure too: they
return `Dispatch`/`Copy` records naming `KernelKey`s, never pipelines.

A new kernel family registers a `KernelSpec` here (see `elementwise.py`).
This package must not import xDSL, the CPU backend or a device.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from vknn.errors import VknnError
from vknn.kernels.records import Binding, Dispatch, KernelKey, SpecValue, TensorRef
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target

DeviceCaps = Target
"""Kernel code names its target parameter `caps` (what the device offers)."""

FLOAT_DTYPES = ("float32", "float16")
"""Model dtypes the elementwise kernels take (stored as fp32 or fp16)."""


@dataclass
class TensorArg:
    """A tensor as a recorder sees it: where it lives, its shape, its model dtype."""

    ref: TensorRef
    shape: tuple[int, ...]
    """The logical shape (NCHW for a packed tensor)."""
    dtype: str
    packed: bool = False
    """Stored NC4HW4 (`vulkan/layouts.py`): only where the step runs packed
    and its kernel's `nc4hw4` named this position."""

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def binding(self, write: bool = False) -> Binding:
        return Binding(self.ref.buffer, self.ref.offset, self.ref.nbytes, write)


@dataclass
class RecordContext:
    """What a recorder may use besides the step and its tensors."""

    caps: Target
    variant: str
    """Shader variant: "fp32" or "fp16" (storage)."""
    op_index: int = 0
    table: Callable[[np.ndarray], TensorRef] | None = None
    """Puts a host array (raw words: a table a kernel computes from the step's
    attributes, or zeros a kernel keeps coming back to) into device memory
    that lives as long as the program: a `vkd.weight` of its own."""
    scratch: Callable[[int], TensorRef] | None = None
    """Device memory of `nbytes` for this op alone (split-K partial sums): a
    `vkd.alloc` live from the op's first dispatch to its last. None: the
    caller cannot provide scratch, so recorders do not split K."""
    fastmath: bool = False
    """Kernels get FPFastMathDefault (already decided for the target:
    `vknn.kernels.spirv.fastmath_enabled`)."""
    tuning: Mapping[str, Mapping[str, Any]] | None = None
    """The autotune table (key -> config): a tunable recorder records the
    listed config of its step's key, when valid here, over its heuristic."""
    config: Mapping[str, Any] | None = None
    """One config to record with, over table and heuristic (autotune
    candidates, or the `vkd.config` an op carries in the IR)."""

    def pipeline(
        self,
        shader: str,
        spec: tuple[tuple[int, SpecValue], ...],
        bindings: int,
        push_size: int,
        local_size_x: int,
    ) -> KernelKey:
        return KernelKey(
            shader, self.variant, spec, bindings, push_size, self.fastmath, local_size_x
        )

    @property
    def splitk(self) -> bool:
        """Whether recorders may split K (they need scratch for the partials)."""
        return self.scratch is not None


class InvalidTuneConfig(VknnError, ValueError):
    """A pinned `vkd.config` that is not one of the kernel's valid configurations."""


TuneConfig = dict[str, Any]
"""One configuration of a tunable kernel (plain ints/strings: msgpack-able)."""


@dataclass(frozen=True)
class TuningSpace:
    """The configurations a tunable kernel may record one step with (autotune.py).
    `default` (the heuristic's choice) comes first in `fast`, which is a
    subset of `thorough`, every config valid on the device."""

    key: str
    """What a measurement depends on (op, shader family, variant, geometry,
    epilogue), never the node: equal layers share one table entry."""
    label: str
    default: TuneConfig
    fast: tuple[TuneConfig, ...]
    thorough: tuple[TuneConfig, ...]

    def candidates(self, mode: str) -> tuple[TuneConfig, ...]:
        return self.thorough if mode == "thorough" else self.fast

    def choose(self, ctx: RecordContext) -> TuneConfig:
        """ctx.config, else the table's entry if valid here, else the default."""
        if ctx.config is not None:
            if dict(ctx.config) not in self.thorough:
                raise InvalidTuneConfig(
                    f"vkd.config {dict(ctx.config)} of {self.label} is not a candidate here "
                    f"(key {self.key}; e.g. {self.default})"
                )
            return dict(ctx.config)
        entry = (ctx.tuning or {}).get(self.key)
        # A table from another device or version may list a config invalid here.
        if entry is not None and dict(entry) in self.thorough:
            return dict(entry)
        return dict(self.default)


Gate = Callable[[Step, DeviceCaps, "list[TensorSpec] | None"], "str | None"]
Recorder = Callable[[Step, RecordContext, "list[TensorArg]", "list[TensorArg]"], "list[Dispatch]"]
Nc4hw4 = Callable[[Step, "list[TensorSpec]"], "tuple[frozenset[int], frozenset[int]] | None"]
Tuner = Callable[[Step, DeviceCaps, "list[TensorSpec]", str, bool], "TuningSpace | None"]
"""(step, caps, input specs, variant, split-K available) -> its tuning space,
None when there is nothing to choose."""


@dataclass(frozen=True)
class KernelSpec:
    op: str
    gate: Gate
    record: Recorder
    aliases: bool = False
    """The op's output is its first input's memory reinterpreted (reshape):
    the executor gives it no storage of its own and records nothing."""
    tuning: Tuner | None = None
    """The recorder reads `TuningSpace.choose(ctx)`: the autotuner may measure it."""
    nc4hw4: Nc4hw4 | None = None
    """(step, input specs) -> the (input positions, output positions) the
    recorder reads / writes NC4HW4 when the step runs packed, or None when it
    cannot run this step packed (`vulkan/layouts.py`)."""
    nc4hw4_follows: bool = False
    """Layout-agnostic (elementwise, concat): run packed only where an operand
    it would read packed is already stored packed, so a rank-4 add between two
    flat kernels (attention scores + mask) costs no conversions."""
    chunked: bool = False
    """Elementwise over same-shape operands (and one-element ones): the
    recorder is wrapped in `record_chunked`, so tensors past the device's
    maxStorageBufferRange run as several dispatches over element ranges,
    each binding its range of every operand, instead of falling back."""
    splits_large: Callable[[Step, DeviceCaps, list[TensorSpec]], str | None] | None = None
    """(step, caps, input specs) -> None when the recorder splits this step's
    tensors past maxStorageBufferRange itself (a batch-1 conv runs as channel
    slices), else why it cannot; the gate refuses such tensors otherwise."""
    int64: str = ""
    """What the recorder does with int64 tensors (stored as 8 bytes): "" it
    takes none; "words" it moves them as pairs of 32-bit words (any device);
    "arith" it computes on them in 64 bits (needs the target's shaderInt64).
    `gate` refuses int64 operands the spec cannot take, once for all families."""
    packed_constants: Callable[[Step, list[TensorSpec]], dict[int, str]] | None = None
    """(step, input specs) -> {input position: `layouts.CONST_TRANSFORMS`
    name}: constants the recorder reads transformed when the step runs packed."""


KERNELS: dict[str, KernelSpec] = {}


def register(spec: KernelSpec) -> KernelSpec:
    if spec.chunked:
        spec = replace(spec, record=record_chunked(spec.record))
    KERNELS[spec.op] = spec
    return spec


def units_per_binding(unit_bytes: Sequence[int], caps: DeviceCaps) -> int:
    """How many units (elements, channel planes) one dispatch may bind of
    tensors whose units are `unit_bytes` bytes each: every part fits
    maxStorageBufferRange and every part's byte offset stays a multiple of
    minStorageBufferOffsetAlignment. 0 when not even one aligned block fits."""
    align = max(1, caps.min_storage_buffer_offset_alignment)
    step = 1
    for b in unit_bytes:
        step = math.lcm(step, align // math.gcd(b, align))
    per = min(caps.max_storage_buffer_range // b for b in unit_bytes)
    return per // step * step


def chunkable(step: Step, in_specs: list[TensorSpec] | None) -> bool:
    """Every operand has the result's element count or one element (and
    the count fits 32-bit indexing): `record_chunked` can split it."""
    if in_specs is None or not step.out_specs:
        return False
    n = _numel(step.out_specs[0].shape)
    sizes = [_numel(t.shape) for t in [*in_specs, *step.out_specs]]
    return n < 1 << 32 and all(s in (n, 1) for s in sizes)


def record_chunked(record: Recorder) -> Recorder:
    """`record` for operands that may exceed maxStorageBufferRange: when
    every binding fits, `record` itself; else `record` once per range of
    elements, on 1-D views of each operand's part of it (one-element operands
    whole), ranges sized by `units_per_binding`."""

    def chunked(
        step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
    ) -> list[Dispatch]:
        limit = ctx.caps.max_storage_buffer_range
        if all(t.ref.nbytes <= limit for t in [*ins, *outs]):
            return record(step, ctx, ins, outs)
        from vknn.kernels.layouts import as_padded

        ins, outs = as_padded(ins), as_padded(outs)
        n = outs[0].size
        chunk = units_per_binding([t.ref.nbytes // max(1, t.size) for t in [*ins, *outs]], ctx.caps)
        if chunk <= 0:
            raise ValueError(f"{step.node}: maxStorageBufferRange {limit} below one block")

        def part(t: TensorArg, first: int, count: int) -> TensorArg:
            if t.size not in (n, 1):  # the gate only passes chunkable steps
                raise ValueError(f"{step.node}: operand {t.shape} is not elementwise with {n}")
            if t.size != n:  # one element, bound whole
                return TensorArg(t.ref, (1,), t.dtype)
            es = t.ref.nbytes // max(1, t.size)
            ref = TensorRef(t.ref.buffer, t.ref.offset + first * es, count * es)
            return TensorArg(ref, (count,), t.dtype)

        ops: list[Dispatch] = []
        for first in range(0, n, chunk):
            count = min(chunk, n - first)
            sub_ins = [part(t, first, count) for t in ins]
            sub_outs = [part(t, first, count) for t in outs]
            ops += record(step, ctx, sub_ins, sub_outs)
        return ops

    return chunked


def gate(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    """None if the Vulkan backend runs `step` on a device with `caps`, else why not.
    `in_specs` (the inputs' shapes/dtypes) lets shape-dependent gates decide
    exactly; without it they judge from the outputs alone."""
    spec = KERNELS.get(step.op)
    if spec is None:
        return f"{step.kind}: no Vulkan kernel for {step.op} yet"
    if not spec.aliases and not (spec.chunked and chunkable(step, in_specs)):
        # A binding covers one tensor, so no kernel can address a tensor past
        # the device's range (VGG-19's fc6 weight is 411 MB; lavapipe binds
        # 128 MiB): refuse here, once for every family, so it runs on the CPU.
        # Elementwise kernels split such tensors into ranges (record_chunked),
        # kernels with `splits_large` into blocks; GEMMs with oversized
        # weights are split by the plan (split_large.py).
        limit = caps.max_storage_buffer_range
        big = [t for t in [*(in_specs or ()), *step.out_specs] if _bytes(t) > limit]
        if big:
            t = big[0]
            if spec.splits_large is None or in_specs is None:
                return (
                    f"{step.kind}: tensor '{t.name}' {list(t.shape)} needs {_bytes(t)} bytes, "
                    f"past the device's maxStorageBufferRange ({limit})"
                )
            why = spec.splits_large(step, caps, in_specs)
            if why is not None:
                return (
                    f"{step.kind}: tensor '{t.name}' {list(t.shape)} is past the device's "
                    f"maxStorageBufferRange ({limit}) and {why}"
                )
    if not spec.aliases:
        why = _int64_refusal(step, spec, caps, in_specs)
        if why:
            return why
    return spec.gate(step, caps, in_specs)


def _int64_refusal(
    step: Step, spec: KernelSpec, caps: DeviceCaps, in_specs: list[TensorSpec] | None
) -> str | None:
    """Why `spec` cannot take this step's int64 tensors on `caps` (None: it can)."""
    if not any(t.dtype == "int64" for t in [*(in_specs or ()), *step.out_specs]):
        return None
    if not spec.int64:
        return f"{step.kind}: no Vulkan kernel for int64 tensors of {step.op}"
    if spec.int64 == "arith" and not caps.has_int64:
        return f"{step.kind}: int64 arithmetic needs shaderInt64, which the target lacks"
    return None


def _bytes(t: TensorSpec) -> int:
    """A tensor's bytes at its widest storage (fp32 / int32 words; int64: 8)."""
    return (8 if t.dtype == "int64" else 4) * max(1, _numel(t.shape))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# -- helpers shared by flat kernels -----------------------------------------


def local_size(caps: DeviceCaps, want: int = 256) -> int:
    return max(
        1, min(want, caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0])
    )


def flat_dispatches(
    pipeline: KernelKey,
    bindings: list[Binding],
    n: int,
    push: Callable[[int], bytes],
    caps: DeviceCaps,
    op_index: int,
    label: str,
) -> list[Dispatch]:
    """Dispatches covering elements [0, n) with one invocation per element,
    split where the group count would pass maxComputeWorkGroupCount[0]; each
    part's first element (`base`) goes into its push constants via `push(base)`."""
    ls = pipeline.local_size_x
    groups = max(1, -(-n // ls))
    max_groups = caps.max_compute_work_group_count[0]
    out = []
    first = 0
    while first < groups:
        count = min(max_groups, groups - first)
        out.append(Dispatch(pipeline, bindings, push(first * ls), (count, 1, 1), op_index, label))
        first += count
    return out


def pack_u32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


# Registration: importing the families fills KERNELS.
from vknn.kernels import attention as _attention  # noqa: E402, F401
from vknn.kernels import cast_select as _cast_select  # noqa: E402, F401
from vknn.kernels import conv as _conv  # noqa: E402, F401
from vknn.kernels import cumsum as _cumsum  # noqa: E402, F401
from vknn.kernels import data_movement as _data_movement  # noqa: E402, F401
from vknn.kernels import elementwise as _elementwise  # noqa: E402, F401
from vknn.kernels import fused_pointwise as _fused_pointwise  # noqa: E402, F401
from vknn.kernels import indexing as _indexing  # noqa: E402, F401
from vknn.kernels import matmul as _matmul  # noqa: E402, F401
from vknn.kernels import normalization as _normalization  # noqa: E402, F401
from vknn.kernels import pool as _pool  # noqa: E402, F401
from vknn.kernels import quant as _quant  # noqa: E402, F401
from vknn.kernels import reduce as _reduce  # noqa: E402, F401
from vknn.kernels import resize as _resize  # noqa: E402, F401
