"""NaN / inf semantics against onnxruntime on every backend (CPU oracle,
Vulkan at high and low precision): Softmax / LogSoftmax rows with +-inf or
NaN, ReduceMax / ReduceMin and ArgMax / ArgMin with NaN (onnxruntime's scan:
NaN only when first), MaxPool / GlobalMaxPool skipping NaN (the max of the
rest). Inputs are fp16-representable so low precision compares closely."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

import vknn
from tests.unit.vulkan.harness import graph, node, ort_run

NAN, INF = np.nan, np.inf
BACKENDS = [("cpu", "high"), ("vulkan", "high"), ("vulkan", "low")]


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], backend: str, precision: str) -> Any:
    cfg = (
        vknn.Config(backends=("cpu",))
        if backend == "cpu"
        else vknn.Config(precision=precision, allow_cpu_fallback=False)
    )
    sess = vknn.Session(model.SerializeToString(), cfg)
    if backend == "vulkan":
        assert set(sess.node_backends().values()) == {"vulkan"}, sess.node_backends()
    return sess.run(feeds)["y"]


def _same(got: np.ndarray, want: np.ndarray, precision: str, where: Any = None) -> None:
    """NaN exactly where `want` has NaN, +-inf equal, the rest close."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    if where is not None:
        got, want = got[where], want[where]
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    rtol = 2e-3 if precision == "low" else 1e-5
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


def _fp16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32)


_SOFTMAX_ROWS = np.array(
    [
        [-INF, 1, 2, 0.5],
        [-INF, -INF, -INF, -INF],
        [INF, INF, 1, 0],
        [INF, -INF, 1, 0],
        [NAN, 1, 2, 3],
        [1, 2, NAN, 3],
        [1, 2, 3, 4],
    ],
    np.float32,
)


@pytest.mark.parametrize(("backend", "precision"), BACKENDS)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("length", [4, 3000])
def test_softmax_nonfinite_rows(session_device, op: str, length: int, backend, precision) -> None:
    """A row with +inf, NaN, or only -inf is all NaN, as onnxruntime; -inf
    elsewhere is 0 (log: -inf). 3000 wide: the uncached kernel variant."""
    x = np.full((_SOFTMAX_ROWS.shape[0], length), -3.0, np.float32)
    x[:, :4] = _SOFTMAX_ROWS
    if length > 4:
        x[1, :] = -INF
    model = graph([node(op, ["x"], ["y"], axis=1)], {"x": (x.shape, "float32")}, ["y"])
    want = ort_run(model, {"x": x})["y"]
    _same(_run(model, {"x": x}, backend, precision), want, precision)


def _nan_rows(length: int) -> np.ndarray:
    rng = np.random.default_rng(length)
    x = _fp16(rng.standard_normal((6, length)).astype(np.float32))
    x[0, 0] = NAN  # first: the result is NaN
    x[1, 1] = NAN  # later: skipped
    x[2, -1] = NAN
    x[3, :] = NAN
    x[4, 1::2] = NAN
    return x


@pytest.mark.parametrize(("backend", "precision"), BACKENDS)
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("length", [5, 4096])
def test_reduce_extreme_with_nan(session_device, op: str, length: int, backend, precision) -> None:
    """NaN only when the slice starts with NaN (onnxruntime's scan); 4096
    wide: one workgroup per output."""
    x = _nan_rows(length)
    model = graph([node(op, ["x"], ["y"], axes=[1])], {"x": (x.shape, "float32")}, ["y"], opset=13)
    want = ort_run(model, {"x": x})["y"]
    _same(_run(model, {"x": x}, backend, precision), want, precision)


@pytest.mark.parametrize(("backend", "precision"), BACKENDS)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extreme_with_nan(session_device, op: str, last: int, backend, precision) -> None:
    x = _nan_rows(7)
    x[5, [2, 5]] = x[5].max() if op == "ArgMax" else x[5].min()  # a tie
    model = graph(
        [node(op, ["x"], ["y"], axis=1, select_last_index=last)],
        {"x": (x.shape, "float32")},
        ["y"],
    )
    want = ort_run(model, {"x": x})["y"]
    _same(_run(model, {"x": x}, backend, precision), want, precision)


