"""assign-layouts: choose each `vx` op's device layout and convert only at
the boundaries between layouts.

The Vulkan backend keeps CNN-shaped tensors in NC4HW4 (channels packed by 4)
and transformer-shaped ones flat (row-major N-D). Each op's LAYOUT_CLASS
descriptor says which it needs; "any" ops (pointwise, fused pointwise,
concat, cast, ...) run in whatever layout their data arrives in:

  1. forward, in graph order: a fixed-class op takes its class; an "any" op
     takes the layout of its first operand that has one (operand 0 first, so
     a fused epilogue always sits in its host's layout);
  2. backward, for "any" ops fed only by graph inputs or constants: the
     layout of their first user that has one, else NC4HW4 for a rank-4
     tensor and flat otherwise;
  3. the choice is recorded as `vx.layout = #vx.layout<...>` on each op, and
     a `vx.convert_layout` is inserted (once per value and target, right after
     the producer) wherever an op reads a value produced in the other layout.

What it must leave alone: graph inputs and outputs (host NCHW; the runtime
packs and unpacks them at segment boundaries, not converts), constants
(weights are packed for their consumer when uploaded, so they carry no layout
and never get converts), ops outside `vx` (they run on the host), and a graph
that needs no conversion: a pure transformer gets none, a pure CNN gets them
only where its flat tail (flatten, Gemm, Softmax) begins. A `vx.layout`
already on an op is kept (so the pass is idempotent and a user can pin an
"any" op), but pinning a fixed-class op to the other layout is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from vknn.dialects import vx
from vknn.errors import Unsupported
from vknn.transforms.vx_graph import graph_blocks, node_name

LAYOUT_ATTR = "vx.layout"


def layout_of(op: Operation) -> vx.Layout | None:
    """The layout assign-layouts recorded on `op` (None before it ran, and
    for constants and non-vx ops)."""
    if isinstance(op, vx.ConvertLayoutOp):
        return op.dst.data
    a = op.attributes.get(LAYOUT_ATTR)
    return a.data if isinstance(a, vx.LayoutAttr) else None


def _graph_op(op: Operation) -> bool:
    """A `vx` op that has a device layout (constants do not: see above)."""
    return isinstance(op, vx.VxOp) and not isinstance(op, vx.ConstantOp)


def _by_rank(op: Operation) -> vx.Layout:
    rank = len(vx.shape_of(op.results[0])) if op.results else 0
    return vx.Layout.NC4HW4 if rank == 4 else vx.Layout.FLAT


class _Chooser:
    def __init__(self, block: Block):
        self.block = block
        self.layout: dict[Operation, vx.Layout] = {}

    def run(self) -> None:
        ops = [op for op in self.block.ops if _graph_op(op)]
        for op in ops:
            chosen = self._pinned(op) or self._fixed(op) or self._from_operands(op)
            if chosen is not None:
                self.layout[op] = chosen
        for op in reversed(ops):
            if op not in self.layout:
                self.layout[op] = self._from_users(op) or _by_rank(op)
        for op, layout in self.layout.items():
            if not isinstance(op, vx.ConvertLayoutOp):
                op.attributes[LAYOUT_ATTR] = vx.LayoutAttr(layout)

    def _pinned(self, op: Operation) -> vx.Layout | None:
        if isinstance(op, vx.ConvertLayoutOp):
            return op.dst.data
        a = op.attributes.get(LAYOUT_ATTR)
        if a is None:
            return None
        if not isinstance(a, vx.LayoutAttr):
            raise Unsupported(
                f"assign-layouts: node '{node_name(op)}' ({op.name}) has {LAYOUT_ATTR} = {a}; "
                "expected #vx.layout<nc4hw4> or #vx.layout<flat>"
            )
        cls = type(op).LAYOUT_CLASS  # type: ignore[attr-defined]
        if cls != "any" and a.data != cls:
            raise Unsupported(
                f"assign-layouts: node '{node_name(op)}' ({op.name}) is pinned to layout "
                f"{a.data}, but {op.name} runs only in {cls}; remove the {LAYOUT_ATTR} attribute"
            )
        return a.data

    @staticmethod
    def _fixed(op: Operation) -> vx.Layout | None:
        cls = type(op).LAYOUT_CLASS  # type: ignore[attr-defined]
        return None if cls == "any" else vx.Layout(cls)

    def _from_operands(self, op: Operation) -> vx.Layout | None:
        for v in op.operands:
            p = v.owner
            if isinstance(p, Operation) and p in self.layout:
                return self.layout[p]
        return None

    def _from_users(self, op: Operation) -> vx.Layout | None:
        for r in op.results:
            for use in r.uses:
                if use.operation in self.layout:
                    return self.layout[use.operation]
        return None


class InsertLayoutConverts(RewritePattern):
    """Feeds each operand of a laid-out op in the op's own layout, through one
    shared `vx.convert_layout` per (value, target layout)."""

    def __init__(self) -> None:
        self.converts: dict[tuple[SSAValue, vx.Layout], SSAValue] = {}

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.VxOp, rewriter: PatternRewriter) -> None:
        if not _graph_op(op) or isinstance(op, vx.ConvertLayoutOp):
            return
        want = layout_of(op)
        if want is None:
            return
        operands = list(op.operands)
        changed = False
        for i, v in enumerate(operands):
            producer = v.owner
            if not isinstance(producer, Operation) or not _graph_op(producer):
                continue
            have = layout_of(producer)
            if have is None or have == want:
                continue
            key = (v, want)
            if key not in self.converts:
                conv = vx.ConvertLayoutOp.create(
                    operands=[v],
                    result_types=[v.type],
                    properties={"from": vx.LayoutAttr(have), "to": vx.LayoutAttr(want)},
                )
                rewriter.insert(conv, InsertPoint.after(producer))
                self.converts[key] = conv.results[0]
            operands[i] = self.converts[key]
            changed = True
        if changed:
            op.operands = operands
            rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class AssignLayoutsPass(ModulePass):
    """Record NC4HW4 / flat on every vx op and convert at the boundaries."""

    name = "assign-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in graph_blocks(op):
            _Chooser(block).run()
        PatternRewriteWalker(
            GreedyRewritePatternApplier([InsertLayoutConverts()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
