"""dequantize: lower quantized ONNX graphs to float graphs that reproduce
their integer arithmetic.

Runs on the `onnx` dialect, before `convert-onnx-to-vx` (with or without
infer-shapes before it), so that everything it emits is an ordinary float ONNX
op that the lowering already knows (Div, Round, Clip, Mul -> vx.binary /
vx.unary, which fuse-pointwise can later merge into a producer's epilogue).
Working before the lowering keeps one place that understands ONNX's
quantization operators, including the `com.microsoft` QLinear* ones that
have no `vx` op at all.

What it does, in three walks:
  1. expand: every quantized operator becomes its QDQ form, DequantizeLinear
     -> float op -> QuantizeLinear: QLinearConv, QLinearMatMul, and the
     com.microsoft QLinearAdd / QLinearMul / QLinearGlobalAveragePool /
     QLinearAveragePool / QLinearConcat / QLinearSoftmax / QLinearSigmoid /
     QLinearLeakyRelu / QGemm; ConvInteger / MatMulInteger become float
     Conv / MatMul on zero-point-corrected operands; DynamicQuantizeLinear
     computes its scale and zero point with float reductions. Data-movement
     ops on quantized tensors (MaxPool, Reshape, Flatten, Transpose, ...)
     move after the QuantizeLinear that feeds them (they commute with a
     monotone per-tensor quantization), so Q meets its DQ.
  2. pair: DequantizeLinear of constants folds to float weights at compile
     time; QuantizeLinear -> DequantizeLinear with equal parameters on an
     activation becomes `clip(round(x / s), qmin - zp, qmax - zp) * s`
     (round half to even, the saturation kept as the clip).
  3. remaining: a lone QuantizeLinear (a quantized graph output) becomes
     `cast(clip(round(x / s) + zp, qmin, qmax))`, a lone DequantizeLinear
     (a quantized graph input) `(cast(x) - zp) * s`.

It must leave alone: float graphs (nothing matches), blocked quantization
(`block_size`), quantization parameters that are not constants, per-axis
parameters on a tensor of unknown rank, and channels-last QLinear pooling;
those ops stay and run through the ONNX reference on the CPU.
`dequantize{enabled=false}` keeps the quantized graph unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from vknn.dialects.onnx import NAME_ATTR, OPS, CustomOp, OnnxOp, module_opset
from vknn.errors import VknnError
from vknn.ir.constants import from_numpy
from vknn.ir.types import element_from_numpy, numpy_dtype, onnx_from_element
from vknn.transforms.const_fold import constant_value
from vknn.transforms.dce import erase_dead_ops

EXACT_ATTR = "vknn.exact_cast"
"""Marks a Cast this pass emitted from a value that is already integral and
inside the target range, so a later integer op may read the float directly."""

_MS_DOMAIN = "com.microsoft"


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def _op_type(op: Operation) -> tuple[str, str]:
    if isinstance(op, OnnxOp):
        return op.OP_TYPE, ""
    if isinstance(op, CustomOp):
        return op.op_type.data, op.domain.data
    return "", ""


def _present(op: Operation, i: int) -> SSAValue | None:
    if i < len(op.operands) and not isinstance(op.operands[i].type, NoneType):
        return op.operands[i]
    return None


def _rank(v: SSAValue) -> int | None:
    return len(v.type.get_shape()) if isinstance(v.type, TensorType) else None


def _elem(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, TensorType | UnrankedTensorType)
    return t.element_type


def _retype(t: Attribute, elem: Attribute) -> Attribute:
    """`t` with another element type (shape kept, or unranked)."""
    if isinstance(t, TensorType):
        return TensorType(elem, t.get_shape())
    return UnrankedTensorType(elem)


def _int_attr(op: Operation, name: str, default: int) -> int:
    a = op.attributes.get(name)
    return int(a.value.data) if isinstance(a, IntegerAttr) else default


@dataclass(frozen=True)
class QParams:
    """Constant quantization parameters of one Q/DQ: scale and zero point
    (same shape), the integer type and the axis they apply along."""

    scale: np.ndarray
    zero_point: np.ndarray
    qtype: np.dtype
    axis: int

    @property
    def per_axis(self) -> bool:
        return self.scale.size > 1

    @property
    def bounds(self) -> tuple[int, int]:
        info = np.iinfo(self.qtype)
        return int(info.min), int(info.max)

    def same(self, other: QParams) -> bool:
        return (
            self.qtype == other.qtype
            and self.scale.shape == other.scale.shape
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
            and (not self.per_axis or self.axis == other.axis)
        )

    def shaped(self, array: np.ndarray, rank: int | None) -> np.ndarray | None:
        """`array` (one value per channel, or one) shaped to broadcast
        against a tensor of `rank`; None when that needs an unknown rank."""
        if array.size == 1:
            return array.reshape(())
        if rank is None:
            return None
        return array.reshape((-1,) + (1,) * (rank - self.axis - 1))


def qparams(op: Operation, scale_i: int, zp_i: int, qtype: np.dtype | None) -> QParams | None:
    """The constant parameters of a Q/DQ-like op, or None if not constant.
    `qtype` None: the zero point's type, else the op's integer type."""
    if op.attributes.get("block_size") is not None and _int_attr(op, "block_size", 0):
        return None
    s = _present(op, scale_i)
    scale = constant_value(s) if s is not None else None
    if scale is None:
        return None
    zv = _present(op, zp_i)
    zp = constant_value(zv) if zv is not None else None
    if zv is not None:
        if zp is None:
            return None
        qtype = zp.dtype
    elif qtype is None:
        qtype = np.dtype(np.uint8)  # ONNX's default quantized type
    if not np.issubdtype(qtype, np.integer) or scale.size == 0:
        return None
    if not np.all(np.isfinite(scale)) or np.any(scale == 0):
        name = op.attributes.get(NAME_ATTR)
        raise VknnError(
            f"dequantize: node '{name.data if isinstance(name, StringAttr) else op.name}' has a "
            f"zero or non-finite scale {scale.reshape(-1)[:4].tolist()}; "
            "the quantized model is invalid"
        )
    zero = zp if zp is not None else np.zeros_like(scale, dtype=qtype)
    if zero.size != scale.size and zero.size != 1:
        return None
    zero = np.broadcast_to(zero.reshape(-1), (scale.size,)).reshape(scale.shape)
    axis = _int_attr(op, "axis", 1)
    x = op.operands[0]
    rank = _rank(x)
    if scale.size > 1:
        if rank is None:
            return None
        axis = axis + rank if axis < 0 else axis
    return QParams(np.asarray(scale), np.asarray(zero).astype(qtype), np.dtype(qtype), axis)


def _result_qtype(op: Operation) -> np.dtype | None:
    e = _elem(op.results[0])
    return numpy_dtype(e) if isinstance(e, IntegerType) else None


class Builder:
    """Builds float ONNX ops in front of `anchor`, named after its node."""

    def __init__(self, rewriter: PatternRewriter, anchor: Operation):
        self.rewriter = rewriter
        self.anchor = anchor
        name = anchor.attributes.get(NAME_ATTR)
        self.name = name.data if isinstance(name, StringAttr) else "dq"

    def _insert(self, op: Operation) -> Operation:
        self.rewriter.insert(op, InsertPoint.before(self.anchor))
        return op

    def const(self, array: np.ndarray, suffix: str) -> SSAValue:
        attr = from_numpy(np.array(array, order="C"), f"{self.name}_{suffix}")  # keeps 0-d
        op = OPS["Constant"].create(
            result_types=[attr.type],  # type: ignore[attr-defined]
            attributes={"value": attr, NAME_ATTR: StringAttr(f"{self.name}/{suffix}")},
        )
        return self._insert(op).results[0]

    def op(
        self,
        op_type: str,
        operands: Sequence[SSAValue],
        result: Attribute,
        suffix: str,
        attrs: dict[str, Attribute] | None = None,
        n_results: int = 1,
    ) -> SSAValue:
        attributes = dict(attrs or {})
        attributes[NAME_ATTR] = StringAttr(f"{self.name}/{suffix}")
        op = OPS[op_type].create(
            operands=list(operands), result_types=[result] * n_results, attributes=attributes
        )
        return self._insert(op).results[0]

    def like(self, v: SSAValue, elem: Attribute) -> Attribute:
        return _retype(v.type, elem)

    def clip(self, x: SSAValue, lo: np.ndarray, hi: np.ndarray, suffix: str) -> SSAValue:
        """Saturation: one Clip when the bounds are scalars, else Max/Min."""
        t = x.type
        dtype = numpy_dtype(_elem(x))
        if lo.ndim == 0 and hi.ndim == 0:
            if module_opset(self.anchor) >= 11:
                lo_v = self.const(lo.astype(dtype), f"{suffix}_lo")
                hi_v = self.const(hi.astype(dtype), f"{suffix}_hi")
                return self.op("Clip", [x, lo_v, hi_v], t, suffix)
            attrs: dict[str, Attribute] = {
                "min": FloatAttr(float(lo), f32),
                "max": FloatAttr(float(hi), f32),
            }
            return self.op("Clip", [x], t, suffix, attrs)
        m = self.op("Max", [x, self.const(lo.astype(dtype), f"{suffix}_lo")], t, f"{suffix}_max")
        return self.op("Min", [m, self.const(hi.astype(dtype), f"{suffix}_hi")], t, suffix)

    def cast(self, x: SSAValue, elem: Attribute, suffix: str, exact: bool = False) -> SSAValue:
        attrs: dict[str, Attribute] = {"to": IntegerAttr(onnx_from_element(elem), i64)}
        if exact:
            attrs[EXACT_ATTR] = UnitAttr()
        return self.op("Cast", [x], self.like(x, elem), suffix, attrs)


def fake_quantize(b: Builder, x: SSAValue, p: QParams, suffix: str = "fq") -> SSAValue | None:
    """The float value DQ(Q(x)) in float ops: clip(round(x / s), qmin - zp,
    qmax - zp) * s. Exact: round(x / s) is an integer, and adding then
    subtracting an integer zero point is exact in float."""
    rank = _rank(x)
    dtype = numpy_dtype(_elem(x))
    scale = p.shaped(p.scale.astype(dtype), rank)
    zp = p.shaped(p.zero_point.astype(np.float64), rank)
    if scale is None or zp is None:
        return None
    qmin, qmax = p.bounds
    s = b.const(scale, f"{suffix}_scale")
    t = b.op("Div", [x, s], x.type, f"{suffix}_div")
    r = b.op("Round", [t], x.type, f"{suffix}_round")
    c = b.clip(r, np.asarray(qmin - zp), np.asarray(qmax - zp), f"{suffix}_clip")
    return b.op("Mul", [c, s], x.type, f"{suffix}_mul")


# ---------------------------------------------------------------------------
# Walk 1: quantized operators -> QDQ form
# ---------------------------------------------------------------------------


def _dq(
    b: Builder, x: SSAValue, s: SSAValue, zp: SSAValue | None, axis: int | None, tag: str
) -> SSAValue:
    """DequantizeLinear(x, s, zp) in the scale's float type."""
    attrs: dict[str, Attribute] = {}
    if axis is not None:
        attrs["axis"] = IntegerAttr(axis, i64)
    operands = [x, s] + ([zp] if zp is not None else [])
    return b.op("DequantizeLinear", operands, b.like(x, _elem(s)), f"{tag}_dq", attrs)


