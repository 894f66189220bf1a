"""Tensors past maxStorageBufferRange on Vulkan instead of a CPU fallback:
elementwise kernels run as several dispatches over element ranges, each
binding its part of every operand (`kernels.record_chunked`); batch-1 convs
run in channel slices, pools in blocks of planes. The range is shrunk in the
target the program is compiled for (`run_for_target`), so small tensors
exercise it on the test device; validation layer on."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.unit.vulkan.harness import cpu, graph, labels, lowered, node, run_for_target
from vknn.kernels import gate
from vknn.kernels.targets import PRESETS
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.program import DispatchCmd
from vknn.runtime.target import from_caps

SHAPE = (1, 8, 40, 41)  # 13120 floats: 52 KiB


def _small(session_device, nbytes: int):  # type: ignore[no-untyped-def]
    """The test device's own target with maxStorageBufferRange `nbytes`."""
    return from_caps(session_device.caps).with_(max_storage_buffer_range=nbytes)


def _dispatches(program) -> list[DispatchCmd]:  # type: ignore[no-untyped-def]
    return [
        c
        for seg in program.buckets[0].segments
        for c in getattr(seg, "commands", ())
        if isinstance(c, DispatchCmd)
    ]


def _dispatch_labels(program) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.label for c in _dispatches(program)]


def _silu_chain():  # type: ignore[no-untyped-def]
    nodes = [
        node("Sigmoid", ["x"], ["s"]),
        node("Mul", ["s", "x"], ["silu"]),
        node("Relu", ["silu"], ["r"]),
        node("Add", ["r", "x"], ["a"]),
        node("Mul", ["a", "half"], ["y"]),
    ]
    return graph(nodes, {"x": (SHAPE, "float32")}, ["y"], {"half": np.array(0.5, np.float32)})


def _reference(x: np.ndarray) -> np.ndarray:
    silu = x / (1.0 + np.exp(-x.astype(np.float64)))
    return ((np.maximum(silu, 0.0) + x) * 0.5).astype(np.float32)


@pytest.mark.parametrize("pipeline", ["standard", "lower"])
@pytest.mark.parametrize("precision", ["high", "low"])
def test_elementwise_chain_past_storage_range(
    session_device, precision: str, pipeline: str
) -> None:  # type: ignore[no-untyped-def]
    """52 KiB tensors (26 KiB in fp16) in 16 KiB ranges: every op (the fused
    chain, or each of the five with `pipeline="lower"`) and every storage
    conversion records one dispatch per range, no binding past the range."""
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32) * 3
    out, program = run_for_target(
        _silu_chain(), _small(session_device, 16 << 10), {"x": x},
        precision=precision, allow_cpu_fallback=False, pipeline=pipeline,
    )  # fmt: skip
    cmds = _dispatches(program)
    per_op = Counter(c.label for c in cmds)
    ops = [label for label in per_op if not label.startswith("convert")]
    assert len(ops) == (1 if pipeline == "standard" else 5), per_op
    assert min(per_op.values()) >= (4 if precision == "high" else 2), per_op
    assert max(b.size for c in cmds for b in c.bindings) <= 16 << 10
    tol = 1e-5 if precision == "high" else 2e-2
    np.testing.assert_allclose(out["y"], _reference(x), rtol=tol, atol=tol)


def test_gate_accepts_chunkable_refuses_others() -> None:
    caps = PRESETS["lavapipe"].with_(max_storage_buffer_range=1 << 12)
    big = TensorSpec("t", (1, 4, 32, 32), "float32")  # 16 KiB
    relu = Step("vx.unary", "relu", [0], [1], [big], {"kind": "relu", "params": ()})
    assert gate(relu, caps, [big]) is None
    bias = TensorSpec("b", (1, 4, 1, 1), "float32")
    add = Step("vx.binary", "add", [0, 2], [1], [big], {"kind": "add"})
    why = gate(add, caps, [big, bias])  # a broadcast: no element ranges
    assert why is not None and "maxStorageBufferRange" in why


def test_broadcast_past_storage_range_falls_back_with_the_reason(session_device) -> None:  # type: ignore[no-untyped-def]
    """Through the whole lowering (no fusion: `pipeline="lower"`): the
    broadcast add goes to the CPU (fallback allowed) saying why, the relu
    after it stays on Vulkan in ranges."""
    bias = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4, 1, 1)
    nodes = [node("Add", ["x", "b"], ["a"]), node("Relu", ["a"], ["y"])]
    model = graph(nodes, {"x": ((1, 4, 32, 32), "float32")}, ["y"], {"b": bias})
    x = np.random.default_rng(2).standard_normal((1, 4, 32, 32)).astype(np.float32)
    out, program = run_for_target(
        model, _small(session_device, 1 << 12), {"x": x}, fold_gpu_islands=0, pipeline="lower"
    )
    (add,) = [(n, r) for n, b, r in program.buckets[0].nodes if n == "Add_0"]
    assert "maxStorageBufferRange" in add[1]
    assert Counter(_dispatch_labels(program)) == {"Relu_1 (Relu)": 4}
    np.testing.assert_array_equal(out["y"], np.maximum(x + bias, 0))


