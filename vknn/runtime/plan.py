"""A compiled plan: plain data the runtime executes, with no xDSL objects.

The compiler (vknn.compiler) lowers the IR to this; the runtime runs it. Values
live in numbered slots: graph inputs, constants (numpy arrays) and step results.
Step attributes are plain Python (int, float, str, tuples, lists, numpy
arrays, bytes), keyed by the IR's attribute names.
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


@dataclass
class Plan:
    inputs: list[tuple[TensorSpec, int]]
    outputs: list[tuple[TensorSpec, int]]
    constants: dict[int, np.ndarray]
    steps: list[Step]
    num_slots: int
    last_use: dict[int, int] = field(default_factory=dict)
    """slot -> index of the last step reading it (intermediates are freed then)."""

    def compute_last_use(self) -> None:
        keep = {s for _, s in self.outputs} | set(self.constants)
        self.last_use = {}
        for i, step in enumerate(self.steps):
            for s in step.inputs:
                if s != NO_VALUE and s not in keep:
                    self.last_use[s] = i