def _q(
    b: Builder, y: SSAValue, s: SSAValue, zp: SSAValue | None, result: Attribute, tag: str
) -> SSAValue:
    operands = [y, s] + ([zp] if zp is not None else [])
    return b.op("QuantizeLinear", operands, result, f"{tag}_q")


def _attrs_except(op: Operation, *drop: str) -> dict[str, Attribute]:
    return {k: v for k, v in op.attributes.items() if k not in drop and "." not in k}


_UNARY_QLINEAR = {  # com.microsoft op -> (float op, attributes it keeps)
    "QLinearGlobalAveragePool": ("GlobalAveragePool", ()),
    "QLinearAveragePool": (
        "AveragePool",
        ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"),
    ),
    "QLinearSigmoid": ("Sigmoid", ()),
    "QLinearLeakyRelu": ("LeakyRelu", ("alpha",)),
    "QLinearSoftmax": ("Softmax", ("axis",)),
}


class ExpandQLinear(RewritePattern):
    """QLinear* -> DequantizeLinear, the float op, QuantizeLinear."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        op_type, domain = _op_type(op)
        if domain not in ("", _MS_DOMAIN) or not op_type.startswith(("QLinear", "QGemm")):
            return
        if len(op.results) != 1:
            return
        b = Builder(rewriter, op)
        ins = op.operands
        out = op.results[0]
        fl = _elem(ins[1]) if len(ins) > 1 else f32
        y: SSAValue | None = None
        ys_i = yz_i = -1
        if op_type == "QLinearConv" and domain == "":
            x = _dq(b, ins[0], ins[1], _present(op, 2), None, "x")
            w = _dq(b, ins[3], ins[4], _present(op, 5), 0, "w")
            operands = [x, w]
            if (bias := _present(op, 8)) is not None:
                bias_scale = self._product_scale(ins[1], ins[4])
                if bias_scale is None:
                    return
                operands.append(_dq(b, bias, b.const(bias_scale, "bias_scale"), None, 0, "bias"))
            y = b.op("Conv", operands, _retype(out.type, fl), "conv", _attrs_except(op))
            ys_i, yz_i = 6, 7
        elif op_type == "QLinearMatMul" and domain == "":
            a = _dq(b, ins[0], ins[1], _present(op, 2), None, "a")
            rank_b = _rank(ins[3])
            w = _dq(b, ins[3], ins[4], _present(op, 5), -1 if rank_b else None, "b")
            y = b.op("MatMul", [a, w], _retype(out.type, fl), "matmul")
            ys_i, yz_i = 6, 7
        elif domain == _MS_DOMAIN and op_type in ("QLinearAdd", "QLinearMul"):
            a = _dq(b, ins[0], ins[1], _present(op, 2), None, "a")
            c = _dq(b, ins[3], ins[4], _present(op, 5), None, "b")
            y = b.op(op_type[7:], [a, c], _retype(out.type, fl), op_type[7:].lower())
            ys_i, yz_i = 6, 7
        elif domain == _MS_DOMAIN and op_type in _UNARY_QLINEAR:
            if _int_attr(op, "channels_last", 0):
                return  # NHWC pooling: the float op would need transposes
            if op_type == "QLinearSoftmax" and (_int_attr(op, "opset", 13) >= 13) != (
                module_opset(op) >= 13
            ):
                return  # softmax semantics of another opset
            float_op, keep = _UNARY_QLINEAR[op_type]
            x = _dq(b, ins[0], ins[1], _present(op, 2), None, "x")
            attrs = {k: v for k, v in op.attributes.items() if k in keep}
            y = b.op(float_op, [x], _retype(out.type, fl), float_op.lower(), attrs)
            ys_i, yz_i = 3, 4
        elif domain == _MS_DOMAIN and op_type == "QLinearConcat":
            fl = _elem(ins[0])
            parts = [
                _dq(b, ins[i], ins[i + 1], _present(op, i + 2), None, f"x{(i - 2) // 3}")
                for i in range(2, len(ins), 3)
            ]
            attrs = {k: v for k, v in op.attributes.items() if k == "axis"}
            y = b.op("Concat", parts, _retype(out.type, fl), "concat", attrs)
            ys_i, yz_i = 0, 1
        elif domain == _MS_DOMAIN and op_type == "QGemm":
            a = _dq(b, ins[0], ins[1], _present(op, 2), None, "a")
            trans_b = _int_attr(op, "transB", 0)
            w = _dq(b, ins[3], ins[4], _present(op, 5), 0 if trans_b else 1, "b")
            operands = [a, w]
            if (c := _present(op, 6)) is not None:
                # ORT quantizes C with scale alpha * a_scale * b_scale, zero point 0.
                alpha = op.attributes.get("alpha")
                scale = self._product_scale(ins[1], ins[4])
                if scale is None:
                    return
                if isinstance(alpha, FloatAttr):
                    scale = (scale * np.float32(alpha.value.data)).astype(scale.dtype)
                operands.append(_dq(b, c, b.const(scale, "c_scale"), None, 0, "c"))
            attrs = {k: v for k, v in op.attributes.items() if k in ("alpha", "transA", "transB")}
            y = b.op("Gemm", operands, _retype(out.type, fl), "gemm", attrs)
            if _present(op, 7) is None:  # no y_scale: QGemm gives float
                rewriter.replace(op, [], [y])
                return
            ys_i, yz_i = 7, 8
        if y is None:
            return
        q = _q(b, y, ins[ys_i], _present(op, yz_i), out.type, "y")
        rewriter.replace(op, [], [q])

    @staticmethod
    def _product_scale(xs: SSAValue, ws: SSAValue) -> np.ndarray | None:
        """The scale of an int32 bias: x_scale * w_scale (per output channel)."""
        a, w = constant_value(xs), constant_value(ws)
        if a is None or w is None:
            return None
        return (a.reshape(()) * w.reshape(-1)).astype(a.dtype)


class ExpandIntegerOps(RewritePattern):
    """ConvInteger / MatMulInteger -> float Conv / MatMul on (x - zp) operands.
    Integer products of 8-bit operands are exact in float up to 2^24; that is
    what "dequantized" means for these ops."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE not in ("ConvInteger", "MatMulInteger"):
            return
        b = Builder(rewriter, op)
        out = op.results[0]
        is_conv = op.OP_TYPE == "ConvInteger"
        a = self._centered(b, op.operands[0], _present(op, 2), None, "a")
        # MatMulInteger's b zero point is per column (last axis);
        # ConvInteger's w zero point per output channel.
        w = self._centered(b, op.operands[1], _present(op, 3), 0 if is_conv else -1, "b")
        if a is None or w is None:
            return
        float_op = "Conv" if is_conv else "MatMul"
        attrs = _attrs_except(op) if is_conv else {}
        y = b.op(float_op, [a, w], _retype(out.type, f32), float_op.lower(), attrs)
        # Consumers that cast the int32 result back to float read y directly.
        for use in list(out.uses):
            user = use.operation
            if (
                isinstance(user, OnnxOp)
                and user.OP_TYPE == "Cast"
                and _elem(user.results[0]) == f32
            ):
                rewriter.replace_all_uses_with(user.results[0], y)
                rewriter.erase(user)
        if out.uses:
            rewriter.replace(op, [], [b.cast(y, _elem(out), "to_int")])
        else:
            rewriter.erase(op)

    @staticmethod
    def _centered(
        b: Builder, x: SSAValue, zp: SSAValue | None, axis: int | None, tag: str
    ) -> SSAValue | None:
        x_c = constant_value(x)
        zp_c = constant_value(zp) if zp is not None else np.zeros((), np.int32)
        if zp is not None and zp_c is None:
            zp_f = _as_float(b, zp, f"{tag}_zp")
        else:
            zp_f = None
        if x_c is not None and zp_c is not None:
            z = zp_c.astype(np.float32)
            if z.size > 1:
                rank = x_c.ndim
                ax = axis + rank if axis is not None and axis < 0 else (axis or 0)
                z = z.reshape((-1,) + (1,) * (rank - ax - 1))
            return b.const(x_c.astype(np.float32) - z, f"{tag}_centered")
        xf = _as_float(b, x, tag)
        if zp_f is not None:
            zp_f = _per_axis(b, zp_f, x, axis, tag)
            return b.op("Sub", [xf, zp_f], xf.type, f"{tag}_sub")
        if zp_c is not None and np.any(zp_c):
            if zp_c.size > 1:
                return None  # per-axis zero point of an activation: not produced by ORT
            return b.op(
                "Sub",
                [xf, b.const(zp_c.astype(np.float32).reshape(()), f"{tag}_zp")],
                xf.type,
                f"{tag}_sub",
            )
        return xf


