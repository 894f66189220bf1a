"""Kernel spec of `vx.cum_sum` (ONNX CumSum; glsl/cumsum.comp): one
invocation per line along the axis, scanning it sequentially, which suits
the short axes it meets (position ids of padded token masks). float32 /
float16 storage accumulate in fp32; int32 wraps at 32 bits; int64 scans in
64 bits (`int64="arith"`: the target needs shaderInt64).

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import KernelSpec, RecordContext, TensorArg, flat_dispatches, register
from vknn.kernels.data_movement import check_specs, label, pipeline
from vknn.kernels.records import Dispatch
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.dtypes import is_float

_PUSH = struct.Struct("<4I")
DTYPES = ("float32", "float16", "int32", "int64")


def gate_cum_sum(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why or in_specs is None:
        return why
    if in_specs[0].dtype not in DTYPES:
        return f"{step.kind}: {in_specs[0].dtype} input (the kernel takes {', '.join(DTYPES)})"
    return None


def record_cum_sum(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    if y.size == 0:
        return []
    axis = int(step.attrs["axis"])
    length = x.shape[axis]
    inner = math.prod(x.shape[axis + 1 :])
    lines = y.size // length
    flt = is_float(x.dtype)
    spec = (
        (1, bool(int(step.attrs["exclusive"]))),
        (2, bool(int(step.attrs["reverse"]))),
        (3, not flt),
    )
    defines = {"VKNN_INT64": "1"} if x.dtype == "int64" else None
    pipe = pipeline(ctx, "cumsum", x.dtype if flt else "int32", spec, 2, _PUSH.size, defines)
    return flat_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        lines,
        lambda base: _PUSH.pack(lines, base, length, inner),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


register(KernelSpec("vx.cum_sum", gate_cum_sum, record_cum_sum, int64="arith"))  # type: ignore[arg-type]
