"""CPU kernels of the normalizations: `vx.softmax`, `vx.log_softmax`,
`vx.layernorm`, `vx.batchnorm` (inference) and `vx.lrn`: the numeric oracle
of each. Narrow floats compute in float32 (see `numerics`), and every
exponential is taken after subtracting the maximum so no input overflows."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import finish, widen
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _shifted(x: np.ndarray, axis: int) -> np.ndarray:
    """x - max(x) along `axis`: exp of it is at most 1. As in onnxruntime, a
    row whose max is +inf, -inf (all -inf) or NaN becomes all NaN (inf - inf)."""
    with np.errstate(invalid="ignore"):
        return x - x.max(axis=axis, keepdims=True)


@register("vx.softmax")
def softmax(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    (x,) = inputs
    assert x is not None
    axis = int(step.attrs["axis"])
    e = np.exp(_shifted(widen(x), axis))
    with np.errstate(invalid="ignore"):
        y = e / e.sum(axis=axis, keepdims=True)
    if step.attrs.get("zero_nan"):
        y = np.where(np.isnan(y), np.zeros((), y.dtype), y)
    return [finish(step, y)]


@register("vx.log_softmax")
def log_softmax(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    (x,) = inputs
    assert x is not None
    axis = int(step.attrs["axis"])
    s = _shifted(widen(x), axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return [finish(step, s - np.log(np.exp(s).sum(axis=axis, keepdims=True)))]


@register("vx.layernorm")
def layernorm(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, scale, bias = (*inputs, None)[:3]  # bias may be absent altogether
    assert x is not None and scale is not None
    xf = widen(x)
    axes = tuple(range(int(step.attrs["axis"]), x.ndim))
    # Two-pass variance (mean of squared deviations): no cancellation when the
    # mean is large against the spread, unlike E[x^2] - E[x]^2.
    centered = xf - xf.mean(axis=axes, keepdims=True)
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    eps = np.asarray(step.attrs["epsilon"], dtype=xf.dtype)
    y = centered / np.sqrt(var + eps) * scale.astype(xf.dtype, copy=False)
    if bias is not None:
        y = y + bias.astype(xf.dtype, copy=False)
    return [finish(step, y)]


@register("vx.batchnorm")
def batchnorm(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, scale, bias, mean, var = inputs
    assert x is not None and scale is not None and bias is not None
    assert mean is not None and var is not None
    xf = widen(x)
    per_channel = (-1, *([1] * (x.ndim - 2)))

    def param(v: np.ndarray) -> np.ndarray:
        return v.astype(xf.dtype, copy=False).reshape(per_channel)

    eps = np.asarray(step.attrs["epsilon"], dtype=xf.dtype)
    # Folded to one multiply-add per element, as inference runtimes do.
    gain = param(scale) / np.sqrt(param(var) + eps)
    y = (xf - param(mean)) * gain + param(bias)
    return [finish(step, y)]


@register("vx.lrn")
def lrn(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    (x,) = inputs
    assert x is not None
    a = step.attrs
    size = int(a["size"])
    alpha, beta, bias = float(a["alpha"]), float(a["beta"]), float(a["bias"])
    xf = widen(x)
    # ONNX sums channels [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped
    # to the tensor: zero-padding the channel axis by those amounts makes it a
    # plain sliding window of `size` channels.
    before = (size - 1) // 2
    after = size - 1 - before
    sq = np.pad(xf * xf, [(0, 0), (before, after), *([(0, 0)] * (x.ndim - 2))])
    square_sum = np.lib.stride_tricks.sliding_window_view(sq, size, axis=1).sum(axis=-1)
    y = xf / (bias + (alpha / size) * square_sum) ** beta
    return [finish(step, y)]
