"""VKNN: an ONNX compiler (xDSL dialects and passes) and a Vulkan runtime.

import vknn
sess = vknn.Session("model.onnx", vknn.Config(backends=("cpu",)))
outputs = sess.run({"x": x})
"""

from vknn.errors import (
    InvalidArgument,
    ModelLoadError,
    ShapeInferenceError,
    Unsupported,
    VknnError,
)
from vknn.config import Config
from vknn.ort_compat import InferenceSession
from vknn.session import Session

__version__ = "0.1.0"

__all__ = [
    "Config",
    "InferenceSession",
    "InvalidArgument",
    "ModelLoadError",
    "Session",
    "ShapeInferenceError",
    "Unsupported",
    "VknnError",
    "__version__",
]
