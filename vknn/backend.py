"""`vknn.backend`: ONNX's `onnx.backend.base.Backend` over VKNN sessions, so
ONNX's own conformance suite (and any tool written against that interface)
can drive the engine.

Devices: "CPU" runs on the numpy oracle only; "VULKAN" (or "GPU") prefers the
Vulkan backend with automatic CPU fallback; "VULKAN_ONLY" refuses any model
that would put an op on the CPU (Config.allow_cpu_fallback=False), which is
how the conformance suite counts cases run entirely on the GPU.
"CPU_REFERENCE" is "CPU" with the opt-in Config.onnx_reference: `onnx.*` ops
with no kernel of our own run through onnx.reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from vknn.config import Config
from vknn.session import Session

_DEVICES = {
    "CPU": ("cpu",),
    "CPU_REFERENCE": ("cpu",),
    "VULKAN": ("vulkan", "cpu"),
    "GPU": ("vulkan", "cpu"),
    "VULKAN_ONLY": ("vulkan", "cpu"),
}


def _backends(device: str) -> tuple[str, ...]:
    key = device.split(":")[0].upper()
    if key not in _DEVICES:
        raise ValueError(f"vknn.backend: unknown device '{device}' (known: {', '.join(_DEVICES)})")
    return _DEVICES[key]


def _as_array(value: Any) -> Any:
    """ONNX test data may come as TensorProtos; the session takes numpy arrays."""
    if isinstance(value, onnx.TensorProto):
        from onnx import numpy_helper

        return numpy_helper.to_array(value)
    return value


class VknnBackendRep(BackendRep):
    def __init__(self, session: Session):
        self.session = session

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        sess = self.session
        if isinstance(inputs, dict):
            feeds = {k: _as_array(v) for k, v in inputs.items()}
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            names = [i.name for i in sess.inputs]
            feeds = {n: _as_array(v) for n, v in zip(names, inputs, strict=False)}
        feeds = sess._validate(feeds)
        names = list(sess.bucket_inputs)
        key = tuple(tuple(feeds[n].shape) for n in names)
        if key not in sess._buckets:  # another shape the declared dims allow: a new bucket
            sess.prepare_shapes({n: feeds[n].shape for n in names})
        outputs = sess.run(feeds)
        return tuple(outputs[o.name] for o in sess.outputs)


class VknnBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> VknnBackendRep:
        config = Config(
            backends=_backends(device),
            allow_cpu_fallback=device.split(":")[0].upper() != "VULKAN_ONLY",
            onnx_reference=device.split(":")[0].upper() == "CPU_REFERENCE",
        )
        return VknnBackendRep(Session(model, config))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray],
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, Any]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        from onnx import helper

        graph_inputs = [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype), np.shape(x)
            )
            for n, x in zip(node.input, inputs, strict=False)
        ]
        graph_outputs = [helper.make_empty_tensor_value_info(o) for o in node.output]
        model = helper.make_model(helper.make_graph([node], "node", graph_inputs, graph_outputs))
        return cls.run_model(model, list(inputs), device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.split(":")[0].upper() in _DEVICES


prepare = VknnBackend.prepare
run_model = VknnBackend.run_model
run_node = VknnBackend.run_node
supports_device = VknnBackend.supports_device
