"""Assigning each step to a backend: the first in `Config.backends` whose gate
accepts it. The gates are the same functions the support report uses."""

from __future__ import annotations

from vknn.errors import Unsupported
from vknn.runtime.config import Config
from vknn.runtime.cpu import has_kernel
from vknn.runtime.cpu.onnx_reference import BACKEND as ONNX_REFERENCE
from vknn.runtime.plan import Plan, Step


def vulkan_refusal(step: Step, config: Config) -> str | None:
    """Why the Vulkan backend does not take `step` (None: it does)."""
    if step.kind in config.disabled_vk_ops:
        return f"{step.kind}: disabled by Config.disable_vk_ops"
    return f"{step.kind}: the Vulkan backend is not implemented yet"


def cpu_backend(step: Step) -> tuple[str, str] | None:
    """(backend, note) of the CPU path that runs `step`, or None."""
    if step.op.startswith("onnx."):
        return ONNX_REFERENCE, f"{step.kind}: no vx lowering; runs on the CPU through onnx.reference"
    if has_kernel(step.op):
        return "cpu", ""
    return None


def assign_backends(plan: Plan, config: Config) -> None:
    gaps: list[str] = []
    for step in plan.steps:
        reasons: list[str] = []
        chosen = None
        for backend in config.backends:
            if backend == "vulkan":
                why = vulkan_refusal(step, config)
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
        if step.backend != config.backends[0] and config.backends[0] == "vulkan" and not config.allow_cpu_fallback:
            gaps.append(f"'{step.node}' ({reasons[0] if reasons else step.kind})")
    if gaps:
        raise Unsupported(
            f"{len(gaps)} op(s) cannot run on the Vulkan backend and Config.allow_cpu_fallback "
            f"is False: {', '.join(gaps[:20])}{' ...' if len(gaps) > 20 else ''}"
        )
