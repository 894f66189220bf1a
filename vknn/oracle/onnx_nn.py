"""CPU kernels of NN ops in forms the `vx` lowering leaves as `onnx.*`:
BatchNormalization in training mode (batch statistics and updated running
statistics) and MaxPool with its Indices output (row- or column-major)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


@register("onnx.BatchNormalization")
def batch_norm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, scale, bias, mean, var = (widen(need(v)) for v in inputs[:5])
    eps = float(attr(step, "epsilon", 1e-5))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    training = int(attr(step, "training_mode", 0))
    if training:
        axes = (0, *range(2, x.ndim))
        cur_mean, cur_var = x.mean(axis=axes), x.var(axis=axes)
        m = float(attr(step, "momentum", 0.9))
        run_mean, run_var = mean * m + cur_mean * (1 - m), var * m + cur_var * (1 - m)
        use_mean, use_var = cur_mean, cur_var
    else:
        use_mean, use_var = mean, var
    y = (x - use_mean.reshape(shape)) / np.sqrt(use_var.reshape(shape) + eps)
    y = y * scale.reshape(shape) + bias.reshape(shape)
    outs = [y] + ([run_mean, run_var] if training else [])
    return [o.astype(out_dtype(step, i)) for i, o in enumerate(outs[: len(step.out_specs)])]


@check("onnx.MaxPool")
def _check_pool(step: Step) -> str | None:
    pad = attr(step, "auto_pad", "NOTSET")
    ok = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
    return None if pad in ok else f"auto_pad '{pad}' is not one of {ok}"


def _pool_geometry(step: Step, spatial: tuple[int, ...]) -> tuple[list[int], ...]:
    n = len(spatial)
    k = list(attr(step, "kernel_shape"))
    s = list(attr(step, "strides", [1] * n))
    d = list(attr(step, "dilations", [1] * n))
    p = list(attr(step, "pads", [0] * 2 * n))
    auto = attr(step, "auto_pad", "NOTSET")
    ceil = int(attr(step, "ceil_mode", 0))
    span = [(k[i] - 1) * d[i] + 1 for i in range(n)]
    if auto == "VALID":
        p = [0] * 2 * n
        out = [(spatial[i] - span[i]) // s[i] + 1 for i in range(n)]
    elif auto.startswith("SAME"):
        out = [math.ceil(spatial[i] / s[i]) for i in range(n)]
        for i in range(n):
            total = max((out[i] - 1) * s[i] + span[i] - spatial[i], 0)
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            p[i], p[n + i] = lo, total - lo
    else:
        rnd = math.ceil if ceil else math.floor
        out = [int(rnd((spatial[i] + p[i] + p[n + i] - span[i]) / s[i])) + 1 for i in range(n)]
        # A last window that starts in the end padding is dropped (ceil_mode).
        out = [o - 1 if ceil and (o - 1) * s[i] >= spatial[i] + p[i] else o
               for i, o in enumerate(out)]  # fmt: skip
    return k, s, d, p, out


@register("onnx.MaxPool")
def max_pool(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    spatial = x.shape[2:]
    n = len(spatial)
    k, s, d, p, out = _pool_geometry(step, spatial)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    best = np.full((*x.shape[:2], *out), low, dtype=np.float64 if x.dtype.kind == "f" else x.dtype)
    where = np.zeros((*x.shape[:2], *out), np.int64)
    grids = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
    col_major = int(attr(step, "storage_order", 0))
    for tap in itertools.product(*(range(kk) for kk in k)):
        pos = [grids[i] * s[i] + tap[i] * d[i] - p[i] for i in range(n)]
        ok = np.logical_and.reduce([(pos[i] >= 0) & (pos[i] < spatial[i]) for i in range(n)])
        safe = [np.clip(pos[i], 0, spatial[i] - 1) for i in range(n)]
        val = x[(slice(None), slice(None), *safe)]
        val = np.where(ok, val, low)
        better = val > best
        best = np.where(better, val, best)
        if col_major:
            flat = sum(safe[i] * int(np.prod(spatial[:i])) for i in range(n))
        else:
            flat = sum(safe[i] * int(np.prod(spatial[i + 1 :])) for i in range(n))
        where = np.where(better, flat, where)
    plane = int(np.prod(spatial))
    base = (np.arange(x.shape[0] * x.shape[1]) * plane).reshape(x.shape[0], x.shape[1])
    index = where + base.reshape(*x.shape[:2], *([1] * n))
    outs = [best.astype(out_dtype(step)), index.astype(np.int64)]
    return outs[: len(step.out_specs)]
