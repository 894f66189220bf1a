"""subpixel-conv-transpose against onnxruntime and the CPU oracle on
ConvTranspose layers of the shapes decoders use (none of the real test
models has a ConvTranspose), and a real model it must leave unchanged."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.unit.models import cosine_and_error, light_model
from tests.unit.passes_common import BASE, before_after, run_cpu


def _model(
    cin: int,
    cout: int,
    k: tuple[int, int],
    s: tuple[int, int],
    pads: list[int],
    out_pad: list[int],
    bias: bool,
    hw: tuple[int, int],
) -> onnx.ModelProto:
    rng = np.random.default_rng(11)
    w = rng.standard_normal((cin, cout, *k)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), "b"))
        inputs.append("b")
    node = helper.make_node(
        "ConvTranspose",
        inputs,
        ["y"],
        kernel_shape=list(k),
        strides=list(s),
        pads=pads,
        output_padding=out_pad,
    )
    graph = helper.make_graph(
        [node, helper.make_node("Relu", ["y"], ["z"])],
        "ct",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, *hw])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    "k4s2p1": (4, 3, (4, 4), (2, 2), [1, 1, 1, 1], [0, 0], True, (5, 5)),
    "k2s2": (8, 4, (2, 2), (2, 2), [0, 0, 0, 0], [0, 0], False, (6, 7)),
    "k3x6_s1x3_asym": (3, 2, (3, 6), (1, 3), [0, 1, 2, 2], [0, 0], True, (4, 5)),
    "k4s2_outpad": (2, 5, (4, 4), (2, 2), [1, 0, 0, 1], [1, 1], True, (3, 4)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnxruntime_and_oracle(case: str) -> None:
    model = _model(*CASES[case])
    cin, hw = CASES[case][0], CASES[case][-1]
    x = np.random.default_rng(2).standard_normal((1, cin, *hw)).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = ref.run(None, {"x": x})[0]
    (before,), kinds_before = run_cpu(model, BASE, {"x": x})
    (after,), kinds = run_cpu(model, f"{BASE},subpixel-conv-transpose", {"x": x})
    assert kinds["vx.conv_transpose"] == 0 and kinds["vx.conv"] == 1, kinds
    assert kinds_before["vx.conv_transpose"] == 1
    for got in (before, after):
        assert got.shape == expected.shape
        cos, err, scale = cosine_and_error(expected, got)
        assert cos >= 0.999999 and err <= 1e-4 * max(scale, 1.0), (cos, err, scale)


def test_real_model_unchanged() -> None:
    before, after = before_after(light_model("light_squeezenet.onnx"), "subpixel-conv-transpose")
    assert before == after
