"""Kernel specs of the data-movement ops on flat row-major storage:
`vx.reshape` and `vx.convert_layout` (aliases: no dispatch, no memory),
`vx.transpose`, `vx.slice`, `vx.expand` and `vx.concat` (all one strided
copy shader, glsl/copy.comp), `vx.gather` (gather.comp) and `vx.pad`
(pad.comp).

These kernels address row-major tensors. `vx.reshape` and
`vx.convert_layout` alias their input while it is flat; of an NC4HW4 tensor
(`vulkan/layouts.py`) the executor records an unpacking conversion instead.
`vx.concat` of whole channel blocks also runs on packed parts
(`concat_nc4hw4`); every other op here gets flat operands. Elements move
as raw storage words (movement.glsl), bit-exact for every device dtype; the
shader variant follows the tensor's storage width (`dtypes.elem_variant`).

Each strided copy is described on the host as (dims, src strides, dst
strides) and collapsed (`collapse_copy`): size-1 dims dropped, neighbours
contiguous on both sides merged. A transpose of rank <= 6 always fits the
shader's 8 dims; the gate refuses what does not collapse to 8.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import replace

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    local_size,
    register,
)
from vknn.kernels.layouts import Nc4hw4Io, block_shape, packable
from vknn.kernels.records import Dispatch, KernelKey
from vknn.kernels.shaders import register_variant
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.dtypes import dtype_refusal, elem_variant

COPY_RANK = 8
"""Dims of glsl/copy.comp after collapsing."""
PAD_RANK = 6
MAX_ELEMENTS = (1 << 31) - 1
"""Shaders index with signed 32-bit ints (negative slice strides)."""

_COPY_PUSH = struct.Struct(f"<IIii{COPY_RANK}I{COPY_RANK}i{COPY_RANK}i")


# -- shared helpers (also used by the other movement-like families) ---------


def row_strides(shape: Sequence[int]) -> list[int]:
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def check_specs(
    step: Step, in_specs: list[TensorSpec] | None, count: int | None = None
) -> str | None:
    """Dtype and size refusals common to every movement kernel."""
    specs = [*(in_specs or ()), *step.out_specs]
    if in_specs is not None and count is not None and len(in_specs) != count:
        return f"{step.kind}: expected {count} inputs, got {len(in_specs)}"
    for s in specs:
        why = dtype_refusal(s.dtype)
        if why:
            return f"{step.kind}: {why}"
        if math.prod(s.shape) > MAX_ELEMENTS:
            return f"{step.kind}: {math.prod(s.shape)} elements exceed 32-bit signed indexing"
    return None


def pipeline(
    ctx: RecordContext,
    shader: str,
    dtype: str,
    spec: tuple[tuple[int, int | float | bool], ...],
    bindings: int,
    push_size: int,
    defines: dict[str, str] | None = None,
) -> KernelKey:
    """The pipeline of `shader` in the variant whose words hold `dtype` (an
    int64 `dtype` builds it with `VKNN_I64_WORDS`: `elem` is a uvec2), with
    extra `defines`."""
    variant = elem_variant(dtype, ctx.variant)
    defines = dict(defines or {})
    if dtype == "int64":
        defines["VKNN_I64_WORDS"] = "1"
    if defines:
        shader = register_variant(shader, defines)
    return KernelKey(shader, variant, spec, bindings, push_size, ctx.fastmath, local_size(ctx.caps))


def label(step: Step) -> str:
    return f"{step.node} ({step.kind})"


def collapse_copy(
    dims: Sequence[int], ss: Sequence[int], ds: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """The fewest dims describing the same copy: size-1 dims dropped, dim d
    merged into d-1 where both sides step across it contiguously. Empty
    lists mean both sides are contiguous (a flat copy)."""
    out_d: list[int] = []
    out_s: list[int] = []
    out_t: list[int] = []
    for n, a, b in zip(dims, ss, ds, strict=True):
        if n == 1:
            continue
        if out_d and out_s[-1] == a * n and out_t[-1] == b * n:
            out_d[-1] *= n
            out_s[-1], out_t[-1] = a, b
            continue
        out_d.append(n)
        out_s.append(a)
        out_t.append(b)
    if len(out_d) <= 1 and out_s in ([], [1]) and out_t in ([], [1]):
        return [], [], []
    return out_d, out_s, out_t


def copy_dispatches(
    step: Step,
    ctx: RecordContext,
    src: TensorArg,
    dst: TensorArg,
    dims: Sequence[int],
    ss: Sequence[int],
    ds: Sequence[int],
    sbase: int = 0,
    dbase: int = 0,
) -> list[Dispatch]:
    """dst[dbase + sum c_k ds_k] = src[sbase + sum c_k ss_k] over `dims`."""
    n = math.prod(dims)
    if n == 0:
        return []
    cd, cs, ct = collapse_copy(dims, ss, ds)
    if len(cd) > COPY_RANK:
        raise ValueError(f"{step.node}: copy needs {len(cd)} dims (max {COPY_RANK}); gated")
    pad = [0] * (COPY_RANK - len(cd))
    pipe = pipeline(ctx, "copy", dst.dtype, ((1, len(cd)),), 2, _COPY_PUSH.size)
    tail = (*(cd + pad), *(cs + pad), *(ct + pad))
    return flat_dispatches(
        pipe,
        [src.binding(), dst.binding(write=True)],
        n,
        lambda base: _COPY_PUSH.pack(n, base, sbase, dbase, *tail),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


def _copy_rank_refusal(
    step: Step, dims: Sequence[int], ss: Sequence[int], ds: Sequence[int]
) -> str | None:
    cd, _, _ = collapse_copy(dims, ss, ds)
    if len(cd) > COPY_RANK:
        return f"{step.kind}: the copy needs {len(cd)} dims after collapsing (max {COPY_RANK})"
    return None


# -- vx.reshape, vx.convert_layout: aliases ---------------------------------


def gate_alias(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why:
        return why
    if in_specs is not None and in_specs[0].dtype != step.out_specs[0].dtype:
        return f"{step.kind}: changes the dtype ({in_specs[0].dtype} -> {step.out_specs[0].dtype})"
    return None


def record_alias(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    # The executor placed the output on the input's memory; nothing to do.
    assert outs[0].ref.buffer is ins[0].ref.buffer and outs[0].ref.offset == ins[0].ref.offset
    return []


# -- vx.transpose -----------------------------------------------------------


def _transpose_copy(
    in_shape: Sequence[int], perm: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    st = row_strides(in_shape)
    dims = [in_shape[p] for p in perm]
    return dims, [st[p] for p in perm], row_strides(dims)


def gate_transpose(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why or in_specs is None:
        return why
    return _copy_rank_refusal(step, *_transpose_copy(in_specs[0].shape, step.attrs["perm"]))


def record_transpose(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    dims, ss, ds = _transpose_copy(ins[0].shape, [int(p) for p in step.attrs["perm"]])
    return copy_dispatches(step, ctx, ins[0], outs[0], dims, ss, ds)


# -- vx.slice ---------------------------------------------------------------


def _slice_copy(
    in_shape: Sequence[int], out_shape: Sequence[int], attrs: dict
) -> tuple[list[int], list[int], list[int], int]:
    """(dims, src strides, dst strides, src base) of a normalized slice: a
    negative step walks backwards from `start` (a negative stride)."""
    st = row_strides(in_shape)
    base = sum(int(s) * k for s, k in zip(attrs["starts"], st, strict=True))
    ss = [int(step) * k for step, k in zip(attrs["steps"], st, strict=True)]
    return list(out_shape), ss, row_strides(out_shape), base


def gate_slice(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why or in_specs is None:
        return why
    dims, ss, ds, _ = _slice_copy(in_specs[0].shape, step.out_specs[0].shape, step.attrs)
    return _copy_rank_refusal(step, dims, ss, ds)


def record_slice(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    dims, ss, ds, base = _slice_copy(ins[0].shape, outs[0].shape, step.attrs)
    return copy_dispatches(step, ctx, ins[0], outs[0], dims, ss, ds, sbase=base)


# -- vx.expand --------------------------------------------------------------


def _expand_copy(
    in_shape: Sequence[int], out_shape: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    full = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    st = row_strides(full)
    ss = [0 if f == 1 and o != 1 else k for f, o, k in zip(full, out_shape, st, strict=True)]
    return list(out_shape), ss, row_strides(out_shape)


def gate_expand(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why or in_specs is None:
        return why
    return _copy_rank_refusal(step, *_expand_copy(in_specs[0].shape, step.out_specs[0].shape))


def record_expand(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    return copy_dispatches(step, ctx, ins[0], outs[0], *_expand_copy(ins[0].shape, outs[0].shape))


# -- vx.concat --------------------------------------------------------------


def concat_offsets(step: Step, in_shapes: Sequence[Sequence[int]]) -> list[int]:
    """Element offset of each input's first element in the output."""
    axis = int(step.attrs["axis"])
    out = step.out_specs[0].shape
    inner = math.prod(out[axis + 1 :])
    offs, at = [], 0
    for s in in_shapes:
        offs.append(at * inner)
        at += s[axis]
    return offs


