"""Kernel spec of `vx.reduce` (glsl/reduce.comp`): every float ReduceKind
over any sorted axes set, with or without keepdims; argmax/argmin of float
tensors over their one axis, the int64 result written as word pairs;
sum/max/min/prod of int64 tensors in 64 bits (shaderInt64), one invocation
per output.

The host collapses the input into alternating kept / reduced dim groups
(adjacent dims of one kind merge: they are contiguous in a row-major
tensor), at most 4 of each. Long reductions (>= `WG_THRESHOLD` elements per
output) give each output a workgroup; short ones give each output one
invocation, so a reduction over a small axis of a large tensor keeps every
lane busy.

Also the home of two helpers the row kernels (softmax, layernorm) share:
`row_dispatches` (one workgroup per row, split at maxComputeWorkGroupCount)
and `reduction_shader` (the subgroup-arithmetic variant where the device
has subgroups, shared-memory trees elsewhere).

This module must not import xDSL or the CPU backend, nor touch a device.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from vknn.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    epilogues,
    flat_dispatches,
    register,
)
from vknn.kernels.records import Binding, Dispatch, KernelKey
from vknn.kernels.shaders import register_variant, shader_enum
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

MAX_GROUPS = 4
WG_THRESHOLD = 64
_PUSH = struct.Struct("<3I4I4I4I4I")


def subgroup_defines(caps: DeviceCaps) -> dict[str, str]:
    """The defines of a reduction's subgroup-arithmetic variant, when the
    device has subgroups of 4+ lanes (`caps.subgroup_arithmetic` confirms
    the arithmetic operations); none elsewhere (shared-memory trees)."""
    if caps.subgroup_size >= 4 and getattr(caps, "subgroup_arithmetic", True):
        return {"VKNN_SUBGROUP": "1"}
    return {}


def reduction_shader(name: str, caps: DeviceCaps) -> str:
    """`name`, or its subgroup-arithmetic variant (`subgroup_defines`)."""
    defines = subgroup_defines(caps)
    return register_variant(name, defines) if defines else name


def row_size(caps: DeviceCaps, length: int, per_invocation: int = 1, want: int = 256) -> int:
    """A power-of-two workgroup size for rows of `length` elements, about
    `per_invocation` elements each, at least a subgroup (32 lanes floor)."""
    limit = min(caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0], want)
    cap = 1 << (limit.bit_length() - 1)
    target = max(32, -(-length // per_invocation))
    return min(1 << (target - 1).bit_length(), cap)


def row_dispatches(
    pipeline: KernelKey,
    bindings: list[Binding],
    rows: int,
    push: Callable[[int], bytes],
    caps: DeviceCaps,
    op_index: int,
    label: str,
) -> list[Dispatch]:
    """One workgroup per row, split where the row count passes
    maxComputeWorkGroupCount[0]; `push(base)` packs each part's first row."""
    max_groups = caps.max_compute_work_group_count[0]
    out = []
    first = 0
    while first < max(rows, 1):
        count = min(max_groups, rows - first)
        out.append(Dispatch(pipeline, bindings, push(first), (count, 1, 1), op_index, label))
        first += count
    return out


def reduce_kinds() -> dict[str, int]:
    return shader_enum("reduce", "REDUCE")


