"""The support report: which backend each node lands on, and why.

`support_report(plan)` reads the backends `partition.assign_backends` chose —
through the same Vulkan gates the runtime uses — so `vknn compile
--support-report` and `Session.node_backends()` cannot disagree. "0 CPU ops"
means the summary has no "cpu" key.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from vknn.runtime.plan import Plan

CPU_BACKENDS = ("cpu", "onnx-reference")


def support_report(plan: Plan) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    for step in plan.steps:
        row = seen.get(step.node)
        if row is None:
            row = {"name": step.node, "op": step.kind, "backend": step.backend}
            seen[step.node] = row
            nodes.append(row)
        elif row["backend"] != step.backend:  # one ONNX node split across backends
            row["backend"] = "cpu" if step.backend in CPU_BACKENDS else row["backend"]
        if step.backend in CPU_BACKENDS and step.reason and "reason" not in row:
            row["reason"] = step.reason
    summary: dict[str, Any] = {"total": len(nodes)}
    families = Counter("cpu" if n["backend"] in CPU_BACKENDS else n["backend"] for n in nodes)
    summary.update(sorted(families.items()))
    reasons = Counter(n["reason"] for n in nodes if "reason" in n)
    if reasons:
        summary["reasons"] = dict(reasons.most_common())
    return {"nodes": nodes, "summary": summary}
