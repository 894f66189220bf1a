"""CPU kernels of conv / conv_transpose, matmul / gemm, pool and the
normalizations against onnxruntime: one single-node ONNX model per case, run
through the whole `vknn.Session` pipeline (import, lowering, plan, CPU), on
seeded random inputs. Same dtype and shape; max abs error within 1e-4 of the
reference's magnitude (fp16 within its own rounding)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as NotImplementedByOrt

import vknn
from tests.unit.program_steps import cpu_steps

OPSET = 19  # AveragePool/MaxPool dilations and LayerNormalization are all in by 19
POOL_OPSET = 22
"""ONNX's shape inference before opset 22 may count a ceil-mode window that
starts in the end padding (onnxruntime and the reference don't): the
declared shape then disagrees with vx.pool's and the op is not lowered."""


def _model(
    op: str,
    inputs: dict[str, np.ndarray],
    attrs: dict[str, Any],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = OPSET,
) -> onnx.ModelProto:
    """One `op` node; every entry of `inputs` is a graph input, those of
    `initializers` are constants (so the lowering sees them folded)."""
    initializers = initializers or {}
    names = [*inputs, *initializers]
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
        for n, a in inputs.items()
    ]
    inits = [onnx.numpy_helper.from_array(a, n) for n, a in initializers.items()]
    node = helper.make_node(op, [n if n else "" for n in names], ["y"], **attrs)
    out = helper.make_tensor_value_info("y", onnx.TensorProto.UNDEFINED, None)
    graph = helper.make_graph([node], "case", graph_inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model)


def _reference(
    op: str,
    inputs: dict[str, np.ndarray],
    attrs: dict[str, Any],
    initializers: dict[str, np.ndarray] | None,
    opset: int,
) -> np.ndarray:
    """onnxruntime's result. Where its CPU provider has no kernel for the
    dtype (float64 Conv, float16 LRN...), the float32 model's result cast
    back stands in: within the bound, float32 is as good a reference."""
    model = _model(op, inputs, attrs, initializers, opset)
    try:
        ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except NotImplementedByOrt:
        dtype = next(a.dtype for a in inputs.values() if a.dtype.kind == "f")
        if dtype == np.float32:
            raise
        as32 = {n: a.astype(np.float32) if a.dtype.kind == "f" else a for n, a in inputs.items()}
        return _reference(op, as32, attrs, initializers, opset).astype(dtype)
    (expected,) = ref.run(None, inputs)
    return expected


def _check(
    op: str,
    inputs: dict[str, np.ndarray],
    attrs: dict[str, Any] | None = None,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = OPSET,
    expected: np.ndarray | None = None,
) -> None:
    """`expected` replaces onnxruntime where it has no kernel for the case."""
    attrs = attrs or {}
    if expected is None:
        expected = _reference(op, inputs, attrs, initializers, opset)
    model = _model(op, inputs, attrs, initializers, opset)
    session = vknn.Session(model, vknn.Config(backends=("cpu",)))
    # The case must reach the vx kernels, not ONNX's reference implementation.
    ops = [step.op for step in cpu_steps(session)]
    assert all(o.startswith("vx.") for o in ops), ops
    got = session.run(inputs)["y"]
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    # fp16 results round to 11 bits: a last-bit difference is legitimate.
    rel = 2e-3 if expected.dtype == np.float16 else 1e-4
    exp64, got64 = expected.astype(np.float64), got.astype(np.float64)
    err = np.max(np.abs(got64 - exp64), initial=0.0)
    bound = rel * np.max(np.abs(exp64), initial=0.0) + 1e-6
    assert err <= bound, f"max abs error {err:.3g} > {bound:.3g}"


