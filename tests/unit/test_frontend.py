"""The ONNX importer: faithful import, safe loading, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import DenseResourceAttr

from vknn.dialects.onnx import CustomOp
from vknn.errors import ModelLoadError, Unsupported
from vknn.frontend import import_model, import_onnx_bytes, import_onnx_file
from vknn.ir.constants import to_numpy


def _linear_model(weight: np.ndarray, opset: int = 17) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", weight.shape[0]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [x], [y], [numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _save_external(model: onnx.ModelProto, folder: Path, location: str) -> Path:
    path = folder / "model.onnx"
    onnx.save_model(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )
    return path


def _set_location(path: Path, location: str) -> None:
    model = onnx.load(path, load_external_data=False)
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    onnx.save(model, path)


def test_weights_are_resources_and_read_lazily(tmp_path: Path) -> None:
    w = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    path = _save_external(_linear_model(w), tmp_path, "weights.bin")
    module = import_onnx_file(path)
    const = next(op for op in module.walk() if op.name == "onnx.Constant")
    value = const.attributes["value"]
    assert isinstance(value, DenseResourceAttr)
    np.testing.assert_array_equal(to_numpy(value), w)
    assert "dialect_resources" not in str(module)


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("../outside.bin", "escapes the model's folder"),
        ("/etc/passwd", "is an absolute path"),
        ("missing.bin", "does not exist"),
    ],
)
def test_external_data_outside_the_folder_is_refused(
    tmp_path: Path, location: str, message: str
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    w = np.ones((8, 4), dtype=np.float32)
    path = _save_external(_linear_model(w), folder, "weights.bin")
    (tmp_path / "outside.bin").write_bytes((folder / "weights.bin").read_bytes())
    _set_location(path, location)
    with pytest.raises(ModelLoadError, match=message) as err:
        import_onnx_file(path)
    assert "\n" not in str(err.value)


def test_external_data_symlink_out_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    path = _save_external(_linear_model(np.ones((8, 4), np.float32)), folder, "weights.bin")
    real = tmp_path / "elsewhere.bin"
    os.replace(folder / "weights.bin", real)
    os.symlink(real, folder / "weights.bin")
    with pytest.raises(ModelLoadError, match="escapes the model's folder"):
        import_onnx_file(path)


def test_truncated_external_data(tmp_path: Path) -> None:
    path = _save_external(_linear_model(np.ones((64, 64), np.float32)), tmp_path, "w.bin")
    data = (tmp_path / "w.bin").read_bytes()
    (tmp_path / "w.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match="truncated"):
        import_onnx_file(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\x08\x07garbage\xff\xff\xff", "not a valid ONNX model"),
        (b"hello world, I am text", "not a valid ONNX model"),
    ],
)
def test_bad_bytes(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(ModelLoadError, match=message) as err:
        import_onnx_file(path)
    assert str(path) in str(err.value)


def test_truncated_light_model(tmp_path: Path, light_dir: Path) -> None:
    data = (light_dir / "light_resnet50.onnx").read_bytes()
    for cut in (10, len(data) // 3, len(data) - 7):
        with pytest.raises(ModelLoadError):
            import_onnx_bytes(data[:cut], "resnet50-cut.onnx")


def test_unknown_operator_imports_as_custom() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("FancyOp", ["x"], ["y"], name="fancy", domain="com.example", alpha=0.5)
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    )
    module = import_model(model)
    module.verify()
    custom = [op for op in module.walk() if isinstance(op, CustomOp)]
    assert len(custom) == 1
    assert custom[0].op_type.data == "FancyOp" and custom[0].node_name == "fancy"
    assert custom[0].domain.data == "com.example"


def test_subgraph_captures_outer_values() -> None:
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    then_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])],
    )
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)
    model = helper.make_model(
        helper.make_graph([node], "g", [cond, x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    module = import_model(model)
    module.verify()
    if_op = next(op for op in module.walk() if op.name == "onnx.If")
    assert len(if_op.operands) == 2  # the condition, then the captured `x`
    assert "onnx.graph" in str(if_op)


def test_unsupported_input_type_is_named() -> None:
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [])
    node = helper.make_node("SequenceLength", ["s"], ["y"])
    model = helper.make_model(
        helper.make_graph([node], "g", [seq], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    with pytest.raises(Unsupported, match="input 's'"):
        import_model(model)


def test_old_opset_is_refused() -> None:
    model = _linear_model(np.ones((2, 2), np.float32), opset=6)
    with pytest.raises(ModelLoadError, match="opset 6 is older"):
        import_onnx_bytes(model.SerializeToString(), "old.onnx")
