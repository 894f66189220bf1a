"""Kernel specs of `vx.quantize` and `vx.dequantize` (glsl/quant.comp),
per tensor or per axis, with or without a zero point.

Integer tensors are int32 words (`vulkan/dtypes.py`); the quantized range
[qmin, qmax] is the result dtype's. Scales are float tensors, so with fp16
storage a scale is rounded to fp16 like every other float tensor, and a
quantized value may then differ from the fp32 oracle by one step; use
`precision="high"` for bit-exact quantization.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    register,
)
from vknn.kernels.data_movement import check_specs, label, pipeline
from vknn.kernels.records import Dispatch
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps
from vknn.runtime.vulkan.dtypes import is_float

_PUSH = struct.Struct("<IIIIii")


def _gate(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None) -> str | None:
    why = check_specs(step, in_specs)
    if why:
        return why
    quant = step.op == "vx.quantize"
    ints = step.out_specs[0].dtype if quant else (in_specs[0].dtype if in_specs else None)
    if ints is not None and (is_float(ints) or ints == "bool"):
        return f"{step.kind}: {ints} is not a quantized integer type"
    if in_specs is None:
        return None
    if not 2 <= len(in_specs) <= 3:
        return f"{step.kind}: expected 2 or 3 inputs, got {len(in_specs)}"
    if not is_float(in_specs[1].dtype):
        return f"{step.kind}: scale of dtype {in_specs[1].dtype}"
    if quant and not is_float(in_specs[0].dtype):
        return f"{step.kind}: input of dtype {in_specs[0].dtype}"
    if not quant and not is_float(step.out_specs[0].dtype):
        return f"{step.kind}: result of dtype {step.out_specs[0].dtype}"
    x = in_specs[0].shape
    channels = x[int(step.attrs["axis"])] if x else 1
    for p in in_specs[1:]:
        if math.prod(p.shape) not in (1, channels):
            return f"{step.kind}: parameter shape {list(p.shape)} (blocked quantization?)"
    return None


def gate_quantize(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    return _gate(step, caps, in_specs)


def gate_dequantize(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    return _gate(step, caps, in_specs)


def record_quant(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, scale, y = ins[0], ins[1], outs[0]
    zp = ins[2] if len(ins) > 2 else None
    dequant = step.op == "vx.dequantize"
    axis = int(step.attrs["axis"])
    channels = scale.size
    inner = math.prod(x.shape[axis + 1 :]) if x.shape and channels > 1 else 1
    qtype = x.dtype if dequant else y.dtype
    info = np.iinfo(np.dtype(qtype))
    qmin, qmax = max(info.min, -(1 << 31)), min(info.max, (1 << 31) - 1)
    float_side = y.dtype if dequant else x.dtype
    spec = ((1, dequant), (2, zp is not None))
    pipe = pipeline(ctx, "quant", float_side, spec, 4, _PUSH.size)
    n = y.size
    # Without a zero point binding 2 is never read; x fills the slot.
    bindings = [x.binding(), scale.binding(), (zp or x).binding(), y.binding(write=True)]
    return flat_dispatches(
        pipe,
        bindings,
        n,
        lambda base: _PUSH.pack(n, base, max(1, inner), max(1, channels), qmin, qmax),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


register(KernelSpec("vx.quantize", gate_quantize, record_quant))
register(KernelSpec("vx.dequantize", gate_dequantize, record_quant))
