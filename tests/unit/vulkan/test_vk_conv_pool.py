"""Vulkan conv / conv_transpose / batchnorm / lrn / pool kernels and producer
epilogues vs the CPU oracle, small ONNX graphs through the real pipeline on
the test device (lavapipe here) with the Khronos validation layer on and zero
messages allowed; which kernel and how many dispatches from the lowered
`vkd` module; plus whole light models on Vulkan vs the CPU backend (slow).

Bounds (`harness.check`): fp32 max abs error <= 1e-4 * max|ref|; fp16
storage: cosine >= 0.999 and no inf/NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.unit.vulkan.harness import (
    check,
    dispatches,
    graph,
    labels,
    lowered,
    node,
    shaders,
    vk_vs_cpu,
)
from vknn.errors import Unsupported
from vknn.kernels import gate
from vknn.kernels.targets import PRESETS
from vknn.runtime.plan import Step, TensorSpec

PRECISIONS = ["high", "low"]
LAYOUTS = ["nc4hw4", "flat"]
"""Every kernel test runs in both device layouts: `nc4hw4` (the compiler packs
rank-4 tensors of ops with NC4HW4 kernels where it pays, converting at the
segment's edges) and `flat` (row-major everywhere)."""


def _shaders_run(sess) -> set[str]:  # type: ignore[no-untyped-def]
    """The shader families a session's program dispatches."""
    from vknn.runtime.program import DispatchCmd, VulkanSegment

    spec = sess.bucket.spec
    used = {
        c.kernel
        for seg in spec.segments
        if isinstance(seg, VulkanSegment)
        for c in seg.commands
        if isinstance(c, DispatchCmd)
    }
    return {sess.program.kernels[k].shader for k in used}


def _kernel_labels(module) -> list[str]:  # type: ignore[no-untyped-def]
    """Dispatch labels less the storage conversions (layout choices)."""
    return [name for name in labels(module) if not name.startswith("convert ")]


# ---------------------------------------------------------------------------
# Gates (pure)
# ---------------------------------------------------------------------------


def _conv_gate_step(x: tuple[int, ...], w: tuple[int, ...], dtype: str = "float32"):  # type: ignore[no-untyped-def]
    n = len(x) - 2
    y = (x[0], w[0], *(x[2 + i] - w[2 + i] + 1 for i in range(n)))
    attrs = {"strides": (1,) * n, "pads": (0,) * (2 * n), "dilations": (1,) * n, "group": 1}
    step = Step("vx.conv", "conv", [0, 1], [2], [TensorSpec("y", y, "float32")], attrs)
    return step, [TensorSpec("x", x, dtype), TensorSpec("w", w, "float32")]


def test_gates_refuse_with_reasons() -> None:
    caps = PRESETS["lavapipe"]
    step, specs = _conv_gate_step((1, 4, 5, 5, 5), (8, 4, 3, 3, 3))
    assert gate(step, caps, specs) == "Conv: 3-D convolutions are not supported on Vulkan yet"
    step, specs = _conv_gate_step((1, 4, 9, 9), (8, 4, 3, 3))
    assert gate(step, caps, specs) is None
    step, specs = _conv_gate_step((1, 4, 9, 9), (8, 4, 3, 3), "int32")
    why = gate(step, caps, specs)
    assert why is not None and why.startswith("Conv: ")
    pool = Step(
        "vx.pool", "p", [0], [1], [TensorSpec("y", (1, 2, 2, 2, 2), "float32")],
        {"kind": "max", "kernel": (2, 2, 2), "strides": (1, 1, 1), "pads": (0,) * 6,
         "dilations": (1, 1, 1), "ceil_mode": False, "count_include_pad": False},
    )  # fmt: skip
    assert "3-D pools" in (gate(pool, caps) or "")


def test_refused_3d_conv_and_pool_name_the_node(session_device) -> None:  # type: ignore[no-untyped-def]
    """Through the front door with fallback off: one clear error naming the op."""
    from tests.unit.vulkan.harness import vk_session

    w = np.ones((8, 4, 3, 3, 3), np.float32)
    conv = graph([node("Conv", ["x", "w"], ["y"])], {"x": ((1, 4, 5, 5, 5), "float32")}, ["y"],
                 {"w": w})  # fmt: skip
    with pytest.raises(Unsupported, match="3-D convolutions"):
        vk_session(conv)
    pool = graph([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2])],
                 {"x": ((1, 2, 3, 3, 3), "float32")}, ["y"])  # fmt: skip
    with pytest.raises(Unsupported, match="3-D pools"):
        vk_session(pool)


