"""CPU kernels of the pointwise, reduction, data-movement, resize and
quantization families against onnxruntime.

Each test builds one ONNX graph holding many nodes (one per kind/attribute
combination, each its own graph output) so that a single compile covers a
whole row of the matrix; this keeps the file fast. Data inputs stay graph
inputs (so nothing is constant-folded away) and every node must run on a
`vx` kernel, not the onnx.reference fallback. Floats must agree within
1e-5 * max|ref| (+1e-6), integers and bools exactly, with identical dtype
and shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import vknn
from tests.unit.program_steps import cpu_steps
from vknn.oracle.elementwise import fused_pointwise_kernel
from vknn.runtime.plan import Step, TensorSpec

OPSET = 21
RNG_SEED = 1234

Node = tuple[str, list[str], dict[str, Any]]  # (op_type, input names, attributes)


def _elem(dtype: np.dtype | str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def build(
    feeds: dict[str, np.ndarray],
    nodes: Sequence[Node],
    consts: dict[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """One graph: each node's single output `y{i}` is a graph output."""
    onnx_nodes, outputs = [], []
    for i, (op, inputs, attrs) in enumerate(nodes):
        onnx_nodes.append(helper.make_node(op, inputs, [f"y{i}"], name=f"n{i}_{op}", **attrs))
        outputs.append(helper.make_empty_tensor_value_info(f"y{i}"))
    graph = helper.make_graph(
        onnx_nodes,
        "g",
        [helper.make_tensor_value_info(k, _elem(v.dtype), v.shape) for k, v in feeds.items()],
        outputs,
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (consts or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """Run on vknn's CPU backend and onnxruntime; compare every output."""
    feeds = {k: np.asarray(v) for k, v in feeds.items()}  # 0-d arrays, not numpy scalars
    sess = vknn.Session(model, vknn.Config(backends=("cpu",)))
    fallbacks = {n: b for n, b in sess.node_backends().items() if b != "cpu"}
    assert not fallbacks, f"nodes not on a vx CPU kernel: {fallbacks} {sess.fallback_reasons()}"
    got = sess.run(feeds)
    ref_sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    refs = ref_sess.run(names, feeds)
    for name, ref in zip(names, refs, strict=True):
        node = model.graph.node[int(name[1:])]
        out = got[name]
        where = f"{node.name} {[(a.name, helper.get_attribute_value(a)) for a in node.attribute]}"
        assert out.dtype == ref.dtype, f"{where}: dtype {out.dtype} != {ref.dtype}"
        assert out.shape == ref.shape, f"{where}: shape {out.shape} != {ref.shape}"
        if ref.dtype.kind == "f":
            special = ~np.isfinite(ref)
            assert (
                np.array_equal(out[special], ref[special], equal_nan=True)
                and np.isfinite(out[~special]).all()
            ), f"{where}: inf/NaN positions differ"
            ok = ~special
            err = np.abs(out[ok].astype(np.float64) - ref[ok].astype(np.float64))
            bound = 1e-5 * float(np.abs(ref[ok]).max(initial=0.0)) + 1e-6
            if ref.dtype == np.float16:
                bound = 1e-3 * float(np.abs(ref[ok]).max(initial=0.0)) + 1e-3
            assert err.max(initial=0.0) <= bound, f"{where}: max abs err {err.max()} > {bound}"
        else:
            assert np.array_equal(out, ref), f"{where}:\n{out}\nvs\n{ref}"


def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


# ---------------------------------------------------------------------------
# vx.unary
# ---------------------------------------------------------------------------

_FLOAT_UNARY: list[Node] = [
    (op, ["x"], {})
    for op in (
        "Relu",
        "Sigmoid",
        "Tanh",
        "Exp",
        "Abs",
        "Neg",
        "Floor",
        "Ceil",
        "Round",
        "Sign",
        "Erf",
        "Softplus",
        "Softsign",
        "Sin",
        "Cos",
        "Tan",
        "HardSwish",
        "Mish",
        "Identity",
    )
] + [
    ("Log", ["p"], {}),
    ("Sqrt", ["p"], {}),
    ("Reciprocal", ["p"], {}),
    ("Gelu", ["x"], {}),
    ("Gelu", ["x"], {"approximate": "tanh"}),
    ("LeakyRelu", ["x"], {}),
    ("LeakyRelu", ["x"], {"alpha": 0.3}),
    ("Elu", ["x"], {"alpha": 0.7}),
    ("Celu", ["x"], {"alpha": 1.3}),
    ("Selu", ["x"], {}),
    ("Selu", ["x"], {"alpha": 1.5, "gamma": 0.9}),
    ("ThresholdedRelu", ["x"], {"alpha": 0.8}),
    ("HardSigmoid", ["x"], {}),
    ("HardSigmoid", ["x"], {"alpha": 0.3, "beta": 0.4}),
    ("Clip", ["x", "lo", "hi"], {}),
    ("Clip", ["x", "", "hi"], {}),
    ("Clip", ["x", "hi", "lo"], {}),  # min > max: everything becomes max
]


def _float_input(shape: tuple[int, ...]) -> np.ndarray:
    r = rng()
    x = (r.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    # exact ties for Round, zeros for Sign, and the edges of the piecewise kinds
    edges = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0, 0.8, -3.0, 3.0, 1.0]
    n = min(len(edges), flat.size)
    flat[:n] = edges[:n]
    return x


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), ()])
def test_unary_float(shape: tuple[int, ...]) -> None:
    x = _float_input(shape)
    p = (np.abs(x) + 0.25).astype(np.float32)
    consts = {"lo": np.array(-1.25, np.float32), "hi": np.array(2.0, np.float32)}
    check(build({"x": x, "p": p}, _FLOAT_UNARY, consts), {"x": x, "p": p})


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_unary_int(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = rng().integers(max(info.min + 1, -1000), min(info.max, 1000), (3, 7)).astype(dtype)
    consts = {"lo": np.array(-5, dtype), "hi": np.array(60, dtype)}
    nodes: list[Node] = [
        ("Abs", ["x"], {}),
        ("Neg", ["x"], {}),
        ("Sign", ["x"], {}),
        ("Clip", ["x", "lo", "hi"], {}),
        ("Clip", ["x", "", "hi"], {}),
        ("Clip", ["x", "lo"], {}),
    ]
    if dtype != "int64":
        nodes.append(("Relu", ["x"], {}))
    check(build({"x": x}, nodes, consts), {"x": x})


def test_unary_bool_not() -> None:
    b = rng().random((4, 5)) > 0.5
    check(build({"b": b}, [("Not", ["b"], {})]), {"b": b})


# ---------------------------------------------------------------------------
# vx.binary, vx.select
# ---------------------------------------------------------------------------

BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]

