"""Vulkan matmul / gemm, softmax / log_softmax, layernorm, reduce and the
generated fused-pointwise kernels vs the CPU oracle on a real driver, with
the validation layer on and zero messages allowed.

fp32: max abs error <= 1e-4 * max |ref|. fp16 storage: cosine >= 0.999 and
no inf / NaN. The pure parts (codegen text, gates) need no device.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import vknn.runtime.cpu  # noqa: F401  (registers the oracle kernels)
from vknn.kernels import epilogues, gate
from vknn.kernels.pointwise_codegen import generate, index_expr, unsupported
from vknn.kernels.reduce import collapse_reduction
from vknn.runtime.cpu.registry import kernel_for
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
    am = Step("vx.reduce", "r", [0], [1], [_spec((4,), "int64")], {"kind": "argmax"})
    assert "int64" in (gate(am, caps, [_spec((4, 5))]) or "")
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


# `device` and `clean` come from tests/unit/vulkan/conftest.py.


def _oracle(step: Step, inputs: list[np.ndarray]) -> list[np.ndarray]:
    fn = kernel_for(step.op)
    assert fn is not None
    return fn(step, list(inputs))


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


def _run_step(
    device,
    step: Step,
    inputs: list[np.ndarray],
    precision: str,
    const: tuple[int, ...] = (),
    caps: DeviceCaps | None = None,
) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """`step` (inputs on slots 0.., outputs on its out slots) on the device;
    inputs whose index is in `const` are uploaded as constants."""
    from vknn.runtime.vulkan.executor import VulkanExecutor

    feeds = {i: a for i, a in enumerate(inputs) if i not in const}
    consts = {i: a for i, a in enumerate(inputs) if i in const}
    specs = {i: _spec(a.shape, a.dtype.name, f"in{i}") for i, a in feeds.items()}
    with VulkanExecutor(
        device, [step], specs, step.outputs, consts, precision=precision, caps=caps
    ) as ex:
        out = ex.run(feeds)
    return [out[s] for s in step.outputs]


def _compare(device, step: Step, inputs: list[np.ndarray], precision: str, **kw) -> None:  # type: ignore[no-untyped-def]
    specs = [_spec(a.shape, a.dtype.name) for a in inputs]
    assert gate(step, device.caps, specs) is None, gate(step, device.caps, specs)
    got = _run_step(device, step, inputs, precision, **kw)
    want = _oracle(step, inputs)
    for g, w in zip(got, want, strict=True):
        _check(g, w, precision != "high")


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
def test_matmul(clean, precision: str, sa, sb) -> None:  # type: ignore[no-untyped-def]
    rng = RNG(0)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    out = np.matmul(a, b).shape
    step = Step("vx.matmul", "mm", [0, 1], [2], [_spec(out)])
    # A 2-D right operand is a weight in models: upload it as a constant.
    _compare(clean, step, [a, b], precision, const=(1,) if len(sb) == 2 else ())


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
def test_gemm(clean, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    m, n, k, ta, tb, alpha, beta, cshape = case
    rng = RNG(1)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    ins = [a, b] + ([rng.standard_normal(cshape).astype(np.float32)] if cshape is not None else [])
    attrs = {"trans_a": ta, "trans_b": tb, "alpha": alpha, "beta": beta}
    step = Step("vx.gemm", "g", list(range(len(ins))), [9], [_spec((m, n))], attrs)
    _compare(clean, step, ins, precision, const=tuple(range(1, len(ins))))


SOFTMAX_CASES = [((4, 128), 1), ((2, 3, 5), 1), ((2, 3, 5), 0), ((1, 4, 16, 16), 3), ((2, 3000), 1)]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("op", ["vx.softmax", "vx.log_softmax"])
@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES)
def test_softmax(clean, precision: str, op: str, shape, axis: int) -> None:  # type: ignore[no-untyped-def]
    x = (RNG(2).standard_normal(shape) * 4).astype(np.float32)
    step = Step(op, "sm", [0], [1], [_spec(shape)], {"axis": axis})
    _compare(clean, step, [x], precision)


def test_softmax_masked_rows(clean) -> None:  # type: ignore[no-untyped-def]
    x = RNG(3).standard_normal((3, 8)).astype(np.float32)
    x[0, 2:] = -np.inf  # attention masks
    x[1, :] = -1e30
    step = Step("vx.softmax", "sm", [0], [1], [_spec(x.shape)], {"axis": 1})
    (got,) = _run_step(clean, step, [x], "high")
    np.testing.assert_allclose(got, _oracle(step, [x])[0], rtol=1e-5, atol=1e-6)


LAYERNORM_CASES = [
    ((2, 3, 256), 2, (256,), True),
    ((4, 6, 5), 1, (6, 5), True),
    ((3, 40), 1, (40,), False),
    ((2, 7), 1, (1,), True),
    ((2, 3000), 1, (3000,), True),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", LAYERNORM_CASES)
def test_layernorm(clean, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    shape, axis, pshape, bias = case
    rng = RNG(4)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    ins = [x, rng.uniform(0.5, 1.5, pshape).astype(np.float32)]
    if bias:
        ins.append(rng.standard_normal(pshape).astype(np.float32))
    attrs = {"axis": axis, "epsilon": 1e-5}
    step = Step("vx.layernorm", "ln", list(range(len(ins))), [5], [_spec(shape)], attrs)
    _compare(clean, step, ins, precision, const=tuple(range(1, len(ins))))


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


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("case", REDUCE_CASES)
def test_reduce(clean, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    kind, shape, axes, keepdims = case
    x = RNG(5).standard_normal(shape).astype(np.float32)
    if kind in ("log_sum", "prod"):
        x = (np.abs(x) * 0.5 + 0.75).astype(np.float32)
    out = np.sum(x, axis=axes, keepdims=keepdims).shape
    attrs = {"kind": kind, "axes": axes, "keepdims": keepdims}
    step = Step("vx.reduce", "r", [0], [1], [_spec(out)], attrs)
    _compare(clean, step, [x], precision)


@pytest.mark.parametrize(
    "step",
    [
        Step("vx.softmax", "sm", [0], [1], [_spec((6, 300))], {"axis": 1}),
        Step("vx.log_softmax", "lsm", [0], [1], [_spec((6, 300))], {"axis": 0}),
        Step("vx.layernorm", "ln", [0, 1], [2], [_spec((6, 300))], {"axis": 1, "epsilon": 1e-5}),
        Step(
            "vx.reduce",
            "r",
            [0],
            [1],
            [_spec((6,))],
            {"kind": "max", "axes": (1,), "keepdims": False},
        ),
    ],
    ids=lambda s: s.node,
)
def test_row_kernels_without_subgroups(clean, step: Step) -> None:  # type: ignore[no-untyped-def]
    """The shared-memory tree path (devices without subgroup arithmetic)."""
    rng = RNG(8)
    ins = [rng.standard_normal((6, 300)).astype(np.float32)]
    if step.op == "vx.layernorm":
        ins.append(rng.uniform(0.5, 1.5, (300,)).astype(np.float32))
    caps = clean.caps.with_(subgroup_size=1)
    got = _run_step(clean, step, ins, "high", caps=caps)[0]
    _check(got, _oracle(step, ins)[0], False)


def _fused(region: list[Step], shapes: list[tuple[int, ...]], n_out: int = 1) -> Step:
    out = np.broadcast_shapes(*shapes)
    specs = [_spec(out, name=f"y{j}") for j in range(n_out)]
    return Step(
        "vx.fused_pointwise",
        "fp",
        list(range(len(shapes))),
        list(range(10, 10 + n_out)),
        specs,
        {},
        region,
    )


FUSED_CASES = [
    ("gelu_bias", gelu_bias_body(), [(2, 16, 64), (64,)], 1),
    # relu(x) via cmpf + select, and max(x, y) with NaN-ignoring maxnumf, two results
    (
        "two_results",
        [
            _op("arith.constant", [], 2, value=0.0),
            _op("arith.cmpf", [0, 2], 3, "bool", predicate=4),  # olt
            _op("arith.select", [3, 2, 0], 4),
            _op("arith.maxnumf", [4, 1], 5),
            _yield(4, 5),
        ],
        [(3, 1, 5), (1, 4, 5)],
        2,
    ),
    # (x - mean)^2 / sqrt(v + eps) with a constant exponent, a scalar input
    (
        "pow_sqrt",
        [
            _op("arith.constant", [], 3, value=2.0),
            _op("arith.constant", [], 4, value=1e-5),
            _op("arith.subf", [0, 1], 5),
            _op("math.powf", [5, 3], 6),
            _op("arith.addf", [2, 4], 7),
            _op("math.sqrt", [7], 8),
            _op("arith.divf", [6, 8], 9),
            _yield(9),
        ],
        [(4, 8), (4, 1), ()],
        1,
    ),
    # integers: trunc through i32, then an integer floor-div by 3 back to float
    (
        "integers",
        [
            _op("arith.fptosi", [0], 1, "int32"),
            _op("arith.constant", [], 2, "int32", value=3),
            _op("arith.floordivsi", [1, 2], 3, "int32"),
            _op("arith.sitofp", [3], 4),
            _op("math.tanh", [0], 5),
            _op("arith.addf", [4, 5], 6),
            _yield(6),
        ],
        [(50,)],
        1,
    ),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("name", "region", "shapes", "n_out"), FUSED_CASES)
def test_fused_pointwise(clean, precision: str, name, region, shapes, n_out) -> None:  # type: ignore[no-untyped-def]
    rng = RNG(6)
    ins = [(rng.standard_normal(s) * 4).astype(np.float32) for s in shapes]
    if name == "pow_sqrt":
        ins[2] = np.abs(ins[2]).astype(np.float32)
    _compare(clean, _fused(region, shapes, n_out), ins, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("op", ["vx.matmul", "vx.gemm"])
def test_matmul_epilogue(clean, precision: str, op: str) -> None:  # type: ignore[no-untyped-def]
    """A product merged with its GELU + bias epilogue (attach_epilogues) matches
    the two steps run on the CPU, in one dispatch."""
    rng = RNG(7)
    a = rng.standard_normal((1, 32, 48) if op == "vx.matmul" else (32, 48)).astype(np.float32)
    w = (rng.standard_normal((48, 40)) * 0.2).astype(np.float32)
    bias = rng.standard_normal((40,)).astype(np.float32)
    out = (*a.shape[:-1], 40)
    attrs = (
        {} if op == "vx.matmul" else {"trans_a": False, "trans_b": False, "alpha": 1.0, "beta": 0.0}
    )
    prod = Step(op, "p", [0, 1], [3], [_spec(out)], attrs, backend="vulkan")
    epi = Step(
        "vx.fused_pointwise",
        "e",
        [3, 2],
        [4],
        [_spec(out)],
        {"vx.epilogue": True},
        gelu_bias_body(),
        backend="vulkan",
    )
    specs = {0: _spec(a.shape), 1: _spec(w.shape), 2: _spec(bias.shape)}
    steps = epilogues.attach_epilogues([prod, epi], specs, clean.caps)
    assert len(steps) == 1 and epilogues.epilogue_of(steps[0]) is not None
    merged = steps[0]
    got = _run_step(clean, merged, [a, w, bias], precision, const=(1, 2))[0]
    mid = _oracle(prod, [a, w])[0]
    want = _oracle(epi, [mid, bias])[0]
    _check(got, want, precision != "high")


# ---------------------------------------------------------------------------
# The BERT-style encoder through vknn.Session
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_bert_encoder_vulkan_vs_cpu(device) -> None:  # type: ignore[no-untyped-def]
    import vknn
    from tests.unit.models import cosine_and_error, model_inputs, torch_model

    model = torch_model("bert_encoder")
    dims = {"batch": 1, "seq": 128}
    feeds = model_inputs(model, dims)
    cpu = vknn.Session(model, vknn.Config(dims=dims, backends=("cpu",)))
    vk = vknn.Session(model, vknn.Config(dims=dims))
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
    for node, why in fallbacks.items():
        print(f"  cpu: {node}: {why}")
    vk.close()
    cpu.close()
