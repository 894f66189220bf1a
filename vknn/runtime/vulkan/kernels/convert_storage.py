"""Storage conversions between fp16 and fp32 words (`shaders/convert_storage.comp`).

Not a plan op: the executor records these around a step whose shader variant
stores floats in the other width than a tensor it reads or writes (mixed
storage, `precision="normal"`; see `precision_rules.py`). fp32 -> fp16
rounds to nearest even and saturates to +-65504, as every fp16 store does.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

from dataclasses import replace

from vknn.runtime.vulkan.commands import Binding, Dispatch
from vknn.runtime.vulkan.kernels import RecordContext, flat_dispatches, local_size, pack_u32
from vknn.runtime.vulkan.memory import TensorRef

LABEL = "convert"
"""Every conversion dispatch's label starts with this."""


def record_convert(
    ctx: RecordContext,
    src: TensorRef,
    dst: TensorRef,
    n: int,
    to_fp32: bool,
    op_index: int,
    what: str,
) -> list[Dispatch]:
    """Dispatches converting `n` floats from `src` (fp16 words when `to_fp32`,
    else fp32) into `dst` (the other width)."""
    # The shader always declares both widths, so one (fp16) variant serves.
    fp16 = replace(ctx, variant="fp16")
    pipe = fp16.pipeline("convert_storage", ((1, to_fp32),), 2, 8, local_size(ctx.caps))
    direction = "fp16->fp32" if to_fp32 else "fp32->fp16"
    return flat_dispatches(
        pipe,
        [
            Binding(src.buffer, src.offset, src.nbytes),
            Binding(dst.buffer, dst.offset, dst.nbytes, write=True),
        ],
        n,
        lambda base: pack_u32(n, base),
        ctx.caps,
        op_index,
        f"{LABEL} {direction} {what}",
    )
