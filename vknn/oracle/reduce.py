"""CPU kernels of `vx.reduce`: every ReduceKind over the op's (sorted,
non-empty) `axes`, with `keepdims`; argmax/argmin over their one axis with
`select_last_index`.

Float reductions accumulate in f64 and round once, so the oracle is at least
as accurate as onnxruntime's f32 accumulation. Integer sums and products
wrap in the input type, as onnxruntime's do. A reduction over an empty
extent gives ONNX's identity (0 for sums, 1 for products, the lowest value
for max, -inf for log_sum_exp...). The lowering resolves empty `axes`
(`noop_with_empty_axes`) before this op exists; it never sees them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.registry import register
from vknn.runtime.plan import Step

Array = np.ndarray
Axes = tuple[int, ...]


def _is_float(x: Array) -> bool:
    return x.dtype.kind == "f" or x.dtype.name == "bfloat16"


def _acc(x: Array) -> Array:
    """The accumulation type: f64 for floats, the input type otherwise."""
    return x.astype(np.float64) if _is_float(x) else x


def _lowest(x: Array) -> float | int | bool:
    if x.dtype == np.bool_:
        return False
    return -np.inf if _is_float(x) else np.iinfo(x.dtype).min


def _highest(x: Array) -> float | int | bool:
    if x.dtype == np.bool_:
        return True
    return np.inf if _is_float(x) else np.iinfo(x.dtype).max


def _sum(x: Array, axes: Axes) -> Array:
    return np.sum(_acc(x), axis=axes, dtype=None if _is_float(x) else x.dtype, keepdims=True)


def _mean(x: Array, axes: Axes) -> Array:
    count = int(np.prod([x.shape[a] for a in axes]))
    total = _sum(x, axes)
    if _is_float(x):
        return total / count if count else np.full(total.shape, np.nan)
    # Integer mean is C division of the integer sum: it truncates toward 0.
    if not count:
        return np.zeros(total.shape, x.dtype)
    q = np.abs(total) // count
    return np.where(total < 0, -q, q).astype(x.dtype)


def _log_sum_exp(x: Array, axes: Axes) -> Array:
    w = _acc(x).astype(np.float64)
    m = np.max(w, axis=axes, keepdims=True, initial=-np.inf)
    # Shift by the max for range; an all -inf (or empty) slice keeps -inf.
    shift = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.sum(np.exp(w - shift), axis=axes, keepdims=True)) + shift


def extreme(x: Array, axes: Axes, is_max: bool) -> Array:
    """Max / min as onnxruntime's scan: start at the slice's first element and
    take each later one that beats it, so NaN is skipped unless it is first."""
    if x.dtype.kind != "f":
        if is_max:
            return np.max(x, axis=axes, keepdims=True, initial=_lowest(x))
        return np.min(x, axis=axes, keepdims=True, initial=_highest(x))
    nan = np.isnan(x)
    filled = np.where(nan, np.asarray(-np.inf if is_max else np.inf, x.dtype), x)
    fn = np.max if is_max else np.min
    y = fn(filled, axis=axes, keepdims=True, initial=_lowest(x) if is_max else _highest(x))
    if x.size == 0:
        return y
    first = nan[tuple(slice(0, 1) if d in axes else slice(None) for d in range(x.ndim))]
    return np.where(first, np.asarray(np.nan, x.dtype), y)


def _wide(fn: Callable[[Array, Axes], Array]) -> Callable[[Array, Axes], Array]:
    """Kinds ONNX defines with float math (l2, logs) on any input type."""
    return lambda x, axes: fn(x.astype(np.float64), axes)


_REDUCE: dict[str, Callable[[Array, Axes], Array]] = {
    "sum": _sum,
    "mean": _mean,
    "max": lambda x, axes: extreme(x, axes, True),
    "min": lambda x, axes: extreme(x, axes, False),
    "prod": lambda x, axes: np.prod(
        _acc(x), axis=axes, keepdims=True, dtype=None if _is_float(x) else x.dtype
    ),
    "l1": lambda x, axes: _sum(np.abs(x), axes),
    "l2": _wide(lambda x, axes: np.sqrt(np.sum(x * x, axis=axes, keepdims=True))),
    "log_sum": _wide(lambda x, axes: np.log(np.sum(x, axis=axes, keepdims=True))),
    "log_sum_exp": _log_sum_exp,
    "sum_square": lambda x, axes: _sum(x * x, axes),
}


def arg_extreme(x: Array, axis: int, is_max: bool, last: bool) -> Array:
    """onnxruntime's scan: the first element, then each later one that beats it
    (strictly; or ties too with `last`). A NaN never beats anything, so a row
    starting with NaN gives 0 and other NaNs are skipped."""
    x = np.moveaxis(x, axis, -1)
    if x.shape[-1] == 0:
        raise ValueError("argmax/argmin over an empty axis")
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    filled = np.where(nan, -np.inf if is_max else np.inf, x) if nan.any() else x
    best = filled.max(axis=-1, keepdims=True) if is_max else filled.min(axis=-1, keepdims=True)
    hit = (filled == best) & ~nan
    n = x.shape[-1]
    idx = n - 1 - np.argmax(hit[..., ::-1], axis=-1) if last else np.argmax(hit, axis=-1)
    idx = np.where(nan[..., 0], 0, idx)
    return np.expand_dims(idx, axis).astype(np.int64)


def reduce(kind: str, x: Array, axes: Axes, keepdims: bool, last: bool = False) -> Array:
    """`kind` over `axes` of `x`, in ONNX's result type rules (args: int64)."""
    with np.errstate(all="ignore"):
        if kind in ("argmax", "argmin"):
            y = arg_extreme(x, axes[0], kind == "argmax", last)
        else:
            y = _REDUCE[kind](x, axes)
    return y if keepdims else np.squeeze(y, axis=axes)


def _cast_result(y: Array, dtype: np.dtype) -> Array:
    if y.dtype == dtype:
        return y
    if dtype.kind in "iu" and y.dtype.kind == "f":
        # Float-defined kinds (l2, log_sum...) on ints truncate, as a C cast.
        return np.trunc(y).astype(dtype)
    return y.astype(dtype)


@register("vx.reduce")
def reduce_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = inputs[0]
    assert x is not None
    a = step.attrs
    y = reduce(
        a["kind"],
        x,
        tuple(int(v) for v in a["axes"]),
        bool(a["keepdims"]),
        bool(a.get("select_last_index", False)),
    )
    spec = step.out_specs[0]
    return [contiguous(_cast_result(y, spec.np_dtype)).reshape(spec.shape)]
