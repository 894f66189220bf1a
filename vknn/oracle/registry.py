"""Op name -> CPU kernel. A kernel is `f(step, inputs) -> list of outputs`,
with `inputs[i]` None for an absent optional operand; it reads its attributes
from `step.attrs` and its result shapes/dtypes from `step.out_specs`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.runtime.plan import Step

Kernel = Callable[[Step, list[np.ndarray | None]], list[np.ndarray]]

Check = Callable[[Step], "str | None"]

KERNELS: dict[str, Kernel] = {}
_PREFIX_KERNELS: dict[str, Kernel] = {}
CHECKS: dict[str, Check] = {}
"""Op name -> a compile-time check: None when the kernel runs this step, else
why not (an attribute value or type it does not implement), one line."""


def register(*op_names: str) -> Callable[[Kernel], Kernel]:
    """Register a kernel for ops; a name ending in `.` covers a whole dialect."""

    def deco(fn: Kernel) -> Kernel:
        for name in op_names:
            (_PREFIX_KERNELS if name.endswith(".") else KERNELS)[name] = fn
        return fn

    return deco


def kernel_for(op_name: str) -> Kernel | None:
    k = KERNELS.get(op_name)
    if k is not None:
        return k
    for prefix, fn in _PREFIX_KERNELS.items():
        if op_name.startswith(prefix):
            return fn
    return None


def has_kernel(op_name: str) -> bool:
    return kernel_for(op_name) is not None


def check(*op_names: str) -> Callable[[Check], Check]:
    """Register the compile-time check of the kernels of `op_names`."""

    def deco(fn: Check) -> Check:
        for name in op_names:
            CHECKS[name] = fn
        return fn

    return deco


def refusal(step: Step) -> str | None:
    """Why the CPU kernel of `step.op` cannot run `step`, or None if it can."""
    if kernel_for(step.op) is None:
        return f"no CPU kernel for {step.op}"
    fn = CHECKS.get(step.op)
    return fn(step) if fn is not None else None
