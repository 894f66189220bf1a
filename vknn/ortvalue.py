"""`vknn.OrtValue`: onnxruntime's tensor handle, on the host ("cpu") or on a
Vulkan device ("vulkan", device_id as `vknn devices` numbers them).

A "vulkan" value holds a `runtime.executable.DeviceTensor`: bound as an
input it is copied on the device into the session's memory, and an output
bound to "vulkan" stays there, so the output of one session feeds the next
and a batch loop uploads its inputs once. `numpy()` reads it back.
`data_ptr()` (of a device value: an opaque handle, its VkBuffer) is what
`IOBinding.bind_input/bind_output` accept while the value is alive.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from vknn.errors import InvalidArgument

DEVICE_TYPES = ("cpu", "vulkan")
_TYPE_NAMES = {
    "float32": "float", "float16": "float16", "float64": "double", "bool": "bool",
    **{t: t for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
}  # fmt: skip
_LIVE: weakref.WeakValueDictionary[int, OrtValue] = weakref.WeakValueDictionary()


def tensor_type(dtype: np.dtype) -> str:
    """onnxruntime's type string, e.g. "tensor(float)"."""
    return f"tensor({_TYPE_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)})"


def vulkan_device(device_id: int | str | None) -> Any:
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device(device_id)
    if device is None:
        raise InvalidArgument(f"an OrtValue on 'vulkan' needs a Vulkan device ({why})")
    return device


def np_dtype(element_type: Any) -> np.dtype:
    """A numpy dtype from one, or from an ONNX TensorProto element type (int)."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        from onnx.helper import tensor_dtype_to_np_dtype

        return np.dtype(tensor_dtype_to_np_dtype(element_type))
    return np.dtype(element_type)


def check_device_type(device_type: str) -> str:
    kind = str(device_type).lower()
    if kind not in DEVICE_TYPES:
        raise InvalidArgument(
            f"device type {device_type!r}: VKNN has {list(DEVICE_TYPES)} "
            "(onnxruntime's 'cuda' is 'vulkan' here)"
        )
    return kind


class OrtValue:
    def __init__(self, value: Any, device_id: int = 0) -> None:
        """`value`: a numpy array (host) or a DeviceTensor (device)."""
        self._value = value
        self._device_id = device_id
        _LIVE[self.data_ptr()] = self

    # -- construction (onnxruntime's static methods) ---------------------------

    @staticmethod
    def ortvalue_from_numpy(arr: Any, device_type: str = "cpu", device_id: int = 0) -> OrtValue:
        arr = np.asarray(arr)
        if check_device_type(device_type) == "cpu":
            return OrtValue(arr, device_id)
        from vknn.runtime.executable import DeviceTensor

        t = DeviceTensor.empty(vulkan_device(device_id), arr.shape, arr.dtype)
        t.write(arr, "ortvalue_from_numpy")
        return OrtValue(t, device_id)

    @staticmethod
    def ortvalue_from_shape_and_type(
        shape: Any, element_type: Any, device_type: str = "cpu", device_id: int = 0
    ) -> OrtValue:
        dtype = np_dtype(element_type)
        if check_device_type(device_type) == "cpu":
            return OrtValue(np.zeros(tuple(shape), dtype), device_id)
        from vknn.runtime.executable import DeviceTensor

        return OrtValue(DeviceTensor.empty(vulkan_device(device_id), shape, dtype), device_id)

    # -- inspection ------------------------------------------------------------

    @property
    def on_device(self) -> bool:
        return not isinstance(self._value, np.ndarray)

    def device_name(self) -> str:
        return "vulkan" if self.on_device else "cpu"

    def shape(self) -> list[int]:
        return list(self._value.shape)

    def data_type(self) -> str:
        return tensor_type(self._value.dtype)

    def element_type(self) -> int:
        from onnx.helper import np_dtype_to_tensor_dtype

        return int(np_dtype_to_tensor_dtype(np.dtype(self._value.dtype)))

    def is_tensor(self) -> bool:
        return True

    def has_value(self) -> bool:
        return True

    def tensor_size_in_bytes(self) -> int:
        n = int(np.prod(self._value.shape, dtype=np.int64))
        return n * np.dtype(self._value.dtype).itemsize

    def data_ptr(self) -> int:
        if not self.on_device:
            return int(self._value.ctypes.data)
        from vknn.runtime.vulkan.device import ffi

        return int(ffi.cast("uintptr_t", self._value.buffer.handle))

    def numpy(self) -> np.ndarray:
        return self._value.numpy() if self.on_device else self._value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def update_inplace(self, arr: np.ndarray) -> None:
        arr = np.asarray(arr)
        if self.on_device:
            self._value.write(arr.astype(self._value.dtype, copy=False), "update_inplace")
        elif arr.shape != self._value.shape:
            raise InvalidArgument(f"update_inplace: shape {list(arr.shape)}, expected "
                                  f"{list(self._value.shape)}")  # fmt: skip
        else:
            self._value[...] = arr

    def __repr__(self) -> str:
        return f"OrtValue({self.data_type()}{self.shape()} on {self.device_name()})"


def by_pointer(ptr: int) -> OrtValue:
    """The live OrtValue whose data_ptr() is `ptr`."""
    value = _LIVE.get(int(ptr))
    if value is None:
        raise InvalidArgument(
            f"buffer pointer {ptr:#x} is not the data_ptr() of a live OrtValue (VKNN binds "
            "memory of OrtValues: OrtValue.ortvalue_from_numpy(arr, 'vulkan'))"
        )
    return value
