"""CPU kernels of the ONNX signal ops: DFT (opset 17 axis attribute, opset 20
axis operand; real or complex input, dft_length, inverse, onesided), STFT,
and the Hann / Hamming / Blackman windows."""

from __future__ import annotations

import numpy as np

from vknn.oracle.onnx_common import Array, attr, need, norm_axis, out_dtype, scalar
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _complex(x: Array) -> Array:
    """[..., 1] real or [..., 2] (re, im) as a complex array without the last
    axis, complex64 for float32 input (numpy's FFT then keeps single precision,
    as the spec's reference does)."""
    ct = np.complex64 if x.dtype.itemsize <= 4 else np.complex128
    z = x[..., 0].astype(ct)
    return z + 1j * x[..., 1].astype(ct) if x.shape[-1] == 2 else z


def _pairs(z: Array) -> Array:
    return np.stack([z.real, z.imag], axis=-1)


@register("onnx.DFT")
def dft(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    n = scalar(inputs[1] if len(inputs) > 1 else None)
    if len(inputs) > 2 and inputs[2] is not None:
        a = int(scalar(inputs[2]))
    else:
        a = int(attr(step, "axis", 1 if "axis" in step.attrs else -2))
    a = norm_axis(step, a, x.ndim)
    z = _complex(x)
    inverse, onesided = int(attr(step, "inverse", 0)), int(attr(step, "onesided", 0))
    if n is None:
        n = 2 * (z.shape[a] - 1) if inverse and onesided else z.shape[a]
    n = int(n)
    if inverse and onesided:  # a one-sided spectrum back to a real signal
        return [np.fft.irfft(z, n=n, axis=a)[..., None].astype(out_dtype(step))]
    y = np.fft.ifft(z, n=n, axis=a) if inverse else np.fft.fft(z, n=n, axis=a)
    if onesided:
        y = np.take(y, range(n // 2 + 1), axis=a)
    return [_pairs(y).astype(out_dtype(step))]


@register("onnx.STFT")
def stft(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _complex(need(inputs[0]))  # [batch, length]
    hop = int(scalar(inputs[1]))
    window = inputs[2] if len(inputs) > 2 else None
    length = scalar(inputs[3] if len(inputs) > 3 else None)
    length = int(length) if length is not None else int(need(window).shape[0])
    frames = 1 + (x.shape[1] - length) // hop
    idx = np.arange(frames)[:, None] * hop + np.arange(length)
    seg = x[:, idx]  # [batch, frames, length]
    if window is not None:
        seg = seg * window.astype(np.float64)
    y = np.fft.fft(seg, axis=-1)
    if int(attr(step, "onesided", 1)):
        y = y[..., : length // 2 + 1]
    return [_pairs(y).astype(out_dtype(step))]


def _window(step: Step, inputs: list[Array | None], coeffs: list[float]) -> list[Array]:
    n = int(scalar(inputs[0]))
    denom = n if int(attr(step, "periodic", 1)) else n - 1
    k = np.arange(n, dtype=np.float64)
    w = np.zeros(n)
    for i, c in enumerate(coeffs):
        w += c * np.cos(2 * np.pi * i * k / max(denom, 1)) * (-1) ** i
    return [w.astype(out_dtype(step))]


@register("onnx.HannWindow")
def hann(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _window(step, inputs, [0.5, 0.5])


@register("onnx.HammingWindow")
def hamming(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _window(step, inputs, [25 / 46, 1 - 25 / 46])


@register("onnx.BlackmanWindow")
def blackman(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _window(step, inputs, [0.42, 0.5, 0.08])
