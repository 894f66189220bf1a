"""NC4HW4 device storage (`assign-storage` with `vknn/kernels/layouts.py`):
which ops run packed and where conversions go (read off the compiled `vkd`
module, `vkd_checks`), that packed tensors really are [N, C/4, H, W, 4] in
device memory,
and that every packed kernel (conv GEMM / direct / split-K, pools, elementwise,
channel concat) and every boundary (segment inputs and outputs, reshapes of
packed tensors, flat-only kernels, broadcast epilogues, fp16 storage) gives
onnxruntime's numbers. Each graph also runs with `device_layout="flat"` and
the two must agree. Validation layer on, zero messages.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh

import vknn
from tests.unit.models import cosine_and_error
from tests.unit.vulkan import vkd_checks as V
from vknn.kernels.layouts import pack, packed_numel, plan_layouts, unpack
from vknn.runtime.plan import Step, TensorSpec

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def _w(*shape: int, scale: float = 0.3) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    g = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info(n, F, s) for n, s in inputs],
        [oh.make_tensor_value_info(n, F, None) for n in outputs],
        [nh.from_array(a, n) for n, a in inits.items()],
    )
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)  # type: ignore[no-any-return]


def _packed(module) -> list[V.Dispatch]:  # type: ignore[no-untyped-def]
    """The dispatches that run packed (conversions aside)."""
    return [d for d in V.dispatches(module) if d.packed and not d.is_convert]


def _run_both(model: onnx.ModelProto, feeds, device, precision: str = "high"):  # type: ignore[no-untyped-def]
    """Outputs with NC4HW4 and with flat storage, checked against
    onnxruntime; the flat module has no packed tensor. Returns the packed
    session's compiled module (for this device)."""
    ref = _ort(model, feeds)
    got = {}
    for layout in ("nc4hw4", "flat"):
        cfg = vknn.Config(
            precision=precision, device_layout=layout, allow_cpu_fallback=False, cache_file="off"
        )
        sess = vknn.Session(model, cfg)
        got[layout] = list(sess.run(feeds).values())
    for layout, outs in got.items():
        for r, o in zip(ref, outs, strict=True):
            cos, err, peak = cosine_and_error(r, o)
            if precision == "high":
                assert cos >= 0.99999 and err <= 1e-3 * max(peak, 1e-6), (layout, cos, err)
            else:
                assert cos >= 0.999 and np.isfinite(o).all(), (layout, cos)
    flat = V.device_module(model, device, precision=precision, device_layout="flat")
    assert all(b.layout == "flat" for d in V.dispatches(flat) for b in d.bufs)
    return V.device_module(model, device, precision=precision)


