"""int64 on Vulkan is exact (issue 14 item 3): int64 tensors are stored as
int64, moved as word pairs and computed in 64 bits where the target has
shaderInt64 (lavapipe has it). Small ONNX graphs with values past 2^31 run
on the test device with the validation layer on, every node on Vulkan, and
are compared exactly with onnxruntime; a target without shaderInt64 keeps
the int64 arithmetic on the CPU (device-free)."""

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

BIG = 1 << 40
I64_MIN, I64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def on_vulkan(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **config: Any) -> Any:
    return on_vulkan_vs_ort(model, feeds, **config)


def one(op: str, inputs: dict[str, np.ndarray], **attrs: Any) -> onnx.ModelProto:
    ins = {k: (v.shape, v.dtype.name) for k, v in inputs.items()}
    return graph([node(op, list(inputs), ["y"], **attrs)], ins, ["y"])


def _big(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """int64 values spread over +-2^62, a few small ones, the extremes."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-(1 << 62), 1 << 62, size=shape, dtype=np.int64)
    flat = x.reshape(-1)
    flat[:4] = [3, -7, BIG + 5, -BIG - 3][: flat.size]
    return x


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min"])
def test_binary_int64_past_32_bits(session_device, op: str, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    a = _big((3, 4), 1)
    b = _big((4,), 2)
    if op in ("Mul",):
        b = np.array([1_000_000_000, -3, 1 << 33, 7], np.int64)  # wraps past 2^63 too
    b[b == 0] = 5
    on_vulkan(one(op, {"a": a, "b": b}), {"a": a, "b": b}, pipeline=pipeline)


def test_issue_cases_mul_by_1e9_and_cast_3e9(session_device) -> None:  # type: ignore[no-untyped-def]
    """The two cases of the issue: both were 32-bit on Vulkan."""
    x = np.array([3, 5, -7, 2147483647], np.int64)
    f = np.array([3e9, -5e9, 2.5, -2.5], np.float32)
    nodes = [node("Mul", ["x", "k"], ["y"]), node("Cast", ["f"], ["c"], to=TensorProto.INT64)]
    model = graph(
        nodes,
        {"x": (x.shape, "int64"), "f": (f.shape, "float32")},
        ["y", "c"],
        {"k": np.array(1_000_000_000, np.int64)},
    )
    for pipeline in ("lower", "standard"):
        on_vulkan(model, {"x": x, "f": f}, pipeline=pipeline)


@pytest.mark.parametrize("op", ["Abs", "Neg", "Sign", "Identity"])
def test_unary_int64(session_device, op: str) -> None:  # type: ignore[no-untyped-def]
    x = _big((2, 5), 3)
    on_vulkan(one(op, {"x": x}), {"x": x}, pipeline="lower")


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
@pytest.mark.parametrize("op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
def test_compare_int64(session_device, op: str, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    a = np.array([[BIG, -BIG, BIG + 1, 5], [1 << 32, 0, -1, I64_MIN]], np.int64)
    b = np.array([BIG, -BIG + 1, BIG, 1 << 32 | 5], np.int64)  # differ only above bit 31
    on_vulkan(one(op, {"a": a, "b": b}), {"a": a, "b": b}, pipeline=pipeline)


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
@pytest.mark.parametrize("src", ["float32", "float16"])
def test_cast_float_to_int64_saturation_and_nan(session_device, src: str, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """NaN, +-inf and values past int64 give INT64_MIN (onnxruntime on x86);
    everything else truncates exactly."""
    vals = [3e9, -3e9, 2.5, -2.5, 0.0, 1e19, -1e19, np.nan, np.inf, -np.inf, 9.2e18, -9.2e18]
    if src == "float16":
        vals = [6e4, -6e4, 2.5, -2.5, 0.0, 65504.0, np.nan, np.inf, -np.inf, 1.5, 7.0, -1.0]
    x = np.array(vals, src)
    on_vulkan(one("Cast", {"x": x}, to=TensorProto.INT64), {"x": x}, pipeline=pipeline)


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
@pytest.mark.parametrize(
    "dst", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT8,
            TensorProto.BOOL]
)  # fmt: skip
def test_cast_from_int64(session_device, dst: int, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    x = np.array([BIG + 7, -BIG - 3, I64_MAX, I64_MIN, 0, 1 << 32, 255, -129], np.int64)
    on_vulkan(one("Cast", {"x": x}, to=dst), {"x": x}, pipeline=pipeline)


@pytest.mark.parametrize("src", ["int32", "int8", "bool", "uint8"])
def test_cast_to_int64(session_device, src: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    if src == "bool":
        x = rng.random(9) > 0.5
    else:
        info = np.iinfo(src)
        x = rng.integers(info.min, info.max, size=9, endpoint=True).astype(src)
        x[:2] = [info.min, info.max]
    on_vulkan(one("Cast", {"x": x}, to=TensorProto.INT64), {"x": x}, pipeline="lower")


def test_where_gather_and_movement_of_int64(session_device) -> None:  # type: ignore[no-untyped-def]
    """Where with int64 branches, Gather of int64 data with int64 (negative)
    indices, and the copies (Transpose, Slice, Concat, Expand, Pad)."""
    x = _big((4, 3), 5)
    c = np.array([[True, False, True]])
    ids = np.array([[-1, 0], [2, -4]], np.int64)
    nodes = [
        node("Where", ["c", "x", "k"], ["w"]),
        node("Gather", ["w", "ids"], ["g"], axis=0),
        node("Transpose", ["g"], ["t"], perm=[2, 0, 1]),
        node("Slice", ["x", "starts", "ends"], ["s"]),
        node("Concat", ["s", "x"], ["cat"], axis=0),
        node("Expand", ["k1", "shape"], ["e"]),
        node("Pad", ["x", "pads", "pv"], ["p"]),
    ]
    consts = {
        "k": np.array(-BIG, np.int64),
        "k1": np.array([[BIG], [-BIG]], np.int64),
        "shape": np.array([2, 3], np.int64),
        "starts": np.array([1], np.int64),
        "ends": np.array([3], np.int64),
        "pads": np.array([1, 0, 0, 2], np.int64),
        "pv": np.array(-5, np.int64),
    }
    ins = {"x": (x.shape, "int64"), "c": (c.shape, "bool"), "ids": (ids.shape, "int64")}
    model = graph(nodes, ins, ["t", "cat", "e", "p"], consts)
    for pipeline in ("lower", "standard"):
        on_vulkan(model, {"x": x, "c": c, "ids": ids}, pipeline=pipeline)


def test_gather_float_rows_by_big_int64_token_ids(session_device) -> None:  # type: ignore[no-untyped-def]
    """An embedding lookup: the int64 ids are read as word pairs."""
    table = np.random.default_rng(6).standard_normal((50, 8)).astype(np.float32)
    ids = np.array([[0, 49, -1, 7, -50]], np.int64)
    model = graph([node("Gather", ["t", "ids"], ["y"], axis=0)], {"ids": (ids.shape, "int64")},
                  ["y"], {"t": table})  # fmt: skip
    on_vulkan(model, {"ids": ids})


def test_position_ids_chain_fuses_on_vulkan(session_device) -> None:  # type: ignore[no-untyped-def]
    """What exporters emit for position ids: Cast(mask) -> CumSum-free
    arithmetic on int64 (Mul, Sub, Add past 2^32) -> comparison -> Where, in
    fused kernels with int64 inputs, bodies and results."""
    m = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int64)
    nodes = [
        node("Mul", ["m", "big"], ["a"]),
        node("Sub", ["a", "one"], ["b"]),
        node("Greater", ["b", "zero"], ["pos"]),
        node("Where", ["pos", "b", "neg"], ["y"]),
        node("Cast", ["y"], ["f"], to=TensorProto.FLOAT),
    ]
    consts = {
        "big": np.array(BIG * 3, np.int64),
        "one": np.array(1, np.int64),
        "zero": np.array(0, np.int64),
        "neg": np.array(-BIG, np.int64),
    }
    model = graph(nodes, {"m": (m.shape, "int64")}, ["y", "f"], consts)
    sess = on_vulkan(model, {"m": m})
    assert sess.program.target.has_int64  # the program asks for shaderInt64


def test_target_without_shader_int64_keeps_int64_arithmetic_on_the_cpu() -> None:
    """Device-free: for a target without shaderInt64, the int64 Mul/Cast
    nodes go to CPU segments (the partition says so), int64 moves stay on
    Vulkan (word pairs need no feature), and the program never asks for it."""
    from vknn.serialize import module_to_program

    x = np.zeros((2, 3), np.int64)
    nodes = [
        node("Mul", ["x", "k"], ["a"]),
        node("Transpose", ["x"], ["t"], perm=[1, 0]),
        node("Cast", ["t"], ["f"], to=TensorProto.FLOAT),
        node("Relu", ["f"], ["y"]),
    ]
    model = graph(nodes, {"x": (x.shape, "int64")}, ["a", "y"], {"k": np.array(3, np.int64)})
    for has_int64 in (False, True):
        target = lowered_target("lavapipe", has_int64=has_int64)
        module = lowered(model, target, pipeline="lower", fold_gpu_islands=0)
        cpu = {
            op.attributes["onnx.name"].data  # type: ignore[attr-defined]
            for seg in module.walk()
            if isinstance(seg, SegmentOp) and seg.backend.data == "cpu"
            for op in seg.body.block.ops
            if "onnx.name" in op.attributes
        }
        vulkan = {d.label.data.split(" ")[0] for d in dispatches(module)}
        arith = {"Mul_0", "Cast_2"}
        assert (arith <= cpu) is not has_int64 and (arith <= vulkan) is has_int64, (cpu, vulkan)
        assert {"Transpose_1", "Relu_3"} <= vulkan, vulkan
        need = module_to_program(module)["target"]
        assert need["has_int64"] is has_int64


def test_gather_elements_and_gather_nd_with_int64(session_device) -> None:  # type: ignore[no-untyped-def]
    """The indexing kernels read int64 indices (negative ones too) as word
    pairs and move int64 data past 32 bits exactly."""
    data = _big((3, 4), 7)
    ie = np.array([[0, -1, 2, 1], [3, 0, -4, 2]], np.int64)
    ind = np.array([[[0, -1]], [[2, 1]]], np.int64)
    nodes = [
        node("GatherElements", ["d", "ie"], ["ge"], axis=1),
        node("GatherND", ["d", "ind"], ["gn"]),
    ]
    ins = {"d": (data.shape, "int64"), "ie": (ie.shape, "int64"), "ind": (ind.shape, "int64")}
    model = graph(nodes, ins, ["ge", "gn"])
    for pipeline in ("lower", "standard"):
        on_vulkan(model, {"d": data, "ie": ie, "ind": ind}, pipeline=pipeline)


def test_device_reports_shader_int64_and_the_lavapipe_preset_needs_nothing_more(
    session_device,
) -> None:  # type: ignore[no-untyped-def]
    """DeviceCaps reports (and the device enables) shaderInt64 on lavapipe,
    so programs compiled for `--target lavapipe` are not refused for it."""
    from vknn.kernels.targets import PRESETS
    from vknn.runtime.target import unmet

    assert session_device.caps.has_int64
    assert PRESETS["lavapipe"].has_int64
    assert "shaderInt64" not in (unmet(PRESETS["lavapipe"], session_device.caps) or "")


@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [((4, 4), 1, 0), ((3, 7), 1, 1), ((2, 3000), -1, 0), ((2, 3, 4), 0, 1)],
)
def test_argmax_argmin_int64_result(session_device, shape, axis, keepdims, op, last) -> None:  # type: ignore[no-untyped-def]
    """The int64 index result on Vulkan (one invocation per output for short
    axes, a workgroup for the 3000-long one), ties and NaNs as onnxruntime
    picks them: a NaN first in its slice wins, other NaNs never do."""
    rng = np.random.default_rng(8)
    x = np.round(rng.standard_normal(shape) * 3).astype(np.float32)  # many ties
    x.reshape(-1)[::7] = np.nan
    if shape == (4, 4):
        x = np.array([[1, np.nan, 3, np.nan], [np.nan, 5, 7, 2], [2, np.nan, 1, np.nan],
                      [np.nan, np.nan, 1, 1]], np.float32)  # fmt: skip
    attrs = {"axis": axis, "keepdims": keepdims, "select_last_index": last}
    model = graph([node(op, ["x"], ["y"], **attrs)], {"x": (shape, "float32")}, ["y"])
    on_vulkan(model, {"x": x}, pipeline="lower")
    if shape == (2, 3000):  # fp16 storage holds these small integers exactly
        on_vulkan(model, {"x": x}, pipeline="standard", precision="low")


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
def test_casts_through_float16_round_and_overflow(session_device, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """int64 / int32 / float32 -> float16 -> back: values fp16 cannot hold
    round (ties to even) or become inf (then INT_MIN as an integer), also
    inside one fused kernel (lavapipe folds unpackHalf(packHalf(x)) to x,
    so the fused body rounds with integer arithmetic)."""
    x = np.array([1 << 40, -3, 7, 2**31 + 5, 65519, 65520, -70000, 2049], np.int64)
    xi = x.astype(np.int32)
    f = np.array([1e5, -1e5, 1.0001, 65519.0, 2049.0, 6e-8, np.nan, -0.0], np.float32)
    nodes = [
        node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
        node("Cast", ["h"], ["back"], to=TensorProto.INT64),
        node("Cast", ["xi"], ["hi"], to=TensorProto.FLOAT16),
        node("Cast", ["hi"], ["backi"], to=TensorProto.INT32),
        node("Cast", ["f"], ["hf"], to=TensorProto.FLOAT16),
        node("Cast", ["hf"], ["backf"], to=TensorProto.FLOAT),
    ]
    ins = {"x": (x.shape, "int64"), "xi": (xi.shape, "int32"), "f": (f.shape, "float32")}
    model = graph(nodes, ins, ["back", "backi", "backf"])
    on_vulkan(model, {"x": x, "xi": xi, "f": f}, pipeline=pipeline)


@pytest.mark.parametrize("pipeline", ["lower", "standard"])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_int64_reductions(session_device, op: str, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """Sums of values past 2^40 (and products that stay inside int64: on
    overflow onnxruntime saturates where the device wraps) in 64 bits."""
    rng = np.random.default_rng(9)
    x = rng.integers(-(1 << 40), 1 << 40, size=(3, 4, 50), dtype=np.int64)
    if op == "ReduceProd":
        x = rng.integers(-6, 7, size=(3, 4, 5), dtype=np.int64)
    for axes, keepdims in (([2], 0), ([0, 2], 1), ([1], 1)):
        model = graph(
            [node(op, ["x", "axes"], ["y"], keepdims=keepdims)],
            {"x": (x.shape, "int64")},
            ["y"],
            {"axes": np.array(axes, np.int64)},
            opset=18,
        )
        on_vulkan(model, {"x": x}, pipeline=pipeline)


def test_without_shader_int64_argmax_stays_and_int64_sums_leave() -> None:
    """Device-free: ArgMax writes its int64 result as word pairs (any
    device); an int64 ReduceSum needs shaderInt64, else the CPU runs it."""
    x = np.zeros((2, 5), np.float32)
    nodes = [
        node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
        node("ReduceSum", ["i", "ax"], ["s"], keepdims=0),
    ]
    model = graph(nodes, {"x": (x.shape, "float32")}, ["s"], {"ax": np.array([0], np.int64)})
    for has_int64 in (False, True):
        target = lowered_target("lavapipe", has_int64=has_int64)
        module = lowered(model, target, pipeline="lower", fold_gpu_islands=0)
        on_gpu = {d.label.data.split(" ")[0] for d in dispatches(module)}
        assert "ArgMax_0" in on_gpu
        assert ("ReduceSum_1" in on_gpu) is has_int64, on_gpu


def test_int64_splat_weights(session_device) -> None:  # type: ignore[no-untyped-def]
    """Uniform int64 constants travel as one 8-byte element the runtime
    repeats (a splat); values past 2^32 survive it."""
    x = np.arange(2048, dtype=np.int64) * (1 << 33)
    consts = {"c": np.full(2048, (1 << 40) + 3, np.int64), "d": np.full(2048, -3, np.int64)}
    nodes = [node("Add", ["x", "c"], ["y"]), node("Mul", ["x", "d"], ["z"])]
    model = graph(nodes, {"x": (x.shape, "int64")}, ["y", "z"], consts)
    for pipeline in ("lower", "standard"):
        on_vulkan(model, {"x": x}, pipeline=pipeline)
