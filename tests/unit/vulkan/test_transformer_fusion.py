"""Fewer dispatches for transformer graphs, checked for numbers and counts:

- split-K GEMMs reduce in the same dispatch (the last slice of a tile sums
  it), correct for several (M, N, K, splits) and across replays (the tile
  counters are reset by the kernel);
- `vx.attention` (fuse-attention + attention.comp) against the unfused
  chain on the CPU oracle and on the device, with masks, several sequence
  lengths and head dims, fp32 and fp16 storage; the gate's refusals;
- view folding (views.py): head split / merge transposes and QKV slices
  read and written through strides, no copy dispatch;
- BERT end to end against onnxruntime, with the dispatch count bounded.

Device tests build ONNX graphs, run them through `vknn.Session` (no CPU
fallback) against the CPU oracle, and count dispatches on the compiled `vkd`
module; they run under the validation layer (zero messages allowed).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
import vknn.oracle  # noqa: F401  (registers the oracle kernels)
from tests.unit.models import cosine_and_error, model_inputs, torch_model
from tests.unit.test_passes_fuse_attention import _attention_model, _feeds, _ort
from tests.unit.vulkan import vkd_checks as V
from tests.unit.vulkan.harness import graph, node, vk_vs_cpu
from vknn.kernels import gate, views
from vknn.kernels.matmul import matmul_space
from vknn.oracle.registry import kernel_for
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.caps import DeviceCaps

F32 = "float32"
RNG = np.random.default_rng


def _spec(shape: tuple[int, ...], dtype: str = F32, name: str = "t") -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype)


def _cpu_steps(
    steps: list[Step], feeds: dict[int, np.ndarray], consts: dict[int, np.ndarray]
) -> dict[int, np.ndarray]:
    """Run a step list on the CPU oracle (slot -> value)."""
    vals = {**feeds, **consts}
    for st in steps:
        fn = kernel_for(st.op)
        assert fn is not None, st.op
        outs = fn(st, [vals[s] if s != NO_VALUE else None for s in st.inputs])
        vals.update(zip(st.outputs, outs, strict=True))
    return vals


def _check(got: np.ndarray, want: np.ndarray, fp16: bool) -> None:
    assert got.shape == want.shape
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    if fp16:
        assert np.all(np.isfinite(g)), "inf/NaN in the fp16 result"
        cos = g @ w / (np.linalg.norm(g) * np.linalg.norm(w) or 1.0)
        assert cos >= 0.999, cos
    else:
        err = np.max(np.abs(g - w)) if g.size else 0.0
        assert err <= 1e-4 * max(np.max(np.abs(w)), 1e-30), err


ATTENTION_PIPELINE = "dequantize,infer-shapes,const-fold,convert-onnx-to-vx,fuse-attention,dce"
"""Each ONNX op its own `vx` op, except the attention chain fused."""


def _device_target():  # type: ignore[no-untyped-def]
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device()
    assert device is not None, why
    return from_caps(device.caps)


def _kernels(model: onnx.ModelProto, precision: str = "high", pipeline: str = "standard"):  # type: ignore[no-untyped-def]
    """The dispatches of the device's compiled module, conversions aside."""
    module = V.lowered(model, _device_target(), pipeline=pipeline, precision=precision)
    return [d for d in V.dispatches(module) if not d.is_convert]


def _vk_session(model: onnx.ModelProto, precision: str, pipeline: str = "standard") -> vknn.Session:
    cfg = vknn.Config(precision=precision, allow_cpu_fallback=False, pipeline=pipeline)
    return vknn.Session(model, cfg)


def _in(**shapes: tuple[int, ...]) -> dict[str, tuple[tuple[int, ...], str]]:
    return {k: (v, F32) for k, v in shapes.items()}


# ---------------------------------------------------------------------------
# Split-K without a reduce dispatch
# ---------------------------------------------------------------------------


# (op, M, N, K, C shape for gemm): the heuristic splits each (asserted below).
@pytest.fixture(autouse=True)
def _single_dispatch_splitk(monkeypatch: pytest.MonkeyPatch) -> None:
    """This file checks the single-dispatch split-K (and counts dispatches
    with it); the default two-pass path is checked by test_splitk_two_pass."""
    from vknn.kernels import matmul

    monkeypatch.setattr(matmul, "SPLITK_SINGLE_DISPATCH", True)


