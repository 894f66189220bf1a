"""fold-nan-guard: the exporters' softmax guard as a flag of the softmax.

torch's dynamo exporter decomposes scaled dot-product attention with
`Where(IsNaN(p), 0, p)` after the softmax `p` of every attention layer,
so a fully masked row (all -inf) gives zeros instead of NaN. Matches

    p = vx.softmax(x)
    n = vx.float_test "nan" p
    y = vx.select(n, zero, p)      zero: a constant of zeros that does not
                                   broadcast `y` past `p`'s shape

and replaces `y` with `vx.softmax(x) {zero_nan = true}`, which stores 0
wherever the softmax is NaN: exactly the guarded value, element by element
(a softmax row is NaN-free, or all NaN when it holds NaN or is all -inf, or
NaN only where x is +inf with zeros elsewhere). The new softmax keeps the
softmax's name and lists the guard's nodes in `vx.fused_names`; the old
ops go when nothing else reads them (dce).

It must leave alone: a test other than NaN, a replacement other than a
constant 0, a select whose false value is not the tested softmax, a
log-softmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, i1
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects import vx
from vknn.dialects.onnx import NAME_ATTR
from vknn.transforms.const_fold import constant_value
from vknn.transforms.fuse_pointwise import FUSED_NAMES_ATTR
from vknn.transforms.vx_graph import node_name


class FoldNanGuard(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.SelectOp, rewriter: PatternRewriter) -> None:
        test = op.cond.owner
        sm = op.false_value.owner
        if not isinstance(test, vx.FloatTestOp) or test.test.data != "nan":
            return
        if not isinstance(sm, vx.SoftmaxOp) or test.input is not op.false_value:
            return
        if vx.shape_of(op.output) != vx.shape_of(sm.output):
            return
        zero = constant_value(op.true_value)
        if zero is None or np.any(np.asarray(zero) != 0):
            return
        names = [node_name(test), node_name(op)]
        old = sm.attributes.get(FUSED_NAMES_ATTR)
        if isinstance(old, ArrayAttr):
            names = [a.data for a in old.data if isinstance(a, StringAttr)] + names  # type: ignore[attr-defined]
        new = vx.SoftmaxOp.create(
            operands=[sm.input],
            result_types=[sm.output.type],
            properties={**sm.properties, "zero_nan": IntegerAttr(1, i1)},
            attributes={
                **({NAME_ATTR: sm.attributes[NAME_ATTR]} if NAME_ATTR in sm.attributes else {}),
                FUSED_NAMES_ATTR: ArrayAttr([StringAttr(n) for n in names]),
            },
        )
        rewriter.replace(op, new, new.results)


@dataclass(frozen=True)
class FoldNanGuardPass(ModulePass):
    """Fold Where(IsNaN(softmax), 0, softmax) into the softmax."""

    name = "fold-nan-guard"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldNanGuard()]), apply_recursively=False
        ).rewrite_module(op)