# -- pure helpers -----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 3, 2, 5), (2, 8, 3, 3), (1, 6, 1, 1), (3, 1, 4, 2)])
def test_pack_layout_and_roundtrip(shape: tuple[int, int, int, int]) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    p = pack(x).reshape(-1)
    assert p.size == packed_numel(shape)
    n, c, h, w = shape
    c4 = -(-c // 4)
    for idx in np.ndindex(*shape):
        i, ch, y, xx = idx
        assert p[((i * c4 + ch // 4) * h * w + y * w + xx) * 4 + ch % 4] == x[idx]
    np.testing.assert_array_equal(unpack(p, shape), x)


def _step(op: str, ins: list[int], out: int, shape, layout="nc4hw4", **attrs) -> Step:  # type: ignore[no-untyped-def]
    return Step(
        op, f"{op}{out}", ins, [out], [TensorSpec(f"t{out}", shape, "float32")],
        {**attrs, "vx.layout": layout},
    )  # fmt: skip


def test_plan_layouts() -> None:
    x = TensorSpec("x", (1, 8, 6, 6), "float32")
    w = TensorSpec("w", (8, 8, 1, 1), "float32")
    conv = dict(strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1)
    steps = [
        _step("vx.conv", [0, 1], 2, (1, 8, 6, 6), **conv),
        _step("vx.unary", [2], 3, (1, 8, 6, 6), kind="relu", params=()),
        _step("vx.binary", [3, 1], 4, (1, 8, 6, 6), kind="add"),  # constant operand
        _step("vx.conv", [3, 1], 5, (1, 8, 6, 6), layout="flat", **conv),  # labelled flat
        _step("vx.unary", [5], 6, (1, 8, 6, 6), kind="relu", params=()),
    ]
    specs = {0: x, 1: w, **{s.outputs[0]: s.out_specs[0] for s in steps}}
    lp = plan_layouts(steps, specs, constants={1}, outputs=[6])
    # The last relu reads a flat tensor: layout-agnostic kernels follow.
    assert [lp.step_packed(i) for i in range(5)] == [True, True, False, False, False]
    # Slots 2, 3 packed; 4 flat (its step reads a constant); 6 is an output.
    assert lp.packed_slots == {2, 3}
    assert plan_layouts(steps, specs, {1}, [6], enabled=False).packed_slots == set()
    # Packed tensors must fit one binding (channels padded to 4).
    tight = plan_layouts(steps, specs, {1}, [6], max_bytes=4 * 8 * 36 - 4)
    assert tight.packed_slots == set()


# -- on the device ------------------------------------------------------------------


def test_packed_tensor_memory_is_nc4hw4(session_device) -> None:  # type: ignore[no-untyped-def]
    """conv1's result, read by conv2 only, is in device memory as
    [N, C/4, H, W, 4] with C = 6 (a padded block): the program's commands
    up to conv1 are replayed and the range conv1 writes is read back."""
    from dataclasses import replace

    from vknn.runtime.executable import Executable
    from vknn.runtime.program import DispatchCmd, Program, VulkanSegment
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device
    from vknn.serialize import module_to_program

    w1, w2 = _w(6, 3, 3, 3), _w(5, 6, 1, 1)
    nodes = [
        oh.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
        oh.make_node("Conv", ["a", "w2"], ["y"], name="conv2"),
    ]
    model = _model(nodes, [("x", [1, 3, 7, 9])], ["y"], {"w1": w1, "w2": w2})
    x = RNG.standard_normal((1, 3, 7, 9)).astype(np.float32)
    prefix = _model(nodes[:1], [("x", [1, 3, 7, 9])], ["a"], {"w1": w1})
    (a_ref,) = _ort(prefix, {"x": x})
    module = V.lowered(model, from_caps(session_device.caps))
    (conv1,) = [d for d in V.dispatches(module) if d.node == "conv1"]
    ((out,),) = [conv1.writes]
    assert (out.shape, out.layout, out.storage) == ((1, 6, 7, 9), "nc4hw4", "f32")
    program = Program.decode(module_to_program(module))
    (seg,) = program.buckets[0].segments
    assert isinstance(seg, VulkanSegment)
    cmds = list(seg.commands)
    (i,) = [k for k, c in enumerate(cmds) if isinstance(c, DispatchCmd) and "conv1" in c.label]
    wrote = cmds[i].bindings[-1]
    assert wrote.size == 4 * packed_numel((1, 6, 7, 9))
    # Stop after conv1 and its barrier (the host reads next).
    cut = replace(seg, commands=tuple(cmds[: i + 2]))
    program = replace(program, buckets=(replace(program.buckets[0], segments=(cut,)),))
    device, pipelines, _ = shared_device()
    exe = Executable(program, device, pipelines)
    try:
        exe.run(0, {"x": x})
        (sc,) = exe._all[0].segments.values()
        buf = sc.buffers[wrote.arena]
        if not buf.host_visible:
            pytest.skip("arena not host-visible on this device")
        raw = buf.read(wrote.offset, wrote.size).view(np.float32)
    finally:
        exe.close()
    np.testing.assert_allclose(unpack(raw, (1, 6, 7, 9)), a_ref, rtol=1e-5, atol=1e-5)


def _cnn() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """C = 3 input, odd channel counts, grouped / depthwise / strided / dilated
    convs, pools with pads, a residual add epilogue, a broadcast add (flat),
    channel concats (blocks of 4: packed and placed; C = 6: flat), global pool,
    flatten, gemm."""
    inits = {
        "w0": _w(12, 3, 3, 3), "b0": _w(12),
        "w1": _w(12, 6, 3, 3), "w2": _w(12, 1, 3, 3), "w3": _w(12, 12, 1, 1),
        "w4": _w(8, 12, 3, 3), "w5": _w(6, 12, 1, 1), "w6": _w(6, 12, 1, 1),
        "bias": _w(1, 12, 1, 1), "fc": _w(20, 10), "fcb": _w(10),
        "shape": np.array([1, -1], np.int64),
    }  # fmt: skip
    nodes = [
        oh.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
        oh.make_node("Relu", ["c0"], ["r0"]),
        oh.make_node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1], group=2),
        oh.make_node("Conv", ["c1", "w2"], ["c2"], pads=[2, 2, 2, 2], group=12, dilations=[2, 2]),
        oh.make_node("Conv", ["c2", "w3"], ["c3"]),
        oh.make_node("Add", ["c3", "r0"], ["s0"]),  # residual: same shape
        oh.make_node("Add", ["s0", "bias"], ["s1"]),  # broadcast
        oh.make_node("MaxPool", ["s1"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
        oh.make_node("Conv", ["p0", "w4"], ["c4"], pads=[1, 1, 1, 1], strides=[2, 2]),
        oh.make_node("Conv", ["p0", "w5"], ["c5"], strides=[2, 2]),
        oh.make_node("Concat", ["c4", "c4"], ["k0"], axis=1),  # 8 + 8: packed
        oh.make_node("Conv", ["p0", "w6"], ["c6"], strides=[2, 2]),
        oh.make_node("Concat", ["c5", "c6"], ["k1"], axis=1),  # 6 + 6: flat
        oh.make_node("AveragePool", ["k0"], ["p1"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        oh.make_node("Sigmoid", ["p1"], ["g0"]),
        oh.make_node("GlobalAveragePool", ["g0"], ["gp"]),
        oh.make_node("GlobalMaxPool", ["k1"], ["gq"]),
        oh.make_node("Concat", ["gp", "gq"], ["gc"], axis=1),  # 16 + 12 -> [1, 28, 1, 1]
        oh.make_node("Slice", ["gc", "st", "en", "ax"], ["gs"]),
        oh.make_node("Reshape", ["gs", "shape"], ["f"]),
        oh.make_node("Gemm", ["f", "fc", "fcb"], ["y"]),
    ]
    inits.update(
        st=np.array([0], np.int64), en=np.array([20], np.int64), ax=np.array([1], np.int64)
    )
    model = _model(nodes, [("x", [1, 3, 15, 17])], ["y", "k0"], inits)
    return model, {"x": RNG.standard_normal((1, 3, 15, 17)).astype(np.float32)}


@pytest.mark.parametrize("precision", ["high", "low"])
def test_cnn_graph_packed_vs_flat(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    model, feeds = _cnn()
    module = _run_both(model, feeds, session_device, precision)
    packed = _packed(module)
    assert len(packed) >= 8, [d.label for d in packed]
    assert {"Conv", "MaxPool", "AveragePool", "Concat"} <= {d.kind for d in packed}
    # Packed k x k convs (not depthwise) read their weights as OHWI copies.
    transforms = [t for _, t, _ in V.weight_forms(module) if t]
    assert set(transforms) == {"ohwi"} and len(transforms) >= 2
    # Segment outputs are flat.
    assert all(b.layout == "flat" for b in V.downloads(module))


def test_split_k_conv_packed(session_device) -> None:  # type: ignore[no-untyped-def]
    """A long-K conv on a tiny grid splits K; partials and the reduce pass
    run in packed order, with a residual epilogue and M = 10 (padded)."""
    w, r = _w(10, 512, 3, 3, scale=0.05), _w(10, 10, 1, 1)
    nodes = [
        oh.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        oh.make_node("Conv", ["c", "r"], ["d"]),
        oh.make_node("Add", ["c", "d"], ["e"]),
        oh.make_node("Relu", ["e"], ["y"]),
    ]
    model = _model(nodes, [("x", [1, 512, 4, 4])], ["y"], {"w": w, "r": r})
    feeds = {"x": RNG.standard_normal((1, 512, 4, 4)).astype(np.float32)}
    module = _run_both(model, feeds, session_device)
    labels = [d.label for d in V.dispatches(module)]
    (part,) = [d for d in V.dispatches(module) if "split-K x" in d.label] or [labels]
    (total,) = [d for d in V.dispatches(module) if "split-K sum" in d.label] or [labels]
    # The partials read the packed input; the sum writes the packed result.
    assert part.reads[0].layout == "nc4hw4" and total.packed, labels


def test_packed_output_of_reshape_and_segment(session_device) -> None:  # type: ignore[no-untyped-def]
    """A packed conv result reshaped (unpacked, no longer an alias), and one
    that is itself a model output (written packed, unpacked after)."""
    w = _w(5, 4, 3, 3)
    nodes = [
        oh.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        oh.make_node("Relu", ["c"], ["r"]),
        oh.make_node("Reshape", ["r", "s"], ["y"]),
        oh.make_node("Sigmoid", ["r"], ["z"]),
    ]
    inits = {"w": w, "s": np.array([1, 5, -1], np.int64)}
    model = _model(nodes, [("x", [1, 4, 6, 6])], ["y", "z", "c"], inits)
    feeds = {"x": RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)}
    module = _run_both(model, feeds, session_device)
    kinds = [c.split()[0] for c in V.conversions(module)]
    assert "fp32->fp32/nc4hw4" in kinds and "fp32/nc4hw4->fp32" in kinds, kinds


def test_disable_packing_keeps_everything_flat(session_device) -> None:  # type: ignore[no-untyped-def]
    model, _ = _cnn()
    module = V.device_module(model, session_device, device_layout="flat")
    assert not _packed(module) and V.conversions(module) == []
    with pytest.raises(vknn.errors.InvalidArgument, match="device_layout"):
        vknn.Config(device_layout="nhwc")


def test_rank4_elementwise_between_flat_tensors_stays_flat(session_device) -> None:  # type: ignore[no-untyped-def]
    """Attention-style scores + mask -> softmax: rank 4 (labelled nc4hw4) but
    nothing around it is packed, so no conversion is spent on it."""
    nodes = [
        oh.make_node("Add", ["s", "m"], ["a"]),
        oh.make_node("Softmax", ["a"], ["y"], axis=-1),
    ]
    g = oh.make_graph(
        nodes,
        "g",
        [
            oh.make_tensor_value_info("s", F, [1, 4, 16, 16]),
            oh.make_tensor_value_info("m", F, [1, 4, 16, 16]),
        ],
        [oh.make_tensor_value_info("y", F, None)],
    )
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    feeds = {k: RNG.standard_normal((1, 4, 16, 16)).astype(np.float32) for k in ("s", "m")}
    module = _run_both(model, feeds, session_device)
    assert not _packed(module) and V.conversions(module) == []


def _se_block(c: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """conv -> relu -> squeeze-excite (global pool, 1x1 convs, sigmoid) ->
    x * scale (a channel broadcast) -> conv."""
    r = max(1, c // 2)
    inits = {"w0": _w(c, 3, 3, 3), "w1": _w(r, c, 1, 1), "w2": _w(c, r, 1, 1), "w3": _w(5, c, 1, 1)}
    nodes = [
        oh.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1]),
        oh.make_node("Relu", ["a"], ["ra"]),
        oh.make_node("GlobalAveragePool", ["ra"], ["g"]),
        oh.make_node("Conv", ["g", "w1"], ["s1"]),
        oh.make_node("Relu", ["s1"], ["rs"]),
        oh.make_node("Conv", ["rs", "w2"], ["s2"]),
        oh.make_node("Sigmoid", ["s2"], ["s"]),
        oh.make_node("Mul", ["ra", "s"], ["m"], name="mul"),
        oh.make_node("Conv", ["m", "w3"], ["y"]),
    ]
    model = _model(nodes, [("x", [1, 3, 12, 12])], ["y"], inits)
    return model, {"x": RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)}


@pytest.mark.parametrize("precision", ["high", "low"])
def test_squeeze_excite_stays_packed(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """C = 8: the channel-broadcast Mul runs packed (its scale read as blocks
    of 4 channels) and [N, C, 1, 1] tensors need no conversion (same bytes in
    both layouts): only the model input and output are converted. C = 6: the Mul runs
    flat, with conversions, and the numbers still match."""
    model, feeds = _se_block(8)
    module = _run_both(model, feeds, session_device, precision)
    ds = V.dispatches(module)
    muls = [d for d in ds if "mul" in d.node.split(",")]
    assert muls and all(d.packed for d in muls), [d.label for d in ds]
    convs = [d for d in ds if d.is_convert]
    # Packing x, unpacking y: one conversion each, nothing in between.
    assert len(convs) == 2 and all(V.is_boundary_conversion(module, d) for d in convs), [
        d.label for d in convs
    ]
    model6, feeds6 = _se_block(6)
    module6 = _run_both(model6, feeds6, session_device, precision)
    assert len(V.conversions(module6)) > 1
