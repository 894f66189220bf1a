"""Vulkan data-movement, cast/select, quantization and integer kernels, and
the compiler's dtype-aware storage and aliasing (reshapes and placed concat
inputs record nothing), small ONNX graphs through the real pipeline against
the CPU oracle on the test device (lavapipe here) with the validation layer
on and zero messages allowed. Data movement is exact in every dtype and
precision (fp16 storage is compared with the oracle run on fp16-rounded
inputs and data constants); linear resize is within fp32 (fp16: 2e-3).
The quant kernel is driven through a graph pipeline without `dequantize`
(which otherwise rewrites lone Q/DQ nodes into float ops and a cast)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from onnx import numpy_helper

from tests.unit.vulkan.harness import (
    cpu,
    dispatches,
    graph,
    lowered,
    node,
    run_for_target,
    vk_session,
)
from vknn.kernels import gate
from vknn.kernels.cast_select import collapse_n
from vknn.kernels.data_movement import collapse_copy
from vknn.kernels.targets import PRESETS
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import from_caps

PRECISIONS = ["high", "low"]
INT64_MIN = int(np.iinfo(np.int64).min)


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------


def _fp16_view(x: np.ndarray, precision: str) -> np.ndarray:
    """What the device holds of a host float tensor (fp16 storage rounds)."""
    if precision == "low" and x.dtype.kind == "f":
        return np.clip(x, -65504, 65504).astype(np.float16).astype(x.dtype)
    return x


def _rounded(model, precision: str):  # type: ignore[no-untyped-def]
    """`model` with its float constants as the device stores them."""
    if precision != "low":
        return model
    out = type(model)()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype.kind == "f":
            t.CopyFrom(numpy_helper.from_array(_fp16_view(a, precision), t.name))
    return out


def check(  # type: ignore[no-untyped-def]
    model,
    feeds: dict[str, np.ndarray],
    precision: str = "high",
    atol: float = 0.0,
    data_consts: bool = False,
    **config,
):
    """Run `model` on Vulkan (no CPU fallback) and on the CPU oracle (inputs
    rounded as the device stores them; float constants too with
    `data_consts`, when they are tensor data rather than parameters such as
    resize scales) and compare every output: dtype, shape, then exactly (or
    within `atol`). Returns the Vulkan session."""
    sess = vk_session(model, precision=precision, **config)
    got = sess.run(feeds)
    oracle = _rounded(model, precision) if data_consts else model
    ref = cpu(oracle, {k: _fp16_view(v, precision) for k, v in feeds.items()})
    for name, want in ref.items():
        want = _fp16_view(want, precision)
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, (
            name, got[name].dtype, want.dtype, got[name].shape, want.shape,
        )  # fmt: skip
        if atol:
            np.testing.assert_allclose(got[name].astype(np.float64), want, rtol=atol, atol=atol)
        else:
            np.testing.assert_array_equal(got[name], want)
    return sess


def one_op(  # type: ignore[no-untyped-def]
    op: str, inputs: dict[str, np.ndarray], consts: dict[str, Any] | None = None,
    opset: int = 17, **attrs,
):  # fmt: skip
    """A model of one `op` over graph inputs `inputs` then constants `consts`
    (an empty name: an absent optional input)."""
    names = [*inputs, *(consts or {})]
    inits = {k: np.asarray(v) for k, v in (consts or {}).items() if k}
    ins = {k: (v.shape, v.dtype.name) for k, v in inputs.items()}
    return graph([node(op, names, ["y"], **attrs)], ins, ["y"], inits, opset=opset)


def _rand(shape, dtype: str, seed: int = 0) -> np.ndarray:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return np.asarray((rng.standard_normal(shape) * 3).astype(dtype))


def _i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


DTYPES = ["float32", "float16", "int64", "int32", "int8", "uint8", "bool"]


# ---------------------------------------------------------------------------
# Pure parts
# ---------------------------------------------------------------------------


def _step(op: str, inputs: list[int], out: int, shape, dtype: str, **attrs) -> Step:  # type: ignore[no-untyped-def]
    return Step(op, f"n{out}", inputs, [out], [TensorSpec(f"t{out}", tuple(shape), dtype)], attrs)


def test_collapse_copy_and_broadcast() -> None:
    assert collapse_copy([2, 3, 4], [12, 4, 1], [12, 4, 1]) == ([], [], [])
    # A transpose (0, 2, 1) of [2, 3, 4]: the leading dim merges nowhere.
    assert collapse_copy([2, 4, 3], [12, 1, 4], [12, 3, 1]) == ([2, 4, 3], [12, 1, 4], [12, 3, 1])
    assert collapse_copy([1, 5, 1], [5, 1, 1], [5, 1, 1]) == ([], [], [])
    dims, st = collapse_n((2, 3, 4), [(2, 3, 4), (3, 1), ()])
    assert dims == [2, 3, 4] and st == [[12, 4, 1], [0, 1, 0], [0, 0, 0]]
    assert collapse_n((2, 3), [(2, 3), (2, 3)]) == ([], [[], []])


def test_gates_refuse_with_reasons() -> None:
    caps = PRESETS["lavapipe"]
    big = _step("vx.transpose", [0], 1, (8, 1 << 20), "float32", perm=(1, 0))
    spec = TensorSpec("x", (1 << 20, 8), "float32")
    why = gate(big, caps.with_(max_storage_buffer_range=1 << 20), [spec])
    assert why is not None and "maxStorageBufferRange" in why and why.startswith("Transpose: ")
    why = gate(_step("vx.transpose", [0], 1, (2, 2), "float64", perm=(1, 0)), caps)
    assert why is not None and "float64" in why
    cubic = _step(
        "vx.resize", [0], 1, (1, 1, 4, 4), "float32", mode="cubic", scales=(1, 1, 2, 2),
        coordinate_mode="half_pixel", nearest_mode="floor", cubic_coeff_a=-0.75,
        exclude_outside=False,
    )  # fmt: skip
    assert "cubic" in (gate(cubic, caps) or "")
    assert gate(_step("vx.unary", [0], 1, (4,), "int32", kind="exp"), caps, [
        TensorSpec("x", (4,), "int32")
    ]) is not None  # fmt: skip
    assert gate(_step("vx.reshape", [0], 1, (4,), "uint32"), caps) is not None


def test_refusals_through_the_front_door(session_device) -> None:  # type: ignore[no-untyped-def]
    """Cubic resize and float64 tensors, fallback off: one error naming the op."""
    from vknn.errors import Unsupported

    x = _rand((1, 1, 2, 2), "float32")
    cubic = one_op("Resize", {"x": x}, {"": None, "s": np.array([1, 1, 2, 2], np.float32)},
                   mode="cubic")  # fmt: skip
    with pytest.raises(Unsupported, match="Resize: .*cubic"):
        vk_session(cubic)
    f64 = one_op("Transpose", {"x": np.zeros((2, 2))}, perm=[1, 0])
    with pytest.raises(Unsupported, match="Transpose: .*float64"):
        vk_session(f64)


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(session_device, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    cases = [
        ((5,), (0,)),
        ((3, 4), (1, 0)),
        ((2, 3, 4), (2, 0, 1)),
        ((1, 8, 2, 5), (0, 2, 3, 1)),
        ((2, 3, 1, 4, 2), (4, 3, 2, 1, 0)),
        ((2, 1, 3, 2, 2, 3), (0, 1, 4, 2, 5, 3)),  # depth-to-space's permutation
    ]
    for i, (shape, perm) in enumerate(cases):
        x = _rand(shape, dtype, i)
        check(one_op("Transpose", {"x": x}, perm=list(perm)), {"x": x}, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_slice_with_negative_steps(session_device, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((4, 6, 5), dtype)
    cases = [
        ((0, 1, 0), (4, 5, 5), (1, 2, 1)),
        ((3, 5, 4), (INT64_MIN,) * 3, (-1, -2, -1)),  # full reverse: through index 0
        ((-1, -6, 1), (-5, 6, 5), (-1, 3, 2)),  # negative starts and ends
        ((2, 0, 1), (0, 6, 5), (-1, 3, 2)),
        ((1, 2, 3), (2, 3, 4), (1, 1, 1)),
    ]
    for starts, ends, steps in cases:
        consts = {"s": _i64(*starts), "e": _i64(*ends), "a": _i64(0, 1, 2), "k": _i64(*steps)}
        check(one_op("Slice", {"x": x}, consts), {"x": x}, precision)


def _concat(parts: dict[str, np.ndarray], consts: dict[str, np.ndarray], axis: int):  # type: ignore[no-untyped-def]
    return one_op("Concat", parts, consts, axis=axis)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_concat_copy_and_in_place(session_device, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    # Interleaved parts (axis 2 of batch 2): copies.
    a, b = _rand((2, 3, 4), dtype, 1), _rand((2, 3, 2), dtype, 2)
    check(_concat({"a": a, "b": b}, {}, 2), {"a": a, "b": b}, precision)
    # Axis 0 and a constant part.
    model = _concat({"a": a}, {"c": _rand((2, 3, 4), dtype, 3)}, 0)
    check(model, {"a": a}, precision, data_consts=True)
    # Batch-1 channel concat of values the segment computes: they are placed
    # (written by their producers into their part), the graph input is copied.
    x = _rand((1, 4, 2, 2), dtype, 4)
    kinds = {"bool": ("Not", "Not"), "int64": ("Neg", "Abs")}.get(dtype, ("Relu", "Neg"))
    nodes = [
        node(kinds[0], ["x"], ["p"]),
        node(kinds[1], ["x"], ["q"]),
        node("Concat", ["p", "x", "q"], ["y"], axis=1),
    ]
    model = graph(nodes, {"x": (x.shape, dtype)}, ["y"])
    sess = check(model, {"x": x}, precision, pipeline="lower")
    names = _dispatch_labels(sess)
    assert Counter(names)["Concat_2 (Concat)"] == 1, names  # only x's part is copied
    assert len(names) == 3, names


def _shaders_run(sess) -> set[str]:  # type: ignore[no-untyped-def]
    """The shader families a session's program dispatches."""
    from vknn.runtime.program import DispatchCmd, VulkanSegment

    used = {
        c.kernel
        for seg in sess.bucket.spec.segments
        if isinstance(seg, VulkanSegment)
        for c in seg.commands
        if isinstance(c, DispatchCmd)
    }
    return {sess.program.kernels[k].shader for k in used}


