"""Kernel specs of `vx.conv` (glsl/conv.comp, conv_direct.comp),
`vx.conv_transpose` (conv_transpose.comp) and `vx.batchnorm` (conv_bn.comp)
on logical NCHW tensors, fp32 or fp16 storage, fp32 accumulation.

Which conv kernel:
- an implicit GEMM tiled through shared memory (conv.comp) for every conv
  with enough output channels per group to fill a tile: 1x1 (specialized to
  a strided copy of the input), k x k, strided, dilated, padded, grouped;
- a direct kernel (conv_direct.comp), one invocation per output, for
  depthwise and other narrow groups (fewer than `GEMM_MIN_MG` output
  channels per group), where a GEMM tile would be mostly padding.

Batch-1 grids are small (ResNet-50's last stage is 7x7 pixels: eight 64x64
tiles for 132 SMs), so a GEMM whose grid is under `SPLITK_TARGET`
workgroups splits K: conv.comp built with VKNN_SPLITK writes fp32 partial
products of K slices to a scratch buffer the executor owns
(`RecordContext.scratch`, live for the op alone) and
splitk_reduce.comp sums them in a fixed order with bias and epilogue.

Tile, split count and direct vs GEMM above are the heuristic's choice;
`conv_space` lists the alternatives valid on the device, which
`Config.autotune` measures (vulkan/autotune.py) and the recorder then takes
from the autotune table (`TuningSpace.choose`).

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
import os
import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from vknn.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    TuneConfig,
    TuningSpace,
    coopmat,
    epilogues,
    flat_dispatches,
    local_size,
    register,
    units_per_binding,
)
from vknn.kernels.layouts import Nc4hw4Io, packable, packed_numel, same_shape_positions
from vknn.kernels.records import Binding, Dispatch, TensorRef
from vknn.kernels.shaders import register_variant
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

GEMM_MIN_MG = 8
"""Output channels per group from which the GEMM kernel beats the direct one."""
BK = 16
"""conv.comp's K step (its shared tiles are BK x 64)."""
GEMM_SHARED_BYTES = 4 * BK * (65 + 64)

SPLITK_TARGET = 256
"""Workgroups a conv GEMM grid should reach (about 2 per SM of a big GPU)
before K is split."""
SPLITK_MIN_STEPS = 4
"""BK steps each K slice keeps at least."""
SPLITK_MAX = 64
SPLITK_SCRATCH_FLOATS = 1 << 22
"""Largest partial-product buffer (16 MiB) a split may use."""

_GEMM_PUSH = struct.Struct("<22I")
_REDUCE_PUSH = struct.Struct("<7I2f")
_DIRECT_PUSH = struct.Struct("<21I")  # conv_direct.comp / conv_transpose.comp Params
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


def _tensor_limits(
    kind: str, caps: DeviceCaps, shapes: list[tuple[int, ...]], check_range: bool = True
) -> str | None:
    for shape in shapes:
        n = _numel(shape)
        if n >= 1 << 31:
            return f"{kind}: a tensor of {n} elements exceeds 32-bit indexing"
        if check_range and 4 * n > caps.max_storage_buffer_range:
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
    # A conv the recorder can slice (kernels.gate asked) may pass the range.
    sliced = (
        step.op == "vx.conv"
        and in_specs is not None
        and sliced_conv_refusal(step, caps, in_specs) is None
    )
    why = _tensor_limits(kind, caps, [out.shape, *(s.shape for s in own)], not sliced)
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
    """(TX, TY) threads of the GEMM workgroup: 16x16 (64x64 tiles) on devices
    with 256-invocation workgroups unless the output has at most 32 channels
    or pixels per group (a 64 tile would be mostly padding; split-K fills a
    big GPU otherwise), else 8x8 (32x32 tiles)."""
    big = (
        caps.max_compute_work_group_invocations >= 256
        and caps.max_compute_work_group_size[0] >= 256
    )
    if big and g["Mg"] > 32 and g["OH"] * g["OW"] > 32:
        return 16, 16
    return 8, 8


