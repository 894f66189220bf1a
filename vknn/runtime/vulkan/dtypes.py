"""How each model dtype is stored on the Vulkan device, shared by the executor
(host <-> device conversion at segment boundaries) and the kernel gates.

Two storage classes:

- float32 / float16 tensors are stored in the executor's float storage type
  (fp32, or fp16 with `precision="low"`; with `"normal"` fp16 except the
  tensors `precision_rules.py` keeps in fp32);
- every integer tensor and bool is stored as one int32 word per element.
  8/16-bit integers widen losslessly; bool is 0/1; int64 is *narrowed* to
  int32, which is exact only while values fit in [-2^31, 2^31): the executor
  checks constants at build time and inputs at `run` (a clear error, never a
  silent wrap), but a value computed on the device past that range wraps.
  Models put int64 on index and shape paths (gather indices, token ids),
  where values are small.

uint32, uint64, float64 and bfloat16 have no device storage: gates refuse
them, so such steps stay on the CPU. One word per element (not packed
bytes) keeps every shader free of 8-bit storage features and sub-word
writes, at 4x the memory of int8 tensors, which are rare at runtime (the
dequantize pass lowers QDQ models to float).

This module must not import `vulkan` or touch a device.
"""

from __future__ import annotations

import numpy as np

FLOAT_DTYPES = ("float32", "float16")
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "int64", "bool")
DEVICE_DTYPES = FLOAT_DTYPES + INT_DTYPES

WORD = 4
"""Bytes per element of any tensor in the worst case (fp32 or int32 storage)."""


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def storage_dtype(dtype: str, float_storage: np.dtype) -> np.dtype:
    """The numpy dtype a tensor of model dtype `dtype` has in device memory."""
    return float_storage if dtype in FLOAT_DTYPES else np.dtype(np.int32)


def elem_variant(dtype: str, variant: str) -> str:
    """The shader variant whose `elem` is this tensor's storage word: "fp16"
    (16-bit words) for float tensors of an fp16 executor, else "fp32"."""
    return "fp16" if variant == "fp16" and dtype in FLOAT_DTYPES else "fp32"


def int_bits(dtype: str) -> tuple[int, bool]:
    """(bits, signed) of an integer model dtype as the device wraps it; int64
    wraps at 32 bits (it is stored as int32), bool is (1, False)."""
    if dtype == "bool":
        return 1, False
    info = np.iinfo(np.dtype(dtype))
    return min(info.bits, 32), info.min < 0


def dtype_refusal(dtype: str) -> str | None:
    """Why a tensor of `dtype` cannot live on the device (None: it can)."""
    if dtype in DEVICE_DTYPES:
        return None
    return f"{dtype} tensors have no Vulkan storage (float32/float16, int8..int64 as int32, bool)"


def to_device(x: np.ndarray, dtype: str, float_storage: np.dtype, what: str) -> np.ndarray:
    """Host array -> the bytes the device holds (C-contiguous, storage dtype).
    int64 values outside int32 raise ValueError naming `what`."""
    if dtype in FLOAT_DTYPES:
        if float_storage == np.float16 and x.dtype != np.float16:
            # numpy rounds to nearest even; the clip keeps finite values finite.
            return np.clip(x, -65504.0, 65504.0).astype(np.float16)
        return np.ascontiguousarray(x, dtype=float_storage)
    if x.dtype.itemsize > 4 or x.dtype == np.uint32:
        if x.size and (x.min() < -(1 << 31) or x.max() >= 1 << 31):
            raise ValueError(
                f"{what}: {x.dtype} values outside the int32 range cannot be stored on the "
                "Vulkan device (int64 is stored as int32)"
            )
    return np.ascontiguousarray(x, dtype=np.int32)


def from_device(raw: np.ndarray, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Device words (already viewed as the storage dtype) -> the model's dtype."""
    if dtype == "bool":
        return (raw != 0).reshape(shape)
    return raw.astype(dtype, copy=False).reshape(shape)
