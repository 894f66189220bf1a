"""Vulkan conv / pool / lrn / batchnorm kernels and producer epilogues vs the
CPU oracle, on lavapipe (or any Vulkan device) with the Khronos validation
layer on and zero messages allowed; plus whole light models through
`vknn.Session` on Vulkan vs the CPU backend (slow).

Bounds: fp32 max abs error <= 1e-4 * max|ref|; fp16 storage: cosine >= 0.999
and no inf/NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vknn.kernels import gate
from vknn.kernels.epilogues import EPILOGUE_ATTR, attach_epilogues
from vknn.runtime.cpu.executor import run_step
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.caps import DeviceCaps

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _out_conv(x: tuple[int, ...], w: tuple[int, ...], s, p, d) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    n = len(x) - 2
    return (
        x[0],
        w[0],
        *(((x[2 + i] + p[i] + p[n + i] - d[i] * (w[2 + i] - 1) - 1) // s[i] + 1) for i in range(n)),
    )


def conv_step(
    x: tuple[int, ...], w: tuple[int, ...], *, stride=1, pad=0, dil=1, group=1, bias=True,
    dtype="float32",
) -> tuple[Step, dict[int, np.ndarray]]:  # fmt: skip  # type: ignore[no-untyped-def]
    n = len(x) - 2
    s = (stride,) * n if isinstance(stride, int) else tuple(stride)
    p = (pad,) * (2 * n) if isinstance(pad, int) else tuple(pad)
    d = (dil,) * n if isinstance(dil, int) else tuple(dil)
    y = _out_conv(x, w, s, p, d)
    step = Step(
        "vx.conv", "conv", [0, 1, 2 if bias else NO_VALUE], [3], [TensorSpec("y", y, dtype)],
        {"strides": s, "pads": p, "dilations": d, "group": group},
    )  # fmt: skip
    rng = np.random.default_rng(sum(x) + sum(w) + group)
    fan = int(np.prod(w[1:]))
    arrays = {
        0: rng.standard_normal(x).astype(dtype),
        1: (rng.standard_normal(w) / np.sqrt(fan)).astype(dtype),
    }
    if bias:
        arrays[2] = rng.standard_normal(w[0]).astype(dtype) * 0.1
    return step, arrays


def cpu_ref(steps: list[Step], arrays: dict[int, np.ndarray], out: int) -> np.ndarray:
    values: list[Any] = [None] * 64
    for k, v in arrays.items():
        values[k] = v
    for s in steps:
        run_step(s, values)
    return np.asarray(values[out])


def run_vk(
    device, steps: list[Step], arrays: dict[int, np.ndarray], inputs: list[int], out: int,
    precision: str = "high",
) -> np.ndarray:  # fmt: skip  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.executor import VulkanExecutor

    feeds = {s: arrays[s] for s in inputs}
    consts = {s: a for s, a in arrays.items() if s not in feeds}
    specs = {s: TensorSpec(f"in{s}", a.shape, a.dtype.name) for s, a in feeds.items()}
    for st in steps:
        in_specs = [
            TensorSpec("", arrays[i].shape, arrays[i].dtype.name) if i in arrays else None
            for i in st.inputs if i != NO_VALUE
        ]  # fmt: skip
        if all(s is not None for s in in_specs):
            assert gate(st, device.caps, in_specs) is None  # type: ignore[arg-type]
    with VulkanExecutor(device, steps, specs, [out], consts, precision=precision) as ex:
        return ex.run(feeds)[out]


def check(got: np.ndarray, want: np.ndarray, fp16: bool) -> None:
    assert got.shape == want.shape
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    if fp16:
        assert np.isfinite(got64).all()
        cos = float(np.dot(got64.ravel(), want64.ravel())) / (
            np.linalg.norm(got64) * np.linalg.norm(want64) + 1e-30
        )
        assert cos >= 0.999, cos
    else:
        err = float(np.max(np.abs(got64 - want64)))
        assert err <= 1e-4 * max(float(np.max(np.abs(want64))), 1e-30), err


PRECISIONS = ["high", "low"]


# `device` and `clean` come from tests/unit/vulkan/conftest.py.


# ---------------------------------------------------------------------------
# Gates (pure)
# ---------------------------------------------------------------------------


def test_gates_refuse_with_reasons() -> None:
    caps = DeviceCaps.lavapipe_like()
    step, arrays = conv_step((1, 4, 5, 5, 5), (8, 4, 3, 3, 3))
    specs = [TensorSpec("", a.shape, a.dtype.name) for a in arrays.values()]
    assert gate(step, caps, specs) == "Conv: 3-D convolutions are not supported on Vulkan yet"
    step, arrays = conv_step((1, 4, 9, 9), (8, 4, 3, 3))
    specs = [TensorSpec("", a.shape, a.dtype.name) for a in arrays.values()]
    assert gate(step, caps, specs) is None
    specs[0] = TensorSpec("", specs[0].shape, "int32")
    why = gate(step, caps, specs)
    assert why is not None and why.startswith("Conv: ")
    pool = Step(
        "vx.pool", "p", [0], [1], [TensorSpec("y", (1, 2, 2, 2, 2), "float32")],
        {"kind": "max", "kernel": (2, 2, 2), "strides": (1, 1, 1), "pads": (0,) * 6,
         "dilations": (1, 1, 1), "ceil_mode": False, "count_include_pad": False},
    )  # fmt: skip
    assert "3-D pools" in (gate(pool, caps) or "")


# ---------------------------------------------------------------------------
# Conv
# ---------------------------------------------------------------------------

CONV_CASES = [
    # (x, w, kwargs) — 1x1 (GEMM fast path), k x k, strided, dilated, padded,
    # asymmetric pads, grouped, depthwise, channel multiplier, 1-D, tails.
    ((1, 16, 7, 9), (24, 16, 1, 1), {}),
    ((2, 8, 11, 10), (20, 8, 3, 3), {"pad": 1}),
    ((1, 3, 17, 17), (16, 3, 7, 7), {"stride": 2, "pad": 3}),
    ((1, 12, 13, 12), (16, 12, 3, 3), {"dil": 2, "pad": (2, 1, 2, 3)}),
    ((1, 16, 9, 9), (32, 16, 1, 1), {"stride": 2, "bias": False}),
    ((1, 12, 8, 8), (24, 4, 3, 3), {"group": 3, "pad": 1}),
    ((1, 8, 10, 10), (8, 1, 3, 3), {"group": 8, "pad": 1}),
    ((1, 8, 10, 10), (16, 1, 5, 5), {"group": 8, "stride": 2, "pad": 2}),
    ((1, 16, 6, 6), (32, 4, 3, 3), {"group": 4, "stride": (1, 2)}),
    ((2, 6, 20), (10, 6, 3), {"pad": 1, "stride": 2}),
    ((1, 70, 19, 19), (130, 70, 3, 3), {"pad": 1}),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,w,kw", CONV_CASES)
def test_conv(clean, x, w, kw, precision: str) -> None:  # type: ignore[no-untyped-def]
    step, arrays = conv_step(x, w, **kw)
    want = cpu_ref([step], arrays, 3)
    got = run_vk(clean, [step], arrays, [0], 3, precision)
    check(got, want, precision != "high")


def test_conv_1x1_uses_the_gemm_and_dw_the_direct_kernel(clean) -> None:  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.executor import VulkanExecutor

    for w, group, shader in (((32, 16, 1, 1), 1, "conv"), ((16, 1, 3, 3), 16, "conv_direct")):
        step, arrays = conv_step((1, 16, 8, 8), w, group=group, pad=(w[2] // 2))
        specs = {0: TensorSpec("x", arrays[0].shape, "float32")}
        consts = {k: v for k, v in arrays.items() if k}
        with VulkanExecutor(clean, [step], specs, [3], consts) as ex:
            names = {p.key.shader for p in ex.pipelines.all()}
            assert shader in names


# ---------------------------------------------------------------------------
# ConvTranspose, BatchNorm, LRN
# ---------------------------------------------------------------------------

CONVT_CASES = [
    # (x, w [C, M/g, k...], strides, pads, output_padding, dilations, group)
    ((1, 8, 5, 5), (8, 6, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 4, 7), (6, 2, 4, 3), (2, 1), (0, 1, 2, 0), (0, 0), (1, 2), 3),
    ((2, 4, 9), (4, 5, 3), (3,), (1, 0), (2,), (1,), 1),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,w,s,p,op,d,g", CONVT_CASES)
def test_conv_transpose(clean, x, w, s, p, op, d, g, precision: str) -> None:  # type: ignore[no-untyped-def]
    n = len(x) - 2
    out = (
        x[0],
        w[1] * g,
        *(
            s[i] * (x[2 + i] - 1) + op[i] + d[i] * (w[2 + i] - 1) + 1 - p[i] - p[n + i]
            for i in range(n)
        ),
    )
    step = Step(
        "vx.conv_transpose", "ct", [0, 1, 2], [3], [TensorSpec("y", out, "float32")],
        {"strides": s, "pads": p, "dilations": d, "output_padding": op, "group": g},
    )  # fmt: skip
    rng = np.random.default_rng(5)
    arrays = {
        0: rng.standard_normal(x).astype(np.float32),
        1: rng.standard_normal(w).astype(np.float32) * 0.3,
        2: rng.standard_normal(w[1] * g).astype(np.float32),
    }
    check(
        run_vk(clean, [step], arrays, [0], 3, precision),
        cpu_ref([step], arrays, 3),
        precision != "high",
    )


@pytest.mark.parametrize("precision", PRECISIONS)
def test_batchnorm(clean, precision: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    c = 6
    arrays = {
        0: rng.standard_normal((2, c, 5, 3)).astype(np.float32),
        1: rng.uniform(0.5, 1.5, c).astype(np.float32),
        2: rng.standard_normal(c).astype(np.float32),
        3: rng.standard_normal(c).astype(np.float32),
        4: rng.uniform(0.5, 1.5, c).astype(np.float32),
    }
    y = TensorSpec("y", (2, c, 5, 3), "float32")
    step = Step("vx.batchnorm", "bn", [0, 1, 2, 3, 4], [5], [y], {"epsilon": 1e-5})
    check(
        run_vk(clean, [step], arrays, [0], 5, precision),
        cpu_ref([step], arrays, 5),
        precision != "high",
    )


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape,size", [((1, 10, 4, 5), 5), ((2, 7, 6), 4), ((1, 3, 2, 2), 1)])
def test_lrn(clean, shape, size: int, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    step = Step("vx.lrn", "lrn", [0], [1], [TensorSpec("y", shape, "float32")],
                {"size": size, "alpha": 1e-2, "beta": 0.75, "bias": 1.5})  # fmt: skip
    check(
        run_vk(clean, [step], {0: x}, [0], 1, precision),
        cpu_ref([step], {0: x}, 1),
        precision != "high",
    )


# ---------------------------------------------------------------------------
# Pool
# ---------------------------------------------------------------------------


def pool_step(x: tuple[int, ...], kind: str, k, s, p, d=None, ceil=False, cip=False, lp=None):  # type: ignore[no-untyped-def]
    n = len(k)
    d = d or (1,) * n
    out = []
    for i in range(n):
        span = d[i] * (k[i] - 1) + 1
        size = x[2 + i] + p[i] + p[n + i] - span
        o = (-(-size // s[i]) if ceil else size // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x[2 + i] + p[i]:
            o -= 1
        out.append(o)
    attrs = {"kind": kind, "kernel": tuple(k), "strides": tuple(s), "pads": tuple(p),
             "dilations": tuple(d), "ceil_mode": ceil, "count_include_pad": cip}  # fmt: skip
    if lp is not None:
        attrs["p"] = lp
    return Step("vx.pool", "pool", [0], [1], [TensorSpec("y", (*x[:2], *out), "float32")], attrs)


POOL_CASES = [
    ((1, 4, 9, 9), "max", (3, 3), (2, 2), (0, 0, 0, 0), None, False, False, None),
    ((1, 4, 10, 10), "max", (3, 3), (2, 2), (1, 1, 1, 1), None, True, False, None),
    ((2, 3, 8, 7), "max", (2, 3), (1, 2), (0, 1, 1, 0), (2, 1), False, False, None),
    ((1, 4, 10, 9), "avg", (3, 3), (2, 2), (1, 1, 1, 1), None, False, False, None),
    ((1, 4, 10, 9), "avg", (3, 3), (2, 2), (1, 1, 1, 1), None, False, True, None),
    ((1, 4, 11, 11), "avg", (3, 3), (2, 2), (1, 1, 0, 0), None, True, True, None),
    ((1, 4, 11, 11), "avg", (3, 3), (2, 2), (0, 0, 0, 0), None, True, False, None),
    ((1, 3, 6, 6), "lp", (2, 2), (2, 2), (0, 0, 0, 0), None, False, False, 2),
    ((2, 3, 15), "avg", (4,), (3,), (1, 2), None, False, True, None),
    # global pools (full-extent kernels): 7x7, 56x56, 1-D, max and lp
    ((1, 33, 7, 7), "avg", (7, 7), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((1, 8, 56, 56), "avg", (56, 56), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((2, 5, 13, 6), "max", (13, 6), (1, 1), (0, 0, 0, 0), None, False, False, None),
    ((1, 5, 30), "lp", (30,), (1,), (0, 0), None, False, False, 2),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("x,kind,k,s,p,d,ceil,cip,lp", POOL_CASES)
def test_pool(clean, x, kind, k, s, p, d, ceil, cip, lp, precision: str) -> None:  # type: ignore[no-untyped-def]
    step = pool_step(x, kind, k, s, p, d, ceil, cip, lp)
    arr = {0: np.random.default_rng(4).standard_normal(x).astype(np.float32)}
    check(
        run_vk(clean, [step], arr, [0], 1, precision), cpu_ref([step], arr, 1), precision != "high"
    )


# ---------------------------------------------------------------------------
# Epilogues
# ---------------------------------------------------------------------------


def _body(ops: list[tuple[str, list[int], dict[str, Any]]], nargs: int) -> list[Step]:
    """A fused body: ops over local slots (args first, then one per op)."""
    out, slot = [], nargs
    for op, ins, attrs in ops:
        if op == "vx.yield":
            out.append(Step(op, op, ins, [], [], {}))
            continue
        out.append(Step(op, op, ins, [slot], [TensorSpec(op, (), "float32")], attrs))
        slot += 1
    return out


def _epilogue(inputs: list[int], out: int, shape: tuple[int, ...], body: list[Step]) -> Step:
    return Step(
        "vx.fused_pointwise", "epi", inputs, [out], [TensorSpec("z", shape, "float32")],
        {"vx.epilogue": True, "vx.fused_names": ["add", "relu"]}, body,
    )  # fmt: skip


RELU_ADD = [  # max(v + e1 * e2, 0): a residual add scaled per channel, then ReLU
    ("arith.mulf", [1, 2], {}),
    ("arith.addf", [0, 3], {}),
    ("arith.constant", [], {"value": 0.0}),
    ("arith.maximumf", [4, 5], {}),
    ("vx.yield", [6], {}),
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("w", [(16, 8, 3, 3), (8, 1, 3, 3)])
def test_conv_epilogue_attached(clean, w, precision: str) -> None:  # type: ignore[no-untyped-def]
    group = 8 if w[1] == 1 else 1
    step, arrays = conv_step((1, 8, 9, 9), w, pad=1, group=group)
    shape = step.out_specs[0].shape
    rng = np.random.default_rng(9)
    arrays[4] = rng.standard_normal(shape).astype(np.float32)  # residual
    arrays[5] = rng.standard_normal((1, shape[1], 1, 1)).astype(np.float32)  # per channel
    epi = _epilogue([3, 4, 5], 6, shape, _body(RELU_ADD, 3))
    steps = [step, epi]
    for s in steps:
        s.backend = "vulkan"
    specs = {k: TensorSpec("", a.shape, a.dtype.name) for k, a in arrays.items()}
    merged = attach_epilogues(steps, specs, clean.caps)
    assert len(merged) == 1 and EPILOGUE_ATTR in merged[0].attrs
    assert merged[0].outputs == [6] and merged[0].inputs[-2:] == [4, 5]
    want = cpu_ref(steps, arrays, 6)
    got = run_vk(clean, merged, arrays, [0, 4], 6, precision)
    check(got, want, precision != "high")


@pytest.mark.parametrize("global_", [False, True])
def test_pool_epilogue_attached(clean, global_: bool) -> None:  # type: ignore[no-untyped-def]
    x = (1, 6, 7, 7)
    k = (7, 7) if global_ else (3, 3)
    pool = pool_step(x, "avg", k, (1, 1), (0, 0, 0, 0))
    shape = pool.out_specs[0].shape
    body = _body([("math.tanh", [0], {}), ("arith.mulf", [2, 1], {}), ("vx.yield", [3], {})], 2)
    epi = _epilogue([1, 2], 3, shape, body)
    rng = np.random.default_rng(1)
    arrays = {0: rng.standard_normal(x).astype(np.float32),
              2: rng.standard_normal((shape[1], 1, 1)).astype(np.float32)}  # fmt: skip
    steps = [pool, epi]
    for s in steps:
        s.backend = "vulkan"
    specs = {k_: TensorSpec("", a.shape, a.dtype.name) for k_, a in arrays.items()}
    merged = attach_epilogues(steps, specs, clean.caps)
    assert len(merged) == 1
    check(run_vk(clean, merged, arrays, [0], 3), cpu_ref(steps, arrays, 3), False)


def test_attach_leaves_what_it_cannot_merge() -> None:
    step, arrays = conv_step((1, 8, 9, 9), (16, 8, 3, 3), pad=1)
    shape = step.out_specs[0].shape
    relu = _body([("arith.constant", [], {"value": 0.0}), ("arith.maximumf", [0, 1], {}),
                  ("vx.yield", [2], {})], 1)  # fmt: skip
    epi = _epilogue([3], 4, shape, relu)
    other = Step("vx.unary", "u", [3], [5], [TensorSpec("u", shape, "float32")], {"kind": "relu"})
    for s in (step, epi, other):
        s.backend = "vulkan"
    # A second reader of the conv's output: no merge.
    assert len(attach_epilogues([step, epi, other])) == 3
    # The producer on the CPU: no merge.
    step.backend = "cpu"
    assert len(attach_epilogues([step, epi])) == 2
    step.backend = "vulkan"
    merged = attach_epilogues([step, epi])
    assert len(merged) == 1 and merged[0].attrs[EPILOGUE_ATTR]["nodes"] == ["add", "relu"]


# ---------------------------------------------------------------------------
# Whole models: Vulkan (+ CPU fallback) vs the CPU backend
# ---------------------------------------------------------------------------


def _with_epilogues(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Run `attach_epilogues` where the session cuts segments (what the
    session will do once it calls the transform itself)."""
    import vknn.runtime.partition as partition

    from vknn.runtime.vulkan.context import shared_device

    original = partition.make_segments
    device, _, _ = shared_device()

    def make_segments(plan):  # type: ignore[no-untyped-def]
        caps = device.caps if device is not None else None
        plan.steps = attach_epilogues(plan.steps, partition.slot_specs(plan), caps)
        return original(plan)

    monkeypatch.setattr(partition, "make_segments", make_segments)


