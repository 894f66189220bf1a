"""fuse-attention: scaled dot-product attention as one `vx.attention`.

Matches, rooted at the second product,

    S = vx.matmul(Q', K')     Q' = Q times / divided by one-element constants
                              (`vx.binary mul|div`, any number of them);
                              K' = the same of K^T, a `vx.transpose` swapping
                              the last two dims (the scaling before or after it)
    S' = S scaled the same way, then optionally `vx.binary add` of a mask
         (either operand order) that broadcasts to S's shape
    P = vx.softmax(S') over the last axis
    O = vx.matmul(P, V)

and replaces O with `vx.attention(Q, K, V[, mask]) {scale}`, scale the
product of the constants (folded in f64). A K' with no transpose to strip is
kept as the operand of a new `vx.transpose` swapping its last two dims (the
Vulkan backend reads transposes through strides, so it costs no copy there).
The fused op is named after O and lists every member in `vx.fused_names`.

What it must leave alone: a chain any of whose intermediates has another
user (that value is still needed), a softmax over another axis, scaling by a
non-constant or by more than one element, a mask that would broadcast the
scores to a larger shape, a final product whose left operand is not the
softmax, and operands of different element types. A dynamic shape on a
matched op is an error (the shape checks cannot be made), as in
fuse-pointwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
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
from vknn.transforms.const_fold import constant_value
from vknn.transforms.fuse_pointwise import FUSED_NAMES_ATTR
from vknn.transforms.vx_graph import node_name, require_static

PASS = "fuse-attention"


def _one_use(v: SSAValue) -> bool:
    return len(list(v.uses)) == 1


def _scale_step(v: SSAValue) -> tuple[SSAValue, float, Operation] | None:
    """(the scaled operand, the factor, the op) if `v` is a tensor times or
    divided by a one-element constant, with the tensor's shape."""
    op = v.owner
    if not isinstance(op, vx.BinaryOp) or op.kind.data not in (
        vx.BinaryKind.MUL,
        vx.BinaryKind.DIV,
    ):
        return None
    sides = [(op.lhs, op.rhs)]
    if op.kind.data == vx.BinaryKind.MUL:
        sides.append((op.rhs, op.lhs))
    for x, c in sides:
        value = constant_value(c)
        if value is None or value.size != 1 or vx.shape_of(x) != vx.shape_of(v):
            continue
        factor = float(np.asarray(value, np.float64).reshape(()))
        if op.kind.data == vx.BinaryKind.DIV:
            if factor == 0.0:
                return None
            factor = 1.0 / factor
        return x, factor, op
    return None


def _strip_scales(v: SSAValue, members: list[Operation]) -> tuple[SSAValue, float]:
    """Walk up from `v` through constant scalings whose results have one use
    (the next link): (the unscaled value, the product of the factors)."""
    scale = 1.0
    while _one_use(v):
        step = _scale_step(v)
        if step is None:
            break
        v, factor, op = step
        scale *= factor
        members.append(op)
    return v, scale


def _swaps_last_two(perm: tuple[int, ...]) -> bool:
    n = len(perm)
    return n >= 2 and perm == (*range(n - 2), n - 1, n - 2)


@dataclass
class _Match:
    q: SSAValue
    k: SSAValue
    """K itself ([..., Sk, D]) when `k_stripped`, else K^T as the graph has it."""
    k_stripped: bool
    mask: SSAValue | None
    scale: float
    members: list[Operation]


def _match_scores(s: SSAValue, members: list[Operation]) -> _Match | None:
    """The Q K^T product behind the (scaled) scores `s`."""
    s0, scale = _strip_scales(s, members)
    prod = s0.owner
    if not isinstance(prod, vx.MatMulOp) or not _one_use(s0):
        return None
    members.append(prod)
    q, q_scale = _strip_scales(prod.lhs, members)
    kt, k_scale = _strip_scales(prod.rhs, members)
    stripped = False
    tr = kt.owner
    if isinstance(tr, vx.TransposeOp) and _one_use(kt):
        perm = tuple(int(p) for p in tr.perm.get_values())
        if _swaps_last_two(perm):
            members.append(tr)
            k, more = _strip_scales(tr.input, members)
            kt, k_scale, stripped = k, k_scale * more, True
    return _Match(q, kt, stripped, None, scale * q_scale * k_scale, members)


