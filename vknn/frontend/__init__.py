"""ONNX -> `onnx` dialect. Loading (with path-checked external data) and import."""

from vknn.frontend.loader import load_model_bytes, load_model_file
from vknn.frontend.onnx_importer import (
    import_model,
    import_onnx_bytes,
    import_onnx_file,
)

__all__ = [
    "import_model",
    "import_onnx_bytes",
    "import_onnx_file",
    "load_model_bytes",
    "load_model_file",
]
