"""Helpers of the CPU kernels that run `onnx.*` ops directly (ops with no `vx`
lowering): ONNX attribute defaults, axis normalization and index checks, so
every such kernel treats negative axes and indices the way the spec says."""

from __future__ import annotations

from typing import Any

import numpy as np

from vknn.errors import VknnError
from vknn.runtime.plan import Step

Array = np.ndarray


def attr(step: Step, name: str, default: Any = None) -> Any:
    """The ONNX attribute `name` of `step`, or the spec's default."""
    return step.attrs.get(name, default)


def axis(step: Step, rank: int, default: int = 0, name: str = "axis") -> int:
    """Attribute `name` as an axis in [0, rank), negative counted from the end."""
    return norm_axis(step, int(attr(step, name, default)), rank)


def norm_axis(step: Step, a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise VknnError(f"node '{step.node}' ({step.kind}): axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def norm_indices(step: Step, idx: Array, dim: int | Array) -> Array:
    """Indices in [-dim, dim) as [0, dim); anything else is a one-line error."""
    idx = np.asarray(idx).astype(np.int64, copy=False)
    if idx.size and (np.any(idx < -np.asarray(dim)) or np.any(idx >= dim)):
        bad = idx[(idx < -np.asarray(dim)) | (idx >= dim)].reshape(-1)[0]
        raise VknnError(f"node '{step.node}' ({step.kind}): index {int(bad)} out of range")
    return np.where(idx < 0, idx + dim, idx)


def out_dtype(step: Step, index: int = 0) -> np.dtype:
    return step.out_specs[index].np_dtype


def scalar(x: Array | None, default: Any = None) -> Any:
    """A scalar operand (a 0-d or one-element tensor) as a Python number."""
    if x is None:
        return default
    return np.asarray(x).reshape(-1)[0].item()


def need(x: Array | None) -> Array:
    assert x is not None
    return x
