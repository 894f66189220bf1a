"""Kernel specs of the element-indexing ops and float tests on flat
row-major storage: `vx.gather_nd`, `vx.gather_elements`,
`vx.scatter_elements` (glsl/indexing.comp) and `vx.float_test`
(glsl/float_test.comp, ONNX IsNaN / IsInf).

Elements move as raw storage words (movement.glsl), bit-exact for every
device dtype; an index is wrapped when negative and clamped into its axis on
the device (the CPU oracle raises, as onnxruntime does), so no kernel reads
or writes outside a tensor. A scatter is a copy of `data` into the output
followed, after a barrier, by one write per update: only `reduction="none"`
runs here (the others need atomics), and with repeated targets one of the
updates wins, unordered (ONNX leaves that case undefined).

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

import math
import struct

from vknn.kernels import KernelSpec, RecordContext, TensorArg, flat_dispatches, register
from vknn.kernels.conv import OpPhase
from vknn.kernels.data_movement import check_specs, label, pipeline, row_strides
from vknn.kernels.records import Copy, Dispatch
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

RANK = 6
"""Dims the indexing shader addresses (gather/scatter_elements rank, gather_nd k)."""
INT_DTYPES = ("int32", "int64", "int16", "int8", "uint8", "uint16")
_PUSH = struct.Struct(f"<6I{RANK}I{RANK}I")
_TEST_PUSH = struct.Struct("<II")
FLOAT_TESTS = {"nan": 0, "inf": 1, "pos_inf": 2, "neg_inf": 3}
_MODES = {"vx.gather_elements": 0, "vx.scatter_elements": 1, "vx.gather_nd": 2}


def _index_gate(count: int) -> object:
    def gate(step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None) -> str | None:
        why = check_specs(step, in_specs, count)
        if why or in_specs is None:
            return why
        data, idx = in_specs[0], in_specs[1]
        if idx.dtype not in INT_DTYPES:
            return f"{step.kind}: {idx.dtype} indices"
        if step.op == "vx.gather_nd":
            k = idx.shape[-1] if idx.shape else 0
            if k > RANK:
                return f"{step.kind}: index rows of {k} entries (the kernel takes <= {RANK})"
            if 0 in data.shape[int(step.attrs["batch_dims"]) :][:k]:
                return f"{step.kind}: an indexed axis is empty"
            return None
        if len(data.shape) > RANK:
            return f"{step.kind}: rank {len(data.shape)} > {RANK}"
        if data.shape and data.shape[int(step.attrs["axis"])] == 0 and math.prod(idx.shape):
            return f"{step.kind}: indices into an empty axis"
        reduction = step.attrs.get("reduction", "none")
        if reduction != "none":
            return f"{step.kind}: reduction '{reduction}' has no Vulkan kernel (needs atomics)"
        return None

    return gate


def _padded(values: list[int], fill: int = 1) -> list[int]:
    return list(values) + [fill] * (RANK - len(values))


def _idx_defines(idx: TensorArg) -> dict[str, str] | None:
    """int64 indices (stored as int64) are read as word pairs."""
    return {"VKNN_IDX64": "1"} if idx.dtype == "int64" else None


def record_elements(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch | Copy]:
    data, idx, y = ins[0], ins[1], outs[0]
    axis = int(step.attrs["axis"])
    scatter = step.op == "vx.scatter_elements"
    src = ins[2] if scatter else data
    n = idx.size
    records: list[Dispatch | Copy] = []
    if scatter:
        # The untouched elements: data copied whole, before the writes.
        nbytes = min(data.ref.nbytes, y.ref.nbytes)
        if nbytes:
            records.append(
                Copy(
                    data.ref.buffer,
                    data.ref.offset,
                    y.ref.buffer,
                    y.ref.offset,
                    nbytes,
                    ctx.op_index,
                )  # fmt: skip
            )
    if n == 0:
        return records
    rank = len(data.shape)
    strides = row_strides(data.shape)
    pipe = pipeline(ctx, "indexing", y.dtype, ((1, _MODES[step.op]), (2, max(1, rank))), 3,
                    _PUSH.size, _idx_defines(idx))  # fmt: skip
    dims = _padded(list(idx.shape) or [1])
    strd = _padded(strides or [1], 0)
    extent = data.shape[axis] if data.shape else 1
    return records + flat_dispatches(
        pipe,
        [src.binding(), idx.binding(), y.binding(write=True)],
        n,
        lambda base: _PUSH.pack(n, base, extent, axis, 0, 0, *dims, *strd),
        ctx.caps,
        OpPhase(ctx.op_index, 1) if scatter else ctx.op_index,
        label(step),
    )


def record_gather_nd(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    data, idx, y = ins[0], ins[1], outs[0]
    n = y.size
    if n == 0:
        return []
    b = int(step.attrs["batch_dims"])
    k = idx.shape[-1]
    strides = row_strides(data.shape)
    nbatch = math.prod(data.shape[:b])
    m = math.prod(idx.shape[b:-1])
    sl = math.prod(data.shape[b + k :])
    bstride = strides[b - 1] if b else 0
    dims = _padded(list(data.shape[b : b + k]))
    strd = _padded(strides[b : b + k], 0)
    assert n == nbatch * m * sl
    pipe = pipeline(ctx, "indexing", y.dtype, ((1, 2), (2, 1)), 3, _PUSH.size, _idx_defines(idx))
    return flat_dispatches(
        pipe,
        [data.binding(), idx.binding(), y.binding(write=True)],
        n,
        lambda base: _PUSH.pack(n, base, m, sl, k, bstride, *dims, *strd),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


def gate_float_test(
    step: Step, caps: DeviceCaps, in_specs: list[TensorSpec] | None = None
) -> str | None:
    why = check_specs(step, in_specs, 1)
    if why or in_specs is None:
        return why
    if in_specs[0].dtype not in ("float32", "float16"):
        return f"{step.kind}: {in_specs[0].dtype} input"
    return None


def record_float_test(
    step: Step, ctx: RecordContext, ins: list[TensorArg], outs: list[TensorArg]
) -> list[Dispatch]:
    x, y = ins[0], outs[0]
    n = y.size
    if n == 0:
        return []
    test = FLOAT_TESTS[str(step.attrs["test"])]
    pipe = pipeline(ctx, "float_test", x.dtype, ((1, test),), 2, _TEST_PUSH.size)
    return flat_dispatches(
        pipe,
        [x.binding(), y.binding(write=True)],
        n,
        lambda base: _TEST_PUSH.pack(n, base),
        ctx.caps,
        ctx.op_index,
        label(step),
    )


# int64 data and indices move as word pairs (no shaderInt64 needed).
register(KernelSpec("vx.gather_elements", _index_gate(2), record_elements, int64="words"))  # type: ignore[arg-type]
register(KernelSpec("vx.scatter_elements", _index_gate(3), record_elements, int64="words"))  # type: ignore[arg-type]
register(KernelSpec("vx.gather_nd", _index_gate(2), record_gather_nd, int64="words"))  # type: ignore[arg-type]
register(KernelSpec("vx.float_test", gate_float_test, record_float_test))