_FLOAT_BINARY = [
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Max",
    "Min",
    "Equal",
    "Less",
    "LessOrEqual",
    "Greater",
    "GreaterOrEqual",
]
_INT_BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater"]


def _pair(dtype: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> dict[str, np.ndarray]:
    r = rng()
    if dtype.startswith("float"):
        a = np.asarray(r.standard_normal(sa) * 4).astype(dtype)
        b = np.asarray(r.standard_normal(sb) * 4).astype(dtype)
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(dtype)
        if a.size > 2 and b.size > 2:
            a.reshape(-1)[:2] = b.reshape(-1)[:2]  # equal pairs for the comparisons
        return {"a": a, "b": b}
    if dtype == "uint8":
        return {"a": r.integers(0, 256, sa).astype(dtype), "b": r.integers(0, 8, sb).astype(dtype)}
    a = np.asarray(r.integers(-60, 60, sa)).astype(dtype)
    b = np.asarray(r.integers(-9, 9, sb)).astype(dtype)
    b[b == 0] = 3  # integer division by zero is undefined in ONNX
    return {"a": a, "b": b}


@pytest.mark.parametrize("sa,sb", BROADCASTS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8"])
def test_binary(dtype: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    feeds = _pair(dtype, sa, sb)
    if dtype.startswith("float"):
        nodes: list[Node] = [(op, ["a", "b"], {}) for op in _FLOAT_BINARY]
        nodes.append(("Mod", ["a", "b"], {"fmod": 1}))
        if dtype == "float32":
            feeds["p"] = np.abs(feeds["a"]) + np.float32(0.5)
            nodes.append(("Pow", ["p", "b"], {}))
            if len(sb) <= len(sa) and np.broadcast_shapes(sa, sb) == sa:
                nodes.append(("PRelu", ["a", "b"], {}))
    else:
        nodes = [(op, ["a", "b"], {}) for op in _INT_BINARY]
        nodes.append(("Mod", ["a", "b"], {}))  # sign of the divisor
        if dtype != "int8":
            nodes.append(("Pow", ["a", "b"], {}))  # negative exponents truncate to 0
    check(build(feeds, nodes), feeds)


def test_binary_pow_mixed_types() -> None:
    r = rng()
    x = (r.random((3, 4)) * 3 + 0.1).astype(np.float32)
    i = r.integers(-3, 4, (3, 4)).astype(np.int64)
    k = r.integers(1, 6, (3, 4)).astype(np.int32)
    f = (r.random((4,)) * 2).astype(np.float32)
    feeds = {"x": x, "i": i, "k": k, "f": f}
    nodes: list[Node] = [("Pow", ["x", "i"], {}), ("Pow", ["k", "f"], {}), ("Pow", ["k", "i"], {})]
    check(build(feeds, nodes), feeds)


def test_binary_uint8_and_bool() -> None:
    feeds = _pair("uint8", (3, 4), (4,))
    r = rng()
    feeds["p"], feeds["q"] = r.random((2, 3)) > 0.5, r.random((3,)) > 0.3
    nodes: list[Node] = [
        ("BitShift", ["a", "b"], {"direction": "LEFT"}),
        ("BitShift", ["a", "b"], {"direction": "RIGHT"}),
        ("Add", ["a", "b"], {}),  # wraps
        ("Sub", ["a", "b"], {}),
        ("Div", ["a", "b"], {}),
        ("Max", ["a", "b"], {}),
        ("And", ["p", "q"], {}),
        ("Or", ["p", "q"], {}),
        ("Xor", ["p", "q"], {}),
        ("Equal", ["p", "q"], {}),
    ]
    check(build(feeds, nodes), feeds)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_select(dtype: str) -> None:
    r = rng()
    c = r.random((2, 1, 4)) > 0.5
    x = (r.standard_normal((3, 1)) * 10).astype(dtype)
    y = (r.standard_normal((2, 3, 4)) * 10).astype(dtype)
    feeds = {"c": c, "x": x, "y": y}
    check(build(feeds, [("Where", ["c", "x", "y"], {}), ("Where", ["c", "y", "x"], {})]), feeds)


# ---------------------------------------------------------------------------
# vx.cast
# ---------------------------------------------------------------------------

_CASTS: dict[str, list[str]] = {
    "float32": ["float16", "float64", "int8", "int32", "int64", "uint8", "bool"],
    "float64": ["float32", "float16", "int64"],
    "float16": ["float32", "int32", "bool"],
    "int64": ["float32", "float16", "int32", "int8", "uint8", "bool", "float64"],
    "int32": ["int64", "float32", "uint8"],
    "uint8": ["float32", "int64", "int8"],
    "bool": ["float32", "int64", "int32", "uint8"],
}


@pytest.mark.parametrize("src", list(_CASTS))
def test_cast(src: str) -> None:
    r = rng()
    if src.startswith("float"):
        x = (r.standard_normal((4, 6)) * 40).astype(src)
        x = np.clip(x, -120, 120).astype(src)
        x.reshape(-1)[:6] = [0.0, -0.0, 2.5, -2.5, 0.99, -0.99]
        if src != "float16":
            x.reshape(-1)[6] = 1 + 2.0**-12  # rounds when narrowed to f16
    elif src == "bool":
        x = r.random((4, 6)) > 0.5
    else:
        info = np.iinfo(src)
        x = r.integers(max(info.min, -100000), min(info.max, 100000), (4, 6)).astype(src)
        x.reshape(-1)[:2] = [0, 1]
    # float -> uint8 of a negative value is undefined behaviour in onnxruntime
    feeds = {"x": x, "ax": np.abs(x)} if src.startswith("float") else {"x": x}
    nodes: list[Node] = [
        ("Cast", ["ax" if dst == "uint8" and "ax" in feeds else "x"], {"to": _elem(dst)})
        for dst in _CASTS[src]
    ]
    check(build(feeds, nodes), feeds)


# ---------------------------------------------------------------------------
# vx.reduce
# ---------------------------------------------------------------------------

_REDUCE_FLOAT = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSumExp",
    "ReduceSumSquare",
    "ReduceLogSum",
]
_AXES = [[1], [0, 2], [-1], [1, 2, 3], None]


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_reduce(dtype: str) -> None:
    r = rng()
    if dtype == "float32":
        x = (r.random((2, 3, 4, 5)) + 0.5).astype(dtype)  # positive: LogSum, Prod in range
        ops = _REDUCE_FLOAT
    else:
        x = r.integers(-20, 20, (2, 3, 4, 5)).astype(dtype)
        ops = ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceL1", "ReduceSumSquare"]
    consts: dict[str, np.ndarray] = {}
    nodes: list[Node] = []
    for i, axes in enumerate(_AXES):
        if axes is not None:
            consts[f"axes{i}"] = np.array(axes, np.int64)
        for op in ops:
            for keep in (0, 1):
                if op == "ReduceProd" and axes is None:
                    continue  # 120 factors overflow the comparison
                inputs = ["x"] + ([f"axes{i}"] if axes is not None else [])
                nodes.append((op, inputs, {"keepdims": keep}))
    check(build({"x": x}, nodes, consts), {"x": x})


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_argmax_argmin(dtype: str) -> None:
    # Few distinct values: many ties for select_last_index to break.
    x = rng().integers(0, 3, (3, 4, 5)).astype(dtype)
    nodes: list[Node] = [
        (op, ["x"], {"axis": axis, "keepdims": keep, "select_last_index": last})
        for op in ("ArgMax", "ArgMin")
        for axis in (0, -1, 1)
        for keep in (0, 1)
        for last in (0, 1)
    ]
    check(build({"x": x}, nodes), {"x": x})


# ---------------------------------------------------------------------------
# data movement
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "uint8"])
def test_shape_ops(dtype: str) -> None:
    r = rng()
    x = (r.standard_normal((2, 3, 4, 5)) * 10).astype(dtype)
    z = (r.standard_normal((2, 1, 4, 5)) * 10).astype(dtype)
    idx = np.array([[0, -1], [2, 1]], np.int64)
    consts = {
        "shape": np.array([6, -1, 5], np.int64),
        "s0": np.array([1, -1], np.int64),
        "e0": np.array([3, -100], np.int64),
        "a0": np.array([1, 3], np.int64),
        "st0": np.array([1, -2], np.int64),
        "s1": np.array([-1, 10], np.int64),
        "e1": np.array([-1000, 0], np.int64),
        "a1": np.array([0, 2], np.int64),
        "st1": np.array([-1, -3], np.int64),
        "cidx": np.array([2, -3, 0], np.int64),
        "eshape": np.array([3, 2, 1, 4, 1], np.int64),
        "unsq": np.array([0, 3], np.int64),
        "p_pos": np.array([0, 1, 2, 1, 0, 2, 1, 3], np.int64),
        "p_neg": np.array([0, -1, 1, -2, 1, 0, -1, 2], np.int64),
        "cval": np.array(7, dtype),
    }
    nodes: list[Node] = [
        ("Reshape", ["x", "shape"], {}),
        ("Flatten", ["x"], {"axis": 2}),
        ("Unsqueeze", ["z", "unsq"], {}),
        ("Squeeze", ["z"], {}),
        ("Transpose", ["x"], {}),
        ("Transpose", ["x"], {"perm": [0, 2, 3, 1]}),
        ("Concat", ["x", "z", "x"], {"axis": 1}),
        ("Concat", ["x", "x"], {"axis": -1}),
        ("Slice", ["x", "s0", "e0", "a0", "st0"], {}),
        ("Slice", ["x", "s1", "e1", "a1", "st1"], {}),
        ("Gather", ["x", "idx"], {"axis": 1}),
        ("Gather", ["x", "cidx"], {"axis": -1}),
        ("Expand", ["z", "eshape"], {}),
        ("Pad", ["x", "p_pos", "cval"], {"mode": "constant"}),
        ("Pad", ["x", "p_neg"], {"mode": "constant"}),
        ("Pad", ["x", "p_pos"], {"mode": "reflect"}),
        ("Pad", ["x", "p_pos"], {"mode": "edge"}),
        ("Pad", ["x", "p_pos"], {"mode": "wrap"}),
    ]
    feeds = {"x": x, "z": z, "idx": idx}
    check(build(feeds, nodes, consts), feeds)


