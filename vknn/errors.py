"""Errors a user can act on: each says what was wrong and where.

Every error the engine raises on bad input derives from `VknnError`, so tools
can print it as one line instead of a traceback.
"""


class VknnError(Exception):
    """Base of every user-facing VKNN error."""


class ModelLoadError(VknnError):
    """A model file could not be read: missing, truncated, not ONNX, or unsafe."""


class ShapeInferenceError(VknnError):
    """A shape could not be made static (e.g. an undeclared dynamic axis)."""


class Unsupported(VknnError):
    """An operator, attribute or data type the engine does not handle."""


class InvalidArgument(VknnError):
    """A caller passed inputs that do not match the model (names, dtypes, shapes)."""
