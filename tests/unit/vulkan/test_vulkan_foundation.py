"""The Vulkan foundation on a real driver (lavapipe on machines without a GPU),
with the Khronos validation layer (synchronization validation included) on
and zero messages allowed: device caps and targets, the arena planner,
shader compilation (every shader x variant passes spirv-val), the
elementwise kernels vs numpy in fp32 (tight) and fp16 storage (1e-3
relative), and the runtime's replay mechanics (split dispatches, staging
copies, descriptor sets instead of push descriptors) driven by targets."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.vulkan.harness import graph, node, run_for_target, vk_session
from vknn.errors import Unsupported
from vknn.kernels import gate
from vknn.kernels.elementwise import (
    BINARY_REFUSED,
    UNARY_REFUSED,
    binary_kinds,
    collapse_broadcast,
    unary_kinds,
)
from vknn.kernels.memory_plan import plan_arena
from vknn.kernels.shaders import VARIANTS, compile_shader, shader_names, validate
from vknn.kernels.targets import PRESETS
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target, from_caps, unmet

# ---------------------------------------------------------------------------
# Pure parts: no device needed
# ---------------------------------------------------------------------------


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_plan_arena_reuses_dead_memory() -> None:
    # A chain t0 -> t1 -> t2 -> t3: t2 may reuse t0's block, t3 t1's.
    tensors = [(i, 1000, i, i + 1) for i in range(4)]
    offsets, size = plan_arena(tensors, 16)
    assert size == 2 * 1008
    assert offsets[2] == offsets[0] and offsets[3] == offsets[1]


def test_plan_arena_random_live_ranges_never_collide() -> None:
    rng = np.random.default_rng(0)
    for trial in range(50):
        n = int(rng.integers(1, 40))
        tensors = []
        for i in range(n):
            first = int(rng.integers(0, 30))
            tensors.append((i, int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 6))))
        offsets, size = plan_arena(tensors, 64)
        spans = {t[0]: (offsets[t[0]], offsets[t[0]] + t[1]) for t in tensors}
        for tid, _, f, last in tensors:
            assert offsets[tid] % 64 == 0
            assert spans[tid][1] <= size
            for oid, _, of, olast in tensors:
                if oid != tid and f <= olast and of <= last:  # live ranges overlap
                    assert not _overlap(spans[tid], spans[oid]), (trial, tid, oid)
        assert size <= sum(-(-t[1] // 64) * 64 for t in tensors)


def test_plan_arena_coalesces_free_neighbours() -> None:
    # Two small neighbours die; one big tensor then fits in their merged block.
    tensors = [("a", 64, 0, 0), ("b", 64, 0, 0), ("keep", 64, 0, 5), ("big", 128, 1, 2)]
    offsets, size = plan_arena(tensors, 64)
    assert size == 192
    assert offsets["big"] in (offsets["a"], offsets["b"]) and offsets["big"] + 128 <= 192


def test_collapse_broadcast() -> None:
    assert collapse_broadcast((2, 3, 4), (2, 3, 4), (2, 3, 4)) == ([], [], [])
    assert collapse_broadcast((2, 3, 4), (2, 3, 4), ()) == ([24], [1], [0])
    assert collapse_broadcast((2, 3, 4), (2, 3, 4), (3, 1)) == ([2, 3, 4], [12, 4, 1], [0, 1, 0])
    assert collapse_broadcast((4, 1, 5), (4, 1, 5), (4, 1, 5)) == ([], [], [])
    assert collapse_broadcast((2, 3, 4, 5), (2, 3, 4, 5), (4, 5)) == ([6, 20], [20, 1], [0, 1])


def _step(
    op: str, kind: str, shape: tuple[int, ...], dtype: str = "float32", **attrs: object
) -> Step:
    return Step(
        op,
        f"n_{kind}",
        [0, 1] if op == "vx.binary" else [0],
        [2],
        [TensorSpec("y", shape, dtype)],
        {"kind": kind, **attrs},
    )


def test_gates_are_pure_and_say_why() -> None:
    caps = PRESETS["lavapipe"]
    assert gate(_step("vx.binary", "add", (2, 3)), caps) is None
    assert gate(_step("vx.unary", "relu", (2, 3)), caps) is None
    why = gate(_step("vx.binary", "add", (2, 3), "float64"), caps)
    assert why is not None and why.startswith("Add: float64")
    why = gate(_step("vx.unary", "sin", (4,)), caps)
    assert why is not None and why.startswith("Sin: ")
    # Integer/bool tensors and comparisons: the integer kernel (cast_select.py).
    assert gate(_step("vx.binary", "equal", (4,), "bool"), caps) is None
    assert gate(_step("vx.binary", "add", (2, 3), "int64"), caps) is None
    why = gate(Step("onnx.Loop", "l", [0], [1], [TensorSpec("y", (1,), "float32")]), caps)
    assert why is not None and why.endswith("no Vulkan kernel for onnx.Loop yet")
    small = caps.with_(max_storage_buffer_range=1024)
    assert "maxStorageBufferRange" in (gate(_step("vx.unary", "relu", (512,)), small) or "")
    eight = (2,) * 8
    assert "rank 8" in (gate(_step("vx.binary", "add", eight), caps) or "")
    # With input specs the collapsed rank decides: an 8-d add of equal shapes is flat.
    spec = TensorSpec("x", eight, "float32")
    assert gate(_step("vx.binary", "add", eight), caps, [spec, spec]) is None


def test_targets_round_trip_and_say_what_a_device_lacks() -> None:
    for t in PRESETS.values():
        assert Target.from_dict(t.to_dict()) == t
    lavapipe = from_caps(_caps_like_lavapipe())
    assert unmet(PRESETS["generic"], _caps_like_lavapipe()) is None
    why = unmet(PRESETS["nvidia"], _caps_like_lavapipe())
    assert why is not None and "the device has" in why
    with pytest.raises(ValueError, match="unknown target field"):
        Target.from_dict({**lavapipe.to_dict(), "bogus": 1})
    with pytest.raises(ValueError, match="must be a bool"):
        Target.from_dict({**lavapipe.to_dict(), "has_fp16_storage": 3})


def _caps_like_lavapipe():  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.caps import DeviceCaps

    return DeviceCaps.lavapipe_like()


# ---------------------------------------------------------------------------
# Shaders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", shader_names())
def test_every_shader_variant_passes_spirv_val(name: str, variant: str) -> None:
    spirv = compile_shader(name, variant)
    assert spirv[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic, little-endian
    validate(spirv, f"{name} ({variant})")


# ---------------------------------------------------------------------------
# On the device, validation layer on (`session_device`: the shared device)
# ---------------------------------------------------------------------------


def test_caps_from_device(session_device) -> None:  # type: ignore[no-untyped-def]
    caps = session_device.caps
    assert caps.max_compute_work_group_count[0] >= 65535
    assert caps.max_push_constants_size >= 128
    assert len(caps.pipeline_cache_uuid) == 16
    if "llvmpipe" in caps.name:
        assert caps.has_device_local_host_visible and caps.has_push_descriptor
        assert caps.has_fp16_storage and caps.device_type == "cpu"
    assert unmet(from_caps(caps), caps) is None


BINARY_SHAPES = [
    ((7,), (7,)),
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4), ()),
    ((2, 3, 4), (3, 1)),
    ((1, 3, 1), (2, 1, 5)),
    ((2, 1, 4, 1, 3, 2), (1, 5, 1, 2, 1, 2)),
    ((4, 1), (1, 300)),
    ((1000,), (1,)),
]


def _inputs(
    kind: str, sa: tuple[int, ...], sb: tuple[int, ...], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(sa).astype(np.float32) * 3
    b = rng.standard_normal(sb).astype(np.float32) * 3
    if kind in ("div", "mod", "fmod"):
        b = np.where(np.abs(b) < 0.25, 1.5, b).astype(np.float32)
    if kind == "pow":
        a = np.abs(a) + 0.1
        b = np.clip(b, -3, 3)
    return np.asarray(a), np.asarray(b)


def _ref_binary(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fns = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "div": np.divide,
        "pow": np.power,
        "max": np.maximum,
        "min": np.minimum,
        "mod": np.remainder,
        "fmod": np.fmod,
        "prelu": lambda x, y: np.where(x < 0, x * y, x),
    }
    return fns[kind](a64, b64)


def _check(got: np.ndarray, want: np.ndarray, fp16: bool, loose: bool = False) -> None:
    if fp16:
        # Storage rounding of the inputs and the result: 2^-11 each, plus fp32
        # math; fp16 stores saturate finite overflow to +-65504, inf stays inf.
        want = np.where(np.isinf(want), want, np.clip(want, -65504.0, 65504.0))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3, atol=1e-3)
    else:
        rtol = 2e-6 if loose else 1e-6
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=1e-6)


def _binary(  # type: ignore[no-untyped-def]
    kind: str, sa: tuple[int, ...], sb: tuple[int, ...], dtype: str = "float32"
):
    op = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "max": "Max",
          "min": "Min", "mod": "Mod", "fmod": "Mod", "prelu": "PRelu"}[kind]  # fmt: skip
    attrs = {"fmod": 1} if kind == "fmod" else {}
    return graph(
        [node(op, ["a", "b"], ["c"], **attrs)], {"a": (sa, dtype), "b": (sb, dtype)}, ["c"]
    )


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("sa,sb", BINARY_SHAPES)
def test_binary_add_broadcasts(session_device, precision: str, sa, sb) -> None:  # type: ignore[no-untyped-def]
    a, b = _inputs("add", sa, sb, 1)
    sess = vk_session(_binary("add", sa, sb), precision=precision)
    out = sess.run({"a": a, "b": b})["c"]
    if precision == "low":  # the oracle sees the same fp16-rounded inputs
        a, b = a.astype(np.float16), b.astype(np.float16)
    _check(out, _ref_binary("add", a, b), precision == "low")


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("kind", sorted(set(binary_kinds()) - set(BINARY_REFUSED) - {"prelu"}))
def test_binary_kinds(session_device, kind: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    sa, sb = (3, 4, 5), (4, 1)
    a, b = _inputs(kind, sa, sb, 2)
    sess = vk_session(_binary(kind, sa, sb), precision=precision)
    out = sess.run({"a": a, "b": b})["c"]
    if precision == "low":
        a, b = a.astype(np.float16), b.astype(np.float16)
    _check(out, _ref_binary(kind, a, b), precision == "low", loose=kind == "pow")


UNARY_PARAMS = {
    "leaky_relu": (0.1,),
    "elu": (1.3,),
    "celu": (0.7,),
    "selu": (1.67, 1.05),
    "thresholded_relu": (0.5,),
    "hard_sigmoid": (0.2, 0.5),
    "clip": (-1.0, 2.0),
}


def _ref_unary(kind: str, x: np.ndarray, params: tuple[float, ...]) -> np.ndarray:
    from math import erf

    x = x.astype(np.float64)
    verf = np.vectorize(erf)
    sig = 1 / (1 + np.exp(-x))
    sp = np.logaddexp(0, x)
    p = [float(np.float32(v)) for v in params]
    fns = {
        "identity": lambda: x,
        "relu": lambda: np.maximum(x, 0),
        "sigmoid": lambda: sig,
        "tanh": lambda: np.tanh(x),
        "exp": lambda: np.exp(x),
        "log": lambda: np.log(x),
        "sqrt": lambda: np.sqrt(x),
        "reciprocal": lambda: 1 / x,
        "abs": lambda: np.abs(x),
        "neg": lambda: -x,
        "floor": lambda: np.floor(x),
        "ceil": lambda: np.ceil(x),
        "round": lambda: np.rint(x),
        "sign": lambda: np.sign(x),
        "erf": lambda: verf(x),
        "gelu": lambda: 0.5 * x * (1 + verf(x / np.sqrt(2))),
        "gelu_tanh": lambda: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
        "silu": lambda: x * sig,
        "mish": lambda: x * np.tanh(sp),
        "softplus": lambda: sp,
        "softsign": lambda: x / (1 + np.abs(x)),
        "leaky_relu": lambda: np.where(x < 0, p[0] * x, x),
        "elu": lambda: np.where(x < 0, p[0] * np.expm1(x), x),
        "celu": lambda: np.maximum(x, 0) + np.minimum(0, p[0] * np.expm1(x / p[0])),
        "selu": lambda: p[1] * np.where(x > 0, x, p[0] * np.expm1(x)),
        "thresholded_relu": lambda: np.where(x > p[0], x, 0),
        "hard_sigmoid": lambda: np.clip(p[0] * x + p[1], 0, 1),
        "hard_swish": lambda: x * np.clip(x / 6 + 0.5, 0, 1),
        "clip": lambda: np.minimum(np.maximum(x, p[0]), p[1]),
    }
    with np.errstate(divide="ignore"):
        return fns[kind]()


UNARY_ONNX = {
    "identity": ("Identity", {}), "relu": ("Relu", {}), "sigmoid": ("Sigmoid", {}),
    "tanh": ("Tanh", {}), "exp": ("Exp", {}), "log": ("Log", {}), "sqrt": ("Sqrt", {}),
    "reciprocal": ("Reciprocal", {}), "abs": ("Abs", {}), "neg": ("Neg", {}),
    "floor": ("Floor", {}), "ceil": ("Ceil", {}), "round": ("Round", {}), "sign": ("Sign", {}),
    "erf": ("Erf", {}), "gelu": ("Gelu", {}), "gelu_tanh": ("Gelu", {"approximate": "tanh"}),
    "mish": ("Mish", {}), "softplus": ("Softplus", {}), "softsign": ("Softsign", {}),
    "leaky_relu": ("LeakyRelu", {"alpha": 0.1}), "elu": ("Elu", {"alpha": 1.3}),
    "celu": ("Celu", {"alpha": 0.7}), "selu": ("Selu", {"alpha": 1.67, "gamma": 1.05}),
    "thresholded_relu": ("ThresholdedRelu", {"alpha": 0.5}),
    "hard_sigmoid": ("HardSigmoid", {"alpha": 0.2, "beta": 0.5}),
    "hard_swish": ("HardSwish", {}),
}  # fmt: skip


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("kind", sorted(set(unary_kinds()) & set(UNARY_ONNX)))
def test_unary_kinds(session_device, kind: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1031) * 4).astype(np.float32)
    x[:8] = [0.0, -0.0, 1e-3, -1e-3, 1e-6, 20.0, -20.0, 0.5]
    if kind in ("log", "sqrt"):
        x = np.abs(x) + 1e-3
    if kind == "round":
        x[8:12] = [0.5, 1.5, 2.5, -0.5]
    op, attrs = UNARY_ONNX[kind]
    model = graph([node(op, ["x"], ["y"], **attrs)], {"x": (x.shape, "float32")}, ["y"], opset=20)
    out = vk_session(model, precision=precision).run({"x": x})["y"]
    if precision == "low":
        x = x.astype(np.float16)
    _check(out, _ref_unary(kind, x, UNARY_PARAMS.get(kind, ())), precision == "low", loose=True)


def test_unary_kinds_all_have_onnx_cases() -> None:
    """Every unary kind with a shader is exercised above (or refused on purpose)."""
    missing = set(unary_kinds()) - set(UNARY_ONNX) - set(UNARY_REFUSED) - {"silu", "clip"}
    assert not missing, missing


def test_fp16_store_rounds_to_nearest_even_and_saturates(session_device) -> None:  # type: ignore[no-untyped-def]
    """fp16-exact operands whose fp32 sum/product falls between fp16 neighbours:
    ties go to even (normal and subnormal), overflow saturates, NaN stays."""
    t = 2.0**-24  # the smallest fp16 subnormal
    cases = {
        "add": [
            (1, 2.0**-11), (1, 3 * 2.0**-11), (1, 2.0**-12), (2048, 1), (2048, 3), (2048, 1.5),
            (6e4, 7e3), (-6e4, -7e3), (65504, 65504), (1, np.nan),
        ],
        "mul": [(3 * t, 0.5), (t, 0.5), (5 * t, 0.5), (7 * t, 0.25), (1000, 1000)],
    }  # fmt: skip
    for kind, pairs in cases.items():
        a = np.array([p[0] for p in pairs], np.float16)
        b = np.array([p[1] for p in pairs], np.float16)
        sess = vk_session(_binary(kind, a.shape, b.shape, "float16"), precision="low")
        got = sess.run({"a": a, "b": b})["c"]
        exact = _ref_binary(kind, a, b)  # f64: exact for these operands
        want = np.clip(exact, -65504, 65504).astype(np.float16)  # numpy rounds ties to even
        assert got.dtype == np.float16
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), (kind, got, want)
        assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16)), (kind, got)
        assert not np.isinf(got).any()


def _chain(shape: tuple[int, ...]):  # type: ignore[no-untyped-def]
    nodes, name = [], "x"
    for i in range(12):
        out = f"t{i}"
        if i % 2:
            nodes.append(node("Mul", [name, "w"], [out]))
        else:
            nodes.append(node(["Relu", "Tanh", "Sigmoid"][i % 3], [name], [out]))
        name = out
    w = np.linspace(-1, 1, shape[-1], dtype=np.float32)
    return graph(nodes, {"x": (shape, "float32")}, [name], {"w": w}), w


def test_chain_reuses_arena_and_replays(session_device) -> None:  # type: ignore[no-untyped-def]
    """A 12-op chain: the planned arena is smaller than its tensors, barriers
    (synchronization validation checks them) keep reuse safe, and the
    recorded command buffer replays with new inputs."""
    shape = (4, 8, 16)
    model, w = _chain(shape)
    sess = vk_session(model, profiling=True, pipeline="lower")  # no fusion: 12 dispatches
    seg = sess.program.buckets[0].segments[0]
    device = [size for memory, size in seg.arenas if memory == "device"][0]
    assert device < 13 * 4 * int(np.prod(shape))
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        ref = x.astype(np.float64)
        for i in range(12):
            ref = ref * w if i % 2 else _ref_unary(["relu", "tanh", "sigmoid"][i % 3], ref, ())
        _check(sess.run({"x": x})["t11"], ref, False, loose=True)
    prof = sess.profile(runs=2)
    assert len(prof) == 12 and all(r.ms >= 0 for r in prof)


@pytest.mark.parametrize("memory", ["unified", "staging"])
@pytest.mark.parametrize("push", [True, False])
def test_split_dispatch_staging_and_descriptor_sets(
    session_device, memory: str, push: bool, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A target with maxComputeWorkGroupCount 3 splits a 5000-element op into
    several dispatches with base offsets; a staging target records copies
    through host-visible buffers; descriptor sets instead of push
    descriptors: the same numbers each way."""
    from vknn.runtime.vulkan import pipeline

    if not push:
        real = pipeline.Pipelines.__init__

        def no_push(self, device, cache=None, push_descriptors=None):  # type: ignore[no-untyped-def]
            real(self, device, cache, False)

        monkeypatch.setattr(pipeline.Pipelines, "__init__", no_push)
    x = np.random.default_rng(5).standard_normal((5000,)).astype(np.float32)
    nodes = [node("Sigmoid", ["x"], ["s"]), node("Mul", ["x", "s"], ["m"])]
    nodes.append(node("Add", ["m", "h"], ["z"]))
    half = {"h": np.array([0.5], np.float32)}
    model = graph(nodes, {"x": (x.shape, "float32")}, ["z"], half)
    target = from_caps(session_device.caps).with_(
        max_compute_work_group_count=(3, 65535, 65535), memory=memory
    )
    out, program = run_for_target(model, target, {"x": x})
    seg = program.buckets[0].segments[0]
    assert seg.dispatches == 7  # ceil(ceil(5000 / 256) / 3): one fused op, split
    assert any(m == "staging" for m, _ in seg.arenas) == (memory == "staging")
    want = _ref_unary("silu", x, ()) + 0.5
    _check(out["z"], want, False, loose=True)


def test_refusals_name_the_node(session_device) -> None:  # type: ignore[no-untyped-def]
    model = graph(
        [
            node(
                "Sin",
                ["x"],
                ["y"],
            )
        ],
        {"x": ((4,), "float32")},
        ["y"],
    )
    with pytest.raises(Unsupported, match="Sin"):
        vk_session(model)
