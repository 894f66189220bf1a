"""`convert-onnx-to-vx`: lower `onnx.*` ops to the canonical `vx` graph IR.

Each ONNX operator has one lowering function in `LOWERINGS` (op_type ->
function); one `RewritePattern` applies the table. A lowering reads ONNX's
attribute forms for the module's opset, resolves every default, `auto_pad`,
negative axis and constant shape/axes input, and emits `vx` ops whose
attributes are explicit. The result types come from the `onnx` ops, so the
pass needs static shapes (run `infer-shapes` and `const-fold` first).

Conversion is partial by design: an op without a lowering, with a dynamic
shape, or with an input that must be constant but is not, stays an `onnx.*`
op in place (later stages run it on the CPU and report it by name). With
`strict=true` the pass instead raises `Unsupported`, naming each op left.

This pass must not infer shapes, fold constants, fuse or pick layouts: those
are other passes. It never copies weight bytes: constants keep their
`dense_resource` handles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i1,
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
from xdsl.utils.exceptions import VerifyException

from vknn.dialects import vx
from vknn.dialects.onnx import NAME_ATTR, CustomOp, NoValueOp, OnnxOp, module_opset
from vknn.errors import Unsupported
from vknn.ir.constants import from_numpy, to_numpy
from vknn.ir.types import is_narrow, numpy_dtype, static_shape

FLT_MAX = float(np.finfo(np.float32).max)


class NotLowered(Exception):
    """A lowering cannot handle this instance; the op stays `onnx.*`."""


def _bool(v: bool) -> IntegerAttr:
    return IntegerAttr(int(bool(v)), i1)  # an ONNX flag (transB=3): nonzero is true, as in ORT


def _i64(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


def _f32(v: float) -> FloatAttr:
    return FloatAttr(float(v), f32)


def _i64s(v: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(x) for x in v])


def _f32s(v: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f32, [float(x) for x in v])


def _attr_value(attr: Attribute) -> Any:
    """An onnx-dialect attribute as a plain Python value."""
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    if isinstance(attr, ArrayAttr):
        return [_attr_value(a) for a in attr.data]
    return attr


def constant_value(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if an `onnx.Constant` or `vx.constant` defines it."""
    owner = value.owner
    if isinstance(owner, vx.ConstantOp):
        return to_numpy(owner.value)
    if isinstance(owner, OnnxOp) and owner.OP_TYPE == "Constant":
        return _onnx_constant(owner)
    return None


def _onnx_constant(op: OnnxOp) -> np.ndarray | None:
    attrs = op.attributes
    if (v := attrs.get("value")) is not None:
        return to_numpy(v)
    forms: dict[str, Any] = {
        "value_float": np.float32,
        "value_floats": np.float32,
        "value_int": np.int64,
        "value_ints": np.int64,
    }
    for key, dtype in forms.items():
        if (v := attrs.get(key)) is not None:
            return np.asarray(_attr_value(v), dtype=dtype)
    return None  # sparse_value / string forms are not lowered


