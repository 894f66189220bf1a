"""CPU kernel of DeformConv (2-D): each kernel tap samples the input at its
regular position plus a learned offset (bilinear, zero outside the image, as
torchvision and onnxruntime), optionally scaled by a mask, then a grouped
convolution of the sampled columns. Offsets and masks are per offset group."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


@check("onnx.DeformConv")
def _check(step: Step) -> str | None:
    k = attr(step, "kernel_shape")
    return None if k is None or len(k) == 2 else "only 2-D DeformConv is implemented"


def _bilinear(img: Array, y: Array, x: Array) -> Array:
    """img [N, C, H, W] sampled at y, x [N, ...] -> [N, C, ...]; 0 outside."""
    n, _, h, w = img.shape
    y0, x0 = np.floor(y), np.floor(x)
    out = 0.0
    rows = np.arange(n).reshape((n,) + (1,) * (y.ndim - 1))
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            wgt = (1 - np.abs(y - yy)) * (1 - np.abs(x - xx))
            ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            yi = np.clip(yy, 0, h - 1).astype(np.int64)
            xi = np.clip(xx, 0, w - 1).astype(np.int64)
            v = img[rows, :, yi, xi]  # [N, ..., C]
            out = out + np.moveaxis(v, -1, 1) * np.where(ok, wgt, 0.0)[:, None]
    return np.asarray(out)


@register("onnx.DeformConv")
def deform_conv(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, w, off = widen(need(inputs[0])), widen(need(inputs[1])), widen(need(inputs[2]))
    bias = inputs[3] if len(inputs) > 3 else None
    mask = inputs[4] if len(inputs) > 4 else None
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    s = list(attr(step, "strides", [1, 1]))
    d = list(attr(step, "dilations", [1, 1]))
    p = list(attr(step, "pads", [0, 0, 0, 0]))
    group, og = int(attr(step, "group", 1)), int(attr(step, "offset_group", 1))
    oh, ow = off.shape[2], off.shape[3]
    k = kh * kw
    off = off.reshape(n, og, k, 2, oh, ow)
    m = widen(mask).reshape(n, og, k, oh, ow) if mask is not None else None
    base_y = (np.arange(oh) * s[0] - p[0])[:, None] + np.zeros((1, ow))
    base_x = (np.arange(ow) * s[1] - p[1])[None, :] + np.zeros((oh, 1))
    cols = np.zeros((n, c, k, oh, ow), np.float64)
    per = c // og
    for g in range(og):
        img = x[:, g * per : (g + 1) * per]
        for t in range(k):
            ty, tx = divmod(t, kw)
            y = base_y + ty * d[0] + off[:, g, t, 0]
            xx = base_x + tx * d[1] + off[:, g, t, 1]
            v = _bilinear(img, y, xx)  # [N, per, oh, ow]
            if m is not None:
                v = v * m[:, g, t][:, None]
            cols[:, g * per : (g + 1) * per, t] = v
    cols = cols.reshape(n, group, cg * k, oh * ow)
    wm = w.reshape(group, oc // group, cg * k)
    y = np.einsum("gok,ngkp->ngop", wm, cols).reshape(n, oc, oh, ow)
    if bias is not None:
        y = y + widen(bias).reshape(1, -1, 1, 1)
    return [y.astype(out_dtype(step))]