# ---------------------------------------------------------------------------
# Conv
# ---------------------------------------------------------------------------


def conv_model(
    x: tuple[int, ...], w: tuple[int, ...], *, stride=1, pad=0, dil=1, group=1, bias=True,
) -> tuple[Any, dict[str, np.ndarray]]:  # fmt: skip  # type: ignore[no-untyped-def]
    """A one-Conv model (weights and bias as initializers) and its input."""
    n = len(x) - 2
    s = [stride] * n if isinstance(stride, int) else list(stride)
    p = [pad] * (2 * n) if isinstance(pad, int) else list(pad)
    d = [dil] * n if isinstance(dil, int) else list(dil)
    rng = np.random.default_rng(sum(x) + sum(w) + group)
    fan = int(np.prod(w[1:]))
    feeds = {"x": rng.standard_normal(x).astype(np.float32)}
    inits = {"w": (rng.standard_normal(w) / np.sqrt(fan)).astype(np.float32)}
    if bias:
        inits["b"] = rng.standard_normal(w[0]).astype(np.float32) * 0.1
    conv = node("Conv", ["x", *inits], ["y"], strides=s, pads=p, dilations=d, group=group)
    return graph([conv], {"x": (x, "float32")}, ["y"], inits), feeds


CONV_CASES = [
    # (x, w, kwargs) — 1x1 (GEMM fast path), k x k, strided, dilated, padded,
    # asymmetric pads, grouped, depthwise, channel multiplier, 1-D, tails.
    ((1, 16, 7, 9), (24, 16, 1, 1), {}),
    ((2, 8, 11, 10), (20, 8, 3, 3), {"pad": 1}),
    ((1, 3, 17, 17), (16, 3, 7, 7), {"stride": 2, "pad": 3}),
    ((1, 12, 13, 12), (16, 12, 3, 3), {"dil": 2, "pad": (2, 1, 2, 3)}),
    ((1, 16, 9, 9), (32, 16, 1, 1), {"stride": 2, "bias": False}),
    ((1, 12, 8, 8), (24, 4, 3, 3), {"group": 3, "pad": 1}),
    ((1, 8, 10, 10), (8, 1, 3, 3), {"group": 8, "pad": 1}),
    ((1, 8, 10, 10), (16, 1, 5, 5), {"group": 8, "stride": 2, "pad": 2}),
    ((1, 16, 6, 6), (32, 4, 3, 3), {"group": 4, "stride": (1, 2)}),
    ((2, 6, 20), (10, 6, 3), {"pad": 1, "stride": 2}),
    ((1, 70, 19, 19), (130, 70, 3, 3), {"pad": 1}),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,w,kw", CONV_CASES)
def test_conv(session_device, x, w, kw, precision: str) -> None:  # type: ignore[no-untyped-def]
    model, feeds = conv_model(x, w, **kw)
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, feeds, precision=precision, device_layout=layout)
        assert _shaders_run(sess) & {"conv", "conv_direct"}
        check(got["y"], want["y"], precision != "high")