class FuseAttention(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.MatMulOp, rewriter: PatternRewriter) -> None:
        p = op.lhs
        sm = p.owner
        if not isinstance(sm, vx.SoftmaxOp) or not _one_use(p) or sm.zero_nan is not None:
            return
        rank = len(vx.shape_of(sm.input))
        if sm.axis.value.data != rank - 1 or not _one_use(sm.input):
            return
        s = sm.input
        scores_shape = vx.shape_of(s)
        match: _Match | None = None
        add = s.owner
        if isinstance(add, vx.BinaryOp) and add.kind.data == vx.BinaryKind.ADD:
            for scores, mask in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
                if not vx.broadcasts_to(vx.shape_of(mask), scores_shape):
                    continue
                if vx.shape_of(scores) != scores_shape:
                    continue
                members: list[Operation] = [add]
                match = _match_scores(scores, members)
                if match is not None:
                    match.mask = mask
                    break
        if match is None:
            match = _match_scores(s, [])
        if match is None:
            return
        for m in [*match.members, sm, op]:
            require_static(m, PASS)
        elem = vx.element_of(op.results[0])
        values = [match.q, match.k, op.rhs] + ([match.mask] if match.mask is not None else [])
        if not isinstance(elem, AnyFloat) or any(vx.element_of(v) != elem for v in values):
            return
        new_ops: list[Operation] = []
        k = match.k
        if not match.k_stripped:
            kshape = vx.shape_of(k)
            n = len(kshape)
            perm = (*range(n - 2), n - 1, n - 2)
            tr = vx.TransposeOp.create(
                operands=[k],
                result_types=[TensorType(elem, vx.TransposeOp.infer_shape(kshape, perm))],
                properties={"perm": DenseArrayBase.from_list(i64, perm)},
                attributes=_name_attrs(op, suffix="_k"),
            )
            new_ops.append(tr)
            k = tr.results[0]
        try:
            shape = vx.AttentionOp.infer_shape(
                vx.shape_of(match.q),
                vx.shape_of(k),
                vx.shape_of(op.rhs),
                vx.shape_of(match.mask) if match.mask is not None else None,
            )
        except ValueError:
            return
        if shape != vx.shape_of(op.results[0]):
            return
        members = [*match.members, sm, op]
        order = _graph_order(op)
        names = [node_name(m) for m in sorted(members, key=lambda m: order.get(m, -1))]
        attrs = _name_attrs(op)
        attrs[FUSED_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in dict.fromkeys(names)])
        operands = [match.q, k, op.rhs] + ([match.mask] if match.mask is not None else [])
        att = vx.AttentionOp.create(
            operands=operands,
            result_types=[op.results[0].type],
            properties={"scale": FloatAttr(match.scale, f32)},
            attributes=attrs,
        )
        new_ops.append(att)
        rewriter.replace(op, new_ops, [att.results[0]])
        # The chain is dead now: users before producers.
        for m in [sm, *match.members]:
            rewriter.erase(m)


def _name_attrs(op: Operation, suffix: str = "") -> dict:  # type: ignore[type-arg]
    a = op.attributes.get(NAME_ATTR)
    if not isinstance(a, StringAttr):
        return {}
    return {NAME_ATTR: StringAttr(a.data + suffix)}


def _graph_order(op: Operation) -> dict[Operation, int]:
    block = op.parent_block()
    return {o: i for i, o in enumerate(block.ops)} if block is not None else {}


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    """MatMul -> scale -> (+ mask) -> Softmax -> MatMul chains -> vx.attention."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FuseAttention()]), apply_recursively=False
        ).rewrite_module(op)
