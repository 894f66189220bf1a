"""bool and int64 tensors stay on the GPU (issue 15 item 2): the mask-building
chains transformer exports emit (`Cast(attention_mask)`, `Not`, `Unsqueeze`/
`Expand` of bool, `Where(mask, -inf, 0)`, causal masks from int64 position
comparisons, `And`/`Or`), logical and comparison ops with their broadcasts,
and casts to and from bool run on Vulkan with 0 CPU nodes, through the real
pipeline (`standard`: fused kernels over bool/int64 tensors; `lower`: one
kernel per op), in fp32 and fp16 programs, with the validation layer on;
outputs compared with onnxruntime (bool and int exactly)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto

from tests.unit.vulkan.harness import graph, node, on_vulkan_vs_ort

PIPELINES = ["standard", "lower"]
FLOAT_ATOL = {"high": 1e-6, "low": 2e-3}


def _mask(b: int, s: int, seed: int = 0) -> np.ndarray:
    """An attention mask: each row starts with at least one 1 (no empty row)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, s + 1, size=b)
    return (np.arange(s)[None, :] < lengths[:, None]).astype(np.int64)


def _check(model: Any, feeds: dict[str, np.ndarray], precision: str, pipeline: str) -> Any:
    return on_vulkan_vs_ort(
        model, feeds, atol=FLOAT_ATOL[precision], precision=precision, pipeline=pipeline
    )


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_padding_mask_where_minus_inf(session_device, pipeline: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    """HF-style: Not(Cast(attention_mask -> bool)) -> Unsqueeze x2 -> Expand
    -> Where(mask, -inf, 0) -> Add(scores) -> Softmax."""
    b, h, s = 2, 3, 6
    am = _mask(b, s, 1)
    scores = np.random.default_rng(2).standard_normal((b, h, s, s)).astype(np.float32)
    nodes = [
        node("Cast", ["am"], ["amb"], to=TensorProto.BOOL),
        node("Not", ["amb"], ["inv"]),
        node("Unsqueeze", ["inv", "ax1"], ["u1"]),
        node("Unsqueeze", ["u1", "ax2"], ["u2"]),
        node("Expand", ["u2", "shape"], ["e"]),
        node("Where", ["e", "ninf", "zero"], ["bias"]),
        node("Add", ["scores", "bias"], ["masked"]),
        node("Softmax", ["masked"], ["p"], axis=-1),
    ]
    consts = {
        "ax1": np.array([1], np.int64),
        "ax2": np.array([2], np.int64),
        "shape": np.array([b, h, s, s], np.int64),
        "ninf": np.array(-np.inf, np.float32),
        "zero": np.array(0.0, np.float32),
    }
    ins = {"am": (am.shape, "int64"), "scores": (scores.shape, "float32")}
    model = graph(nodes, ins, ["p", "e"], consts)
    feeds = {"am": am, "scores": scores}
    if precision == "low":
        feeds["scores"] = scores.astype(np.float16).astype(np.float32)
    _check(model, feeds, precision, pipeline)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_causal_and_padding_mask(session_device, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """A causal mask from int64 positions (LessOrEqual of a Range and its
    transpose), And-ed with the padding mask, Or-ed with a diagonal, selected
    into an additive bias with Where(mask, 0, -inf)."""
    b, s = 2, 5
    am = _mask(b, s, 3)
    scores = np.random.default_rng(4).standard_normal((b, 1, s, s)).astype(np.float32)
    nodes = [
        node("Range", ["start", "limit", "delta"], ["pos"]),
        node("Unsqueeze", ["pos", "ax0"], ["row"]),
        node("Unsqueeze", ["pos", "ax1"], ["col"]),
        node("LessOrEqual", ["row", "col"], ["causal"]),  # [s, s]: key <= query
        node("Cast", ["am"], ["pad"], to=TensorProto.BOOL),
        node("Unsqueeze", ["pad", "ax12"], ["pad4"]),  # [b, 1, 1, s]
        node("And", ["causal", "pad4"], ["both"]),
        node("Equal", ["row", "col"], ["diag"]),
        node("Or", ["both", "diag"], ["keep"]),
        node("Where", ["keep", "zero", "ninf"], ["bias"]),
        node("Add", ["scores", "bias"], ["y"]),
    ]
    consts = {
        "start": np.array(0, np.int64),
        "limit": np.array(s, np.int64),
        "delta": np.array(1, np.int64),
        "ax0": np.array([0], np.int64),
        "ax1": np.array([1], np.int64),
        "ax12": np.array([1, 2], np.int64),
        "zero": np.array(0.0, np.float32),
        "ninf": np.array(-np.inf, np.float32),
    }
    ins = {"am": (am.shape, "int64"), "scores": (scores.shape, "float32")}
    model = graph(nodes, ins, ["y", "keep"], consts)
    _check(model, {"am": am, "scores": scores}, "high", pipeline)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_logical_and_comparison_ops_broadcast(session_device, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    p = rng.random((2, 3, 4)) > 0.5
    q = rng.random((3, 1)) > 0.5
    f = rng.standard_normal((2, 3, 4)).astype(np.float32)
    f[0, 0, :2] = [np.nan, 0.0]
    g = np.round(rng.standard_normal((4,)).astype(np.float32))
    nodes = [
        node("And", ["p", "q"], ["and"]),
        node("Or", ["p", "q"], ["or"]),
        node("Xor", ["p", "q"], ["xor"]),
        node("Not", ["p"], ["not"]),
        node("Equal", ["p", "q"], ["eq"]),
        node("Less", ["f", "g"], ["lt"]),
        node("Greater", ["f", "g"], ["gt"]),
        node("GreaterOrEqual", ["f", "g"], ["ge"]),
        node("Equal", ["f", "g"], ["feq"]),
        node("Where", ["xor", "f", "g"], ["wb"]),  # a computed bool condition
    ]
    ins = {"p": (p.shape, "bool"), "q": (q.shape, "bool"), "f": (f.shape, "float32"),
           "g": (g.shape, "float32")}  # fmt: skip
    outs = ["and", "or", "xor", "not", "eq", "lt", "gt", "ge", "feq", "wb"]
    _check(graph(nodes, ins, outs), {"p": p, "q": q, "f": f, "g": g}, "high", pipeline)


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_casts_to_and_from_bool(session_device, pipeline: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    """float -> bool (NaN true, -0 false), int64 -> bool of values set only
    above bit 31, bool -> float/float16/int32/int64."""
    f = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, 1e-30, 3.0], np.float32)
    i = np.array([0, 1 << 32, 1 << 40, -1, 1, 1 << 62, 0, -(1 << 33)], np.int64)
    nodes = [
        node("Cast", ["f"], ["fb"], to=TensorProto.BOOL),
        node("Cast", ["i"], ["ib"], to=TensorProto.BOOL),
        node("And", ["fb", "ib"], ["both"]),
        node("Cast", ["both"], ["b_f"], to=TensorProto.FLOAT),
        node("Cast", ["ib"], ["b_h"], to=TensorProto.FLOAT16),
        node("Cast", ["fb"], ["b_i32"], to=TensorProto.INT32),
        node("Cast", ["ib"], ["b_i64"], to=TensorProto.INT64),
    ]
    ins = {"f": (f.shape, "float32"), "i": (i.shape, "int64")}
    model = graph(nodes, ins, ["fb", "ib", "b_f", "b_h", "b_i32", "b_i64"])
    if precision == "low":
        f = f.astype(np.float16).astype(np.float32)  # as fp16 storage holds it (1e-30 -> 0)
    _check(model, {"f": f, "i": i}, precision, pipeline)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_int64_not_mul_cast_chain(session_device, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """int64 tensors on the GPU: Cast(mask -> bool) -> Not -> Cast(-> int64)
    -> Mul by a constant past 2^32 -> Sub, Concat with the mask, Expand."""
    am = _mask(3, 4, 6)
    nodes = [
        node("Cast", ["am"], ["b"], to=TensorProto.BOOL),
        node("Not", ["b"], ["nb"]),
        node("Cast", ["nb"], ["ni"], to=TensorProto.INT64),
        node("Mul", ["ni", "big"], ["m"]),
        node("Sub", ["m", "am"], ["d"]),
        node("Concat", ["d", "am"], ["cat"], axis=1),
        node("Unsqueeze", ["cat", "ax0"], ["u"]),
        node("Expand", ["u", "shape"], ["y"]),
    ]
    consts = {
        "big": np.array(5 << 33, np.int64),
        "ax0": np.array([0], np.int64),
        "shape": np.array([2, 3, 8], np.int64),
    }
    model = graph(nodes, {"am": (am.shape, "int64")}, ["y"], consts)
    _check(model, {"am": am}, "high", pipeline)


def test_bool_program_is_one_vulkan_segment(session_device) -> None:  # type: ignore[no-untyped-def]
    """The padding-mask chain between two float ops compiles to a single
    Vulkan segment: no CPU segment, no GPU -> CPU -> GPU round trip."""
    b, s = 2, 4
    am = _mask(b, s, 7)
    x = np.random.default_rng(8).standard_normal((b, s)).astype(np.float32)
    nodes = [
        node("Relu", ["x"], ["r"]),
        node("Cast", ["am"], ["amb"], to=TensorProto.BOOL),
        node("Not", ["amb"], ["inv"]),
        node("Where", ["inv", "ninf", "r"], ["w"]),
        node("Softmax", ["w"], ["y"], axis=-1),
    ]
    consts = {"ninf": np.array(-np.inf, np.float32)}
    ins = {"am": (am.shape, "int64"), "x": (x.shape, "float32")}
    sess = _check(graph(nodes, ins, ["y"], consts), {"am": am, "x": x}, "high", "standard")
    segments = sess.program.buckets[0].segments
    assert len(segments) == 1, segments


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_inverted_mask_masked_fill_finfo_min(session_device, pipeline: str) -> None:  # type: ignore[no-untyped-def]
    """transformers' _prepare_4d_attention_mask as exported: the int64 mask
    Unsqueezed and Expanded (int64 on the GPU), Cast to float, 1 - m, Cast to
    bool, Where(inverted, finfo(float32).min, inverted), added to scores."""
    b, s = 2, 5
    am = _mask(b, s, 9)
    scores = np.random.default_rng(10).standard_normal((b, 1, s, s)).astype(np.float32)
    nodes = [
        node("Unsqueeze", ["am", "ax12"], ["m4"]),
        node("Expand", ["m4", "shape"], ["me"]),
        node("Cast", ["me"], ["mf"], to=TensorProto.FLOAT),
        node("Sub", ["one", "mf"], ["inv"]),
        node("Cast", ["inv"], ["invb"], to=TensorProto.BOOL),
        node("Where", ["invb", "fmin", "inv"], ["bias"]),
        node("Add", ["scores", "bias"], ["y"]),
    ]
    consts = {
        "ax12": np.array([1, 2], np.int64),
        "shape": np.array([b, 1, s, s], np.int64),
        "one": np.array(1.0, np.float32),
        "fmin": np.array(np.finfo(np.float32).min, np.float32),
    }
    ins = {"am": (am.shape, "int64"), "scores": (scores.shape, "float32")}
    model = graph(nodes, ins, ["y", "me"], consts)
    _check(model, {"am": am, "scores": scores}, "high", pipeline)
