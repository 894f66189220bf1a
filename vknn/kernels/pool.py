"""Kernel specs of `vx.pool` (glsl/pool.comp, pool_global.comp) and
`vx.lrn` (glsl/lrn.comp) on logical NCHW tensors, fp32 or fp16 storage.

A pool whose window is the whole plane (a global pool: output 1x1, no pads)
is a reduction per (n, c) plane, done by `LANES` cooperating invocations
(pool_global.comp) sized to the plane, so 7x7 and 56x56 planes both keep
the GPU busy; every other pool is one invocation per output (pool.comp).
Max / avg (count_include_pad or not) / Lp, ceil mode and dilation follow the
CPU oracle (vknn/oracle/pool.py); 1-D pools run as 2-D with H = 1.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    epilogues,
    flat_dispatches,
    local_size,
    register,
    units_per_binding,
)
from vknn.kernels.conv import _float_specs, _tensor_limits
from vknn.kernels.layouts import Nc4hw4Io, packable, packed_numel, same_shape_positions
from vknn.kernels.records import Dispatch, TensorRef
from vknn.kernels.shaders import shader_enum
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

_POOL_PUSH = struct.Struct("<17If")
_GLOBAL_PUSH = struct.Struct("<4If")
_LRN_PUSH = struct.Struct("<5I3f")


def pool_kinds() -> dict[str, int]:
    return shader_enum("pool", "POOL")


def _is_global(step: Step, x: tuple[int, ...], y: tuple[int, ...]) -> bool:
    a = step.attrs
    return all(d == 1 for d in y[2:]) and not any(a["pads"]) and tuple(a["kernel"]) == tuple(x[2:])


def gate_pool(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    kind = step.kind
    out = step.out_specs[0]
    if step.attrs.get("kind") not in pool_kinds():
        return f"{kind}: pool kind {step.attrs.get('kind')!r} has no Vulkan shader"
    rank = len(step.attrs["kernel"])
    if rank not in (1, 2):
        return f"{kind}: {rank}-D pools are not supported on Vulkan yet (1-D and 2-D)"
    own, _ = epilogues.split_inputs(step, list(in_specs or []))
    why = _float_specs(kind, [out, *(in_specs or [])])
    if why:
        return why
    sliced = in_specs is not None and sliced_pool_refusal(step, caps, in_specs) is None
    why = _tensor_limits(kind, caps, [out.shape, *(s.shape for s in own)], not sliced)
    if why:
        return why
    if math.prod(out.shape) == 0:
        return f"{kind}: empty tensors"
    return epilogues.check(step, in_specs, TensorSpec("product", out.shape, out.dtype))


def _lanes(hw: int, wg: int) -> int:
    """Invocations per plane of a global pool: about 8-16 elements each for
    big planes, never more than the workgroup."""
    lanes = 32
    while lanes < wg and lanes * 16 < hw:
        lanes *= 2
    return min(lanes, wg)


def sliced_pool_refusal(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec]) -> str | None:
    """Why a 2-D pool with a tensor past maxStorageBufferRange cannot run as
    blocks of planes (`_record_sliced`); None when it can."""
    x, y = in_specs[0].shape, step.out_specs[0].shape
    if len(x) != 4:
        return "only 2-D pools are split"
    if epilogues.epilogue_of(step) is not None:
        return "a fused epilogue is not split (it runs as its own step)"
    for es in (2, 4):
        if units_per_binding([es * x[2] * x[3], es * y[2] * y[3]], caps) <= 0:
            return "one aligned block of planes is past the range"
    return None


def _record_sliced(step: Step, ctx: RecordContext, x: TensorArg, y: TensorArg) -> list[Dispatch]:
    """A pool past maxStorageBufferRange: the planes (N*C of them, each pooled
    on its own) in blocks whose x and y parts each fit one binding."""
    es = y.ref.nbytes // max(1, y.size)
    planes = x.shape[0] * x.shape[1]
    xp, yp = es * x.shape[2] * x.shape[3], es * y.shape[2] * y.shape[3]
    per = units_per_binding([xp, yp], ctx.caps)
    if per <= 0:
        raise ValueError(f"{step.node}: the gate should have refused this pool")
    ops: list[Dispatch] = []
    for p0 in range(0, planes, per):
        n = min(per, planes - p0)
        xb = TensorArg(
            TensorRef(x.ref.buffer, x.ref.offset + p0 * xp, n * xp), (1, n, *x.shape[2:]), x.dtype
        )
        yb = TensorArg(
            TensorRef(y.ref.buffer, y.ref.offset + p0 * yp, n * yp), (1, n, *y.shape[2:]), y.dtype
        )
        ops += record_pool(step, ctx, [xb], [yb])
    return ops


def record_pool(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    own, extra = epilogues.split_inputs(step, ins)
    x, y = own[0], outs[0]
    if max(x.ref.nbytes, y.ref.nbytes) > ctx.caps.max_storage_buffer_range:
        return _record_sliced(step, ctx, x, y)
    a = step.attrs
    kind = pool_kinds()[a["kind"]]
    lp = float(a.get("p") or 2)
    product = TensorSpec("product", y.shape, y.dtype)
    binds = [x.binding(), y.binding(write=True)]
    label = f"{step.node} ({step.kind})"
    c = x.shape[1]
    if _is_global(step, x.shape, y.shape):
        wg = 1 << (local_size(ctx.caps).bit_length() - 1)  # a power of two
        hw = math.prod(x.shape[2:])
        lanes = _lanes(hw, wg)
        shader, epi = epilogues.variant("pool_global", step, product, extra, 2)
        binds += epi
        spec: tuple[tuple[int, int | bool], ...] = ((1, kind), (2, lanes))
        if x.packed:
            spec += ((3, True),)
        pipe = ctx.pipeline(shader, spec, len(binds), _GLOBAL_PUSH.size, wg)
        planes = x.shape[0] * c
        per_group = wg // lanes
        groups = -(-planes // per_group)
        limit = ctx.caps.max_compute_work_group_count[0]
        out = []
        for first in range(0, groups, limit):
            count = min(limit, groups - first)
            push = _GLOBAL_PUSH.pack(planes, first * per_group, hw, c, lp)
            out.append(Dispatch(pipe, binds, push, (count, 1, 1), ctx.op_index, label))
        return out
    rank = len(a["kernel"])
    h, w = (1, x.shape[2]) if rank == 1 else x.shape[2:4]
    oh, ow = (1, y.shape[2]) if rank == 1 else y.shape[2:4]

    def hw2(v: tuple[int, ...], fill: int) -> tuple[int, int]:
        return (fill, v[0]) if rank == 1 else (v[0], v[1])

    kh, kw = hw2(tuple(a["kernel"]), 1)
    sh, sw = hw2(tuple(a["strides"]), 1)
    dh, dw = hw2(tuple(a["dilations"]), 1)
    pads = tuple(a["pads"])
    pt, pl = hw2(pads[:rank], 0)
    pb, pr = hw2(pads[rank:], 0)
    spec = ((1, kind), (2, bool(a["count_include_pad"])))
    if y.packed:
        spec += ((3, True),)
    shader, epi = epilogues.variant("pool", step, product, extra, 2)
    binds += epi
    pipe = ctx.pipeline(shader, spec, len(binds), _POOL_PUSH.size, local_size(ctx.caps))
    # Packed: one invocation per element of y's storage (padded lanes exit).
    n = packed_numel(y.shape) if y.packed else y.size
    tail = (c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr)
    return flat_dispatches(
        pipe, binds, n, lambda base: _POOL_PUSH.pack(n, base, *tail, lp), ctx.caps,
        ctx.op_index, label,
    )  # fmt: skip


# -- vx.lrn -----------------------------------------------------------------


def gate_lrn(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    out = step.out_specs[0]
    why = _float_specs(step.kind, [out, *(in_specs or [])])
    return why or _tensor_limits(step.kind, caps, [out.shape])


def record_lrn(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    a = step.attrs
    pipe = ctx.pipeline("lrn", (), 2, _LRN_PUSH.size, local_size(ctx.caps))
    n = y.size
    c, inner = y.shape[1], math.prod(y.shape[2:])
    size, alpha, beta, bias = int(a["size"]), float(a["alpha"]), float(a["beta"]), float(a["bias"])
    return flat_dispatches(
        pipe, [x.binding(), y.binding(write=True)], n,
        lambda base: _LRN_PUSH.pack(n, base, c, inner, size, alpha, beta, bias), ctx.caps,
        ctx.op_index, f"{step.node} (LRN)",
    )  # fmt: skip


def pool_nc4hw4(step: Step, in_specs: list[TensorSpec]) -> Nc4hw4Io | None:
    """2-D pools read x packed; windowed ones write y packed (epilogue
    inputs of y's shape packed too), global ones write y row-major [N, C, 1, 1]."""
    x, y = in_specs[0], step.out_specs[0]
    if not packable(x) or not packable(y):
        return None
    if _is_global(step, tuple(x.shape), tuple(y.shape)):
        return frozenset({0}), frozenset()  # an epilogue reads y's row-major index
    extra = same_shape_positions(y, in_specs, range(1, len(in_specs)))
    if extra is None:
        return None
    return frozenset({0}) | extra, frozenset({0})


register(
    KernelSpec(
        "vx.pool", gate_pool, record_pool, nc4hw4=pool_nc4hw4, splits_large=sliced_pool_refusal
    )
)
register(KernelSpec("vx.lrn", gate_lrn, record_lrn))
epilogues.register_host("vx.pool")
