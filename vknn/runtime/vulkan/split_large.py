"""Split GEMMs whose constant weight exceeds the device's storage-buffer range.

VGG-19's first fully connected weight is 411 MB; lavapipe binds at most
128 MiB per storage buffer. Instead of refusing the op, the plan computes the
output in column blocks — one `vx.gemm` per block of the weight — and joins
them with a `vx.concat` along N, which the executor places in memory so each
block is written straight into its slice (no copy at batch 1). A plan
rewrite over plain steps: no xDSL, no device; only the limit comes from caps.
"""

from __future__ import annotations

import numpy as np

from vknn.runtime.plan import NO_VALUE, Plan, Step, TensorSpec

_ALIGN = 64  # column blocks are multiples of this (keeps GEMM tiles whole)


def split_oversized_gemms(plan: Plan, max_bytes: int) -> int:
    """Rewrite `plan` in place; return how many GEMMs were split."""
    new_steps: list[Step] = []
    count = 0
    for step in plan.steps:
        parts = _split(plan, step, max_bytes) if step.op == "vx.gemm" else None
        if parts is None:
            new_steps.append(step)
        else:
            new_steps.extend(parts)
            count += 1
    if count:
        plan.steps = new_steps
        plan.compute_last_use()
    return count


def _split(plan: Plan, step: Step, max_bytes: int) -> list[Step] | None:
    b_slot = step.inputs[1]
    weight = plan.constants.get(b_slot)
    if weight is None or weight.nbytes <= max_bytes or weight.ndim != 2:
        return None
    trans_b = bool(step.attrs.get("trans_b"))
    k, n = (weight.shape[1], weight.shape[0]) if trans_b else weight.shape
    cols = max(_ALIGN, (max_bytes // (k * weight.itemsize)) // _ALIGN * _ALIGN)
    if cols >= n:
        return None
    c_slot = step.inputs[2] if len(step.inputs) > 2 else NO_VALUE
    bias = plan.constants.get(c_slot) if c_slot != NO_VALUE else None
    if c_slot != NO_VALUE and bias is None:
        return None  # a computed C cannot be sliced here
    out = step.out_specs[0]
    m = out.shape[0]
    parts: list[Step] = []
    block_slots: list[int] = []
    for i, n0 in enumerate(range(0, n, cols)):
        n1 = min(n, n0 + cols)
        w_block = np.ascontiguousarray(weight[n0:n1] if trans_b else weight[:, n0:n1])
        inputs = [step.inputs[0], _add_constant(plan, w_block)]
        if bias is not None:
            inputs.append(_add_constant(plan, _bias_block(bias, n0, n1, n)))
        slot = plan.num_slots
        plan.num_slots += 1
        block_slots.append(slot)
        parts.append(
            Step(
                step.op,
                f"{step.node}#{i}",
                inputs,
                [slot],
                [TensorSpec(f"{out.name}#{i}", (m, n1 - n0), out.dtype)],
                dict(step.attrs),
            )
        )
    concat_attrs = {"axis": 1}
    if "vx.layout" in step.attrs:
        concat_attrs["vx.layout"] = step.attrs["vx.layout"]
    parts.append(Step("vx.concat", step.node, block_slots, list(step.outputs), [out], concat_attrs))
    return parts


def _add_constant(plan: Plan, value: np.ndarray) -> int:
    slot = plan.num_slots
    plan.num_slots += 1
    plan.constants[slot] = value
    return slot


def _bias_block(bias: np.ndarray, n0: int, n1: int, n: int) -> np.ndarray:
    """The columns [n0, n1) of a C that broadcasts to [M, N]."""
    if bias.ndim == 0 or bias.shape[-1] == 1:
        return bias
    if bias.shape[-1] != n:
        return bias
    return np.ascontiguousarray(bias[..., n0:n1])
