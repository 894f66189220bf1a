"""Storage conversions of float tensors (glsl/convert_storage.comp`):
fp16 <-> fp32 words and flat <-> NC4HW4, in one dispatch.

Not a plan op: the executor records these where a step reads or writes a
tensor in another form than it is stored in (mixed storage with
`precision="normal"`, see `precision_rules.py`; fp16 segment boundaries kept
fp32; packed tensors and flat kernels, see `layouts.py`). fp32 -> fp16
rounds to nearest even and saturates to +-65504, as every fp16 store does.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from vknn.kernels import (
    RecordContext,
    flat_dispatches,
    local_size,
    pack_u32,
    units_per_binding,
)
from vknn.kernels.records import Binding, Dispatch, TensorRef

LABEL = "convert"
"""Every conversion dispatch's label starts with this."""


@dataclass(frozen=True)
class Form:
    """How a float tensor is stored: fp32 or fp16 words, flat or NC4HW4."""

    fp32: bool
    packed: bool = False

    def __str__(self) -> str:
        return ("fp32" if self.fp32 else "fp16") + ("/nc4hw4" if self.packed else "")


def record_convert(
    ctx: RecordContext,
    src: TensorRef,
    dst: TensorRef,
    shape: Sequence[int],
    src_form: Form,
    dst_form: Form,
    op_index: int,
    what: str,
) -> list[Dispatch]:
    """Dispatches converting the float tensor of logical `shape` from `src`
    (stored as `src_form`) into `dst` (as `dst_form`). Packed forms need a
    rank-4 shape."""
    n = 1
    for d in shape:
        n *= int(d)
    c = hw = 1
    if src_form.packed or dst_form.packed:
        if len(shape) != 4:
            raise ValueError(f"{what}: an NC4HW4 conversion needs a rank-4 shape, got {shape}")
        c, hw = int(shape[1]), int(shape[2]) * int(shape[3])
    # The shader always declares both widths, so one (fp16) variant serves.
    fp16 = replace(ctx, variant="fp16")
    spec = (
        (1, src_form.fp32),
        (2, dst_form.fp32),
        (3, src_form.packed),
        (4, dst_form.packed),
    )
    pipe = fp16.pipeline("convert_storage", spec, 2, 16, local_size(ctx.caps))
    label = f"{LABEL} {src_form}->{dst_form} {what}"
    if max(src.nbytes, dst.nbytes) <= ctx.caps.max_storage_buffer_range:
        parts = [(0, n, src, dst)]
    elif src_form.packed or dst_form.packed:
        raise ValueError(f"{what}: a packed tensor must fit one binding (layouts.plan_layouts)")
    else:
        # Flat tensors past maxStorageBufferRange: element ranges, each bound
        # on its own at a bindable offset.
        s_es, d_es = 4 if src_form.fp32 else 2, 4 if dst_form.fp32 else 2
        chunk = units_per_binding([s_es, d_es], ctx.caps)
        parts = [
            (
                first,
                min(chunk, n - first),
                TensorRef(src.buffer, src.offset + first * s_es, min(chunk, n - first) * s_es),
                TensorRef(dst.buffer, dst.offset + first * d_es, min(chunk, n - first) * d_es),
            )
            for first in range(0, n, chunk)
        ]
    ops: list[Dispatch] = []
    for _, count, s_ref, d_ref in parts:
        binds = [
            Binding(s_ref.buffer, s_ref.offset, s_ref.nbytes),
            Binding(d_ref.buffer, d_ref.offset, d_ref.nbytes, write=True),
        ]
        ops += flat_dispatches(
            pipe,
            binds,
            count,
            lambda base, count=count: pack_u32(count, base, c, hw),
            ctx.caps,
            op_index,
            label,
        )
    return ops
