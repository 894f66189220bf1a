"""CPU kernels of the `vx` indexing ops and float tests: `vx.float_test`
(IsNaN / IsInf), `vx.gather_nd`, `vx.gather_elements` and
`vx.scatter_elements`, the oracle of kernels/indexing.py.

The lowering has normalized axes (never negative); indices may still be
negative (from the end of their axis); an index still out of range is
clamped into its axis, exactly as the Vulkan kernels do (they clamp to never
read outside a tensor), so every backend gives the same result. onnxruntime
raises instead; a constant out-of-range index is refused at compile time.
"""

from __future__ import annotations

import numpy as np

from vknn.oracle.registry import register
from vknn.runtime.plan import Step

Array = np.ndarray


def _wrap(idx: Array, dim: Array | int, what: str) -> Array:
    """Indices with negatives counted from the end, the rest clamped into the
    axis, as the Vulkan kernel does (indexing.comp `fix_index`)."""
    del what  # kept so call sites say which op they index for
    idx = idx.astype(np.int64, copy=False)
    fixed = np.where(idx < 0, idx + dim, idx)
    return np.clip(fixed, 0, np.maximum(np.asarray(dim, np.int64) - 1, 0))


@register("vx.float_test")
def float_test(step: Step, inputs: list[Array | None]) -> list[Array]:
    (x,) = inputs
    assert x is not None
    test = step.attrs["test"]
    if test == "nan":
        return [np.isnan(x)]
    if test == "inf":
        return [np.isinf(x)]
    return [x == (np.inf if test == "pos_inf" else -np.inf)]


@register("vx.gather_nd")
def gather_nd(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, indices = inputs
    assert data is not None and indices is not None
    b = int(step.attrs["batch_dims"])
    k = indices.shape[-1]
    lead = data.shape[:b]
    nb = int(np.prod(lead, dtype=np.int64))
    rows = indices.reshape(nb, -1, k)
    idx = _wrap(rows, np.asarray(data.shape[b : b + k], dtype=np.int64), "gather_nd")
    src = data.reshape(nb, *data.shape[b:])
    batch = np.arange(nb)[:, None]
    out = src[(batch, *(idx[..., j] for j in range(k)))]
    return [np.ascontiguousarray(out.reshape(step.out_specs[0].shape))]


@register("vx.gather_elements")
def gather_elements(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, indices = inputs
    assert data is not None and indices is not None
    axis = int(step.attrs["axis"])
    idx = _wrap(indices, data.shape[axis], "gather_elements")
    # take_along_axis needs equal extents off the axis: take that corner of data.
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    return [np.ascontiguousarray(np.take_along_axis(data[corner], idx, axis=axis))]


_REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@register("vx.scatter_elements")
def scatter_elements(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, indices, updates = inputs
    assert data is not None and indices is not None and updates is not None
    axis = int(step.attrs["axis"])
    idx = _wrap(indices, data.shape[axis], "scatter_elements")
    out = np.array(data, copy=True)
    coords = list(np.indices(indices.shape, sparse=True))
    coords[axis] = idx
    where = tuple(np.broadcast_to(c, indices.shape) for c in coords)
    reduction = step.attrs.get("reduction", "none")
    if reduction == "none":
        out[where] = updates  # repeated targets: the last update wins, as in onnxruntime
    else:
        _REDUCE[reduction].at(out, where, updates)
    return [out]
