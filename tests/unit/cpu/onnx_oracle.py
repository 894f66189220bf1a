"""Shared by the tests of the CPU kernels of `onnx.*` ops: build a real ONNX
graph, run it on VKNN's CPU backend (default Config: no onnx.reference) and on
onnxruntime, and compare. Every node must run on our own kernels (`cpu`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import vknn

Node = tuple[str, list[str], list[str], dict[str, Any]]  # (op, inputs, outputs, attrs)


def _elem(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def build(
    nodes: Sequence[Node],
    feeds: dict[str, np.ndarray],
    outputs: Sequence[str],
    consts: dict[str, np.ndarray] | None = None,
    opset: int = 21,
    out_types: dict[str, tuple[Any, tuple[int, ...]]] | None = None,
) -> onnx.ModelProto:
    """`out_types` declares (dtype, shape) of outputs whose shape depends on
    run-time values (as exported models and ONNX's test models do)."""
    known = out_types or {}
    graph = helper.make_graph(
        [
            helper.make_node(op, ins, outs, name=f"n{i}_{op}", **attrs)
            for i, (op, ins, outs, attrs) in enumerate(nodes)
        ],
        "g",
        [helper.make_tensor_value_info(k, _elem(v.dtype), v.shape) for k, v in feeds.items()],
        [
            helper.make_tensor_value_info(o, _elem(known[o][0]), known[o][1])
            if o in known
            else helper.make_empty_tensor_value_info(o)
            for o in outputs
        ],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (consts or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5, atol: float = 1e-6
) -> dict[str, np.ndarray]:
    """VKNN's CPU backend agrees with onnxruntime on every output, same dtype
    and shape; every node ran on our kernels. Returns VKNN's outputs."""
    sess = vknn.Session(model, vknn.Config(backends=("cpu",)))
    got = sess.run(feeds)
    backends = sess.node_backends()
    off = {n: b for n, b in backends.items() if b != "cpu"}
    assert not off, f"nodes not on our CPU kernels: {off}"
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in ref.get_outputs()]
    for name, want in zip(names, ref.run(None, feeds), strict=True):
        have = got[name]
        assert have.dtype == want.dtype, (name, have.dtype, want.dtype)
        assert have.shape == want.shape, (name, have.shape, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(have, want, err_msg=name)
    return got


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)
