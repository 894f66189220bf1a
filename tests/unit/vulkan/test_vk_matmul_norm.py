"""Vulkan matmul / gemm, softmax / log_softmax, layernorm, reduce and the
generated fused-pointwise kernels vs the CPU oracle on a real driver, with
the validation layer on and zero messages allowed.

fp32: max abs error <= 1e-4 * max |ref|. fp16 storage: cosine >= 0.999 and
no inf / NaN. The pure parts (codegen text, gates) need no device.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.unit.vulkan.harness import (
    cpu,
    graph,
    lowered,
    node,
    run_for_target,
    shaders,
    vk_vs_cpu,
)
from vknn.dialects.vkd import KernelOp
from vknn.kernels import gate
from vknn.kernels.pointwise_codegen import generate, index_expr, unsupported
from vknn.kernels.reduce import collapse_reduction
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.vulkan.caps import DeviceCaps

F32 = "float32"


def _spec(shape: tuple[int, ...], dtype: str = F32, name: str = "t") -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype)


def _op(op: str, ins: list[int], out: int, dtype: str = F32, **attrs: object) -> Step:
    return Step(op, op, ins, [out], [_spec((), dtype)], dict(attrs))


def _yield(*ins: int) -> Step:
    return Step("vx.yield", "vx.yield", list(ins), [], [], {})


def gelu_bias_body() -> list[Step]:
    """BERT's fused `(x + b) * 0.5 * (1 + erf((x + b) / sqrt 2))`."""
    return [
        _op("arith.constant", [], 2, value=1.4142135381698608),
        _op("arith.constant", [], 3, value=1.0),
        _op("arith.constant", [], 4, value=0.5),
        _op("arith.addf", [1, 0], 5),
        _op("arith.divf", [5, 2], 6),
        _op("math.erf", [6], 7),
        _op("arith.addf", [7, 3], 8),
        _op("arith.mulf", [5, 8], 9),
        _op("arith.mulf", [9, 4], 10),
        _yield(10),
    ]


# ---------------------------------------------------------------------------
# Pure parts
# ---------------------------------------------------------------------------


def test_index_expr_broadcasts() -> None:
    assert index_expr((2, 3, 4), (2, 3, 4)) == "idx"
    assert index_expr((), (2, 3)) == "0u"
    assert index_expr((4,), (2, 3, 4)) == "(idx % 4u)"
    assert index_expr((3, 1), (2, 3, 4)) == "((idx / 4u) % 3u)"
    for shape, out in [((2, 1, 4), (2, 3, 4)), ((1, 3, 1), (2, 3, 4)), ((5, 1, 1), (5, 2, 3))]:
        # Evaluate the generated expression in Python against numpy's broadcast.
        expr = index_expr(shape, out).replace("u", "").replace("/", "//")
        src = np.arange(int(np.prod(shape))).reshape(shape)
        want = np.broadcast_to(src, out).ravel()
        got = [eval(expr, {"idx": i}) for i in range(int(np.prod(out)))]  # noqa: S307
        assert list(want) == got, (shape, out, expr)


def test_codegen_contract() -> None:
    x, b = _spec((2, 8)), _spec((8,))
    epi = generate(gelu_bias_body(), [x, b], [x], primary=0, first_binding=4)
    assert epi.defines == {"PW_EPI": "1"} and epi.extra_inputs == (1,)
    assert "afp pw_apply(afp v, uint idx)" in epi.source
    assert "binding = 4" in epi.source and "vknn_erf" in epi.source
    solo = generate(gelu_bias_body(), [x, b], [x], primary=None)
    assert solo.defines == {"PW_GENERATED": "1"} and solo.extra_inputs == (0, 1)
    assert "void pw_run(uint idx)" in solo.source and "binding = 2" in solo.source
    assert solo.key != epi.key
    sin = [_op("math.sin", [0], 1), _yield(1)]
    assert "trigonometric" in (unsupported(sin, [x], [x]) or "")
    i64 = [_op("arith.fptosi", [0], 1, "int64"), _op("arith.sitofp", [1], 2), _yield(2)]
    # int64 values: 64-bit GLSL (shaderInt64) standalone, never in an epilogue.
    assert "int64" in (unsupported(i64, [x], [x], primary=0) or "")
    assert generate(i64, [x], [x], primary=None).defines["VKNN_INT64"] == "1"