def _rand(seed: int, *shape: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------
# Conv
# ---------------------------------------------------------------------------

# (input shape, weight shape, attributes)
CONV_CASES = [
    ((2, 4, 9), (6, 4, 3), {}),
    ((2, 4, 11), (6, 2, 3), {"strides": [2], "pads": [2, 1], "dilations": [2], "group": 2}),
    ((1, 3, 8, 8), (5, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 7), (4, 3, 3, 2), {"strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((1, 4, 10, 10), (6, 4, 3, 3), {"dilations": [2, 3], "pads": [2, 3, 2, 3]}),
    ((1, 6, 7, 7), (6, 2, 3, 3), {"group": 3, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 4, 8, 8), (4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 4, 8, 8), (8, 1, 5, 5), {"group": 4, "pads": [2, 2, 2, 2], "strides": [2, 2]}),
    ((1, 4, 6, 6), (7, 4, 1, 1), {}),  # pointwise
    ((1, 3, 9, 8), (4, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 9, 8), (4, 3, 4, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 3]}),
    ((1, 3, 9, 8), (4, 3, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((1, 2, 5, 6, 5), (4, 2, 3, 2, 3), {"pads": [1, 0, 1, 1, 1, 1]}),
    ((2, 4, 5, 6, 5), (4, 2, 3, 3, 1), {"group": 2, "strides": [2, 1, 2], "dilations": [1, 2, 1]}),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES)
def test_conv(xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any], bias: bool) -> None:
    inputs = {"x": _rand(1, *xs), "w": _rand(2, *ws)}
    if bias:
        inputs["b"] = _rand(3, ws[0])
    _check("Conv", inputs, attrs)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_conv_dtypes(dtype: type) -> None:
    inputs = {"x": _rand(1, 1, 4, 7, 7, dtype=dtype), "w": _rand(2, 6, 2, 3, 3, dtype=dtype)}
    inputs["b"] = _rand(3, 6, dtype=dtype)
    _check("Conv", inputs, {"group": 2, "pads": [1, 1, 1, 1]})


def test_conv_constant_weights() -> None:
    """Weights as initializers reach the kernel as plan constants."""
    _check(
        "Conv",
        {"x": _rand(1, 1, 3, 8, 8)},
        {"pads": [1, 1, 1, 1], "strides": [2, 2]},
        initializers={"w": _rand(2, 4, 3, 3, 3), "b": _rand(3, 4)},
    )


def test_conv_batch_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the im2col budget, images are gathered one at a time."""
    from vknn.oracle import conv

    monkeypatch.setattr(conv, "_IM2COL_BUDGET", 1)
    inputs = {"x": _rand(1, 3, 4, 6, 6), "w": _rand(2, 6, 2, 3, 3), "b": _rand(3, 6)}
    _check("Conv", inputs, {"group": 2, "pads": [1, 0, 1, 2], "strides": [2, 1]})


# ---------------------------------------------------------------------------
# ConvTranspose
# ---------------------------------------------------------------------------

CONV_TRANSPOSE_CASES = [
    ((2, 3, 5), (3, 4, 3), {}),
    ((1, 4, 6), (4, 2, 3), {"strides": [2], "pads": [1, 2], "group": 2, "output_padding": [1]}),
    ((1, 3, 4, 5), (3, 2, 3, 3), {}),
    ((1, 3, 4, 5), (3, 2, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    (
        (2, 3, 4, 5),
        (3, 2, 3, 2),
        {"strides": [3, 2], "output_padding": [1, 1], "pads": [0, 1, 2, 0]},
    ),
    ((1, 2, 5, 5), (2, 3, 3, 3), {"dilations": [2, 2], "strides": [2, 1]}),
    ((1, 4, 4, 4), (4, 1, 3, 3), {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 6, 3, 4), (6, 2, 2, 2), {"group": 3, "strides": [2, 2]}),
    ((1, 3, 4, 4), (3, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 4, 4), (3, 2, 4, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ((1, 3, 4, 4), (3, 2, 3, 3), {"output_shape": [10, 9], "strides": [3, 2]}),
    ((1, 2, 3, 4, 3), (2, 3, 2, 3, 2), {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 1, 0]}),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xs,ws,attrs", CONV_TRANSPOSE_CASES)
def test_conv_transpose(
    xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any], bias: bool
) -> None:
    inputs = {"x": _rand(4, *xs), "w": _rand(5, *ws)}
    if bias:
        inputs["b"] = _rand(6, ws[1] * attrs.get("group", 1))
    _check("ConvTranspose", inputs, attrs)


# ---------------------------------------------------------------------------
# MatMul, Gemm
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ((3, 4), (4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4, 5)),
        ((3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (3, 4, 6)),
        ((5,), (2, 3, 5, 2)),
        ((2, 3, 5, 2), (2,)),
    ],
)
def test_matmul(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    _check("MatMul", {"a": _rand(7, *a), "b": _rand(8, *b)})


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int64])
def test_matmul_dtypes(dtype: type) -> None:
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((2, 3, 4)) * 4).astype(dtype)
    b = (rng.standard_normal((4, 5)) * 4).astype(dtype)
    _check("MatMul", {"a": a, "b": b})


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize(
    "c_shape,alpha,beta",
    [
        (None, 1.0, 1.0),
        ((5,), 1.0, 1.0),
        ((3, 5), 0.5, 2.0),
        ((1, 5), 1.0, 0.0),
        ((3, 1), -1.5, 0.25),
        ((), 2.0, 1.0),
    ],
)
def test_gemm(
    trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None, alpha: float, beta: float
) -> None:
    m, k, n = 3, 4, 5
    inputs = {
        "a": _rand(10, *((k, m) if trans_a else (m, k))),
        "b": _rand(11, *((n, k) if trans_b else (k, n))),
    }
    if c_shape is not None:
        inputs["c"] = _rand(12, *c_shape)
    _check("Gemm", inputs, {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta})


def test_gemm_float64() -> None:
    inputs = {"a": _rand(10, 3, 4, dtype=np.float64), "b": _rand(11, 5, 4, dtype=np.float64)}
    inputs["c"] = _rand(12, 5, dtype=np.float64)
    _check("Gemm", inputs, {"transB": 1, "alpha": 0.7})


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------

# (input shape, attributes): run for MaxPool and AveragePool.
POOL_CASES = [
    ((2, 3, 9), {"kernel_shape": [3]}),
    ((2, 3, 10), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 2, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((1, 2, 7, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [0, 1, 2, 1]}),
    ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    (
        (1, 2, 6, 6),
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    ),
    (
        (1, 2, 8, 7),
        {"kernel_shape": [2, 3], "strides": [3, 3], "pads": [1, 0, 1, 1], "ceil_mode": 1},
    ),
    ((1, 2, 9, 9), {"kernel_shape": [3, 3], "dilations": [2, 2]}),
    (
        (1, 2, 9, 10),
        {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [2, 1], "pads": [1, 2, 1, 2]},
    ),
    (
        (1, 2, 10, 9),
        {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 2], "ceil_mode": 1},
    ),
    ((1, 2, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 9, 8), {"kernel_shape": [4, 4], "strides": [2, 3], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 9, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "VALID"}),
    (
        (1, 2, 5, 6, 5),
        {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "pads": [1, 1, 0, 0, 1, 1]},
    ),
    ((1, 2, 5, 6, 7), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1}),
]


@pytest.mark.parametrize("xs,attrs", POOL_CASES)
def test_max_pool(xs: tuple[int, ...], attrs: dict[str, Any]) -> None:
    _check("MaxPool", {"x": _rand(13, *xs)}, attrs, opset=POOL_OPSET)


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("xs,attrs", POOL_CASES)
def test_average_pool(xs: tuple[int, ...], attrs: dict[str, Any], count_include_pad: int) -> None:
    attrs = {**attrs, "count_include_pad": count_include_pad}
    _check("AveragePool", {"x": _rand(14, *xs)}, attrs, opset=POOL_OPSET)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize(
    "xs,attrs",
    [
        ((1, 2, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ((2, 3, 9), {"kernel_shape": [2], "strides": [2]}),
        ((1, 2, 9, 9), {"kernel_shape": [3, 2], "dilations": [2, 2], "ceil_mode": 1}),
    ],
)
def test_lp_pool(xs: tuple[int, ...], attrs: dict[str, Any], p: int) -> None:
    _check("LpPool", {"x": _rand(15, *xs)}, {**attrs, "p": p}, opset=POOL_OPSET)


@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"])
@pytest.mark.parametrize("xs", [(2, 3, 7), (1, 4, 5, 6), (1, 2, 3, 4, 5)])
def test_global_pool(op: str, xs: tuple[int, ...]) -> None:
    # onnxruntime has no GlobalLpPool-22; global pools have no ceil mode anyway.
    _check(op, {"x": _rand(16, *xs)})


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.uint8])
def test_max_pool_dtypes(dtype: type) -> None:
    rng = np.random.default_rng(17)
    x = (rng.standard_normal((1, 2, 7, 7)) * 50).astype(dtype)
    _check("MaxPool", {"x": x}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]})


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_average_pool_dtypes(dtype: type) -> None:
    x = _rand(18, 1, 2, 7, 7, dtype=dtype)
    _check("AveragePool", {"x": x}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})


# ---------------------------------------------------------------------------
# Softmax, LogSoftmax
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(
    "xs,axis",
    [
        ((3, 7), -1),
        ((3, 7), 0),
        ((2, 3, 5), 1),
        ((2, 3, 4, 5), -1),
        ((2, 3, 4, 5), 2),
        ((2, 3, 4, 5), 0),
    ],
)
def test_softmax(op: str, xs: tuple[int, ...], axis: int) -> None:
    # Scaled up so an unshifted exp would overflow float32.
    _check(op, {"x": _rand(19, *xs) * 60}, {"axis": axis})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_legacy_axis(op: str, opset: int) -> None:
    """Before opset 13 the input is coerced to 2-D at `axis`."""
    _check(op, {"x": _rand(20, 2, 3, 4)}, {"axis": 1}, opset=opset)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_softmax_dtypes(op: str, dtype: type) -> None:
    _check(op, {"x": _rand(21, 3, 9, dtype=dtype) * 4}, {"axis": -1})


# ---------------------------------------------------------------------------
# LayerNormalization, BatchNormalization, LRN
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(
    "xs,axis,epsilon",
    [((2, 5, 8), -1, 1e-5), ((2, 5, 8), 1, 1e-3), ((4, 6), 0, 1e-5), ((2, 3, 4, 5), 2, 0.1)],
)
def test_layer_norm(xs: tuple[int, ...], axis: int, epsilon: float, bias: bool) -> None:
    norm = xs[axis:]
    inputs = {"x": _rand(22, *xs) * 3 + 5, "scale": _rand(23, *norm)}
    if bias:
        inputs["bias"] = _rand(24, *norm)
    _check("LayerNormalization", inputs, {"axis": axis, "epsilon": epsilon})


def test_layer_norm_float16() -> None:
    inputs = {"x": _rand(25, 2, 4, 16, dtype=np.float16), "scale": _rand(26, 16, dtype=np.float16)}
    inputs["bias"] = _rand(27, 16, dtype=np.float16)
    _check("LayerNormalization", inputs, {"axis": -1})


@pytest.mark.parametrize("xs", [(4, 3), (2, 3, 7), (2, 3, 4, 5), (1, 3, 2, 3, 4)])
@pytest.mark.parametrize("epsilon", [1e-5, 0.5])
def test_batch_norm(xs: tuple[int, ...], epsilon: float) -> None:
    c = xs[1]
    inputs = {
        "x": _rand(28, *xs),
        "scale": _rand(29, c),
        "bias": _rand(30, c),
        "mean": _rand(31, c),
        "var": np.abs(_rand(32, c)) + 0.1,
    }
    _check("BatchNormalization", inputs, {"epsilon": epsilon})


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_batch_norm_dtypes(dtype: type) -> None:
    inputs = {
        "x": _rand(28, 2, 3, 4, 4, dtype=dtype),
        "scale": _rand(29, 3, dtype=dtype),
        "bias": _rand(30, 3, dtype=dtype),
        "mean": _rand(31, 3, dtype=dtype),
        "var": (np.abs(_rand(32, 3)) + 0.1).astype(dtype),
    }
    _check("BatchNormalization", inputs)


def _lrn_by_definition(
    x: np.ndarray, size: int, alpha: float, beta: float, bias: float
) -> np.ndarray:
    """ONNX's LRN formula, channel by channel in float64: the reference where
    onnxruntime has no kernel (it takes 4-D inputs and odd sizes only) and
    ONNX's reference implementation cannot serve (it loops over the batch
    dim, not the channels, in onnx 1.23)."""
    x64 = x.astype(np.float64)
    square_sum = np.zeros_like(x64)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + size // 2)
        square_sum[:, c] = np.sum(x64[:, lo : hi + 1] ** 2, axis=1)
    return (x64 / (bias + alpha / size * square_sum) ** beta).astype(x.dtype)


@pytest.mark.parametrize(
    "size,alpha,beta,bias",
    [(1, 1e-4, 0.75, 1.0), (2, 1e-3, 0.5, 2.0), (3, 0.1, 0.75, 1.0), (5, 0.5, 1.5, 0.5)],
)
@pytest.mark.parametrize("xs", [(2, 7, 4, 5), (1, 6, 5), (1, 4, 2, 3, 2)])
def test_lrn(xs: tuple[int, ...], size: int, alpha: float, beta: float, bias: float) -> None:
    x = _rand(33, *xs) * 2
    attrs = {"size": size, "alpha": alpha, "beta": beta, "bias": bias}
    by_ort = len(xs) == 4 and size % 2 == 1
    expected = None if by_ort else _lrn_by_definition(x, size, alpha, beta, bias)
    _check("LRN", {"x": x}, attrs, expected=expected)


def test_lrn_float16() -> None:
    _check("LRN", {"x": _rand(34, 1, 6, 4, 4, dtype=np.float16)}, {"size": 3, "alpha": 0.1})
