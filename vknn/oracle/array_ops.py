"""CPU kernels of ONNX array-building and rearranging ops with no `vx`
lowering: Trilu, EyeLike, Range, Tile, DepthToSpace, SpaceToDepth,
ReverseSequence."""

from __future__ import annotations

import math

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.onnx_common import Array, attr, need, out_dtype, scalar
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


@register("onnx.Trilu")
def trilu(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, k = need(inputs[0]), int(scalar(inputs[1] if len(inputs) > 1 else None, 0))
    # np.triu / np.tril work on the last two axes of a stack.
    return [np.triu(x, k) if int(attr(step, "upper", 1)) else np.tril(x, k)]


@register("onnx.EyeLike")
def eye_like(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    n, m = x.shape
    return [np.eye(n, m, int(attr(step, "k", 0)), dtype=out_dtype(step))]


@register("onnx.Range")
def range_(step: Step, inputs: list[Array | None]) -> list[Array]:
    start, limit, delta = (scalar(x) for x in inputs)
    count = max(int(math.ceil((limit - start) / delta)), 0)
    dt = out_dtype(step)
    # start + i * delta in the output type, as the spec's loop computes it.
    return [(np.asarray(start, dt) + np.arange(count, dtype=dt) * np.asarray(delta, dt)).astype(dt)]


@register("onnx.Tile")
def tile(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.tile(need(inputs[0]), [int(r) for r in need(inputs[1]).reshape(-1)])]


@check("onnx.DepthToSpace", "onnx.SpaceToDepth")
def _check_d2s(step: Step) -> str | None:
    mode = attr(step, "mode", "DCR")
    return None if mode in ("DCR", "CRD") else f"mode '{mode}' is not DCR or CRD"


@register("onnx.DepthToSpace")
def depth_to_space(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, b = need(inputs[0]), int(attr(step, "blocksize"))
    n, c, h, w = x.shape
    if attr(step, "mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return [contiguous(y.reshape(n, c // (b * b), h * b, w * b))]


@register("onnx.SpaceToDepth")
def space_to_depth(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, b = need(inputs[0]), int(attr(step, "blocksize"))
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if attr(step, "mode", "DCR") == "DCR":
        y = y.transpose(0, 3, 5, 1, 2, 4)
    else:
        y = y.transpose(0, 1, 3, 5, 2, 4)
    return [contiguous(y.reshape(n, c * b * b, h // b, w // b))]


@register("onnx.ReverseSequence")
def reverse_sequence(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, lens = need(inputs[0]), need(inputs[1]).reshape(-1)
    bax, tax = int(attr(step, "batch_axis", 1)), int(attr(step, "time_axis", 0))
    out = np.array(x, copy=True)
    for b, n in enumerate(lens):
        src = [slice(None)] * x.ndim
        src[bax], src[tax] = b, slice(0, int(n))
        out[tuple(src)] = np.flip(x[tuple(src)], axis=tax - (1 if bax < tax else 0))
    return [out]