def test_conv_1x1_uses_the_gemm_and_dw_the_direct_kernel() -> None:
    for w, group, shader in (((32, 16, 1, 1), 1, "conv"), ((16, 1, 3, 3), 16, "conv_direct")):
        model, _ = conv_model((1, 16, 8, 8), w, group=group, pad=w[2] // 2)
        assert [f for f in shaders(lowered(model)) if f != "convert_storage"] == [shader]


# ---------------------------------------------------------------------------
# ConvTranspose, BatchNorm, LRN
# ---------------------------------------------------------------------------

CONVT_CASES = [
    # (x, w [C, M/g, k...], strides, pads, output_padding, dilations, group):
    # none of them the subpixel rewrite's (stride not dividing the kernel,
    # groups, 1-D), so the conv_transpose kernel runs each
    ((1, 8, 5, 5), (8, 6, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 4, 7), (6, 2, 4, 3), (2, 1), (0, 1, 2, 0), (0, 0), (1, 2), 3),
    ((2, 4, 9), (4, 5, 3), (3,), (1, 0), (2,), (1,), 1),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,w,s,p,op,d,g", CONVT_CASES)
def test_conv_transpose(session_device, x, w, s, p, op, d, g, precision: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    inits = {
        "w": rng.standard_normal(w).astype(np.float32) * 0.3,
        "b": rng.standard_normal(w[1] * g).astype(np.float32),
    }
    ct = node("ConvTranspose", ["x", "w", "b"], ["y"], strides=list(s), pads=list(p),
              output_padding=list(op), dilations=list(d), group=g)  # fmt: skip
    model = graph([ct], {"x": (x, "float32")}, ["y"], inits)
    feeds = {"x": rng.standard_normal(x).astype(np.float32)}
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, feeds, precision=precision, device_layout=layout)
        assert "conv_transpose" in _shaders_run(sess)
        check(got["y"], want["y"], precision != "high")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batchnorm(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """Parameters computed in the graph (inputs here) keep the batchnorm
    kernel; constant ones become a folded mul + add (lower-batchnorm)."""
    rng = np.random.default_rng(2)
    c = 6
    feeds = {
        "x": rng.standard_normal((2, c, 5, 3)).astype(np.float32),
        "scale": rng.uniform(0.5, 1.5, c).astype(np.float32),
        "bias": rng.standard_normal(c).astype(np.float32),
        "mean": rng.standard_normal(c).astype(np.float32),
        "var": rng.uniform(0.5, 1.5, c).astype(np.float32),
    }
    bn = node("BatchNormalization", list(feeds), ["y"], epsilon=1e-5)
    ins = {k: (v.shape, "float32") for k, v in feeds.items()}
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(
            graph([bn], ins, ["y"]), feeds, precision=precision, device_layout=layout
        )
        assert _shaders_run(sess) - {"convert_storage"} == {"conv_bn"}
        check(got["y"], want["y"], precision != "high")
    # The same batchnorm with constant parameters: folded into elementwise ops.
    x = feeds.pop("x")
    const = graph([bn], {"x": (x.shape, "float32")}, ["y"], feeds)
    got, want, sess = vk_vs_cpu(const, {"x": x}, precision=precision)
    assert "conv_bn" not in _shaders_run(sess)
    check(got["y"], want["y"], precision != "high")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape,size", [((1, 10, 4, 5), 5), ((2, 7, 6), 4), ((1, 3, 2, 2), 1)])
def test_lrn(session_device, shape, size: int, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    lrn = node("LRN", ["x"], ["y"], size=size, alpha=1e-2, beta=0.75, bias=1.5)
    model = graph([lrn], {"x": (shape, "float32")}, ["y"])
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, {"x": x}, precision=precision, device_layout=layout)
        assert "lrn" in _shaders_run(sess)
        check(got["y"], want["y"], precision != "high")


# ---------------------------------------------------------------------------
# Pool
# ---------------------------------------------------------------------------

POOL_OPS = {"max": "MaxPool", "avg": "AveragePool", "lp": "LpPool"}


def pool_model(x: tuple[int, ...], kind: str, k, s, p, d=None, ceil=False, cip=False, lp=None):  # type: ignore[no-untyped-def]
    attrs: dict[str, Any] = {"kernel_shape": list(k), "strides": list(s), "pads": list(p)}
    if d is not None:
        attrs["dilations"] = list(d)
    if ceil:
        attrs["ceil_mode"] = 1
    if cip:
        attrs["count_include_pad"] = 1
    if lp is not None:
        attrs["p"] = lp
    pool = node(POOL_OPS[kind], ["x"], ["y"], **attrs)
    return graph([pool], {"x": (x, "float32")}, ["y"], opset=18)


POOL_CASES = [
    ((1, 4, 9, 9), "max", (3, 3), (2, 2), (0, 0, 0, 0), None, False, False, None),
    ((1, 4, 10, 10), "max", (3, 3), (2, 2), (1, 1, 1, 1), None, True, False, None),
    ((2, 3, 8, 7), "max", (2, 3), (1, 2), (0, 1, 1, 0), (2, 1), False, False, None),
    ((1, 4, 10, 9), "avg", (3, 3), (2, 2), (1, 1, 1, 1), None, False, False, None),
    ((1, 4, 10, 9), "avg", (3, 3), (2, 2), (1, 1, 1, 1), None, False, True, None),
    ((1, 4, 11, 11), "avg", (3, 3), (2, 2), (1, 1, 0, 0), None, True, True, None),
    ((1, 4, 11, 11), "avg", (3, 3), (2, 2), (0, 0, 0, 0), None, True, False, None),
    ((1, 3, 6, 6), "lp", (2, 2), (2, 2), (0, 0, 0, 0), None, False, False, 2),
    ((2, 3, 15), "avg", (4,), (3,), (1, 2), None, False, True, None),
    # global pools (full-extent kernels): 7x7, 56x56, 1-D, max and lp
    ((1, 33, 7, 7), "avg", (7, 7), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((1, 8, 56, 56), "avg", (56, 56), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((2, 5, 13, 6), "max", (13, 6), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((1, 5, 30), "lp", (30,), (1,), (0, 0), None, False, False, 2),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,kind,k,s,p,d,ceil,cip,lp", POOL_CASES)
def test_pool(session_device, x, kind, k, s, p, d, ceil, cip, lp, precision: str) -> None:  # type: ignore[no-untyped-def]
    model = pool_model(x, kind, k, s, p, d, ceil, cip, lp)
    feeds = {"x": np.random.default_rng(4).standard_normal(x).astype(np.float32)}
    family = "pool_global" if tuple(k) == tuple(x[2:]) else "pool"
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, feeds, precision=precision, device_layout=layout)
        assert family in _shaders_run(sess)
        check(got["y"], want["y"], precision != "high")


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool_ops(session_device, op: str) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(6).standard_normal((2, 9, 7, 5)).astype(np.float32)
    model = graph([node(op, ["x"], ["y"])], {"x": (x.shape, "float32")}, ["y"])
    got, want, sess = vk_vs_cpu(model, {"x": x})
    assert "pool_global" in _shaders_run(sess)
    check(got["y"], want["y"], False)


# ---------------------------------------------------------------------------
# Epilogues: pointwise tails merged into their producer's dispatch
# ---------------------------------------------------------------------------


def _inits(model) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    from onnx import numpy_helper

    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _conv_residual(w: tuple[int, ...]):  # type: ignore[no-untyped-def]
    """max(conv(x) + res * chan, 0): a residual scaled per channel, then ReLU."""
    group = 8 if w[1] == 1 else 1
    conv, feeds = conv_model((1, 8, 9, 9), w, pad=1, group=group)
    rng = np.random.default_rng(9)
    shape = (1, w[0], 9, 9)
    feeds["res"] = rng.standard_normal(shape).astype(np.float32)
    chan = rng.standard_normal((1, w[0], 1, 1)).astype(np.float32)
    nodes = [
        *conv.graph.node,
        node("Mul", ["res", "chan"], ["m"]),
        node("Add", ["y", "m"], ["a"]),
        node("Relu", ["a"], ["z"]),
    ]
    ins = {"x": ((1, 8, 9, 9), "float32"), "res": (shape, "float32")}
    return graph(nodes, ins, ["z"], _inits(conv) | {"chan": chan}), feeds


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("w", [(16, 8, 3, 3), (8, 1, 3, 3)])
def test_conv_epilogue_attached(session_device, w, precision: str) -> None:  # type: ignore[no-untyped-def]
    model, feeds = _conv_residual(w)
    (d,) = dispatches(lowered(model))
    assert d.attributes["onnx.name"].data == "Conv_0,Mul_1,Add_2,Relu_3"  # type: ignore[attr-defined]
    # x, weight, bias, y, then the epilogue's residual and per-channel scale.
    extra = [op.type.get_shape() for op in d.operands[-2:]]  # type: ignore[attr-defined]
    assert extra == [(1, w[0], 9, 9), (1, w[0], 1, 1)], extra
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, feeds, precision=precision, device_layout=layout)
        assert _shaders_run(sess) - {"convert_storage"} == {"conv" if w[1] > 1 else "conv_direct"}
        check(got["z"], want["z"], precision != "high")


@pytest.mark.parametrize("global_", [False, True])
def test_pool_epilogue_attached(session_device, global_: bool) -> None:  # type: ignore[no-untyped-def]
    x = (1, 6, 7, 7)
    k = [7, 7] if global_ else [3, 3]
    rng = np.random.default_rng(1)
    chan = rng.standard_normal((6, 1, 1)).astype(np.float32)
    nodes = [
        node("AveragePool", ["x"], ["p"], kernel_shape=k),
        node("Tanh", ["p"], ["t"]),
        node("Mul", ["t", "chan"], ["y"]),
    ]
    model = graph(nodes, {"x": (x, "float32")}, ["y"], {"chan": chan})
    pools = [d for d in dispatches(lowered(model)) if "Pool" in d.label.data]
    assert [d.attributes["onnx.name"].data for d in pools] == ["AveragePool_0,Tanh_1,Mul_2"]  # type: ignore[attr-defined]
    feeds = {"x": rng.standard_normal(x).astype(np.float32)}
    for layout in LAYOUTS:
        got, want, sess = vk_vs_cpu(model, feeds, device_layout=layout)
        assert _shaders_run(sess) - {"convert_storage"} == {"pool_global" if global_ else "pool"}
        check(got["y"], want["y"], False)


def _conv_nodes(module) -> str:  # type: ignore[no-untyped-def]
    """The ONNX nodes the one conv dispatch of `module` computes."""
    (d,) = [d for d in dispatches(module) if d.attributes["vkd.kind"].data == "Conv"]  # type: ignore[attr-defined]
    return d.attributes["onnx.name"].data  # type: ignore[attr-defined, no-any-return]


def test_epilogues_are_left_where_they_cannot_merge(session_device) -> None:  # type: ignore[no-untyped-def]
    model, feeds = conv_model((1, 8, 9, 9), (16, 8, 3, 3), pad=1)
    conv, inits = list(model.graph.node), _inits(model)
    ins = {"x": ((1, 8, 9, 9), "float32")}
    relu = node("Relu", ["y"], ["r"])
    # Merged: conv + ReLU in one dispatch.
    merged = graph([*conv, relu], ins, ["r"], inits)
    assert _kernel_labels(lowered(merged)) == ["Conv_0 (Conv gemm)"]
    assert _conv_nodes(lowered(merged)) == "Conv_0,Relu_1"
    # A second reader of the conv's output: the conv's result is stored.
    two = graph([*conv, relu, node("Neg", ["y"], ["n"])], ins, ["r", "n"], inits)
    assert _conv_nodes(lowered(two)) == "Conv_0"
    got, want, _ = vk_vs_cpu(two, feeds)
    for k in want:
        check(got[k], want[k], False)
    # The producer on the CPU: the ReLU runs on Vulkan by itself.
    got, want, sess = vk_vs_cpu(merged, feeds, disable_vk_ops="Conv", allow_cpu_fallback=True,
                                fold_gpu_islands=0)  # fmt: skip
    assert sess.node_backends() == {"Conv_0": "cpu", "Relu_1": "vulkan"}
    assert sess.dispatch_count() == 1
    check(got["r"], want["r"], False)


# ---------------------------------------------------------------------------
# Whole models: Vulkan vs the CPU backend
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_light_model_on_vulkan(session_device, name: str) -> None:  # type: ignore[no-untyped-def]
    import vknn
    from tests.unit.models import cosine_and_error, light_model, model_inputs

    model = light_model(f"light_{name}.onnx")
    feeds = model_inputs(model, {})
    sess = vknn.Session(model)
    cpu = vknn.Session(model, vknn.Config(backends=("cpu",)))
    fallbacks = sess.fallback_reasons()
    print(f"{name}: {len(fallbacks)} node(s) on the CPU: {fallbacks}")
    assert not fallbacks
    # Every pointwise tail of a conv / pool rides in its producer's dispatch.
    assert "fused_pointwise" not in _shaders_run(sess)
    got, want = sess.run(feeds), cpu.run(feeds)
    for k, ref in want.items():
        cos, max_err, _ = cosine_and_error(ref, got[k])
        assert cos >= 0.9999 and max_err <= 1e-4 * max(float(np.max(np.abs(ref))), 1e-30), (
            k,
            cos,
            max_err,
        )
