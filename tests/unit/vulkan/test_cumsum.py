"""ONNX CumSum on Vulkan (`vx.cum_sum`, kernels/cumsum.py): float and int64
against onnxruntime on the test device with the validation layer on, every
axis sign and exclusive / reverse combination, and the RoBERTa position-id
pattern `CumSum(Cast(Not(Equal(ids, pad)))) * mask + pad` with no CPU node,
at precision high and low."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from tests.unit.vulkan.harness import (
    dispatches,
    graph,
    lowered,
    lowered_target,
    node,
    on_vulkan_vs_ort,
)
from vknn.dialects.vkd import SegmentOp

FLAGS = [(0, 0), (1, 0), (0, 1), (1, 1)]


def cumsum_model(x: np.ndarray, axis: int, exclusive: int, reverse: int) -> onnx.ModelProto:
    return graph(
        [node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        {"x": (x.shape, x.dtype.name)},
        ["y"],
        {"axis": np.array(axis, np.int64)},
    )


@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2])
def test_cumsum_float32(session_device, axis: int, exclusive: int, reverse: int) -> None:  # type: ignore[no-untyped-def]
    # Small integers in float32: every partial sum is exact, so the
    # comparison with onnxruntime can be exact whatever the summation order.
    x = np.random.default_rng(axis + 7).integers(-8, 9, size=(3, 5, 4)).astype(np.float32)
    sess = on_vulkan_vs_ort(cumsum_model(x, axis, exclusive, reverse), {"x": x})
    assert sess.fallback_reasons() == {}


@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS)
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_cumsum_int64(session_device, axis: int, exclusive: int, reverse: int) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(3).integers(-(1 << 40), 1 << 40, size=(2, 6), dtype=np.int64)
    x[0, 0] = (1 << 62) + 1  # partial sums past 32 bits
    on_vulkan_vs_ort(cumsum_model(x, axis, exclusive, reverse), {"x": x})


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 1)])
def test_cumsum_int32(session_device, exclusive: int, reverse: int) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(5).integers(-1000, 1000, size=(4, 3, 2), dtype=np.int32)
    on_vulkan_vs_ort(cumsum_model(x, 1, exclusive, reverse), {"x": x})


def test_cumsum_float16_low(session_device) -> None:  # type: ignore[no-untyped-def]
    """precision low stores float tensors in fp16; the scan accumulates in fp32."""
    x = np.random.default_rng(11).standard_normal((4, 33)).astype(np.float32)
    on_vulkan_vs_ort(cumsum_model(x, -1, 0, 0), {"x": x}, atol=0.03, precision="low")


def roberta_positions(pad: int) -> onnx.ModelProto:
    """The exported RoBERTa / XLM-R position ids (create_position_ids_from_input_ids)."""
    nodes = [
        node("Equal", ["ids", "pad"], ["eq"]),
        node("Not", ["eq"], ["ne"]),
        node("Cast", ["ne"], ["mask"], to=TensorProto.INT32),
        node("CumSum", ["mask", "axis"], ["cs"]),
        node("Cast", ["cs"], ["cs64"], to=TensorProto.INT64),
        node("Cast", ["mask"], ["mask64"], to=TensorProto.INT64),
        node("Mul", ["cs64", "mask64"], ["m"]),
        node("Add", ["m", "pad"], ["pos"]),
    ]
    return graph(
        nodes,
        {"ids": ((2, 9), "int64")},
        ["pos"],
        {"pad": np.array(pad, np.int64), "axis": np.array(1, np.int64)},
    )


def roberta_positions_int64(pad: int) -> onnx.ModelProto:
    """The same with the mask cast straight to int64 (BLOOM / OPT style)."""
    nodes = [
        node("Equal", ["ids", "pad"], ["eq"]),
        node("Not", ["eq"], ["ne"]),
        node("Cast", ["ne"], ["mask"], to=TensorProto.INT64),
        node("CumSum", ["mask", "axis"], ["cs"]),
        node("Mul", ["cs", "mask"], ["m"]),
        node("Add", ["m", "pad"], ["pos"]),
    ]
    return graph(
        nodes,
        {"ids": ((2, 9), "int64")},
        ["pos"],
        {"pad": np.array(pad, np.int64), "axis": np.array(-1, np.int64)},
    )


@pytest.mark.parametrize("build", [roberta_positions, roberta_positions_int64])
@pytest.mark.parametrize("precision", ["high", "low"])
def test_roberta_position_ids_all_on_vulkan(session_device, precision: str, build: Any) -> None:  # type: ignore[no-untyped-def]
    pad = 1
    ids = np.array([[0, 31414, 232, 2, 1, 1, 1, 1, 1], [0, 9, 8, 7, 6, 5, 4, 3, 2]], np.int64)
    sess = on_vulkan_vs_ort(build(pad), {"ids": ids}, precision=precision, allow_cpu_fallback=True)
    assert sess.fallback_reasons() == {}
    want = np.array([[2, 3, 4, 5, 1, 1, 1, 1, 1], [2, 3, 4, 5, 6, 7, 8, 9, 10]], np.int64)
    np.testing.assert_array_equal(sess.run({"ids": ids})["pos"], want)


def test_int64_cumsum_needs_shader_int64() -> None:
    """Device-free: without shaderInt64 an int64 CumSum goes to a CPU segment;
    with it, it is a Vulkan dispatch; a float CumSum is on Vulkan either way."""
    x = np.zeros((2, 5), np.int64)
    f = np.zeros((2, 5), np.float32)
    nodes = [
        node("CumSum", ["x", "axis"], ["y"]),
        node("CumSum", ["f", "axis"], ["g"]),
    ]
    ins = {"x": (x.shape, "int64"), "f": (f.shape, "float32")}
    model = graph(nodes, ins, ["y", "g"], {"axis": np.array(1, np.int64)})
    for has_int64 in (False, True):
        module = lowered(model, lowered_target("lavapipe", has_int64=has_int64), pipeline="lower")
        cpu = {
            op.attributes["onnx.name"].data  # type: ignore[attr-defined]
            for seg in module.walk()
            if isinstance(seg, SegmentOp) and seg.backend.data == "cpu"
            for op in seg.body.block.ops
            if "onnx.name" in op.attributes
        }
        vulkan = {d.label.data.split(" ")[0] for d in dispatches(module)}
        assert ("CumSum_0" in cpu) is not has_int64 and ("CumSum_0" in vulkan) is has_int64
        assert "CumSum_1" in vulkan, (cpu, vulkan)
