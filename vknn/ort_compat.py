"""`vknn.InferenceSession`: onnxruntime's API over a VKNN session, so code
written for onnxruntime runs by changing the import.

Differences from a plain `Session`: inputs whose shapes differ from the
compiled bucket but fit the model's declared (symbolic) dims get a new plan
bucket on the fly, as onnxruntime accepts any such shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto

from vknn.config import Config
from vknn.errors import InvalidArgument
from vknn.session import Session, TensorInfo

PROVIDERS = {"VulkanExecutionProvider": "vulkan", "CPUExecutionProvider": "cpu"}

_TYPE_NAMES = {
    "float32": "tensor(float)",
    "float16": "tensor(float16)",
    "float64": "tensor(double)",
    "int8": "tensor(int8)",
    "int16": "tensor(int16)",
    "int32": "tensor(int32)",
    "int64": "tensor(int64)",
    "uint8": "tensor(uint8)",
    "uint16": "tensor(uint16)",
    "uint32": "tensor(uint32)",
    "uint64": "tensor(uint64)",
    "bool": "tensor(bool)",
    "bfloat16": "tensor(bfloat16)",
}


@dataclass(frozen=True)
class NodeArg:
    """onnxruntime's NodeArg: `name`, `shape` (ints, symbolic names or None), `type`."""

    name: str
    shape: list[int | str | None]
    type: str


def _node_arg(info: TensorInfo) -> NodeArg:
    shape = list(info.dims) if info.dims is not None else []
    return NodeArg(info.name, shape, _TYPE_NAMES.get(info.dtype.name, f"tensor({info.dtype.name})"))


def backends_from_providers(providers: Sequence[Any] | None) -> tuple[str, ...]:
    if not providers:
        return ("vulkan", "cpu")
    names = [p[0] if isinstance(p, tuple) else p for p in providers]
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown:
        raise InvalidArgument(
            f"unknown execution provider(s) {unknown}; available: {list(PROVIDERS)}"
        )
    return tuple(dict.fromkeys(PROVIDERS[n] for n in names))


class InferenceSession:
    def __init__(
        self,
        path_or_bytes: str | Path | bytes | ModelProto,
        sess_options: Any = None,
        providers: Sequence[Any] | None = None,
        provider_options: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ):
        self._providers = list(providers) if providers else list(PROVIDERS)
        self._session = Session(path_or_bytes, Config(backends=backends_from_providers(providers)))

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(i) for i in self._session.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(o) for o in self._session.outputs]

    def get_providers(self) -> list[str]:
        return [p[0] if isinstance(p, tuple) else p for p in self._providers]

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: dict[str, np.ndarray],
        run_options: Any = None,
    ) -> list[np.ndarray]:
        sess = self._session
        feeds = sess._validate(input_feed)
        names = list(sess.bucket_inputs)
        key = tuple(tuple(feeds[n].shape) for n in names)
        if key not in sess._buckets:
            sess.prepare_shapes({n: feeds[n].shape for n in names})
        out = sess.run(feeds, list(output_names) if output_names else None)
        return list(out.values())
