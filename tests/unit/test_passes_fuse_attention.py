"""fuse-attention and sink-reshapes on the CPU oracle: outputs with and
without the passes agree (and with onnxruntime), the patterns really fuse,
and what must be left alone is. The Vulkan side is in
tests/unit/vulkan/test_transformer_fusion.py."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from tests.unit.models import cosine_and_error, model_inputs, torch_model
from tests.unit.passes_common import before_after, run_cpu


def _attention_model(
    variant: str, b: int = 2, h: int = 3, s: int = 10, d: int = 8
) -> onnx.ModelProto:
    """Q, K, V inputs [b, h, s, d] and one attention pattern of `variant`."""
    f = TensorProto.FLOAT
    inits = [helper.make_tensor("c", f, [], [d**-0.5])]
    inputs = [helper.make_tensor_value_info(n, f, [b, h, s, d]) for n in "qkv"]
    if variant == "div_mask":  # MatMul -> Div -> Add(mask) -> Softmax -> MatMul
        inits.append(helper.make_tensor("sd", f, [1], [d**0.5]))
        inputs.append(helper.make_tensor_value_info("mask", f, [b, 1, 1, s]))
        nodes = [
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["q", "kt"], ["s0"]),
            helper.make_node("Div", ["s0", "sd"], ["s1"]),
            helper.make_node("Add", ["mask", "s1"], ["s2"]),
        ]
    elif variant == "scaled_qk":  # torch: q * c, (k^T) * c
        nodes = [
            helper.make_node("Mul", ["q", "c"], ["qs"]),
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
            helper.make_node("Mul", ["kt", "c"], ["kts"]),
            helper.make_node("MatMul", ["qs", "kts"], ["s2"]),
        ]
    elif variant == "kt_input":  # K arrives transposed: no Transpose to strip
        inputs[1] = helper.make_tensor_value_info("k", f, [b, h, d, s])
        nodes = [
            helper.make_node("MatMul", ["q", "k"], ["s0"]),
            helper.make_node("Mul", ["c", "s0"], ["s2"]),
        ]
    else:
        raise ValueError(variant)
    nodes += [
        helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    out = helper.make_tensor_value_info("y", f, [b, h, s, d])
    graph = helper.make_graph(nodes, variant, inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    feeds = model_inputs(model, {}, seed=4)
    if "mask" in feeds:
        feeds["mask"] = np.where(feeds["mask"] > 0.8, -10000.0, 0.0).astype(np.float32)
    return feeds


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)  # type: ignore[return-value]


@pytest.mark.parametrize("variant", ["div_mask", "scaled_qk", "kt_input"])
def test_pass_on_patterns(variant: str) -> None:
    model = _attention_model(variant)
    before, after = before_after(model, "fuse-attention")
    assert after["vx.attention"] == 1, after
    assert after["vx.softmax"] == 0 and after["vx.matmul"] == 0
    # K given as K^T keeps one transpose (read through strides on Vulkan).
    assert after["vx.transpose"] == (1 if variant == "kt_input" else 0)
    feeds = _feeds(model)
    (got,), _ = run_cpu(model, "standard", feeds)
    cos, err, scale = cosine_and_error(_ort(model, feeds)[0], got)
    assert cos >= 0.999999 and err <= 1e-4 * scale


def test_pass_leaves_alone() -> None:
    # The probabilities are an output too: the softmax must stay.
    model = _attention_model("scaled_qk")
    model.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, None))
    _, after = before_after(model, "fuse-attention")
    assert after["vx.attention"] == 0 and after["vx.softmax"] == 1


def test_bert_before_after() -> None:
    dims = {"batch": 1, "seq": 128}
    model = torch_model("bert_encoder")
    before, after = before_after(model, "fuse-attention,sink-reshapes,fuse-pointwise", dims)
    assert after["vx.attention"] == 4 and after["vx.softmax"] == 0
    # Q K^T and P V of 4 layers are gone; the projections stay.
    assert after["vx.matmul"] == before["vx.matmul"] - 8
    # Per layer: K^T went into the fused op, and the two transposes around
    # the attention block that only move the unit batch dim became reshapes.
    assert after["vx.transpose"] == before["vx.transpose"] - 4 * 3
    # Each residual add after the output projection is its epilogue.
    assert after["vx.binary"] == 1  # the embedding add (a Gather hosts no epilogue)


def test_sink_reshapes_before_after() -> None:
    dims = {"batch": 1, "seq": 128}
    before, after = before_after(torch_model("bert_encoder"), "sink-reshapes,fuse-pointwise", dims)
    assert after["vx.transpose"] < before["vx.transpose"]
    assert after["vx.binary"] < before["vx.binary"]
