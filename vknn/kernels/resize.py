"""Kernel spec of `vx.resize` (glsl/resize.comp): nearest (every nearest
mode) and N-linear, every coordinate mode `vx` keeps, up to 6 dims; cubic is
refused (it stays on the CPU).

The per-axis source indices and weights are computed here, on the host, in
the CPU oracle's f32 operation order (`source_coords`), and uploaded once as
a table (`RecordContext.table`): nearest mode is decided by exact ties
(x.5), which the device's division (2.5 ulp in Vulkan) could move.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import struct

import numpy as np

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    register,
)
from vknn.kernels.data_movement import check_specs, label, pipeline, row_strides
from vknn.kernels.records import Binding, Dispatch
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.resize_coords import nearest_index, source_coords
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.dtypes import is_float

RANK = 6
COORDINATE_MODES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "half_pixel_symmetric",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_PUSH = struct.Struct(f"<III{RANK}I{RANK}i{RANK}i")
F32 = np.float32


def axis_table(step: Step, in_len: int, out_len: int, scale: float) -> tuple[np.ndarray, bool]:
    """[out_len, 3] int32 rows (i0, i1, bits of w1) of one axis, and whether
    the axis interpolates (linear with some non-zero weight)."""
    a = step.attrs
    o = np.arange(out_len)
    if in_len == out_len and scale == 1.0:  # an unscaled axis maps to itself
        i0, i1, w = o, o, np.zeros(out_len, F32)
    else:
        x = source_coords(a["coordinate_mode"], out_len, in_len, scale)
        last = in_len - 1
        if a["mode"] == "nearest":
            i0 = np.clip(nearest_index(x, a["nearest_mode"]), 0, last)
            i1, w = i0, np.zeros(out_len, F32)
        else:
            xc = np.clip(x, F32(0), F32(last))
            i0 = np.minimum(np.floor(xc).astype(np.int64), last)
            i1 = np.minimum(i0 + 1, last)
            w = (xc.astype(np.float64) - i0).astype(F32)
    rows = np.stack([i0.astype(np.int32), i1.astype(np.int32), w.view(np.int32)], axis=1)
    return rows, bool(np.any(w != 0))


def gate_resize(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why:
        return why
    a = step.attrs
    if a.get("mode") not in ("nearest", "linear"):
        return f"{step.kind}: mode '{a.get('mode')}' has no Vulkan kernel (nearest, linear)"
    if a.get("coordinate_mode") not in COORDINATE_MODES:
        return f"{step.kind}: coordinate mode '{a.get('coordinate_mode')}' has no Vulkan kernel"
    if a["mode"] == "nearest" and a.get("nearest_mode") not in NEAREST_MODES:
        return f"{step.kind}: nearest mode '{a.get('nearest_mode')}' has no Vulkan kernel"
    if a["mode"] == "linear" and not is_float(step.out_specs[0].dtype):
        return f"{step.kind}: linear resize of {step.out_specs[0].dtype} tensors"
    if len(step.out_specs[0].shape) > RANK:
        return f"{step.kind}: rank {len(step.out_specs[0].shape)} > {RANK}"
    if in_specs is not None and 0 in in_specs[0].shape:
        return f"{step.kind}: empty input"
    return None


def record_resize(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    if ctx.table is None:
        raise ValueError("vx.resize needs a caller that stores tables (RecordContext.table)")
    rank = len(x.shape)
    lead = RANK - rank
    scales = [float(s) for s in step.attrs["scales"]]
    tables, toff, mask, at = [], [0] * RANK, 0, 0
    for d in range(rank):
        rows, interp = axis_table(step, x.shape[d], y.shape[d], scales[d])
        toff[lead + d] = at
        at += rows.size
        tables.append(rows.reshape(-1))
        if interp and step.attrs["mode"] == "linear":
            mask |= 1 << (lead + d)
    # Leading pad dims: size 1, index 0, weight 0.
    tables.append(np.zeros(3, np.int32))
    for d in range(lead):
        toff[d] = at
    table = ctx.table(np.concatenate(tables).astype(np.int32))
    odims = [1] * lead + list(y.shape)
    istr = [0] * lead + row_strides(x.shape)
    n = y.size
    if n == 0:
        return []
    linear = step.attrs["mode"] == "linear" and mask != 0
    pipe = pipeline(ctx, "resize", y.dtype, ((1, linear),), 3, _PUSH.size)
    tbind = Binding(table.buffer, table.offset, table.nbytes)
    return flat_dispatches(
        pipe,
        [x.binding(), tbind, y.binding(write=True)],
        n,
        lambda base: _PUSH.pack(n, base, mask, *odims, *istr, *toff),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


register(KernelSpec("vx.resize", gate_resize, record_resize, int64="words"))
