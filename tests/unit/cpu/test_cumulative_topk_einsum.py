"""Our CPU kernels of CumSum / CumProd, TopK / Hardmax, Einsum, Trilu, Range,
Tile, DepthToSpace / SpaceToDepth against onnxruntime, negative axes included."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.cpu.onnx_oracle import build, check, rng


@pytest.mark.parametrize("axis", [-1, -3, 1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(axis: int, exclusive: int, reverse: int) -> None:
    x = rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    xi = rng(2).integers(-5, 5, (2, 3, 4)).astype(np.int64)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    nodes = [("CumSum", ["x", "a"], ["y0"], attrs), ("CumSum", ["xi", "a"], ["y1"], attrs)]
    m = build(nodes, {"x": x, "xi": xi}, ["y0", "y1"], {"a": np.array(axis, np.int64)})
    check(m, {"x": x, "xi": xi})


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [-1, 0, -2])
def test_topk_ties_by_index(largest: int, axis: int) -> None:
    x = rng(3).integers(0, 4, (5, 6)).astype(np.float32)  # many ties
    m = build([("TopK", ["x", "k"], ["v", "i"], {"axis": axis, "largest": largest})],
              {"x": x}, ["v", "i"], {"k": np.array([3], np.int64)})  # fmt: skip
    check(m, {"x": x})


def test_hardmax_einsum_trilu_range_tile() -> None:
    r = rng(4)
    x = r.standard_normal((3, 4, 5)).astype(np.float32)
    a = r.standard_normal((2, 3, 4)).astype(np.float32)
    b = r.standard_normal((2, 4, 5)).astype(np.float32)
    nodes = [
        ("Hardmax", ["x"], ["h0"], {"axis": -2}),
        ("Einsum", ["a", "b"], ["e0"], {"equation": "bij,bjk->bik"}),
        ("Einsum", ["x"], ["e1"], {"equation": "ijk->kj"}),
        ("Einsum", ["a", "b"], ["e2"], {"equation": "...ij,...jk"}),
        ("Trilu", ["x", "k"], ["t0"], {"upper": 0}),
        ("Trilu", ["x", "km"], ["t1"], {}),
        ("Range", ["s", "l", "d"], ["r0"], {}),
        ("Tile", ["a", "reps"], ["tl"], {}),
    ]
    consts = {
        "k": np.array(1, np.int64),
        "km": np.array(-2, np.int64),
        "s": np.array(10, np.int64),
        "l": np.array(-3, np.int64),
        "d": np.array(-4, np.int64),
        "reps": np.array([1, 2, 3], np.int64),
    }
    feeds = {"x": x, "a": a, "b": b}
    m = build(nodes, feeds, ["h0", "e0", "e1", "e2", "t0", "t1", "r0", "tl"], consts)
    check(m, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_space(mode: str) -> None:
    x = rng(5).standard_normal((2, 8, 3, 4)).astype(np.float32)
    nodes = [
        ("DepthToSpace", ["x"], ["d"], {"blocksize": 2, "mode": mode}),
        ("SpaceToDepth", ["d"], ["s"], {"blocksize": 2}),
    ]
    check(build(nodes, {"x": x}, ["d", "s"]), {"x": x})
