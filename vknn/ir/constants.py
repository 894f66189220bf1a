"""Constant attributes <-> numpy arrays.

Small constants stay inline as `dense<...>` (readable in printed IR); larger
ones go to the weight store and appear as `dense_resource<handle>`.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

from vknn.errors import VknnError
from vknn.ir.types import element_from_numpy, numpy_dtype
from vknn.ir.weights import WEIGHTS

INLINE_LIMIT = 16
"""Constants with at most this many elements print inline."""

ConstantAttr = DenseIntOrFPElementsAttr | DenseResourceAttr

INLINE_DTYPES = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
}
"""dtypes xDSL's `dense<...>` can print; others (bfloat16, float8, int4) stay resources."""


def _builtin_blob(handle: str) -> bytes | None:
    """A blob given in the IR text's `{-# dialect_resources #-}` section."""
    iface = Builtin.get_interface(OpAsmDialectInterface)
    hex_blob = iface.lookup(handle) if iface else None
    if not hex_blob:
        return None
    raw = bytes.fromhex(hex_blob[2:])
    return raw[4:]  # MLIR blobs start with a 4-byte alignment word


def to_numpy(attr: Attribute) -> np.ndarray:
    """The value of a constant attribute as a numpy array of its own dtype."""
    if isinstance(attr, DenseResourceAttr):
        handle = attr.resource_handle.data
        typ = attr.type
        assert isinstance(typ, TensorType)
        shape = tuple(typ.get_shape())
        dtype = numpy_dtype(typ.element_type)
        array = WEIGHTS.get(handle)
        if array is None:
            blob = _builtin_blob(handle)
            if blob is None:
                raise VknnError(
                    f"dense_resource<{handle}> has no data: the weights of printed IR are "
                    "not part of the text (give them in a dialect_resources section)"
                )
            array = np.frombuffer(blob, dtype=dtype).reshape(shape)
        if array.shape != shape or array.dtype != dtype:
            raise VknnError(
                f"dense_resource<{handle}> holds {array.dtype}{list(array.shape)}, "
                f"but its type says {dtype}{list(shape)}"
            )
        return array
    if isinstance(attr, DenseIntOrFPElementsAttr):
        typ = attr.type
        shape = tuple(typ.get_shape())
        elem = typ.element_type
        dtype = numpy_dtype(elem)
        raw = attr.data.data
        if dtype == np.bool_:
            flat = np.frombuffer(raw, dtype=np.int8) != 0
        else:
            flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)
        n = int(np.prod(shape)) if shape else 1
        if flat.size == 1 and n != 1:
            return np.broadcast_to(flat.reshape(()), shape)
        return flat.reshape(shape)
    raise VknnError(f"not a constant tensor attribute: {attr}")


def from_numpy(array: np.ndarray, name: str = "cst") -> ConstantAttr:
    """A constant attribute for `array`: inline if small, else a stored resource."""
    array = np.asarray(array)
    elem = element_from_numpy(array.dtype)
    typ = TensorType(elem, array.shape)
    if (
        array.size <= INLINE_LIMIT
        and array.dtype.kind in "biuf"
        and array.dtype.itemsize >= 1
        and array.dtype.name in INLINE_DTYPES
    ):
        return dense_attr(array, typ)
    return DenseResourceAttr.from_params(WEIGHTS.add(name, array), typ)


def dense_attr(array: np.ndarray, typ: TensorType) -> DenseIntOrFPElementsAttr:
    if array.dtype == np.bool_:
        raw = np.where(array, -1, 0).astype(np.int8).tobytes()
    else:
        raw = np.asarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return DenseIntOrFPElementsAttr(typ, BytesAttr(raw))


def is_integer_tensor(attr: Attribute) -> bool:
    return isinstance(attr, TensorType) and isinstance(attr.element_type, IntegerType)
