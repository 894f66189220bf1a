"""CPU kernels of the data-movement ops: `vx.reshape`, `vx.transpose`,
`vx.concat`, `vx.slice`, `vx.gather`, `vx.expand`, `vx.pad` and
`vx.convert_layout`.

Host tensors are always logical NCHW, row-major: `vx.convert_layout` only
repacks on the Vulkan side, so here it is the identity. `vx.reshape` returns
a view (no copy); the other ops give new C-contiguous arrays, so that a
later kernel never pays for (or trips over) strided or read-only views.
The lowering has already normalized attributes (no negative axes, clamped
slice bounds, explicit pads); kernels trust them and do not re-derive ONNX
defaults.
"""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.registry import register
from vknn.runtime.plan import Step

Array = np.ndarray


def _only(inputs: list[Array | None]) -> Array:
    x = inputs[0]
    assert x is not None
    return x


@register("vx.reshape")
def reshape_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    # np.reshape gives a view whenever the strides allow (always for the
    # contiguous arrays other kernels produce).
    return [_only(inputs).reshape(step.out_specs[0].shape)]


@register("vx.convert_layout")
def convert_layout_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [_only(inputs)]


@register("vx.transpose")
def transpose_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    perm = tuple(int(p) for p in step.attrs["perm"])
    return [contiguous(np.transpose(_only(inputs), perm))]


@register("vx.concat")
def concat_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    parts = [x for x in inputs if x is not None]
    return [np.concatenate(parts, axis=int(step.attrs["axis"]))]


@register("vx.slice")
def slice_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    a = step.attrs
    index = tuple(
        # Normalized bounds: end -1 with a negative step means "through index
        # 0", which a Python slice can only say with None.
        slice(int(s), None if (st < 0 and e < 0) else int(e), int(st))
        for s, e, st in zip(a["starts"], a["ends"], a["steps"], strict=True)
    )
    return [contiguous(_only(inputs)[index])]


@register("vx.gather")
def gather_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    data, indices = inputs
    assert data is not None and indices is not None
    axis = int(step.attrs["axis"])
    dim = data.shape[axis]
    idx = indices.astype(np.int64, copy=False)
    # Negatives count from the end; what is still outside is clamped into the
    # axis, as the Vulkan kernel does (gather.comp), so every backend gives the
    # same result (onnxruntime raises; the device cannot without a readback).
    idx = np.clip(np.where(idx < 0, idx + dim, idx), 0, max(dim - 1, 0))
    return [np.take(data, idx, axis=axis)]


@register("vx.expand")
def expand_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    return [contiguous(np.broadcast_to(_only(inputs), step.out_specs[0].shape))]


_NP_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def pad(x: Array, pads: tuple[int, ...], mode: str, value: float = 0.0) -> Array:
    """ONNX Pad with `pads` = [begin_0.., end_0..]; negative pads crop first."""
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    crop = tuple(
        slice(max(-b, 0), d - max(-e, 0)) for d, b, e in zip(x.shape, begins, ends, strict=True)
    )
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends, strict=True)]
    if not any(b or e for b, e in width):
        return contiguous(x)
    if mode == "constant":
        fill = np.asarray(value).astype(x.dtype)
        return np.pad(x, width, mode="constant", constant_values=fill)
    return np.pad(x, width, mode=_NP_PAD_MODES[mode])  # type: ignore[call-overload]


@register("vx.pad")
def pad_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    a = step.attrs
    y = pad(_only(inputs), tuple(int(p) for p in a["pads"]), a["mode"], a.get("value", 0.0))
    return [y]
