"""CPU kernels of the integer / quantized-linear ONNX ops with no `vx`
lowering: DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv. Accumulation is exact int32 (zero points subtracted first);
requantization rounds half to even and saturates, as onnxruntime does."""

from __future__ import annotations

import math

import numpy as np

from vknn.oracle.conv import conv as vx_conv
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step, TensorSpec


def _opt(inputs: list[Array | None], i: int) -> Array | None:
    return inputs[i] if len(inputs) > i else None


def _centered(x: Array, zp: Array | None, axis_len: int | None = None) -> Array:
    """x - zero point in int32; a per-channel zero point applies on axis 0
    (weights) when its length matches `axis_len`."""
    v = x.astype(np.int32)
    if zp is None:
        return v
    z = zp.astype(np.int32)
    if z.ndim == 1 and z.size > 1 and axis_len == z.size:
        z = z.reshape((-1,) + (1,) * (v.ndim - 1))
    return v - z


@register("onnx.DynamicQuantizeLinear")
def dynamic_quantize_linear(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0]).astype(np.float32)
    hi = np.float32(max(0.0, float(x.max()) if x.size else 0.0))
    lo = np.float32(min(0.0, float(x.min()) if x.size else 0.0))
    scale = np.float32(1.0 if hi == lo else hi - lo) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - lo / scale, 0, 255))
    y = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    return [y, np.array(scale, np.float32), np.array(zp, np.uint8)]


@register("onnx.MatMulInteger")
def matmul_integer(step: Step, inputs: list[Array | None]) -> list[Array]:
    a = _centered(need(inputs[0]), _opt(inputs, 2))
    b = need(inputs[1]).astype(np.int32)
    bz = _opt(inputs, 3)
    if bz is not None:
        b = b - bz.astype(np.int32)  # per-column zero points broadcast on the last axis
    return [np.matmul(a, b).astype(np.int32)]


def _requantize(acc: Array, scale: Array, zp: Array | None, dt: np.dtype) -> Array:
    y = np.rint(acc.astype(np.float64) * scale)
    if zp is not None:
        y = y + zp.astype(np.float64)
    info = np.iinfo(dt)
    return np.clip(y, info.min, info.max).astype(dt)


@register("onnx.QLinearMatMul")
def qlinear_matmul(step: Step, inputs: list[Array | None]) -> list[Array]:
    a = _centered(need(inputs[0]), inputs[2])
    b = need(inputs[3]).astype(np.int32) - need(inputs[5]).astype(np.int32)
    scale = need(inputs[1]).astype(np.float64) * need(inputs[4]).astype(np.float64)
    scale = (scale / need(inputs[6]).astype(np.float64)).astype(np.float32)
    acc = np.matmul(a, b)
    return [_requantize(acc, scale, inputs[7], out_dtype(step))]


@check("onnx.ConvInteger", "onnx.QLinearConv")
def _check_conv(step: Step) -> str | None:
    pad = attr(step, "auto_pad", "NOTSET")
    ok = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
    return None if pad in ok else f"auto_pad '{pad}' is not one of {ok}"


def _int_conv(step: Step, x: Array, w: Array, bias: Array | None) -> Array:
    n = x.ndim - 2
    kernel = list(attr(step, "kernel_shape", w.shape[2:]))
    strides = list(attr(step, "strides", [1] * n))
    dil = list(attr(step, "dilations", [1] * n))
    pads = list(attr(step, "pads", [0] * 2 * n))
    auto = attr(step, "auto_pad", "NOTSET")
    if auto == "VALID":
        pads = [0] * 2 * n
    elif auto.startswith("SAME"):
        for i in range(n):
            size = x.shape[2 + i]
            total = max((math.ceil(size / strides[i]) - 1) * strides[i]
                        + (kernel[i] - 1) * dil[i] + 1 - size, 0)  # fmt: skip
            small = total // 2
            pads[i], pads[n + i] = (small, total - small) if auto == "SAME_UPPER" else (
                total - small, small)  # fmt: skip
    out = [
        (x.shape[2 + i] + pads[i] + pads[n + i] - dil[i] * (kernel[i] - 1) - 1) // strides[i] + 1
        for i in range(n)
    ]
    inner = Step(
        "vx.conv",
        step.node,
        [],
        [],
        [TensorSpec("acc", (x.shape[0], w.shape[0], *out), "int32")],
        {"strides": strides, "dilations": dil, "pads": pads, "group": int(attr(step, "group", 1))},
    )
    return vx_conv(inner, [x, w, bias])[0]


