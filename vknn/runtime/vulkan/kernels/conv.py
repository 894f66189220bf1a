"""Kernel specs of `vx.conv` (shaders/conv.comp, conv_direct.comp),
`vx.conv_transpose` (conv_transpose.comp) and `vx.batchnorm` (conv_bn.comp)
on logical NCHW tensors, fp32 or fp16 storage, fp32 accumulation.

Which conv kernel:
- an implicit GEMM tiled through shared memory (conv.comp) for every conv
  with enough output channels per group to fill a tile: 1x1 (specialized to
  a strided copy of the input), k x k, strided, dilated, padded, grouped;
- a direct kernel (conv_direct.comp), one invocation per output, for
  depthwise and other narrow groups (fewer than `GEMM_MIN_MG` output
  channels per group), where a GEMM tile would be mostly padding.

The weights are used in their given layout: [M, Cg, *K] row-major already is
the GEMM's [M, K] matrix and the direct kernel's per-channel filter, so
nothing is repacked (and non-constant weights work too). 1-D convs run as
2-D with H = 1; 3-D is refused. Shapes are push constants; only the tile
shape, the 1x1 fast path, the bias and the epilogue are specialization
constants, so a model needs a handful of pipelines.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.vulkan import epilogues
from vknn.runtime.vulkan.caps import DeviceCaps
from vknn.runtime.vulkan.commands import Dispatch
from vknn.runtime.vulkan.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    local_size,
    register,
)

GEMM_MIN_MG = 8
"""Output channels per group from which the GEMM kernel beats the direct one."""
BK = 16
"""conv.comp's K step (its shared tiles are BK x 64)."""
GEMM_SHARED_BYTES = 4 * BK * (65 + 64)

_GEMM_PUSH = struct.Struct("<18I")
_DIRECT_PUSH = struct.Struct("<18I")
_BN_PUSH = struct.Struct("<4If")


def _spatial(shape: tuple[int, ...]) -> tuple[int, int]:
    """(H, W) of an NCHW or NCW shape (1-D runs as H = 1)."""
    return (1, shape[2]) if len(shape) == 3 else (shape[2], shape[3])


def _pairs(values: tuple[int, ...] | list[int], rank: int, fill: int) -> tuple[int, int]:
    """A 1-D attribute as (h, w) with h = `fill`."""
    v = tuple(values)
    return (fill, v[0]) if rank == 1 else (v[0], v[1])


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _tensor_limits(kind: str, caps: DeviceCaps, shapes: list[tuple[int, ...]]) -> str | None:
    for shape in shapes:
        n = _numel(shape)
        if n >= 1 << 31:
            return f"{kind}: a tensor of {n} elements exceeds 32-bit indexing"
        if 4 * n > caps.max_storage_buffer_range:
            return (
                f"{kind}: a {4 * n}-byte tensor exceeds the device's maxStorageBufferRange "
                f"({caps.max_storage_buffer_range})"
            )
    return None


def _float_specs(kind: str, specs: list[TensorSpec]) -> str | None:
    for s in specs:
        if s.dtype not in FLOAT_DTYPES:
            return f"{kind}: {s.dtype} tensors are not supported on Vulkan (float32/float16)"
    if len({s.dtype for s in specs}) > 1:
        return f"{kind}: mixed dtypes {sorted({s.dtype for s in specs})}"
    return None


def _window_gate(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None) -> str | None:
    """What conv and conv_transpose share: dtypes, 1-D/2-D, limits, epilogue."""
    kind = step.kind
    out = step.out_specs[0]
    rank = len(out.shape) - 2
    if rank == 3:
        return f"{kind}: 3-D convolutions are not supported on Vulkan yet"
    if rank not in (1, 2):
        return f"{kind}: a rank-{rank + 2} output (1-D and 2-D convolutions only)"
    why = _float_specs(kind, [out, *(in_specs or [])])
    if why:
        return why
    own, _ = epilogues.split_inputs(step, list(in_specs or []))
    if in_specs is not None and len(own) < 2:
        return f"{kind}: expected input, weight and optional bias"
    why = _tensor_limits(kind, caps, [out.shape, *(s.shape for s in own)])
    if why:
        return why
    if _numel(out.shape) * max(1, own[0].shape[1] if own else 1) == 0:
        return f"{kind}: empty tensors"
    return epilogues.check(step, in_specs, _product(step))