def _per_axis(b: Builder, zp: SSAValue, x: SSAValue, axis: int | None, tag: str) -> SSAValue:
    """A computed per-axis zero point shaped to broadcast along `axis` of x
    (ConvInteger's is per output channel: axis 0 of a [M, C, kh, kw] weight)."""
    zt, xt = zp.type, x.type
    if axis is None or not isinstance(zt, TensorType) or not isinstance(xt, TensorType):
        return zp
    rank = len(xt.get_shape())
    ax = axis + rank if axis < 0 else axis
    if len(zt.get_shape()) != 1 or zt.get_shape()[0] == 1 or ax == rank - 1:
        return zp
    shape = b.const(np.array([-1] + [1] * (rank - ax - 1), np.int64), f"{tag}_zp_shape")
    return b.op("Reshape", [zp, shape], UnrankedTensorType(f32), f"{tag}_zp_axis")


def _as_float(b: Builder, v: SSAValue, tag: str) -> SSAValue:
    """v as f32: the float behind one of our exact casts, else a Cast."""
    owner = v.owner
    if isinstance(owner, OnnxOp) and owner.OP_TYPE == "Cast" and EXACT_ATTR in owner.attributes:
        return owner.operands[0]
    return b.cast(v, f32, f"{tag}_f")


class ExpandDynamicQuantize(RewritePattern):
    """DynamicQuantizeLinear -> float reductions and pointwise ops (uint8):
    scale = (max(x, 0) - min(x, 0)) / 255, zp = round(clip(-min / scale)),
    y = clip(round(x / scale) + zp, 0, 255); y and zp reach their integer
    users through exact casts that ConvInteger/MatMulInteger see through."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE != "DynamicQuantizeLinear":
            return
        b = Builder(rewriter, op)
        x = op.operands[0]
        scalar = TensorType(f32, [])
        red_attrs: dict[str, Attribute] = {"keepdims": IntegerAttr(0, i64)}
        mx = b.op("ReduceMax", [x], scalar, "max", red_attrs)
        mn = b.op("ReduceMin", [x], scalar, "min", red_attrs)
        zero = b.const(np.zeros((), np.float32), "zero")
        mx = b.op("Max", [mx, zero], scalar, "max0")
        mn = b.op("Min", [mn, zero], scalar, "min0")
        rng = b.op("Sub", [mx, mn], scalar, "range")
        scale = b.op("Div", [rng, b.const(np.float32(255.0), "qrange")], scalar, "scale")
        neg = b.op("Sub", [zero, b.op("Div", [mn, scale], scalar, "min_q")], scalar, "zp_raw")
        zp = b.op(
            "Round", [b.clip(neg, np.asarray(0.0), np.asarray(255.0), "zp_sat")], scalar, "zp"
        )
        t = b.op("Div", [x, scale], x.type, "div")
        r = b.op("Add", [b.op("Round", [t], x.type, "round"), zp], x.type, "shift")
        yf = b.clip(r, np.asarray(0.0), np.asarray(255.0), "sat")
        u8 = _elem(op.results[0])
        y = b.cast(yf, u8, "y", exact=True)
        zq = b.cast(zp, u8, "zp_u8", exact=True)
        rewriter.replace(op, [], [y, scale, zq])


_MOVABLE = {
    # op -> operand positions (after the data input) that must be constants
    "MaxPool": (),
    "Reshape": (1,),
    "Flatten": (),
    "Transpose": (),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Identity": (),
    "Slice": (1, 2, 3, 4),
    "Expand": (1,),
    "DepthToSpace": (),
    "SpaceToDepth": (),
}


class MoveDataOpsPastQuantize(RewritePattern):
    """P(Q(x)) -> Q(P(x)) for data-movement ops and MaxPool on a per-tensor
    quantized value: Q is monotone and elementwise, so both orders give the
    same integers, and Q then meets the DequantizeLinear after P."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE not in _MOVABLE or not op.operands:
            return
        src = op.operands[0].owner
        if not (isinstance(src, OnnxOp) and src.OP_TYPE == "QuantizeLinear"):
            return
        if any(r.uses for r in op.results[1:]):  # MaxPool's Indices
            return
        p = qparams(src, 1, 2, _result_qtype(src))
        if p is None or p.per_axis:
            return
        for i in _MOVABLE[op.OP_TYPE]:
            v = _present(op, i)
            if v is not None and constant_value(v) is None:
                return
        x = src.operands[0]
        fl = _elem(x)
        moved = type(op).create(
            operands=[x, *op.operands[1:]],
            result_types=[_retype(r.type, fl) for r in op.results],
            attributes=dict(op.attributes),
        )
        rewriter.insert(moved, InsertPoint.before(op))
        b = Builder(rewriter, op)
        q = _q(b, moved.results[0], src.operands[1], _present(src, 2), op.results[0].type, "moved")
        rewriter.replace(op, [], [q, *([None] * (len(op.results) - 1))])


