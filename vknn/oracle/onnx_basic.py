"""CPU kernels of basic ONNX ops run as `onnx.*` ops: the arithmetic, logic
and shape ops that const-fold evaluates on constant operands (shape
arithmetic before lowering) and that stay in the `onnx` dialect when their
lowering refuses a node (an element type, a run-time operand). Broadcasting
is numpy's (ONNX multidirectional); integer Div truncates toward zero and
integer Pow stays integer, as onnxruntime computes them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.oracle.numerics import contiguous, widen
from vknn.oracle.onnx_common import Array, attr, axis, need, norm_indices, out_dtype
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _div(a: Array, b: Array) -> Array:
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": _div,
    "Pow": np.power,
    "Equal": np.equal,
    "Less": np.less,
    "LessOrEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
}

_UNARY: dict[str, Callable[[Array], Array]] = {
    "Neg": np.negative,
    "Abs": np.abs,
    "Not": np.logical_not,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Exp": np.exp,
    "Sign": np.sign,
    "Reciprocal": np.reciprocal,
    "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "Tanh": np.tanh,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Round": np.round,  # half to even, as the spec says
}


def _binary(step: Step, inputs: list[Array | None]) -> list[Array]:
    fn = _BINARY[step.op.removeprefix("onnx.")]
    a, b = need(inputs[0]), need(inputs[1])
    if step.op == "onnx.Pow":
        a = widen(a)  # the exponent's type never changes the result type
    elif a.dtype.kind == "f":
        a, b = widen(a), widen(b)
    with np.errstate(all="ignore"):
        return [np.asarray(fn(a, b)).astype(out_dtype(step))]


def _unary(step: Step, inputs: list[Array | None]) -> list[Array]:
    fn = _UNARY[step.op.removeprefix("onnx.")]
    x = need(inputs[0])
    with np.errstate(all="ignore"):
        return [np.asarray(fn(widen(x))).astype(out_dtype(step))]


register(*(f"onnx.{n}" for n in _BINARY))(_binary)
register(*(f"onnx.{n}" for n in _UNARY))(_unary)


def _variadic(step: Step, inputs: list[Array | None]) -> list[Array]:
    xs = [widen(x) for x in inputs if x is not None]
    name = step.op.removeprefix("onnx.")
    if name == "Max":
        y = xs[0]
        for x in xs[1:]:
            y = np.maximum(y, x)
    elif name == "Min":
        y = xs[0]
        for x in xs[1:]:
            y = np.minimum(y, x)
    else:
        y = xs[0]
        for x in xs[1:]:
            y = y + x
        if name == "Mean":
            y = y / len(xs)
    return [np.asarray(y).astype(out_dtype(step))]


register("onnx.Max", "onnx.Min", "onnx.Sum", "onnx.Mean")(_variadic)


@register("onnx.Where")
def where(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.where(need(inputs[0]), need(inputs[1]), need(inputs[2]))]


@register("onnx.Gather")
def gather(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, idx = need(inputs[0]), need(inputs[1])
    a = axis(step, x.ndim)
    return [np.take(x, norm_indices(step, idx, x.shape[a]), axis=a)]


@register("onnx.Concat")
def concat(step: Step, inputs: list[Array | None]) -> list[Array]:
    xs = [x for x in inputs if x is not None]
    return [np.concatenate(xs, axis=axis(step, xs[0].ndim))]


@register("onnx.Shape")
def shape(step: Step, inputs: list[Array | None]) -> list[Array]:
    dims = need(inputs[0]).shape
    r = len(dims)
    s, e = int(attr(step, "start", 0)), int(attr(step, "end", r))
    s, e = (min(max(v + r if v < 0 else v, 0), r) for v in (s, e))
    return [np.array(dims[s:e], dtype=np.int64)]


@register("onnx.Size")
def size(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.array(need(inputs[0]).size, dtype=np.int64)]


@register("onnx.Split")
def split(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    a = axis(step, x.ndim)
    given = inputs[1] if len(inputs) > 1 and inputs[1] is not None else attr(step, "split")
    n = len(step.out_specs)
    if given is not None and len(given):
        sizes = [int(v) for v in np.asarray(given).reshape(-1)]
    else:  # equal parts, the last one smaller (num_outputs, opset 18)
        part = -(-x.shape[a] // n)
        sizes = [min(part, x.shape[a] - i * part) for i in range(n)]
    cuts = np.cumsum(sizes)[:-1]
    return [contiguous(p) for p in np.split(x, cuts, axis=a)]


@register("onnx.MatMul")
def matmul(step: Step, inputs: list[Array | None]) -> list[Array]:
    a, b = need(inputs[0]), need(inputs[1])
    if a.dtype.kind == "f":
        a, b = widen(a), widen(b)
    return [np.asarray(np.matmul(a, b)).astype(out_dtype(step))]


@register("onnx.Gemm")
def gemm(step: Step, inputs: list[Array | None]) -> list[Array]:
    a, b = widen(need(inputs[0])), widen(need(inputs[1]))
    a = a.T if int(attr(step, "transA", 0)) else a
    b = b.T if int(attr(step, "transB", 0)) else b
    y = float(attr(step, "alpha", 1.0)) * (a @ b)
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + float(attr(step, "beta", 1.0)) * widen(inputs[2])
    return [y.astype(out_dtype(step))]


def _softmax(step: Step, inputs: list[Array | None], log: bool) -> list[Array]:
    x = widen(need(inputs[0]))
    a = axis(step, x.ndim, -1)
    shifted = x - np.max(x, axis=a, keepdims=True)
    lse = np.log(np.sum(np.exp(shifted), axis=a, keepdims=True))
    y = shifted - lse if log else np.exp(shifted - lse)
    return [y.astype(out_dtype(step))]


@register("onnx.Softmax")
def softmax(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _softmax(step, inputs, log=False)


@register("onnx.LogSoftmax")
def log_softmax(step: Step, inputs: list[Array | None]) -> list[Array]:
    return _softmax(step, inputs, log=True)


@register("onnx.Flatten")
def flatten(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    a = axis(step, x.ndim + 1, 1) if x.ndim else 0
    lead = int(np.prod(x.shape[:a])) if a else 1
    return [x.reshape(lead, -1)]