def collapse_reduction(
    shape: tuple[int, ...], axes: tuple[int, ...]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """(kept dims, kept strides, reduced dims, reduced strides) of the fewest
    groups, innermost last, size-1 dims dropped."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    groups: list[list[int]] = []  # [is_reduced, dim, stride]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        red = int(d in axes)
        if groups and groups[-1][0] == red and groups[-1][2] == strides[d] * n:
            groups[-1][1] *= n
            groups[-1][2] = strides[d]
            continue
        groups.append([red, n, strides[d]])
    kd = [g[1] for g in groups if not g[0]]
    ks = [g[2] for g in groups if not g[0]]
    rd = [g[1] for g in groups if g[0]]
    rs = [g[2] for g in groups if g[0]]
    return kd, ks, rd, rs


ARG_KINDS = ("argmax", "argmin")
INT64_KINDS = ("sum", "max", "min", "prod")


def gate_reduce(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    kind = step.attrs.get("kind")
    if kind not in reduce_kinds():
        return f"{step.kind}: kind '{kind}' has no Vulkan shader yet"
    out = step.out_specs[0]
    specs = [out, *(in_specs or [])]
    if kind in ARG_KINDS:
        if out.dtype != "int64" or len(step.attrs.get("axes") or ()) != 1:
            return f"{step.kind}: {kind} gives int64 over one axis"
        specs = specs[1:]
    elif out.dtype == "int64":
        if kind not in INT64_KINDS:
            return f"{step.kind}: {kind} of int64 tensors has no Vulkan kernel ({INT64_KINDS})"
        if not caps.has_int64:
            return f"{step.kind}: int64 arithmetic needs shaderInt64, which the target lacks"
        specs = [s for s in specs if s.dtype != "int64"]
    for s in specs:
        if s.dtype not in FLOAT_DTYPES:
            return f"{step.kind}: {s.dtype} tensors are not supported on Vulkan yet"
    if in_specs is None:
        return None
    x = in_specs[0]
    n = math.prod(x.shape)
    if n == 0:
        return f"{step.kind}: empty input"
    if n >= 1 << 31 or (8 if x.dtype == "int64" else 4) * n > caps.max_storage_buffer_range:
        return f"{step.kind}: input exceeds 32-bit indexing or maxStorageBufferRange"
    kd, _, rd, _ = collapse_reduction(tuple(x.shape), tuple(step.attrs["axes"]))
    if len(kd) > MAX_GROUPS or len(rd) > MAX_GROUPS:
        return (
            f"{step.kind}: {len(kd)} kept / {len(rd)} reduced dim groups after collapsing "
            f"(max {MAX_GROUPS} each)"
        )
    return epilogues.check(step, in_specs, TensorSpec("product", out.shape, out.dtype))


def record_reduce(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    own, extra = epilogues.split_inputs(step, ins)
    x, y = own[0], outs[0]
    kd, ks, rd, rs = collapse_reduction(x.shape, tuple(step.attrs["axes"]))
    count = math.prod(rd)
    n_out = y.size
    int64 = x.dtype == "int64"
    wg_per_out = count >= WG_THRESHOLD and not int64

    def pad(v: list[int], fill: int) -> list[int]:
        return [fill] * (MAX_GROUPS - len(v)) + v

    tail = (*pad(kd, 1), *pad(ks, 0), *pad(rd, 1), *pad(rs, 0))
    kind = reduce_kinds()[step.attrs["kind"]]
    last = bool(step.attrs.get("select_last_index"))
    label = f"{step.node} ({step.kind})"
    product = TensorSpec("product", y.shape, y.dtype)
    defines = subgroup_defines(ctx.caps) if wg_per_out else {}
    if int64:
        defines = {**defines, "VKNN_INT64": "1"}
    shader, epi = epilogues.variant("reduce", step, product, extra, 2, defines)
    bindings = [x.binding(), y.binding(write=True), *epi]
    if wg_per_out:
        ls = row_size(ctx.caps, count, per_invocation=4)
        spec = ((1, kind), (2, True), (3, last))
        pipe = ctx.pipeline(shader, spec, len(bindings), _PUSH.size, ls)
        return row_dispatches(
            pipe,
            bindings,
            n_out,
            lambda base: _PUSH.pack(n_out, count, base, *tail),
            ctx.caps,
            ctx.op_index,
            label,
        )
    ls = row_size(ctx.caps, n_out, want=128)
    pipe = ctx.pipeline(shader, ((1, kind), (2, False), (3, last)), len(bindings), _PUSH.size, ls)
    return flat_dispatches(
        pipe,
        bindings,
        n_out,
        lambda base: _PUSH.pack(n_out, count, base, *tail),
        ctx.caps,
        ctx.op_index,
        label,
    )


# argmax/argmin write their int64 result as word pairs (no shaderInt64).
register(KernelSpec("vx.reduce", gate_reduce, record_reduce, int64="words"))
epilogues.register_host("vx.reduce")
