"""The tiny-GPU-island hint: a few cheap Vulkan ops between two CPU ops run on
the CPU (no download/submit/upload round trip), outputs unchanged; never
applied when counting fallbacks or with allow_cpu_fallback=False."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vknn
from vknn.runtime.partition import assign_backends
from vknn.runtime.support import support_report


def _softmax_sandwich() -> onnx.ModelProto:
    # Softmax (forced to the CPU) -> Relu -> Add (one fused Vulkan step) -> Softmax (CPU).
    nodes = [
        helper.make_node("Softmax", ["x"], ["a"], name="sm1", axis=-1),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Add", ["b", "a"], ["c"], name="add"),
        helper.make_node("Softmax", ["c"], ["y"], name="sm2", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_island_folded_and_outputs_unchanged(session_device) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    model = _softmax_sandwich()
    kept = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=0))
    folded = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=2))
    assert kept.node_backends()["relu"] == "vulkan"
    assert [s.backend for s in kept.segments] == ["cpu", "vulkan", "cpu"]
    assert folded.node_backends()["relu"] == "cpu"
    assert [s.backend for s in folded.segments] == ["cpu"]
    assert any("folded onto the CPU" in r for r in folded.fallback_reasons().values())
    np.testing.assert_allclose(folded.run({"x": x})["y"], kept.run({"x": x})["y"], rtol=1e-6)
    # The support report counts what the gates refuse, without the hint.
    assert support_report(folded.plan)["summary"].get("vulkan", 0) == 0
    assign_backends(folded.plan, folded.config, session_device.caps, fold_islands=False)
    assert support_report(folded.plan)["summary"]["vulkan"] >= 1


def test_no_folding_without_fallback_or_when_heavy(session_device) -> None:  # type: ignore[no-untyped-def]
    model = _softmax_sandwich()
    strict = vknn.Config(disable_vk_ops="Softmax", allow_cpu_fallback=False)
    with pytest.raises(vknn.Unsupported) as err:
        vknn.Session(model, strict)
    # The gaps are the disabled Softmaxes, not the island.
    assert "sm1" in str(err.value) and "relu" not in str(err.value)
    bigger = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=0))
    assert bigger.node_backends()["add"] == "vulkan"
