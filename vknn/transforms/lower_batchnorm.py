"""lower-batchnorm: a `vx.batchnorm` with constant parameters becomes a
per-channel `vx.binary mul` then `vx.binary add`, with the affine folded at
compile time: a = scale / sqrt(var + eps), b = bias - mean * a. Two pointwise
ops that fuse-pointwise can absorb into the producer's epilogue, instead of a
normalization kernel.

Run it after fold-batchnorm, which removes the BNs a conv or gemm can absorb
entirely. It must leave alone a batchnorm whose parameters are not constants
(it stays and runs as a batchnorm kernel), and it must not change the
arithmetic beyond the f32 rounding of folding the affine (the folding is done
in f64). A variance + epsilon that is not positive is an error: the model's
batchnorm is undefined there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import SSAValue
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
from vknn.errors import VknnError
from vknn.ir.constants import from_numpy
from vknn.ir.types import numpy_dtype
from vknn.transforms.const_fold import constant_value


def node_name(op: vx.VxOp) -> str:
    a = op.attributes.get(NAME_ATTR)
    return a.data if isinstance(a, StringAttr) else op.name


def batchnorm_affine(bn: vx.BatchNormOp) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, b) with bn(x) = a * x + b per channel, in f64; None if the
    parameters are not all constants."""
    params = [constant_value(v) for v in (bn.scale, bn.bias, bn.mean, bn.variance)]
    if any(p is None for p in params):
        return None
    scale, bias, mean, var = (np.asarray(p, np.float64).reshape(-1) for p in params)  # type: ignore[arg-type]
    denom = var + float(bn.epsilon.value.data)
    if not np.all(denom > 0):
        bad = int(np.argmin(denom))
        raise VknnError(
            f"batchnorm '{node_name(bn)}': variance + epsilon must be > 0, channel {bad} has "
            f"{denom[bad]:g}; fix the model's variance initializer"
        )
    a = scale / np.sqrt(denom)
    return a, bias - mean * a


def constant(value: np.ndarray, name: str, like: vx.VxOp) -> vx.ConstantOp:
    attrs = {NAME_ATTR: like.attributes[NAME_ATTR]} if NAME_ATTR in like.attributes else None
    return vx.ConstantOp(from_numpy(np.array(value, order="C"), name), attrs)


class LowerBatchNorm(RewritePattern):
    """vx.batchnorm -> x * a + b with per-channel constants shaped [C, 1, ...]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.BatchNormOp, rewriter: PatternRewriter) -> None:
        affine = batchnorm_affine(op)
        if affine is None:
            return
        a, b = affine
        x = op.input
        typ = x.type
        assert isinstance(typ, TensorType)
        rank = len(typ.get_shape())
        dtype = numpy_dtype(typ.element_type)
        shape = (-1,) + (1,) * (rank - 2)
        name = node_name(op)
        ca = constant(a.astype(dtype).reshape(shape), f"{name}_mul", op)
        cb = constant(b.astype(dtype).reshape(shape), f"{name}_add", op)
        attrs = {NAME_ATTR: op.attributes[NAME_ATTR]} if NAME_ATTR in op.attributes else {}
        mul = _binary(vx.BinaryKind.MUL, x, ca.output, attrs)
        add = _binary(vx.BinaryKind.ADD, mul.output, cb.output, attrs)
        rewriter.replace(op, [ca, cb, mul, add], [add.output])


def _binary(kind: vx.BinaryKind, lhs: SSAValue, rhs: SSAValue, attrs: dict) -> vx.BinaryOp:
    return vx.BinaryOp.create(
        operands=[lhs, rhs],
        result_types=[lhs.type],
        properties={"kind": vx.BinaryKindAttr(kind)},
        attributes=dict(attrs),
    )


@dataclass(frozen=True)
class LowerBatchNormPass(ModulePass):
    """Remaining vx.batchnorm -> per-channel vx.binary mul + add."""

    name = "lower-batchnorm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerBatchNorm()]), apply_recursively=False
        ).rewrite_module(op)
