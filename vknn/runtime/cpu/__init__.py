"""The CPU backend: numpy kernels on canonical NCHW tensors, one kernel family
per file, registered by op name. It is both the numeric oracle of the engine
and the per-op fallback. Importing this package registers every kernel."""

from vknn.runtime.cpu.registry import KERNELS, has_kernel, kernel_for, register

# Kernel families register themselves on import.
from vknn.runtime.cpu import conv  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import matmul  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import normalization  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import attention  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import pool  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import elementwise  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import reduce  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import shape_ops  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import resize  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import quant  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import vx_indexing  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import indexing  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import array_ops  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import cumulative  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import topk  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import einsum  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_math  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_tensor  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import losses  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_norm  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_reduce  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import attention_onnx  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import rotary  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import recurrent  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import grid_sample  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_basic  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import signal  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import image_ops  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import control_flow  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import stateful  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import quant_onnx  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import detection  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import resize_onnx  # noqa: E402,F401  isort: skip
from vknn.runtime.cpu import onnx_nn  # noqa: E402,F401  isort: skip

__all__ = ["KERNELS", "has_kernel", "kernel_for", "register"]