# ---------------------------------------------------------------------------
# vx.resize
# ---------------------------------------------------------------------------

_COORDS = [
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
]
_SCALES = {"up": [1, 1, 2.0, 1.5], "down": [1, 1, 0.6, 0.5], "odd": [1, 1, 1.7, 0.8]}


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("which", list(_SCALES))
def test_resize(mode: str, which: str) -> None:
    x = (rng().standard_normal((1, 2, 5, 7)) * 5).astype(np.float32)
    consts = {
        "scales": np.array(_SCALES[which], np.float32),
        "sizes": np.array([1, 2, 8, 3], np.int64),
    }
    variants: list[dict[str, Any]] = []
    for coord in _COORDS:
        if mode == "nearest":
            for nm in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
                variants.append({"coordinate_transformation_mode": coord, "nearest_mode": nm})
        elif mode == "cubic":
            variants.append({"coordinate_transformation_mode": coord})
            variants.append(
                {
                    "coordinate_transformation_mode": coord,
                    "cubic_coeff_a": -0.5,
                    "exclude_outside": 1,
                }
            )
        else:
            variants.append({"coordinate_transformation_mode": coord})
    nodes: list[Node] = []
    for attrs in variants:
        nodes.append(("Resize", ["x", "", "scales"], {"mode": mode, **attrs}))
        nodes.append(("Resize", ["x", "", "", "sizes"], {"mode": mode, **attrs}))
    check(build({"x": x}, nodes, consts), {"x": x})


