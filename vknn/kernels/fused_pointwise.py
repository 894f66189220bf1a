"""Kernel spec of `vx.fused_pointwise` as a standalone dispatch: the body is
translated by `pointwise_codegen` (standalone mode: every input and result
bound) and compiled into glsl/fused_pointwise.comp` as the virtual
include `pw_body.glsl`; one invocation per result element.

One pipeline per distinct (body, shapes): the broadcast index arithmetic is
generated with the shapes as literals (divisions by constants fold), and the
variant name is a content hash, so the 4 identical GELU bodies of a 4-layer
encoder share one pipeline. A fused op marked `vx.epilogue` runs here too
until `epilogues.py` merges it into its producer.

This module must not import xDSL or the CPU backend, nor touch a device.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import (
    KernelSpec,
    RecordContext,
    TensorArg,
    flat_dispatches,
    local_size,
    pointwise_codegen,
    register,
)
from vknn.kernels.layouts import as_padded, elementwise_nc4hw4
from vknn.kernels.records import Dispatch
from vknn.kernels.shaders import register_variant
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

MAX_BINDINGS = 8
"""Inputs + results. Vulkan guarantees only 4 storage buffers per stage;
every desktop driver has 8 or more (NVIDIA, lavapipe: far more)."""
_PUSH = struct.Struct("<2I")


def gate_fused_pointwise(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    out = step.out_specs[0]
    n_in = len(in_specs) if in_specs is not None else len(step.inputs)
    if n_in + len(step.out_specs) > MAX_BINDINGS:
        return (
            f"{step.kind}: {n_in} inputs + {len(step.out_specs)} results > {MAX_BINDINGS} buffers"
        )
    n = math.prod(out.shape)
    if n >= 1 << 32:
        return f"{step.kind}: {n} elements exceed 32-bit indexing"
    specs = in_specs
    if specs is None:  # judge the body alone: same-shape inputs of the result's dtype
        specs = [TensorSpec(f"in{i}", out.shape, out.dtype) for i in range(n_in)]
    why = pointwise_codegen.unsupported(step.region, specs, step.out_specs, primary=None)
    if why:
        return f"{step.kind}: {why}"
    if not caps.has_int64 and pointwise_codegen.uses_int64(step.region, specs, step.out_specs):
        return f"{step.kind}: int64 arithmetic needs shaderInt64, which the target lacks"
    return None


def record_fused_pointwise(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    ins, outs = as_padded(ins), as_padded(outs)
    specs = [TensorSpec(f"in{i}", x.shape, x.dtype) for i, x in enumerate(ins)]
    out_specs = [
        TensorSpec(o.name, y.shape, o.dtype) for o, y in zip(step.out_specs, outs, strict=True)
    ]
    code = pointwise_codegen.generate(step.region, specs, out_specs, primary=None)
    shader = register_variant(
        "fused_pointwise", code.defines, {pointwise_codegen.PW_BODY: code.source}
    )
    bindings = code.bindings(ins) + [y.binding(write=True) for y in outs]
    pipe = ctx.pipeline(shader, (), len(bindings), _PUSH.size, local_size(ctx.caps))
    n = outs[0].size
    return flat_dispatches(
        pipe,
        bindings,
        n,
        lambda base: _PUSH.pack(n, base),
        ctx.caps,
        ctx.op_index,
        f"{step.node} ({step.kind})",
    )


register(
    KernelSpec(
        "vx.fused_pointwise",
        gate_fused_pointwise,
        record_fused_pointwise,
        nc4hw4=elementwise_nc4hw4,
        nc4hw4_follows=True,
        chunked=True,
        int64="arith",
    )
)
