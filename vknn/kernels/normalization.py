"""Kernel specs of `vx.softmax`, `vx.log_softmax` (glsl/softmax.comp`)
and `vx.layernorm` (glsl/layernorm.comp`): one workgroup per row, rows
cached in registers when short, reductions through subgroup arithmetic
where the device has it (`reduce.reduction_shader`).

Softmax takes any axis (a row is strided by the product of the dims after
it); layernorm normalizes the contiguous trailing dims [axis, rank), with
scale / bias of either that many elements or one.

This module must not import xDSL or the CPU backend, nor touch a device.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import (
    FLOAT_DTYPES,
    KernelSpec,
    RecordContext,
    TensorArg,
    register,
)
from vknn.kernels.records import Dispatch
from vknn.kernels.reduce import reduction_shader, row_dispatches, row_size
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

CACHE = 8
"""Elements per invocation kept in registers (`#define CACHE` in both shaders)."""
_SOFTMAX_PUSH = struct.Struct("<4I")
_LAYERNORM_PUSH = struct.Struct("<2IfI")


def _float_gate(step: Step, caps: DeviceCaps, specs: list[TensorSpec]) -> str | None:
    for s in specs:
        if s.dtype not in FLOAT_DTYPES:
            return f"{step.kind}: {s.dtype} tensors are not supported on Vulkan yet"
        n = math.prod(s.shape)
        if n >= 1 << 31 or 4 * n > caps.max_storage_buffer_range:
            return f"{step.kind}: {s.name} exceeds 32-bit indexing or maxStorageBufferRange"
    if len({s.dtype for s in specs}) > 1:
        return f"{step.kind}: mixed dtypes {[s.dtype for s in specs]}"
    return None


# -- vx.softmax / vx.log_softmax ---------------------------------------------


def gate_softmax(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    out = step.out_specs[0]
    if math.prod(out.shape) == 0:
        return f"{step.kind}: empty tensor"
    return _float_gate(step, caps, [out, *(in_specs or [])])


def record_softmax(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    axis = int(step.attrs["axis"]) % max(len(x.shape), 1)
    length = x.shape[axis] if x.shape else 1
    inner = math.prod(x.shape[axis + 1 :])
    rows = math.prod(x.shape[:axis]) * inner
    ls = row_size(ctx.caps, length, per_invocation=4)
    cached = length <= CACHE * ls
    spec: tuple[tuple[int, bool], ...] = ((1, step.op == "vx.log_softmax"), (2, cached))
    if step.attrs.get("zero_nan"):
        spec += ((3, True),)
    pipe = ctx.pipeline(reduction_shader("softmax", ctx.caps), spec, 2, _SOFTMAX_PUSH.size, ls)
    return row_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        rows,
        lambda base: _SOFTMAX_PUSH.pack(rows, length, inner, base),
        ctx.caps,
        ctx.op_index,
        f"{step.node} ({step.kind})",
    )


# -- vx.layernorm -------------------------------------------------------------


def _param_ok(shape: tuple[int, ...], norm: tuple[int, ...]) -> bool:
    """Scale / bias with exactly the normalized shape (leading 1s aside) or one element."""
    if math.prod(shape) == 1:
        return True
    trimmed = list(shape)
    while len(trimmed) > len(norm) and trimmed[0] == 1:
        trimmed.pop(0)
    full = [1] * (len(norm) - len(trimmed)) + trimmed
    return tuple(full) == tuple(norm)


def gate_layernorm(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    out = step.out_specs[0]
    why = _float_gate(step, caps, [out, *(in_specs or [])])
    if why or in_specs is None:
        return why
    x = in_specs[0]
    axis = int(step.attrs["axis"]) % max(len(x.shape), 1)
    norm = tuple(x.shape[axis:])
    if math.prod(x.shape) == 0:
        return f"{step.kind}: empty tensor"
    for what, s in zip(("scale", "bias"), in_specs[1:3], strict=False):
        if not _param_ok(tuple(s.shape), norm):
            return (
                f"{step.kind}: {what} {list(s.shape)} broadcasts to {list(norm)} only partly "
                "(the kernel takes the full shape or one element)"
            )
    return None


def record_layernorm(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, scale, y = ins[0], ins[1], outs[0]
    bias = ins[2] if len(ins) > 2 else None
    axis = int(step.attrs["axis"]) % max(len(x.shape), 1)
    length = math.prod(x.shape[axis:])
    rows = math.prod(x.shape[:axis])
    ls = row_size(ctx.caps, length, per_invocation=4)
    cached = length <= CACHE * ls
    spec = (
        (1, bias is not None),
        (2, cached),
        (3, scale.size == 1),
        (4, bias is not None and bias.size == 1),
    )
    shader = reduction_shader("layernorm", ctx.caps)
    pipe = ctx.pipeline(shader, spec, 4, _LAYERNORM_PUSH.size, ls)
    eps = float(step.attrs["epsilon"])
    return row_dispatches(
        pipe,
        [x.binding(), scale.binding(), (bias or scale).binding(), y.binding(write=True)],
        rows,
        lambda base: _LAYERNORM_PUSH.pack(rows, length, eps, base),
        ctx.caps,
        ctx.op_index,
        f"{step.node} ({step.kind})",
    )


register(KernelSpec("vx.softmax", gate_softmax, record_softmax))
register(KernelSpec("vx.log_softmax", gate_softmax, record_softmax))
register(KernelSpec("vx.layernorm", gate_layernorm, record_layernorm))
