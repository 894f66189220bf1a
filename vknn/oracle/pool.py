"""CPU kernel of `vx.pool` (max / avg / lp, N-d, strided, dilated, padded,
ceil mode): the numeric oracle of every pooling op, global pools included
(the lowering makes those full-extent kernels).

Windows are read through one strided view of the padded input and reduced
in one numpy call; average pooling divides by a per-output count computed
the same way from a 0/1 mask, which is how pads are excluded (or included)
exactly as ONNX defines, also for ceil-mode windows that run past the pads.
"""

from __future__ import annotations

import math

import numpy as np

from vknn.oracle.numerics import finish, strided_windows, widen
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _out_size(size: int, k: int, s: int, begin: int, end: int, d: int, ceil: bool) -> int:
    """ONNX's pooled extent; a ceil-mode window must start inside the input or
    its begin padding (onnxruntime, PyTorch, ONNX >= 22), never in end pads."""
    span = d * (k - 1) + 1
    if not ceil:
        return (size + begin + end - span) // s + 1
    out = -(-(size + begin + end - span) // s) + 1
    if (out - 1) * s >= size + begin:
        out -= 1
    return out


def _reduce_windows(view: np.ndarray, n: int, ufunc: np.ufunc) -> np.ndarray:
    """`ufunc`-reduce the window dims of a [N, C, *O, *K] view. Small windows
    over many outputs go one kernel tap at a time (one contiguous-output
    ufunc call per tap); a multi-axis reduce of the strided view is slow
    there, but it is the better choice for few outputs of large windows
    (global pools)."""
    kernel = view.shape[2 + n :]
    if math.prod(kernel) > math.prod(view.shape[2 : 2 + n]):
        return ufunc.reduce(view, axis=tuple(range(2 + n, 2 + 2 * n)))
    taps = np.ndindex(*kernel)
    acc = view[(..., *next(taps))].copy()
    for tap in taps:
        ufunc(acc, view[(..., *tap)], out=acc)
    return acc


def _lowest(dtype: np.dtype) -> float | int:
    """The identity of max: -inf, or an integer type's minimum."""
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind == "b":
        return False
    return int(np.iinfo(dtype).min)


@register("vx.pool")
def pool(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    (x,) = inputs
    assert x is not None
    a = step.attrs
    kind = str(a["kind"])
    kernel = tuple(a["kernel"])
    strides = tuple(a["strides"])
    pads = tuple(a["pads"])
    dilations = tuple(a["dilations"])
    n = len(kernel)
    begins, ends = pads[:n], pads[n:]
    size = tuple(x.shape[2:])
    out = tuple(
        _out_size(
            size[i], kernel[i], strides[i], begins[i], ends[i], dilations[i], bool(a["ceil_mode"])
        )
        for i in range(n)
    )
    # Ceil mode may need input beyond the end pads for its last window; that
    # region is padding too but never counted as such (see the mask below).
    extra = tuple(
        max(
            0,
            (out[i] - 1) * strides[i]
            + dilations[i] * (kernel[i] - 1)
            + 1
            - (size[i] + begins[i] + ends[i]),
        )
        for i in range(n)
    )
    spatial_pads = [(b, e + x_) for b, e, x_ in zip(begins, ends, extra, strict=True)]

    def windows(t: np.ndarray, fill: float | int, ufunc: np.ufunc) -> np.ndarray:
        tp = np.pad(t, [(0, 0), (0, 0), *spatial_pads], constant_values=fill)
        return _reduce_windows(strided_windows(tp, kernel, strides, dilations, out), n, ufunc)

    if kind == "max":
        # Max is exact in any dtype: no widening, integers stay integers. NaN is
        # skipped (the max of the rest, as onnxruntime's MLAS pooling); a window
        # of only NaN gives -inf (onnxruntime: -FLT_MAX).
        if x.dtype.kind == "f":
            x = np.where(np.isnan(x), np.asarray(-np.inf, x.dtype), x)
        y = windows(x, _lowest(x.dtype), np.maximum)
        return [finish(step, y)]

    xf = widen(x)
    if kind == "lp":
        p = int(a["p"])
        # Zero pads add nothing to sum |x|^p, so they need no mask.
        mag = np.abs(xf)
        powed = mag * mag if p == 2 else mag if p == 1 else mag**p
        s = windows(powed, 0, np.add)
        y = np.sqrt(s) if p == 2 else s if p == 1 else s ** (1.0 / p)
        return [finish(step, y)]

    if kind != "avg":
        raise ValueError(f"unknown pool kind {kind!r}")
    total = windows(xf, 0, np.add)
    # The divisor is the number of window taps on counted positions: the input
    # only, or input + explicit pads with count_include_pad (never the ceil
    # region beyond the end pads).
    if a["count_include_pad"]:
        ones = np.ones(
            (1, 1, *(s + b + e for s, b, e in zip(size, begins, ends, strict=True))), dtype=xf.dtype
        )
        mask = np.pad(ones, [(0, 0), (0, 0), *((0, e) for e in extra)])
        count = _reduce_windows(strided_windows(mask, kernel, strides, dilations, out), n, np.add)
    else:
        count = windows(np.ones((1, 1, *size), dtype=xf.dtype), 0, np.add)
    return [finish(step, total / count)]
