"""Resize coordinate mapping shared by the CPU oracle and the Vulkan kernel
(which builds its index tables on the host): one f32 operation order, so
nearest-mode ties land the same way on both backends and in onnxruntime."""

from __future__ import annotations

import numpy as np

F32 = np.float32


def source_coords(mode: str, out_len: int, in_len: int, scale: float) -> np.ndarray:
    """Input coordinate of each output index along one axis (f32)."""
    x = np.arange(out_len, dtype=F32)
    s = F32(scale)
    half = F32(0.5)
    if mode == "half_pixel":
        return (x + half) / s - half
    if mode == "pytorch_half_pixel":
        return (x + half) / s - half if out_len > 1 else np.zeros(out_len, F32)
    if mode == "align_corners":
        if out_len == 1:
            return np.zeros(out_len, F32)
        return x * F32(in_len - 1) / F32(out_len - 1)
    if mode == "asymmetric":
        return x / s
    if mode == "half_pixel_symmetric":
        adjustment = F32(out_len) / (s * F32(in_len))
        center = F32(in_len) / F32(2)
        offset = center * (F32(1) - adjustment)
        # onnxruntime evaluates this last step in f64 (its 0.5 literals are
        # doubles), then rounds once to f32; ties in nearest mode depend on it.
        xd = x.astype(np.float64)
        return (np.float64(offset) + (xd + 0.5) / np.float64(s) - 0.5).astype(F32)
    raise ValueError(f"coordinate mode {mode!r}")


def nearest_index(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "round_prefer_floor":
        # Ties go down; elsewhere round half away from zero.
        tie = x == np.floor(x) + F32(0.5)
        r = np.where(tie, np.floor(x), np.copysign(np.floor(np.abs(x) + F32(0.5)), x))
    elif mode == "round_prefer_ceil":
        r = np.copysign(np.floor(np.abs(x) + F32(0.5)), x)
    elif mode == "floor":
        r = np.floor(x)
    elif mode == "ceil":
        r = np.ceil(x)
    else:
        raise ValueError(f"nearest mode {mode!r}")
    return r.astype(np.int64)
