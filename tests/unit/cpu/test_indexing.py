"""Our CPU kernels of GatherElements / ScatterElements / GatherND / ScatterND
and friends against onnxruntime, every axis sign, including the two failures
of issue 15 as real models: GatherElements axis=-1 with indices shorter than
the data (relative-position attention), and GatherElements over an Expand-ed
constant with Slice-d indices (a BERT encoder's position ids)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.cpu.onnx_oracle import build, check, rng


@pytest.mark.parametrize("axis", [-1, -2, 0, 1, 2])
def test_gather_elements_axes_shorter_indices(axis: int) -> None:
    r = rng(1)
    data = r.standard_normal((2, 5, 7)).astype(np.float32)
    a = axis % 3
    shape = [2, 3, 4]  # shorter than the data on every axis
    idx = r.integers(-data.shape[a], data.shape[a], shape).astype(np.int64)
    m = build([("GatherElements", ["d", "i"], ["y"], {"axis": axis})],
              {"d": data, "i": idx}, ["y"])  # fmt: skip
    check(m, {"d": data, "i": idx})


def test_gather_elements_relative_position() -> None:
    """Issue 15: relative-position attention gathers a window on axis -1."""
    r = rng(2)
    scores = r.standard_normal((1, 4, 16, 31)).astype(np.float32)
    q = np.arange(16)
    idx = np.broadcast_to((q[None, :] - q[:, None] + 15)[None, None], (1, 4, 16, 16))
    idx = np.ascontiguousarray(idx).astype(np.int64)
    m = build([("GatherElements", ["s", "i"], ["y"], {"axis": -1})],
              {"s": scores, "i": idx}, ["y"])  # fmt: skip
    check(m, {"s": scores, "i": idx})


def test_gather_elements_expand_slice() -> None:
    """Issue 15: data an Expand-ed constant, indices from a Slice (the
    position ids of a dynamo-exported BERT encoder fed inputs_embeds)."""
    r = rng(3)
    x = r.standard_normal((1, 128, 8)).astype(np.float32)
    consts = {
        "pos": np.arange(512, dtype=np.int64)[None, :],
        "shape": np.array([1, 512], np.int64),
        "starts": np.array([0], np.int64),
        "ends": np.array([128], np.int64),
        "axes": np.array([1], np.int64),
        "zero": np.array([0], np.int64),
    }
    nodes = [
        ("Shape", ["x"], ["xs"], {}),
        ("Gather", ["xs", "one"], ["seq"], {"axis": 0}),
        ("Expand", ["pos", "shape"], ["buf"], {}),
        ("Slice", ["buf", "zero", "seq", "axes"], ["ids"], {}),
        ("GatherElements", ["buf", "ids"], ["y"], {"axis": 1}),
    ]
    consts["one"] = np.array([1], np.int64)
    m = build(nodes, {"x": x}, ["y"], consts)
    got = check(m, {"x": x})
    np.testing.assert_array_equal(got["y"], np.arange(128)[None, :])


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_scatter_elements(reduction: str, axis: int) -> None:
    r = rng(4)
    data = r.standard_normal((4, 6)).astype(np.float32)
    idx = np.array([[1, -1, 3], [0, 2, -6]], np.int64)
    if axis == 0:
        idx = np.array([[1, -1, 3], [0, 2, -4]], np.int64)
    if reduction == "none":  # duplicate targets are unspecified without a reduction
        idx = (
            np.array([[1, -1, 3], [0, 2, 4]], np.int64)
            if axis
            else np.array([[1, 0, 3], [0, 2, 1]], np.int64)
        )
    upd = r.standard_normal(idx.shape).astype(np.float32)
    m = build([("ScatterElements", ["d", "i", "u"], ["y"],
                {"axis": axis, "reduction": reduction})],
              {"d": data, "i": idx, "u": upd}, ["y"], opset=18)  # fmt: skip
    check(m, {"d": data, "i": idx, "u": upd})


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd(batch_dims: int) -> None:
    r = rng(5)
    data = r.standard_normal((3, 4, 5)).astype(np.float32)
    if batch_dims:
        idx = np.array([[[1, -1]], [[0, 2]], [[-4, 4]]], np.int64)
    else:
        idx = np.array([[[1, -1]], [[0, 2]]], np.int64)
    m = build([("GatherND", ["d", "i"], ["y"], {"batch_dims": batch_dims})],
              {"d": data, "i": idx}, ["y"])  # fmt: skip
    check(m, {"d": data, "i": idx})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(reduction: str) -> None:
    r = rng(6)
    data = r.standard_normal((4, 5, 3)).astype(np.float32)
    idx = np.array([[0, 1], [-1, 4], [2, -2]], np.int64)
    upd = r.standard_normal((3, 3)).astype(np.float32)
    m = build([("ScatterND", ["d", "i", "u"], ["y"], {"reduction": reduction})],
              {"d": data, "i": idx, "u": upd}, ["y"], opset=18)  # fmt: skip
    check(m, {"d": data, "i": idx, "u": upd})


def test_gather_elements_expand_slice_runtime_indices() -> None:
    """The same pattern with run-time indices: the data is a folded Expand of
    a constant (a broadcast view with zero strides), the indices a Slice of
    an input."""
    r = rng(8)
    ids = r.integers(-512, 512, (1, 200)).astype(np.int64)
    consts = {
        "pos": (np.arange(512, dtype=np.float32) * 0.5)[None, :],
        "shape": np.array([1, 512], np.int64),
        "zero": np.array([0], np.int64),
        "end": np.array([128], np.int64),
        "axes": np.array([1], np.int64),
    }
    nodes = [
        ("Expand", ["pos", "shape"], ["buf"], {}),
        ("Slice", ["ids", "zero", "end", "axes"], ["cut"], {}),
        ("GatherElements", ["buf", "cut"], ["y"], {"axis": 1}),
    ]
    m = build(nodes, {"ids": ids}, ["y"], consts)
    check(m, {"ids": ids})


def test_one_hot_negative_axis_and_indices() -> None:
    ind = np.array([[0, -1, 2], [3, 1, -3]], np.int64)
    consts = {"depth": np.array(4, np.int64), "vals": np.array([-1.0, 2.0], np.float32)}
    nodes = [
        ("OneHot", ["ind", "depth", "vals"], ["y0"], {"axis": -2}),
        ("OneHot", ["ind", "depth", "vals"], ["y1"], {}),
    ]
    m = build(nodes, {"ind": ind}, ["y0", "y1"], consts)
    check(m, {"ind": ind})
