"""CPU kernels of TopK and Hardmax. TopK orders equal values by index (the
lower index first), for `largest` and smallest alike, as onnxruntime does."""

from __future__ import annotations

import numpy as np

from vknn.oracle.onnx_common import Array, attr, axis, need, scalar
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _order(x: Array, a: int, largest: bool) -> Array:
    """Indices along `a` that sort `x`, ties by lower index first."""
    if not largest:
        return np.argsort(x, axis=a, kind="stable")
    # Descending with ties in index order: an ascending stable sort of the
    # reversed axis, read backwards, then mapped back to original indices.
    n = x.shape[a]
    rev = np.argsort(np.flip(x, a), axis=a, kind="stable")
    return (n - 1) - np.flip(rev, a)


@register("onnx.TopK")
def topk(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, k = need(inputs[0]), int(scalar(inputs[1]))
    a = axis(step, x.ndim, -1)
    order = np.take(_order(x, a, bool(int(attr(step, "largest", 1)))), range(k), axis=a)
    return [np.take_along_axis(x, order, axis=a), order.astype(np.int64)]


@register("onnx.Hardmax")
def hardmax(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    a = axis(step, x.ndim, -1)
    first = np.expand_dims(np.argmax(x, axis=a), a)
    out = np.zeros_like(x)
    np.put_along_axis(out, first, 1, axis=a)
    return [out]