# -- convs past the range: channel slices -------------------------------------


def _conv_pair():  # type: ignore[no-untyped-def]
    """Conv -> ReLU -> Conv: NC4HW4 between the convs when the tensors fit."""
    rng = np.random.default_rng(8)
    inits = {
        "w": (rng.standard_normal((12, 16, 3, 3)) / 12).astype(np.float32),
        "w2": (rng.standard_normal((12, 12, 3, 3)) / 12).astype(np.float32),
        "b": rng.standard_normal(12).astype(np.float32),
    }
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Relu", ["c"], ["r"]),
        node("Conv", ["r", "w2", "b"], ["y"], pads=[1, 1, 1, 1]),
    ]
    return graph(nodes, {"x": ((1, 16, 20, 21), "float32")}, ["y"], inits)


def test_conv_past_storage_range_is_never_packed() -> None:
    """A packed tensor must fit one binding: with the tensors past an 8 KiB
    range nothing is stored NC4HW4 (with the default range the pair is, the
    ReLU an epilogue of the first conv); the convs run sliced, the ReLU (no
    epilogue of partial sums) in element ranges."""
    target = PRESETS["lavapipe"]
    whole = lowered(_conv_pair(), target)
    assert "nc4hw4" in str(whole) and not any("Relu" in name for name in labels(whole))
    small = lowered(_conv_pair(), target.with_(max_storage_buffer_range=8 << 10))
    assert "nc4hw4" not in str(small)
    per_op = Counter(labels(small))
    assert set(per_op) == {
        "Conv_0 (Conv direct, sliced)", "Conv_2 (Conv direct, sliced)", "Relu_1 (FusedPointwise)"
    }, per_op  # fmt: skip
    assert per_op["Relu_1 (FusedPointwise)"] == 3  # 20 KiB in 8 KiB ranges


@pytest.mark.parametrize("precision", ["high", "low"])
def test_conv_past_storage_range_runs_in_channel_slices(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """x (26 KiB) and y (20 KiB) past an 8 KiB range: output-channel blocks x
    input-channel slices, the later slices adding to y (with the bias once)."""
    model = _conv_pair()
    x = np.random.default_rng(8).standard_normal((1, 16, 20, 21)).astype(np.float32)
    out, program = run_for_target(
        model, _small(session_device, 8 << 10), {"x": x},
        precision=precision, allow_cpu_fallback=False,
    )  # fmt: skip
    per_op = Counter(name for name in _dispatch_labels(program) if "sliced" in name)
    assert set(per_op) == {"Conv_0 (Conv direct, sliced)", "Conv_2 (Conv direct, sliced)"}
    assert min(per_op.values()) >= 4, per_op  # 2 x 2 at least
    want = cpu(model, {"x": x})["y"]
    tol = 1e-4 if precision == "high" else 3e-2
    np.testing.assert_allclose(out["y"], want, rtol=tol, atol=tol)


def test_conv_past_storage_range_that_cannot_slice_is_refused() -> None:
    caps = PRESETS["lavapipe"].with_(max_storage_buffer_range=1 << 12)
    x = TensorSpec("x", (2, 8, 16, 16), "float32")  # batch 2: not sliced
    w = TensorSpec("w", (8, 8, 1, 1), "float32")
    attrs = {"strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1), "group": 1}
    step = Step("vx.conv", "c", [0, 1], [2], [TensorSpec("y", (2, 8, 16, 16), "float32")], attrs)
    why = gate(step, caps, [x, w])
    assert why is not None and "batch-1" in why and "maxStorageBufferRange" in why


@pytest.mark.parametrize("kind", ["max", "global_avg"])
def test_pool_past_storage_range_runs_in_plane_blocks(session_device, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Planes (N*C of them, batch 2 here) pooled in blocks of bound planes."""
    x = np.random.default_rng(9).standard_normal((2, 9, 17, 19)).astype(np.float32)
    if kind == "max":
        pool = node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    else:
        pool = node("AveragePool", ["x"], ["y"], kernel_shape=[17, 19])
    model = graph([pool], {"x": (x.shape, "float32")}, ["y"])
    # x: 23 KiB past a 16 KiB range; blocks of 12 planes keep offsets aligned.
    out, program = run_for_target(
        model, _small(session_device, 16 << 10), {"x": x}, allow_cpu_fallback=False
    )
    assert len(_dispatch_labels(program)) >= 2
    np.testing.assert_allclose(out["y"], cpu(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)
