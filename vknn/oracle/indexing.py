"""CPU kernels of the ONNX indexing ops with no `vx` lowering: GatherElements,
ScatterElements (and the deprecated Scatter), GatherND, ScatterND, Compress,
OneHot, NonZero, TensorScatter. Negative axes and negative indices follow the spec;
indices out of range are a one-line error naming the node."""

from __future__ import annotations

import numpy as np

from vknn.errors import VknnError
from vknn.oracle.onnx_common import Array, attr, axis, need, norm_axis, norm_indices, scalar
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step

_REDUCTIONS = ("none", "add", "mul", "max", "min")
_UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@check("onnx.ScatterElements", "onnx.ScatterND")
def _check_reduction(step: Step) -> str | None:
    r = attr(step, "reduction", "none")
    return None if r in _REDUCTIONS else f"reduction '{r}' is not one of {_REDUCTIONS}"


def _head(x: Array, shape: tuple[int, ...], skip: int) -> Array:
    """`x` cut to `shape` on every axis but `skip` (indices may be shorter)."""
    return x[tuple(slice(None) if d == skip else slice(0, s) for d, s in enumerate(shape))]


@register("onnx.GatherElements")
def gather_elements(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, idx = need(inputs[0]), need(inputs[1])
    if idx.ndim != data.ndim:
        raise VknnError(
            f"node '{step.node}' (GatherElements): indices rank {idx.ndim} != data rank {data.ndim}"
        )
    a = axis(step, data.ndim)
    idx = norm_indices(step, idx, data.shape[a])
    # Indices may be shorter than the data on any axis (relative-position
    # attention gathers a window): cut the data to them, then gather.
    return [np.take_along_axis(_head(data, idx.shape, a), idx, axis=a)]


def _element_index(step: Step, data: Array, idx: Array, a: int) -> tuple[Array, ...]:
    idx = norm_indices(step, idx, data.shape[a])
    grid = list(np.indices(idx.shape, sparse=True))
    grid[a] = idx
    return tuple(grid)


@register("onnx.ScatterElements", "onnx.Scatter")
def scatter_elements(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, idx, upd = need(inputs[0]), need(inputs[1]), need(inputs[2])
    out = np.array(data, copy=True)
    where = _element_index(step, data, idx, axis(step, data.ndim))
    red = attr(step, "reduction", "none")
    if red == "none":
        out[where] = upd
    else:
        _UFUNC[red].at(out, where, upd)
    return [out]


def _nd_index(step: Step, shape: tuple[int, ...], idx: Array) -> tuple[Array, ...]:
    k = idx.shape[-1]
    if k > len(shape):
        raise VknnError(
            f"node '{step.node}' ({step.kind}): index tuples of {k} > data rank {len(shape)}"
        )
    idx = norm_indices(step, idx, np.asarray(shape[:k], dtype=np.int64))
    return tuple(idx[..., j] for j in range(k))


@register("onnx.GatherND")
def gather_nd(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, idx = need(inputs[0]), need(inputs[1])
    b = int(attr(step, "batch_dims", 0))
    batch = data.shape[:b]
    n = int(np.prod(batch)) if b else 1
    k = idx.shape[-1]
    flat_data = data.reshape((n, *data.shape[b:]))
    flat_idx = idx.reshape(n, -1, k)
    where = _nd_index(step, data.shape[b:], flat_idx)
    got = flat_data[(np.arange(n)[:, None], *where)]
    return [got.reshape(idx.shape[:-1] + data.shape[b + k :])]


@register("onnx.ScatterND")
def scatter_nd(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, idx, upd = need(inputs[0]), need(inputs[1]), need(inputs[2])
    out = np.array(data, copy=True)
    where = _nd_index(step, data.shape, idx)
    red = attr(step, "reduction", "none")
    if red == "none":
        out[where] = upd
    else:
        _UFUNC[red].at(out, where, upd)
    return [out]


@register("onnx.Compress")
def compress(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, cond = need(inputs[0]), need(inputs[1]).astype(bool).reshape(-1)
    if "axis" not in step.attrs:
        return [np.compress(cond, x.reshape(-1))]
    return [np.compress(cond, x, axis=axis(step, x.ndim))]


@register("onnx.OneHot")
def one_hot(step: Step, inputs: list[Array | None]) -> list[Array]:
    idx, depth, values = need(inputs[0]), int(scalar(inputs[1])), need(inputs[2]).reshape(-1)
    a = norm_axis(step, int(attr(step, "axis", -1)), idx.ndim + 1)
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    hot = np.expand_dims(idx, a) == np.arange(depth).reshape(
        [depth if d == a else 1 for d in range(idx.ndim + 1)]
    )
    return [np.where(hot, values[1], values[0]).astype(values.dtype)]


@register("onnx.NonZero")
def non_zero(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    if x.ndim == 0:
        return [np.zeros((0, int(bool(x))), dtype=np.int64)]
    return [np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


@register("onnx.TensorScatter")
def tensor_scatter(step: Step, inputs: list[Array | None]) -> list[Array]:
    """Write `update` into a KV cache at each batch row's write index along
    `axis` (wrapping around in `circular` mode)."""
    cache, upd = need(inputs[0]), need(inputs[1])
    write = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    a = axis(step, cache.ndim, -2)
    out = np.array(cache, copy=True)
    size, seq = cache.shape[a], upd.shape[a]
    circular = attr(step, "mode", "linear") == "circular"
    for b in range(cache.shape[0]):
        start = int(write.reshape(-1)[b]) if write is not None else 0
        pos = np.arange(start, start + seq)
        if circular:
            pos %= size
        elif seq and pos[-1] >= size:
            raise VknnError(f"node '{step.node}' (TensorScatter): write past the cache end")
        dst: list[slice | Array] = [slice(None)] * (cache.ndim - 1)
        dst[a - 1] = pos
        out[b][tuple(dst)] = upd[b]  # out[b] is a view: one index array, no axis moves
    return [out]


@register("onnx.Unique")
def unique(step: Step, inputs: list[Array | None]) -> list[Array]:
    """Unique elements (or slices along `axis`), sorted or in order of first
    occurrence, with first indices, inverse indices and counts."""
    x = need(inputs[0])
    a = axis(step, x.ndim) if "axis" in step.attrs else None
    y, first, inverse, counts = np.unique(
        x if a is not None else x.reshape(-1),
        return_index=True,
        return_inverse=True,
        return_counts=True,
        axis=a,
    )
    inverse = inverse.reshape(-1)
    if not int(attr(step, "sorted", 1)):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y = np.take(y, order, axis=a if a is not None else 0)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    outs = [y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]
    return outs[: len(step.out_specs)]
