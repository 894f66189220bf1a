"""dce: erase ops whose results nobody uses and that have no side effects.

Side-effect free here means: any `vx` graph op (all are `Pure`), any `onnx.*`
operator of the default domain (inference-time ONNX operators only compute
their outputs; an unused random op is simply not drawn), `onnx.NoValue`, and
constants of either dialect. Erased constants give their weight-store entry
back when no other op still names the same handle.

It must leave alone: anything reachable from `func.return`, ops of other
domains (`onnx.custom`: we cannot know what they do), `vkd` ops and anything
else with effects (dispatches, copies), terminators, and function arguments
(an unused graph input is still part of the model's signature).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import IsTerminator, Pure

from vknn.dialects.onnx import NoValueOp, OnnxOp
from vknn.ir.weights import WEIGHTS


def resource_handles(op: Operation) -> set[str]:
    return {
        a.resource_handle.data
        for a in (*op.properties.values(), *op.attributes.values())
        if isinstance(a, DenseResourceAttr)
    }


def release_unreferenced(module: ModuleOp, handles: Iterable[str]) -> list[str]:
    """Release the weight-store entries of `handles` that no op of `module`
    still names; return the released ones."""
    handles = set(handles)
    if not handles:
        return []
    for o in module.walk():
        handles -= resource_handles(o)
        if not handles:
            return []
    WEIGHTS.release(handles)
    return sorted(handles)


def is_removable(op: Operation) -> bool:
    """Whether `op` may go when its results are unused."""
    if not op.results or op.has_trait(IsTerminator):
        return False
    if isinstance(op, OnnxOp | NoValueOp):
        return True
    return op.name.startswith("vx.") and op.has_trait(Pure)


class EraseDeadOp(RewritePattern):
    """One unused side-effect-free op; its operands' producers are revisited."""

    def __init__(self, released: set[str]):
        self.released = released

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if any(r.uses for r in op.results) or not is_removable(op):
            return
        self.released |= resource_handles(op)
        rewriter.erase(op)


def erase_dead_ops(module: ModuleOp) -> int:
    """Erase every dead removable op (to a fixpoint); returns how many."""
    released: set[str] = set()
    before = sum(1 for _ in module.walk())
    PatternRewriteWalker(
        GreedyRewritePatternApplier([EraseDeadOp(released)], dce_enabled=False),
        apply_recursively=True,
        walk_reverse=True,  # users before producers: one sweep frees whole chains
    ).rewrite_module(module)
    release_unreferenced(module, released)
    return before - sum(1 for _ in module.walk())


@dataclass(frozen=True)
class DcePass(ModulePass):
    """Erase unused side-effect-free ops (dead onnx ops and constants included)."""

    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        erase_dead_ops(op)