@pytest.mark.slow
@pytest.mark.parametrize("epilogues", [False, True])
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_light_model_on_vulkan(monkeypatch, name: str, epilogues: bool) -> None:  # type: ignore[no-untyped-def]
    import vknn
    from tests.unit.models import cosine_and_error, light_model, model_inputs

    model = light_model(f"light_{name}.onnx")
    feeds = model_inputs(model, {})
    if epilogues:
        _with_epilogues(monkeypatch)
    sess = vknn.Session(model)
    if sess.segments and all(s.backend != "vulkan" for s in sess.segments):
        pytest.skip("no Vulkan device")
    cpu = vknn.Session(model, vknn.Config(backends=("cpu",)))
    fallbacks = sess.fallback_reasons()
    print(f"{name}: {len(fallbacks)} node(s) on the CPU: {fallbacks}")
    assert not fallbacks
    if epilogues:
        assert not any(s.op == "vx.fused_pointwise" for s in sess.plan.steps)
    got, want = sess.run(feeds), cpu.run(feeds)
    for k, ref in want.items():
        cos, max_err, _ = cosine_and_error(ref, got[k])
        assert cos >= 0.9999 and max_err <= 1e-4 * max(float(np.max(np.abs(ref))), 1e-30), (
            k,
            cos,
            max_err,
        )
