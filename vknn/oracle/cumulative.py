"""CPU kernels of CumSum and CumProd: any axis sign (the axis is a tensor
operand), `exclusive` and `reverse`; and of `vx.cum_sum` (its axis a
normalized attribute), the oracle of kernels/cumsum.py."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous, widen
from vknn.oracle.onnx_common import Array, attr, need, norm_axis, out_dtype, scalar
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _cumulative(step: Step, inputs: list[Array | None], op: np.ufunc) -> list[Array]:
    x = need(inputs[0])
    a = norm_axis(step, int(scalar(inputs[1])), x.ndim)
    return [_accumulate(step, x, a, op)]


def _accumulate(step: Step, x: Array, a: int, op: np.ufunc) -> Array:
    y = widen(x)
    if int(attr(step, "reverse", 0)):
        y = np.flip(y, a)
    out = op.accumulate(y, axis=a)
    if int(attr(step, "exclusive", 0)):
        # Shift by one along the axis, the identity first.
        head = np.full_like(np.take(out, [0], axis=a), op.identity)
        out = np.concatenate([head, np.take(out, range(out.shape[a] - 1), axis=a)], axis=a)
    if int(attr(step, "reverse", 0)):
        out = np.flip(out, a)
    return contiguous(out).astype(out_dtype(step), copy=False)


@register("onnx.CumSum")
def cumsum(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _cumulative(step, inputs, np.add)


@register("onnx.CumProd")
def cumprod(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _cumulative(step, inputs, np.multiply)


@register("vx.cum_sum")
def vx_cum_sum(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [_accumulate(step, need(inputs[0]), int(step.attrs["axis"]), np.add)]
