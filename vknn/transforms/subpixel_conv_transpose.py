"""subpixel-conv-transpose: a strided 2-D `vx.conv_transpose` whose stride
divides its kernel becomes one `vx.conv` plus a depth-to-space.

With stride s and kernel K = s * k, output row s*q + r of the (uncropped)
transposed convolution only sees kernel rows r, r + s, ...: it is a k x k
correlation of the input (padded by k - 1) with the flipped sub-kernel of
phase r. All s_h * s_w phases together are one ordinary conv with
M * s_h * s_w output channels (channel m * s_h * s_w + r * s_w + t holds phase
(r, t) of output channel m), and interleaving the phases is a depth-to-space:

    vx.conv  -> [N, M*sh*sw, Q, P]
    vx.reshape [N, M, sh, sw, Q, P] -> vx.transpose (0, 1, 4, 2, 5, 3)
    -> vx.reshape [N, M, Q*sh, P*sw] -> vx.slice (only if pads crop)

No input dilation and no scatter: the conv kernels (and their epilogues)
do the work, and the MACs are those of the transposed conv. `output_padding`
is covered by extending the conv's end padding by whole phases.

What it must leave alone: a stride that does not divide the kernel, stride
1 everywhere (nothing to gain), dilations != 1, groups != 1, ranks other than
4, and weights or biases that are not constants (the sub-kernels are built at
compile time). Shapes must be static: a dynamic shape is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
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
from vknn.ir.constants import from_numpy, to_numpy
from vknn.transforms.vx_graph import node_name, require_static


def _ints(a: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in a.get_values())


def _i64s(values: list[int] | tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _constant(v: SSAValue | None) -> np.ndarray | None:
    if v is None:
        return None
    owner = v.owner
    return np.asarray(to_numpy(owner.value)) if isinstance(owner, vx.ConstantOp) else None


def subpixel_weight(w: np.ndarray, strides: tuple[int, int]) -> np.ndarray:
    """[C, M, Kh, Kw] transposed-conv weight -> [M*sh*sw, C, kh, kw] conv
    weight of the phase-major sub-kernels, each flipped."""
    c, m, kh_full, kw_full = w.shape
    sh, sw = strides
    kh, kw = kh_full // sh, kw_full // sw
    # w[c, m, sh*j + r, sw*l + t] -> [c, m, j, r, l, t]
    w6 = w.reshape(c, m, kh, sh, kw, sw)
    w6 = w6[:, :, ::-1, :, ::-1, :]  # flip j and l: conv correlates
    # -> [m, r, t, c, j, l]
    return np.ascontiguousarray(w6.transpose(1, 3, 5, 0, 2, 4)).reshape(m * sh * sw, c, kh, kw)


def _named(op: Operation, name: str) -> Operation:
    op.attributes[NAME_ATTR] = StringAttr(name)
    return op


class ConvTransposeToSubpixel(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.ConvTransposeOp, rewriter: PatternRewriter) -> None:
        x_shape = vx.shape_of(op.input)
        if len(x_shape) != 4 or op.group.value.data != 1:
            return
        strides = _ints(op.strides)
        w_shape = vx.shape_of(op.weight)
        if any(d != 1 for d in _ints(op.dilations)) or all(s == 1 for s in strides):
            return
        if any(k % s for k, s in zip(w_shape[2:], strides, strict=True)):
            return
        require_static(op, "subpixel-conv-transpose")
        w = _constant(op.weight)
        b = _constant(op.bias)
        if w is None or (op.bias is not None and b is None):
            return
        name = node_name(op)
        n, _, h, wd = x_shape
        m = w_shape[1]
        sh, sw = strides
        kh, kw = w_shape[2] // sh, w_shape[3] // sw
        pt, pl, pb, pr = _ints(op.pads)
        oph, opw = _ints(op.output_padding)
        # whole phases of extra rows/cols for output_padding beyond the end crop
        eh = -(-max(0, oph - pb) // sh)
        ew = -(-max(0, opw - pr) // sw)
        q, p = h + kh - 1 + eh, wd + kw - 1 + ew
        elem = vx.element_of(op.input)

        new_ops: list[Operation] = []
        weight = vx.ConstantOp(from_numpy(subpixel_weight(w, (sh, sw)), f"{name}_subpixel_w"))
        new_ops.append(_named(weight, f"{name}/subpixel_w"))
        operands: list[SSAValue] = [op.input, weight.output]
        if b is not None:
            bias = vx.ConstantOp(from_numpy(np.repeat(b, sh * sw), f"{name}_subpixel_b"))
            new_ops.append(_named(bias, f"{name}/subpixel_b"))
            operands.append(bias.output)
        conv = vx.ConvOp.create(
            operands=operands,
            result_types=[TensorType(elem, [n, m * sh * sw, q, p])],
            properties={
                "strides": _i64s([1, 1]),
                "pads": _i64s([kh - 1, kw - 1, kh - 1 + eh, kw - 1 + ew]),
                "dilations": _i64s([1, 1]),
                "group": IntegerAttr(1, i64),
            },
            attributes={NAME_ATTR: StringAttr(name)},
        )
        split = vx.ReshapeOp.create(
            operands=[conv.output], result_types=[TensorType(elem, [n, m, sh, sw, q, p])]
        )
        interleave = vx.TransposeOp.create(
            operands=[split.output],
            result_types=[TensorType(elem, [n, m, q, sh, p, sw])],
            properties={"perm": _i64s([0, 1, 4, 2, 5, 3])},
        )
        merged = vx.ReshapeOp.create(
            operands=[interleave.output], result_types=[TensorType(elem, [n, m, q * sh, p * sw])]
        )
        for step, what in ((split, "d2s_split"), (interleave, "d2s"), (merged, "d2s_merge")):
            _named(step, f"{name}/{what}")
        new_ops += [conv, split, interleave, merged]
        out_shape = vx.shape_of(op.output)
        result: SSAValue = merged.output
        if out_shape != vx.shape_of(merged.output):
            crop = vx.SliceOp.create(
                operands=[merged.output],
                result_types=[op.output.type],
                properties={
                    "starts": _i64s([0, 0, pt, pl]),
                    "ends": _i64s([n, m, pt + out_shape[2], pl + out_shape[3]]),
                    "steps": _i64s([1, 1, 1, 1]),
                },
            )
            new_ops.append(_named(crop, f"{name}/crop"))
            result = crop.output
        old_constants = [v.owner for v in (op.weight, op.bias) if v is not None]
        rewriter.replace(op, new_ops, [result])
        for c in old_constants:
            if isinstance(c, vx.ConstantOp) and not c.output.uses:
                rewriter.erase(c)


@dataclass(frozen=True)
class SubpixelConvTransposePass(ModulePass):
    """Rewrite strided vx.conv_transpose (stride | kernel) as vx.conv + depth-to-space."""

    name = "subpixel-conv-transpose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([ConvTransposeToSubpixel()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
