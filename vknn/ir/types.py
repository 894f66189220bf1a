"""Element types: ONNX data types <-> xDSL element types <-> numpy dtypes.

Signed integers are MLIR's signless `iN`, unsigned are `uiN`, bool is `i1`.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    UnrankedTensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute

from vknn.errors import Unsupported

_U = Signedness.UNSIGNED

ONNX_TO_ELEMENT: dict[int, Attribute] = {
    TensorProto.FLOAT: f32,
    TensorProto.FLOAT16: f16,
    TensorProto.BFLOAT16: bf16,
    TensorProto.DOUBLE: f64,
    TensorProto.BOOL: i1,
    TensorProto.INT8: IntegerType(8),
    TensorProto.INT16: IntegerType(16),
    TensorProto.INT32: IntegerType(32),
    TensorProto.INT64: IntegerType(64),
    TensorProto.UINT8: IntegerType(8, _U),
    TensorProto.UINT16: IntegerType(16, _U),
    TensorProto.UINT32: IntegerType(32, _U),
    TensorProto.UINT64: IntegerType(64, _U),
    # Narrow types: imported and run (through onnx.reference), never lowered to vx.
    TensorProto.FLOAT8E4M3FN: Float8E4M3FNType(),
    TensorProto.FLOAT8E4M3FNUZ: Float8E4M3FNUZType(),
    TensorProto.FLOAT8E5M2: Float8E5M2Type(),
    TensorProto.FLOAT8E5M2FNUZ: Float8E5M2FNUZType(),
    TensorProto.FLOAT8E8M0: Float8E8M0FNUType(),
    TensorProto.FLOAT4E2M1: Float4E2M1FNType(),
    TensorProto.INT4: IntegerType(4),
    TensorProto.UINT4: IntegerType(4, _U),
    TensorProto.INT2: IntegerType(2),
    TensorProto.UINT2: IntegerType(2, _U),
}

NARROW_ONNX_TYPES = frozenset(
    {
        TensorProto.FLOAT8E4M3FN,
        TensorProto.FLOAT8E4M3FNUZ,
        TensorProto.FLOAT8E5M2,
        TensorProto.FLOAT8E5M2FNUZ,
        TensorProto.FLOAT8E8M0,
        TensorProto.FLOAT4E2M1,
        TensorProto.INT4,
        TensorProto.UINT4,
        TensorProto.INT2,
        TensorProto.UINT2,
    }
)
"""Element types with no vx kernels: ops touching them stay `onnx.*`."""

ELEMENT_TO_ONNX: dict[Attribute, int] = {v: k for k, v in ONNX_TO_ELEMENT.items()}

# The `tensor(...)` spelling ONNX schemas use in their type constraints.
ONNX_TYPE_STR: dict[int, str] = {
    TensorProto.FLOAT: "float",
    TensorProto.FLOAT16: "float16",
    TensorProto.BFLOAT16: "bfloat16",
    TensorProto.DOUBLE: "double",
    TensorProto.BOOL: "bool",
    TensorProto.INT8: "int8",
    TensorProto.INT16: "int16",
    TensorProto.INT32: "int32",
    TensorProto.INT64: "int64",
    TensorProto.UINT8: "uint8",
    TensorProto.UINT16: "uint16",
    TensorProto.UINT32: "uint32",
    TensorProto.UINT64: "uint64",
    TensorProto.FLOAT8E4M3FN: "float8e4m3fn",
    TensorProto.FLOAT8E4M3FNUZ: "float8e4m3fnuz",
    TensorProto.FLOAT8E5M2: "float8e5m2",
    TensorProto.FLOAT8E5M2FNUZ: "float8e5m2fnuz",
    TensorProto.FLOAT8E8M0: "float8e8m0",
    TensorProto.FLOAT4E2M1: "float4e2m1",
    TensorProto.INT4: "int4",
    TensorProto.UINT4: "uint4",
    TensorProto.INT2: "int2",
    TensorProto.UINT2: "uint2",
}


def element_from_onnx(elem_type: int, where: str = "") -> Attribute:
    """The xDSL element type of an ONNX `TensorProto.DataType`."""
    try:
        return ONNX_TO_ELEMENT[elem_type]
    except KeyError:
        name = (
            TensorProto.DataType.Name(elem_type)
            if elem_type in TensorProto.DataType.values()
            else str(elem_type)
        )
        raise Unsupported(
            f"unsupported element type {name}" + (f" ({where})" if where else "")
        ) from None


def onnx_from_element(t: Attribute) -> int:
    try:
        return ELEMENT_TO_ONNX[t]
    except KeyError:
        raise Unsupported(f"element type {t} has no ONNX equivalent") from None


def is_narrow(t: Attribute) -> bool:
    """An element type only the onnx.reference path handles (float8, int4, ...)."""
    return ELEMENT_TO_ONNX.get(t) in NARROW_ONNX_TYPES


def numpy_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype that holds values of element type `t`."""
    code = ELEMENT_TO_ONNX.get(t)
    if code in NARROW_ONNX_TYPES:
        from onnx.helper import tensor_dtype_to_np_dtype

        return np.dtype(tensor_dtype_to_np_dtype(code))
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, BFloat16Type):
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return np.dtype(np.bool_)
        kind = "u" if t.signedness.data == _U else "i"
        return np.dtype(f"{kind}{width // 8}")
    raise Unsupported(f"element type {t} has no numpy equivalent")


def element_from_numpy(dtype: np.dtype) -> Attribute:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return i1
    if dtype.kind == "f":
        return {2: f16, 4: f32, 8: f64}[dtype.itemsize]
    if dtype.kind in "iu":
        sign = _U if dtype.kind == "u" else Signedness.SIGNLESS
        return IntegerType(dtype.itemsize * 8, sign)
    if dtype.name == "bfloat16":
        return bf16
    raise Unsupported(f"numpy dtype {dtype} has no element type")


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def static_shape(t: Attribute) -> tuple[int, ...] | None:
    """The shape of a ranked tensor type with no dynamic dim, else None."""
    if isinstance(t, TensorType):
        shape = t.get_shape()
        if all(d >= 0 for d in shape):
            return tuple(shape)
    return None


def is_unranked(t: Attribute) -> bool:
    return isinstance(t, UnrankedTensorType)
