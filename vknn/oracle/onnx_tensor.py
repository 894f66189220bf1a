"""CPU kernels of ONNX data-movement ops whose `vx` lowering refused the
node (their shape / axes / pads operands are run-time tensors, not
constants): Reshape, Transpose, Squeeze, Unsqueeze, Slice, Pad, Expand,
ConstantOfShape, Cast, CastLike, Dropout (inference), Identity. Every axis
and bound follows the spec: negative counts from the end, slices clamp."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.onnx_common import Array, attr, need, norm_axis, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


def _ints(x: Array | None) -> list[int]:
    return [] if x is None else [int(v) for v in np.asarray(x).reshape(-1)]


def _axes(step: Step, values: list[int], rank: int) -> list[int]:
    return [norm_axis(step, a, rank) for a in values]


@register("onnx.Reshape")
def reshape(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, shape = need(inputs[0]), _ints(inputs[1])
    if not int(attr(step, "allowzero", 0)):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [contiguous(x.reshape(shape))]


@register("onnx.Transpose")
def transpose(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    perm = attr(step, "perm")
    perm = None if perm is None else _axes(step, [int(p) for p in perm], x.ndim)
    return [contiguous(np.transpose(x, perm))]


def _axes_operand(step: Step, inputs: list[Array | None]) -> list[int] | None:
    if len(inputs) > 1 and inputs[1] is not None:
        return _ints(inputs[1])
    a = attr(step, "axes")
    return None if a is None else [int(v) for v in a]


@register("onnx.Squeeze")
def squeeze(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, axes = need(inputs[0]), _axes_operand(step, inputs)
    if axes is None:
        return [x.reshape([d for d in x.shape if d != 1])]
    return [np.squeeze(x, axis=tuple(_axes(step, axes, x.ndim)))]


@register("onnx.Unsqueeze")
def unsqueeze(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, axes = need(inputs[0]), _axes_operand(step, inputs) or []
    rank = x.ndim + len(axes)
    return [np.expand_dims(x, tuple(sorted(_axes(step, axes, rank))))]


@register("onnx.Slice")
def slice_(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = need(inputs[0])
    starts, ends = _ints(inputs[1]), _ints(inputs[2])
    axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else []
    steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else []
    axes = _axes(step, axes or list(range(len(starts))), x.ndim)
    steps = steps or [1] * len(starts)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        dim = x.shape[a]
        s, e = (s + dim if s < 0 else s), (e + dim if e < 0 else e)
        if st > 0:
            index[a] = slice(min(max(s, 0), dim), min(max(e, 0), dim), st)
        else:  # clamp like the spec; an end of -1 means "through index 0"
            e = min(max(e, -1), dim - 1)
            index[a] = slice(min(max(s, 0), dim - 1), None if e < 0 else e, st)
    return [contiguous(x[tuple(index)])]


_PAD_MODES = ("constant", "reflect", "edge", "wrap")


@check("onnx.Pad")
def _check_pad(step: Step) -> str | None:
    m = attr(step, "mode", "constant")
    return None if m in _PAD_MODES else f"mode '{m}' is not one of {_PAD_MODES}"


@register("onnx.Pad")
def pad(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, pads = need(inputs[0]), _ints(inputs[1])
    value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else []
    axes = _axes(step, axes or list(range(x.ndim)), x.ndim)
    n = len(axes)
    width = [[0, 0] for _ in range(x.ndim)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + n]]
    # Negative pads crop: crop first, then pad with the non-negative rest.
    crop = tuple(slice(max(-lo, 0), x.shape[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(width))
    x = x[crop]
    width = [[max(lo, 0), max(hi, 0)] for lo, hi in width]
    mode = attr(step, "mode", "constant")
    if mode == "constant":
        v = np.asarray(value).reshape(-1)[0] if value is not None and value.size else 0
        return [np.pad(x, width, mode="constant", constant_values=v)]
    return [np.pad(x, width, mode={"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode])]


@register("onnx.Expand")
def expand(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, shape = need(inputs[0]), _ints(inputs[1])
    # Bidirectional: a 1 in `shape` keeps the input's extent.
    target = np.broadcast_shapes(x.shape, tuple(shape))
    return [contiguous(np.broadcast_to(x, target))]


@register("onnx.ConstantOfShape")
def constant_of_shape(step: Step, inputs: list[Array | None]) -> list[Array]:
    value = attr(step, "value")
    fill = np.asarray(value).reshape(-1)[0] if value is not None else 0
    return [np.full(_ints(inputs[0]), fill, dtype=out_dtype(step))]


def _cast(x: Array, dt: np.dtype) -> Array:
    if x.dtype.kind == "f" and dt.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(dt)
    return x.astype(dt)


@register("onnx.Cast", "onnx.CastLike")
def cast(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [_cast(need(inputs[0]), out_dtype(step))]


@register("onnx.Identity")
def identity(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [need(inputs[0])]


@register("onnx.Dropout")
def dropout(step: Step, inputs: list[Array | None]) -> list[Array]:
    """Identity at inference; in training mode a mask drawn from numpy's
    RandomState(seed) (the draw ONNX's test data was made with)."""
    x = need(inputs[0])
    training = len(inputs) > 2 and inputs[2] is not None and bool(np.asarray(inputs[2]).any())
    given = len(inputs) > 1 and inputs[1] is not None
    ratio = float(np.asarray(inputs[1]).reshape(-1)[0]) if given else 0.5
    if not training or ratio == 0:
        keep = np.ones(x.shape, dtype=bool)
        y = x
    else:
        seed = attr(step, "seed")
        keep = np.random.RandomState(seed).uniform(0, 1.0, x.shape) >= ratio
        y = (keep * x * (1.0 / (1.0 - ratio))).astype(x.dtype)
    return [y, keep][: len(step.out_specs)]


@register("onnx.BitCast")
def bit_cast(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, dt = need(inputs[0]), out_dtype(step)
    if x.dtype.itemsize != dt.itemsize:
        from vknn.errors import VknnError

        raise VknnError(f"node '{step.node}' (BitCast): {x.dtype} and {dt} differ in width")
    return [contiguous(x).view(dt)]


@register("onnx.OptionalHasElement")
def optional_has_element(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [np.array(bool(inputs) and inputs[0] is not None)]


@register("onnx.OptionalGetElement")
def optional_get_element(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [need(inputs[0])]
