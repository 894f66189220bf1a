"""CPU kernels of ONNX elementwise ops with no `vx` lowering, or whose
lowering refuses a case (an element type, a tensor-valued bound): inverse and
hyperbolic trig, Log/Sqrt, IsNaN/IsInf, Shrink, Swish, SwiGLU, Clip, Mod,
the Bitwise ops, BitShift, Det. Binary ops broadcast as numpy (multidirectional,
as the spec says); float16 computes in float32."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step

_UNARY: dict[str, Callable[[Array], Array]] = {
    "Acos": np.arccos,
    "Acosh": np.arccosh,
    "Asin": np.arcsin,
    "Asinh": np.arcsinh,
    "Atan": np.arctan,
    "Atanh": np.arctanh,
    "Cosh": np.cosh,
    "Sinh": np.sinh,
    "Log": np.log,
    "Sqrt": np.sqrt,
}


def _unary(step: Step, inputs: list[Array | None]) -> list[Array]:
    fn = _UNARY[step.op.removeprefix("onnx.")]
    with np.errstate(all="ignore"):
        return [fn(widen(need(inputs[0]))).astype(out_dtype(step), copy=False)]


register(*(f"onnx.{n}" for n in _UNARY))(_unary)


@register("onnx.IsNaN")
def is_nan(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.isnan(widen(need(inputs[0])))]


@register("onnx.IsInf")
def is_inf(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = widen(need(inputs[0]))
    pos = np.isposinf(x) if int(attr(step, "detect_positive", 1)) else np.zeros(x.shape, bool)
    neg = np.isneginf(x) if int(attr(step, "detect_negative", 1)) else np.zeros(x.shape, bool)
    return [pos | neg]


@register("onnx.Shrink")
def shrink(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    bias, lambd = float(attr(step, "bias", 0.0)), float(attr(step, "lambd", 0.5))
    w = widen(x).astype(np.float64)
    y = np.where(w < -lambd, w + bias, np.where(w > lambd, w - bias, 0))
    return [y.astype(out_dtype(step))]


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@register("onnx.Swish")
def swish(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = widen(need(inputs[0]))
    return [(x * _sigmoid(float(attr(step, "alpha", 1.0)) * x)).astype(out_dtype(step))]


@register("onnx.SwiGLU")
def swiglu(step: Step, inputs: list[Array | None]) -> list[Array]:
    a, b = widen(need(inputs[0])), widen(need(inputs[1]))
    return [(a * _sigmoid(float(attr(step, "alpha", 1.0)) * a) * b).astype(out_dtype(step))]


@register("onnx.Clip")
def clip(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    lo = inputs[1] if len(inputs) > 1 else None
    hi = inputs[2] if len(inputs) > 2 else None
    y = x
    if lo is not None:
        y = np.maximum(y, lo.reshape(()) if lo.size == 1 else lo)
    if hi is not None:
        y = np.minimum(y, hi.reshape(()) if hi.size == 1 else hi)
    return [np.asarray(y).astype(x.dtype, copy=False)]


@register("onnx.Mod")
def mod(step: Step, inputs: list[Array | None]) -> list[Array]:
    a, b = need(inputs[0]), need(inputs[1])
    with np.errstate(all="ignore"):
        # fmod=1: the sign of the dividend (C fmod); fmod=0: of the divisor.
        y = np.fmod(a, b) if int(attr(step, "fmod", 0)) else np.mod(a, b)
    return [np.asarray(y).astype(out_dtype(step), copy=False)]


_BITWISE = {
    "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
}


def _bitwise(step: Step, inputs: list[Array | None]) -> list[Array]:
    fn = _BITWISE[step.op.removeprefix("onnx.")]
    return [np.asarray(fn(need(inputs[0]), need(inputs[1])))]


register(*(f"onnx.{n}" for n in _BITWISE))(_bitwise)


@register("onnx.BitwiseNot")
def bitwise_not(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.invert(need(inputs[0]))]


@check("onnx.BitShift")
def _check_shift(step: Step) -> str | None:
    d = attr(step, "direction")
    return None if d in ("LEFT", "RIGHT") else f"direction {d!r} is not LEFT or RIGHT"


@register("onnx.BitShift")
def bit_shift(step: Step, inputs: list[Array | None]) -> list[Array]:
    """Shifts by >= the width (or < 0) give 0 (-1 for a negative signed value
    shifted right); a left shift wraps as on unsigned bits."""
    a, b = np.broadcast_arrays(need(inputs[0]), need(inputs[1]))
    bits = np.iinfo(a.dtype).bits
    ok = (b >= 0) & (b < bits)
    sb = np.where(ok, b, 0).astype(a.dtype)
    if attr(step, "direction") == "RIGHT":
        fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
        y = np.where(ok, np.right_shift(a, sb), fill)
    else:
        u = np.dtype(f"u{a.dtype.itemsize}")
        y = np.where(ok, np.left_shift(a.view(u), sb.view(u)).view(a.dtype), 0)
    return [np.asarray(y).astype(a.dtype, copy=False)]


@register("onnx.Det")
def det(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    return [np.asarray(np.linalg.det(widen(x))).astype(out_dtype(step))]