# ---------------------------------------------------------------------------
# Walk 2: weights and Q -> DQ pairs
# ---------------------------------------------------------------------------


def dequantize_array(x: np.ndarray, p: QParams, dtype: np.dtype) -> np.ndarray:
    scale = p.shaped(p.scale, x.ndim)
    zp = p.shaped(p.zero_point, x.ndim)
    assert scale is not None and zp is not None
    return ((x.astype(np.int64) - zp.astype(np.int64)).astype(dtype) * scale.astype(dtype)).astype(
        dtype
    )


class FoldConstantDequantize(RewritePattern):
    """DequantizeLinear of a constant: the float weight, at compile time."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE != "DequantizeLinear":
            return
        x = constant_value(op.operands[0])
        if x is None:
            return
        p = qparams(op, 1, 2, x.dtype)
        if p is None:
            return
        dtype = numpy_dtype(_elem(op.results[0]))
        value = dequantize_array(x, p, dtype)
        b = Builder(rewriter, op)
        rewriter.replace(op, [], [b.const(value, "value")])


class FoldQuantizePair(RewritePattern):
    """QuantizeLinear -> DequantizeLinear (equal parameters) on an activation
    -> one float fake-quantization shared by every such DQ."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE != "QuantizeLinear":
            return
        p = qparams(op, 1, 2, _result_qtype(op))
        if p is None:
            return
        pairs = []
        for use in op.results[0].uses:
            user = use.operation
            if isinstance(user, OnnxOp) and user.OP_TYPE == "DequantizeLinear" and use.index == 0:
                pd = qparams(user, 1, 2, p.qtype)
                if (
                    pd is not None
                    and pd.same(p)
                    and _elem(user.results[0]) == _elem(op.operands[0])
                ):
                    pairs.append(user)
        if not pairs:
            return
        b = Builder(rewriter, op)
        y = fake_quantize(b, op.operands[0], p)
        if y is None:
            return
        for dq in pairs:
            rewriter.replace_all_uses_with(dq.results[0], y)
            rewriter.erase(dq)
        if not op.results[0].uses:
            rewriter.erase(op)


