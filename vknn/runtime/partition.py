"""Assigning each step to a backend — the first in `Config.backends` whose gate
accepts it — and slicing the steps into maximal same-backend segments.

The Vulkan gates are `vknn.kernels.gate`, the same function the
support report calls, so what the report says is what the runtime does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vknn.errors import Unsupported
from vknn.config import Config
from vknn.runtime.cpu import has_kernel
from vknn.runtime.cpu.onnx_reference import BACKEND as ONNX_REFERENCE
from vknn.runtime.plan import NO_VALUE, Plan, Step, TensorSpec


def slot_specs(plan: Plan) -> dict[int, TensorSpec]:
    """slot -> spec for every value of the plan."""
    specs: dict[int, TensorSpec] = {s: spec for spec, s in plan.inputs}
    for slot, arr in plan.constants.items():
        specs[slot] = TensorSpec(f"const{slot}", tuple(arr.shape), arr.dtype.name)
    for step in plan.steps:
        for slot, spec in zip(step.outputs, step.out_specs, strict=False):
            specs[slot] = spec
    return specs


def vulkan_refusal(step: Step, config: Config, caps, in_specs: list[TensorSpec]) -> str | None:  # type: ignore[no-untyped-def]
    """Why the Vulkan backend does not take `step` (None: it does)."""
    if step.kind in config.disabled_vk_ops or step.op in config.disabled_vk_ops:
        return f"{step.kind}: disabled by Config.disable_vk_ops"
    from vknn.kernels import gate

    return gate(step, caps, in_specs)


def cpu_backend(step: Step) -> tuple[str, str] | None:
    """(backend, note) of the CPU path that runs `step`, or None."""
    if step.op.startswith("onnx."):
        return (
            ONNX_REFERENCE,
            f"{step.kind}: no vx lowering; runs on the CPU through onnx.reference",
        )
    if has_kernel(step.op):
        return "cpu", ""
    return None


def assign_backends(  # type: ignore[no-untyped-def]
    plan: Plan,
    config: Config,
    caps=None,
    no_vulkan: str | None = None,
    fold_islands: bool = True,
) -> None:
    """Set `step.backend` and `step.reason` for every step. `caps` is the
    Vulkan device's (None with `no_vulkan` saying why there is none).
    `fold_islands=False` (the support report) counts what the gates refuse
    only, without the `Config.fold_gpu_islands` hint."""
    specs = slot_specs(plan)
    gaps: list[str] = []
    for step in plan.steps:
        reasons: list[str] = []
        chosen = None
        for backend in config.backends:
            if backend == "vulkan":
                if caps is None:
                    why = f"{step.kind}: {no_vulkan or 'no Vulkan device'}"
                else:
                    ins = [specs[s] for s in step.inputs if s != NO_VALUE]
                    why = vulkan_refusal(step, config, caps, ins)
                if why is None:
                    chosen = ("vulkan", "")
                    break
                reasons.append(why)
            elif backend == "cpu":
                cpu = cpu_backend(step)
                if cpu is not None:
                    chosen = cpu
                    if cpu[1]:
                        reasons.append(cpu[1])
                    break
                reasons.append(f"{step.kind}: no CPU kernel for {step.op}")
        if chosen is None:
            raise Unsupported(
                f"node '{step.node}' ({step.kind}) has no backend among {list(config.backends)}: "
                + "; ".join(reasons)
            )
        step.backend = chosen[0]
        step.reason = "; ".join(reasons) if chosen[0] != config.backends[0] or chosen[1] else ""
        if (
            config.backends[0] == "vulkan"
            and step.backend != "vulkan"
            and not config.allow_cpu_fallback
        ):
            gaps.append(f"'{step.node}' ({reasons[0] if reasons else step.kind})")
    if gaps:
        raise Unsupported(
            f"{len(gaps)} op(s) cannot run on the Vulkan backend and Config.allow_cpu_fallback "
            f"is False: {', '.join(gaps[:20])}{' ...' if len(gaps) > 20 else ''}"
        )
    if fold_islands and config.allow_cpu_fallback and config.fold_gpu_islands > 0:
        fold_gpu_islands(plan, config.fold_gpu_islands)


HEAVY_KINDS = frozenset(
    {"Conv", "ConvTranspose", "MatMul", "Gemm", "Attention", "LSTM", "GRU", "RNN", "Einsum"}
)
"""Op kinds worth a GPU round trip on their own: never folded onto the CPU."""


def fold_gpu_islands(plan: Plan, max_ops: int) -> list[list[Step]]:
    """Move runs of at most `max_ops` cheap Vulkan steps that sit between two
    CPU steps onto the CPU: such an island costs a download, a submit and an
    upload on each side, more than its few elementwise ops. Returns the
    islands folded. Only steps with a CPU kernel, and no heavy kind, move."""
    steps = plan.steps
    folded: list[list[Step]] = []
    i = 0
    while i < len(steps):
        if steps[i].backend != "vulkan":
            i += 1
            continue
        j = i
        while j < len(steps) and steps[j].backend == "vulkan":
            j += 1
        island = steps[i:j]
        between_cpu = i > 0 and j < len(steps)  # CPU on both sides (the loop's invariant)
        if (
            between_cpu
            and len(island) <= max_ops
            and all(s.kind not in HEAVY_KINDS and cpu_backend(s) is not None for s in island)
        ):
            for s in island:
                backend, note = cpu_backend(s)  # type: ignore[misc]
                s.backend = backend
                s.reason = (
                    f"{s.kind}: folded onto the CPU with its {len(island)}-op GPU island "
                    f"between CPU segments (Config.fold_gpu_islands={max_ops})"
                    + (f"; {note}" if note else "")
                )
            folded.append(island)
        i = j
    return folded


@dataclass
class Segment:
    """A maximal run of consecutive steps on one backend family."""

    backend: str  # "vulkan" or "cpu" (CPU kernels and onnx.reference alike)
    steps: list[Step] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    """Slots the segment reads that it does not produce (constants excluded)."""
    outputs: list[int] = field(default_factory=list)
    """Slots it produces that later segments or the graph outputs read."""


def make_segments(plan: Plan) -> list[Segment]:
    segments: list[Segment] = []
    for step in plan.steps:
        family = "vulkan" if step.backend == "vulkan" else "cpu"
        if not segments or segments[-1].backend != family:
            segments.append(Segment(family))
        segments[-1].steps.append(step)
    graph_outputs = {s for _, s in plan.outputs}
    readers: dict[int, set[int]] = {}
    for i, seg in enumerate(segments):
        for step in seg.steps:
            for s in step.inputs:
                readers.setdefault(s, set()).add(i)
    for i, seg in enumerate(segments):
        produced = {s for step in seg.steps for s in step.outputs}
        seen: set[int] = set()
        for step in seg.steps:
            for s in step.inputs:
                if (
                    s != NO_VALUE
                    and s not in produced
                    and s not in plan.constants
                    and s not in seen
                ):
                    seen.add(s)
                    seg.inputs.append(s)
        seg.outputs = [
            s
            for step in seg.steps
            for s in step.outputs
            if s in graph_outputs or any(j > i for j in readers.get(s, ()))
        ]
    return segments
