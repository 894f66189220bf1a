"""Kernel specs of `vx.unary` (glsl/unary.comp) and `vx.binary`
(glsl/binary.comp): flat element-wise kernels on fp32 or fp16 storage.

The op kind is a specialization constant (one pipeline per kind, dead branches
folded by the driver); shapes are push constants, so every shape of a kind
shares one pipeline. Binary broadcasting is collapsed on the host
(`collapse_broadcast`) to at most 6 dims of per-operand strides; the
collapsed rank is a specialization constant (0 = no broadcast, the fast path).
Integer and bool tensors, comparisons, logical ops and `not` go to the
integer kernel in `cast_select.py` (`takes_intop` decides, in the gate and
the recorder alike).

This module must not import xDSL, numpy kernels or touch a device directly.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    local_size,
    pack_u32,
    register,
)
from vknn.kernels import cast_select as intops
from vknn.kernels.layouts import as_padded, elementwise_nc4hw4
from vknn.kernels.records import Dispatch
from vknn.kernels.shaders import shader_enum
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

MAX_RANK = 6
UNARY_REFUSED = {
    "sin": "Vulkan bounds sin's error only to 2^-11 absolute; stays on the CPU",
    "cos": "Vulkan bounds cos's error only to 2^-11 absolute; stays on the CPU",
    "tan": "Vulkan bounds tan's error only loosely; stays on the CPU",
}


BINARY_REFUSED = {
    # GLSL's trunc-based remainder gets C fmod's inf/NaN/signed-zero cases wrong
    # (ONNX's conformance edge cases); rare in models, so the oracle runs it.
    "fmod": "fmod's inf/NaN/signed-zero edge cases are not exact on Vulkan; stays on the CPU",
    "mod": "float mod's inf/NaN/signed-zero edge cases are not exact on Vulkan; stays on the CPU",
}


def unary_kinds() -> dict[str, int]:
    return shader_enum("unary", "UNARY")


def binary_kinds() -> dict[str, int]:
    return shader_enum("binary", "BINARY")


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _common_gate(
    step: Step, caps: DeviceCaps, kind_codes: dict[str, int], refused: dict[str, str]
) -> str | None:
    kind = step.attrs.get("kind")
    if kind in refused:
        return f"{step.kind}: {refused[kind]}"
    if kind not in kind_codes:
        return f"{step.kind}: kind '{kind}' has no Vulkan shader yet"
    out = step.out_specs[0]
    if out.dtype not in FLOAT_DTYPES:
        return f"{step.kind}: {out.dtype} tensors are not supported on Vulkan yet (float32/float16)"
    n = _numel(out.shape)
    if n >= 1 << 32:
        return f"{step.kind}: {n} elements exceed 32-bit indexing"
    # Past maxStorageBufferRange: kernels.gate refuses unless record_chunked splits it.
    return None


def _check_inputs(step: Step, in_specs: list[TensorSpec] | None, count: int) -> str | None:
    if in_specs is None:
        return None
    if len(in_specs) != count:
        return f"{step.kind}: expected {count} inputs, got {len(in_specs)}"
    for s in in_specs:
        if s.dtype not in FLOAT_DTYPES:
            return f"{step.kind}: {s.dtype} inputs are not supported on Vulkan yet"
    if any(s.dtype != step.out_specs[0].dtype for s in in_specs):
        return f"{step.kind}: mixed input dtypes {[s.dtype for s in in_specs]}"
    return None


def _spec(t: TensorArg) -> TensorSpec:
    return TensorSpec("", t.shape, t.dtype)


# -- vx.unary ---------------------------------------------------------------

_UNARY_PUSH = struct.Struct("<IIff")


def gate_unary(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    if intops.takes_intop(step, in_specs):
        return intops.gate_intop(step, caps, in_specs)
    why = _common_gate(step, caps, unary_kinds(), UNARY_REFUSED)
    return why or _check_inputs(step, in_specs, 1)


def _unary_params(step: Step) -> tuple[float, float]:
    params = [float(p) for p in step.attrs.get("params") or ()]
    kind = step.attrs["kind"]
    if kind == "clip":  # an absent bound is no bound
        lo = params[0] if len(params) > 0 else -math.inf
        hi = params[1] if len(params) > 1 else math.inf
        return lo, hi
    params += [0.0] * (2 - len(params))
    return params[0], params[1]


def record_unary(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    if intops.takes_intop(step, [_spec(t) for t in ins]):
        return intops.record_intop(step, ctx, ins, outs)
    ins, outs = as_padded(ins), as_padded(outs)
    x, y = ins[0], outs[0]
    ls = local_size(ctx.caps)
    pipe = ctx.pipeline("unary", ((1, unary_kinds()[step.attrs["kind"]]),), 2, _UNARY_PUSH.size, ls)
    alpha, beta = _unary_params(step)
    n = y.size
    return flat_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        n,
        lambda base: _UNARY_PUSH.pack(n, base, alpha, beta),
        ctx.caps,
        ctx.op_index,
        f"{step.node} ({step.kind})",
    )


# -- vx.binary --------------------------------------------------------------

_BINARY_PUSH_SIZE = 4 * (2 + 3 * MAX_RANK)


def _strides(shape: tuple[int, ...]) -> list[int]:
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def collapse_broadcast(
    out: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...]
) -> tuple[list[int], list[int], list[int]]:
    """(dims, a_strides, b_strides) of the fewest dims that index `a` and `b`
    broadcast to `out` (numpy rules): size-1 output dims dropped, adjacent dims
    merged wherever both operands are contiguous (or both broadcast) across
    them. Empty dims mean both operands are read at the output index."""
    rank = len(out)
    if len(a) > rank or len(b) > rank:
        raise ValueError(f"operands {a}, {b} have more dims than the result {out}")
    per: list[list[int]] = []
    for shape in (a, b):
        full = (1,) * (rank - len(shape)) + tuple(shape)
        for d, (s, o) in enumerate(zip(full, out, strict=True)):
            if s not in (1, o):
                raise ValueError(f"{shape} does not broadcast to {out} (dim {d})")
        st = _strides(full)
        per.append([0 if full[d] == 1 and out[d] != 1 else st[d] for d in range(rank)])
    dims: list[int] = []
    sa: list[int] = []
    sb: list[int] = []
    for d in range(rank):
        if out[d] == 1:
            continue
        if dims and sa[-1] == per[0][d] * out[d] and sb[-1] == per[1][d] * out[d]:
            dims[-1] *= out[d]
            sa[-1], sb[-1] = per[0][d], per[1][d]
            continue
        dims.append(out[d])
        sa.append(per[0][d])
        sb.append(per[1][d])
    if len(dims) <= 1 and sa in ([], [1]) and sb in ([], [1]):
        return [], [], []
    return dims, sa, sb


def gate_binary(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    if intops.takes_intop(step, in_specs):
        return intops.gate_intop(step, caps, in_specs)
    why = _common_gate(step, caps, binary_kinds(), BINARY_REFUSED)
    if why:
        return why
    why = _check_inputs(step, in_specs, 2)
    if why:
        return why
    out = step.out_specs[0].shape
    if in_specs is None:
        if len(out) > MAX_RANK:
            return f"{step.kind}: rank {len(out)} > {MAX_RANK} (input shapes may collapse it)"
        return None
    try:
        dims, _, _ = collapse_broadcast(out, in_specs[0].shape, in_specs[1].shape)
    except ValueError as e:
        return f"{step.kind}: {e}"
    if len(dims) > MAX_RANK:
        return (
            f"{step.kind}: the broadcast needs {len(dims)} dims after collapsing (max {MAX_RANK})"
        )
    return None


def record_binary(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    if intops.takes_intop(step, [_spec(t) for t in ins]):
        return intops.record_intop(step, ctx, ins, outs)
    ins, outs = as_padded(ins), as_padded(outs)
    a, b, c = ins[0], ins[1], outs[0]
    dims, sa, sb = collapse_broadcast(c.shape, a.shape, b.shape)
    if len(dims) > MAX_RANK:
        raise ValueError(
            f"{step.node}: broadcast rank {len(dims)} > {MAX_RANK}; the gate refuses this"
        )
    pad = [0] * (MAX_RANK - len(dims))
    spec = ((1, binary_kinds()[step.attrs["kind"]]), (2, len(dims)))
    ls = local_size(ctx.caps)
    pipe = ctx.pipeline("binary", spec, 3, _BINARY_PUSH_SIZE, ls)
    n = c.size
    tail = pack_u32(*(dims + pad), *(sa + pad), *(sb + pad))
    return flat_dispatches(
        pipe,
        [a.binding(), b.binding(), c.binding(write=True)],
        n,
        lambda base: pack_u32(n, base) + tail,
        ctx.caps,
        ctx.op_index,
        f"{step.node} ({step.kind})",
    )


register(
    KernelSpec(
        "vx.unary",
        gate_unary,
        record_unary,
        nc4hw4=elementwise_nc4hw4,
        nc4hw4_follows=True,
        chunked=True,
        int64="arith",
    )
)
register(
    KernelSpec(
        "vx.binary",
        gate_binary,
        record_binary,
        nc4hw4=elementwise_nc4hw4,
        nc4hw4_follows=True,
        chunked=True,
        int64="arith",
    )
)
