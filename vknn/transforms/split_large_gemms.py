"""split-large-gemms: a `vx.gemm` whose constant weight is past the target's
maxStorageBufferRange becomes column blocks joined by a `vx.concat`.

VGG-19's first fully connected weight is 411 MB; lavapipe binds at most
128 MiB per storage buffer. Instead of refusing the op (the gate would), the
output is computed in column blocks, one `vx.gemm` per block of the weight
(and of a per-column C), joined along N by a `vx.concat`, whose inputs
`convert-vx-to-vkd` places in its result's memory so each block is written
straight into its slice (no copy at batch 1). Runs before `partition`, so
the blocks are gated like any op. Only the limit comes from the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Operation
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
from vknn.ir.constants import from_numpy
from vknn.transforms.segment_steps import CONSTANT_OPS, constant_value
from vknn.transforms.target_option import module_target
from vknn.transforms.vx_graph import node_name

ALIGN = 64
"""Column blocks are multiples of this (keeps GEMM tiles whole)."""


def _constant(op: Operation | None) -> np.ndarray | None:
    if op is None or op.name not in CONSTANT_OPS:
        return None
    return constant_value(op)


def _bias_block(bias: np.ndarray, n0: int, n1: int, n: int) -> np.ndarray:
    """The columns [n0, n1) of a C that broadcasts to [M, N]."""
    if bias.ndim == 0 or bias.shape[-1] in (1,) or bias.shape[-1] != n:
        return bias
    return np.ascontiguousarray(bias[..., n0:n1])


@dataclass
class SplitGemm(RewritePattern):
    max_bytes: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.GemmOp, rewriter: PatternRewriter) -> None:
        from vknn.ir.types import numpy_dtype

        t = op.b.type
        itemsize = numpy_dtype(t.element_type).itemsize  # type: ignore[attr-defined]
        if itemsize * math.prod(vx.shape_of(op.b)) <= self.max_bytes:
            return  # fits: no need to read the weight at all
        weight = _constant(op.b.owner if isinstance(op.b.owner, Operation) else None)
        if weight is None or weight.ndim != 2 or weight.nbytes <= self.max_bytes:
            return
        trans_b = bool(op.trans_b.value.data)
        k, n = (weight.shape[1], weight.shape[0]) if trans_b else weight.shape
        cols = max(ALIGN, (self.max_bytes // (k * weight.itemsize)) // ALIGN * ALIGN)
        if cols >= n:
            return
        bias = None
        if op.c is not None:
            bias = _constant(op.c.owner if isinstance(op.c.owner, Operation) else None)
            if bias is None:
                return  # a computed C cannot be sliced here
        out_type = op.output.type
        assert isinstance(out_type, TensorType)
        m = out_type.get_shape()[0]
        name = node_name(op)
        new_ops: list[Operation] = []
        blocks = []
        for i, n0 in enumerate(range(0, n, cols)):
            n1 = min(n, n0 + cols)
            w_block = np.ascontiguousarray(weight[n0:n1] if trans_b else weight[:, n0:n1])
            w_op = vx.ConstantOp(from_numpy(w_block, f"{name}_w{i}"))
            new_ops.append(w_op)
            c_val = None
            if bias is not None:
                c_op = vx.ConstantOp(from_numpy(_bias_block(bias, n0, n1, n), f"{name}_c{i}"))
                new_ops.append(c_op)
                c_val = c_op.output
            part = vx.GemmOp.create(
                operands=[op.a, w_op.output] + ([c_val] if c_val is not None else []),
                result_types=[TensorType(out_type.element_type, (m, n1 - n0))],
                properties=dict(op.properties),
                attributes={**op.attributes, NAME_ATTR: StringAttr(f"{name}#{i}")},
            )
            new_ops.append(part)
            blocks.append(part.results[0])
        concat = vx.ConcatOp.create(
            operands=blocks,
            result_types=[out_type],
            properties={"axis": IntegerAttr(1, i64)},
            attributes={k: v for k, v in op.attributes.items() if k in (NAME_ATTR, "vx.layout")},
        )
        new_ops.append(concat)
        rewriter.replace(op, new_ops, [concat.output])


@dataclass(frozen=True)
class SplitLargeGemmsPass(ModulePass):
    """Split GEMMs whose constant weight one binding cannot hold."""

    name = "split-large-gemms"

    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        limit = module_target(op, self.target).max_storage_buffer_range
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SplitGemm(limit)]), apply_recursively=False
        ).rewrite_module(op)
