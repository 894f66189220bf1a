"""Kernel specs of `vx.cast` (glsl/cast.comp), `vx.select`
(glsl/select.comp), and the integer/bool side of `vx.binary` / `vx.unary`
(glsl/intops.comp: integer arithmetic, comparisons of any device dtype,
logical ops, `not`), which `elementwise.py` hands over to this module.

Integers and bools are int32 words on the device, int64 is int64
(`vulkan/dtypes.py`): narrower integers wrap to their own width after every
op, as numpy does; a step with int64 tensors runs the shader built with
`VKNN_INT64` (64-bit arithmetic, shaderInt64: `KernelSpec.int64`). Casts
follow onnxruntime's Cast: float -> int truncates (NaN, inf and values past
the range give INT_MIN of int32 / int64, then wrap to narrower widths),
-> bool is `!= 0`; a float16 target in fp32 storage is rounded to fp16
(overflow to inf) so the values match the oracle's float16 tensor exactly.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    pack_u32,
    register,
)
from vknn.kernels.data_movement import check_specs, label, pipeline
from vknn.kernels.records import Dispatch
from vknn.kernels.shaders import shader_enum
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.dtypes import int_bits, is_float

SELECT_RANK = 6
INTOP_RANK = 6


def collapse_n(
    out: tuple[int, ...], shapes: list[tuple[int, ...]]
) -> tuple[list[int], list[list[int]]]:
    """(dims, per-operand strides) of the fewest dims that index every operand
    of `shapes` broadcast (numpy rules) to `out`; ([], ...) when every operand
    has the output's shape. Raises ValueError when one does not broadcast."""
    rank = len(out)
    per: list[list[int]] = []
    for shape in shapes:
        if len(shape) > rank:
            raise ValueError(f"{shape} has more dims than the result {out}")
        full = (1,) * (rank - len(shape)) + tuple(shape)
        for d, (s, o) in enumerate(zip(full, out, strict=True)):
            if s not in (1, o):
                raise ValueError(f"{shape} does not broadcast to {out} (dim {d})")
        st = [1] * rank
        for d in range(rank - 2, -1, -1):
            st[d] = st[d + 1] * full[d + 1]
        per.append([0 if full[d] == 1 and out[d] != 1 else st[d] for d in range(rank)])
    dims: list[int] = []
    strides: list[list[int]] = [[] for _ in shapes]
    for d in range(rank):
        if out[d] == 1:
            continue
        if dims and all(s[-1] == p[d] * out[d] for s, p in zip(strides, per, strict=True)):
            dims[-1] *= out[d]
            for s, p in zip(strides, per, strict=True):
                s[-1] = p[d]
            continue
        dims.append(out[d])
        for s, p in zip(strides, per, strict=True):
            s.append(p[d])
    if len(dims) <= 1 and all(s in ([], [1]) for s in strides):
        return [], [[] for _ in shapes]
    return dims, strides


def _broadcast_refusal(
    step: Step, in_specs: list[TensorSpec] | None, shapes: int, max_rank: int
) -> str | None:
    if in_specs is None:
        return None
    try:
        dims, _ = collapse_n(step.out_specs[0].shape, [s.shape for s in in_specs[:shapes]])
    except ValueError as e:
        return f"{step.kind}: {e}"
    if len(dims) > max_rank:
        return (
            f"{step.kind}: the broadcast needs {len(dims)} dims after collapsing (max {max_rank})"
        )
    return None


# -- vx.cast ----------------------------------------------------------------


def cast_codes() -> dict[str, int]:
    return shader_enum("cast", "CAST")