@register("onnx.ConvInteger")
def conv_integer(step: Step, inputs: list[Array | None]) -> list[Array]:
    w = need(inputs[1])
    x = _centered(need(inputs[0]), _opt(inputs, 2))
    wc = _centered(w, _opt(inputs, 3), w.shape[0])
    return [_int_conv(step, x, wc, None)]


@register("onnx.QLinearConv")
def qlinear_conv(step: Step, inputs: list[Array | None]) -> list[Array]:
    w = need(inputs[3])
    x = _centered(need(inputs[0]), inputs[2])
    wc = _centered(w, inputs[5], w.shape[0])
    bias = _opt(inputs, 8)
    acc = _int_conv(step, x, wc, bias.astype(np.int32) if bias is not None else None)
    ws = need(inputs[4]).astype(np.float64).reshape(-1)
    scale = (
        need(inputs[1]).astype(np.float64).reshape(())
        * ws
        / need(inputs[6]).astype(np.float64).reshape(())
    )
    scale = scale.astype(np.float32).reshape((1, -1) + (1,) * (acc.ndim - 2))
    return [_requantize(acc, scale, inputs[7], out_dtype(step))]


def _expand_param(step: Step, p: Array | None, x: Array) -> Array | None:
    """A scale / zero point broadcast to x: scalar, per axis (1-D along
    `axis`), or blocked (x's shape with `axis` cut in blocks of block_size)."""
    if p is None or p.size == 1:
        return None if p is None else p.reshape(())
    a = int(attr(step, "axis", 1)) % x.ndim
    block = int(attr(step, "block_size", 0))
    if block:
        return np.repeat(p, block, axis=a).take(range(x.shape[a]), axis=a)
    return p.reshape([-1 if i == a else 1 for i in range(x.ndim)])


@register("onnx.QuantizeLinear")
def quantize_linear(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0]).astype(np.float32)
    scale = _expand_param(step, need(inputs[1]).astype(np.float32), x)
    zp_in = _opt(inputs, 2)
    zp = _expand_param(step, zp_in, x)
    dt = out_dtype(step)
    y = np.rint(x / scale)
    if zp is not None:
        y = y + zp.astype(np.float32)
    info = np.iinfo(dt)
    return [np.clip(y, info.min, info.max).astype(dt)]


@register("onnx.DequantizeLinear")
def dequantize_linear(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    scale = _expand_param(step, need(inputs[1]).astype(np.float32), x)
    zp = _expand_param(step, _opt(inputs, 2), x)
    if x.dtype.kind in "iu":
        v = x.astype(np.int32) - (zp.astype(np.int32) if zp is not None else 0)
    else:  # narrow float types (float8 ...) dequantize by value
        v = x.astype(np.float32) - (zp.astype(np.float32) if zp is not None else 0)
    return [(v.astype(np.float32) * scale).astype(out_dtype(step))]


@check("onnx.QuantizeLinear", "onnx.DequantizeLinear")
def _check_q(step: Step) -> str | None:
    dt = step.out_specs[0].np_dtype if step.out_specs else None
    if step.op == "onnx.QuantizeLinear" and dt is not None and dt.kind not in "iu":
        return f"quantizing to {dt} is not implemented"
    return None
