"""CPU kernel of `vx.attention`: softmax(scale * Q @ K^T + mask) @ V, the
numeric oracle of the fused op. It computes what the unfused chain
(vx.matmul, scale, mask add, vx.softmax, vx.matmul) computes, in the compute
dtype throughout (no rounding of the scores to a narrow storage type)."""

from __future__ import annotations

import numpy as np

from vknn.oracle.normalization import _shifted
from vknn.oracle.numerics import compute_dtype, finish
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


@register("vx.attention")
def attention(step: Step, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    q, k, v, mask = (*inputs, None)[:4]  # the mask may be absent altogether
    assert q is not None and k is not None and v is not None
    dtype = compute_dtype(np.result_type(q.dtype, k.dtype, v.dtype))
    q, k, v = (x.astype(dtype, copy=False) for x in (q, k, v))
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.asarray(step.attrs["scale"], dtype)
    if mask is not None:
        scores = scores + mask.astype(dtype, copy=False)
    e = np.exp(_shifted(scores, -1))
    return [finish(step, np.matmul(e / e.sum(axis=-1, keepdims=True), v))]