def _magic(d: int, k: int) -> int:
    """ceil(2^32 / d) when multiply-high division by it is exact for every
    dividend below `k` (k * d <= 2^32), else 0 (the shader divides)."""
    if d <= 1 or k * d > 1 << 32:
        return 0
    return -(-(1 << 32) // d)


def splits_for(
    ctx: RecordContext, k: int, groups: tuple[int, int, int], total: int
) -> tuple[int, int]:
    """(splits, kchunk) of a GEMM with grid `groups` (z is multiplied by the
    splits), K = `k` and `total` outputs: 1 slice of all of K unless the
    grid is small and K is long."""
    splits = heuristic_splits(ctx.caps, ctx.splitk, k, groups, total)
    return splits, kchunk_for(k, splits)


def heuristic_splits(
    caps: DeviceCaps, splitk: bool, k: int, groups: tuple[int, int, int], total: int
) -> int:
    """`splits_for`'s count, from the device and whether split-K is available."""
    wgs = math.prod(groups)
    steps = -(-k // BK)
    if not splitk or wgs >= SPLITK_TARGET or steps < 2 * SPLITK_MIN_STEPS:
        return 1
    want = min(
        -(-SPLITK_TARGET // wgs), steps // SPLITK_MIN_STEPS, split_cap(caps, k, groups, total)
    )
    return 1 if want < 2 else normalize_splits(k, want)


def split_cap(caps: DeviceCaps, k: int, groups: tuple[int, int, int], total: int) -> int:
    """The most K slices a GEMM may use: one BK step each at least, the
    scratch budget, the binding range, the z group count, and the sum
    pass's x group count."""
    if -(-total // local_size(caps)) > caps.max_compute_work_group_count[0]:
        return 1
    return max(1, min(
        -(-k // BK), SPLITK_MAX, SPLITK_SCRATCH_FLOATS // max(1, total),
        caps.max_storage_buffer_range // max(1, 4 * total),
        caps.max_compute_work_group_count[2] // groups[2],
    ))  # fmt: skip


def normalize_splits(k: int, splits: int) -> int:
    """The slices that a request for `splits` yields: K is cut into equal
    whole-BK chunks, so e.g. 3 BK steps asked for 2 slices still make 2, and
    5 slices of 6 steps make 3."""
    steps = -(-k // BK)
    return -(-steps // -(-steps // max(1, splits)))


def kchunk_for(k: int, splits: int) -> int:
    """The K of each of `splits` (normalized) slices: all of K when unsplit."""
    if splits <= 1:
        return k
    steps = -(-k // BK)
    return -(-steps // splits) * BK


def split_options(
    caps: DeviceCaps, splitk: bool, k: int, groups: tuple[int, int, int], total: int
) -> list[int]:
    """Every split count a tuner may try for this grid, ascending: 1, the
    powers of two up to `split_cap` (normalized) and the heuristic's."""
    if not splitk:
        return [1]
    cap = split_cap(caps, k, groups, total)
    out = {1, heuristic_splits(caps, splitk, k, groups, total)}
    s = 2
    while s <= min(cap, SPLITK_MAX):
        out.add(normalize_splits(k, s))
        s *= 2
    return sorted(x for x in out if x <= cap)


def split_neighbours(options: list[int], splits: int) -> list[int]:
    """`splits` and the options next to it (the fast tuner's split-K candidates)."""
    i = options.index(splits)
    return [splits, *options[i + 1 : i + 2], *options[max(0, i - 1) : i]]


class OpPhase(int):
    """The op_index of an op's later pass (split-K's sum): it indexes the same
    step (profiles label it with its node), but compares unequal to the op's
    first pass, so hazard tracking, which never separates dispatches of one
    op, puts a barrier between the passes."""

    phase: int

    def __new__(cls, index: int, phase: int) -> OpPhase:
        obj = super().__new__(cls, index)
        obj.phase = phase
        return obj

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, int):
            return NotImplemented
        return int(self) == int(other) and getattr(other, "phase", 0) == self.phase

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = int.__hash__


def scratch(ctx: RecordContext, floats: int) -> TensorRef:
    """fp32 memory of `floats` elements for this op's split-K partial sums
    (`RecordContext.scratch`: an allocation live for this op alone)."""
    assert ctx.scratch is not None
    return ctx.scratch(4 * floats)


def record_splitk_reduce(
    step: Step, ctx: RecordContext, part: TensorRef, splits: int, total: int,
    kind: int, bias: Binding | None, y: TensorArg, extra: list[Any],
    product: TensorSpec, params: tuple[int, int, int, int, float, float],
    packed: bool = False,
) -> list[Dispatch]:  # fmt: skip
    """The second pass of a split-K GEMM: y = epilogue(sum of `splits`
    partials + bias / C), `params` = (inner, chans, c_sm, c_sn, alpha, beta)
    as splitk_reduce.comp reads them; `packed`: a conv's y is NC4HW4."""
    name, epi = epilogues.variant("splitk_reduce", step, product, extra, 3)
    spec: tuple[tuple[int, int | bool], ...] = ((1, kind), (2, True)) if packed else ((1, kind),)
    pipe = ctx.pipeline(name, spec, 3 + len(epi), _REDUCE_PUSH.size, local_size(ctx.caps))
    binds = [
        Binding(part.buffer, part.offset, 4 * splits * total),
        bias or y.binding(),
        y.binding(write=True),
        *epi,
    ]
    inner, chans, c_sm, c_sn, alpha, beta = params
    return flat_dispatches(
        pipe, binds, total,
        lambda base: _REDUCE_PUSH.pack(total, base, splits, inner, chans, c_sm, c_sn, alpha, beta),
        ctx.caps, OpPhase(ctx.op_index, 1), f"{step.node} ({step.kind} split-K sum)",
    )  # fmt: skip


# -- autotuning: the configs a conv may record with (vknn/tuning.py) --

GEMM_TILES = ((16, 16), (16, 8), (8, 16), (8, 8))
"""conv.comp's (TX, TY): each 8 or 16 (its 4x4 register blocks must fit the
64-wide shared tiles, and each thread loads at most MAX_LOADS = 8 elements)."""
DIRECT_LOCAL_SIZES = (256, 128, 64)


def _gemm_groups(g: dict[str, int], tx: int, ty: int) -> tuple[int, int, int]:
    return (-(-g["OH"] * g["OW"] // (4 * tx)), -(-g["Mg"] // (4 * ty)), g["N"] * g["G"])


def _gemm_configs(
    caps: DeviceCaps, g: dict[str, int], total: int, splitk: bool,
    tiles: tuple[tuple[int, int], ...],
) -> list[TuneConfig]:  # fmt: skip
    """Implicit-GEMM configs of `tiles` (x every split count) valid on the device."""
    if caps.max_compute_shared_memory_size < GEMM_SHARED_BYTES:
        return []
    k = g["Cg"] * g["KH"] * g["KW"]
    most = min(caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0])
    out: list[TuneConfig] = []
    for tx, ty in tiles:
        groups = _gemm_groups(g, tx, ty)
        if tx * ty > most or any(
            n > lim for n, lim in zip(groups, caps.max_compute_work_group_count, strict=True)
        ):
            continue
        for s in split_options(caps, splitk, k, groups, total):
            out.append({"algo": "gemm", "tx": tx, "ty": ty, "splits": s})
    return out


def _gemm_at(
    caps: DeviceCaps, g: dict[str, int], total: int, splitk: bool, tile: tuple[int, int]
) -> TuneConfig:
    """The GEMM config with tile `tile` and the split heuristic's count for it."""
    k = g["Cg"] * g["KH"] * g["KW"]
    splits = heuristic_splits(caps, splitk, k, _gemm_groups(g, *tile), total)
    return {"algo": "gemm", "tx": tile[0], "ty": tile[1], "splits": splits}


def conv_space(
    step: Step, caps: DeviceCaps, in_specs: list[Any], variant: str, splitk: bool
) -> TuningSpace:
    """The tuning space of a `vx.conv` step (`in_specs`: its present inputs,
    `TensorSpec`s or `TensorArg`s): the implicit GEMM's tile and split-K, the
    direct kernel's workgroup size, and direct vs GEMM near the threshold.
    fast: the heuristic's config, its split-K neighbours, the other square
    tile, and the other algorithm where Mg is near GEMM_MIN_MG."""
    own, _ = epilogues.split_inputs(step, in_specs)
    y = tuple(step.out_specs[0].shape)
    g = _geometry(step, tuple(own[0].shape), tuple(own[1].shape), y)
    total = _numel(y)
    ls = local_size(caps)
    direct: list[TuneConfig] = [{"algo": "direct", "ls": ls}]
    direct += [
        {"algo": "direct", "ls": n}
        for n in DIRECT_LOCAL_SIZES
        if n != ls and n == local_size(caps, n)
    ]  # fmt: skip
    if g["Mg"] >= GEMM_MIN_MG:
        tile = _gemm_tile(caps, g)
        default = _gemm_at(caps, g, total, splitk, tile)
        k = g["Cg"] * g["KH"] * g["KW"]
        options = split_options(caps, splitk, k, _gemm_groups(g, *tile), total)
        fast = [{**default, "splits": s} for s in split_neighbours(options, default["splits"])]
        fast.append(_gemm_at(caps, g, total, splitk, (8, 8) if tile == (16, 16) else (16, 16)))
        if g["Mg"] < 2 * GEMM_MIN_MG:
            fast.append(direct[0])
        thorough = _gemm_configs(caps, g, total, splitk, GEMM_TILES) + direct
        cm = coopmat.space(
            caps, variant, splitk, g["Mg"], g["OH"] * g["OW"], k, g["N"] * g["G"], total
        )
        if cm is not None:
            # Tensor-core convs (fp16 storage) are autotune candidates, not the
            # default: as the default on the H200 (torchvision ResNet-50, batch
            # 64, low) conv_coopmat ran 40.7 ms against the scalar GEMM's
            # 36.1 ms (docs/performance.md, ADR 0009). Products and attention
            # measured faster on tensor cores and keep them as the default.
            fast = [*fast, cm[0], *cm[1]]
            thorough = thorough + cm[2]
            if os.environ.get("VKNN_COOPMAT_CONV") == "1":  # coopmat_check, device tests
                default = cm[0]
                thorough = [default] + [c for c in thorough if c != default]
    else:
        default = direct[0]
        # The GEMM wastes most of a tile on narrow groups; depthwise never tries it.
        grid = _gemm_configs(caps, g, total, splitk, GEMM_TILES) if g["Mg"] >= 2 else []
        fast = [default]
        if g["Mg"] >= GEMM_MIN_MG // 2 and grid:
            fast.append(_gemm_at(caps, g, total, splitk, (8, 8)))
        thorough = direct + grid
    thorough = [default] + [c for c in thorough if c != default]
    fast = [c for i, c in enumerate(fast) if c in thorough and c not in fast[:i]]
    epi = epilogues.epilogue_of(step) is not None
    key = (
        f"{step.op}|conv|{variant}|x{g['N']}x{g['C']}x{g['H']}x{g['W']}|m{g['M']}g{g['G']}"
        f"|k{g['KH']}x{g['KW']}s{g['SH']}x{g['SW']}d{g['DH']}x{g['DW']}p{g['PH']}x{g['PW']}"
        f"|y{g['OH']}x{g['OW']}|b{int(len(own) > 2)}e{int(epi)}"
    )
    grouped = f" g{g['G']}" if g["G"] > 1 else ""
    label = (
        f"Conv {g['C']}x{g['H']}x{g['W']} {g['KH']}x{g['KW']}/{g['SH']}{grouped}"
        f" -> {g['M']}x{g['OH']}x{g['OW']}"
    )
    return TuningSpace(key, label, default, tuple(fast), tuple(thorough))


def _tune_conv(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec], variant: str, splitk: bool
) -> TuningSpace | None:
    return conv_space(step, caps, in_specs, variant, splitk)


def _record_gemm(
    step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg, b: TensorArg | None, y: TensorArg,
    extra: list[TensorArg], g: dict[str, int], cfg: TuneConfig,
) -> list[Dispatch]:  # fmt: skip
    tx, ty = int(cfg["tx"]), int(cfg["ty"])
    pointwise = (
        g["KH"] == g["KW"] == g["SH"] == g["SW"] == 1 and g["PH"] == g["PW"] == 0
        and g["OH"] == g["H"] and g["OW"] == g["W"]
    )  # fmt: skip
    spec = ((1, tx), (2, ty), (3, pointwise), (4, b is not None), (5, y.packed))
    k = g["Cg"] * g["KH"] * g["KW"]
    p_count = g["OH"] * g["OW"]
    groups = (-(-p_count // (4 * tx)), -(-g["Mg"] // (4 * ty)), g["N"] * g["G"])
    total = packed_numel(y.shape) if y.packed else y.size  # partials: y's storage order
    splits = int(cfg["splits"])
    kchunk = kchunk_for(k, splits)
    push = _GEMM_PUSH.pack(
        g["C"], g["H"], g["W"], g["M"], g["OH"], g["OW"], g["Cg"], g["Mg"], k,
        g["KH"], g["KW"], g["G"], g["SH"], g["SW"], g["DH"], g["DW"], g["PH"], g["PW"],
        # Packed (OHWI weights): k = tap * Cg + ci, so the outer divisor is Cg.
        kchunk, splits, _magic(g["Cg"] if y.packed else g["KH"] * g["KW"], k),
        _magic(g["KW"], g["KH"] * g["KW"]),
    )  # fmt: skip
    label = f"{step.node} (Conv gemm)"
    if splits == 1:
        shader, epi = epilogues.variant("conv", step, _product(step), extra, 4)
        pipe = ctx.pipeline(shader, spec, 4 + len(epi), _GEMM_PUSH.size, tx * ty)
        binds = [x.binding(), w.binding(), (b or w).binding(), y.binding(write=True), *epi]
        return [Dispatch(pipe, binds, push, groups, ctx.op_index, label)]
    part = scratch(ctx, splits * total)
    shader = register_variant("conv", {"VKNN_SPLITK": "1"})
    pipe = ctx.pipeline(shader, spec, 4, _GEMM_PUSH.size, tx * ty)
    binds = [
        x.binding(), w.binding(), w.binding(),
        Binding(part.buffer, part.offset, 4 * splits * total, True),
    ]  # fmt: skip
    first = Dispatch(
        pipe, binds, push, (groups[0], groups[1], groups[2] * splits), ctx.op_index,
        f"{step.node} (Conv gemm, split-K x{splits})",
    )  # fmt: skip
    p_all = g["OH"] * g["OW"]
    rest = record_splitk_reduce(
        step, ctx, part, splits, total, 1 if b is not None else 0,
        b.binding() if b is not None else None, y, extra, _product(step),
        (p_all, g["M"], 0, 0, 1.0, 0.0), packed=y.packed,
    )  # fmt: skip
    return [first, *rest]


def _record_coopmat(
    step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg, b: TensorArg | None, y: TensorArg,
    extra: list[TensorArg], g: dict[str, int], cfg: TuneConfig,
) -> list[Dispatch]:  # fmt: skip
    """glsl/conv_coopmat.comp: the implicit GEMM on tensor cores, one dispatch."""
    bm, bn = int(cfg["bm"]), int(cfg["bn"])
    pointwise = (
        g["KH"] == g["KW"] == g["SH"] == g["SW"] == 1 and g["PH"] == g["PW"] == 0
        and g["OH"] == g["H"] and g["OW"] == g["W"]
    )  # fmt: skip
    k = g["Cg"] * g["KH"] * g["KW"]
    p_count = g["OH"] * g["OW"]
    vec_a = k % 4 == 0
    # Packed: 4 consecutive k are one channel block of one tap (Cg % 4 == 0);
    # flat: 4 consecutive pixels of a pointwise conv (H*W % 4 == 0).
    vec_b = g["Cg"] % 4 == 0 if y.packed else pointwise and g["H"] * g["W"] % 4 == 0
    spec = (
        (1, bm), (2, bn), (3, pointwise), (4, b is not None), (5, y.packed),
        (6, vec_a), (7, vec_b), (8, ctx.caps.subgroup_size),
    )  # fmt: skip
    splits = int(cfg["splits"])
    push = _GEMM_PUSH.pack(
        g["C"], g["H"], g["W"], g["M"], g["OH"], g["OW"], g["Cg"], g["Mg"], k,
        g["KH"], g["KW"], g["G"], g["SH"], g["SW"], g["DH"], g["DW"], g["PH"], g["PW"],
        kchunk_for(k, splits), splits, 0, 0,
    )  # fmt: skip
    groups = (-(-p_count // bn), -(-g["Mg"] // bm), g["N"] * g["G"])
    ls = coopmat.local_size(ctx.caps)
    if splits > 1:
        # Partials at y's storage index, summed by splitk_reduce.comp (bias, epilogue).
        total = packed_numel(y.shape) if y.packed else y.size
        part = scratch(ctx, splits * total)
        shader = register_variant("conv_coopmat", {"VKNN_SPLITK": "1"})
        pipe = ctx.pipeline(shader, spec, 4, _GEMM_PUSH.size, ls)
        binds = [
            x.binding(), w.binding(), w.binding(),
            Binding(part.buffer, part.offset, 4 * splits * total, True),
        ]  # fmt: skip
        first = Dispatch(
            pipe, binds, push, (groups[0], groups[1], groups[2] * splits), ctx.op_index,
            f"{step.node} (Conv coopmat {bm}x{bn}, split-K x{splits})",
        )  # fmt: skip
        rest = record_splitk_reduce(
            step, ctx, part, splits, total, 1 if b is not None else 0,
            b.binding() if b is not None else None, y, extra, _product(step),
            (p_count, g["M"], 0, 0, 1.0, 0.0), packed=y.packed,
        )  # fmt: skip
        return [first, *rest]
    shader, epi = epilogues.variant("conv_coopmat", step, _product(step), extra, 4)
    pipe = ctx.pipeline(shader, spec, 4 + len(epi), _GEMM_PUSH.size, ls)
    binds = [x.binding(), w.binding(), (b or w).binding(), y.binding(write=True), *epi]
    label = f"{step.node} (Conv coopmat {bm}x{bn})"
    return [Dispatch(pipe, binds, push, groups, ctx.op_index, label)]


def _record_direct(
    shader: str, label: str, step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg,
    b: TensorArg | None, y: TensorArg, extra: list[TensorArg], g: dict[str, int],
    ls: int | None = None, slice_: tuple[int, int, int] = (0, -1, 0),
) -> list[Dispatch]:  # fmt: skip
    """`slice_` = (c_begin, w_cg, m_begin) of a sliced conv (`_record_sliced`;
    w_cg -1: the geometry's Cg)."""
    name, epi = epilogues.variant(shader, step, _product(step), extra, 4)
    spec: tuple[tuple[int, bool], ...] = ((1, b is not None),)
    if y.packed:  # conv_direct.comp only (conv_nc4hw4)
        spec += ((2, True),)
    pipe = ctx.pipeline(name, spec, 4 + len(epi), _DIRECT_PUSH.size, ls or local_size(ctx.caps))
    # Packed: one invocation per element of y's storage (padded lanes exit).
    n = packed_numel(y.shape) if y.packed else y.size
    tail = (
        g["C"], g["H"], g["W"], g["M"], g["OH"], g["OW"], g["Cg"], g["Mg"],
        g["KH"], g["KW"], g["SH"], g["SW"], g["DH"], g["DW"], g["PH"], g["PW"],
    )  # fmt: skip
    binds = [x.binding(), w.binding(), (b or w).binding(), y.binding(write=True), *epi]
    c_begin, w_cg, m_begin = slice_
    tail += (c_begin, g["Cg"] if w_cg < 0 else w_cg, m_begin)
    push: Callable[[int], bytes] = lambda base: _DIRECT_PUSH.pack(n, base, *tail)  # noqa: E731
    return flat_dispatches(pipe, binds, n, push, ctx.caps, ctx.op_index, f"{step.node} ({label})")


# -- convs past maxStorageBufferRange ----------------------------------------


def _channel_blocks(count: int, plane_bytes: int, caps: DeviceCaps) -> list[tuple[int, int]] | None:
    """Channel ranges [c0, c1) of a batch-1 NCHW tensor that each fit one
    binding at a bindable offset (`units_per_binding`); None when not even
    one aligned block of planes fits."""
    per = units_per_binding([plane_bytes], caps)
    if per <= 0:
        return None
    return [(c, min(count, c + per)) for c in range(0, count, per)]


def sliced_conv_refusal(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec]) -> str | None:
    """Why a conv with a tensor past maxStorageBufferRange cannot run as
    channel slices (`_record_sliced`); None when it can."""
    x, y = in_specs[0].shape, step.out_specs[0].shape
    if len(x) != 4 or x[0] != 1 or int(step.attrs["group"]) != 1:
        return "only batch-1 2-D convs with group 1 are split"
    if epilogues.epilogue_of(step) is not None:
        return "a fused epilogue is not split (it runs as its own step)"
    limit = caps.max_storage_buffer_range
    if any(4 * _numel(t.shape) > limit for t in in_specs[1:]):
        return "its weight or bias alone is past the range"
    for es in (2, 4):  # fp16 and fp32 storage
        if _channel_blocks(x[1], es * x[2] * x[3], caps) is None:
            return "one input channel plane is past the range"
        if _channel_blocks(y[1], es * y[2] * y[3], caps) is None:
            return "one output channel plane is past the range"
    return None


def _record_sliced(
    step: Step, ctx: RecordContext, x: TensorArg, w: TensorArg, b: TensorArg | None,
    y: TensorArg, g: dict[str, int],
) -> list[Dispatch]:  # fmt: skip
    """A batch-1 conv whose input or output is past maxStorageBufferRange:
    for each block of output channels, one direct-conv dispatch per block of
    input channels, each binding only its blocks (offsets into x and y); the
    first writes (with the bias), the others add to y (VKNN_CONV_ACCUM). The
    partial sums are stored in y's storage type between slices."""
    es = y.ref.nbytes // max(1, y.size)
    xs = _channel_blocks(g["C"], es * g["H"] * g["W"], ctx.caps)
    ys = _channel_blocks(g["M"], es * g["OH"] * g["OW"], ctx.caps)
    if xs is None or ys is None:
        raise ValueError(f"{step.node}: the gate should have refused this conv")
    accum = register_variant("conv_direct", {"VKNN_CONV_ACCUM": "1"})
    hw, p = g["H"] * g["W"], g["OH"] * g["OW"]
    ops: list[Dispatch] = []
    for m0, m1 in ys:
        yb = TensorArg(
            TensorRef(y.ref.buffer, y.ref.offset + m0 * p * es, (m1 - m0) * p * es),
            (1, m1 - m0, g["OH"], g["OW"]), y.dtype,
        )  # fmt: skip
        for j, (c0, c1) in enumerate(xs):
            xb = TensorArg(
                TensorRef(x.ref.buffer, x.ref.offset + c0 * hw * es, (c1 - c0) * hw * es),
                (1, c1 - c0, g["H"], g["W"]), x.dtype,
            )  # fmt: skip
            gb = {**g, "C": c1 - c0, "Cg": c1 - c0, "M": m1 - m0, "Mg": m1 - m0}
            # A phase per input slice: the slices adding to one y block are
            # ordered by barriers (one step's dispatches are otherwise not).
            phased = replace(ctx, op_index=OpPhase(ctx.op_index, j))
            ops += _record_direct(
                "conv_direct" if j == 0 else accum, "Conv direct, sliced", step, phased, xb, w,
                b if j == 0 else None, yb, [], gb, slice_=(c0, g["Cg"], m0),
            )  # fmt: skip
    return ops


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
    if max(x.ref.nbytes, y.ref.nbytes) > ctx.caps.max_storage_buffer_range:
        return _record_sliced(step, ctx, x, w, b, y, g)
    space = conv_space(step, ctx.caps, ins, ctx.variant, ctx.splitk)
    cfg = space.choose(ctx)
    if cfg["algo"] == "coopmat":
        return _record_coopmat(step, ctx, x, w, b, y, extra, g, cfg)
    if cfg["algo"] == "gemm":
        return _record_gemm(step, ctx, x, w, b, y, extra, g, cfg)
    return _record_direct(
        "conv_direct", "Conv direct", step, ctx, x, w, b, y, extra, g, cfg.get("ls")
    )


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


def conv_nc4hw4(step: Step, in_specs: list[TensorSpec]) -> Nc4hw4Io | None:
    """2-D convs read x and write y NC4HW4 (the GEMM and direct kernels);
    epilogue inputs of y's shape are read at y's packed index."""
    x, y = in_specs[0], step.out_specs[0]
    if not packable(x) or not packable(y):
        return None
    own = len(in_specs) - epilogues.extra_count(step)
    extra = same_shape_positions(y, in_specs, range(own, len(in_specs)))
    if extra is None:
        return None
    return frozenset({0}) | extra, frozenset({0})


def conv_packed_constants(step: Step, in_specs: list[TensorSpec]) -> dict[int, str]:
    """A packed conv reads its weight as [M, KH, KW, Cg] (OHWI): the GEMM's K
    runs over channels fastest, the order NC4HW4 stores them in (a no-op,
    so no copy, for 1x1 and depthwise weights)."""
    w = in_specs[1].shape
    if len(w) != 4 or w[1] == 1 or w[2] * w[3] == 1:
        return {}
    return {1: "ohwi"}


register(
    KernelSpec(
        "vx.conv",
        gate_conv,
        record_conv,
        tuning=_tune_conv,
        nc4hw4=conv_nc4hw4,
        packed_constants=conv_packed_constants,
        splits_large=sliced_conv_refusal,
    )
)
register(KernelSpec("vx.conv_transpose", gate_conv_transpose, record_conv_transpose))
register(KernelSpec("vx.batchnorm", gate_batchnorm, record_batchnorm))
epilogues.register_host("vx.conv")
epilogues.register_host("vx.conv_transpose")