SPLITK_CASES = [
    ("vx.matmul", 128, 256, 1024, None),  # BERT's linear2: x8
    ("vx.matmul", 128, 768, 256, None),  # the QKV projection: x3
    ("vx.gemm", 1, 1000, 512, (1000,)),  # a classifier head
    ("vx.gemm", 70, 33, 650, (70, 1)),  # ragged tiles, per-row C
    ("vx.matmul", 5, 7, 300, None),
    ("vx.matmul", 16, 64, 2000, None),  # many slices
]


def _splitk_model(op: str, m: int, n: int, k: int, cshape):  # type: ignore[no-untyped-def]
    """(model with input a [m, k] and constant weights, the product's Step,
    a function of a giving the numpy reference)."""
    rng = RNG(7)
    if op == "vx.gemm":
        b = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
        c = rng.standard_normal(cshape).astype(np.float32)
        gemm = node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)
        model = graph([gemm], _in(a=(m, k)), ["y"], {"b": b, "c": c})
        attrs = {"trans_a": False, "trans_b": True, "alpha": 0.5, "beta": 2.0}
        step = Step(op, "mm", [0, 1, 2], [9], [_spec((m, n))], attrs)
        return (
            model,
            step,
            [_spec((m, k)), _spec(b.shape), _spec(c.shape)],
            (lambda a: 0.5 * a.astype(np.float64) @ b.T + 2.0 * c),
        )
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    model = graph([node("MatMul", ["a", "w"], ["y"])], _in(a=(m, k)), ["y"], {"w": w})
    step = Step(op, "mm", [0, 1], [9], [_spec((m, n))])
    return model, step, [_spec((m, k)), _spec(w.shape)], lambda a: a.astype(np.float64) @ w


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("case", SPLITK_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}")
def test_splitk_one_dispatch_and_replays(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    op, m, n, k, cshape = case
    model, step, specs, ref = _splitk_model(op, m, n, k, cshape)
    splits = matmul_space(step, _device_target(), specs, "fp32", True).default["splits"]
    assert splits > 1, "the case must split K"
    (d,) = _kernels(model, precision)  # no reduce pass
    assert f"split-K x{splits}" in d.label, d.label
    sess = _vk_session(model, precision)
    # Replays with new inputs: a counter left non-zero would make no slice
    # (or the wrong one) sum a tile.
    for rep in range(3):
        a = RNG(100 + rep).standard_normal((m, k)).astype(np.float32)
        _check(sess.run({"a": a})["y"], ref(a), precision != "high")


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("case", SPLITK_CASES[:3], ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}")
def test_splitk_two_pass(session_device, monkeypatch, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    """The default split-K: the GEMM writes partials, splitk_reduce.comp sums."""
    from vknn.kernels import matmul

    monkeypatch.setattr(matmul, "SPLITK_SINGLE_DISPATCH", False)
    op, m, n, k, cshape = case
    model, _, _, ref = _splitk_model(op, m, n, k, cshape)
    labels = [d.label for d in _kernels(model, precision)]
    assert len(labels) == 2 and "split-K sum" in labels[1], labels
    sess = _vk_session(model, precision)
    for rep in range(2):
        a = RNG(200 + rep).standard_normal((m, k)).astype(np.float32)
        _check(sess.run({"a": a})["y"], ref(a), precision != "high")


def test_splitk_with_epilogue(session_device) -> None:  # type: ignore[no-untyped-def]
    """A split product with a fused bias + residual epilogue (BERT's linear2)."""
    m, n, k = 128, 256, 1024
    rng = RNG(3)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal((n,)).astype(np.float32)
    res = rng.standard_normal((m, n)).astype(np.float32)
    nodes = [
        node("MatMul", ["a", "w"], ["p"]),
        node("Add", ["p", "bias"], ["pb"]),
        node("Add", ["pb", "res"], ["y"]),
    ]
    model = graph(nodes, _in(a=(m, k), res=(m, n)), ["y"], {"w": w, "bias": bias})
    (d,) = _kernels(model)
    assert "split-K" in d.label and d.kind == "MatMul", d.label
    sess = _vk_session(model, "high")
    for rep in range(2):
        r = res + rep
        got = sess.run({"a": a, "res": r})["y"]
        _check(got, a.astype(np.float64) @ w + bias + r, False)


# ---------------------------------------------------------------------------
# vx.attention: CPU oracle, pass, device kernel, gate
# ---------------------------------------------------------------------------


def _unfused(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, scale: float
) -> np.ndarray:
    """The chain fuse-attention replaces, through the oracle's own kernels."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(scale)
    if mask is not None:
        s = s + mask
    sm = Step("vx.softmax", "sm", [0], [1], [_spec(s.shape)], {"axis": s.ndim - 1})
    p = kernel_for("vx.softmax")(sm, [s])[0]  # type: ignore[misc]
    return np.matmul(p, v)


def _attention_step(out_shape: tuple[int, ...], n_in: int, scale: float, dtype: str = F32) -> Step:
    return Step(
        "vx.attention", "att", list(range(n_in)), [9], [_spec(out_shape, dtype)], {"scale": scale}
    )


def _inputs(b: tuple[int, ...], sq: int, sk: int, d: int, dv: int, mask: str | None, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = RNG(seed)
    q = rng.standard_normal((*b, sq, d)).astype(np.float32)
    k = rng.standard_normal((*b, sk, d)).astype(np.float32)
    v = rng.standard_normal((*b, sk, dv)).astype(np.float32)
    ins = [q, k, v]
    if mask == "causal":  # [Sq, Sk], -inf above the diagonal
        m = np.triu(np.full((sq, sk), -np.inf, np.float32), 1)
        ins.append(m)
    elif mask == "padding":  # [B..., 1, Sk]: -10000 on the last keys of each batch
        m = np.zeros((*b[:-1], 1, 1, sk), np.float32) if b else np.zeros((1, sk), np.float32)
        m[..., sk - max(1, sk // 5) :] = -10000.0
        ins.append(m)
    elif mask == "dense":  # a full additive bias
        ins.append(rng.standard_normal((*b, sq, sk)).astype(np.float32))
    return ins


# (batch dims, Sq, Sk, D, Dv, mask)
ATTENTION_CASES = [
    ((1, 4), 128, 128, 64, 64, None),  # BERT-mini
    ((2, 3), 17, 45, 40, 24, "padding"),  # ragged tiles, Dv != D
    ((2,), 33, 33, 16, 16, "causal"),
    ((1, 2), 1, 70, 128, 128, "dense"),  # one query (a decoder step)
    ((3,), 50, 1, 8, 8, None),  # one key
    ((1, 1), 512, 512, 128, 128, "causal"),  # the longest/widest asked for
    ((), 9, 31, 256, 200, "padding"),  # head dim 256, no batch dims
]


def test_cpu_attention_is_the_unfused_chain() -> None:
    for b, sq, sk, d, dv, mask in ATTENTION_CASES[:5]:
        ins = _inputs(b, sq, sk, d, dv, mask)
        scale = d**-0.5
        step = _attention_step((*b, sq, dv), len(ins), scale)
        got = kernel_for("vx.attention")(step, ins)[0]  # type: ignore[misc]
        want = _unfused(*ins[:3], ins[3] if len(ins) > 3 else None, scale)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _attention_graph(ins: list[np.ndarray], scale: float) -> onnx.ModelProto:
    """softmax(scale Q K^T (+ mask)) V over inputs q, k, v (, mask)."""
    rank = ins[1].ndim
    perm = [*range(rank - 2), rank - 1, rank - 2]
    nodes = [
        node("Transpose", ["k"], ["kt"], perm=perm),
        node("MatMul", ["q", "kt"], ["s0"]),
        node("Mul", ["s0", "scale"], ["s1" if len(ins) > 3 else "s2"]),
    ]
    if len(ins) > 3:
        nodes.append(node("Add", ["s1", "mask"], ["s2"]))
    nodes += [node("Softmax", ["s2"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["y"])]
    names = ["q", "k", "v", "mask"][: len(ins)]
    inputs = _in(**{n: a.shape for n, a in zip(names, ins, strict=True)})
    return graph(nodes, inputs, ["y"], {"scale": np.array(scale, np.float32)})


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=lambda c: f"{c[0]}{c[1]}x{c[2]}d{c[3]}{c[5]}")
def test_attention_kernel(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    b, sq, sk, d, dv, mask = case
    ins = _inputs(b, sq, sk, d, dv, mask, seed=sum(case[1:5]))
    step = _attention_step((*b, sq, dv), len(ins), d**-0.5)
    assert gate(step, session_device.caps, [_spec(a.shape) for a in ins]) is None
    model = _attention_graph(ins, d**-0.5)
    kernels = _kernels(model, precision, ATTENTION_PIPELINE)
    assert [k.shader for k in kernels] == ["attention"], [k.label for k in kernels]
    feeds = dict(zip(["q", "k", "v", "mask"], ins, strict=False))
    got, want, _ = vk_vs_cpu(model, feeds, precision=precision, pipeline=ATTENTION_PIPELINE)
    _check(got["y"], kernel_for("vx.attention")(step, ins)[0], precision != "high")  # type: ignore[misc]
    _check(got["y"], want["y"], precision != "high")


def test_attention_fully_masked_row(session_device) -> None:  # type: ignore[no-untyped-def]
    """A row whose keys are all -inf is NaN, as the unfused softmax gives."""
    q, k, v = _inputs((1,), 5, 40, 8, 8, None)
    mask = np.zeros((5, 40), np.float32)
    mask[2] = -np.inf
    mask[3, 1:] = -np.inf
    model = _attention_graph([q, k, v, mask], 0.5)
    assert [d.shader for d in _kernels(model, "high", ATTENTION_PIPELINE)] == ["attention"]
    sess = _vk_session(model, "high", ATTENTION_PIPELINE)
    got = sess.run({"q": q, "k": k, "v": v, "mask": mask})["y"]
    want = _unfused(q, k, v, mask, 0.5)
    assert np.isnan(got[0, 2]).all() and np.isnan(want[0, 2]).all()
    np.testing.assert_allclose(np.delete(got, 2, 1), np.delete(want, 2, 1), rtol=1e-4, atol=1e-5)


def test_attention_gate_says_why() -> None:
    caps = DeviceCaps.lavapipe_like()
    ins = [_spec((1, 4, 16, 300)), _spec((1, 4, 16, 300)), _spec((1, 4, 16, 300))]
    step = _attention_step((1, 4, 16, 300), 3, 1.0)
    assert "head dim 300 > 256" in (gate(step, caps, ins) or "")
    ins = [_spec((2, 16, 256))] * 3
    step = _attention_step((2, 16, 256), 3, 1.0)
    assert gate(step, DeviceCaps.h200_like(), ins) is None
    small = caps.with_(max_compute_shared_memory_size=16384)
    assert "shared memory" in (gate(step, small, ins) or "")
    bad = [_spec((1, 4, 16, 64), "int64")] * 3
    assert "int64" in (gate(_attention_step((1, 4, 16, 64), 3, 1.0), caps, bad) or "")
    # Five non-unit batch dims that no layout collapses (a broadcast in the middle).
    q = _spec((2, 3, 2, 3, 2, 4, 8))
    kv = _spec((2, 1, 2, 1, 2, 4, 8))
    why = gate(_attention_step((2, 3, 2, 3, 2, 4, 8), 3, 1.0), caps, [q, kv, kv])
    assert why is not None and "batch dims" in why


# -- fused patterns on the device ------------------------------------------------


@pytest.mark.parametrize("variant", ["div_mask", "scaled_qk", "kt_input"])
@pytest.mark.parametrize("precision", ["high", "low"])
def test_fused_patterns_on_device(session_device, variant: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    model = _attention_model(variant, s=37, d=24)
    feeds = _feeds(model)
    sess = _vk_session(model, precision)
    # One attention dispatch: K^T is read through strides, not copied.
    assert [d.shader for d in _kernels(model, precision)] == ["attention"]
    (got,) = sess.run(feeds).values()
    cos, err, scale = cosine_and_error(_ort(model, feeds)[0], got)
    assert cos >= (0.99999 if precision == "high" else 0.999), cos
    if precision == "high":
        assert err <= 1e-4 * scale


# ---------------------------------------------------------------------------
# Views: the algebra and the folding
# ---------------------------------------------------------------------------


def _realize(base: np.ndarray, v: views.View) -> np.ndarray:
    flat = base.ravel()[v.offset :]
    return np.lib.stride_tricks.as_strided(flat, v.shape, [s * base.itemsize for s in v.strides])


def test_view_algebra_matches_numpy() -> None:
    rng = RNG(0)
    for _ in range(1500):
        shape = tuple(int(x) for x in rng.integers(1, 4, rng.integers(1, 5)))
        base = np.arange(int(np.prod(shape))).reshape(shape)
        x, v = base, views.contiguous(shape)
        for _ in range(5):
            r = rng.integers(0, 3)
            if r == 0:
                perm = [int(p) for p in rng.permutation(x.ndim)]
                x, v = x.transpose(perm), views.transpose(v, perm)
            elif r == 1:
                n, dims = x.size, []
                while n > 1:
                    d = int(rng.choice([d for d in range(2, n + 1) if n % d == 0]))
                    dims.append(d)
                    n //= d
                dims = [int(d) for d in rng.permutation(dims)] or [1]
                if rng.random() < 0.5:
                    dims.insert(int(rng.integers(0, len(dims) + 1)), 1)
                nv = views.reshape(v, dims)
                xr = x.view()
                try:
                    xr.shape = dims  # numpy's no-copy reshape, or AttributeError
                except AttributeError:
                    assert nv is None, (x.shape, x.strides, dims)
                    break
                assert nv is not None, (x.shape, x.strides, dims)
                x, v = xr, nv
            elif x.ndim > 1:
                ax = int(rng.integers(0, x.ndim))
                i = int(rng.integers(0, x.shape[ax]))
                x, v = x[(slice(None),) * ax + (i,)], views.take(v, ax, i, ())  # type: ignore[assignment]
                assert v is not None
            np.testing.assert_array_equal(_realize(base, v), x)


def _head_split_steps(b: int, s: int, h: int, dh: int) -> tuple[list[Step], dict[int, np.ndarray]]:
    """x [b, s, 3, h, dh] -> q, k, v (Gather of a constant index + Transpose
    (0, 2, 1, 3)) -> attention -> Transpose back -> Reshape [b, s, h*dh]."""
    consts = {100 + i: np.array(i, np.int64) for i in range(3)}
    heads, tokens = _spec((b, h, s, dh)), _spec((b, s, h, dh))
    perm = {"perm": (0, 2, 1, 3)}
    steps: list[Step] = []
    for i in range(3):
        steps.append(Step("vx.gather", f"g{i}", [0, 100 + i], [1 + i], [tokens], {"axis": 2}))
        steps.append(Step("vx.transpose", f"t{i}", [1 + i], [4 + i], [heads], perm))
    steps.append(Step("vx.attention", "att", [4, 5, 6], [7], [heads], {"scale": dh**-0.5}))
    steps.append(Step("vx.transpose", "merge", [7], [8], [tokens], perm))
    steps.append(Step("vx.reshape", "flat", [8], [9], [_spec((b, s, h * dh))]))
    return steps, consts


def _head_split_model(b: int, s: int, h: int, dh: int, keep: bool) -> onnx.ModelProto:
    """The graph of `_head_split_steps` (x [b, s, 3, h, dh] -> q, k, v by
    Gather + Transpose -> attention -> head merge -> Reshape); `keep`: q's
    heads are a model output too."""
    nodes = []
    for i, n in enumerate("qkv"):
        nodes += [
            node("Gather", ["x", f"i{i}"], [f"{n}0"], axis=2),
            node("Transpose", [f"{n}0"], [n], perm=[0, 2, 1, 3]),
        ]
    nodes += [
        node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "kt"], ["s0"]),
        node("Mul", ["s0", "scale"], ["s1"]),
        node("Softmax", ["s1"], ["p"], axis=-1),
        node("MatMul", ["p", "v"], ["att"]),
        node("Transpose", ["att"], ["merged"], perm=[0, 2, 1, 3]),
        node("Reshape", ["merged", "shape"], ["y"]),
    ]
    inits = {f"i{i}": np.array(i, np.int64) for i in range(3)}
    inits |= {"scale": np.array(dh**-0.5, np.float32), "shape": np.array([b, s, h * dh])}
    return graph(nodes, _in(x=(b, s, 3, h, dh)), ["y", "q"] if keep else ["y"], inits)


def test_fold_views_plan() -> None:
    steps, consts = _head_split_steps(2, 7, 3, 8)
    folded = views.fold_views(steps, {0: _spec((2, 7, 3, 3, 8))}, consts, [9])
    (att,) = folded  # every gather, transpose and reshape folded away
    assert att.inputs == [0, 0, 0] and att.outputs == [9]
    assert att.attrs[views.VIEWS_ATTR][1] == (8 * 3, (2, 3, 7, 8), (7 * 72, 8, 72, 1))
    assert att.attrs[views.OUT_VIEW_ATTR] == (0, (2, 3, 7, 8), (7 * 24, 8, 24, 1))
    assert steps[6].inputs == [4, 5, 6]  # the caller's steps are not modified
    # A segment output in the chain stays materialized.
    kept = views.fold_views(steps, {0: _spec((2, 7, 3, 3, 8))}, consts, [9, 4])
    assert [s.node for s in kept] == ["g0", "t0", "att"]
    assert kept[-1].inputs == [0, 0, 0]


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("keep", [False, True])
def test_head_split_runs_no_copy(session_device, precision: str, keep: bool) -> None:  # type: ignore[no-untyped-def]
    b, s, h, dh = 2, 19, 3, 16
    model = _head_split_model(b, s, h, dh, keep)
    x = RNG(5).standard_normal((b, s, 3, h, dh)).astype(np.float32)
    kernels = _kernels(model, precision, ATTENTION_PIPELINE)
    # keep: q's heads materialized (its gather + transpose) for the output.
    assert len(kernels) == (3 if keep else 1), [k.label for k in kernels]
    assert kernels[-1].shader == "attention"
    got, want, _ = vk_vs_cpu(model, {"x": x}, precision=precision, pipeline=ATTENTION_PIPELINE)
    for name, w in want.items():
        _check(got[name], w, precision != "high")


def test_matmul_view_geometry() -> None:
    """A [S, 1, E] view of a [1, S, E] tensor (one row per batch entry, row
    stride 0) still folds the batch into M: one M = S product, not S
    products of one row."""
    from vknn.kernels import matmul

    attrs = {views.VIEWS_ATTR: {0: (0, (128, 1, 256), (256, 0, 1))}}
    st = Step("vx.matmul", "mm", [0, 1], [2], [_spec((128, 1, 768))], attrs)
    g = matmul._geom(st, [_spec((1, 128, 256)), _spec((256, 768))])
    assert (g.m, g.n, g.k, g.dims, g.sa) == (128, 768, 256, [1], (256, 1))
    # Views at an offset, transposed: strides and offsets reach the kernel.
    attrs = {views.VIEWS_ATTR: {1: (8, (2, 8, 5), (80, 1, 16))}}
    st = Step("vx.matmul", "mm", [0, 1], [2], [_spec((2, 7, 5))], attrs)
    g = matmul._geom(st, [_spec((2, 7, 8)), _spec((2, 5, 16))])
    assert (g.sb, g.bsb, g.b_off, g.dims) == ((1, 16), [80], 8, [2])


def test_alias_chains_are_not_folded() -> None:
    """Reshapes alone are aliases already: folding them gains nothing."""
    steps = [
        Step("vx.reshape", "r", [0], [1], [_spec((4, 6))]),
        Step("vx.matmul", "mm", [1, 2], [9], [_spec((4, 5))]),
    ]
    specs = {0: _spec((2, 2, 6)), 2: _spec((6, 5))}
    assert views.fold_views(steps, specs, {}, [9]) == steps


def _matmul_view_cases() -> list[tuple[str, list[Step], dict[int, tuple[int, ...]], dict]]:
    """(name, steps, input shapes, constants): view chains into a product;
    every chain step should fold, leaving one dispatch."""
    f = _spec
    idx1 = {50: np.array(1, np.int64)}
    return [
        (  # K^T materialized by a transpose (an unfused attention's scores)
            "kt",
            [
                Step("vx.transpose", "kt", [1], [2], [f((2, 3, 8, 10))], {"perm": (0, 1, 3, 2)}),
                Step("vx.matmul", "qk", [0, 2], [9], [f((2, 3, 7, 10))]),
            ],
            {0: (2, 3, 7, 8), 1: (2, 3, 10, 8)},
            {},
        ),
        (  # head split on both operands: [b, s, 2, h, d] -> gather -> transpose
            "heads",
            [
                Step("vx.gather", "gq", [0, 50], [1], [f((2, 9, 3, 8))], {"axis": 2}),
                Step("vx.transpose", "tq", [1], [2], [f((2, 3, 9, 8))], {"perm": (0, 2, 1, 3)}),
                Step("vx.transpose", "tk", [3], [4], [f((2, 3, 8, 5))], {"perm": (0, 2, 3, 1)}),
                Step("vx.matmul", "mm", [2, 4], [9], [f((2, 3, 9, 5))]),
            ],
            {0: (2, 9, 2, 3, 8), 3: (2, 5, 3, 8)},
            idx1,
        ),
        (  # BERT's pooler: Gemm(trans_b) of one token's row (a gather at offset)
            "pooler",
            [
                Step("vx.gather", "g", [0, 50], [1], [f((1, 16))], {"axis": 1}),
                Step(
                    "vx.gemm", "fc", [1, 2, 3], [9], [f((1, 12))],
                    {"trans_a": False, "trans_b": True, "alpha": 1.0, "beta": 1.0},
                ),
            ],
            {0: (1, 6, 16), 2: (12, 16), 3: (12,)},
            idx1,
        ),
        (  # a transposed A of a Gemm with trans_a: strides swap twice
            "gemm_ta",
            [
                Step("vx.transpose", "t", [0], [1], [f((40, 33))], {"perm": (1, 0)}),
                Step(
                    "vx.gemm", "g", [1, 2], [9], [f((33, 20))],
                    {"trans_a": True, "trans_b": False, "alpha": 0.5, "beta": 0.0},
                ),
            ],
            {0: (33, 40), 2: (40, 20)},
            {},
        ),
        (  # a long K (split-K) through a view
            "splitk",
            [
                Step("vx.transpose", "t", [0], [1], [f((96, 1024))], {"perm": (1, 0)}),
                Step("vx.matmul", "mm", [1, 2], [9], [f((96, 64))]),
            ],
            {0: (1024, 96), 2: (1024, 64)},
            {},
        ),
    ]  # fmt: skip


def _view_model(
    steps: list[Step], shapes: dict[int, tuple[int, ...]], consts: dict
) -> onnx.ModelProto:  # type: ignore[type-arg]
    """The ONNX graph of a `_matmul_view_cases` step chain (slot k is `t{k}`)."""
    ops = {"vx.transpose": "Transpose", "vx.gather": "Gather", "vx.matmul": "MatMul",
           "vx.gemm": "Gemm"}  # fmt: skip
    nodes = []
    for st in steps:
        attrs = dict(st.attrs)
        if st.op == "vx.transpose":
            attrs["perm"] = list(attrs["perm"])
        if st.op == "vx.gemm":
            attrs = {"transA": int(attrs["trans_a"]), "transB": int(attrs["trans_b"]),
                     "alpha": attrs["alpha"], "beta": attrs["beta"]}  # fmt: skip
        nodes.append(node(ops[st.op], [f"t{i}" for i in st.inputs], [f"t{st.outputs[0]}"], **attrs))
    return graph(nodes, _in(**{f"t{k}": v for k, v in shapes.items()}), ["t9"],
                 {f"t{k}": v for k, v in consts.items()})  # fmt: skip


@pytest.mark.parametrize("precision", ["high", "low"])
@pytest.mark.parametrize("case", _matmul_view_cases(), ids=lambda c: c[0])
def test_matmul_reads_views(session_device, precision: str, case) -> None:  # type: ignore[no-untyped-def]
    _, steps, shapes, consts = case
    rng = RNG(11)
    feeds = {s: rng.standard_normal(sh).astype(np.float32) for s, sh in shapes.items()}
    model = _view_model(steps, shapes, consts)
    # The chain folded away: one product dispatch.
    kernels = _kernels(model, precision, "lower")
    assert [k.shader for k in kernels] == ["matmul"], [k.label for k in kernels]
    got, _, _ = vk_vs_cpu(model, {f"t{k}": v for k, v in feeds.items()}, precision=precision,
                          pipeline="lower")  # fmt: skip
    _check(got["t9"], _cpu_steps(steps, feeds, consts)[9], precision != "high")


def hf_attention_block(b: int = 2, s: int = 24, h: int = 4, d: int = 16) -> onnx.ModelProto:
    """A HuggingFace-BERT-style self-attention block, as its exports look:
    separate Q/K/V projections, Reshape + Transpose(0, 2, 1, 3) head splits,
    K^T by Transpose(0, 2, 3, 1), Div by sqrt(d), an additive padding mask
    [b, 1, 1, s], the head merge, the output projection, the residual add and
    a LayerNorm."""
    e = h * d
    rng = RNG(2)
    f = TensorProto.FLOAT

    def init(name: str, shape: tuple[int, ...], scale: float) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [init(f"w{n}", (e, e), e**-0.5) for n in "qkvo"]
    inits += [init(f"b{n}", (e,), 0.1) for n in "qkvo"]
    inits += [init("gamma", (e,), 0.1), init("beta", (e,), 0.1)]
    inits += [
        numpy_helper.from_array(np.array([b, s, h, d], np.int64), "heads"),
        numpy_helper.from_array(np.array([b, s, e], np.int64), "merged"),
        numpy_helper.from_array(np.array(d**0.5, np.float32), "sqrt_d"),
    ]
    nodes = []
    for n in "qkv":
        nodes += [
            helper.make_node("MatMul", ["x", f"w{n}"], [f"{n}0"]),
            helper.make_node("Add", [f"{n}0", f"b{n}"], [f"{n}1"]),
            helper.make_node("Reshape", [f"{n}1", "heads"], [f"{n}2"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["q2"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k2"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v2"], ["v"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Div", ["s0", "sqrt_d"], ["s1"]),
        helper.make_node("Add", ["s1", "mask"], ["s2"]),
        helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["c0"]),
        helper.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c1", "merged"], ["c2"]),
        helper.make_node("MatMul", ["c2", "wo"], ["o0"]),
        helper.make_node("Add", ["o0", "bo"], ["o1"]),
        helper.make_node("Add", ["o1", "x"], ["o2"]),
        helper.make_node("LayerNormalization", ["o2", "gamma", "beta"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "hf_attention",
        [
            helper.make_tensor_value_info("x", f, [b, s, e]),
            helper.make_tensor_value_info("mask", f, [b, 1, 1, s]),
        ],
        [helper.make_tensor_value_info("y", f, [b, s, e])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("precision", ["high", "low"])
def test_hf_style_block(session_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    """Another exporter's layout of the same block fuses and folds as well:
    3 projections, attention (head split / merge and K^T read and written
    through strides), output projection with bias and residual as its
    epilogue, LayerNorm."""
    model = hf_attention_block()
    feeds = model_inputs(model, {}, seed=6)
    feeds["mask"] = (
        np.where(np.arange(24) >= 20, -10000.0, 0.0)
        .astype(np.float32)[None, None, None]
        .repeat(2, 0)
    )
    sess = _vk_session(model, precision)
    kernels = _kernels(model, precision)
    assert sum(k.shader == "attention" for k in kernels) == 1
    assert len(kernels) == 6, [k.label for k in kernels]
    (got,) = sess.run(feeds).values()
    cos, err, scale = cosine_and_error(_ort(model, feeds)[0], got)
    assert cos >= (0.99999 if precision == "high" else 0.999), cos


# ---------------------------------------------------------------------------
# BERT end to end
# ---------------------------------------------------------------------------

DIMS = {"batch": 1, "seq": 128}
BERT_MAX_DISPATCHES = 32
"""Measured on lavapipe (the dispatch structure is the device's, but for
caps-keyed choices): 118 dispatches / 110 barriers before split-K in one
pass, fused attention, view folding and sink-reshapes; 32 / 32 after."""


@pytest.mark.slow
def test_bert_encoder_fused(session_device) -> None:  # type: ignore[no-untyped-def]
    model = torch_model("bert_encoder")
    from vknn.runtime.program import BarrierCmd, VulkanSegment

    sess = vknn.Session(model, vknn.Config(dims=DIMS, allow_cpu_fallback=False, cache_file="off"))
    assert set(sess.node_backends().values()) == {"vulkan"}
    _, module = V.stages(model, _device_target(), DIMS)
    assert sum(d.shader == "attention" for d in V.dispatches(module)) == 4
    segments = [s for s in sess.program.buckets[0].segments if isinstance(s, VulkanSegment)]
    dispatches = sess.dispatch_count()
    assert dispatches == len(V.dispatches(module))
    barriers = sum(isinstance(c, BarrierCmd) for s in segments for c in s.commands)
    print(f"bert: {dispatches} dispatches, {barriers} barriers")
    assert dispatches <= BERT_MAX_DISPATCHES and barriers <= BERT_MAX_DISPATCHES
    feeds = model_inputs(model, DIMS)
    refs = dict(zip([o.name for o in model.graph.output], _ort(model, feeds), strict=True))
    for name, out in sess.run(feeds).items():
        cos, err, scale = cosine_and_error(refs[name], out)
        assert cos >= 0.99999, (name, cos)
        assert err <= 1e-3 * scale + 1e-6, (name, err)