def concat_in_place(step: Step, in_shapes: Sequence[Sequence[int]]) -> list[int] | None:
    """Element offsets at which each input can simply *be* its part of the
    output (the executor then places the producers' results there and the
    concat copies nothing), or None when the parts interleave. Parts are
    contiguous exactly when every dim before the axis is 1 (batch-1 channel
    concats: DenseNet, Inception)."""
    axis = int(step.attrs["axis"])
    if math.prod(step.out_specs[0].shape[:axis]) != 1:
        return None
    return concat_offsets(step, in_shapes)


def _concat_part(
    out_shape: Sequence[int], in_shape: Sequence[int], axis: int
) -> tuple[list[int], list[int], list[int]]:
    return list(in_shape), row_strides(in_shape), row_strides(out_shape)


def gate_concat(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs)
    if why or in_specs is None:
        return why
    out = step.out_specs[0]
    axis = int(step.attrs["axis"])
    for s in in_specs:
        if s.dtype != out.dtype:
            return f"{step.kind}: mixed dtypes {[t.dtype for t in in_specs]}"
        why = _copy_rank_refusal(step, *_concat_part(out.shape, s.shape, axis))
        if why:
            return why
    return None


def record_concat(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    offs = concat_offsets(step, [x.shape for x in ins])
    if outs[0].packed:
        # Channel blocks of 4 (concat_nc4hw4): the same concat on [N, C/4, H, W*4].
        ins = [replace(x, shape=block_shape(x.shape)) for x in ins]
        outs = [replace(outs[0], shape=block_shape(outs[0].shape))]
    out = outs[0]
    axis = int(step.attrs["axis"])
    esize = out.ref.nbytes // max(1, out.size)
    ops: list[Dispatch] = []
    for x, off in zip(ins, offs, strict=True):
        if x.ref.buffer is out.ref.buffer and x.ref.offset == out.ref.offset + off * esize:
            continue  # its producer already wrote it in place
        dims, ss, ds = _concat_part(out.shape, x.shape, axis)
        ops += copy_dispatches(step, ctx, x, out, dims, ss, ds, dbase=off)
    return ops


def concat_nc4hw4(step: Step, in_specs: list[TensorSpec]) -> Nc4hw4Io | None:
    """Packed channel concat of whole channel blocks: every part's channel
    count a multiple of 4 (then packed parts are contiguous runs, and a
    batch-1 concat still places its inputs)."""
    out = step.out_specs[0]
    if int(step.attrs["axis"]) not in (1, -3) or not packable(out):
        return None
    if any(not packable(s) or s.shape[1] % 4 for s in in_specs):
        return None
    return frozenset(range(len(in_specs))), frozenset({0})


# -- vx.gather --------------------------------------------------------------

_GATHER_PUSH = struct.Struct("<IIIIi")


def gate_gather(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 2)
    if why or in_specs is None:
        return why
    if in_specs[1].dtype not in ("int32", "int64", "int16", "int8", "uint8", "uint16"):
        return f"{step.kind}: {in_specs[1].dtype} indices"
    return None


def record_gather(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    data, idx, y = ins[0], ins[1], outs[0]
    axis = int(step.attrs["axis"])
    inner = math.prod(data.shape[axis + 1 :])
    n = y.size
    if n == 0:
        return []
    idx64 = {"VKNN_IDX64": "1"} if idx.dtype == "int64" else None
    pipe = pipeline(ctx, "gather", y.dtype, (), 3, _GATHER_PUSH.size, idx64)
    nidx, dim = max(1, idx.size), data.shape[axis]
    return flat_dispatches(
        pipe,
        [data.binding(), idx.binding(), y.binding(write=True)],
        n,
        lambda base: _GATHER_PUSH.pack(n, base, max(1, inner), nidx, dim),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


# -- vx.pad -----------------------------------------------------------------

_PAD_PUSH = struct.Struct(f"<IIiI{PAD_RANK}I{PAD_RANK}i{PAD_RANK}i{PAD_RANK}i")
PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}


def fill_bits(value: float, dtype: str, variant: str) -> int:
    """The storage word of a constant `value` in a `dtype` tensor."""
    import numpy as np

    if elem_variant(dtype, variant) == "fp16":
        v = np.float64(value)
        v = v if np.isinf(v) else np.clip(v, -65504.0, 65504.0)  # -inf pads stay -inf
        return int(np.float16(v).view(np.uint16))
    if dtype in ("float32", "float16"):
        if dtype == "float16":
            value = float(np.float16(value))
        return int(np.float32(value).view(np.uint32))
    # Integers: the low word (pad.comp sign-extends it for int64 tensors).
    return int(np.int64(value).astype(np.int32).view(np.uint32))


def gate_pad(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why:
        return why
    rank = len(step.out_specs[0].shape)
    if rank > PAD_RANK:
        return f"{step.kind}: rank {rank} > {PAD_RANK}"
    mode = step.attrs.get("mode")
    if mode not in PAD_MODES:
        return f"{step.kind}: mode '{mode}' has no Vulkan kernel"
    value = step.attrs.get("value") or 0
    if step.out_specs[0].dtype == "int64" and not -(1 << 31) <= int(value) < 1 << 31:
        return f"{step.kind}: int64 pad value {int(value)} past 32 bits"
    if in_specs is not None and mode != "constant" and 0 in in_specs[0].shape:
        return f"{step.kind}: {mode} padding of an empty tensor"
    return None


def record_pad(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    rank = len(x.shape)
    pads = [int(p) for p in step.attrs["pads"]]
    begins, ends = pads[:rank], pads[rank:]
    st = row_strides(x.shape)
    lead = [1] * (PAD_RANK - rank)
    odims = lead + list(y.shape)
    # A negative pad crops: the window starts `-begin` in and is shorter.
    lo = [max(-b, 0) for b in begins]
    wlen = [1] * (PAD_RANK - rank) + [
        d - max(-b, 0) - max(-e, 0) for d, b, e in zip(x.shape, begins, ends, strict=True)
    ]
    pbeg = [0] * (PAD_RANK - rank) + [max(b, 0) for b in begins]
    istr = [0] * (PAD_RANK - rank) + st
    sbase = sum(a * b for a, b in zip(lo, st, strict=True))
    n = y.size
    if n == 0:
        return []
    mode = step.attrs["mode"]
    fill = fill_bits(float(step.attrs.get("value") or 0.0), y.dtype, ctx.variant)
    pipe = pipeline(ctx, "pad", y.dtype, ((1, PAD_MODES[mode]),), 2, _PAD_PUSH.size)
    tail = (*odims, *wlen, *pbeg, *istr)
    return flat_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        n,
        lambda base: _PAD_PUSH.pack(n, base, sbase, fill, *tail),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


register(KernelSpec("vx.reshape", gate_alias, record_alias, aliases=True))
register(KernelSpec("vx.convert_layout", gate_alias, record_alias, aliases=True))
register(KernelSpec("vx.transpose", gate_transpose, record_transpose, int64="words"))
register(KernelSpec("vx.slice", gate_slice, record_slice, int64="words"))
register(KernelSpec("vx.expand", gate_expand, record_expand, int64="words"))
register(
    KernelSpec(
        "vx.concat",
        gate_concat,
        record_concat,
        nc4hw4=concat_nc4hw4,
        nc4hw4_follows=True,
        int64="words",
    )
)
register(KernelSpec("vx.gather", gate_gather, record_gather, int64="words"))
register(KernelSpec("vx.pad", gate_pad, record_pad, int64="words"))
