"""The `vx` dialect: VKNN's canonical NCHW graph IR.

Every op here is what the backends execute, with attributes normalized once
by `convert-onnx-to-vx` so that no later stage re-derives ONNX defaults:

- no `auto_pad`: pads are explicit, `[begin_0, ..., begin_k, end_0, ..., end_k]`
  over the spatial (or, for `vx.pad`, all) dims, as ONNX orders them;
- no negative axes, and no attribute whose absence means a default: every
  conv/pool carries pads, strides, dilations (and group) even when trivial;
- shapes live in the result types; each op has a static `infer_shape(...)`
  (the shape rule) that the verifier checks the result type against and that
  passes call to build new ops. `-1` (`?`) in a computed shape means the rule
  cannot decide that dim, and then any result dim is accepted.

Each op also carries its descriptor as ClassVars, read by the layout and
fusion passes and the kernel gates:

- `LAYOUT_CLASS`: "nc4hw4" (CNN-shaped: the Vulkan backend packs channels by
  4), "flat" (transformer-shaped, row-major N-D), or "any" (layout-agnostic:
  runs in whatever layout its operands arrive in);
- `POINTWISE`: the op is one per-element function of its operands, so it may
  join a fused pointwise region;
- `HOSTS_EPILOGUE`: the op's kernel can apply a fused pointwise chain at its
  store.

Ops keep the optional `onnx.name` attribute (the ONNX node name), so that
every later stage can report a node by the name the user knows.

This module only defines IR (ops, enums, verifiers, shape rules,
descriptors); it must not transform IR or know about ONNX's attribute forms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Literal

from xdsl.dialects.builtin import (
    I1,
    I64,
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

Shape = tuple[int, ...]
DYNAMIC = -1
"""A dim the shape rule cannot decide (printed `?`)."""

LayoutClass = Literal["nc4hw4", "flat", "any"]

I64Array = DenseArrayBase.constr(i64)
F32Array = DenseArrayBase.constr(f32)
I64Attr = IntegerAttr[I64]
BoolAttr = IntegerAttr[I1]
F32Attr = FloatAttr[Float32Type]
F64Attr = FloatAttr[Float64Type]

# ---------------------------------------------------------------------------
# Enums: a new activation / binary function / pooling is a new case here.
# ---------------------------------------------------------------------------


class UnaryKind(StrEnum):
    RELU = "relu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    RECIPROCAL = "reciprocal"
    ABS = "abs"
    NEG = "neg"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    SIGN = "sign"
    ERF = "erf"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"
    MISH = "mish"
    SOFTPLUS = "softplus"
    SOFTSIGN = "softsign"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    LEAKY_RELU = "leaky_relu"
    ELU = "elu"
    CELU = "celu"
    SELU = "selu"
    THRESHOLDED_RELU = "thresholded_relu"
    HARD_SIGMOID = "hard_sigmoid"
    HARD_SWISH = "hard_swish"
    CLIP = "clip"
    NOT = "not"
    IDENTITY = "identity"


UNARY_PARAMS: dict[UnaryKind, tuple[str, ...]] = {
    UnaryKind.LEAKY_RELU: ("alpha",),
    UnaryKind.ELU: ("alpha",),
    UnaryKind.CELU: ("alpha",),
    UnaryKind.SELU: ("alpha", "gamma"),
    UnaryKind.THRESHOLDED_RELU: ("alpha",),
    UnaryKind.HARD_SIGMOID: ("alpha", "beta"),
    UnaryKind.CLIP: ("min", "max"),
}
"""The meaning of `params` for parameterized kinds; other kinds take none."""

_FLOAT_UNARY = frozenset(UnaryKind) - {
    UnaryKind.RELU,
    UnaryKind.ABS,
    UnaryKind.NEG,
    UnaryKind.SIGN,
    UnaryKind.CLIP,
    UnaryKind.NOT,
    UnaryKind.IDENTITY,
}


class BinaryKind(StrEnum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "pow"
    MAX = "max"
    MIN = "min"
    MOD = "mod"
    """Integer modulo with the sign of the divisor (ONNX Mod, fmod=0)."""
    FMOD = "fmod"
    """C fmod: the sign of the dividend (ONNX Mod, fmod=1)."""
    PRELU = "prelu"
    """lhs < 0 ? lhs * rhs : lhs; rhs (the slope) broadcasts to lhs."""
    EQUAL = "equal"
    LESS = "less"
    LESS_EQUAL = "less_equal"
    GREATER = "greater"
    GREATER_EQUAL = "greater_equal"
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHIFT_LEFT = "shift_left"
    SHIFT_RIGHT = "shift_right"


COMPARISONS = frozenset(
    {
        BinaryKind.EQUAL,
        BinaryKind.LESS,
        BinaryKind.LESS_EQUAL,
        BinaryKind.GREATER,
        BinaryKind.GREATER_EQUAL,
    }
)
LOGICAL = frozenset({BinaryKind.AND, BinaryKind.OR, BinaryKind.XOR})


class PoolKind(StrEnum):
    MAX = "max"
    AVG = "avg"
    LP = "lp"


class ReduceKind(StrEnum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    L1 = "l1"
    L2 = "l2"
    LOG_SUM = "log_sum"
    LOG_SUM_EXP = "log_sum_exp"
    SUM_SQUARE = "sum_square"
    ARGMAX = "argmax"
    ARGMIN = "argmin"


ARG_REDUCTIONS = frozenset({ReduceKind.ARGMAX, ReduceKind.ARGMIN})


class PadMode(StrEnum):
    CONSTANT = "constant"
    REFLECT = "reflect"
    EDGE = "edge"
    WRAP = "wrap"


class ResizeMode(StrEnum):
    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"


class CoordinateMode(StrEnum):
    """How an output coordinate maps to an input coordinate (ONNX's
    coordinate_transformation_mode, minus tf_crop_and_resize)."""

    HALF_PIXEL = "half_pixel"
    HALF_PIXEL_SYMMETRIC = "half_pixel_symmetric"
    PYTORCH_HALF_PIXEL = "pytorch_half_pixel"
    ALIGN_CORNERS = "align_corners"
    ASYMMETRIC = "asymmetric"


class NearestMode(StrEnum):
    ROUND_PREFER_FLOOR = "round_prefer_floor"
    ROUND_PREFER_CEIL = "round_prefer_ceil"
    FLOOR = "floor"
    CEIL = "ceil"


class Layout(StrEnum):
    NC4HW4 = "nc4hw4"
    FLAT = "flat"


@irdl_attr_definition
class UnaryKindAttr(EnumAttribute[UnaryKind], SpacedOpaqueSyntaxAttribute):
    name = "vx.unary_kind"


@irdl_attr_definition
class BinaryKindAttr(EnumAttribute[BinaryKind], SpacedOpaqueSyntaxAttribute):
    name = "vx.binary_kind"


@irdl_attr_definition
class PoolKindAttr(EnumAttribute[PoolKind], SpacedOpaqueSyntaxAttribute):
    name = "vx.pool_kind"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "vx.reduce_kind"


@irdl_attr_definition
class PadModeAttr(EnumAttribute[PadMode], SpacedOpaqueSyntaxAttribute):
    name = "vx.pad_mode"


@irdl_attr_definition
class ResizeModeAttr(EnumAttribute[ResizeMode], SpacedOpaqueSyntaxAttribute):
    name = "vx.resize_mode"


@irdl_attr_definition
class CoordinateModeAttr(EnumAttribute[CoordinateMode], SpacedOpaqueSyntaxAttribute):
    name = "vx.coordinate_mode"


@irdl_attr_definition
class NearestModeAttr(EnumAttribute[NearestMode], SpacedOpaqueSyntaxAttribute):
    name = "vx.nearest_mode"


@irdl_attr_definition
class LayoutAttr(EnumAttribute[Layout], SpacedOpaqueSyntaxAttribute):
    name = "vx.layout"


# ---------------------------------------------------------------------------
# Shape arithmetic shared by the rules (DYNAMIC propagates).
# ---------------------------------------------------------------------------


def shape_of(value: SSAValue | Attribute) -> Shape:
    typ = value.type if isinstance(value, SSAValue) else value
    if not isinstance(typ, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {typ}")
    return tuple(typ.get_shape())


def element_of(value: SSAValue) -> Attribute:
    typ = value.type
    if not isinstance(typ, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {typ}")
    return typ.element_type


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """Numpy (multidirectional) broadcasting; raises ValueError if impossible."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        static = {d for d in dims if d not in (1, DYNAMIC)}
        if len(static) > 1:
            raise ValueError(f"shapes {', '.join(_fmt(s) for s in shapes)} do not broadcast")
        if static:
            out.append(static.pop())
        elif DYNAMIC in dims:
            out.append(DYNAMIC)
        else:
            out.append(1)
    return tuple(out)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` broadcasts (unidirectionally) to `target`."""
    try:
        return len(shape) <= len(target) and broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _fmt(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in shape) + "]"


def _dyn(*dims: int) -> bool:
    return any(d == DYNAMIC for d in dims)


def _window_out(
    size: int, kernel: int, stride: int, begin: int, end: int, dilation: int, ceil: bool
) -> int:
    """Output extent of a strided window over `size` padded by `begin`/`end`."""
    if _dyn(size, kernel):
        return DYNAMIC
    span = dilation * (kernel - 1) + 1
    if ceil:
        out = -(-(size + begin + end - span) // stride) + 1
        # The last window must start inside the input or its begin padding
        # (onnxruntime, PyTorch, ONNX >= opset 22), else ceil mode would add a
        # window made only of end padding.
        if (out - 1) * stride >= size + begin:
            out -= 1
        return out
    return (size + begin + end - span) // stride + 1


def _ints(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _floats(attr: DenseArrayBase) -> tuple[float, ...]:
    return tuple(float(v) for v in attr.get_values())


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1


# ---------------------------------------------------------------------------
# The base class: descriptors and the result-type check.
# ---------------------------------------------------------------------------


class VxOp(IRDLOperation):
    """Base of every `vx` graph op: descriptor ClassVars and a verifier that
    runs the op's own checks, then compares the result with its shape rule."""

    LAYOUT_CLASS: ClassVar[LayoutClass]
    POINTWISE: ClassVar[bool]
    HOSTS_EPILOGUE: ClassVar[bool]

    # Properties are written in the attribute dictionary beside `onnx.name`.
    irdl_options = (ParsePropInAttrDict(),)

    def check(self) -> None:
        """Operand ranks, element types and attribute consistency."""

    def expected_shape(self) -> Shape | None:
        """The shape rule applied to this op; None when the result type is the rule."""
        return None

    def expected_element_type(self) -> Attribute:
        return element_of(self.operands[0])

    def verify_(self) -> None:
        for value in (*self.operands, *self.results):
            if not isinstance(value.type, TensorType):
                raise VerifyException(f"{self.name}: operands and results must be ranked tensors")
        try:
            self.check()
            shape = self.expected_shape()
        except ValueError as e:  # shape-rule failures (e.g. broadcasting)
            raise VerifyException(f"{self.name}: {e}") from None
        result = self.results[0]
        elem = self.expected_element_type()
        if element_of(result) != elem:
            raise VerifyException(
                f"{self.name}: result element type {element_of(result)} does not match "
                f"the expected {elem}"
            )
        if shape is not None:
            got = shape_of(result)
            if len(got) != len(shape) or any(
                e != DYNAMIC and e != g for e, g in zip(shape, got, strict=False)
            ):
                raise VerifyException(
                    f"{self.name}: result shape {_fmt(got)} does not match the shape rule "
                    f"{_fmt(shape)}"
                )

    def _fail(self, message: str) -> VerifyException:
        return VerifyException(f"{self.name}: {message}")


def _check_float(op: VxOp, value: SSAValue, what: str) -> None:
    if not _is_float(element_of(value)):
        raise op._fail(f"{what} must have a float element type, got {element_of(value)}")


def _check_same_element(op: VxOp, a: SSAValue, b: SSAValue, what: str) -> None:
    if element_of(a) != element_of(b):
        raise op._fail(f"{what} element type {element_of(b)} differs from {element_of(a)}")


def _check_axis(op: VxOp, axis: int, rank: int, what: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise op._fail(f"{what} {axis} is out of range for rank {rank}")


# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(VxOp):
    """A tensor constant: inline `dense<...>` when small, else a
    `dense_resource<handle>` whose bytes live in the weight store."""

    name = "vx.constant"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    value = prop_def(base(DenseIntOrFPElementsAttr) | base(DenseResourceAttr))
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(
        self,
        value: DenseIntOrFPElementsAttr | DenseResourceAttr,
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            properties={"value": value}, result_types=[value.type], attributes=attributes
        )

    def expected_element_type(self) -> Attribute:
        typ = self.value.type
        assert isinstance(typ, TensorType)
        return typ.element_type

    def expected_shape(self) -> Shape:
        return shape_of(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attrs = parser.parse_optional_attr_dict()
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr | DenseResourceAttr):
            parser.raise_error("vx.constant expects a dense or dense_resource attribute")
        return cls(value, attrs)

    def print(self, printer: Printer) -> None:
        if self.attributes:
            printer.print_op_attributes(self.attributes)
        printer.print_string(" ")
        printer.print_attribute(self.value)


# ---------------------------------------------------------------------------
# Convolutions and matrix products (epilogue hosts)
# ---------------------------------------------------------------------------

_OPERANDS_FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class _WindowOp(VxOp):
    """Shared checks of the strided-window attributes (conv, pool)."""

    def _check_window(
        self, spatial: int, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
    ) -> None:
        if len(strides) != spatial or len(dilations) != spatial or len(pads) != 2 * spatial:
            raise self._fail(
                f"expects {spatial} strides and dilations and {2 * spatial} pads for "
                f"{spatial} spatial dims, got {len(strides)}, {len(dilations)} and {len(pads)}"
            )
        if any(s < 1 for s in strides) or any(d < 1 for d in dilations):
            raise self._fail("strides and dilations must be >= 1")
        if any(p < 0 for p in pads):
            raise self._fail("pads must be >= 0")


@irdl_op_definition
class ConvOp(_WindowOp):
    """N-D convolution (1-D, 2-D, 3-D): input [N, C, *S], weight
    [M, C/group, *K], optional bias [M] -> [N, M, *S']."""

    name = "vx.conv"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    group = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(
        x: Shape,
        w: Shape,
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
    ) -> Shape:
        k = len(strides)
        spatial = tuple(
            _window_out(x[2 + i], w[2 + i], strides[i], pads[i], pads[k + i], dilations[i], False)
            for i in range(k)
        )
        return (x[0], w[0], *spatial)

    def check(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(x) < 3 or len(w) != len(x):
            raise self._fail(
                f"input and weight must have the same rank >= 3, got {len(x)} and {len(w)}"
            )
        _check_float(self, self.input, "input")
        _check_same_element(self, self.input, self.weight, "weight")
        self._check_window(len(x) - 2, _ints(self.strides), _ints(self.pads), _ints(self.dilations))
        group = self.group.value.data
        if group < 1:
            raise self._fail(f"group must be >= 1, got {group}")
        if not _dyn(x[1], w[1]) and x[1] != w[1] * group:
            raise self._fail(f"input has {x[1]} channels but weight expects {w[1]} x group {group}")
        if w[0] != DYNAMIC and w[0] % group:
            raise self._fail(f"{w[0]} output channels do not split into {group} groups")
        if self.bias is not None:
            _check_same_element(self, self.input, self.bias, "bias")
            if shape_of(self.bias) not in ((w[0],), (DYNAMIC,)):
                raise self._fail(f"bias must be [{w[0]}], got {_fmt(shape_of(self.bias))}")

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.input),
            shape_of(self.weight),
            _ints(self.strides),
            _ints(self.pads),
            _ints(self.dilations),
        )


@irdl_op_definition
class ConvTransposeOp(_WindowOp):
    """Transposed convolution: input [N, C, *S], weight [C, M/group, *K],
    optional bias [M] -> [N, M, *S'] with
    S' = stride * (S - 1) + output_padding + dilation * (K - 1) + 1 - pads."""

    name = "vx.conv_transpose"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    output_padding = prop_def(I64Array)
    group = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(
        x: Shape,
        w: Shape,
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
        output_padding: Sequence[int],
        group: int,
    ) -> Shape:
        k = len(strides)
        spatial = []
        for i in range(k):
            if _dyn(x[2 + i], w[2 + i]):
                spatial.append(DYNAMIC)
                continue
            spatial.append(
                strides[i] * (x[2 + i] - 1)
                + output_padding[i]
                + dilations[i] * (w[2 + i] - 1)
                + 1
                - pads[i]
                - pads[k + i]
            )
        m = DYNAMIC if w[1] == DYNAMIC else w[1] * group
        return (x[0], m, *spatial)

    def check(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(x) < 3 or len(w) != len(x):
            raise self._fail(
                f"input and weight must have the same rank >= 3, got {len(x)} and {len(w)}"
            )
        _check_float(self, self.input, "input")
        _check_same_element(self, self.input, self.weight, "weight")
        strides, dil = _ints(self.strides), _ints(self.dilations)
        self._check_window(len(x) - 2, strides, _ints(self.pads), dil)
        out_pad = _ints(self.output_padding)
        if len(out_pad) != len(x) - 2:
            raise self._fail(f"expects {len(x) - 2} output_padding values, got {len(out_pad)}")
        if any(not 0 <= p < max(s, d) for p, s, d in zip(out_pad, strides, dil, strict=True)):
            raise self._fail("output_padding must be smaller than the stride or the dilation")
        if not _dyn(x[1], w[0]) and x[1] != w[0]:
            raise self._fail(f"input has {x[1]} channels but weight expects {w[0]}")
        if self.group.value.data < 1:
            raise self._fail("group must be >= 1")
        if self.bias is not None:
            _check_same_element(self, self.input, self.bias, "bias")
            if len(shape_of(self.bias)) != 1:
                raise self._fail("bias must be 1-D")

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.input),
            shape_of(self.weight),
            _ints(self.strides),
            _ints(self.pads),
            _ints(self.dilations),
            _ints(self.output_padding),
            self.group.value.data,
        )


@irdl_op_definition
class MatMulOp(VxOp):
    """Batched matrix product, both operands of rank >= 2 (1-D ONNX operands
    are reshaped by the lowering); batch dims broadcast like numpy."""

    name = "vx.matmul"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(a: Shape, b: Shape) -> Shape:
        if not _dyn(a[-1], b[-2]) and a[-1] != b[-2]:
            raise ValueError(f"contracting dims differ: {_fmt(a)} x {_fmt(b)}")
        return (*broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])

    def check(self) -> None:
        if len(shape_of(self.lhs)) < 2 or len(shape_of(self.rhs)) < 2:
            raise self._fail("operands must have rank >= 2")
        _check_same_element(self, self.lhs, self.rhs, "rhs")

    def expected_shape(self) -> Shape:
        return self.infer_shape(shape_of(self.lhs), shape_of(self.rhs))


@irdl_op_definition
class GemmOp(VxOp):
    """alpha * op(A) @ op(B) + beta * C on 2-D operands; C (optional)
    broadcasts to the [M, N] result."""

    name = "vx.gemm"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    trans_a = prop_def(BoolAttr)
    trans_b = prop_def(BoolAttr)
    alpha = prop_def(F32Attr)
    beta = prop_def(F32Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(a: Shape, b: Shape, trans_a: bool, trans_b: bool) -> Shape:
        m, ka = (a[1], a[0]) if trans_a else (a[0], a[1])
        kb, n = (b[1], b[0]) if trans_b else (b[0], b[1])
        if not _dyn(ka, kb) and ka != kb:
            raise ValueError(f"contracting dims differ: {ka} vs {kb}")
        return (m, n)

    def check(self) -> None:
        if len(shape_of(self.a)) != 2 or len(shape_of(self.b)) != 2:
            raise self._fail("A and B must be 2-D")
        _check_same_element(self, self.a, self.b, "B")
        if self.c is not None:
            _check_same_element(self, self.a, self.c, "C")
            out = self.expected_shape()
            if not broadcasts_to(shape_of(self.c), out):
                raise self._fail(f"C {_fmt(shape_of(self.c))} does not broadcast to {_fmt(out)}")

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.a),
            shape_of(self.b),
            bool(self.trans_a.value.data),
            bool(self.trans_b.value.data),
        )


# ---------------------------------------------------------------------------
# Pointwise families
# ---------------------------------------------------------------------------


@irdl_op_definition
class UnaryOp(VxOp):
    """Element-wise unary family; the activation is data (`kind`), not a new op.
    Parameterized kinds carry `params` (see `UNARY_PARAMS`)."""

    name = "vx.unary"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = True
    HOSTS_EPILOGUE: ClassVar[bool] = False

    T: ClassVar = VarConstraint("T", base(TensorType))
    kind = prop_def(UnaryKindAttr)
    input = operand_def(T)
    output = result_def(T)
    params = opt_prop_def(F32Array)
    traits = traits_def(Pure())
    assembly_format = "$kind $input attr-dict `:` type($output)"

    def check(self) -> None:
        kind = self.kind.data
        want = len(UNARY_PARAMS.get(kind, ()))
        got = len(self.params) if self.params is not None else 0
        if got != want or (want == 0 and self.params is not None):
            names = ", ".join(UNARY_PARAMS.get(kind, ())) or "none"
            raise self._fail(f"kind '{kind}' takes {want} params ({names}), got {got}")
        elem = element_of(self.input)
        if kind in _FLOAT_UNARY and not _is_float(elem):
            raise self._fail(f"kind '{kind}' needs a float element type, got {elem}")
        if kind == UnaryKind.NOT and elem != i1:
            raise self._fail(f"kind 'not' needs i1, got {elem}")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class BinaryOp(VxOp):
    """Element-wise binary family with numpy broadcasting; comparisons give i1."""

    name = "vx.binary"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = True
    HOSTS_EPILOGUE: ClassVar[bool] = False

    kind = prop_def(BinaryKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    @staticmethod
    def infer_shape(kind: BinaryKind, a: Shape, b: Shape) -> Shape:
        if kind == BinaryKind.PRELU and not broadcasts_to(b, a):
            raise ValueError(f"slope {_fmt(b)} does not broadcast to {_fmt(a)}")
        return broadcast_shapes(a, b)

    def check(self) -> None:
        kind = self.kind.data
        a, b = element_of(self.lhs), element_of(self.rhs)
        if kind != BinaryKind.POW and a != b:  # ONNX Pow's exponent may differ
            raise self._fail(f"operand element types differ: {a} and {b}")
        if kind in LOGICAL and a != i1:
            raise self._fail(f"kind '{kind}' needs i1 operands, got {a}")
        if kind in (BinaryKind.SHIFT_LEFT, BinaryKind.SHIFT_RIGHT) and not (
            isinstance(a, IntegerType) and a.signedness.data == Signedness.UNSIGNED
        ):
            raise self._fail(f"kind '{kind}' needs unsigned integers, got {a}")
        if kind in (BinaryKind.PRELU, BinaryKind.POW, BinaryKind.FMOD) and not _is_float(a):
            if kind != BinaryKind.POW:
                raise self._fail(f"kind '{kind}' needs a float element type, got {a}")

    def expected_element_type(self) -> Attribute:
        if self.kind.data in COMPARISONS:
            return i1
        return element_of(self.lhs)

    def expected_shape(self) -> Shape:
        return self.infer_shape(self.kind.data, shape_of(self.lhs), shape_of(self.rhs))


@irdl_op_definition
class SelectOp(VxOp):
    """cond ? x : y with three-way numpy broadcasting (ONNX Where)."""

    name = "vx.select"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = True
    HOSTS_EPILOGUE: ClassVar[bool] = False

    cond = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def check(self) -> None:
        if element_of(self.cond) != i1:
            raise self._fail(f"condition must be i1, got {element_of(self.cond)}")
        _check_same_element(self, self.true_value, self.false_value, "false value")

    def expected_element_type(self) -> Attribute:
        return element_of(self.true_value)

    def expected_shape(self) -> Shape:
        return broadcast_shapes(
            shape_of(self.cond), shape_of(self.true_value), shape_of(self.false_value)
        )


@irdl_op_definition
class CastOp(VxOp):
    """Element type conversion; the target is the result's element type
    (float -> int truncates toward zero, -> i1 is `!= 0`, as ONNX Cast)."""

    name = "vx.cast"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = True
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def expected_element_type(self) -> Attribute:
        return element_of(self.output)

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


# ---------------------------------------------------------------------------
# Pooling, reductions, normalizations
# ---------------------------------------------------------------------------


@irdl_op_definition
class PoolOp(_WindowOp):
    """Max / average / Lp pooling over the spatial dims of [N, C, *S]. Global
    pools are full-extent kernels. `p` is present exactly for `lp`."""

    name = "vx.pool"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    kind = prop_def(PoolKindAttr)
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel = prop_def(I64Array)
    strides = prop_def(I64Array)
    pads = prop_def(I64Array)
    dilations = prop_def(I64Array)
    ceil_mode = prop_def(BoolAttr)
    count_include_pad = prop_def(BoolAttr)
    p = opt_prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(
        x: Shape,
        kernel: Sequence[int],
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
        ceil_mode: bool,
    ) -> Shape:
        k = len(kernel)
        spatial = tuple(
            _window_out(
                x[2 + i], kernel[i], strides[i], pads[i], pads[k + i], dilations[i], ceil_mode
            )
            for i in range(k)
        )
        return (x[0], x[1], *spatial)

    def check(self) -> None:
        x = shape_of(self.input)
        kernel = _ints(self.kernel)
        if len(x) < 3 or len(kernel) != len(x) - 2:
            raise self._fail(f"a rank-{len(x)} input needs {len(x) - 2} kernel dims (rank >= 3)")
        if any(k < 1 for k in kernel):
            raise self._fail("kernel dims must be >= 1")
        self._check_window(
            len(kernel), _ints(self.strides), _ints(self.pads), _ints(self.dilations)
        )
        kind = self.kind.data
        if kind != PoolKind.MAX:
            _check_float(self, self.input, "input")
        if (kind == PoolKind.LP) != (self.p is not None):
            raise self._fail("`p` is required for lp pooling and only for it")
        pads = _ints(self.pads)
        for i, k in enumerate(kernel):
            span = _ints(self.dilations)[i] * (k - 1) + 1
            if pads[i] >= span or pads[len(kernel) + i] >= span:
                raise self._fail("pads must be smaller than the (dilated) kernel")

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.input),
            _ints(self.kernel),
            _ints(self.strides),
            _ints(self.pads),
            _ints(self.dilations),
            bool(self.ceil_mode.value.data),
        )


@irdl_op_definition
class ReduceOp(VxOp):
    """Reduction over sorted, distinct, non-negative `axes` (never empty: an
    ONNX no-op reduction is not lowered to this). argmax/argmin take one axis,
    give i64 and carry `select_last_index`."""

    name = "vx.reduce"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = True

    kind = prop_def(ReduceKindAttr)
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(I64Array)
    keepdims = prop_def(BoolAttr)
    select_last_index = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(x: Shape, axes: Sequence[int], keepdims: bool) -> Shape:
        if keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(x))
        return tuple(d for i, d in enumerate(x) if i not in axes)

    def check(self) -> None:
        axes = _ints(self.axes)
        rank = len(shape_of(self.input))
        if not axes or list(axes) != sorted(set(axes)) or not all(0 <= a < rank for a in axes):
            raise self._fail(
                f"axes {list(axes)} must be non-empty, sorted, distinct and in [0, {rank})"
            )
        is_arg = self.kind.data in ARG_REDUCTIONS
        if is_arg and len(axes) != 1:
            raise self._fail(f"'{self.kind.data}' reduces exactly one axis")
        if is_arg != (self.select_last_index is not None):
            raise self._fail("`select_last_index` is required for argmax/argmin and only for them")

    def expected_element_type(self) -> Attribute:
        return i64 if self.kind.data in ARG_REDUCTIONS else element_of(self.input)

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.input), _ints(self.axes), bool(self.keepdims.value.data)
        )


class _SoftmaxBase(VxOp):
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    zero_nan = opt_prop_def(BoolAttr)
    """NaN results are 0 (the exporters' guard Where(IsNaN(p), 0, p) folded
    in: a row of all -inf, or with NaN / +inf, comes out as zeros)."""
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        _check_float(self, self.input, "input")
        _check_axis(self, self.axis.value.data, len(shape_of(self.input)))

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """Softmax along one axis (ONNX opset-13 semantics)."""

    name = "vx.softmax"


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """Log-softmax along one axis (ONNX opset-13 semantics)."""

    name = "vx.log_softmax"


@irdl_op_definition
class AttentionOp(VxOp):
    """Scaled dot-product attention, softmax(scale * Q @ K^T + mask) @ V with
    the softmax over the last axis (what fuse-attention makes of
    MatMul -> Mul/Div -> Add -> Softmax -> MatMul). Q [..., Sq, D],
    K [..., Sk, D], V [..., Sk, Dv]; their batch dims broadcast; the optional
    additive mask broadcasts to [..., Sq, Sk]. Result [..., Sq, Dv]."""

    name = "vx.attention"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    output = result_def(TensorType)
    scale = prop_def(F32Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(q: Shape, k: Shape, v: Shape, mask: Shape | None = None) -> Shape:
        if not _dyn(q[-1], k[-1]) and q[-1] != k[-1]:
            raise ValueError(f"Q and K head dims differ: {_fmt(q)} vs {_fmt(k)}")
        if not _dyn(k[-2], v[-2]) and k[-2] != v[-2]:
            raise ValueError(f"K and V key counts differ: {_fmt(k)} vs {_fmt(v)}")
        batch = broadcast_shapes(q[:-2], k[:-2], v[:-2])
        if mask is not None and not broadcasts_to(mask, (*batch, q[-2], k[-2])):
            raise ValueError(
                f"mask {_fmt(mask)} does not broadcast to the scores {_fmt((*batch, q[-2], k[-2]))}"
            )
        return (*batch, q[-2], v[-1])

    def check(self) -> None:
        for what, value in (("Q", self.q), ("K", self.k), ("V", self.v)):
            if len(shape_of(value)) < 2:
                raise self._fail(f"{what} must have rank >= 2")
            _check_float(self, value, what)
            _check_same_element(self, self.q, value, what)
        if self.mask is not None:
            _check_same_element(self, self.q, self.mask, "mask")

    def expected_shape(self) -> Shape:
        mask = shape_of(self.mask) if self.mask is not None else None
        return self.infer_shape(shape_of(self.q), shape_of(self.k), shape_of(self.v), mask)


@irdl_op_definition
class LayerNormOp(VxOp):
    """Normalizes over dims [axis, rank); scale (and optional bias)
    broadcast to x.shape[axis:]."""

    name = "vx.layernorm"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    epsilon = prop_def(F32Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def check(self) -> None:
        _check_float(self, self.input, "input")
        x = shape_of(self.input)
        axis = self.axis.value.data
        _check_axis(self, axis, len(x))
        norm = x[axis:]
        for what, v in (("scale", self.scale), ("bias", self.bias)):
            if v is None:
                continue
            _check_same_element(self, self.input, v, what)
            s = shape_of(v)
            if not broadcasts_to(s, norm):
                raise self._fail(f"{what} {_fmt(s)} does not broadcast to {_fmt(norm)}")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class BatchNormOp(VxOp):
    """Inference batch normalization of [N, C, ...] with per-channel
    scale, bias, mean and variance (each [C])."""

    name = "vx.batchnorm"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    variance = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = prop_def(F32Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def check(self) -> None:
        _check_float(self, self.input, "input")
        x = shape_of(self.input)
        if len(x) < 2:
            raise self._fail("input must have rank >= 2")
        for what, v in (
            ("scale", self.scale),
            ("bias", self.bias),
            ("mean", self.mean),
            ("variance", self.variance),
        ):
            _check_same_element(self, self.input, v, what)
            if shape_of(v) not in ((x[1],), (DYNAMIC,)) and x[1] != DYNAMIC:
                raise self._fail(f"{what} must be [{x[1]}], got {_fmt(shape_of(v))}")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class LrnOp(VxOp):
    """Local response normalization across channels (ONNX LRN)."""

    name = "vx.lrn"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    size = prop_def(I64Attr)
    alpha = prop_def(F32Attr)
    beta = prop_def(F32Attr)
    bias = prop_def(F32Attr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        _check_float(self, self.input, "input")
        if len(shape_of(self.input)) < 3:
            raise self._fail("input must have rank >= 3")
        if self.size.value.data < 1:
            raise self._fail("size must be >= 1")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(VxOp):
    """Same elements, new shape (the result type); row-major, no copy."""

    name = "vx.reshape"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        a, b = shape_of(self.input), shape_of(self.output)
        if not _dyn(*a, *b) and math.prod(a) != math.prod(b):
            raise self._fail(
                f"cannot reshape {math.prod(a)} elements {_fmt(a)} into {math.prod(b)} {_fmt(b)}"
            )


@irdl_op_definition
class TransposeOp(VxOp):
    """Permutes dims: result dim i is input dim perm[i]."""

    name = "vx.transpose"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(I64Array)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(x: Shape, perm: Sequence[int]) -> Shape:
        return tuple(x[p] for p in perm)

    def check(self) -> None:
        perm = _ints(self.perm)
        if sorted(perm) != list(range(len(shape_of(self.input)))):
            raise self._fail(f"perm {list(perm)} is not a permutation of the input dims")

    def expected_shape(self) -> Shape:
        return self.infer_shape(shape_of(self.input), _ints(self.perm))


@irdl_op_definition
class ConcatOp(VxOp):
    """Joins its inputs along `axis`. Layout "any": a channel concat runs in
    NC4HW4 and a token concat flat, so assign-layouts follows the operands."""

    name = "vx.concat"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(shapes: Sequence[Shape], axis: int) -> Shape:
        first = shapes[0]
        out = list(first)
        for s in shapes[1:]:
            if len(s) != len(first):
                raise ValueError("inputs must have the same rank")
            for i, (a, b) in enumerate(zip(first, s, strict=True)):
                if i != axis and not _dyn(a, b) and a != b:
                    raise ValueError(
                        f"inputs {_fmt(first)} and {_fmt(s)} differ outside axis {axis}"
                    )
        dims = [s[axis] for s in shapes]
        out[axis] = DYNAMIC if _dyn(*dims) else sum(dims)
        return tuple(out)

    def check(self) -> None:
        if not self.inputs:
            raise self._fail("needs at least one input")
        for v in self.inputs[1:]:
            _check_same_element(self, self.inputs[0], v, "input")
        _check_axis(self, self.axis.value.data, len(shape_of(self.inputs[0])))

    def expected_shape(self) -> Shape:
        return self.infer_shape([shape_of(v) for v in self.inputs], self.axis.value.data)


@irdl_op_definition
class SliceOp(VxOp):
    """Strided slice with one (start, end, step) per dim, already clamped:
    step > 0: 0 <= start <= end <= dim; step < 0: -1 <= end <= start < dim
    (end -1 means "through index 0"). Extent: ceil((end - start) / step)."""

    name = "vx.slice"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(I64Array)
    ends = prop_def(I64Array)
    steps = prop_def(I64Array)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(
        x: Shape, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
    ) -> Shape:
        return tuple(-(-(e - s) // st) for s, e, st in zip(starts, ends, steps, strict=True))

    def check(self) -> None:
        x = shape_of(self.input)
        starts, ends, steps = _ints(self.starts), _ints(self.ends), _ints(self.steps)
        if not len(starts) == len(ends) == len(steps) == len(x):
            raise self._fail(f"needs one start, end and step per dim ({len(x)})")
        for i, (d, s, e, st) in enumerate(zip(x, starts, ends, steps, strict=True)):
            if st == 0:
                raise self._fail(f"step of dim {i} is 0")
            hi = d if d != DYNAMIC else max(s, e, 0) + 1
            ok = 0 <= s <= e <= hi if st > 0 else -1 <= e <= s < hi
            if not ok:
                raise self._fail(
                    f"dim {i}: start {s}, end {e}, step {st} are not normalized for extent "
                    f"{'?' if d == DYNAMIC else d}"
                )

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.input), _ints(self.starts), _ints(self.ends), _ints(self.steps)
        )


@irdl_op_definition
class GatherOp(VxOp):
    """Takes entries of `data` along `axis` at integer `indices` (negative
    indices count from the end, as ONNX Gather)."""

    name = "vx.gather"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(data: Shape, indices: Shape, axis: int) -> Shape:
        return (*data[:axis], *indices, *data[axis + 1 :])

    def check(self) -> None:
        _check_axis(self, self.axis.value.data, len(shape_of(self.data)))
        if not _is_int(element_of(self.indices)):
            raise self._fail(f"indices must be integers, got {element_of(self.indices)}")

    def expected_shape(self) -> Shape:
        return self.infer_shape(shape_of(self.data), shape_of(self.indices), self.axis.value.data)


# -- indexing and float tests (ONNX GatherND, GatherElements, ScatterElements,
# IsNaN/IsInf): vknn/kernels/indexing.py, oracle/vx_indexing.py.

FLOAT_TESTS = ("nan", "inf", "pos_inf", "neg_inf")
"""`vx.float_test` kinds: IsNaN, IsInf, IsInf(detect_negative=0), IsInf(detect_positive=0)."""
SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")


@irdl_op_definition
class FloatTestOp(VxOp):
    """i1 per element: whether x is NaN / +-inf / +inf / -inf (`test`)."""

    name = "vx.float_test"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    test = prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = "$test $input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        _check_float(self, self.input, "input")
        if self.test.data not in FLOAT_TESTS:
            raise self._fail(f"test '{self.test.data}' is not one of {', '.join(FLOAT_TESTS)}")

    def expected_element_type(self) -> Attribute:
        return i1

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class GatherNDOp(VxOp):
    """ONNX GatherND: each row of the last axis of `indices` (k entries)
    addresses data[b..., i0, ..., ik-1, :] after `batch_dims` shared leading
    dims; negative entries count from the end of their axis."""

    name = "vx.gather_nd"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    batch_dims = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    @staticmethod
    def infer_shape(data: Shape, indices: Shape, batch_dims: int) -> Shape:
        if not indices:
            raise ValueError("indices must have rank >= 1")
        k = indices[-1]
        if k != DYNAMIC and not 1 <= k <= len(data) - batch_dims:
            raise ValueError(f"index rows of {k} entries do not fit data {_fmt(data)}")
        if data[:batch_dims] != indices[:batch_dims]:
            raise ValueError(f"batch dims of {_fmt(data)} and {_fmt(indices)} differ")
        return (*indices[:-1], *data[batch_dims + k :])

    def check(self) -> None:
        b = self.batch_dims.value.data
        if not 0 <= b < len(shape_of(self.indices)):
            raise self._fail(f"batch_dims {b} is out of range")
        if not _is_int(element_of(self.indices)):
            raise self._fail(f"indices must be integers, got {element_of(self.indices)}")

    def expected_shape(self) -> Shape:
        return self.infer_shape(
            shape_of(self.data), shape_of(self.indices), self.batch_dims.value.data
        )


@irdl_op_definition
class GatherElementsOp(VxOp):
    """ONNX GatherElements: out[i] = data[i with its `axis` coordinate
    replaced by indices[i]]; `indices` may be smaller than `data` on every
    axis; negative indices count from the end."""

    name = "vx.gather_elements"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def check(self) -> None:
        data, idx = shape_of(self.data), shape_of(self.indices)
        _check_axis(self, self.axis.value.data, len(data))
        if len(idx) != len(data):
            raise self._fail(f"indices {_fmt(idx)} and data {_fmt(data)} differ in rank")
        if not _is_int(element_of(self.indices)):
            raise self._fail(f"indices must be integers, got {element_of(self.indices)}")

    def expected_shape(self) -> Shape:
        return shape_of(self.indices)


@irdl_op_definition
class CumSumOp(VxOp):
    """ONNX CumSum along a constant, normalized `axis`: out[.., k, ..] = sum
    of input[.., j, ..] for j <= k (j < k when `exclusive`; j >= k / j > k
    when `reverse`)."""

    name = "vx.cum_sum"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    exclusive = prop_def(I64Attr)
    reverse = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        _check_axis(self, self.axis.value.data, len(shape_of(self.input)))
        for what in ("exclusive", "reverse"):
            if getattr(self, what).value.data not in (0, 1):
                raise self._fail(f"{what} must be 0 or 1")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class ScatterElementsOp(VxOp):
    """ONNX ScatterElements: a copy of `data` where each updates[i] goes to
    the position of i with its `axis` coordinate replaced by indices[i]
    (combined by `reduction`: none replaces)."""

    name = "vx.scatter_elements"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    reduction = prop_def(StringAttr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def check(self) -> None:
        data, idx = shape_of(self.data), shape_of(self.indices)
        _check_axis(self, self.axis.value.data, len(data))
        if len(idx) != len(data) or shape_of(self.updates) != idx:
            raise self._fail(
                f"indices {_fmt(idx)}, updates {_fmt(shape_of(self.updates))} and data "
                f"{_fmt(data)} must have one rank, indices and updates one shape"
            )
        _check_same_element(self, self.data, self.updates, "updates")
        if self.reduction.data not in SCATTER_REDUCTIONS:
            raise self._fail(f"reduction '{self.reduction.data}' is not one of "
                             f"{', '.join(SCATTER_REDUCTIONS)}")  # fmt: skip

    def expected_shape(self) -> Shape:
        return shape_of(self.data)


@irdl_op_definition
class ExpandOp(VxOp):
    """Broadcasts the input to the result shape (numpy rules)."""

    name = "vx.expand"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "flat"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def check(self) -> None:
        x, out = shape_of(self.input), shape_of(self.output)
        if not broadcasts_to(x, out):
            raise self._fail(f"{_fmt(x)} does not broadcast to {_fmt(out)}")


@irdl_op_definition
class PadOp(VxOp):
    """Pads every dim by `pads` = [begin_0.., end_0..] (negative crops);
    `value` is present exactly for constant mode."""

    name = "vx.pad"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    mode = prop_def(PadModeAttr)
    input = operand_def(TensorType)
    output = result_def(TensorType)
    pads = prop_def(I64Array)
    value = opt_prop_def(F64Attr)
    traits = traits_def(Pure())
    assembly_format = "$mode $input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(x: Shape, pads: Sequence[int]) -> Shape:
        r = len(x)
        return tuple(
            DYNAMIC if d == DYNAMIC else d + pads[i] + pads[r + i] for i, d in enumerate(x)
        )

    def check(self) -> None:
        if len(_ints(self.pads)) != 2 * len(shape_of(self.input)):
            raise self._fail(f"needs {2 * len(shape_of(self.input))} pads (begins, then ends)")
        if (self.mode.data == PadMode.CONSTANT) != (self.value is not None):
            raise self._fail("`value` is required for constant mode and only for it")

    def expected_shape(self) -> Shape:
        return self.infer_shape(shape_of(self.input), _ints(self.pads))


@irdl_op_definition
class ResizeOp(VxOp):
    """Resamples by per-dim `scales`; result dim = floor(dim * scale). The
    scales also drive the coordinate mapping (for an ONNX `sizes` input they
    are size_out / size_in). `cubic_coeff_a`, `exclude_outside` and
    `nearest_mode` are always present, whatever the mode."""

    name = "vx.resize"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "nc4hw4"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    mode = prop_def(ResizeModeAttr)
    input = operand_def(TensorType)
    output = result_def(TensorType)
    scales = prop_def(F32Array)
    coordinate_mode = prop_def(CoordinateModeAttr)
    nearest_mode = prop_def(NearestModeAttr)
    cubic_coeff_a = prop_def(F32Attr)
    exclude_outside = prop_def(BoolAttr)
    traits = traits_def(Pure())
    assembly_format = "$mode $input attr-dict `:` type($input) `->` type($output)"

    @staticmethod
    def infer_shape(x: Shape, scales: Sequence[float]) -> Shape:
        # The small epsilon absorbs f32 rounding of scales derived from sizes
        # (3 * f32(7/3) is 6.9999998, which must still give 7).
        return tuple(
            DYNAMIC if d == DYNAMIC else math.floor(d * s + 1e-4)
            for d, s in zip(x, scales, strict=True)
        )

    def check(self) -> None:
        scales = _floats(self.scales)
        if len(scales) != len(shape_of(self.input)):
            raise self._fail(f"needs one scale per dim ({len(shape_of(self.input))})")
        if any(s <= 0 for s in scales):
            raise self._fail("scales must be > 0")
        if self.mode.data != ResizeMode.NEAREST:
            _check_float(self, self.input, "input")

    def expected_shape(self) -> Shape:
        return self.infer_shape(shape_of(self.input), _floats(self.scales))


# ---------------------------------------------------------------------------
# Quantization
# ---------------------------------------------------------------------------


class _QuantBase(VxOp):
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = prop_def(I64Attr)
    traits = traits_def(Pure())
    assembly_format = _OPERANDS_FORMAT

    def _check_params(self) -> None:
        x = shape_of(self.input)
        axis = self.axis.value.data
        if x:
            _check_axis(self, axis, len(x))
        elif axis != 0:
            raise self._fail("axis of a scalar input must be 0")
        if not _is_float(element_of(self.scale)):
            raise self._fail("scale must be float")
        for what, v in (("scale", self.scale), ("zero point", self.zero_point)):
            if v is None:
                continue
            s = shape_of(v)
            if len(s) > 1 or (len(s) == 1 and x and s[0] not in (1, x[axis], DYNAMIC)):
                raise self._fail(
                    f"{what} must be a scalar or [{x[axis] if x else 1}], got {_fmt(s)}"
                )

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


@irdl_op_definition
class QuantizeOp(_QuantBase):
    """saturate(round_half_even(x / scale) + zero_point) into the result's
    integer type; per-tensor (scalar scale) or per-axis."""

    name = "vx.quantize"

    def check(self) -> None:
        self._check_params()
        _check_float(self, self.input, "input")
        if not _is_int(element_of(self.output)):
            raise self._fail("result must be an integer tensor")

    def expected_element_type(self) -> Attribute:
        if self.zero_point is not None:
            return element_of(self.zero_point)
        return element_of(self.output)


@irdl_op_definition
class DequantizeOp(_QuantBase):
    """(x - zero_point) * scale, in the scale's float type."""

    name = "vx.dequantize"

    def check(self) -> None:
        self._check_params()
        if not _is_int(element_of(self.input)):
            raise self._fail("input must be an integer tensor")
        if self.zero_point is not None:
            _check_same_element(self, self.input, self.zero_point, "zero point")

    def expected_element_type(self) -> Attribute:
        return element_of(self.scale)


# ---------------------------------------------------------------------------
# Fused pointwise regions and layouts
# ---------------------------------------------------------------------------

_SCALAR_DIALECTS = ("arith.", "math.")


@irdl_op_definition
class FusedPointwiseOp(VxOp):
    """One per-element kernel: the body computes each result element from the
    broadcast input elements. The single block takes one scalar argument per
    input (its element type) and holds only scalar `arith`/`math` ops ending
    in `vx.yield` of one scalar per result. Results share the broadcast shape."""

    name = "vx.fused_pointwise"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = True
    HOSTS_EPILOGUE: ClassVar[bool] = False

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure())
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"

    def check(self) -> None:
        if not self.outputs:
            raise self._fail("needs at least one result")
        block = self.body.block
        args = block.args
        if len(args) != len(self.inputs):
            raise self._fail(f"body takes {len(args)} arguments for {len(self.inputs)} inputs")
        for i, (arg, v) in enumerate(zip(args, self.inputs, strict=True)):
            if arg.type != element_of(v):
                raise self._fail(
                    f"body argument {i} is {arg.type}, input {i} has elements {element_of(v)}"
                )
        for op in block.ops:
            if op is block.last_op:
                break
            if not op.name.startswith(_SCALAR_DIALECTS) or op.regions:
                raise self._fail(f"body may only hold scalar arith/math ops, found {op.name}")
            for value in (*op.operands, *op.results):
                if isinstance(value.type, TensorType):
                    raise self._fail(f"body op {op.name} is not scalar")
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise self._fail("body must end in vx.yield")
        if len(term.values) != len(self.outputs):
            raise self._fail(
                f"vx.yield gives {len(term.values)} values for {len(self.outputs)} results"
            )
        # Result 0 is checked against the broadcast shape by the base verifier.
        for i, (y, r) in enumerate(zip(term.values, self.outputs, strict=True)):
            if y.type != element_of(r):
                raise self._fail(f"result {i} has elements {element_of(r)}, yielded {y.type}")
            if i and shape_of(r) != shape_of(self.outputs[0]):
                raise self._fail("all results must have the same shape")

    def expected_element_type(self) -> Attribute:
        return element_of(self.outputs[0])

    def expected_shape(self) -> Shape:
        return broadcast_shapes(*(shape_of(v) for v in self.inputs))


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `vx.fused_pointwise` body with one scalar per result."""

    name = "vx.yield"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(FusedPointwiseOp), Pure())
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class ConvertLayoutOp(VxOp):
    """Repacks a tensor between the Vulkan backend's layouts; the logical
    (NCHW) type is unchanged. Inserted by assign-layouts only."""

    name = "vx.convert_layout"
    LAYOUT_CLASS: ClassVar[LayoutClass] = "any"
    POINTWISE: ClassVar[bool] = False
    HOSTS_EPILOGUE: ClassVar[bool] = False

    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    src = prop_def(LayoutAttr, prop_name="from")
    dst = prop_def(LayoutAttr, prop_name="to")
    traits = traits_def(Pure())
    assembly_format = "$input `from` $from `to` $to attr-dict `:` type($output)"

    def check(self) -> None:
        if self.src == self.dst:
            raise self._fail(f"converts {self.src.data} to itself")

    def expected_shape(self) -> Shape:
        return shape_of(self.input)


GRAPH_OPS: tuple[type[VxOp], ...] = (
    ConstantOp,
    ConvOp,
    ConvTransposeOp,
    MatMulOp,
    GemmOp,
    UnaryOp,
    BinaryOp,
    SelectOp,
    CastOp,
    PoolOp,
    ReduceOp,
    SoftmaxOp,
    LogSoftmaxOp,
    AttentionOp,
    LayerNormOp,
    BatchNormOp,
    LrnOp,
    ReshapeOp,
    TransposeOp,
    ConcatOp,
    SliceOp,
    GatherOp,
    FloatTestOp,
    GatherNDOp,
    GatherElementsOp,
    CumSumOp,
    ScatterElementsOp,
    ExpandOp,
    PadOp,
    ResizeOp,
    QuantizeOp,
    DequantizeOp,
    FusedPointwiseOp,
    ConvertLayoutOp,
)
"""Every `vx` op that is a node of the graph (all but the `vx.yield` terminator)."""

VX = Dialect(
    "vx",
    [*GRAPH_OPS, YieldOp],
    [
        UnaryKindAttr,
        BinaryKindAttr,
        PoolKindAttr,
        ReduceKindAttr,
        PadModeAttr,
        ResizeModeAttr,
        CoordinateModeAttr,
        NearestModeAttr,
        LayoutAttr,
    ],
)
