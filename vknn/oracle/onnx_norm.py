"""CPU kernels of ONNX normalizations run as `onnx.*` ops: LayerNormalization
(with its Mean / InvStdDev outputs), RMSNormalization, InstanceNormalization,
GroupNormalization, LpNormalization, MeanVarianceNormalization. Statistics
are computed in float32 at least (stash_type 1), float64 for float64 input."""

from __future__ import annotations

import numpy as np

from vknn.oracle.onnx_common import Array, attr, axis, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


def _stash(x: Array) -> Array:
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32, copy=False)


def _tail(step: Step, x: Array) -> tuple[int, tuple[int, ...]]:
    a = axis(step, x.ndim, -1)
    return a, tuple(range(a, x.ndim))


@register("onnx.LayerNormalization")
def layer_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    a, axes = _tail(step, x)
    eps = float(attr(step, "epsilon", 1e-5))
    mean = x.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = (x - mean) * inv * _stash(need(inputs[1]))
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + _stash(inputs[2])
    outs = [y.astype(out_dtype(step)), mean, inv]
    return [o.astype(out_dtype(step, i)) for i, o in enumerate(outs[: len(step.out_specs)])]


@register("onnx.RMSNormalization")
def rms_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    _, axes = _tail(step, x)
    eps = float(attr(step, "epsilon", 1e-5))
    inv = 1 / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return [(x * inv * _stash(need(inputs[1]))).astype(out_dtype(step))]


def _per_channel(v: Array, rank: int) -> Array:
    return _stash(v).reshape((1, -1) + (1,) * (rank - 2))


@register("onnx.InstanceNormalization")
def instance_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    axes = tuple(range(2, x.ndim))
    eps = float(attr(step, "epsilon", 1e-5))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    y = y * _per_channel(need(inputs[1]), x.ndim) + _per_channel(need(inputs[2]), x.ndim)
    return [y.astype(out_dtype(step))]


@register("onnx.GroupNormalization")
def group_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    g = int(attr(step, "num_groups"))
    n, c = x.shape[:2]
    eps = float(attr(step, "epsilon", 1e-5))
    grouped = x.reshape(n, g, -1)
    mean = grouped.mean(axis=2, keepdims=True)
    var = ((grouped - mean) ** 2).mean(axis=2, keepdims=True)
    y = ((grouped - mean) / np.sqrt(var + eps)).reshape(x.shape)
    scale, bias = need(inputs[1]), need(inputs[2])
    if scale.size == g != c:  # opset 18: one scale / bias per group
        scale, bias = np.repeat(scale, c // g), np.repeat(bias, c // g)
    y = y * _per_channel(scale, x.ndim) + _per_channel(bias, x.ndim)
    return [y.astype(out_dtype(step))]


@check("onnx.LpNormalization")
def _check_lp(step: Step) -> str | None:
    p = int(attr(step, "p", 2))
    return None if p in (1, 2) else f"p={p} is not 1 or 2"


@register("onnx.LpNormalization")
def lp_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    a = axis(step, x.ndim, -1)
    if int(attr(step, "p", 2)) == 1:
        norm = np.abs(x).sum(axis=a, keepdims=True)
    else:
        norm = np.sqrt((x * x).sum(axis=a, keepdims=True))
    with np.errstate(all="ignore"):
        y = np.where(norm == 0, 0, x / norm)
    return [y.astype(out_dtype(step))]


@register("onnx.MeanVarianceNormalization")
def mvn(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = _stash(need(inputs[0]))
    axes = tuple(int(a) % x.ndim for a in attr(step, "axes", (0, 2, 3)))
    mean = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True))
    return [((x - mean) / (std + 1e-9)).astype(out_dtype(step))]
