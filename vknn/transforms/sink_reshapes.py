"""sink-reshapes: move free reshapes out from between a product and the
pointwise op that should be its epilogue.

Exported transformers put layout-only ops between a projection and its
residual add: torch's multi-head attention computes the output projection
as a `Gemm` on [S*B, E] and returns `Reshape -> Transpose(1, 0, 2)` of it,
so the residual `Add` reads a reshape, not the Gemm, and fuse-pointwise
cannot make it the Gemm's epilogue (one extra dispatch and round trip per
layer). Three rewrites, each exact:

1. a `vx.transpose` that only moves extent-1 dims (the non-unit dims keep
   their order) is a `vx.reshape`;
2. `reshape(reshape(x))` is `reshape(x)`;
3. a pointwise op (`vx.unary`, `vx.binary`, `vx.select`, `vx.cast`) one of
   whose operands is the only use of `reshape(g)`, with g produced by an op
   that HOSTS_EPILOGUE, computes in g's shape instead: its other operands
   are reshaped to g's shape (each of the op's full shape) or kept (one
   element, of rank <= g's), and its result is reshaped back.

Reshapes are free (aliases on Vulkan, views on the CPU), so none of this
adds work. What it must leave alone: transposes that reorder data, an
operand that broadcasts with more than one element (its reshaped form need
not broadcast the same way), a reshape with other users, and a producer
that hosts no epilogue (nothing to gain).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
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

_POINTWISE = (vx.UnaryOp, vx.BinaryOp, vx.SelectOp, vx.CastOp)


def _reshape(x: SSAValue, shape: tuple[int, ...], like: Operation) -> vx.ReshapeOp:
    t = x.type
    assert isinstance(t, TensorType)
    attrs = {NAME_ATTR: like.attributes[NAME_ATTR]} if NAME_ATTR in like.attributes else {}
    return vx.ReshapeOp.create(
        operands=[x], result_types=[TensorType(t.element_type, shape)], attributes=attrs
    )


def _static(*shapes: tuple[int, ...]) -> bool:
    return all(d >= 0 for s in shapes for d in s)


class UnitTransposeIsReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.TransposeOp, rewriter: PatternRewriter) -> None:
        shape = vx.shape_of(op.input)
        if not _static(shape):
            return
        perm = [int(p) for p in op.perm.get_values()]
        moved = [p for p in perm if shape[p] != 1]
        if moved != sorted(moved):
            return
        new = vx.ReshapeOp.create(
            operands=[op.input],
            result_types=[op.output.type],
            attributes=dict(op.attributes),
        )
        rewriter.replace(op, new)


class ReshapeOfReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, vx.ReshapeOp):
            return
        new = vx.ReshapeOp.create(
            operands=[inner.input], result_types=[op.output.type], attributes=dict(op.attributes)
        )
        rewriter.replace(op, new)
        if not list(inner.output.uses):
            rewriter.erase(inner)


class SinkReshapeBelowPointwise(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _POINTWISE) or len(op.results) != 1:
            return
        out = vx.shape_of(op.results[0])
        for i, v in enumerate(op.operands):
            rs = v.owner
            if not isinstance(rs, vx.ReshapeOp) or len(list(v.uses)) != 1:
                continue
            g = rs.input
            host = g.owner
            if not isinstance(host, vx.VxOp) or not host.HOSTS_EPILOGUE:
                continue
            gshape = vx.shape_of(g)
            if vx.shape_of(v) != out or not _static(out, gshape) or gshape == out:
                continue
            operands = self._operands(op, i, g, gshape, out)
            if operands is None:
                continue
            new_ops, values = operands
            result = op.results[0].type
            assert isinstance(result, TensorType)
            inner = op.create(
                operands=values,
                result_types=[TensorType(result.element_type, gshape)],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            back = _reshape(inner.results[0], out, op)
            rewriter.replace(op, [*new_ops, inner, back], [back.output])
            rewriter.erase(rs)
            return

    @staticmethod
    def _operands(
        op: Operation, i: int, g: SSAValue, gshape: tuple[int, ...], out: tuple[int, ...]
    ) -> tuple[list[Operation], list[SSAValue]] | None:
        new_ops: list[Operation] = []
        values: list[SSAValue] = []
        for j, w in enumerate(op.operands):
            if j == i:
                values.append(g)
                continue
            wshape = vx.shape_of(w)
            if wshape == out:
                r = _reshape(w, gshape, op)
                new_ops.append(r)
                values.append(r.output)
            elif _static(wshape) and math.prod(wshape) == 1 and len(wshape) <= len(gshape):
                values.append(w)
            else:
                return None
        return new_ops, values


@dataclass(frozen=True)
class SinkReshapesPass(ModulePass):
    """Unit transposes -> reshapes; reshapes moved below pointwise ops onto products."""

    name = "sink-reshapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [UnitTransposeIsReshape(), ReshapeOfReshape(), SinkReshapeBelowPointwise()]
            ),
            apply_recursively=True,
        ).rewrite_module(op)
