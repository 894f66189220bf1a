"""CPU kernels of `vx.matmul` (numpy-broadcast batched product) and
`vx.gemm` (alpha * op(A) @ op(B) + beta * C): the numeric oracle of every
matrix product. Both go straight to np.matmul, i.e. BLAS for floats."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import compute_dtype, finish
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


@register("vx.matmul")
def matmul(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = inputs
    assert a is not None and b is not None
    dtype = compute_dtype(np.result_type(a.dtype, b.dtype))
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    # The lowering gives vx.matmul rank >= 2 operands, but the kernel keeps
    # ONNX MatMul's 1-D rules too (np.matmul's), so a plan built without that
    # reshape still runs.
    return [finish(step, np.matmul(a, b))]


@register("vx.gemm")
def gemm(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b, c = (*inputs, None)[:3]  # C may be absent altogether
    assert a is not None and b is not None
    dtype = compute_dtype(np.result_type(a.dtype, b.dtype))
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    if step.attrs["trans_a"]:
        a = a.T
    if step.attrs["trans_b"]:
        b = b.T
    alpha, beta = float(step.attrs["alpha"]), float(step.attrs["beta"])
    y = np.matmul(a, b)
    # Python-float scalars are weak (NEP 50): float tensors keep their dtype,
    # integer ones scale in float64 and `finish` casts back, as ONNX's
    # reference Gemm does.
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        cc = c.astype(dtype, copy=False)
        y = y + (cc if beta == 1.0 else cc * beta)
    return [finish(step, y)]
