"""The public runtime API: Session input validation, reports, the
onnxruntime-style InferenceSession, the ONNX backend, and `vknn run`."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn import backend
from vknn.tools.cli import main as cli_main

CPU = vknn.Config(backends=("cpu",))


def _model(batch: int | str = 1) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_run_matches_numpy() -> None:
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    out = vknn.Session(_model(), CPU).run({"x": x})
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(out["y"], np.maximum(x @ w, 0), rtol=1e-6)


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({}, "missing input(s) 'x'; the model's inputs are: x"),
        ({"x": np.zeros((1, 4), np.float32), "z": np.zeros(1)}, "unknown input(s) 'z'"),
        ({"x": np.zeros((1, 4), np.float64)}, "input 'x': expected dtype float32, got float64"),
        ({"x": np.zeros((1, 5), np.float32)}, "input 'x': expected shape [1, 4], got [1, 5]"),
        ({"x": np.zeros((4,), np.float32)}, "input 'x': expected shape [1, 4], got [4]"),
        ({"x": [[0.0] * 4]}, "input 'x': expected a numpy array, got list"),
    ],
)
def test_bad_inputs_are_named(feeds: dict, message: str) -> None:
    sess = vknn.Session(_model(), CPU)
    with pytest.raises(vknn.InvalidArgument, match=re.escape(message)):
        sess.run(feeds)


def test_not_a_dict() -> None:
    with pytest.raises(vknn.InvalidArgument, match="dict of input name"):
        vknn.Session(_model(), CPU).run([np.zeros((1, 4), np.float32)])  # type: ignore[arg-type]


def test_dynamic_batch_needs_a_bucket() -> None:
    sess = vknn.Session(_model("N"), CPU)
    x2 = np.zeros((2, 4), np.float32)
    with pytest.raises(
        vknn.InvalidArgument, match=r"no plan for input shapes x=\[2, 4\]; available: x=\[1, 4\]"
    ):
        sess.run({"x": x2})
    sess.prepare_shapes({"x": (2, 4)})
    assert sess.run({"x": x2})["y"].shape == (2, 3)


def test_reports_name_nodes_and_reasons() -> None:
    sess = vknn.Session(_model(), CPU)
    assert sess.node_backends() == {"mm": "cpu", "relu": "cpu"}
    forced = vknn.Session(_model(), vknn.Config(disable_vk_ops="MatMul"))
    reasons = forced.fallback_reasons()
    assert "disabled by Config.disable_vk_ops" in reasons["mm"]


def test_no_fallback_is_an_error_naming_ops() -> None:
    cfg = vknn.Config(disable_vk_ops="MatMul", allow_cpu_fallback=False)
    with pytest.raises(vknn.Unsupported, match="'mm'"):
        vknn.Session(_model(), cfg)


def test_config_rejects_unknown_values() -> None:
    with pytest.raises(vknn.InvalidArgument, match="precision"):
        vknn.Config(precision="fp8")
    with pytest.raises(vknn.InvalidArgument, match="backend"):
        vknn.Config(backends=("cuda",))


def test_inference_session_mirrors_onnxruntime(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "m.onnx"
    onnx.save(_model("N"), path)
    sess = vknn.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    (out,) = sess.get_outputs()
    assert (inp.name, inp.shape, inp.type) == ("x", ["N", 4], "tensor(float)")
    assert (out.name, out.type) == ("y", "tensor(float)")
    x = np.ones((3, 4), np.float32)  # a new batch size gets its own plan, as in onnxruntime
    (y,) = sess.run(None, {"x": x})
    assert y.shape == (3, 3)
    assert sess.run(["y"], {"x": x})[0].shape == (3, 3)
    with pytest.raises(vknn.InvalidArgument, match="unknown execution provider"):
        vknn.InferenceSession(str(path), providers=["CUDAExecutionProvider"])


def test_onnx_backend_interface() -> None:
    assert backend.supports_device("CPU") and backend.supports_device("VULKAN")
    assert not backend.supports_device("CUDA")
    x = np.ones((1, 4), np.float32)
    (y,) = backend.run_model(_model(), [x], device="CPU")
    assert y.shape == (1, 3)
    node = helper.make_node("Relu", ["a"], ["b"])
    (b,) = backend.run_node(node, [np.array([-1.0, 2.0], np.float32)], device="CPU")
    np.testing.assert_array_equal(b, [0.0, 2.0])


def test_cli_run_compares_with_onnxruntime(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 4), np.float32))
    assert (
        cli_main(["run", str(path), "--backends", "cpu", "--input", f"x={x}", "--compare-ort"]) == 0
    )
    out = capsys.readouterr().out
    assert "output   y: float32[1, 3]" in out and "cosine 1.0000000" in out


def test_cli_reports_bad_files_in_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01garbage")
    assert cli_main(["run", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vknn: error:") and "\n" not in err
