"""CPU kernels of CenterCropPad, Col2Im and MaxUnpool."""

from __future__ import annotations

import itertools

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.onnx_common import Array, attr, need, norm_axis
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _ints(x: Array | None) -> list[int]:
    return [] if x is None else [int(v) for v in np.asarray(x).reshape(-1)]


@register("onnx.CenterCropPad")
def center_crop_pad(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, shape = need(inputs[0]), _ints(inputs[1])
    axes = [norm_axis(step, int(a), x.ndim) for a in attr(step, "axes", range(x.ndim))]
    src = [slice(None)] * x.ndim
    dst = [slice(None)] * x.ndim
    out_shape = list(x.shape)
    for a, want in zip(axes, shape, strict=True):
        dim = x.shape[a]
        out_shape[a] = want
        if want < dim:  # crop, the extra element (odd difference) at the end
            start = (dim - want) // 2
            src[a] = slice(start, start + want)
        elif want > dim:  # pad, the extra element at the end
            start = (want - dim) // 2
            dst[a] = slice(start, start + dim)
    out = np.zeros(out_shape, x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return [out]


@register("onnx.Col2Im")
def col2im(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, image, block = need(inputs[0]), _ints(inputs[1]), _ints(inputs[2])
    r = len(image)
    strides = list(attr(step, "strides", [1] * r))
    dil = list(attr(step, "dilations", [1] * r))
    pads = list(attr(step, "pads", [0] * 2 * r))
    n, ck, _ = x.shape
    c = ck // int(np.prod(block))
    padded = [image[i] + pads[i] + pads[i + r] for i in range(r)]
    out_blocks = [(padded[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(r)]
    cols = x.reshape(n, c, *block, *out_blocks)
    img = np.zeros((n, c, *padded), x.dtype)
    for k in itertools.product(*(range(b) for b in block)):
        where = tuple(
            slice(k[i] * dil[i], k[i] * dil[i] + strides[i] * (out_blocks[i] - 1) + 1, strides[i])
            for i in range(r)
        )
        img[(slice(None), slice(None), *where)] += cols[(slice(None), slice(None), *k)]
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(r))
    return [contiguous(img[(slice(None), slice(None), *crop)])]


@register("onnx.MaxUnpool")
def max_unpool(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, idx = need(inputs[0]), need(inputs[1])
    k = list(attr(step, "kernel_shape"))
    r = len(k)
    s = list(attr(step, "strides", [1] * r))
    p = list(attr(step, "pads", [0] * 2 * r))
    sp = [(x.shape[2 + i] - 1) * s[i] - p[i] - p[i + r] + k[i] for i in range(r)]
    inferred = [*x.shape[:2], *sp]
    flat = np.zeros(int(np.prod(inferred)), x.dtype)
    flat[idx.reshape(-1).astype(np.int64)] = x.reshape(-1)
    if len(inputs) < 3 or inputs[2] is None:
        return [flat.reshape(inferred)]
    # An explicit output_shape pads the inferred result at the end.
    out = np.zeros(_ints(inputs[2]), x.dtype)
    out[tuple(slice(0, d) for d in inferred)] = flat.reshape(inferred)
    return [out]
