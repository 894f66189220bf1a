"""CPU kernel of `vx.resize`: ONNX Resize (nearest, N-linear, cubic) over any
number of dims, with every coordinate transformation and nearest mode that
`vx` keeps (tf_crop_and_resize and antialiasing are not lowered).

All three modes are separable: the N-d result is the 1-d resampling applied
axis by axis, each axis described by (source indices, weights) computed once
per output coordinate. Coordinates are computed in f32 in onnxruntime's
operation order, because nearest mode is decided by exact ties (x.5) that
f64 arithmetic would move; the weighted sums then run in f64.
"""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.registry import register
from vknn.runtime.plan import Step
from vknn.runtime.resize_coords import nearest_index, source_coords

Array = np.ndarray
F32 = np.float32


def _cubic_weights(t: Array, a: float) -> Array:
    """Keys' cubic convolution weights of taps -1, 0, 1, 2 for fraction t."""
    t = t.astype(np.float64)
    a = float(np.float32(a))

    def near(d: Array) -> Array:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: Array) -> Array:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def axis_taps(
    mode: str,
    coord_mode: str,
    nearest_mode: str,
    in_len: int,
    out_len: int,
    scale: float,
    cubic_a: float,
    exclude_outside: bool,
) -> tuple[Array, Array]:
    """(indices [out, taps], weights [out, taps]) of one axis."""
    x = source_coords(coord_mode, out_len, in_len, scale)
    last = in_len - 1
    if mode == "nearest":
        idx = np.clip(nearest_index(x, nearest_mode), 0, last)
        return idx[:, None], np.ones((out_len, 1))
    if mode == "linear":
        # Out-of-range coordinates clamp to the edge (onnxruntime), which is
        # what ONNX's edge padding gives too.
        xc = np.clip(x, F32(0), F32(last))
        i0 = np.minimum(np.floor(xc).astype(np.int64), last)
        i1 = np.minimum(i0 + 1, last)
        frac = xc.astype(np.float64) - i0
        return np.stack([i0, i1], -1), np.stack([1 - frac, frac], -1)
    if mode == "cubic":
        base = np.floor(x).astype(np.int64)
        frac = (x - np.floor(x)).astype(F32)
        taps = base[:, None] + np.arange(-1, 3)[None, :]
        w = _cubic_weights(frac, cubic_a)
        if exclude_outside:
            w = np.where((taps < 0) | (taps > last), 0.0, w)
            w = w / w.sum(axis=1, keepdims=True)
        return np.clip(taps, 0, last), w
    raise ValueError(f"resize mode {mode!r}")


def resize(
    x: Array,
    out_shape: tuple[int, ...],
    mode: str,
    scales: tuple[float, ...],
    coord_mode: str,
    nearest_mode: str,
    cubic_a: float,
    exclude_outside: bool,
) -> Array:
    y = x if mode == "nearest" else x.astype(np.float64)
    for axis, (in_len, out_len, s) in enumerate(zip(x.shape, out_shape, scales, strict=True)):
        if in_len == out_len and s == 1.0:
            continue  # an unscaled axis maps every index to itself in every mode
        idx, w = axis_taps(
            mode, coord_mode, nearest_mode, in_len, out_len, s, cubic_a, exclude_outside
        )
        if mode == "nearest":
            y = np.take(y, idx[:, 0], axis=axis)
            continue
        # gathered: [..., out, taps, ...] along `axis`; weights broadcast there
        gathered = np.take(y, idx, axis=axis)
        shape = [1] * gathered.ndim
        shape[axis], shape[axis + 1] = w.shape
        y = np.sum(gathered * w.reshape(shape), axis=axis + 1)
    return y


@register("vx.resize")
def resize_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = inputs[0]
    assert x is not None
    a = step.attrs
    spec = step.out_specs[0]
    y = resize(
        x,
        spec.shape,
        a["mode"],
        tuple(float(s) for s in a["scales"]),
        a["coordinate_mode"],
        a["nearest_mode"],
        float(a["cubic_coeff_a"]),
        bool(a["exclude_outside"]),
    )
    if spec.np_dtype.kind in "iu" and y.dtype.kind == "f":
        y = np.rint(y)
    return [contiguous(y.astype(spec.np_dtype, copy=False))]