def _product(step: Step) -> TensorSpec:
    """What the kernel computes before any epilogue (the epilogue keeps its shape)."""
    out = step.out_specs[0]
    return TensorSpec("product", out.shape, out.dtype)


def _geometry(
    step: Step, x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...]
) -> dict[str, int]:
    rank = len(y) - 2
    group = int(step.attrs["group"])
    h, wd = _spatial(x)
    oh, ow = _spatial(y)
    kh, kw = (1, w[2]) if rank == 1 else (w[2], w[3])
    sh, sw = _pairs(step.attrs["strides"], rank, 1)
    dh, dw = _pairs(step.attrs["dilations"], rank, 1)
    pads = tuple(step.attrs["pads"])
    ph, pw = (0, pads[0]) if rank == 1 else (pads[0], pads[1])
    return {
        "N": x[0], "C": x[1], "H": h, "W": wd, "M": y[1], "OH": oh, "OW": ow,
        "KH": kh, "KW": kw, "SH": sh, "SW": sw, "DH": dh, "DW": dw, "PH": ph, "PW": pw,
        "G": group, "Cg": x[1] // group, "Mg": y[1] // group,
    }  # fmt: skip


# -- vx.conv ----------------------------------------------------------------


def gate_conv(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    why = _window_gate(step, caps, in_specs)
    if why or in_specs is None:
        return why
    g = _geometry(step, in_specs[0].shape, in_specs[1].shape, step.out_specs[0].shape)
    if g["Mg"] >= GEMM_MIN_MG:
        if caps.max_compute_shared_memory_size < GEMM_SHARED_BYTES:
            return f"Conv: needs {GEMM_SHARED_BYTES} bytes of shared memory"
        tiles = -(-g["OH"] * g["OW"] // 32), -(-g["Mg"] // 32), g["N"] * g["G"]
        for axis, (n, limit) in enumerate(
            zip(tiles, caps.max_compute_work_group_count, strict=True)
        ):
            if n > limit:
                return f"Conv: {n} workgroups along axis {axis} exceed the device limit {limit}"
    return None


def _gemm_tile(caps: DeviceCaps, g: dict[str, int]) -> tuple[int, int]:
    """(TX, TY) threads of the GEMM workgroup: 16x16 (64x64 tiles) when that
    still gives enough workgroups to fill a big GPU at batch 1, else 8x8
    (32x32 tiles, 4x the workgroups)."""
    big = (
        caps.max_compute_work_group_invocations >= 256
        and caps.max_compute_work_group_size[0] >= 256
    )
    if big:
        count = -(-g["OH"] * g["OW"] // 64) * -(-g["Mg"] // 64) * g["N"] * g["G"]
        if count >= 128:
            return 16, 16
    return 8, 8


def _record_gemm(
    step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg, b: TensorArg | None, y: TensorArg,
    extra: list[TensorArg], g: dict[str, int],
) -> list[Dispatch]:  # fmt: skip
    tx, ty = _gemm_tile(ctx.caps, g)
    pointwise = (
        g["KH"] == g["KW"] == g["SH"] == g["SW"] == 1 and g["PH"] == g["PW"] == 0
        and g["OH"] == g["H"] and g["OW"] == g["W"]
    )  # fmt: skip
    spec = ((1, tx), (2, ty), (3, pointwise), (4, b is not None))
    shader, epi = epilogues.variant("conv", step, _product(step), extra, 4)
    pipe = ctx.pipeline(shader, spec, 4 + len(epi), _GEMM_PUSH.size, tx * ty)
    k = g["Cg"] * g["KH"] * g["KW"]
    push = _GEMM_PUSH.pack(
        g["C"], g["H"], g["W"], g["M"], g["OH"], g["OW"], g["Cg"], g["Mg"], k,
        g["KH"], g["KW"], g["G"], g["SH"], g["SW"], g["DH"], g["DW"], g["PH"], g["PW"],
    )  # fmt: skip
    groups = (-(-g["OH"] * g["OW"] // (4 * tx)), -(-g["Mg"] // (4 * ty)), g["N"] * g["G"])
    binds = [x.binding(), w.binding(), (b or w).binding(), y.binding(write=True), *epi]
    return [Dispatch(pipe, binds, push, groups, ctx.op_index, f"{step.node} (Conv gemm)")]


def _record_direct(
    shader: str, label: str, step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg,
    b: TensorArg | None, y: TensorArg, extra: list[TensorArg], g: dict[str, int],
) -> list[Dispatch]:  # fmt: skip
    name, epi = epilogues.variant(shader, step, _product(step), extra, 4)
    pipe = ctx.pipeline(
        name, ((1, b is not None),), 4 + len(epi), _DIRECT_PUSH.size, local_size(ctx.caps)
    )
    n = y.size
    tail = (
        g["C"], g["H"], g["W"], g["M"], g["OH"], g["OW"], g["Cg"], g["Mg"],
        g["KH"], g["KW"], g["SH"], g["SW"], g["DH"], g["DW"], g["PH"], g["PW"],
    )  # fmt: skip
    binds = [x.binding(), w.binding(), (b or w).binding(), y.binding(write=True), *epi]
    push: Callable[[int], bytes] = lambda base: _DIRECT_PUSH.pack(n, base, *tail)  # noqa: E731
    return flat_dispatches(pipe, binds, n, push, ctx.caps, ctx.op_index, f"{step.node} ({label})")


def _operands(
    step: Step, ins: list[TensorArg]
) -> tuple[TensorArg, TensorArg, TensorArg | None, list[TensorArg]]:
    own, extra = epilogues.split_inputs(step, ins)
    return own[0], own[1], (own[2] if len(own) > 2 else None), extra


def record_conv(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, w, b, extra = _operands(step, ins)
    y = outs[0]
    g = _geometry(step, x.shape, w.shape, y.shape)
    if g["Mg"] >= GEMM_MIN_MG:
        return _record_gemm(step, ctx, x, w, b, y, extra, g)
    return _record_direct("conv_direct", "Conv direct", step, ctx, x, w, b, y, extra, g)


# -- vx.conv_transpose ------------------------------------------------------


def gate_conv_transpose(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    return _window_gate(step, caps, in_specs)


def record_conv_transpose(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, w, b, extra = _operands(step, ins)
    y = outs[0]
    g = _geometry(step, x.shape, w.shape, y.shape)
    # The weight is [C, Mg, *K]: the geometry's kernel dims are right, the
    # channel split comes from the weight, not from conv's [M, Cg, *K].
    g["Cg"] = g["C"] // g["G"]
    g["Mg"] = w.shape[1]
    return _record_direct("conv_transpose", "ConvTranspose", step, ctx, x, w, b, y, extra, g)


# -- vx.batchnorm -----------------------------------------------------------


def gate_batchnorm(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    out = step.out_specs[0]
    why = _float_specs(step.kind, [out, *(in_specs or [])])
    if why:
        return why
    if len(out.shape) < 2:
        return f"{step.kind}: rank {len(out.shape)} (needs [N, C, ...])"
    return _tensor_limits(step.kind, caps, [out.shape])


def record_batchnorm(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    y = outs[0]
    pipe = ctx.pipeline("conv_bn", (), 6, _BN_PUSH.size, local_size(ctx.caps))
    n = y.size
    c = y.shape[1]
    inner = math.prod(y.shape[2:])
    eps = float(step.attrs["epsilon"])
    binds = [a.binding() for a in ins[:5]] + [y.binding(write=True)]
    return flat_dispatches(
        pipe, binds, n, lambda base: _BN_PUSH.pack(n, base, c, inner, eps), ctx.caps,
        ctx.op_index, f"{step.node} (BatchNormalization)",
    )  # fmt: skip


register(KernelSpec("vx.conv", gate_conv, record_conv))
register(KernelSpec("vx.conv_transpose", gate_conv_transpose, record_conv_transpose))
register(KernelSpec("vx.batchnorm", gate_batchnorm, record_batchnorm))
epilogues.register_host("vx.conv")
epilogues.register_host("vx.conv_transpose")
