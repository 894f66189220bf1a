"""Kernel spec of `vx.attention`: softmax(scale * Q K^T + mask) V in one
dispatch (glsl/attention.comp: online softmax over tiles of 32 (or 16)
keys, the scores never leave the workgroup), fp32 or fp16 storage, fp32 arithmetic.

Every operand, and the output, is addressed through (offset, 2 batch
strides, row stride, column stride): the executor's view folding
(`views.fold_views`) hands this kernel the source of a head split
(`Reshape -> Transpose(0, 2, 1, 3)`, slices of a fused QKV projection) and
the destination of the head merge, so those copies never run. Batch dims
(broadcast ones at stride 0) are collapsed to at most two.

Limits (the gate says which one): head dims up to `MAX_HEAD_DIM` (the
output's share per invocation is kept in registers), and the shared-memory
tiles must fit the device (a 128 head dim needs ~22 KB, 256 ~21-38 KB);
sequence lengths are unbounded (keys stream through the tile).

This module must not import xDSL or the CPU backend, nor touch a device.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from vknn.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    coopmat,
    register,
    views,
)
from vknn.kernels.records import Dispatch
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

KEY_TILES = (32, 16)
"""Keys per shared tile (attention.comp's BKV), largest first: 16 lets a
256 head dim fit 32 KB of shared memory."""
LANES = 16
"""Invocations per query row: each scores BKV / LANES keys of a tile and
keeps DMAX / LANES output dims."""
HEAD_DIMS = (32, 64, 128, 256)
"""The DMAX variants: the smallest one >= the head dims is used."""
MAX_HEAD_DIM = HEAD_DIMS[-1]
ROWS = (16, 8, 4)
"""Query rows per workgroup, largest first."""
TARGET_GROUPS = 64
"""Workgroups a launch should reach before fewer rows per workgroup are
tried (small batch x heads x sequence would leave most of a big GPU idle)."""
_PUSH = struct.Struct("<5If25I")


def shared_bytes(rows: int, keys: int, dmax: int) -> int:
    return 4 * ((rows + keys) * (dmax + 1) + rows * (keys + 1) + 2 * rows * LANES)


@dataclass(frozen=True)
class _Geometry:
    sq: int
    sk: int
    d: int
    dv: int
    nb0: int
    nb1: int
    params: tuple[tuple[int, int, int, int, int], ...]
    """(off, sb0, sb1, srow, scol) of Q, K, V, mask (zeros if none), O."""
    has_mask: bool


def _aligned(view: views.View, rank: int, full: Sequence[int]) -> list[int]:
    """`view`'s strides right-aligned to `full` (rank dims), 0 where it broadcasts."""
    pad = rank - len(view.shape)
    if pad < 0:
        raise ValueError(f"operand of rank {len(view.shape)} for a rank-{rank} result")
    out = []
    for i in range(rank):
        j = i - pad
        if j < 0 or view.shape[j] == 1:
            out.append(0)
        elif view.shape[j] != full[i]:
            raise ValueError(f"operand {list(view.shape)} does not broadcast to {list(full)}")
        else:
            out.append(view.strides[j])
    return out


def _geometry(
    step: Step, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]
) -> _Geometry:
    """The kernel's view of a step (raises ValueError with the reason)."""
    if len(in_shapes) not in (3, 4):
        raise ValueError(f"expected Q, K, V and an optional mask, got {len(in_shapes)} inputs")
    ops = [views.input_view(step, i, s) for i, s in enumerate(in_shapes)]
    out = views.output_view(step, out_shape)
    q, k, v = ops[:3]
    if min(len(q.shape), len(k.shape), len(v.shape), len(out.shape)) < 2:
        raise ValueError("Q, K, V and the result must have rank >= 2")
    rank = len(out.shape)
    sq, dv = out.shape[-2], out.shape[-1]
    sk, d = k.shape[-2], k.shape[-1]
    if q.shape[-1] != d or v.shape[-2] != sk or q.shape[-2] != sq or v.shape[-1] != dv:
        raise ValueError(
            f"Q {list(q.shape)}, K {list(k.shape)}, V {list(v.shape)} do not give {list(out.shape)}"
        )
    if 0 in (sq, sk, d, dv) or 0 in out.shape:
        raise ValueError("empty tensors")
    batch = list(out.shape[:-2])
    scores = (*batch, sq, sk)
    strides = [
        _aligned(q, rank, (*batch, sq, d)),
        _aligned(k, rank, (*batch, sk, d)),
        _aligned(v, rank, (*batch, sk, dv)),
    ]
    if len(ops) == 4:
        strides.append(_aligned(ops[3], rank, scores))
    else:
        strides.append([0] * rank)
    strides.append(_aligned(out, rank, out.shape))
    if any(s < 0 for st in strides for s in st):
        raise ValueError("negative strides")
    # Collapse batch dims: drop extent-1 dims, merge neighbours that every
    # operand steps through as one.
    dims = [(n, [st[i] for st in strides]) for i, n in enumerate(batch) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, st in dims:
        if merged and all(a == b * n for a, b in zip(merged[-1][1], st, strict=True)):
            merged[-1] = (merged[-1][0] * n, st)
        else:
            merged.append((n, st))
    if len(merged) > 2:
        raise ValueError(f"batch dims {batch} do not collapse to 2 for these operand layouts")
    while len(merged) < 2:
        merged.insert(0, (1, [0] * len(strides)))
    (nb0, s0), (nb1, s1) = merged
    offsets = [q.offset, k.offset, v.offset, ops[3].offset if len(ops) == 4 else 0, out.offset]
    params = tuple((offsets[x], s0[x], s1[x], strides[x][-2], strides[x][-1]) for x in range(5))
    return _Geometry(sq, sk, d, dv, nb0, nb1, params, len(ops) == 4)


def _head_dim(d: int, dv: int) -> int | None:
    return next((h for h in HEAD_DIMS if h >= max(d, dv)), None)


def _tiling(caps: DeviceCaps, g: _Geometry, dmax: int) -> tuple[int, int] | None:
    """(query rows, keys) per workgroup tile: the largest key tile that fits
    with some row count, then the most rows that still give TARGET_GROUPS
    workgroups (else the fewest rows)."""
    limit = min(caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0])
    for keys in KEY_TILES:
        fits = [
            r for r in ROWS
            if r * LANES <= limit
            and shared_bytes(r, keys, dmax) <= caps.max_compute_shared_memory_size
        ]  # fmt: skip
        for r in fits:
            if -(-g.sq // r) * g.nb0 * g.nb1 >= TARGET_GROUPS:
                return r, keys
        if fits:
            return fits[-1], keys
    return None


def gate_attention(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    kind = step.kind
    specs = [*(in_specs or ()), *step.out_specs]
    for s in specs:
        if s.dtype not in FLOAT_DTYPES:
            return f"{kind}: {s.dtype} tensors are not supported on Vulkan (float32/float16)"
    if len({s.dtype for s in specs}) > 1:
        return f"{kind}: mixed dtypes {sorted({s.dtype for s in specs})}"
    if in_specs is None:
        return None
    try:
        g = _geometry(step, [s.shape for s in in_specs], step.out_specs[0].shape)
    except ValueError as e:
        return f"{kind}: {e}"
    dmax = _head_dim(g.d, g.dv)
    if dmax is None:
        return f"{kind}: head dim {max(g.d, g.dv)} > {MAX_HEAD_DIM} (the kernel's largest)"
    tiling = _tiling(caps, g, dmax)
    if tiling is None:
        need = shared_bytes(ROWS[-1], KEY_TILES[-1], dmax)
        return (
            f"{kind}: head dim {max(g.d, g.dv)} needs {need} bytes of shared memory, "
            f"the device has {caps.max_compute_shared_memory_size}"
        )
    cnt = caps.max_compute_work_group_count
    if -(-g.sq // tiling[0]) > cnt[0] or g.nb0 * g.nb1 > cnt[1]:
        return f"{kind}: grid exceeds maxComputeWorkGroupCount"
    if _PUSH.size > caps.max_push_constants_size:
        return f"{kind}: needs {_PUSH.size} bytes of push constants"
    for s in specs:
        if math.prod(s.shape) >= 1 << 31:
            return f"{kind}: tensor '{s.name}' exceeds 32-bit indexing"
    return None


COOPMAT_HEAD_DIMS = (32, 64, 128)
"""attention_coopmat.comp's DMAX variants (multiples of 16)."""


def coopmat_shared_bytes(dmax: int) -> int:
    """attention_coopmat.comp's shared memory: Q (64 rows), K and V (32 rows)
    in fp16 rows of dmax + 8, S / O staging, P, and per-row alpha / sum."""
    rs = dmax + coopmat.PAD
    return 2 * (64 + 2 * 32) * rs + 4 * 16 * 32 * 4 + 4 * 16 * 40 * 2 + 2 * 64 * 4


def _coopmat_dmax(caps: DeviceCaps, variant: str, g: _Geometry) -> int | None:
    """The head-dim variant of the tensor-core kernel for `g`, None when it
    does not apply (no coopmat, fp32 storage, too few rows or keys for a
    16 x 16 block, head dims past 128, shared memory)."""
    if not coopmat.usable(caps, variant) or caps.subgroup_size not in (32, 64):
        return None
    if g.sq < 16 or g.sk < 16:
        return None
    dmax = next((h for h in COOPMAT_HEAD_DIMS if h >= max(g.d, g.dv)), None)
    if dmax is None or coopmat_shared_bytes(dmax) > caps.max_compute_shared_memory_size:
        return None
    return dmax


def _record_coopmat(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg], g: _Geometry,
    dmax: int,
) -> list[Dispatch]:  # fmt: skip
    # 64-bit loads: the head dim contiguous, every other stride, offset and head dim % 4.
    vec = all(
        prm[4] == 1 and all(x % 4 == 0 for x in prm[:4]) for prm in (g.params[i] for i in range(3))
    ) and g.d % 4 == 0 and g.dv % 4 == 0  # fmt: skip
    spec = ((1, dmax), (2, g.has_mask), (3, vec), (4, ctx.caps.subgroup_size))
    bindings = [
        ins[0].binding(), ins[1].binding(), ins[2].binding(),
        (ins[3] if g.has_mask else ins[0]).binding(), outs[0].binding(write=True),
    ]  # fmt: skip
    pipe = ctx.pipeline(
        "attention_coopmat", spec, len(bindings), _PUSH.size, coopmat.local_size(ctx.caps)
    )
    push = _PUSH.pack(
        g.sq, g.sk, g.d, g.dv, g.nb1, float(step.attrs["scale"]),
        *(x for operand in g.params for x in operand),
    )  # fmt: skip
    groups = (-(-g.sq // 64), g.nb0 * g.nb1, 1)
    label = f"{step.node} ({step.kind}, coopmat)"
    return [Dispatch(pipe, bindings, push, groups, ctx.op_index, label)]


def record_attention(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    g = _geometry(step, [a.shape for a in ins], outs[0].shape)
    cm = _coopmat_dmax(ctx.caps, ctx.variant, g)
    if cm is not None:
        return _record_coopmat(step, ctx, ins, outs, g, cm)
    dmax = _head_dim(g.d, g.dv)
    tiling = _tiling(ctx.caps, g, dmax) if dmax is not None else None
    assert dmax is not None and tiling is not None, "gated"
    rows, keys = tiling
    spec = ((1, rows), (2, LANES), (3, dmax), (4, g.has_mask), (5, keys))
    bindings = [
        ins[0].binding(), ins[1].binding(), ins[2].binding(),
        (ins[3] if g.has_mask else ins[0]).binding(), outs[0].binding(write=True),
    ]  # fmt: skip
    pipe = ctx.pipeline("attention", spec, len(bindings), _PUSH.size, rows * LANES)
    push = _PUSH.pack(
        g.sq, g.sk, g.d, g.dv, g.nb1, float(step.attrs["scale"]),
        *(x for operand in g.params for x in operand),
    )  # fmt: skip
    groups = (-(-g.sq // rows), g.nb0 * g.nb1, 1)
    return [Dispatch(pipe, bindings, push, groups, ctx.op_index, f"{step.node} ({step.kind})")]


# -- strided operands (views.fold_views) ---------------------------------------


def _batch_contiguous(view: views.View) -> bool:
    """Whether the view's batch dims (all but the last two) step like a
    row-major tensor's, so they collapse as a contiguous operand's would."""
    dims = [(n, s) for n, s in zip(view.shape[:-2], view.strides[:-2], strict=True) if n != 1]
    return all(a == b * n for (_, a), (n, b) in zip(dims, dims[1:], strict=False))


def _accept(view: views.View, batch_dims: int) -> bool:
    if any(s < 0 for s in view.strides) or len(view.shape) < 2:
        return False
    return batch_dims <= 2 or _batch_contiguous(view)


def _result_batch_dims(step: Step) -> int:
    shape = views.output_view(step, step.out_specs[0].shape).shape
    return sum(1 for n in shape[:-2] if n != 1)


def accept_input(step: Step, position: int, view: views.View) -> bool:
    return _accept(view, _result_batch_dims(step))


def accept_output(step: Step, view: views.View) -> bool:
    return _accept(view, sum(1 for n in view.shape[:-2] if n != 1))


register(KernelSpec("vx.attention", gate_attention, record_attention))
views.register_strided("vx.attention", accept_input, accept_output)
