"""Precision rules shared by the CPU kernels: which dtype a kernel computes
in, and how its result is handed back with exactly the planned dtype and
shape. Kernels never decide precision on their own, so the oracle's numerics
are the same for every op family."""

from __future__ import annotations

import numpy as np

from vknn.errors import VknnError
from vknn.runtime.plan import Step, TensorSpec


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16 (and other narrow floats) compute in float32 like onnxruntime's
    CPU provider does; float32/float64 keep their width; integers stay exact."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.dtype(np.float64) if dtype.itemsize >= 8 else np.dtype(np.float32)
    if dtype.kind in "iub":
        return dtype
    # ml_dtypes' bfloat16/float8 report kind "V": treat them as narrow floats.
    return np.dtype(np.float32)


def widen(x: np.ndarray) -> np.ndarray:
    """`x` in its compute dtype (no copy when it already is)."""
    return x.astype(compute_dtype(x.dtype), copy=False)


def finish(step: Step, out: np.ndarray, index: int = 0) -> np.ndarray:
    """`out` cast to the planned result type; a shape that differs from the
    plan is a kernel bug, reported with the node rather than passed on."""
    spec: TensorSpec = step.out_specs[index]
    out = np.asarray(out)
    # -1 is a dim the compiler left dynamic: any extent matches it.
    if len(out.shape) != len(spec.shape) or any(
        d != e and e != -1 for d, e in zip(out.shape, spec.shape, strict=True)
    ):
        raise VknnError(
            f"node '{step.node}' ({step.op}): CPU kernel produced shape {out.shape}, "
            f"the plan expects {spec.shape}"
        )
    return out.astype(spec.np_dtype, copy=False)


def strided_windows(
    xp: np.ndarray,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    out: tuple[int, ...],
) -> np.ndarray:
    """A read-only view [N, C, *out, *kernel] of the (already padded) input
    [N, C, *S]: element [n, c, o..., k...] is xp[n, c, o*stride + k*dilation].
    Conv's im2col and every pool read their windows through this one view, so
    the stride/dilation arithmetic lives in one place. `xp` must be large
    enough for the last window: (out - 1) * stride + dilation * (k - 1) + 1."""
    n = len(kernel)
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True))
    view = np.lib.stride_tricks.sliding_window_view(xp, spans, axis=tuple(range(2, 2 + n)))
    pick = (
        slice(None),
        slice(None),
        *(slice(0, max((o - 1) * s + 1, 0), s) for o, s in zip(out, strides, strict=True)),
        *(slice(None, None, d) for d in dilations),
    )
    return view[pick]


def contiguous(x: np.ndarray) -> np.ndarray:
    """A C-contiguous array; unlike np.ascontiguousarray, a 0-d array stays 0-d."""
    return np.asarray(x, order="C")
