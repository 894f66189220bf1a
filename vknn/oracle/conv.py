"""CPU kernels of `vx.conv` and `vx.conv_transpose` (N-d, grouped, dilated,
explicitly padded): the numeric oracle of every convolution in the engine.

Both are one batched GEMM per call on numpy/BLAS: conv gathers its input
windows (im2col) through a strided view; the transposed conv multiplies first
and scatters the per-tap products back (col2im), one vectorized add per
kernel tap. No loop here runs over pixels or channels; `auto_pad` and
`output_shape` were resolved to explicit pads by the lowering.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from vknn.oracle.numerics import finish, strided_windows, widen
from vknn.oracle.registry import register
from vknn.runtime.plan import Step

_IM2COL_BUDGET = 1 << 26
"""Elements of one im2col matrix (256 MiB in f32): larger batches are
gathered one image at a time so big models don't double their memory."""


def _add_bias(y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    if bias is not None:
        y += bias.astype(y.dtype, copy=False).reshape(-1, *([1] * (y.ndim - 2)))
    return y


@register("vx.conv")
def conv(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    # An absent optional bias is either a None input or no input at all.
    x_in, w_in, bias = (*inputs, None)[:3]
    assert x_in is not None and w_in is not None
    x = widen(x_in)
    w = w_in.astype(x.dtype, copy=False)
    strides = tuple(step.attrs["strides"])
    dilations = tuple(step.attrs["dilations"])
    pads = tuple(step.attrs["pads"])
    group = int(step.attrs["group"])
    n = x.ndim - 2
    batch, channels = x.shape[:2]
    m, kernel = w.shape[0], tuple(w.shape[2:])
    cg, mg = channels // group, m // group
    out = tuple(
        (x.shape[2 + i] + pads[i] + pads[n + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i]
        + 1
        for i in range(n)
    )
    taps = cg * math.prod(kernel)
    pixels = math.prod(out)

    # np.pad always copies; unpadded convs read the input in place.
    xp = np.pad(x, [(0, 0), (0, 0), *zip(pads[:n], pads[n:], strict=True)]) if any(pads) else x
    windows = strided_windows(xp, kernel, strides, dilations, out)  # [N, C, *O, *K]
    # Split channels into groups (a free reshape of the view) and put the
    # reduction dims (Cg, *K) before the pixels: y[G, Mg, P] = W[G, Mg, Cg*K] @
    # cols[G, Cg*K, P] comes out in NCHW order with no transpose, and for an
    # unpadded stride-1 1x1 conv the im2col reshape is free.
    windows = windows.reshape(batch, group, cg, *out, *kernel)
    order = (0, 1, 2, *range(3 + n, 3 + 2 * n), *range(3, 3 + n))
    windows = windows.transpose(order)  # [N, G, Cg, *K, *O]
    wm = w.reshape(group, mg, taps)

    y = np.empty((batch, group, mg, pixels), dtype=x.dtype)
    chunk = batch if batch * group * pixels * taps <= _IM2COL_BUDGET else 1
    for b in range(0, batch, chunk):
        cols = windows[b : b + chunk].reshape(-1, group, taps, pixels)  # the im2col copy
        np.matmul(wm, cols, out=y[b : b + chunk])
    y = y.reshape(batch, m, *out)
    return [finish(step, _add_bias(y, bias))]


@register("vx.conv_transpose")
def conv_transpose(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    # An absent optional bias is either a None input or no input at all.
    x_in, w_in, bias = (*inputs, None)[:3]
    assert x_in is not None and w_in is not None
    x = widen(x_in)
    w = w_in.astype(x.dtype, copy=False)
    strides = tuple(step.attrs["strides"])
    dilations = tuple(step.attrs["dilations"])
    pads = tuple(step.attrs["pads"])
    out_pad = tuple(step.attrs["output_padding"])
    group = int(step.attrs["group"])
    n = x.ndim - 2
    batch, channels = x.shape[:2]
    size = tuple(x.shape[2:])
    mg, kernel = w.shape[1], tuple(w.shape[2:])
    cg, m = channels // group, w.shape[1] * group

    # GEMM: every input pixel times every (output channel, tap) of its group.
    xg = x.reshape(batch, group, cg, math.prod(size)).transpose(0, 1, 3, 2)  # [N, G, P, Cg]
    wg = w.reshape(group, cg, mg * math.prod(kernel))  # [G, Cg, Mg*K]
    cols = np.matmul(xg, wg).reshape(batch, group, *size, mg, *kernel)

    # col2im: tap k of input pixel i lands on output pixel i*stride + k*dilation.
    # The full (uncropped) extent includes output_padding, which only adds
    # zeros at the end before the end pads are cropped off.
    full = tuple(
        strides[i] * (size[i] - 1) + dilations[i] * (kernel[i] - 1) + 1 + out_pad[i]
        for i in range(n)
    )
    y = np.zeros((batch, group, mg, *full), dtype=x.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        dst = tuple(
            slice(t * d, t * d + s * (e - 1) + 1, s)
            for t, d, s, e in zip(tap, dilations, strides, size, strict=True)
        )
        y[(slice(None), slice(None), slice(None), *dst)] += np.moveaxis(cols[(..., *tap)], -1, 2)
    crop = tuple(slice(pads[i], full[i] - pads[n + i]) for i in range(n))
    y = y[(slice(None), slice(None), slice(None), *crop)]
    y = y.reshape(batch, m, *y.shape[3:])
    return [finish(step, _add_bias(y, bias))]
