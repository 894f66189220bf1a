"""The CPU backend: numpy kernels on canonical NCHW tensors, one kernel family
per file, registered by op name. It is both the numeric oracle of the engine
and the per-op fallback. Importing this package registers every kernel."""

from vknn.oracle.registry import KERNELS, has_kernel, kernel_for, register

# Kernel families register themselves on import.
from vknn.oracle import conv  # noqa: E402,F401  isort: skip
from vknn.oracle import matmul  # noqa: E402,F401  isort: skip
from vknn.oracle import normalization  # noqa: E402,F401  isort: skip
from vknn.oracle import attention  # noqa: E402,F401  isort: skip
from vknn.oracle import pool  # noqa: E402,F401  isort: skip
from vknn.oracle import elementwise  # noqa: E402,F401  isort: skip
from vknn.oracle import reduce  # noqa: E402,F401  isort: skip
from vknn.oracle import shape_ops  # noqa: E402,F401  isort: skip
from vknn.oracle import resize  # noqa: E402,F401  isort: skip
from vknn.oracle import quant  # noqa: E402,F401  isort: skip
from vknn.oracle import vx_indexing  # noqa: E402,F401  isort: skip
from vknn.oracle import indexing  # noqa: E402,F401  isort: skip
from vknn.oracle import array_ops  # noqa: E402,F401  isort: skip
from vknn.oracle import cumulative  # noqa: E402,F401  isort: skip
from vknn.oracle import topk  # noqa: E402,F401  isort: skip
from vknn.oracle import einsum  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_math  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_tensor  # noqa: E402,F401  isort: skip
from vknn.oracle import losses  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_norm  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_reduce  # noqa: E402,F401  isort: skip
from vknn.oracle import attention_onnx  # noqa: E402,F401  isort: skip
from vknn.oracle import rotary  # noqa: E402,F401  isort: skip
from vknn.oracle import recurrent  # noqa: E402,F401  isort: skip
from vknn.oracle import grid_sample  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_basic  # noqa: E402,F401  isort: skip
from vknn.oracle import signal  # noqa: E402,F401  isort: skip
from vknn.oracle import image_ops  # noqa: E402,F401  isort: skip
from vknn.oracle import control_flow  # noqa: E402,F401  isort: skip
from vknn.oracle import stateful  # noqa: E402,F401  isort: skip
from vknn.oracle import quant_onnx  # noqa: E402,F401  isort: skip
from vknn.oracle import detection  # noqa: E402,F401  isort: skip
from vknn.oracle import resize_onnx  # noqa: E402,F401  isort: skip
from vknn.oracle import onnx_nn  # noqa: E402,F401  isort: skip
from vknn.oracle import deform_conv  # noqa: E402,F401  isort: skip

__all__ = ["KERNELS", "has_kernel", "kernel_for", "register"]