def test_gates_say_why() -> None:
    caps = DeviceCaps.lavapipe_like()
    mm = Step("vx.matmul", "mm", [0, 1], [2], [_spec((4, 5))])
    assert gate(mm, caps, [_spec((4, 3)), _spec((3, 5))]) is None
    why = gate(mm, caps, [_spec((4, 3), "int64"), _spec((3, 5), "int64")])
    assert why is not None and "int64" in why
    am = Step("vx.reduce", "r", [0], [1], [_spec((4,), "int64")], {"kind": "argmax", "axes": [1]})
    assert gate(am, caps, [_spec((4, 5))]) is None  # the int64 index result: word pairs
    rs = Step("vx.reduce", "r", [0], [1], [_spec((4,), "int64")], {"kind": "sum", "axes": [1]})
    assert gate(rs, caps, [_spec((4, 5), "int64")]) is None  # 64-bit sums (shaderInt64)
    assert "shaderInt64" in (gate(rs, caps.with_(has_int64=False), [_spec((4, 5), "int64")]) or "")
    rm = Step("vx.reduce", "r", [0], [1], [_spec((4,), "int64")], {"kind": "mean", "axes": [1]})
    assert "int64" in (gate(rm, caps, [_spec((4, 5), "int64")]) or "")
    ln = Step("vx.layernorm", "ln", [0, 1], [2], [_spec((2, 4, 6))], {"axis": 1, "epsilon": 1e-5})
    assert "only partly" in (gate(ln, caps, [_spec((2, 4, 6)), _spec((6,))]) or "")
    assert gate(ln, caps, [_spec((2, 4, 6)), _spec((1, 4, 6))]) is None


def test_collapse_reduction() -> None:
    assert collapse_reduction((2, 3, 4), (1, 2)) == ([2], [12], [12], [1])
    assert collapse_reduction((2, 3, 4, 5), (0, 2)) == ([3, 5], [20, 1], [2, 4], [60, 5])
    assert collapse_reduction((1, 3, 1, 5), (1,)) == ([5], [1], [3], [5])


# ---------------------------------------------------------------------------
# On the device
# ---------------------------------------------------------------------------


# `session_device` comes from tests/unit/vulkan/conftest.py. Each case is an
# ONNX graph through the real pipeline, run on Vulkan (no CPU fallback) and
# compared with the CPU oracle; the kernels it compiled to are read off the
# lowered `vkd` module.


def _check(got: np.ndarray, want: np.ndarray, fp16: bool) -> None:
    assert got.shape == want.shape
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    if fp16:
        assert np.all(np.isfinite(g)), "inf/NaN in the fp16 result"
        cos = g @ w / (np.linalg.norm(g) * np.linalg.norm(w) or 1.0)
        assert cos >= 0.999 or np.array_equal(g, w), cos
    else:
        err = np.max(np.abs(g - w)) if g.size else 0.0
        scale = np.max(np.abs(w)) if w.size else 0.0
        assert err <= 1e-4 * max(scale, 1e-30), (err, scale)


