"""`Step`: one graph op as plain data, the form the numpy oracle runs (CPU
segments of a compiled program) and the kernel specs read (gates, layout
rules, recorders). No xDSL objects: values live in numbered slots, and
attributes are plain Python (int, float, str, tuples, lists, numpy arrays,
bytes), keyed by the IR's attribute names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

NO_VALUE = -1
"""The slot of an absent optional operand."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name: "float32", "int64", "bool", ...

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(self.dtype)


@dataclass
class Step:
    """One op: `outputs = kernel(op)(inputs, attrs)`."""

    op: str
    node: str
    inputs: list[int]
    outputs: list[int]
    out_specs: list[TensorSpec]
    attrs: dict[str, Any] = field(default_factory=dict)
    region: list[Step] | None = None
    """For ops with a body (fused pointwise): steps over local slots, where the
    first slots are the body's arguments; the last step is the terminator."""
    backend: str = "cpu"
    reason: str = ""
    """Why the step is not on the preferred backend (empty when it is)."""

    @property
    def kind(self) -> str:
        """The op's name as users know it (`Conv`, `Relu`, `Loop`)."""
        from vknn.runtime.op_kinds import op_kind

        return op_kind(self.op, self.attrs)
