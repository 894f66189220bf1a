"""CPU kernels of GridSample (N-d; nearest / linear / cubic, the opset-16
names bilinear / bicubic too; padding zeros / border / reflection;
align_corners) and AffineGrid (2-D and 3-D). Sampling follows the spec and
onnxruntime: denormalize, round half to even for nearest, clamp or reflect
the coordinate, then fetch each tap with the padding mode."""

from __future__ import annotations

import itertools

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step

_MODES = {"linear": "linear", "bilinear": "linear", "nearest": "nearest",
          "cubic": "cubic", "bicubic": "cubic"}  # fmt: skip
_PADDING = ("zeros", "border", "reflection")


@check("onnx.GridSample")
def _check(step: Step) -> str | None:
    mode, pad = attr(step, "mode", "linear"), attr(step, "padding_mode", "zeros")
    if mode not in _MODES:
        return f"mode '{mode}' is not one of {sorted(_MODES)}"
    return None if pad in _PADDING else f"padding_mode '{pad}' is not one of {_PADDING}"


def _reflect(x: Array, lo: float, hi: float) -> Array:
    """Reflect `x` by the near border until it lies in [lo, hi]."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = lo - x, x - hi
    nb, na = np.floor(below / span), np.floor(above / span)
    rb, ra = below - nb * span, above - na * span
    low = np.where(nb % 2 == 0, lo + rb, hi - rb)
    high = np.where(na % 2 == 0, hi - ra, lo + ra)
    return np.where(x < lo, low, np.where(x > hi, high, x))


def _cubic(t: Array) -> list[Array]:
    a = -0.75
    t1, t2 = t + 1, 1 - t
    return [
        ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1,
        ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
    ]


@register("onnx.GridSample")
def grid_sample(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, grid = widen(need(inputs[0])), need(inputs[1])
    mode = _MODES[attr(step, "mode", "linear")]
    pad = attr(step, "padding_mode", "zeros")
    align = bool(int(attr(step, "align_corners", 0)))
    n, c, dims = x.shape[0], x.shape[1], x.shape[2:]
    out_sp = grid.shape[1:-1]
    g = grid.reshape(n, -1, len(dims)).astype(np.float64)[..., ::-1]  # [N, P, r]: D1..Dr
    coords, bounds = [], []
    for i, size in enumerate(dims):
        v = g[..., i]
        v = ((v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2).astype(np.float32)
        coords.append(np.rint(v) if mode == "nearest" else v)
        bounds.append((0.0, size - 1.0) if align else (-0.5, size - 0.5))
    # As onnxruntime: a point outside the border on any axis is reflected on
    # every axis.
    outside = np.zeros(g.shape[:2], bool)
    for v, (lo, hi) in zip(coords, bounds, strict=True):
        outside |= (v < lo) | (v > hi)
    taps_per_dim = []
    for i, size in enumerate(dims):
        v, (lo, hi) = coords[i], bounds[i]
        # Border needs no clamp of the coordinate: each tap index is clamped
        # (onnxruntime's cubic reads the 4x4 taps around the unclamped point).
        if pad == "reflection":
            v = np.where(outside, _reflect(v.astype(np.float64), lo, hi).astype(np.float32), v)
        v = v.astype(np.float64)
        if mode == "nearest":
            taps = [(v.astype(np.int64), np.ones_like(v))]
        else:
            base = np.floor(v)
            t = v - base
            if mode == "linear":
                taps = [(base.astype(np.int64), 1 - t), (base.astype(np.int64) + 1, t)]
            else:
                taps = [(base.astype(np.int64) + k - 1, w) for k, w in enumerate(_cubic(t))]
        fixed = []
        for idx, w in taps:
            ok = (idx >= 0) & (idx < size)
            if pad == "border":
                idx = np.clip(idx, 0, size - 1)
                ok = np.ones_like(ok)
            elif pad == "reflection":
                idx = _reflect(idx.astype(np.float64), lo, hi).astype(np.int64)
                ok = np.ones_like(ok)
            fixed.append((np.clip(idx, 0, size - 1), np.where(ok, w, 0.0)))
        taps_per_dim.append(fixed)
    rows = np.arange(n)[:, None]
    acc = np.zeros((n, g.shape[1], c), np.float64)
    for combo in itertools.product(*taps_per_dim):
        w = np.prod([cw for _, cw in combo], axis=0)
        vals = x[(rows, slice(None), *(ci for ci, _ in combo))]  # [N, P, C]
        acc += vals * w[..., None]
    y = np.moveaxis(acc, 2, 1).reshape(n, c, *out_sp)
    return [y.astype(out_dtype(step))]


def _base(size: int, align: bool) -> Array:
    if align:
        return np.linspace(-1.0, 1.0, size) if size > 1 else np.zeros(1)
    return (np.arange(size) * 2.0 + 1) / size - 1


@register("onnx.AffineGrid")
def affine_grid(step: Step, inputs: list[Array | None]) -> list[Array]:
    theta, size = widen(need(inputs[0])), [int(s) for s in need(inputs[1]).reshape(-1)]
    align = bool(int(attr(step, "align_corners", 0)))
    spatial = size[2:]
    axes = [_base(s, align) for s in spatial][::-1]  # x (W) first
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # coordinates x, y(, z)
    ones = np.ones_like(mesh[0])
    points = np.stack([*mesh, ones], axis=-1).reshape(-1, len(spatial) + 1)
    grid = np.einsum("nij,pj->npi", theta, points)
    return [grid.reshape(size[0], *spatial, len(spatial)).astype(out_dtype(step))]