def gate_cast(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
    return check_specs(step, in_specs, 1)


def record_cast(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    codes = cast_codes()
    if y.dtype == "bool":
        out = codes["bool"]
    elif not is_float(y.dtype):
        out = codes["int"]
    elif y.dtype == "float16" and ctx.variant == "fp32" and x.dtype != "float16":
        out = codes["f16"]  # fp32 storage must still hold fp16 values
    else:
        out = codes["float"]
    bits, signed = int_bits(y.dtype) if not is_float(y.dtype) else (32, True)
    in64, out64 = x.dtype == "int64", y.dtype == "int64"
    spec = ((1, is_float(x.dtype)), (2, out), (3, bits), (4, signed), (5, in64), (6, out64))
    # The fp16 variant only when a float side is stored in 16 bits.
    variant_dtype = x.dtype if is_float(x.dtype) else y.dtype if is_float(y.dtype) else "int32"
    defines = {"VKNN_INT64": "1"} if in64 or out64 else None
    pipe = pipeline(ctx, "cast", variant_dtype, spec, 2, 8, defines)
    n = y.size
    return flat_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        n,
        lambda base: pack_u32(n, base),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


# -- vx.select --------------------------------------------------------------

_SELECT_PUSH_SIZE = 4 * (2 + 4 * SELECT_RANK)


def gate_select(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 3)
    if why:
        return why
    if in_specs is not None:
        if in_specs[0].dtype != "bool":
            return f"{step.kind}: condition of dtype {in_specs[0].dtype}"
        if in_specs[1].dtype != in_specs[2].dtype:
            return f"{step.kind}: mixed dtypes {in_specs[1].dtype}, {in_specs[2].dtype}"
    elif len(step.out_specs[0].shape) > SELECT_RANK:
        return f"{step.kind}: rank {len(step.out_specs[0].shape)} > {SELECT_RANK}"
    return _broadcast_refusal(step, in_specs, 3, SELECT_RANK)


def record_select(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    c, x, y, o = ins[0], ins[1], ins[2], outs[0]
    dims, strides = collapse_n(o.shape, [c.shape, x.shape, y.shape])
    pad = [0] * (SELECT_RANK - len(dims))
    pipe = pipeline(ctx, "select", o.dtype, ((1, len(dims)),), 4, _SELECT_PUSH_SIZE)
    n = o.size
    tail = pack_u32(*(dims + pad), *(strides[0] + pad), *(strides[1] + pad), *(strides[2] + pad))
    return flat_dispatches(
        pipe,
        [c.binding(), x.binding(), y.binding(), o.binding(write=True)],
        n,
        lambda base: pack_u32(n, base) + tail,
        ctx.caps,
        ctx.op_index,
        label(step),
    )


# -- vx.binary / vx.unary on integers and bools ----------------------------

_INTOP_PUSH_SIZE = 4 * (2 + 3 * INTOP_RANK)
INT_BINARY = ("add", "sub", "mul", "div", "mod", "max", "min", "shift_left", "shift_right")
COMPARE = ("equal", "less", "less_equal", "greater", "greater_equal")
LOGICAL = ("and", "or", "xor")
INT_UNARY = ("not", "abs", "neg", "relu", "sign", "identity")


def intop_codes() -> dict[str, int]:
    return shader_enum("intops", "INTOP")


def takes_intop(step: Step, in_specs: list[TensorSpec] | None) -> bool:
    """Whether `step` (vx.unary / vx.binary) belongs to the integer kernel:
    its kind is a comparison or logical op, or a tensor is not a float."""
    kind = step.attrs.get("kind")
    if kind in COMPARE or kind in LOGICAL or kind == "not":
        return True
    return any(not is_float(s.dtype) for s in [*(in_specs or ()), *step.out_specs])


def gate_intop(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    kind = step.attrs.get("kind")
    unary = step.op == "vx.unary"
    why = check_specs(step, in_specs, 1 if unary else 2)
    if why:
        return why
    allowed = INT_UNARY if unary else INT_BINARY + COMPARE + LOGICAL
    out = step.out_specs[0].dtype
    ins = in_specs or []
    if kind not in allowed:
        return f"{step.kind}: kind '{kind}' has no Vulkan kernel for {out} tensors"
    if any(s.dtype != ins[0].dtype for s in ins):
        return f"{step.kind}: mixed input dtypes {[s.dtype for s in ins]}"
    in_float = bool(ins) and is_float(ins[0].dtype)
    if in_float and kind not in COMPARE:
        return f"{step.kind}: kind '{kind}' on float tensors belongs to the float kernel"
    if kind in LOGICAL + ("not",) and any(s.dtype != "bool" for s in ins):
        return f"{step.kind}: '{kind}' needs bool operands"
    if not unary:
        return _broadcast_refusal(step, in_specs, 2, INTOP_RANK)
    return None


def record_intop(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    a = ins[0]
    b = ins[1] if len(ins) > 1 else ins[0]
    c = outs[0]
    if len(ins) > 1:
        dims, strides = collapse_n(c.shape, [a.shape, b.shape])
    else:
        dims, strides = [], [[], []]
    pad = [0] * (INTOP_RANK - len(dims))
    bits, signed = int_bits(c.dtype)
    spec = (
        (1, intop_codes()[step.attrs["kind"]]),
        (2, len(dims)),
        (3, is_float(a.dtype)),
        (4, bits),
        (5, signed),
        (6, c.dtype == "int64"),
    )
    defines = {"VKNN_INT64": "1"} if a.dtype == "int64" else None
    variant_dtype = a.dtype if is_float(a.dtype) else "int32"
    pipe = pipeline(ctx, "intops", variant_dtype, spec, 3, _INTOP_PUSH_SIZE, defines)
    n = c.size
    tail = pack_u32(*(dims + pad), *(strides[0] + pad), *(strides[1] + pad))
    return flat_dispatches(
        pipe,
        [a.binding(), b.binding(), c.binding(write=True)],
        n,
        lambda base: pack_u32(n, base) + tail,
        ctx.caps,
        ctx.op_index,
        label(step),
    )


register(KernelSpec("vx.cast", gate_cast, record_cast, int64="arith"))
register(KernelSpec("vx.select", gate_select, record_select, int64="words"))
