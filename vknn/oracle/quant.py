"""CPU kernels of `vx.quantize` and `vx.dequantize` (ONNX QuantizeLinear /
DequantizeLinear), per tensor or per axis.

Quantize is saturate(round_half_even(x / scale) + zero_point) with the
division in f32 (as onnxruntime's MLAS does: a different division
precision would move ties); dequantize subtracts the zero point in integers
first, then multiplies by the scale in f32 and rounds to the scale's type.
Blocked quantization is not lowered to these ops.
"""

from __future__ import annotations

import numpy as np

from vknn.oracle.registry import register
from vknn.runtime.plan import Step

Array = np.ndarray


def _along(param: Array, axis: int, rank: int) -> Array:
    """A scalar or [C] parameter shaped to broadcast along `axis`."""
    p = np.asarray(param).reshape(-1)
    if p.size == 1 or rank == 0:
        return p.reshape(())
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


def quantize(x: Array, scale: Array, zero_point: Array | None, axis: int, dtype: np.dtype) -> Array:
    s = _along(scale, axis, x.ndim).astype(np.float32)
    # rint: round half to even, on the f32 quotient; the zero point and the
    # clamp then run in f64, exact for every integer a 32-bit type holds
    # (in f32, int32's max would round up past the range).
    q = np.rint(x.astype(np.float32) / s).astype(np.float64)
    if zero_point is not None:
        q = q + _along(zero_point, axis, x.ndim).astype(np.float64)
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize(
    x: Array, scale: Array, zero_point: Array | None, axis: int, dtype: np.dtype
) -> Array:
    v = x.astype(np.int64)
    if zero_point is not None:
        v = v - _along(zero_point, axis, x.ndim).astype(np.int64)
    s = _along(scale, axis, x.ndim).astype(np.float32)
    return (v.astype(np.float32) * s).astype(dtype)


@register("vx.quantize")
def quantize_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, scale, zp = (inputs + [None])[:3]
    assert x is not None and scale is not None
    with np.errstate(all="ignore"):
        y = quantize(x, scale, zp, int(step.attrs["axis"]), step.out_specs[0].np_dtype)
    return [y]


@register("vx.dequantize")
def dequantize_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, scale, zp = (inputs + [None])[:3]
    assert x is not None and scale is not None
    return [dequantize(x, scale, zp, int(step.attrs["axis"]), step.out_specs[0].np_dtype)]