@dataclass
class Lowering:
    """What a lowering function sees: the op, helpers to read it, and the
    list of `vx` ops it builds (inserted only if the whole lowering succeeds)."""

    op: OnnxOp
    new_ops: list[Operation] = field(default_factory=list)

    @property
    def opset(self) -> int:
        return module_opset(self.op)

    # -- inputs -----------------------------------------------------------
    def has(self, i: int) -> bool:
        return i < len(self.op.inputs) and not isinstance(self.op.inputs[i].type, NoneType)

    def x(self, i: int = 0) -> SSAValue:
        if not self.has(i):
            raise NotLowered(f"input {i} is missing")
        return self.op.inputs[i]

    def opt(self, i: int) -> SSAValue | None:
        return self.op.inputs[i] if self.has(i) else None

    def const(self, i: int) -> np.ndarray:
        value = constant_value(self.x(i))
        if value is None:
            raise NotLowered(f"input {i} is not a constant")
        return value

    def opt_const(self, i: int) -> np.ndarray | None:
        return self.const(i) if self.has(i) else None

    def shape(self, v: SSAValue | int) -> tuple[int, ...]:
        value = self.x(v) if isinstance(v, int) else v
        shape = static_shape(value.type)
        if shape is None:
            raise NotLowered(f"{value.type} is not static")
        return shape

    def out_type(self, i: int = 0) -> TensorType:
        t = self.op.outputs[i].type
        assert isinstance(t, TensorType)
        return t

    def out_shape(self, i: int = 0) -> tuple[int, ...]:
        return tuple(self.out_type(i).get_shape())

    def element(self, v: SSAValue) -> Attribute:
        assert isinstance(v.type, TensorType)
        return v.type.element_type

    def only_first_output(self) -> None:
        if any(r.uses for r in self.op.outputs[1:]):
            raise NotLowered("its optional outputs are used")

    # -- attributes --------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        attr = self.op.attributes.get(name)
        return default if attr is None else _attr_value(attr)

    # -- building ----------------------------------------------------------
    def emit(
        self,
        cls: type[vx.VxOp],
        operands: Sequence[SSAValue | None],
        result: Attribute,
        **props: Attribute,
    ) -> SSAValue:
        attrs: dict[str, Attribute] = {}
        if (name := self.op.attributes.get(NAME_ATTR)) is not None:
            attrs[NAME_ATTR] = name
        new = cls.create(
            operands=[v for v in operands if v is not None],
            result_types=[result],
            properties=dict(props),
            attributes=attrs,
        )
        self.new_ops.append(new)
        return new.results[0]

    def constant(self, array: np.ndarray, suffix: str) -> SSAValue:
        base = self.op.attributes.get(NAME_ATTR)
        handle = f"{base.data if isinstance(base, StringAttr) else 'cst'}_{suffix}"
        value = from_numpy(np.asarray(array), handle)
        attrs = {NAME_ATTR: base} if base is not None else None
        new = vx.ConstantOp(value, attrs)
        self.new_ops.append(new)
        return new.output

    def reshape(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        if self.shape(v) == tuple(shape):
            return v
        return self.emit(vx.ReshapeOp, [v], TensorType(self.element(v), shape))

    def unary(self, kind: vx.UnaryKind, v: SSAValue, *params: float) -> SSAValue:
        props: dict[str, Attribute] = {"kind": vx.UnaryKindAttr(kind)}
        if params:
            props["params"] = _f32s(params)
        return self.emit(vx.UnaryOp, [v], v.type, **props)

    def binary(self, kind: vx.BinaryKind, a: SSAValue, b: SSAValue) -> SSAValue:
        shape = vx.broadcast_shapes(self.shape(a), self.shape(b))
        elem = i1 if kind in vx.COMPARISONS else self.element(a)
        return self.emit(vx.BinaryOp, [a, b], TensorType(elem, shape), kind=vx.BinaryKindAttr(kind))


LowerFn = Callable[[Lowering], Sequence[SSAValue | None]]
LOWERINGS: dict[str, LowerFn] = {}
"""ONNX op_type -> its lowering (returns one value per ONNX output, None
for an output that has no uses)."""


def lowers(*op_types: str) -> Callable[[LowerFn], LowerFn]:
    def register(fn: LowerFn) -> LowerFn:
        for t in op_types:
            LOWERINGS[t] = fn
        return fn

    return register


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise NotLowered(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


# ---------------------------------------------------------------------------
# Constants and shape queries
# ---------------------------------------------------------------------------


@lowers("Constant")
def _constant(lo: Lowering) -> list[SSAValue]:
    value = lo.op.attributes.get("value")
    if isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
        # Keep the same attribute: a weight's handle, never its bytes.
        new = vx.ConstantOp(value, {k: v for k, v in lo.op.attributes.items() if k == NAME_ATTR})
        lo.new_ops.append(new)
        return [new.output]
    array = _onnx_constant(lo.op)
    if array is None:
        raise NotLowered("sparse or string constants are not lowered")
    return [lo.constant(array, "value")]


@lowers("ConstantOfShape")
def _constant_of_shape(lo: Lowering) -> list[SSAValue]:
    shape = tuple(int(d) for d in lo.const(0).reshape(-1))
    value = lo.op.attributes.get("value")
    fill = to_numpy(value).reshape(-1)[:1] if value is not None else np.zeros(1, np.float32)
    # A broadcast view: a splat costs no memory in the weight store.
    return [lo.constant(np.broadcast_to(fill.reshape(()), shape), "splat")]


@lowers("Shape")
def _shape(lo: Lowering) -> list[SSAValue]:
    dims = lo.shape(0)
    rank = len(dims)
    start = lo.attr("start", 0)
    end = lo.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return [lo.constant(np.array(dims[start:end], np.int64), "shape")]


@lowers("Size")
def _size(lo: Lowering) -> list[SSAValue]:
    return [lo.constant(np.array(math.prod(lo.shape(0)), np.int64), "size")]


# ---------------------------------------------------------------------------
# Pointwise
# ---------------------------------------------------------------------------

_UNARY: dict[str, vx.UnaryKind] = {
    "Relu": vx.UnaryKind.RELU,
    "Sigmoid": vx.UnaryKind.SIGMOID,
    "Tanh": vx.UnaryKind.TANH,
    "Exp": vx.UnaryKind.EXP,
    "Log": vx.UnaryKind.LOG,
    "Sqrt": vx.UnaryKind.SQRT,
    "Reciprocal": vx.UnaryKind.RECIPROCAL,
    "Abs": vx.UnaryKind.ABS,
    "Neg": vx.UnaryKind.NEG,
    "Floor": vx.UnaryKind.FLOOR,
    "Ceil": vx.UnaryKind.CEIL,
    "Round": vx.UnaryKind.ROUND,
    "Sign": vx.UnaryKind.SIGN,
    "Erf": vx.UnaryKind.ERF,
    "Softplus": vx.UnaryKind.SOFTPLUS,
    "Softsign": vx.UnaryKind.SOFTSIGN,
    "Sin": vx.UnaryKind.SIN,
    "Cos": vx.UnaryKind.COS,
    "Tan": vx.UnaryKind.TAN,
    "HardSwish": vx.UnaryKind.HARD_SWISH,
    "Mish": vx.UnaryKind.MISH,
    "Not": vx.UnaryKind.NOT,
}

# op_type -> (kind, ((attribute, default), ...)) in the order of UNARY_PARAMS
_PARAM_UNARY: dict[str, tuple[vx.UnaryKind, tuple[tuple[str, float], ...]]] = {
    "LeakyRelu": (vx.UnaryKind.LEAKY_RELU, (("alpha", 0.01),)),
    "Elu": (vx.UnaryKind.ELU, (("alpha", 1.0),)),
    "Celu": (vx.UnaryKind.CELU, (("alpha", 1.0),)),
    "Selu": (
        vx.UnaryKind.SELU,
        (("alpha", 1.67326319217681884765625), ("gamma", 1.05070102214813232421875)),
    ),
    "ThresholdedRelu": (vx.UnaryKind.THRESHOLDED_RELU, (("alpha", 1.0),)),
    "HardSigmoid": (vx.UnaryKind.HARD_SIGMOID, (("alpha", 0.2), ("beta", 0.5))),
}


@lowers(*_UNARY)
def _unary(lo: Lowering) -> list[SSAValue]:
    return [lo.unary(_UNARY[lo.op.OP_TYPE], lo.x(0))]


@lowers(*_PARAM_UNARY)
def _param_unary(lo: Lowering) -> list[SSAValue]:
    kind, params = _PARAM_UNARY[lo.op.OP_TYPE]
    return [lo.unary(kind, lo.x(0), *(lo.attr(name, d) for name, d in params))]


@lowers("Gelu")
def _gelu(lo: Lowering) -> list[SSAValue]:
    approximate = lo.attr("approximate", "none")
    kind = vx.UnaryKind.GELU_TANH if approximate == "tanh" else vx.UnaryKind.GELU
    return [lo.unary(kind, lo.x(0))]


@lowers("Clip")
def _clip(lo: Lowering) -> list[SSAValue]:
    if lo.opset < 11:
        lo_, hi = lo.attr("min", -FLT_MAX), lo.attr("max", FLT_MAX)
    else:
        mn, mx = lo.opt_const(1), lo.opt_const(2)
        lo_ = float(mn.reshape(-1)[0]) if mn is not None else -FLT_MAX
        hi = float(mx.reshape(-1)[0]) if mx is not None else FLT_MAX
    lo_, hi = max(lo_, -FLT_MAX), min(hi, FLT_MAX)  # keep the params finite f32
    return [lo.unary(vx.UnaryKind.CLIP, lo.x(0), lo_, hi)]


@lowers("Identity")
def _identity(lo: Lowering) -> list[SSAValue]:
    return [lo.x(0)]


@lowers("Dropout")
def _dropout(lo: Lowering) -> list[SSAValue | None]:
    lo.only_first_output()
    training = lo.opt_const(2) if lo.opset >= 12 else None
    if training is not None and bool(training.reshape(-1)[0]):
        raise NotLowered("training-mode dropout is not lowered")
    return [lo.x(0), *([None] * (len(lo.op.outputs) - 1))]


_BINARY: dict[str, vx.BinaryKind] = {
    "Add": vx.BinaryKind.ADD,
    "Sub": vx.BinaryKind.SUB,
    "Mul": vx.BinaryKind.MUL,
    "Div": vx.BinaryKind.DIV,
    "Pow": vx.BinaryKind.POW,
    "PRelu": vx.BinaryKind.PRELU,
    "Equal": vx.BinaryKind.EQUAL,
    "Less": vx.BinaryKind.LESS,
    "LessOrEqual": vx.BinaryKind.LESS_EQUAL,
    "Greater": vx.BinaryKind.GREATER,
    "GreaterOrEqual": vx.BinaryKind.GREATER_EQUAL,
    "And": vx.BinaryKind.AND,
    "Or": vx.BinaryKind.OR,
    "Xor": vx.BinaryKind.XOR,
}


def _legacy_rhs(lo: Lowering, a: SSAValue, b: SSAValue) -> SSAValue:
    """Opset < 7 `broadcast=1, axis=k`: align b's dims at a's dim k."""
    if lo.opset >= 7 or not lo.attr("broadcast", 0) or lo.attr("axis") is None:
        return b
    ra, sb = len(lo.shape(a)), lo.shape(b)
    axis = _axis(lo.attr("axis"), ra)
    return lo.reshape(b, (*sb, *[1] * (ra - axis - len(sb))))


@lowers(*_BINARY)
def _binary(lo: Lowering) -> list[SSAValue]:
    a, b = lo.x(0), lo.x(1)
    b = _legacy_rhs(lo, a, b)
    kind = _BINARY[lo.op.OP_TYPE]
    return [lo.emit(vx.BinaryOp, [a, b], lo.out_type(), kind=vx.BinaryKindAttr(kind))]


@lowers("Mod")
def _mod(lo: Lowering) -> list[SSAValue]:
    kind = vx.BinaryKind.FMOD if lo.attr("fmod", 0) else vx.BinaryKind.MOD
    return [lo.emit(vx.BinaryOp, [lo.x(0), lo.x(1)], lo.out_type(), kind=vx.BinaryKindAttr(kind))]


@lowers("BitShift")
def _bitshift(lo: Lowering) -> list[SSAValue]:
    kind = vx.BinaryKind.SHIFT_LEFT if lo.attr("direction") == "LEFT" else vx.BinaryKind.SHIFT_RIGHT
    return [lo.emit(vx.BinaryOp, [lo.x(0), lo.x(1)], lo.out_type(), kind=vx.BinaryKindAttr(kind))]


_NARY = {"Sum": vx.BinaryKind.ADD, "Max": vx.BinaryKind.MAX, "Min": vx.BinaryKind.MIN}


@lowers("Sum", "Max", "Min", "Mean")
def _nary(lo: Lowering) -> list[SSAValue]:
    """N-ary element-wise ops become a left-to-right chain of binaries."""
    values = [lo.x(i) for i in range(len(lo.op.inputs))]
    kind = _NARY.get(lo.op.OP_TYPE, vx.BinaryKind.ADD)
    acc = values[0]
    for v in values[1:]:
        acc = lo.binary(kind, acc, v)
    if lo.op.OP_TYPE == "Mean" and len(values) > 1:
        n = lo.constant(np.array(len(values), numpy_dtype(lo.element(acc))), "count")
        acc = lo.binary(vx.BinaryKind.DIV, acc, n)
    return [acc]  # a one-input Sum/Max/Min/Mean is its input


@lowers("Where")
def _where(lo: Lowering) -> list[SSAValue]:
    return [lo.emit(vx.SelectOp, [lo.x(0), lo.x(1), lo.x(2)], lo.out_type())]


@lowers("Cast", "CastLike")
def _cast(lo: Lowering) -> list[SSAValue]:
    x = lo.x(0)
    if x.type == lo.out_type():
        return [x]
    return [lo.emit(vx.CastOp, [x], lo.out_type())]


# ---------------------------------------------------------------------------
# Convolution, matrix products
# ---------------------------------------------------------------------------


def _explicit_pads(
    lo: Lowering,
    in_sp: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX auto_pad / pads -> explicit [begins..., ends...]."""
    n = len(kernel)
    auto_pad = lo.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        return list(lo.attr("pads", [0] * (2 * n)))
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise NotLowered(f"auto_pad {auto_pad!r}")
    begins, ends = [], []
    for size, k, s, d in zip(in_sp, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small = total // 2
        # SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the begin.
        begin = small if auto_pad == "SAME_UPPER" else total - small
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _window(lo: Lowering, kernel: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    n = len(kernel)
    strides = list(lo.attr("strides", [1] * n))
    dilations = list(lo.attr("dilations", [1] * n))
    pads = _explicit_pads(lo, lo.shape(0)[2:], kernel, strides, dilations)
    return strides, pads, dilations


@lowers("Conv")
def _conv(lo: Lowering) -> list[SSAValue]:
    kernel = lo.shape(1)[2:]
    strides, pads, dilations = _window(lo, kernel)
    return [
        lo.emit(
            vx.ConvOp,
            [lo.x(0), lo.x(1), lo.opt(2)],
            lo.out_type(),
            strides=_i64s(strides),
            pads=_i64s(pads),
            dilations=_i64s(dilations),
            group=_i64(lo.attr("group", 1)),
        )
    ]


@lowers("ConvTranspose")
def _conv_transpose(lo: Lowering) -> list[SSAValue]:
    x, w = lo.shape(0), lo.shape(1)
    kernel, n = w[2:], len(w) - 2
    strides = list(lo.attr("strides", [1] * n))
    dilations = list(lo.attr("dilations", [1] * n))
    out_pad = list(lo.attr("output_padding", [0] * n))
    auto_pad = lo.attr("auto_pad", "NOTSET")
    output_shape = lo.attr("output_shape")
    if output_shape is None and auto_pad in ("NOTSET", "", "VALID"):
        pads = list(lo.attr("pads", [0] * 2 * n)) if auto_pad != "VALID" else [0] * 2 * n
    else:
        if output_shape is not None:
            target = list(output_shape)[-n:]
        else:
            target = [size * s for size, s in zip(x[2:], strides, strict=True)]
        begins, ends = [], []
        for i in range(n):
            full = strides[i] * (x[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
            total = full - target[i]
            if total < 0:
                raise NotLowered("output_shape larger than the full transposed conv")
            half = total // 2
            begin = half if auto_pad == "SAME_UPPER" else total - half
            begins.append(begin)
            ends.append(total - begin)
        pads = begins + ends
    return [
        lo.emit(
            vx.ConvTransposeOp,
            [lo.x(0), lo.x(1), lo.opt(2)],
            lo.out_type(),
            strides=_i64s(strides),
            pads=_i64s(pads),
            dilations=_i64s(dilations),
            output_padding=_i64s(out_pad),
            group=_i64(lo.attr("group", 1)),
        )
    ]


@lowers("MatMul")
def _matmul(lo: Lowering) -> list[SSAValue]:
    a, b = lo.x(0), lo.x(1)
    sa, sb = lo.shape(a), lo.shape(b)
    # vx.matmul takes rank >= 2; ONNX's 1-D operands gain (and lose) a unit dim.
    if len(sa) == 1:
        a = lo.reshape(a, (1, sa[0]))
    if len(sb) == 1:
        b = lo.reshape(b, (sb[0], 1))
    shape = vx.MatMulOp.infer_shape(lo.shape(a), lo.shape(b))
    out = lo.emit(vx.MatMulOp, [a, b], TensorType(lo.element(a), shape))
    return [lo.reshape(out, lo.out_shape())]


@lowers("Gemm")
def _gemm(lo: Lowering) -> list[SSAValue]:
    c = lo.opt(2)
    beta = lo.attr("beta", 1.0)
    return [
        lo.emit(
            vx.GemmOp,
            [lo.x(0), lo.x(1), c],
            lo.out_type(),
            trans_a=_bool(lo.attr("transA", 0)),
            trans_b=_bool(lo.attr("transB", 0)),
            alpha=_f32(lo.attr("alpha", 1.0)),
            beta=_f32(beta if c is not None else 0.0),
        )
    ]


# ---------------------------------------------------------------------------
# Pooling, reductions, normalizations
# ---------------------------------------------------------------------------

_POOL = {
    "MaxPool": vx.PoolKind.MAX,
    "AveragePool": vx.PoolKind.AVG,
    "LpPool": vx.PoolKind.LP,
    "GlobalMaxPool": vx.PoolKind.MAX,
    "GlobalAveragePool": vx.PoolKind.AVG,
    "GlobalLpPool": vx.PoolKind.LP,
}


@lowers(*_POOL)
def _pool(lo: Lowering) -> list[SSAValue | None]:
    lo.only_first_output()  # MaxPool's Indices
    kind = _POOL[lo.op.OP_TYPE]
    spatial = lo.shape(0)[2:]
    n = len(spatial)
    if lo.op.OP_TYPE.startswith("Global"):
        kernel, strides, pads, dilations = list(spatial), [1] * n, [0] * 2 * n, [1] * n
        ceil_mode, count_include_pad = False, False
    else:
        kernel = list(lo.attr("kernel_shape"))
        strides, pads, dilations = _window(lo, kernel)
        ceil_mode = bool(lo.attr("ceil_mode", 0))
        count_include_pad = bool(lo.attr("count_include_pad", 0))
    props: dict[str, Attribute] = {
        "kind": vx.PoolKindAttr(kind),
        "kernel": _i64s(kernel),
        "strides": _i64s(strides),
        "pads": _i64s(pads),
        "dilations": _i64s(dilations),
        "ceil_mode": _bool(ceil_mode),
        "count_include_pad": _bool(count_include_pad and kind == vx.PoolKind.AVG),
    }
    if kind == vx.PoolKind.LP:
        props["p"] = _i64(int(lo.attr("p", 2)))
    out = lo.emit(vx.PoolOp, [lo.x(0)], lo.out_type(), **props)
    return [out, *([None] * (len(lo.op.outputs) - 1))]


_REDUCE = {
    "ReduceSum": vx.ReduceKind.SUM,
    "ReduceMean": vx.ReduceKind.MEAN,
    "ReduceMax": vx.ReduceKind.MAX,
    "ReduceMin": vx.ReduceKind.MIN,
    "ReduceProd": vx.ReduceKind.PROD,
    "ReduceL1": vx.ReduceKind.L1,
    "ReduceL2": vx.ReduceKind.L2,
    "ReduceLogSum": vx.ReduceKind.LOG_SUM,
    "ReduceLogSumExp": vx.ReduceKind.LOG_SUM_EXP,
    "ReduceSumSquare": vx.ReduceKind.SUM_SQUARE,
}


@lowers(*_REDUCE)
def _reduce(lo: Lowering) -> list[SSAValue]:
    x = lo.x(0)
    rank = len(lo.shape(x))
    # ReduceSum took axes as an input from opset 13, the others from 18.
    axes_as_input = lo.opset >= (13 if lo.op.OP_TYPE == "ReduceSum" else 18)
    if axes_as_input:
        given = lo.opt_const(1)
        axes = [] if given is None else [int(a) for a in given.reshape(-1)]
    else:
        axes = list(lo.attr("axes", []))
    if not axes:
        if lo.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(rank))
    axes = sorted({_axis(a, rank) for a in axes})
    return [
        lo.emit(
            vx.ReduceOp,
            [x],
            lo.out_type(),
            kind=vx.ReduceKindAttr(_REDUCE[lo.op.OP_TYPE]),
            axes=_i64s(axes),
            keepdims=_bool(lo.attr("keepdims", 1)),
        )
    ]


@lowers("ArgMax", "ArgMin")
def _arg(lo: Lowering) -> list[SSAValue]:
    kind = vx.ReduceKind.ARGMAX if lo.op.OP_TYPE == "ArgMax" else vx.ReduceKind.ARGMIN
    axis = _axis(lo.attr("axis", 0), len(lo.shape(0)))
    return [
        lo.emit(
            vx.ReduceOp,
            [lo.x(0)],
            lo.out_type(),
            kind=vx.ReduceKindAttr(kind),
            axes=_i64s([axis]),
            keepdims=_bool(lo.attr("keepdims", 1)),
            select_last_index=_bool(lo.attr("select_last_index", 0)),
        )
    ]


@lowers("Softmax", "LogSoftmax")
def _softmax(lo: Lowering) -> list[SSAValue]:
    cls = vx.SoftmaxOp if lo.op.OP_TYPE == "Softmax" else vx.LogSoftmaxOp
    x = lo.x(0)
    shape = lo.shape(x)
    rank = len(shape)
    if lo.opset >= 13:
        axis = _axis(lo.attr("axis", -1), rank)
        return [lo.emit(cls, [x], x.type, axis=_i64(axis))]
    # Before opset 13 the input is coerced to 2-D [prod(:axis), prod(axis:)]
    # and normalized along the second dim; over the last axis that is the same.
    axis = _axis(lo.attr("axis", 1), rank)
    if axis == rank - 1:
        return [lo.emit(cls, [x], x.type, axis=_i64(axis))]
    flat = lo.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
    y = lo.emit(cls, [flat], flat.type, axis=_i64(1))
    return [lo.reshape(y, shape)]


@lowers("LayerNormalization")
def _layernorm(lo: Lowering) -> list[SSAValue | None]:
    lo.only_first_output()
    x = lo.x(0)
    axis = _axis(lo.attr("axis", -1), len(lo.shape(x)))
    out = lo.emit(
        vx.LayerNormOp,
        [x, lo.x(1), lo.opt(2)],
        lo.out_type(),
        axis=_i64(axis),
        epsilon=_f32(lo.attr("epsilon", 1e-5)),
    )
    return [out, *([None] * (len(lo.op.outputs) - 1))]


def _channel_affine(
    lo: Lowering, y: SSAValue, scale: SSAValue | np.ndarray, bias: SSAValue | np.ndarray
) -> SSAValue:
    """y * scale[c] + bias[c] over axis 1 of y (scale, bias: [C])."""
    shape = lo.shape(y)
    per_c = (shape[1],) + (1,) * (len(shape) - 2)
    dtype = numpy_dtype(lo.element(y))
    out = y
    for kind, v, what in ((vx.BinaryKind.MUL, scale, "scale"), (vx.BinaryKind.ADD, bias, "bias")):
        if isinstance(v, np.ndarray):
            v = lo.constant(v.astype(dtype).reshape(per_c), what)
        else:
            v = lo.reshape(v, per_c)
        out = lo.binary(kind, out, v)
    return out


def _normalized(lo: Lowering, x: SSAValue, groups: int, eps: float) -> SSAValue:
    """x [N, C, ...] normalized over each of `groups` channel groups and the
    spatial dims: a layernorm over axis 2 of [N, groups, C/groups * spatial]."""
    shape = lo.shape(x)
    if len(shape) < 2 or groups <= 0 or shape[1] % groups:
        raise NotLowered(f"{shape[1] if len(shape) > 1 else 0} channels in {groups} groups")
    n = shape[0]
    rows = lo.reshape(x, (n, groups, math.prod(shape[1:]) // groups))
    one = lo.constant(np.ones((1,), numpy_dtype(lo.element(x))), "one")
    y = lo.emit(vx.LayerNormOp, [rows, one], rows.type, axis=_i64(2), epsilon=_f32(eps))
    return lo.reshape(y, shape)


@lowers("MeanVarianceNormalization")
def _mvn(lo: Lowering) -> list[SSAValue]:
    """A layernorm (scale 1) over the reduced axes, where they are the
    trailing axes once size-1 dims are ignored (NCHW with N = 1 and the
    default axes [0, 2, 3] is a per-channel normalization)."""
    x = lo.x(0)
    shape = lo.shape(x)
    axes = {_axis(int(a), len(shape)) for a in lo.attr("axes", [0, 2, 3])}
    kept = [d for d in range(len(shape)) if d not in axes and shape[d] > 1]
    reduced = [d for d in axes if shape[d] > 1]
    if kept and reduced and max(kept) > min(reduced):
        raise NotLowered("the normalized axes are not trailing")
    rows = math.prod(shape[d] for d in kept)
    flat = lo.reshape(x, (rows, math.prod(shape) // max(rows, 1)))
    one = lo.constant(np.ones((1,), numpy_dtype(lo.element(x))), "one")
    # ONNX's function body: (x - mean) / sqrt(var + 1e-9).
    y = lo.emit(vx.LayerNormOp, [flat, one], flat.type, axis=_i64(1), epsilon=_f32(1e-9))
    return [lo.reshape(y, shape)]


@lowers("InstanceNormalization")
def _instance_norm(lo: Lowering) -> list[SSAValue]:
    x = lo.x(0)
    y = _normalized(lo, x, lo.shape(x)[1], lo.attr("epsilon", 1e-5))
    return [_channel_affine(lo, y, lo.x(1), lo.x(2))]


@lowers("GroupNormalization")
def _group_norm(lo: Lowering) -> list[SSAValue]:
    x = lo.x(0)
    c, groups = lo.shape(x)[1], int(lo.attr("num_groups"))
    y = _normalized(lo, x, groups, lo.attr("epsilon", 1e-5))
    scale, bias = lo.x(1), lo.x(2)
    if lo.shape(scale) != (c,) or lo.shape(bias) != (c,):
        # Opset 18's scale and bias are per group: repeat each over its channels.
        s, b = lo.const(1), lo.const(2)
        if s.shape != (groups,) or b.shape != (groups,):
            raise NotLowered("scale/bias are neither per channel nor constant per group")
        return [_channel_affine(lo, y, np.repeat(s, c // groups), np.repeat(b, c // groups))]
    return [_channel_affine(lo, y, scale, bias)]


@lowers("BatchNormalization")
def _batchnorm(lo: Lowering) -> list[SSAValue | None]:
    lo.only_first_output()
    if lo.opset < 9 and not lo.attr("spatial", 1):
        raise NotLowered("non-spatial batch normalization")
    if lo.attr("training_mode", 0):
        raise NotLowered("training-mode batch normalization")
    out = lo.emit(
        vx.BatchNormOp,
        [lo.x(i) for i in range(5)],
        lo.out_type(),
        epsilon=_f32(lo.attr("epsilon", 1e-5)),
    )
    return [out, *([None] * (len(lo.op.outputs) - 1))]


@lowers("LRN")
def _lrn(lo: Lowering) -> list[SSAValue]:
    return [
        lo.emit(
            vx.LrnOp,
            [lo.x(0)],
            lo.out_type(),
            size=_i64(lo.attr("size")),
            alpha=_f32(lo.attr("alpha", 1e-4)),
            beta=_f32(lo.attr("beta", 0.75)),
            bias=_f32(lo.attr("bias", 1.0)),
        )
    ]


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


def _reshaped(lo: Lowering, shape: Sequence[int]) -> list[SSAValue]:
    if tuple(shape) != lo.out_shape():
        raise NotLowered(f"computed shape {list(shape)} differs from the type {lo.out_shape()}")
    return [lo.reshape(lo.x(0), shape)]


@lowers("Reshape")
def _reshape(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    if lo.opset < 5:
        target = list(lo.attr("shape", []))
    else:
        target = [int(d) for d in lo.const(1).reshape(-1)]
    allowzero = lo.attr("allowzero", 0)
    shape = [x[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if shape.count(-1) > 1:
        raise NotLowered("more than one -1 in the target shape")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = math.prod(x) // known if known else 0
    return _reshaped(lo, shape)


@lowers("Flatten")
def _flatten(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    axis = lo.attr("axis", 1)
    axis = axis + len(x) if axis < 0 else axis
    return _reshaped(lo, (math.prod(x[:axis]), math.prod(x[axis:])))


def _axes_list(lo: Lowering) -> list[int] | None:
    if lo.opset >= 13:
        given = lo.opt_const(1)
        return None if given is None else [int(a) for a in given.reshape(-1)]
    axes = lo.attr("axes")
    return None if axes is None else list(axes)


@lowers("Squeeze")
def _squeeze(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    axes = _axes_list(lo)
    drop = (
        {i for i, d in enumerate(x) if d == 1} if axes is None else {_axis(a, len(x)) for a in axes}
    )
    if any(x[a] != 1 for a in drop):
        raise NotLowered("squeezing a dim that is not 1")
    return _reshaped(lo, [d for i, d in enumerate(x) if i not in drop])


@lowers("Unsqueeze")
def _unsqueeze(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    axes = _axes_list(lo)
    if axes is None:
        raise NotLowered("Unsqueeze without axes")
    rank = len(x) + len(axes)
    new = {_axis(a, rank) for a in axes}
    dims = iter(x)
    return _reshaped(lo, [1 if i in new else next(dims) for i in range(rank)])


@lowers("Transpose")
def _transpose(lo: Lowering) -> list[SSAValue]:
    rank = len(lo.shape(0))
    perm = lo.attr("perm", list(range(rank))[::-1])
    return [lo.emit(vx.TransposeOp, [lo.x(0)], lo.out_type(), perm=_i64s(perm))]


@lowers("Concat")
def _concat(lo: Lowering) -> list[SSAValue]:
    values = [lo.x(i) for i in range(len(lo.op.inputs))]
    axis = _axis(lo.attr("axis", 1), len(lo.shape(values[0])))
    # ONNX allows empty inputs in a concat; they contribute nothing.
    values = [v for v in values if lo.shape(v)[axis] != 0] or values[:1]
    if len(values) == 1:
        return [values[0]]
    return [lo.emit(vx.ConcatOp, values, lo.out_type(), axis=_i64(axis))]


def normalize_slice(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int],
) -> tuple[list[int], list[int], list[int]]:
    """ONNX Slice parameters -> vx.slice's clamped per-dim start/end/step."""
    rank = len(shape)
    s_out, e_out, st_out = [0] * rank, list(shape), [1] * rank
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = _axis(a, rank)
        dim = shape[a]
        if st == 0:
            raise NotLowered("slice step 0")
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if st > 0:
            s = min(max(s, 0), dim)
            e = min(max(e, s), dim)
        else:
            s = min(max(s, 0), dim - 1)
            e = max(min(e, s), -1)
        s_out[a], e_out[a], st_out[a] = s, e, st
    return s_out, e_out, st_out


@lowers("Slice")
def _slice(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    if lo.opset < 10:
        starts, ends = list(lo.attr("starts")), list(lo.attr("ends"))
        axes = list(lo.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = [int(v) for v in lo.const(1).reshape(-1)]
        ends = [int(v) for v in lo.const(2).reshape(-1)]
        given_axes, given_steps = lo.opt_const(3), lo.opt_const(4)
        axes = list(range(len(starts))) if given_axes is None else given_axes.reshape(-1).tolist()
        steps = [1] * len(starts) if given_steps is None else given_steps.reshape(-1).tolist()
    s, e, st = normalize_slice(x, starts, ends, axes, steps)
    return [
        lo.emit(
            vx.SliceOp, [lo.x(0)], lo.out_type(), starts=_i64s(s), ends=_i64s(e), steps=_i64s(st)
        )
    ]


@lowers("Split")
def _split(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    axis = _axis(lo.attr("axis", 0), len(x))
    sizes = [lo.out_shape(i)[axis] for i in range(len(lo.op.outputs))]
    outs, start = [], 0
    for i, size in enumerate(sizes):
        s, e, st = normalize_slice(x, [start], [start + size], [axis], [1])
        outs.append(
            lo.emit(
                vx.SliceOp,
                [lo.x(0)],
                lo.out_type(i),
                starts=_i64s(s),
                ends=_i64s(e),
                steps=_i64s(st),
            )
        )
        start += size
    if start != x[axis]:
        raise NotLowered("split sizes do not cover the axis")
    return outs


@lowers("Gather")
def _gather(lo: Lowering) -> list[SSAValue]:
    data = lo.shape(0)
    axis = _axis(lo.attr("axis", 0), len(data))
    indices = lo.x(1)
    _indices_in_range(lo, 1, data[axis])
    known = constant_value(indices)
    if known is not None and (known < 0).any():
        # Constant negative indices are normalized here, once.
        fixed = np.where(known < 0, known + data[axis], known).astype(known.dtype)
        indices = lo.constant(fixed, "indices")
    return [lo.emit(vx.GatherOp, [lo.x(0), indices], lo.out_type(), axis=_i64(axis))]


@lowers("IsNaN", "IsInf")
def _float_test(lo: Lowering) -> list[SSAValue]:
    if lo.op.OP_TYPE == "IsNaN":
        test = "nan"
    else:
        pos, neg = lo.attr("detect_positive", 1), lo.attr("detect_negative", 1)
        if not (pos or neg):  # detects nothing: all false
            raise NotLowered("IsInf detects neither sign")
        test = "inf" if pos and neg else ("pos_inf" if pos else "neg_inf")
    return [lo.emit(vx.FloatTestOp, [lo.x(0)], lo.out_type(), test=StringAttr(test))]


def _indices_in_range(lo: Lowering, i: int, dims: Sequence[int] | int) -> None:
    """Constant indices out of range stay `onnx.*` so the CPU raises, as
    onnxruntime does (the Vulkan kernels clamp, never reading outside)."""
    known = constant_value(lo.x(i))
    if known is None or known.size == 0:
        return
    lim = np.asarray(dims, dtype=np.int64)
    if ((known < -lim) | (known >= lim)).any():
        raise NotLowered("constant indices are out of range")


@lowers("GatherND")
def _gather_nd(lo: Lowering) -> list[SSAValue]:
    data, idx = lo.shape(0), lo.shape(1)
    b = lo.attr("batch_dims", 0)
    _indices_in_range(lo, 1, data[b : b + idx[-1]])
    return [lo.emit(vx.GatherNDOp, [lo.x(0), lo.x(1)], lo.out_type(), batch_dims=_i64(b))]


@lowers("GatherElements")
def _gather_elements(lo: Lowering) -> list[SSAValue]:
    data = lo.shape(0)
    axis = _axis(lo.attr("axis", 0), len(data))
    _indices_in_range(lo, 1, data[axis])
    return [lo.emit(vx.GatherElementsOp, [lo.x(0), lo.x(1)], lo.out_type(), axis=_i64(axis))]


@lowers("CumSum")
def _cum_sum(lo: Lowering) -> list[SSAValue]:
    # The axis is a tensor operand: only a constant one lowers (a runtime
    # axis would pick the line layout on the device).
    known = constant_value(lo.x(1))
    if known is None or known.size != 1:
        raise NotLowered("CumSum axis is not a constant scalar")
    axis = _axis(int(known.reshape(())), len(lo.shape(0)))
    flags = {k: _i64(1 if lo.attr(k, 0) else 0) for k in ("exclusive", "reverse")}
    return [lo.emit(vx.CumSumOp, [lo.x(0)], lo.out_type(), axis=_i64(axis), **flags)]


@lowers("ScatterElements", "Scatter")
def _scatter_elements(lo: Lowering) -> list[SSAValue]:
    data = lo.shape(0)
    axis = _axis(lo.attr("axis", 0), len(data))
    _indices_in_range(lo, 1, data[axis])
    reduction = lo.attr("reduction", "none")
    return [
        lo.emit(
            vx.ScatterElementsOp,
            [lo.x(0), lo.x(1), lo.x(2)],
            lo.out_type(),
            axis=_i64(axis),
            reduction=StringAttr(reduction),
        )
    ]


@lowers("Expand")
def _expand(lo: Lowering) -> list[SSAValue]:
    shape = [int(d) for d in lo.const(1).reshape(-1)]
    out = vx.broadcast_shapes(lo.shape(0), shape)
    if out != lo.out_shape():
        raise NotLowered(f"computed shape {list(out)} differs from the type {lo.out_shape()}")
    x = lo.x(0)
    if lo.shape(x) == out:
        return [x]
    return [lo.emit(vx.ExpandOp, [x], lo.out_type())]


@lowers("Pad")
def _pad(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    rank = len(x)
    mode = lo.attr("mode", "constant")
    if lo.opset < 11:
        pads = list(lo.attr("pads", lo.attr("paddings", [])))
        value = lo.attr("value", 0.0)
    else:
        pads = [int(p) for p in lo.const(1).reshape(-1)]
        cv = lo.opt_const(2)
        value = float(cv.reshape(-1)[0]) if cv is not None and cv.size else 0.0
        axes_given = lo.opt_const(3)
        if axes_given is not None:
            axes = [_axis(int(a), rank) for a in axes_given.reshape(-1)]
            full = [0] * (2 * rank)
            for i, a in enumerate(axes):
                full[a], full[rank + a] = pads[i], pads[len(axes) + i]
            pads = full
    if len(pads) != 2 * rank:
        raise NotLowered(f"{len(pads)} pads for rank {rank}")
    try:
        pad_mode = vx.PadMode(mode)
    except ValueError:
        raise NotLowered(f"pad mode {mode!r}") from None
    props: dict[str, Attribute] = {"mode": vx.PadModeAttr(pad_mode), "pads": _i64s(pads)}
    if pad_mode == vx.PadMode.CONSTANT:
        props["value"] = FloatAttr(value, f64)
    return [lo.emit(vx.PadOp, [lo.x(0)], lo.out_type(), **props)]


_RESIZE_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}


@lowers("Resize", "Upsample")
def _resize(lo: Lowering) -> list[SSAValue]:
    x = lo.shape(0)
    rank = len(x)
    mode = _RESIZE_MODES.get(lo.attr("mode", "nearest"))
    if mode is None:
        raise NotLowered(f"resize mode {lo.attr('mode')!r}")
    legacy = lo.op.OP_TYPE == "Upsample" or lo.opset < 11
    if legacy:
        # Upsample and Resize-10: asymmetric mapping, nearest rounds down.
        if lo.op.OP_TYPE == "Upsample" and lo.opset < 9:
            scales = list(lo.attr("scales"))
        else:
            scales = lo.const(1).reshape(-1).tolist()
        coord, nearest = "asymmetric", "floor"
    else:
        if lo.attr("antialias", 0):
            raise NotLowered("antialiased resize")
        coord = lo.attr("coordinate_transformation_mode", "half_pixel")
        nearest = lo.attr("nearest_mode", "round_prefer_floor")
        if coord not in set(vx.CoordinateMode):
            raise NotLowered(f"coordinate_transformation_mode {coord!r}")
        axes = [_axis(a, rank) for a in lo.attr("axes", list(range(rank)))]
        given_scales = lo.opt_const(2) if lo.has(2) else None
        sizes = lo.opt_const(3) if lo.has(3) else None
        scales = [1.0] * rank
        if given_scales is not None and given_scales.size:
            for a, s in zip(axes, given_scales.reshape(-1).tolist(), strict=True):
                scales[a] = float(s)
        elif sizes is not None:
            if lo.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
                raise NotLowered("keep_aspect_ratio_policy other than stretch")
            for a, s in zip(axes, sizes.reshape(-1).tolist(), strict=True):
                scales[a] = float(np.float32(s) / np.float32(x[a]))
        else:
            raise NotLowered("resize without scales or sizes")
    return [
        lo.emit(
            vx.ResizeOp,
            [lo.x(0)],
            lo.out_type(),
            mode=vx.ResizeModeAttr(vx.ResizeMode(mode)),
            scales=_f32s(scales),
            coordinate_mode=vx.CoordinateModeAttr(vx.CoordinateMode(coord)),
            nearest_mode=vx.NearestModeAttr(vx.NearestMode(nearest)),
            cubic_coeff_a=_f32(lo.attr("cubic_coeff_a", -0.75)),
            exclude_outside=_bool(lo.attr("exclude_outside", 0)),
        )
    ]


# ---------------------------------------------------------------------------
# Quantization
# ---------------------------------------------------------------------------


@lowers("QuantizeLinear", "DequantizeLinear")
def _quant(lo: Lowering) -> list[SSAValue]:
    if lo.attr("block_size", 0):
        raise NotLowered("blocked quantization")
    x = lo.shape(0)
    scale = lo.shape(1)
    rank = len(x)
    per_axis = len(scale) == 1 and scale[0] != 1
    # A per-tensor scale makes the axis irrelevant; 0 is valid for any rank.
    axis = _axis(lo.attr("axis", 1), rank) if per_axis else 0
    cls = vx.QuantizeOp if lo.op.OP_TYPE == "QuantizeLinear" else vx.DequantizeOp
    return [lo.emit(cls, [lo.x(0), lo.x(1), lo.opt(2)], lo.out_type(), axis=_i64(axis))]


# ---------------------------------------------------------------------------
# The pattern and the pass
# ---------------------------------------------------------------------------


def _why_not_static(op: OnnxOp) -> str | None:
    for i, v in enumerate(op.inputs):
        if isinstance(v.type, NoneType):
            continue
        if static_shape(v.type) is None:
            return f"input {i} has a non-static type {v.type}"
    for i, r in enumerate(op.results):
        if (i == 0 or r.uses) and static_shape(r.type) is None:
            return f"output {i} has a non-static type {r.type}"
    return None


def lower_op(op: OnnxOp) -> tuple[list[Operation], list[SSAValue | None]] | str:
    """The vx ops replacing `op` and its replacement values, or why not."""
    fn = LOWERINGS.get(op.OP_TYPE)
    if fn is None:
        return "no lowering"
    if any(is_narrow(getattr(v.type, "element_type", None)) for v in (*op.operands, *op.results)):
        return "narrow element type (float8/int4/...): no vx kernels"
    if (why := _why_not_static(op)) is not None:
        return why
    lo = Lowering(op)
    try:
        values = list(fn(lo))
    except NotLowered as e:
        return str(e)
    except (ValueError, TypeError, KeyError) as e:  # malformed attributes
        return f"malformed: {e}"
    for new in lo.new_ops:
        try:
            new.verify()
        except VerifyException as e:
            return f"lowering gives an invalid op: {e}"
    for old, new_value in zip(op.results, values, strict=True):
        if new_value is not None and new_value.type != old.type and old.uses:
            return f"lowering gives {new_value.type}, the ONNX output is {old.type}"
    return lo.new_ops, values


class LowerOnnxOp(RewritePattern):
    """Replaces one `onnx.*` op by its `vx` lowering, when it has one; else
    records why not (strict mode reports it)."""

    def __init__(self) -> None:
        self.reasons: dict[Operation, str] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, OnnxOp):
            return
        lowered = lower_op(op)
        if isinstance(lowered, str):
            self.reasons[op] = lowered
            return
        new_ops, values = lowered
        rewriter.replace(op, new_ops, values)


def unconverted(
    module: ModuleOp, reasons: dict[Operation, str] | None = None
) -> list[tuple[str, str, str]]:
    """(op_type, node name, reason) of every ONNX op left in `module`."""
    reasons = reasons or {}
    left = []
    for op in module.walk():
        if isinstance(op, OnnxOp):
            left.append((op.OP_TYPE, op.node_name, reasons.get(op, "not converted")))
        elif isinstance(op, CustomOp):
            left.append((op.op_type.data, op.node_name, f"custom op of domain {op.domain.data!r}"))
    return left


@dataclass(frozen=True)
class ConvertOnnxToVxPass(ModulePass):
    """Lower onnx ops to the vx graph IR (partial unless strict=true)."""

    name = "convert-onnx-to-vx"

    strict: bool = False
    """Raise `Unsupported` for any op left unconverted instead of keeping it."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = LowerOnnxOp()
        PatternRewriteWalker(
            GreedyRewritePatternApplier([pattern]), apply_recursively=True
        ).rewrite_module(op)
        _erase_dead_novalues(op)
        if self.strict and (left := unconverted(op, pattern.reasons)):
            lines = ", ".join(
                f"{t} '{name}' ({reason})" if name else f"{t} ({reason})"
                for t, name, reason in left
            )
            raise Unsupported(f"convert-onnx-to-vx: {len(left)} op(s) have no vx lowering: {lines}")


def _erase_dead_novalues(module: ModuleOp) -> None:
    for op in list(module.walk()):
        if isinstance(op, NoValueOp) and not op.result.uses:
            op.detach()
            op.erase()
