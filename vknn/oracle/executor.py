"""Runs one step on the CPU oracle: its kernel, with a one-line error naming the node."""

from __future__ import annotations

import numpy as np

from vknn.errors import VknnError
from vknn.oracle.registry import kernel_for
from vknn.runtime.plan import NO_VALUE, Step

BACKEND_REFERENCE = "onnx-reference"


def run_step(step: Step, values: list[np.ndarray | None]) -> None:
    kernel = kernel_for(step.op)
    if step.attrs.get("vkd.backend") == BACKEND_REFERENCE:
        # Opted in at compile time (Config.onnx_reference) for a step our
        # kernels do not run (none, or its check refused): loaded only now.
        from vknn.oracle.onnx_reference import run_onnx_node

        kernel = run_onnx_node
    if kernel is None:
        raise VknnError(f"no CPU kernel for {step.op} (node '{step.node}')")
    args = [values[s] if s != NO_VALUE else None for s in step.inputs]
    try:
        outs = kernel(step, args)
    except VknnError:
        raise
    except Exception as e:
        raise VknnError(f"node '{step.node}' ({step.kind}) failed on the CPU: {e}") from e
    for slot, out in zip(step.outputs, outs, strict=False):
        values[slot] = out
