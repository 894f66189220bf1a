"""Where each ONNX node of a model runs, from a program's per-node entries:
the one source of `Session.node_report()` / `node_backends()` /
`fallback_reasons()`, `vknn run`'s plan and fallback lines and
`vknn compile --support-report`, so their counts cannot disagree.

A program lists `[node, backend, reason]` entries (`vknn.serialize`): one
per op a segment runs (a node lowered to several ops, or fused with others,
appears once per op), and one per node that runs nowhere: `folded` (computed
at compile time into a constant) or `eliminated` (identities, dead code).
Plain data; imports nothing from the compiler.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

NOT_RUN = ("folded", "eliminated")
"""Statuses of nodes no backend runs (no work at run time, no fallback)."""


@dataclass(frozen=True)
class NodeRow:
    name: str
    backend: str
    """`vulkan`, `cpu`, `onnx-reference`, `folded`, `eliminated`, or backends
    joined by '+' where a node's ops run on several (`vulkan+cpu`)."""
    reason: str
    """Why the node is not (only) on the preferred backend; "" when it is,
    or when it does not run."""

    @property
    def runs(self) -> bool:
        return self.backend not in NOT_RUN


def node_rows(entries: Iterable[tuple[str, str, str]], preferred: str) -> list[NodeRow]:
    """One row per node, in first-seen order. A node off the preferred
    backend always has a reason: the entries' own, else one naming where it
    runs (no node is off the preferred backend without a word)."""
    order: list[str] = []
    backends: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for node, backend, reason in entries:
        if node not in backends:
            order.append(node)
            backends[node] = []
        got = backends[node]
        if backend in NOT_RUN and got:
            continue  # a node that also runs somewhere is not folded
        if backend not in NOT_RUN and any(b in NOT_RUN for b in got):
            got.clear()
        if backend not in got:
            got.append(backend)
        if reason and node not in reasons:
            reasons[node] = reason
    rows = []
    for node in order:
        backend = "+".join(backends[node])
        reason = reasons.get(node, "")
        if backend in NOT_RUN:
            reason = ""
        elif backend != preferred and not reason:
            reason = f"runs on {backend} (no reason recorded for this node)"
        rows.append(NodeRow(node, backend, reason if backend != preferred else ""))
    return rows


def summary(rows: list[NodeRow]) -> dict[str, object]:
    """{"total": every node, <backend>: count..., "reasons": {reason: count}}."""
    out: dict[str, object] = {"total": len(rows)}
    out.update(sorted(Counter(r.backend for r in rows).items()))
    reasons = Counter(r.reason for r in rows if r.reason)
    if reasons:
        out["reasons"] = dict(reasons.most_common())
    return out


def plan_line(rows: list[NodeRow]) -> str:
    """`N nodes: vulkan 80, cpu 6, onnx-reference 3, folded 9` (runners first)."""
    counts = Counter(r.backend for r in rows)
    keys = sorted(counts, key=lambda b: (b in NOT_RUN, b))
    return f"{len(rows)} nodes: " + ", ".join(f"{b} {counts[b]}" for b in keys)
