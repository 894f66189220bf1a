"""VKNN: an ONNX compiler (xDSL dialects and passes) and a Vulkan runtime.

import vknn
sess = vknn.Session("model.onnx", vknn.Config(backends=("cpu",)))
outputs = sess.run({"x": x})

Importing `vknn` loads neither onnx nor xDSL: the session classes load on
first use, and a session on a compiled `.vxm` never needs the compiler.
"""

from typing import Any

from vknn.config import Config
from vknn.errors import (
    InvalidArgument,
    ModelLoadError,
    ShapeInferenceError,
    Unsupported,
    VknnError,
)

__version__ = "0.1.0"

_LAZY = {
    "Session": "vknn.session",
    "InferenceSession": "vknn.ort_compat",
    "SessionOptions": "vknn.ort_compat",
    "RunOptions": "vknn.ort_compat",
    "GraphOptimizationLevel": "vknn.ort_compat",
    "ExecutionMode": "vknn.ort_compat",
    "get_available_providers": "vknn.ort_compat",
    "get_all_providers": "vknn.ort_compat",
    "get_device": "vknn.ort_compat",
    "OrtValue": "vknn.ortvalue",
    "IOBinding": "vknn.iobinding",
    "list_devices": "vknn.devices",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vknn' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Config",
    "ExecutionMode",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "InvalidArgument",
    "ModelLoadError",
    "OrtValue",
    "RunOptions",
    "Session",
    "SessionOptions",
    "ShapeInferenceError",
    "Unsupported",
    "VknnError",
    "__version__",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "list_devices",
]
