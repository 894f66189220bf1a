"""Elementwise kernels on tensors past maxStorageBufferRange: several
dispatches over element ranges, each binding its part of every operand
(`kernels.record_chunked`), instead of a CPU fallback. The range is shrunk
through a caps override so small tensors exercise it; validation layer on.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh
from vknn.runtime.vulkan.executor import VulkanExecutor

import vknn
from vknn.kernels import gate
from vknn.runtime.plan import Step, TensorSpec

SHAPE = (1, 8, 40, 41)  # 13120 floats: 52 KiB


def _model():  # type: ignore[no-untyped-def]
    nodes = [
        oh.make_node("Sigmoid", ["x"], ["s"]),
        oh.make_node("Mul", ["s", "x"], ["silu"]),
        oh.make_node("Relu", ["silu"], ["r"]),
        oh.make_node("Add", ["r", "x"], ["a"]),
        oh.make_node("Mul", ["a", "half"], ["y"]),
    ]
    g = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [nh.from_array(np.array(0.5, np.float32), "half")],
    )
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def _reference(x: np.ndarray) -> np.ndarray:
    silu = x / (1.0 + np.exp(-x.astype(np.float64)))
    return ((np.maximum(silu, 0.0) + x) * 0.5).astype(np.float32)


@pytest.mark.parametrize("precision", ["high", "low"])
def test_elementwise_chain_past_storage_range(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    sess = vknn.Session(_model(), vknn.Config(precision=precision, allow_cpu_fallback=False))
    (ex,) = sess._bucket.executors.values()  # type: ignore[union-attr]
    ops = {st.op for st in ex.steps}
    assert ops & {"vx.unary", "vx.binary", "vx.fused_pointwise"}
    consts = {
        s: sess.plan.constants[s] for st in ex.steps for s in st.inputs if s in sess.plan.constants
    }
    small = dataclasses.replace(session_device.caps, max_storage_buffer_range=16 << 10)
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32) * 3
    with VulkanExecutor(
        session_device,
        ex.steps,
        ex.input_specs,
        ex.outputs,
        consts,
        precision=precision,
        caps=small,
    ) as big:
        # 52 KiB tensors in 16 KiB ranges: each step records several dispatches.
        assert big.stats.dispatches >= 4 * len(ex.steps)
        (got,) = big.run({next(iter(ex.input_specs)): x}).values()
    tol = 1e-5 if precision == "high" else 2e-2
    np.testing.assert_allclose(got.reshape(SHAPE), _reference(x), rtol=tol, atol=tol)


def test_gate_accepts_chunkable_refuses_others() -> None:
    from vknn.runtime.vulkan.caps import DeviceCaps

    caps = DeviceCaps.lavapipe_like(max_storage_buffer_range=1 << 12)
    big = TensorSpec("t", (1, 4, 32, 32), "float32")  # 16 KiB
    relu = Step("vx.unary", "relu", [0], [1], [big], {"kind": "relu", "params": ()})
    assert gate(relu, caps, [big]) is None
    bias = TensorSpec("b", (1, 4, 1, 1), "float32")
    add = Step("vx.binary", "add", [0, 2], [1], [big], {"kind": "add"})
    why = gate(add, caps, [big, bias])  # a broadcast: no element ranges
    assert why is not None and "maxStorageBufferRange" in why


# -- convs past the range: channel slices -------------------------------------


@pytest.mark.parametrize("precision", ["high", "low"])
def test_conv_past_storage_range_runs_in_channel_slices(clean, precision: str) -> None:  # type: ignore[no-untyped-def]
    """x (26 KiB) and y (20 KiB) past an 8 KiB range: output-channel blocks x
    input-channel slices, the later slices adding to y (with the bias once)."""
    from vknn.runtime.cpu.registry import kernel_for

    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 16, 20, 21)).astype(np.float32)
    w = (rng.standard_normal((12, 16, 3, 3)) / 12).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    attrs = {"strides": (1, 1), "pads": (1, 1, 1, 1), "dilations": (1, 1), "group": 1}
    step = Step(
        "vx.conv", "conv", [0, 1, 2], [3], [TensorSpec("y", (1, 12, 20, 21), "float32")],
        {**attrs, "vx.layout": "nc4hw4"},
    )  # fmt: skip
    small = dataclasses.replace(clean.caps, max_storage_buffer_range=8 << 10)
    specs = [TensorSpec(n, a.shape, "float32") for n, a in (("x", x), ("w", w), ("b", b))]
    assert gate(step, small, specs) is None
    with VulkanExecutor(
        clean, [step], {0: specs[0]}, [3], {1: w, 2: b}, precision=precision, caps=small
    ) as ex:
        assert ex.stats.packed == 0  # a packed tensor must fit one binding
        labels = [label for _, label in ex.program.labels]
        assert sum("sliced" in label for label in labels) >= 4, labels  # 2 x 2 at least
        got = ex.run({0: x})[3]
    want = kernel_for("vx.conv")(step, [x, w, b])[0]  # type: ignore[misc]
    tol = 1e-4 if precision == "high" else 3e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_conv_past_storage_range_that_cannot_slice_is_refused() -> None:
    from vknn.runtime.vulkan.caps import DeviceCaps

    caps = DeviceCaps.lavapipe_like(max_storage_buffer_range=1 << 12)
    x = TensorSpec("x", (2, 8, 16, 16), "float32")  # batch 2: not sliced
    w = TensorSpec("w", (8, 8, 1, 1), "float32")
    attrs = {"strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1), "group": 1}
    step = Step("vx.conv", "c", [0, 1], [2], [TensorSpec("y", (2, 8, 16, 16), "float32")], attrs)
    why = gate(step, caps, [x, w])
    assert why is not None and "batch-1" in why and "maxStorageBufferRange" in why


@pytest.mark.parametrize("kind", ["max", "global_avg"])
def test_pool_past_storage_range_runs_in_plane_blocks(clean, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Planes (N*C of them, batch 2 here) pooled in blocks of bound planes."""
    from vknn.runtime.cpu.registry import kernel_for

    x = np.random.default_rng(9).standard_normal((2, 9, 17, 19)).astype(np.float32)
    if kind == "max":
        attrs = {"kind": "max", "kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1),
                 "dilations": (1, 1), "count_include_pad": False, "ceil_mode": False}  # fmt: skip
        y_shape = (2, 9, 9, 10)
    else:
        attrs = {"kind": "avg", "kernel": (17, 19), "strides": (1, 1), "pads": (0, 0, 0, 0),
                 "dilations": (1, 1), "count_include_pad": False, "ceil_mode": False}  # fmt: skip
        y_shape = (2, 9, 1, 1)
    step = Step("vx.pool", "pool", [0], [1], [TensorSpec("y", y_shape, "float32")], attrs)
    spec = TensorSpec("x", x.shape, "float32")
    # x: 23 KiB past a 16 KiB range; blocks of 12 planes keep offsets aligned.
    small = dataclasses.replace(clean.caps, max_storage_buffer_range=16 << 10)
    assert gate(step, small, [spec]) is None
    with VulkanExecutor(clean, [step], {0: spec}, [1], caps=small) as ex:
        assert ex.stats.dispatches >= 2
        got = ex.run({0: x})[1]
    want = kernel_for("vx.pool")(step, [x])[0]  # type: ignore[misc]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