@pytest.mark.parametrize(("backend", "precision"), BACKENDS)
@pytest.mark.parametrize("hw", [5, 40])
def test_global_max_pool_skips_nan(session_device, hw: int, backend, precision) -> None:
    """The max of the non-NaN values; a plane of only NaN gives -inf.
    onnxruntime's result on a plane with NaN depends on where the NaN falls in
    its SIMD lanes (measured: often neither NaN nor the max of the rest), so it
    is the reference on NaN-free planes and on a short row, where it skips NaN."""
    rng = np.random.default_rng(hw)
    x = _fp16(rng.standard_normal((2, 4, hw, hw)).astype(np.float32))
    x[0, :3][rng.random(x[0, :3].shape) < 0.3] = NAN
    x[0, 0, 0, 0] = NAN
    x[1, 2] = NAN
    model = graph([node("GlobalMaxPool", ["x"], ["y"])], {"x": (x.shape, "float32")}, ["y"])
    want = ort_run(model, {"x": x})["y"]
    got = _run(model, {"x": x}, backend, precision)
    clean = ~np.isnan(x).any(axis=(2, 3), keepdims=True)
    assert clean.sum() == 4
    _same(got, want, precision, where=clean)
    ref = np.where(np.isnan(x), -INF, x).max(axis=(2, 3), keepdims=True)
    _same(got, ref, precision)
    assert np.all(got[1, 2] == -INF)
    row = np.array([[[[NAN, 1, 2]], [[3, NAN, 1]], [[1, 2, NAN]]]], np.float32)
    model = graph([node("GlobalMaxPool", ["x"], ["y"])], {"x": (row.shape, "float32")}, ["y"])
    _same(_run(model, {"x": row}, backend, precision), ort_run(model, {"x": row})["y"], precision)


def _nan_skipping_max_pool(x: np.ndarray, k: int, s: int, pad: int) -> np.ndarray:
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=-INF)
    xp = np.where(np.isnan(xp), -INF, xp)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    return win.max(axis=(-2, -1))


@pytest.mark.parametrize(("backend", "precision"), BACKENDS)
def test_max_pool_skips_nan(session_device, backend, precision) -> None:
    """Each window's max of its non-NaN values. onnxruntime's answer with NaN
    depends on SIMD lanes (see above), so it is the reference on NaN-free
    windows only."""
    rng = np.random.default_rng(3)
    x = _fp16(rng.standard_normal((1, 3, 9, 9)).astype(np.float32))
    x[:, :2][rng.random(x[:, :2].shape) < 0.3] = NAN  # channel 2 has none
    x[0, 1, :3, :3] = NAN  # one window of only NaN (-inf)
    model = graph(
        [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        {"x": (x.shape, "float32")},
        ["y"],
    )
    want = ort_run(model, {"x": x})["y"]
    got = _run(model, {"x": x}, backend, precision)
    ref = _nan_skipping_max_pool(x, 3, 2, 1)
    _same(got, ref, precision)
    assert not np.isnan(got).any()
    win = np.lib.stride_tricks.sliding_window_view(
        np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]), (3, 3), axis=(2, 3)
    )[:, :, ::2, ::2]
    clean = ~np.isnan(win).any(axis=(-2, -1))
    assert clean.sum() >= 25
    _same(got, want, precision, where=clean)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_with_runtime_axes_nan(op: str) -> None:
    """Axes as a run-time input keep the ONNX op (its own CPU kernel): the same
    NaN rule as onnxruntime there too."""
    x = _nan_rows(5)
    model = graph(
        [node(op, ["x", "axes"], ["y"])],
        {"x": (x.shape, "float32"), "axes": ((1,), "int64")},
        ["y"],
        opset=18,
    )
    feeds = {"x": x, "axes": np.array([1], np.int64)}
    want = ort_run(model, feeds)["y"]
    got = vknn.Session(model.SerializeToString(), vknn.Config(backends=("cpu",))).run(feeds)["y"]
    _same(got, want, "high")
