"""The tiny-GPU-island hint: a few cheap Vulkan ops between two CPU ops run on
the CPU (no download/submit/upload round trip), outputs unchanged; never
applied when counting fallbacks or with allow_cpu_fallback=False."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vknn
from tests.unit.vulkan.harness import lowered
from vknn.runtime.program import CpuSegment, VulkanSegment
from vknn.tools.cli import main as cli
from vknn.tools.cli import support_report


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


def _backends(sess: vknn.Session) -> list[str]:
    """The backend of each segment of the session's program, in order."""
    kinds = {VulkanSegment: "vulkan", CpuSegment: "cpu"}
    return [kinds[type(s)] for s in sess.program.buckets[0].segments]


def test_island_folded_and_outputs_unchanged(session_device, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    model = _softmax_sandwich()
    kept = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=0))
    folded = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=2))
    assert kept.node_backends()["relu"] == "vulkan"
    assert _backends(kept) == ["cpu", "vulkan", "cpu"]
    assert folded.node_backends()["relu"] == "cpu"
    assert _backends(folded) == ["cpu"]
    assert any("folded onto the CPU" in r for r in folded.fallback_reasons().values())
    np.testing.assert_allclose(folded.run({"x": x})["y"], kept.run({"x": x})["y"], rtol=1e-6)
    # The hint is the partition's: with it the lowered module has no Vulkan
    # node, and `vknn compile --support-report` (lowered as a session would)
    # says the same.
    hinted = lowered(model, disable_vk_ops="Softmax", fold_gpu_islands=2)
    assert support_report(hinted)["summary"].get("vulkan", 0) == 0
    path, out = tmp_path / "m.onnx", tmp_path / "support.json"
    onnx.save(model, str(path))
    args = ["compile", str(path), "--target", "lavapipe", "--disable-vk-ops", "Softmax"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli([*args, "--support-report", str(out)]) == 0
    report = json.loads(out.read_text())
    summary = report["summary"]
    assert summary.get("vulkan", 0) == 0 and summary["cpu"] == len(model.graph.node), summary


def test_no_folding_without_fallback_or_when_heavy(session_device) -> None:  # type: ignore[no-untyped-def]
    model = _softmax_sandwich()
    strict = vknn.Config(disable_vk_ops="Softmax", allow_cpu_fallback=False)
    with pytest.raises(vknn.Unsupported) as err:
        vknn.Session(model, strict)
    # The gaps are the disabled Softmaxes, not the island.
    assert "sm1" in str(err.value) and "relu" not in str(err.value)
    bigger = vknn.Session(model, vknn.Config(disable_vk_ops="Softmax", fold_gpu_islands=0))
    assert bigger.node_backends()["add"] == "vulkan"