def _compare(model, feeds: dict[str, np.ndarray], precision: str, shader: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Vulkan vs the CPU oracle; `shader` is among the kernels the graph
    compiled to (returned, one per dispatch)."""
    got, want, _ = vk_vs_cpu(model, feeds, precision=precision)
    for name, w in want.items():
        _check(got[name], w, precision != "high")
    kernels = [k for k in shaders(lowered(model, precision=precision)) if k != "convert_storage"]
    assert shader in kernels, kernels
    return kernels


def _in(**shapes: tuple[int, ...]) -> dict[str, tuple[tuple[int, ...], str]]:
    return {k: (v, "float32") for k, v in shapes.items()}


PRECISIONS = ["high", "low"]
RNG = np.random.default_rng


MATMUL_SHAPES = [
    ((1, 4, 128, 64), (1, 4, 64, 128)),
    ((128, 256), (256, 1024)),
    ((3, 5, 7), (7, 9)),
    ((2, 1, 5, 6), (3, 6, 4)),
    ((1, 1), (1, 1)),
    ((70, 33), (33, 65)),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul(session_device, precision: str, sa, sb) -> None:  # type: ignore[no-untyped-def]
    rng = RNG(0)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    # A 2-D right operand is a weight in models: a constant.
    const = len(sb) == 2
    inputs = _in(a=sa) if const else _in(a=sa, b=sb)
    model = graph([node("MatMul", ["a", "b"], ["y"])], inputs, ["y"], {"b": b} if const else {})
    feeds = {"a": a} if const else {"a": a, "b": b}
    _compare(model, feeds, precision, "matmul")


GEMM_CASES = [
    # (M, N, K, trans_a, trans_b, alpha, beta, C shape or None)
    (128, 256, 256, False, True, 1.0, 1.0, (256,)),
    (17, 23, 9, True, False, 0.5, 2.0, (17, 1)),
    (17, 23, 9, True, True, 1.0, 1.0, (17, 23)),
    (8, 40, 70, False, False, 1.0, 0.0, (40,)),
    (5, 6, 3, False, False, 1.5, 1.0, ()),
    (33, 31, 65, False, True, 1.0, 1.0, None),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", GEMM_CASES)
def test_gemm(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    m, n, k, ta, tb, alpha, beta, cshape = case
    rng = RNG(1)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    inits = {"b": b}
    if cshape is not None:
        inits["c"] = rng.standard_normal(cshape).astype(np.float32)
    ins = ["a", "b"] + (["c"] if cshape is not None else [])
    gemm = node("Gemm", ins, ["y"], transA=int(ta), transB=int(tb), alpha=alpha, beta=beta)
    model = graph([gemm], _in(a=a.shape), ["y"], inits)
    _compare(model, {"a": a}, precision, "matmul")


SOFTMAX_CASES = [((4, 128), 1), ((2, 3, 5), 1), ((2, 3, 5), 0), ((1, 4, 16, 16), 3), ((2, 3000), 1)]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES)
def test_softmax(session_device, precision: str, op: str, shape, axis: int) -> None:  # type: ignore[no-untyped-def]
    x = (RNG(2).standard_normal(shape) * 4).astype(np.float32)
    model = graph([node(op, ["x"], ["y"], axis=axis)], _in(x=shape), ["y"])
    _compare(model, {"x": x}, precision, "softmax")


def test_softmax_masked_rows(session_device) -> None:  # type: ignore[no-untyped-def]
    x = RNG(3).standard_normal((3, 8)).astype(np.float32)
    x[0, 2:] = -np.inf  # attention masks
    x[1, :] = -1e30
    model = graph([node("Softmax", ["x"], ["y"], axis=1)], _in(x=x.shape), ["y"])
    got, want, _ = vk_vs_cpu(model, {"x": x})
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-6)


LAYERNORM_CASES = [
    ((2, 3, 256), 2, (256,), True),
    ((4, 6, 5), 1, (6, 5), True),
    ((3, 40), 1, (40,), False),
    ((2, 7), 1, (1,), True),
    ((2, 3000), 1, (3000,), True),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", LAYERNORM_CASES)
def test_layernorm(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    shape, axis, pshape, bias = case
    rng = RNG(4)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    inits = {"g": rng.uniform(0.5, 1.5, pshape).astype(np.float32)}
    if bias:
        inits["b"] = rng.standard_normal(pshape).astype(np.float32)
    ln = node("LayerNormalization", ["x", *inits], ["y"], axis=axis, epsilon=1e-5)
    model = graph([ln], _in(x=shape), ["y"], inits)
    _compare(model, {"x": x}, precision, "layernorm")


REDUCE_OPS = {
    "sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
    "prod": "ReduceProd", "l1": "ReduceL1", "l2": "ReduceL2", "log_sum": "ReduceLogSum",
    "log_sum_exp": "ReduceLogSumExp", "sum_square": "ReduceSumSquare",
}  # fmt: skip
REDUCE_CASES = [
    ("sum", (4, 5, 6), (1,), False),
    ("mean", (2, 3, 300), (2,), True),
    ("max", (2, 3, 4, 5), (0, 2), False),
    ("min", (6, 7), (0, 1), True),
    ("prod", (3, 4, 5), (2,), False),
    ("l1", (3, 200), (0,), False),
    ("l2", (2, 3, 4), (1, 2), True),
    ("log_sum", (3, 4, 5), (1,), False),
    ("log_sum_exp", (2, 100, 3), (1,), True),
    ("log_sum_exp", (2, 5), (1,), False),
    ("sum_square", (2, 3, 4, 5, 6), (1, 3), False),
]


def _reduce(kind: str, shape: tuple[int, ...], axes, keepdims: bool):  # type: ignore[no-untyped-def]
    op = REDUCE_OPS[kind]
    if op == "ReduceSum":  # opset 13+: axes is an input
        n = node(op, ["x", "axes"], ["y"], keepdims=int(keepdims))
        return graph([n], _in(x=shape), ["y"], {"axes": np.array(axes, np.int64)})
    n = node(op, ["x"], ["y"], axes=list(axes), keepdims=int(keepdims))
    return graph([n], _in(x=shape), ["y"])


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", REDUCE_CASES)
def test_reduce(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    kind, shape, axes, keepdims = case
    x = RNG(5).standard_normal(shape).astype(np.float32)
    if kind in ("log_sum", "prod"):
        x = (np.abs(x) * 0.5 + 0.75).astype(np.float32)
    _compare(_reduce(kind, shape, axes, keepdims), {"x": x}, precision, "reduce")


ROW_CASES = {
    "sm": (node("Softmax", ["x"], ["y"], axis=1), {}, "softmax"),
    "lsm": (node("LogSoftmax", ["x"], ["y"], axis=0), {}, "softmax"),
    "ln": (node("LayerNormalization", ["x", "g"], ["y"], axis=1, epsilon=1e-5), {"g": (300,)},
           "layernorm"),
    "r": (node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0), {}, "reduce"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ROW_CASES))
def test_row_kernels_without_subgroups(session_device, case: str) -> None:  # type: ignore[no-untyped-def]
    """The shared-memory tree path (devices without subgroup arithmetic):
    compiled for such a target, run on the test device."""
    n, inits, shader = ROW_CASES[case]
    rng = RNG(8)
    arrays = {k: rng.uniform(0.5, 1.5, s).astype(np.float32) for k, s in inits.items()}
    model = graph([n], _in(x=(6, 300)), ["y"], arrays)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    target = replace(_device_target(), subgroup_size=1, subgroup_arithmetic=False)
    got, program = run_for_target(model, target, {"x": x}, allow_cpu_fallback=False)
    _check(got["y"], cpu(model, {"x": x})["y"], False)
    module = lowered(model, target)
    kernels = [op for op in module.ops if isinstance(op, KernelOp)]
    assert [k.shader.data for k in kernels] == [shader]
    assert "VKNN_SUBGROUP" not in kernels[0].defines.data
    # With subgroups, the same op takes the subgroup path.
    sub = [op for op in lowered(model, _device_target()).ops if isinstance(op, KernelOp)]
    assert "VKNN_SUBGROUP" in sub[0].defines.data


def _device_target():  # type: ignore[no-untyped-def]
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device()
    assert device is not None, why
    return from_caps(device.caps)


def _fused_module(region: str, shapes: list[tuple[int, ...]], n_out: int) -> str:
    """A `vx` module of one `vx.fused_pointwise` over inputs x0.. of
    `shapes` (float32), `n_out` results y0.. of their broadcast shape;
    `region`: the body after its block arguments %a0.. (scalars)."""

    def t(shape: tuple[int, ...]) -> str:
        return f"tensor<{''.join(f'{d}x' for d in shape)}f32>"

    out = t(tuple(np.broadcast_shapes(*shapes)))
    args = ", ".join(f'%x{i}: {t(s)} {{onnx.name = "x{i}"}}' for i, s in enumerate(shapes))
    ins = ", ".join(f"%x{i}" for i in range(len(shapes)))
    in_types = ", ".join(t(s) for s in shapes)
    outs = ", ".join([out] * n_out)
    results = ", ".join(f"%y{j}" for j in range(n_out))
    names = ", ".join(f'"y{j}"' for j in range(n_out))
    block = ", ".join(f"%a{i}: f32" for i in range(len(shapes)))
    return f"""builtin.module attributes {{onnx.opset = 17 : i64}} {{
  func.func @main({args}) -> ({outs}) attributes {{onnx.output_names = [{names}]}} {{
    {results} = vx.fused_pointwise {ins} {{onnx.name = "fp", vx.layout = #vx<layout flat>}} : ({in_types}) -> ({outs}) {{
    ^bb0({block}):
{region}
    }}
    func.return {results} : {outs}
  }}
}}"""  # noqa: E501


def _run_vx(text: str, feeds: dict[str, np.ndarray], precision: str, cpu_only: bool) -> Any:
    """A `vx` module lowered for the test device (or the CPU alone), run by
    the runtime: (outputs, the final module)."""
    from xdsl.parser import Parser

    from vknn.compiler import LoweringOptions, lower
    from vknn.dialects import make_context
    from vknn.runtime.executable import Executable
    from vknn.runtime.program import Program
    from vknn.runtime.vulkan.context import shared_device
    from vknn.serialize import module_to_program

    module = Parser(make_context(), text).parse_module()
    backends = ("cpu",) if cpu_only else ("vulkan", "cpu")
    opts = LoweringOptions(precision=precision, backends=backends, allow_cpu_fallback=cpu_only)
    lower(module, opts, None if cpu_only else _device_target())
    program = Program.decode(module_to_program(module))
    device, pipelines, _ = shared_device()
    exe = Executable(program, device, pipelines)
    try:
        return exe.run(0, feeds), module
    finally:
        exe.close()


GELU_BIAS = """      %c2 = arith.constant 1.4142135381698608 : f32
      %c1 = arith.constant 1.0 : f32
      %ch = arith.constant 0.5 : f32
      %s = arith.addf %a1, %a0 : f32
      %d = arith.divf %s, %c2 : f32
      %e = math.erf %d : f32
      %e1 = arith.addf %e, %c1 : f32
      %m = arith.mulf %s, %e1 : f32
      %r = arith.mulf %m, %ch : f32
      vx.yield %r : f32"""
"""BERT's fused `(x + b) * 0.5 * (1 + erf((x + b) / sqrt 2))`."""

FUSED_CASES = [
    ("gelu_bias", GELU_BIAS, [(2, 16, 64), (64,)], 1),
    # relu(x) via cmpf + select, and max(x, y) with NaN-ignoring maxnumf, two results
    (
        "two_results",
        """      %z = arith.constant 0.0 : f32
      %lt = arith.cmpf olt, %a0, %z : f32
      %r = arith.select %lt, %z, %a0 : f32
      %m = arith.maxnumf %r, %a1 : f32
      vx.yield %r, %m : f32, f32""",
        [(3, 1, 5), (1, 4, 5)],
        2,
    ),
    # (x - mean)^2 / sqrt(v + eps) with a constant exponent, a scalar input
    (
        "pow_sqrt",
        """      %two = arith.constant 2.0 : f32
      %eps = arith.constant 1.0e-05 : f32
      %c = arith.subf %a0, %a1 : f32
      %p = math.powf %c, %two : f32
      %ve = arith.addf %a2, %eps : f32
      %sd = math.sqrt %ve : f32
      %r = arith.divf %p, %sd : f32
      vx.yield %r : f32""",
        [(4, 8), (4, 1), ()],
        1,
    ),
    # integers: trunc through i32, then an integer floor-div by 3 back to float
    (
        "integers",
        """      %i = arith.fptosi %a0 : f32 to i32
      %three = arith.constant 3 : i32
      %q = arith.floordivsi %i, %three : i32
      %f = arith.sitofp %q : i32 to f32
      %t = math.tanh %a0 : f32
      %r = arith.addf %f, %t : f32
      vx.yield %r : f32""",
        [(50,)],
        1,
    ),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("name", "region", "shapes", "n_out"), FUSED_CASES)
def test_fused_pointwise(session_device, precision: str, name, region, shapes, n_out) -> None:  # type: ignore[no-untyped-def]
    """A `vx.fused_pointwise` region as one generated kernel vs the CPU oracle."""
    rng = RNG(6)
    feeds = {f"x{i}": (rng.standard_normal(s) * 4).astype(np.float32) for i, s in enumerate(shapes)}
    if name == "pow_sqrt":
        feeds["x2"] = np.abs(feeds["x2"]).astype(np.float32)
    text = _fused_module(region, shapes, n_out)
    got, module = _run_vx(text, feeds, precision, cpu_only=False)
    want, _ = _run_vx(text, feeds, precision, cpu_only=True)
    for name_, w in want.items():
        _check(got[name_], w, precision != "high")
    assert [k for k in shaders(module) if k != "convert_storage"] == ["fused_pointwise"]


GELU_NODES = [
    node("Add", ["x", "b"], ["s"]),
    node("Div", ["s", "sqrt2"], ["d"]),
    node("Erf", ["d"], ["e"]),
    node("Add", ["e", "one"], ["e1"]),
    node("Mul", ["s", "e1"], ["m"]),
    node("Mul", ["m", "half"], ["y"]),
]
GELU_CONSTS = {
    "sqrt2": np.array(1.4142135, np.float32),
    "one": np.array(1.0, np.float32),
    "half": np.array(0.5, np.float32),
}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("op", ["MatMul", "Gemm"])
def test_matmul_epilogue(session_device, precision: str, op: str) -> None:  # type: ignore[no-untyped-def]
    """A product merged with its GELU + bias epilogue (merge-epilogues)
    matches the CPU oracle, in one dispatch."""
    rng = RNG(7)
    a = rng.standard_normal((1, 32, 48) if op == "MatMul" else (32, 48)).astype(np.float32)
    w = (rng.standard_normal((48, 40)) * 0.2).astype(np.float32)
    bias = rng.standard_normal((40,)).astype(np.float32)
    nodes = [node(op, ["a", "w"], ["x"]), *GELU_NODES]
    inits = {"w": w, "b": bias, **GELU_CONSTS}
    model = graph(nodes, _in(a=a.shape), ["y"], inits)
    kernels = _compare(model, {"a": a}, precision, "matmul")
    assert kernels == ["matmul"], kernels
    (k,) = [op for op in lowered(model, precision=precision).ops if isinstance(op, KernelOp)
            if op.shader.data == "matmul"]  # fmt: skip
    assert "PW_EPI" in k.defines.data


# ---------------------------------------------------------------------------
# The BERT-style encoder through vknn.Session
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_bert_encoder_vulkan_vs_cpu(session_device) -> None:  # type: ignore[no-untyped-def]
    import vknn
    from tests.unit.models import cosine_and_error, model_inputs, torch_model

    model = torch_model("bert_encoder")
    dims = {"batch": 1, "seq": 128}
    feeds = model_inputs(model, dims)
    cpu = vknn.Session(model, vknn.Config(dims=dims, backends=("cpu",), cache_file="off"))
    vk = vknn.Session(model, vknn.Config(dims=dims, cache_file="off"))
    want = cpu.run(feeds)
    got = vk.run(feeds)
    for name, ref in want.items():
        cos, err, scale = cosine_and_error(ref, got[name])
        assert cos >= 0.9999 and err <= 1e-3 * max(scale, 1.0), (name, cos, err, scale)
    fallbacks = vk.fallback_reasons()
    backends = vk.node_backends()
    on_vk = sum(1 for b in backends.values() if b == "vulkan")
    t0 = time.perf_counter()
    vk.run(feeds)
    t_vk = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu.run(feeds)
    t_cpu = time.perf_counter() - t0
    print(
        f"\nbert_encoder: {on_vk}/{len(backends)} nodes on Vulkan; "
        f"run vulkan {t_vk * 1e3:.1f} ms, cpu {t_cpu * 1e3:.1f} ms"
    )
    for name, why in fallbacks.items():
        print(f"  cpu: {name}: {why}")
    vk.close()
    cpu.close()
