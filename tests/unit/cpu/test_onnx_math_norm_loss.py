"""Our CPU kernels of the onnx-level elementwise ops, normalizations, losses,
Attention and RotaryEmbedding against onnxruntime (negative axes, broadcasts,
GQA, masks, KV cache)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.cpu.onnx_oracle import build, check, rng


def test_elementwise() -> None:
    r = rng(1)
    x = r.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
    big = r.uniform(1.1, 3.0, (3, 4)).astype(np.float32)
    xi = r.integers(-50, 50, (3, 4)).astype(np.int32)
    special = np.array([[np.nan, np.inf, -np.inf, 1.0]], np.float32)
    nodes = [
        ("Asin", ["x"], ["o0"], {}), ("Acos", ["x"], ["o1"], {}), ("Atan", ["x"], ["o2"], {}),
        ("Atanh", ["x"], ["o3"], {}), ("Asinh", ["x"], ["o4"], {}), ("Acosh", ["big"], ["o5"], {}),
        ("Sinh", ["x"], ["o6"], {}), ("Cosh", ["x"], ["o7"], {}),
        ("IsNaN", ["sp"], ["o8"], {}), ("IsInf", ["sp"], ["o9"], {"detect_negative": 0}),
        ("Shrink", ["x"], ["o10"], {"bias": 0.1, "lambd": 0.3}),
        ("BitwiseAnd", ["xi", "xi2"], ["o11"], {}), ("BitwiseNot", ["xi"], ["o12"], {}),
        ("Mod", ["xi", "m"], ["o13"], {}), ("Mod", ["xi", "m"], ["o14"], {"fmod": 1}),
        ("Det", ["sq"], ["o15"], {}),
    ]  # fmt: skip
    sq = r.standard_normal((2, 3, 3)).astype(np.float32)
    feeds = {"x": x, "big": big, "xi": xi, "sp": special, "xi2": np.flip(xi, 1).copy(), "sq": sq}
    consts = {"m": np.array([3, -4, 5, -7], np.int32)}
    check(build(nodes, feeds, [f"o{i}" for i in range(16)], consts), feeds, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_normalizations(axis: int) -> None:
    r = rng(2)
    x = r.standard_normal((2, 6, 4, 5)).astype(np.float32)
    ln_shape = x.shape[axis % 4 :]
    consts = {
        "s": r.standard_normal(ln_shape).astype(np.float32),
        "b": r.standard_normal(ln_shape).astype(np.float32),
        "cs": r.standard_normal(6).astype(np.float32),
        "cb": r.standard_normal(6).astype(np.float32),
    }
    nodes = [
        ("LayerNormalization", ["x", "s", "b"], ["y0"], {"axis": axis, "epsilon": 1e-3}),
        ("InstanceNormalization", ["x", "cs", "cb"], ["y1"], {}),
        ("GroupNormalization", ["x", "cs", "cb"], ["y2"], {"num_groups": 3}),
        ("LpNormalization", ["x"], ["y3"], {"axis": axis, "p": 1}),
        ("MeanVarianceNormalization", ["x"], ["y4"], {"axes": [0, 2, -1]}),
    ]
    check(build(nodes, {"x": x}, [f"y{i}" for i in range(5)], consts), {"x": x}, atol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_losses(reduction: str) -> None:
    r = rng(3)
    x = r.standard_normal((3, 5, 2)).astype(np.float32)
    t = np.array([[0, 4], [-100, 2], [1, -100]], np.int64)
    consts = {"w": r.uniform(0.5, 2, 5).astype(np.float32)}
    attrs = {"reduction": reduction, "ignore_index": -100}
    nodes = [
        ("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["l0"], attrs),
        ("SoftmaxCrossEntropyLoss", ["x", "t"], ["l1", "lp"], attrs),
    ]
    check(build(nodes, {"x": x, "t": t}, ["l0", "l1", "lp"], consts), {"x": x, "t": t})


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_gqa_cache_mask(causal: int) -> None:
    r = rng(4)
    q = r.standard_normal((2, 4, 3, 8)).astype(np.float32)
    k = r.standard_normal((2, 2, 3, 8)).astype(np.float32)
    v = r.standard_normal((2, 2, 3, 8)).astype(np.float32)
    pk = r.standard_normal((2, 2, 5, 8)).astype(np.float32)
    pv = r.standard_normal((2, 2, 5, 8)).astype(np.float32)
    mask = r.random((3, 8)) > 0.3
    mask[:, 0] = True
    feeds = {"q": q, "k": k, "v": v, "m": mask, "pk": pk, "pv": pv}
    m = build(
        [("Attention", ["q", "k", "v", "m", "pk", "pv"], ["y", "prk", "prv"],
          {"is_causal": causal})],
        feeds, ["y", "prk", "prv"], opset=23,
    )  # fmt: skip
    check(m, feeds, atol=1e-5)


def test_rotary_embedding() -> None:
    r = rng(5)
    x = r.standard_normal((2, 3, 4 * 8)).astype(np.float32)
    pos = np.array([[0, 1, 2], [4, 5, 6]], np.int64)
    consts = {"cos": r.standard_normal((8, 4)).astype(np.float32),
              "sin": r.standard_normal((8, 4)).astype(np.float32)}  # fmt: skip
    nodes = [
        ("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y0"], {"num_heads": 4}),
        ("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y1"],
         {"num_heads": 4, "interleaved": 1}),
    ]  # fmt: skip
    check(build(nodes, {"x": x, "pos": pos}, ["y0", "y1"], consts, opset=23), {"x": x, "pos": pos})
