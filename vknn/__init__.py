"""VKNN: an ONNX compiler (xDSL dialects and passes) and a Vulkan runtime."""

from vknn.errors import (
    InvalidArgument,
    ModelLoadError,
    ShapeInferenceError,
    Unsupported,
    VknnError,
)

__version__ = "0.1.0"

__all__ = [
    "InvalidArgument",
    "ModelLoadError",
    "ShapeInferenceError",
    "Unsupported",
    "VknnError",
    "__version__",
]
