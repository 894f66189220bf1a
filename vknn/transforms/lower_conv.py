"""lower-conv: choose the implicit-GEMM algorithm for K x K convolutions
(opt-in: `lower-conv{enabled=true}`).

A 2-D `vx.conv` with a K x K kernel (K > 1), one group and enough reduction
work is marked

    vx.conv ... {vx.conv_algorithm = "implicit_gemm",
                 vx.gemm_shape = array<i64: M, N, K>}

M = output channels, N = batch * output pixels, K = input channels * kh * kw:
the GEMM the kernel computes without materializing im2col (each K-tile of
the B operand is gathered from the input on the fly). The op stays a
`vx.conv` so that shape rules, epilogues, layouts and the CPU oracle need
nothing new; only the Vulkan kernel choice reads the attribute (see
docs/adr/0003-fusion-and-layouts.md for why not explicit im2col ops).

What it must leave alone: 1 x 1 convs (already a plain GEMM for the direct
kernel), grouped and depthwise convs (their per-group GEMMs are too thin),
non-2-D convs, convs whose reduction `C/group * kh * kw` is below
`min-reduction` (the first RGB conv of a CNN: too little work per output to
fill GEMM tiles), and everything when `enabled` is false. Shapes must be
static: a dynamic shape on a candidate conv is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects import vx
from vknn.transforms.vx_graph import require_static

ALGORITHM_ATTR = "vx.conv_algorithm"
GEMM_SHAPE_ATTR = "vx.gemm_shape"
IMPLICIT_GEMM = "implicit_gemm"


@dataclass
class MarkImplicitGemm(RewritePattern):
    min_reduction: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.ConvOp, rewriter: PatternRewriter) -> None:
        if ALGORITHM_ATTR in op.attributes:
            return
        w = vx.shape_of(op.weight)
        if len(w) != 4 or op.group.value.data != 1 or w[2] * w[3] <= 1:
            return
        require_static(op, "lower-conv")
        reduction = w[1] * w[2] * w[3]
        if reduction < self.min_reduction:
            return
        out = vx.shape_of(op.output)
        gemm = (out[1], out[0] * math.prod(out[2:]), reduction)
        op.attributes[ALGORITHM_ATTR] = StringAttr(IMPLICIT_GEMM)
        op.attributes[GEMM_SHAPE_ATTR] = DenseArrayBase.from_list(i64, list(gemm))
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class LowerConvPass(ModulePass):
    """Mark K x K vx.conv ops for the implicit-GEMM kernel (opt-in)."""

    name = "lower-conv"

    enabled: bool = False
    """Off by default: the direct kernel is the measured baseline."""
    min_reduction: int = 64
    """Fewest multiply-adds per output element (C/group * kh * kw) worth GEMM tiles."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enabled:
            return
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MarkImplicitGemm(self.min_reduction)], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