def _dispatch_labels(sess) -> list[str]:  # type: ignore[no-untyped-def]
    from vknn.runtime.program import DispatchCmd, VulkanSegment

    return [
        c.label
        for seg in sess.bucket.spec.segments
        if isinstance(seg, VulkanSegment)
        for c in seg.commands
        if isinstance(c, DispatchCmd)
    ]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_concat_in_place_chain_and_shared_input(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """DenseNet's pattern: every layer's output feeds every later concat; each
    value is placed in its first concat and copied into the later ones."""
    shape = (1, 2, 2, 2)  # 32-byte parts: every offset may start a binding
    x = _rand(shape, "float32")
    nodes = [node("Relu", ["x"], ["f0"])]
    feats = ["f0"]
    for layer in range(3):
        cat, t, f = f"cat{layer}", f"t{layer}", f"f{layer + 1}"
        nodes.append(node("Concat", list(feats), [cat], axis=1))
        nodes.append(node("Tanh", [cat], [t]))
        lo = layer % 2
        nodes.append(node("Slice", [t, f"s{lo}", f"e{lo}", "ax"], [f]))
        feats.append(f)
    nodes.append(node("Concat", list(feats), ["y"], axis=1))
    inits = {"s0": _i64(0), "e0": _i64(2), "s1": _i64(1), "e1": _i64(3), "ax": _i64(1)}
    model = graph(nodes, {"x": (shape, "float32")}, ["y"], inits)
    sess = check(
        model, {"x": x}, precision, atol=1e-6 if precision == "high" else 2e-3, pipeline="lower"
    )
    copies = sum(1 for name in _dispatch_labels(sess) if name.endswith("(Concat)"))
    parts = 2 + 3 + 4  # the one-input concat is its input: no op
    # f0 and f1 placed in cat1, f2 in cat2, f3 in y; every other part copied.
    assert parts - copies == 4, _dispatch_labels(sess)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_gather_any_axis_negative_indices(
    session_device, dtype: str, idx_dtype: str, precision: str
) -> None:  # type: ignore[no-untyped-def]
    x = _rand((3, 4, 5), dtype)
    for axis in range(3):
        dim = x.shape[axis]
        for ishape in [(), (2,), (2, 3)]:
            idx = np.random.default_rng(axis).integers(-dim, dim, ishape).astype(idx_dtype)
            feeds = {"x": x, "i": np.asarray(idx)}
            check(one_op("Gather", feeds, axis=axis), feeds, precision)
    # Constant indices, the common case (embedding lookups, shape paths).
    model = one_op("Gather", {"x": x}, {"i": np.array([-1, 2], idx_dtype)}, axis=1)
    check(model, {"x": x}, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_expand(session_device, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for shape, out in [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 3), (2, 4, 3)), ((), (2, 2))]:
        x = _rand(shape, dtype)
        check(one_op("Expand", {"x": x}, {"s": _i64(*out)}), {"x": x}, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(session_device, mode: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for dtype in ["float32", "int64"]:
        x = _rand((1, 2, 4, 5), dtype)
        for pads in [
            (0, 0, 1, 2, 0, 0, 2, 1),
            (0, 1, 5, 0, 0, 0, 0, 7),
            (0, 0, -1, 2, 0, 0, 1, -2),
        ]:
            consts: dict[str, Any] = {"p": _i64(*pads)}
            if mode == "constant":
                consts["v"] = np.array(1.5 if dtype == "float32" else 7, dtype)
            check(one_op("Pad", {"x": x}, consts, opset=19, mode=mode), {"x": x}, precision)


RESIZE_COORDS = [
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "half_pixel_symmetric",
]


def _resize(x: np.ndarray, scales, coord: str, mode: str, nearest: str = "floor"):  # type: ignore[no-untyped-def]
    consts = {"": None, "s": np.array(scales, np.float32)}
    return one_op(
        "Resize", {"x": x}, consts, opset=19, mode=mode, coordinate_transformation_mode=coord,
        nearest_mode=nearest, cubic_coeff_a=-0.75, exclude_outside=0,
    )  # fmt: skip


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("coord", RESIZE_COORDS)
def test_resize(session_device, coord: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((1, 2, 5, 6), "float32")
    for scales in [(1.0, 1.0, 2.0, 2.0), (1.0, 1.0, 0.6, 1.5), (1.0, 1.0, 3.0, 0.5)]:
        for nearest in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
            check(_resize(x, scales, coord, "nearest", nearest), {"x": x}, precision)
        tol = 1e-5 if precision == "high" else 2e-3
        check(_resize(x, scales, coord, "linear"), {"x": x}, precision, atol=tol)
    # Nearest on integers: raw words.
    xi = _rand((1, 1, 3, 3), "int64")
    check(_resize(xi, (1.0, 1.0, 2.0, 2.0), coord, "nearest"), {"x": xi}, precision)


# ---------------------------------------------------------------------------
# Cast, select, integer ops, quantization
# ---------------------------------------------------------------------------

ONNX_DTYPE = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("src", DTYPES)
def test_cast_matrix(session_device, src: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((3, 7), src, 5)
    if src.startswith("float"):
        x[0, :4] = np.array([0.0, -0.0, 2.5, -2.5], src)  # bool of zero, truncation
        x = np.clip(x, -100, 100).astype(src)
    for dst in DTYPES:
        # A negative float -> unsigned is undefined in C.
        x_in = np.abs(x) if src.startswith("float") and dst == "uint8" else x
        model = one_op("Cast", {"x": x_in}, to=ONNX_DTYPE[dst])
        if dst == src:  # no op at all: the input is the output, never stored
            out = vk_session(model, precision=precision).run({"x": x_in})["y"]
            assert out.dtype == x_in.dtype and np.array_equal(out, x_in, equal_nan=True)
            continue
        check(model, {"x": x_in}, precision)


def test_cast_to_float16_in_fp32_storage_rounds_like_numpy(session_device) -> None:  # type: ignore[no-untyped-def]
    # Ties to even, subnormals, and overflow to inf as numpy's astype.
    x = np.array(
        [1 + 2**-11, 1 + 3 * 2**-11, 65519.0, 65520.0, 1e6, -1e6, 2**-25, 3 * 2**-25, 1e-8, np.nan],
        np.float32,
    )
    check(one_op("Cast", {"x": x}, to=ONNX_DTYPE["float16"]), {"x": x}, "high")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_select_broadcasts(session_device, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for sc, sx, sy in [
        ((2, 3), (2, 3), (2, 3)),
        ((3, 1), (1, 4), ()),
        ((2, 1, 4), (3, 1), (2, 3, 4)),
    ]:
        feeds = {"c": _rand(sc, "bool", 1), "a": _rand(sx, dtype, 2), "b": _rand(sy, dtype, 3)}
        check(one_op("Where", feeds), feeds, precision)


INT_OPS = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "mod": "Mod", "max": "Max",
           "min": "Min"}  # fmt: skip
CMP_OPS = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
def test_integer_binary(session_device, dtype: str) -> None:  # type: ignore[no-untyped-def]
    a, b = _rand((3, 4), dtype, 1), _rand((4,), dtype, 2)
    b[0] = 0  # div/mod by zero give 0
    if np.dtype(dtype).kind == "u":
        b[1] = 3
    feeds = {"a": a, "b": b}
    for op in [*INT_OPS.values(), *CMP_OPS]:
        check(one_op(op, feeds), feeds)
    if dtype == "uint8":
        sh = {"a": a, "b": np.array([0, 1, 7, 9], np.uint8)}
        for direction in ["LEFT", "RIGHT"]:
            check(one_op("BitShift", sh, direction=direction), sh)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_float_comparisons_and_logic(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    a = _rand((2, 3, 4), "float32", 1)
    b = np.round(_rand((3, 1), "float32", 2))
    a[0, 0, :2] = [np.nan, b[0, 0]]
    for op in CMP_OPS:
        check(one_op(op, {"a": a, "b": b}), {"a": a, "b": b}, precision)
    pq = {"p": _rand((2, 3), "bool", 3), "q": _rand((3,), "bool", 4)}
    for op in ["And", "Or", "Xor"]:
        check(one_op(op, pq), pq)
    check(one_op("Not", {"p": pq["p"]}), {"p": pq["p"]})
    x = _rand((9,), "int64", 5)
    for op in ["Abs", "Neg", "Relu", "Sign", "Identity"]:
        check(one_op(op, {"x": x}), {"x": x})


KERNEL_PIPELINE = "infer-shapes,const-fold,convert-onnx-to-vx"
"""The graph pipeline without `dequantize` and fusion: QuantizeLinear and
DequantizeLinear stay `vx.quantize` / `vx.dequantize` and run the quant kernel."""


def _quant_case(qtype: str, per_axis: bool, zp: bool):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    scale = np.array([0.5, 0.25, 2.0], np.float32) if per_axis else np.array(0.5, np.float32)
    # Exact ties (k + 0.5) * scale: round half to even decides them.
    x[0, :, 0] = np.float32(2.5) * (scale if per_axis else np.full(3, scale))
    x[0, :, 1] = np.float32(-3.5) * (scale if per_axis else np.full(3, scale))
    x[1, 0, :] = [1e9, -1e9, 300.0, -300.0]  # saturation
    consts: dict[str, Any] = {"scale": scale}
    if zp:
        lo = 0 if qtype == "uint8" else -3
        consts["zp"] = np.full(scale.shape, lo + 10, qtype)
    elif qtype != "uint8":
        consts["zp"] = np.zeros(scale.shape, qtype)  # the zero point's dtype names the output
    return x, consts, _rand(x.shape, qtype, 3)


@pytest.mark.parametrize("qtype", ["int8", "uint8", "int32"])
@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("zp", [False, True])
def test_quantize_dequantize(session_device, qtype: str, per_axis: bool, zp: bool) -> None:  # type: ignore[no-untyped-def]
    x, consts, xi = _quant_case(qtype, per_axis, zp)
    if qtype != "int32":  # QuantizeLinear has no int32 output in ONNX
        q = one_op("QuantizeLinear", {"x": x}, consts, axis=1)
        sess = check(q, {"x": x}, pipeline=KERNEL_PIPELINE)
        assert _shaders_run(sess) == {"quant"}
    d = one_op("DequantizeLinear", {"x": xi}, consts, axis=1)
    sess = check(d, {"x": xi}, pipeline=KERNEL_PIPELINE)
    assert _shaders_run(sess) == {"quant"}


@pytest.mark.parametrize("qtype", ["int8", "uint8", "int32"])
def test_quantize_dequantize_standard_pipeline_on_vulkan(session_device, qtype: str) -> None:  # type: ignore[no-untyped-def]
    """What a model gets: the dequantize pass turns a lone QuantizeLinear into
    div/round/clip/cast and a lone DequantizeLinear into cast/sub/mul, which
    fuse (int8/int32 casts into fused kernels with integer inputs or results);
    the same numbers, on Vulkan."""
    x, consts, xi = _quant_case(qtype, True, True)
    if qtype != "int32":
        check(one_op("QuantizeLinear", {"x": x}, consts, axis=1), {"x": x})
    check(one_op("DequantizeLinear", {"x": xi}, consts, axis=1), {"x": xi}, atol=1e-6)


# ---------------------------------------------------------------------------
# Storage: aliasing, dtypes, memory models
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
def test_reshape_aliases_and_extends_live_range(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """reshape -> relu -> reshape (an output) -> neg -> tanh, plus a reshape
    of the relu's input read last and one of a constant: no dispatch for the
    reshapes, and the aliased memory stays valid until the alias's last
    reader (an arena reuse too early would change the add's result)."""
    x = _rand((2, 3, 4), "float32")
    c = _rand((6,), "float32", 9)
    nodes = [
        node("Reshape", ["x", "s64"], ["r1"]),
        node("Relu", ["r1"], ["relu"]),
        node("Reshape", ["relu", "s24"], ["flat"]),
        node("Neg", ["flat"], ["neg"]),
        node("Tanh", ["neg"], ["tanh"]),
        node("Reshape", ["c", "s61"], ["c61"]),
        node("Add", ["r1", "c61"], ["sum"]),
    ]
    inits = {"c": c, "s64": _i64(6, 4), "s24": _i64(24), "s61": _i64(6, 1)}
    model = graph(nodes, {"x": (x.shape, "float32")}, ["flat", "tanh", "sum"], inits)
    sess = check(
        model, {"x": x}, precision, atol=1e-6 if precision == "high" else 2e-3, pipeline="lower"
    )
    names = _dispatch_labels(sess)
    assert sorted(names) == ["Add_6 (Add)", "Neg_3 (Neg)", "Relu_1 (Relu)", "Tanh_4 (Tanh)"]


def test_int64_past_int32_moves_exactly(session_device) -> None:  # type: ignore[no-untyped-def]
    """int64 is stored as int64: values past 32 bits move exactly (they were
    refused while int64 was stored as int32)."""
    sess = vk_session(one_op("Transpose", {"ids": np.zeros((1, 3), np.int64)}, perm=[1, 0]))
    ids = np.array([[1, 1 << 40, INT64_MIN]], np.int64)
    np.testing.assert_array_equal(sess.run({"ids": ids})["y"], ids.T)


@pytest.mark.parametrize(
    "memory,pipeline",
    [
        ("unified", "lower"),
        ("staging", "lower"),
        ("unified", "standard"),
    ],
)
def test_mixed_dtypes_in_fp16_program_staging_and_split(
    session_device, memory: str, pipeline: str
) -> None:  # type: ignore[no-untyped-def]
    """An fp16 program holds int words next to fp16 floats; staging copies
    and split dispatches (2 workgroups at most per dispatch) give the same
    bytes (`pipeline="lower"`: each op its own kernel)."""
    x = _rand((3, 400), "float32")
    ids = np.array([2, -1, 0, 1], np.int64)
    nodes = [
        node("Gather", ["x", "ids"], ["g"], axis=0),
        node("Cast", ["g"], ["i"], to=ONNX_DTYPE["int32"]),
        node("Greater", ["i", "zero"], ["pos"]),
        node("Where", ["pos", "g", "minus"], ["y"]),
    ]
    consts = {"zero": np.array(0, np.int32), "minus": np.array(-1.0, np.float32)}
    ins = {"x": (x.shape, "float32"), "ids": (ids.shape, "int64")}
    model = graph(nodes, ins, ["i", "y"], consts)
    target = from_caps(session_device.caps).with_(
        max_compute_work_group_count=(2, 65535, 65535), memory=memory
    )
    got, program = run_for_target(
        model, target, {"x": x, "ids": ids},
        precision="low", allow_cpu_fallback=False, pipeline=pipeline,
    )  # fmt: skip
    seg = program.buckets[0].segments[0]
    assert any(m == "staging" for m, _ in seg.arenas) == (memory == "staging")
    assert seg.dispatches > 4  # at least one op split
    want = cpu(model, {"x": _fp16_view(x, "low"), "ids": ids})
    np.testing.assert_array_equal(got["i"], want["i"])
    np.testing.assert_array_equal(got["y"], _fp16_view(want["y"], "low"))


@pytest.mark.parametrize("shape", [(1, 3, 4, 4), (2, 5)])
def test_every_movement_op_validates_clean_in_one_segment(session_device, shape) -> None:  # type: ignore[no-untyped-def]
    """A chain of movement ops in one command buffer: barriers between them
    (synchronization validation is on) and an exact result."""
    x = _rand(shape, "float32")
    r = len(shape)
    perm = list(reversed(range(r)))
    t_shape = [shape[p] for p in perm]
    nodes = [
        node("Transpose", ["x"], ["t"], perm=perm),
        node("Pad", ["t", "pads"], ["p"], mode="reflect"),
        node("Slice", ["p", "starts", "ends"], ["s"]),
        node("Transpose", ["s"], ["u"], perm=perm),
        node("Sub", ["u", "x"], ["y"]),
    ]
    inits = {"pads": _i64(*[1] * (2 * r)), "starts": _i64(*[1] * r),
             "ends": _i64(*[d + 1 for d in t_shape])}  # fmt: skip
    sess = check(graph(nodes, {"x": (shape, "float32")}, ["y"], inits), {"x": x})
    assert len(sess.program.buckets[0].segments) == 1


# ---------------------------------------------------------------------------
# Whole light models (precision high: with random weights ShuffleNet's
# activations reach 2.7e6, past fp16's range)
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shufflenet", "inception_v1", "densenet121"])
def test_light_model_on_vulkan_matches_cpu(session_device, name: str) -> None:  # type: ignore[no-untyped-def]
    from tests.unit.models import cosine_and_error, light_model, model_inputs
    from vknn.runtime.executable import Executable
    from vknn.runtime.program import Program
    from vknn.runtime.vulkan.context import shared_device
    from vknn.serialize import module_to_program

    model = light_model(f"light_{name}.onnx")
    feeds = model_inputs(model, {})
    want = cpu(model, feeds)
    module = lowered(model, from_caps(session_device.caps))
    # Data movement without a copy or a dispatch where it can: every reshape
    # of a flat tensor, and batch-1 channel concats' parts placed.
    kinds = Counter(d.attributes["vkd.kind"].data for d in dispatches(module))  # type: ignore[attr-defined]
    parts = sum(len(n.input) for n in model.graph.node if n.op_type == "Concat")
    assert kinds["Reshape"] == kinds["Flatten"] == 0, kinds
    assert kinds["Concat"] < parts, (kinds["Concat"], parts)
    program = Program.decode(module_to_program(module))
    fallbacks = {n: r for n, _, r in program.buckets[0].nodes if r}
    print(f"{name}: {len(fallbacks)} node(s) on the CPU: {fallbacks}; dispatches {kinds}")
    assert not fallbacks
    _, pipelines, _ = shared_device()
    exe = Executable(program, session_device, pipelines)
    try:
        got = exe.run(0, feeds)
    finally:
        exe.close()
    for k, ref in want.items():
        cos, err, peak = cosine_and_error(ref, got[k])
        assert cos > 0.99999 and err <= 1e-4 * max(peak, 1.0), (k, cos, err, peak)