# ---------------------------------------------------------------------------
# Walk 3: what is left alone on either side
# ---------------------------------------------------------------------------


class LowerLoneQuantize(RewritePattern):
    """QuantizeLinear with no matching DQ: float ops, then an exact cast."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE != "QuantizeLinear":
            return
        p = qparams(op, 1, 2, _result_qtype(op))
        x = op.operands[0]
        if p is None or not isinstance(_elem(x), AnyFloat):
            return
        rank = _rank(x)
        dtype = numpy_dtype(_elem(x))
        scale = p.shaped(p.scale.astype(dtype), rank)
        zp = p.shaped(p.zero_point.astype(dtype), rank)
        if scale is None or zp is None:
            return
        b = Builder(rewriter, op)
        qmin, qmax = p.bounds
        t = b.op("Div", [x, b.const(scale, "scale")], x.type, "div")
        r = b.op("Round", [t], x.type, "round")
        if np.any(zp):
            r = b.op("Add", [r, b.const(zp, "zp")], x.type, "shift")
        c = b.clip(r, np.asarray(qmin), np.asarray(qmax), "sat")
        rewriter.replace(op, [], [b.cast(c, element_from_numpy(p.qtype), "cast", exact=True)])


class LowerLoneDequantize(RewritePattern):
    """DequantizeLinear of a non-constant integer tensor: (cast(x) - zp) * s."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp) or op.OP_TYPE != "DequantizeLinear":
            return
        x = op.operands[0]
        if not isinstance(_elem(x), IntegerType):
            return
        p = qparams(op, 1, 2, numpy_dtype(_elem(x)))
        if p is None:
            return
        out = op.results[0]
        fl = _elem(out)
        dtype = numpy_dtype(fl)
        rank = _rank(x)
        scale = p.shaped(p.scale.astype(dtype), rank)
        zp = p.shaped(p.zero_point.astype(dtype), rank)
        if scale is None or zp is None:
            return
        b = Builder(rewriter, op)
        xf = _as_float(b, x, "x") if fl == f32 else b.cast(x, fl, "x_f")
        if np.any(zp):
            xf = b.op("Sub", [xf, b.const(zp, "zp")], out.type, "sub")
        rewriter.replace(op, [], [b.op("Mul", [xf, b.const(scale, "scale")], out.type, "mul")])


@dataclass(frozen=True)
class DequantizePass(ModulePass):
    """Quantized ONNX (QDQ, QOperator, dynamic) -> float ops with the same arithmetic."""

    name = "dequantize"

    enabled: bool = True
    """false keeps the quantized operators (they then run on the ONNX reference)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enabled:
            return
        walks: list[list[RewritePattern]] = [
            [ExpandDynamicQuantize(), ExpandQLinear(), ExpandIntegerOps()],
            [MoveDataOpsPastQuantize(), FoldConstantDequantize(), FoldQuantizePair()],
            [LowerLoneQuantize(), LowerLoneDequantize()],
        ]
        for patterns in walks:
            PatternRewriteWalker(
                GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=True
            ).rewrite_module(op)
        erase_dead_ops(op)
