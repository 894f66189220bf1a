"""fold-batchnorm: fold a `vx.batchnorm` into the `vx.conv`,
`vx.conv_transpose` or `vx.gemm` that produces its input, by scaling the
producer's weights per output channel and rewriting its bias:
W' = W * a, bias' = bias * a + b, with a = scale / sqrt(var + eps),
b = beta - mean * a (folded in f64, stored in the weights' type).

It must leave alone a batchnorm whose producer's result has other users (the
unnormalized value is still needed), whose producer's weights, bias or the
BN parameters are not constants, or whose producer is anything else; those
go to lower-batchnorm. It never changes the producer's geometry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects import vx
from vknn.ir.types import numpy_dtype
from vknn.transforms.const_fold import constant_value
from vknn.transforms.lower_batchnorm import batchnorm_affine, constant, node_name


class FoldBatchNormIntoProducer(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.BatchNormOp, rewriter: PatternRewriter) -> None:
        prod = op.input.owner
        if not isinstance(prod, vx.ConvOp | vx.ConvTransposeOp | vx.GemmOp):
            return
        out = prod.results[0]
        if len(list(out.uses)) != 1:  # the unnormalized value must not be needed elsewhere
            return
        if isinstance(prod, vx.GemmOp):
            w, bias_v = prod.b, prod.c
        else:
            w, bias_v = prod.weight, prod.bias
        weight = constant_value(w)
        bias = constant_value(bias_v) if bias_v is not None else None
        if weight is None or (bias_v is not None and bias is None):
            return
        affine = batchnorm_affine(op)
        if affine is None:
            return
        a, b = affine
        dtype = numpy_dtype(w.type.element_type)  # type: ignore[attr-defined]
        props = dict(prod.properties)
        if isinstance(prod, vx.ConvOp):
            new_w = weight * a.reshape((-1,) + (1,) * (weight.ndim - 1))
            new_b = (bias if bias is not None else 0.0) * a + b
        elif isinstance(prod, vx.ConvTransposeOp):
            # weight [C_in, M/group, *K]; output channel g * M/group + j.
            group = prod.group.value.data
            c_in, m_g = weight.shape[:2]
            k = weight.shape[2:]
            scale = a.reshape(group, 1, m_g, *(1,) * len(k))
            new_w = (weight.reshape(group, c_in // group, m_g, *k) * scale).reshape(weight.shape)
            new_b = (bias if bias is not None else 0.0) * a + b
        else:
            trans_b = bool(prod.trans_b.value.data)
            new_w = weight * (a[:, None] if trans_b else a[None, :])
            m, n = tuple(out.type.get_shape())  # type: ignore[attr-defined]
            beta = float(prod.beta.value.data)
            c = np.zeros((1, n)) if bias is None else beta * np.asarray(bias, np.float64)
            rows = 1 if c.ndim < 2 or c.shape[0] == 1 else m
            new_b = np.broadcast_to(c, (rows, n)) * a + b
            props["beta"] = FloatAttr(1.0, f32)
        name = node_name(prod)
        cw = constant(np.asarray(new_w).astype(dtype), f"{name}_bn_weight", prod)
        cb = constant(np.asarray(new_b).astype(dtype), f"{name}_bn_bias", prod)
        operands = [prod.operands[0], cw.output, cb.output]
        new = type(prod).create(
            operands=operands,
            result_types=[op.output.type],
            properties=props,
            attributes=dict(prod.attributes),
        )
        rewriter.replace(op, [cw, cb, new], [new.results[0]])
        rewriter.erase(prod)


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """vx.batchnorm after a constant-weight conv / conv_transpose / gemm -> folded weights."""

    name = "fold-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldBatchNormIntoProducer()]), apply_recursively=False
        ).rewrite_module(op)