def test_resize_nd() -> None:
    """3 resized spatial dims (trilinear) and nearest on a 3-D tensor."""
    r = rng()
    x = r.standard_normal((1, 1, 3, 4, 5)).astype(np.float32)
    v = r.integers(0, 100, (2, 3, 4)).astype(np.int32)
    consts = {
        "s5": np.array([1, 1, 2.0, 0.5, 1.6], np.float32),
        "s3": np.array([2.0, 1.5, 0.5], np.float32),
    }
    nodes: list[Node] = [
        ("Resize", ["x", "", "s5"], {"mode": "linear"}),
        (
            "Resize",
            ["x", "", "s5"],
            {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        ),
        ("Resize", ["x", "", "s5"], {"mode": "nearest"}),
        (
            "Resize",
            ["v", "", "s3"],
            {
                "mode": "nearest",
                "nearest_mode": "floor",
                "coordinate_transformation_mode": "asymmetric",
            },
        ),
    ]
    check(build({"x": x, "v": v}, nodes, consts), {"x": x, "v": v})


# ---------------------------------------------------------------------------
# vx.quantize / vx.dequantize
# ---------------------------------------------------------------------------


def test_quantize_dequantize() -> None:
    r = rng()
    x = (r.standard_normal((2, 3, 4)) * 200).astype(np.float32)
    x.reshape(-1)[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, 1e6]  # ties (scale 1) and saturation
    consts = {
        "s1": np.array(1.0, np.float32),
        "s": np.array(0.37, np.float32),
        "sc": np.array([0.5, 1.25, 2.0], np.float32),
        "zu8": np.array(128, np.uint8),
        "zi8": np.array(-3, np.int8),
        "zcu8": np.array([0, 100, 255], np.uint8),
        "zi16": np.array(-1000, np.int16),
    }
    q_u8 = r.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    q_i8 = r.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    q_i32 = r.integers(-100000, 100000, (2, 3, 4)).astype(np.int32)
    nodes: list[Node] = [
        ("QuantizeLinear", ["x", "s1"], {}),  # default zero point: uint8
        ("QuantizeLinear", ["x", "s", "zu8"], {}),
        ("QuantizeLinear", ["x", "s", "zi8"], {}),
        ("QuantizeLinear", ["x", "s1", "zi8"], {}),
        ("QuantizeLinear", ["x", "sc", "zcu8"], {"axis": 1}),
        ("QuantizeLinear", ["x", "s", "zi16"], {}),
        ("DequantizeLinear", ["qu8", "s", "zu8"], {}),
        ("DequantizeLinear", ["qu8", "sc", "zcu8"], {"axis": 1}),
        ("DequantizeLinear", ["qi8", "s", "zi8"], {}),
        ("DequantizeLinear", ["qi8", "sc"], {"axis": -2}),
        ("DequantizeLinear", ["qi32", "s"], {}),
    ]
    feeds = {"x": x, "qu8": q_u8, "qi8": q_i8, "qi32": q_i32}
    check(build(feeds, nodes, consts), feeds)


# ---------------------------------------------------------------------------
# vx.fused_pointwise: the region interpreter on a hand-built step
# ---------------------------------------------------------------------------


def _body(op: str, inputs: list[int], out: int, dtype: str, **attrs: Any) -> Step:
    return Step(op, op, inputs, [out], [TensorSpec(op, (), dtype)], attrs)


def test_fused_pointwise_interpreter() -> None:
    """y0 = select(tanh(a * f32(b)) > 0.5, tanh(...), 0.5) + exp(-|a|) ; y1 = the i1."""
    region = [
        _body("arith.sitofp", [1], 2, "float32"),
        _body("arith.mulf", [0, 2], 3, "float32"),
        _body("math.tanh", [3], 4, "float32"),
        _body("arith.constant", [], 5, "float32", value=0.5),
        _body("arith.cmpf", [4, 5], 6, "bool", predicate=2),  # ogt
        _body("arith.select", [6, 4, 5], 7, "float32"),
        _body("math.absf", [0], 8, "float32"),
        _body("arith.negf", [8], 9, "float32"),
        _body("math.exp", [9], 10, "float32"),
        _body("arith.addf", [7, 10], 11, "float32"),
        Step("vx.yield", "vx.yield", [11, 6], [], []),
    ]
    r = rng()
    a = r.standard_normal((2, 3)).astype(np.float32)
    b = r.integers(-2, 3, (3,)).astype(np.int32)
    step = Step(
        "vx.fused_pointwise",
        "fused",
        [0, 1],
        [2, 3],
        [TensorSpec("y0", (2, 3), "float32"), TensorSpec("y1", (2, 3), "bool")],
        region=region,
    )
    y0, y1 = fused_pointwise_kernel(step, [a, b])
    t = np.tanh(a.astype(np.float64) * b).astype(np.float32)
    want1 = t > np.float32(0.5)
    want0 = np.where(want1, t, np.float32(0.5)) + np.exp(-np.abs(a).astype(np.float64)).astype(
        np.float32
    )
    assert y0.dtype == np.float32 and y0.shape == (2, 3)
    assert y1.dtype == np.bool_ and np.array_equal(y1, want1)
    np.testing.assert_allclose(y0, want0, rtol=1e-6, atol=1e-7)


def test_fused_pointwise_integer_ops_and_broadcast() -> None:
    """Signedness comes from the op (divsi vs divui, shrsi), not the dtype;
    a body ignoring an input still yields the full broadcast shape."""
    region = [
        _body("arith.divsi", [0, 1], 3, "int32"),
        _body("arith.divui", [0, 1], 4, "int32"),
        _body("arith.remsi", [0, 1], 5, "int32"),
        _body("arith.shrsi", [0, 1], 6, "int32"),
        _body("arith.cmpi", [0, 1], 7, "bool", predicate=6),  # ult
        Step("vx.yield", "vx.yield", [3, 4, 5, 6, 7], [], []),
    ]
    a = np.array([[-7, 7, -1, 9]], np.int32)
    b = np.array([[2], [3]], np.int32)
    unused = np.zeros((2, 4), np.float32)
    specs = [TensorSpec(f"y{i}", (2, 4), "int32") for i in range(4)]
    specs.append(TensorSpec("y4", (2, 4), "bool"))
    step = Step("vx.fused_pointwise", "f", [0, 1, 2], [3, 4, 5, 6, 7], specs, region=region)
    divs, divu, rems, shrs, ult = fused_pointwise_kernel(step, [a, b, unused])
    np.testing.assert_array_equal(divs, np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(divu, (a.view(np.uint32) // b.view(np.uint32)).view(np.int32))
    np.testing.assert_array_equal(rems, np.fmod(a, b))
    np.testing.assert_array_equal(shrs, np.broadcast_to(a >> b, (2, 4)))
    np.testing.assert_array_equal(ult, a.view(np.uint32) < b.view(np.uint32))


def test_float16() -> None:
    """f16 tensors keep f16 results (computed wide, rounded once)."""
    r = rng()
    x = (r.standard_normal((3, 4, 5)) * 3).astype(np.float16)
    y = (r.standard_normal((4, 5)) * 3 + 0.1).astype(np.float16)
    consts = {"axes": np.array([1], np.int64)}
    nodes: list[Node] = (
        [
            (op, ["x"], {})
            for op in (
                "Relu",
                "Sigmoid",
                "Tanh",
                "Exp",
                "Abs",
                "Neg",
                "Floor",
                "Round",
                "Sign",
                "Erf",
                "Softplus",
                "Sin",
                "HardSwish",
                "LeakyRelu",
                "Elu",
                "Gelu",
            )
        ]
        + [(op, ["x", "y"], {}) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Less")]
        + [
            ("ReduceSum", ["x", "axes"], {}),
            ("ReduceMean", ["x", "axes"], {"keepdims": 0}),
            ("ReduceMax", ["x", "axes"], {}),
            ("Cast", ["x"], {"to": _elem("float32")}),
        ]
    )
    check(build({"x": x, "y": y}, nodes, consts), {"x": x, "y": y})


def test_fused_pointwise_through_the_compiler() -> None:
    """A chain fused by `fuse-pointwise` runs through the interpreter with the
    body's own scalar types (the plan carries them) and matches onnxruntime."""
    from vknn.transforms.registry import available_passes

    if "fuse-pointwise" not in available_passes():
        pytest.skip("no fuse-pointwise pass")
    r = rng()
    x = (r.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    y = r.standard_normal((4,)).astype(np.float32)
    chain = ["Gelu", "Sigmoid", "HardSigmoid", "Elu", "Softplus", "Mish", "LeakyRelu", "Sign"]
    nodes: list[Node] = [("Mul", ["x", "y"], {})]
    nodes += [(op, [f"y{i}"], {}) for i, op in enumerate(chain)]
    model = build({"x": x, "y": y}, nodes)
    del model.graph.output[:-1]  # only the end of the chain: one fused region
    pipeline = "infer-shapes,const-fold,convert-onnx-to-vx,fuse-pointwise"
    sess = vknn.Session(model, vknn.Config(backends=("cpu",), pipeline=pipeline))
    assert any(s.op == "vx.fused_pointwise" for s in cpu_steps(sess))
    got = sess.run({"x": x, "y": y})[model.graph.output[0].name]
    ref_sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (ref,) = ref_sess.run(None, {"x": x, "y": y})
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.abs(ref).max() + 1e-6)
