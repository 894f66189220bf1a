"""The small models onnxruntime's Python API tests load from its testdata
(mul_1, matmul_1, matmul_2, logicaland, identity, abs_free_dimensions),
rebuilt with onnx.helper so the adapted tests run against VKNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

X32 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
MUL_EXPECTED = np.array([[1.0, 4.0], [9.0, 16.0], [25.0, 36.0]], dtype=np.float32)


def _model(nodes, inputs, outputs, inits=(), **kw) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    g = helper.make_graph(nodes, kw.pop("graph_name", "g"), inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], **kw)
    m.ir_version = 8
    return m


def vi(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:  # type: ignore[type-arg]
    return helper.make_tensor_value_info(name, elem, shape)


W_MUL = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)


def mul_1() -> onnx.ModelProto:
    """Y = X * W, X float [3, 2], W = [[1, 2], [3, 4], [5, 6]] (as upstream's)."""
    return _model(
        [helper.make_node("Mul", ["X", "W"], ["Y"], name="mul0")],
        [vi("X", T.FLOAT, [3, 2])],
        [vi("Y", T.FLOAT, [3, 2])],
        [numpy_helper.from_array(W_MUL, "W")],
    )


def matmul(dims: list) -> onnx.ModelProto:  # type: ignore[type-arg]
    """Y = X @ [[1], [2]]: matmul_1 with dims [3, 2], matmul_2 with [None, 2]."""
    w = numpy_helper.from_array(np.array([[1.0], [2.0]], np.float32), "W")
    return _model(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])],
        [vi("X", T.FLOAT, dims)],
        [vi("Y", T.FLOAT, [dims[0], 1])],
        [w],
    )


def logicaland() -> onnx.ModelProto:
    return _model(
        [helper.make_node("And", ["input1:0", "input:0"], ["output:0"])],
        [vi("input1:0", T.BOOL, [2, 2]), vi("input:0", T.BOOL, [2, 2])],
        [vi("output:0", T.BOOL, [2, 2])],
    )


def identity(elem: int, shape: list) -> onnx.ModelProto:  # type: ignore[type-arg]
    return _model(
        [helper.make_node("Identity", ["X"], ["Y"])], [vi("X", elem, shape)], [vi("Y", elem, shape)]
    )


def abs_free_dimensions() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Abs", ["x"], ["y"])],
        [vi("x", T.FLOAT, ["Dim1", "Dim2", 5])],
        [vi("y", T.FLOAT, ["Dim1", "Dim2", 5])],
    )


def save(model: onnx.ModelProto, directory: Path, name: str) -> str:
    path = directory / name
    onnx.save(model, path)
    return str(path)
