"""CPU kernels of the ONNX reductions run as `onnx.*` ops (axes as a run-time
operand, integer or bool inputs, empty sets): ReduceSum/Mean/Max/Min/Prod/
L1/L2/LogSum/LogSumExp/SumSquare and ArgMax/ArgMin. Negative axes count from
the end; no axes reduce everything unless noop_with_empty_axes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, axis, need, norm_axis, out_dtype
from vknn.oracle.reduce import arg_extreme, extreme
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _max(x: Array, axes: tuple[int, ...], keep: bool) -> Array:
    if x.dtype == bool:
        return np.any(x, axis=axes, keepdims=keep)
    y = extreme(x, axes, True)  # onnxruntime's NaN rule, as vx.reduce
    return y if keep else np.squeeze(y, axis=axes)


def _min(x: Array, axes: tuple[int, ...], keep: bool) -> Array:
    if x.dtype == bool:
        return np.all(x, axis=axes, keepdims=keep)
    y = extreme(x, axes, False)
    return y if keep else np.squeeze(y, axis=axes)


def _log_sum_exp(x: Array, axes: tuple[int, ...], keep: bool) -> Array:
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axes, keepdims=keep))
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    s = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return s if keep else np.squeeze(s, axis=axes)


_REDUCE: dict[str, Callable[[Array, tuple[int, ...], bool], Array]] = {
    "ReduceSum": lambda x, a, k: np.sum(x, axis=a, keepdims=k),
    "ReduceMean": lambda x, a, k: np.mean(x, axis=a, keepdims=k),
    "ReduceProd": lambda x, a, k: np.prod(x, axis=a, keepdims=k),
    "ReduceMax": _max,
    "ReduceMin": _min,
    "ReduceL1": lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)),
    "ReduceSumSquare": lambda x, a, k: np.sum(x * x, axis=a, keepdims=k),
    "ReduceLogSum": lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reduce(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    if len(inputs) > 1 and inputs[1] is not None:
        axes = [int(a) for a in np.asarray(inputs[1]).reshape(-1)]
    else:  # opset < 18 (and ReduceSum < 13): an attribute
        axes = [int(a) for a in attr(step, "axes", ())]
    if not axes and int(attr(step, "noop_with_empty_axes", 0)):
        return [x.astype(out_dtype(step), copy=False)]
    norm = tuple(sorted({norm_axis(step, a, x.ndim) for a in axes})) or tuple(range(x.ndim))
    keep = bool(int(attr(step, "keepdims", 1)))
    fn = _REDUCE[step.op.removeprefix("onnx.")]
    src = x if step.op in ("onnx.ReduceMax", "onnx.ReduceMin") else widen(x)
    with np.errstate(all="ignore"):
        y = fn(src, norm, keep)
    return [np.asarray(y).astype(out_dtype(step))]


register(*(f"onnx.{n}" for n in _REDUCE))(_reduce)


def _arg(step: Step, inputs: list[Array | None], is_max: bool) -> list[Array]:
    x = need(inputs[0])
    a = axis(step, x.ndim, 0)
    # onnxruntime's scan (NaN picked only at index 0), as vx.reduce's oracle.
    y = arg_extreme(x, a, is_max, bool(int(attr(step, "select_last_index", 0))))
    if not int(attr(step, "keepdims", 1)):
        y = np.squeeze(y, axis=a)
    return [np.asarray(y).astype(np.int64)]


@register("onnx.ArgMax")
def argmax(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _arg(step, inputs, True)


@register("onnx.ArgMin")
def argmin(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _arg(step, inputs, False)
