"""How each model dtype is stored on the Vulkan device, shared by the executor
(host <-> device conversion at segment boundaries) and the kernel gates.

Three storage classes:

- float32 / float16 tensors are stored in the executor's float storage type
  (fp32, or fp16 with `precision="low"`; with `"normal"` fp16 except the
  tensors `precision_rules.py` keeps in fp32);
- int64 tensors are stored as int64 (8 bytes, exact): kernels that move
  them treat an element as two 32-bit words (`uvec2`, no device feature),
  kernels that compute on them use 64-bit arithmetic and need shaderInt64
  (`KernelSpec.int64`; a target without it keeps those ops on the CPU);
- every other integer tensor and bool is stored as one int32 word per
  element: 8/16-bit integers widen losslessly, bool is 0/1.

uint32, uint64, float64 and bfloat16 have no device storage: gates refuse
them, so such steps stay on the CPU. One word per element (not packed
bytes) keeps every shader free of 8-bit storage features and sub-word
writes, at 4x the memory of bool and int8 tensors, which are small at
runtime (attention masks; the dequantize pass lowers QDQ models to float).

This module must not import `vulkan` or touch a device.
"""

from __future__ import annotations

import numpy as np

FLOAT_DTYPES = ("float32", "float16")
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "int64", "bool")
DEVICE_DTYPES = FLOAT_DTYPES + INT_DTYPES

WORD = 8
"""Bytes per element of any tensor in the worst case (int64 storage)."""


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def storage_dtype(dtype: str, float_storage: np.dtype) -> np.dtype:
    """The numpy dtype a tensor of model dtype `dtype` has in device memory."""
    if dtype in FLOAT_DTYPES:
        return float_storage
    return np.dtype(np.int64 if dtype == "int64" else np.int32)


def itemsize(dtype: str, float_storage: np.dtype | type = np.float32) -> int:
    """Bytes per element of a `dtype` tensor on the device."""
    return storage_dtype(dtype, np.dtype(float_storage)).itemsize


def elem_variant(dtype: str, variant: str) -> str:
    """The shader variant whose `elem` is this tensor's storage word: "fp16"
    (16-bit words) for float tensors of an fp16 executor, else "fp32" (an
    int64 tensor's shader is additionally built with `I64_WORDS`)."""
    return "fp16" if variant == "fp16" and dtype in FLOAT_DTYPES else "fp32"


def int_bits(dtype: str) -> tuple[int, bool]:
    """(bits, signed) of an integer model dtype as the device wraps it; bool
    is (1, False)."""
    if dtype == "bool":
        return 1, False
    info = np.iinfo(np.dtype(dtype))
    return info.bits, info.min < 0


def dtype_refusal(dtype: str) -> str | None:
    """Why a tensor of `dtype` cannot live on the device (None: it can)."""
    if dtype in DEVICE_DTYPES:
        return None
    return f"{dtype} tensors have no Vulkan storage (float32/float16, int8..int64, bool)"


def to_device(x: np.ndarray, dtype: str, float_storage: np.dtype, what: str) -> np.ndarray:
    """Host array -> the bytes the device holds (C-contiguous, storage dtype).
    With int32 storage, values outside int32 raise ValueError naming `what`."""
    if dtype in FLOAT_DTYPES:
        if float_storage == np.float16 and x.dtype != np.float16:
            # numpy rounds to nearest even; the clip keeps finite values finite,
            # +-inf stays (a -inf attention mask must stay -inf).
            y = np.clip(x, -65504.0, 65504.0)
            inf = np.isinf(x)
            return np.asarray(np.where(inf, x, y) if inf.any() else y).astype(np.float16)
        return np.ascontiguousarray(x, dtype=float_storage)
    if np.dtype(float_storage) == np.int64:
        return np.ascontiguousarray(x, dtype=np.int64)
    if x.dtype.itemsize > 4 or x.dtype == np.uint32:
        if x.size and (x.min() < -(1 << 31) or x.max() >= 1 << 31):
            raise ValueError(
                f"{what}: {x.dtype} values outside the int32 range cannot be stored on the "
                "Vulkan device as int32"
            )
    return np.ascontiguousarray(x, dtype=np.int32)


def from_device(raw: np.ndarray, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Device words (already viewed as the storage dtype) -> the model's dtype."""
    if dtype == "bool":
        return (raw != 0).reshape(shape)
    return raw.astype(dtype, copy=False).reshape(shape)
