"""`precision="normal"` on the Vulkan backend: fp16 storage except the float
tensors a named precision rule keeps in fp32 (`kernels/precision_rules.py`),
with storage conversions (`vkd.convert`) inserted by `assign-storage` where
an op's shader variant differs from a tensor's storage. The decisions are
read off the module after `assign-storage` and the final `vkd` module
(`vkd_checks`); numerics run through `vknn.Session`. Validation layer on,
zero messages.

- which slots the rules keep, on a small transformer-like graph, a
  decomposed LayerNorm and the BERT-style encoder;
- numerics: a softmax whose logits pass 65504 is exact under `normal` and
  wrong under `low` (which saturates them); a decomposed LayerNorm of a
  large-mean input; BERT vs onnxruntime (cosine >= 0.9999, max abs error no
  worse than `low`);
- split-K GEMMs / convs with an epilogue, concats and the staged path under
  mixed storage;
- `low` and `high` insert no conversion and keep their dispatch counts;
  `normal` adds exactly one dispatch per conversion;
- with fp16 storage, large float inputs/outputs stay fp32 on the device and
  are converted there (once per tensor, shared by its readers); small ones
  are converted by the host.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh

import vknn
from tests.unit.models import cosine_and_error, model_inputs, torch_model
from tests.unit.vulkan import vkd_checks as V
from tests.unit.vulkan.harness import run_for_target
from vknn.kernels.precision_rules import DEFAULT_RULES, RULES, fp32_slots, plan_mixed
from vknn.transforms.assign_storage import GPU_CONVERT_MIN_ELEMENTS

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, inits=()):  # type: ignore[no-untyped-def]
    g = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info(n, F, s) for n, s in inputs],
        [oh.make_tensor_value_info(n, F, None) for n in outputs],
        list(inits),
    )
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))


def _session(model: onnx.ModelProto, precision: str, **kw) -> vknn.Session:  # type: ignore[no-untyped-def]
    cfg = vknn.Config(precision=precision, allow_cpu_fallback=False, cache_file="off", **kw)
    return vknn.Session(model, cfg)


def _target():  # type: ignore[no-untyped-def]
    """The test device's own target (what its sessions compile for)."""
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device()
    assert device is not None, why
    return from_caps(device.caps)


def _storage(model: onnx.ModelProto, precision: str, **kw):  # type: ignore[no-untyped-def]
    """The device's module after assign-storage."""
    return V.storage_module(model, _target(), precision=precision, **kw)


def _final(model: onnx.ModelProto, precision: str, **kw):  # type: ignore[no-untyped-def]
    """The device's final vkd module (what its session runs)."""
    return V.lowered(model, _target(), precision=precision, **kw)


def _conversions(model: onnx.ModelProto, precision: str, **kw) -> list[str]:
    return V.conversions(_final(model, precision, **kw))


def tiny_transformer(seq: int = 16, d: int = 32) -> onnx.ModelProto:
    """LayerNorm -> Q/K/V projections -> scaled softmax attention -> residual
    (+ sigmoid(z), computed in fp16) -> LayerNorm, plus `aux = z * beta`: an
    fp16 step sharing LayerNorm's bias constant with the fp32 ones. Outputs
    y, aux, probs."""
    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...], scale: float) -> onnx.TensorProto:
        return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        init("gamma", (d,), 0.1),
        init("beta", (d,), 0.1),
        init("wq", (d, d), d**-0.5),
        init("wk", (d, d), d**-0.5),
        init("wv", (d, d), d**-0.5),
        init("bq", (d,), 0.1),
        nh.from_array(np.array(d**-0.5, np.float32), "scale"),
    ]
    nodes = [
        oh.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1),
        oh.make_node("MatMul", ["ln", "wq"], ["q0"]),
        oh.make_node("Add", ["q0", "bq"], ["q"]),
        oh.make_node("MatMul", ["ln", "wk"], ["k"]),
        oh.make_node("MatMul", ["ln", "wv"], ["v"]),
        oh.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        oh.make_node("MatMul", ["q", "kt"], ["s0"]),
        oh.make_node("Mul", ["s0", "scale"], ["logits"]),
        oh.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        oh.make_node("MatMul", ["probs", "v"], ["att"]),
        oh.make_node("Sigmoid", ["z"], ["gate"]),
        oh.make_node("Add", ["att", "ln"], ["res0"]),
        oh.make_node("Add", ["res0", "gate"], ["res"]),
        oh.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1),
        oh.make_node("Mul", ["z", "beta"], ["aux"]),
    ]
    # probs is an output too, so fuse-attention leaves the softmax a step.
    return _model(nodes, [("x", [1, seq, d]), ("z", [1, seq, d])], ["y", "aux", "probs"], inits)


# ---------------------------------------------------------------------------
# Rules and storage decisions
# ---------------------------------------------------------------------------


def test_rule_registry() -> None:
    assert set(DEFAULT_RULES) <= set(RULES)
    assert all(RULES[r].why for r in RULES)
    with pytest.raises(ValueError, match="unknown precision rule"):
        fp32_slots([], {}, ["no_such_rule"])


def test_plan_mixed_pure() -> None:
    """Alias groups share a storage; a step touching a kept slot runs fp32; a
    slot only fp32 steps touch is fp32 without a rule; a constant gets the
    storage of its readers."""
    from vknn.runtime.plan import Step, TensorSpec

    def spec(s: int, shape: tuple[int, ...] = (4, 8)) -> TensorSpec:
        return TensorSpec(f"t{s}", shape, "float32")

    steps = [
        Step("vx.matmul", "mm", [0, 1], [2], [spec(2)]),
        Step("vx.reshape", "rs", [2], [3], [spec(3, (32,))]),
        Step("vx.softmax", "sm", [3], [4], [spec(4, (32,))], {"axis": 0}),
        Step("vx.unary", "r1", [4], [5], [spec(5, (32,))], {"kind": "relu"}),
        Step("vx.unary", "r2", [0], [6], [spec(6, (4, 8))], {"kind": "relu"}),
    ]
    specs = {0: spec(0, (4, 8)), 1: spec(1, (8, 8))}
    for st in steps:
        specs[st.outputs[0]] = st.out_specs[0]
    mixed = plan_mixed(steps, specs, {1})
    assert mixed.reasons == {2: ("softmax_io",), 3: ("softmax_io",), 4: ("softmax_io",)}
    assert mixed.variants == ["fp32", "fp16", "fp32", "fp32", "fp16"]
    assert mixed.storage == {
        0: "float16",  # read by an fp32 and an fp16 step: converted for the former
        1: "float32",
        2: "float32",
        3: "float32",
        4: "float32",
        5: "float32",  # fp32 steps only
        6: "float16",
    }
    assert mixed.const_copies == {1: []}


def _kept_operand(v, rules: dict) -> bool:  # type: ignore[no-untyped-def]
    """A tensor a rule keeps in fp32: its producer's result has a rule, or
    it is a segment input the segment stores fp32 (`rules`: input forms)."""
    op = V.producer(v)
    if op is None:
        from vknn.transforms.segment_steps import value_name

        return rules.get(value_name(v), "").startswith("f32")
    return bool(op.attributes.get("vkd.fp32_rules"))


def test_rules_on_tiny_transformer(session_device) -> None:  # type: ignore[no-untyped-def]
    module = _storage(tiny_transformer(), "normal")
    ops = V.placed(module)
    by_rule = {r: {p.nodes[-1] for p in ops if r in p.rules} for r in RULES}
    # Both LayerNorms' outputs, and the second one's input (computed by the
    # MatMul whose epilogue adds the residual and the gate).
    assert by_rule["layernorm_io"] == {"LayerNormalization_0", "LayerNormalization_13", "Add_12"}
    # Its first input, x, a segment input: stored fp32.
    args = V.arg_storage(module)
    assert args["x"] == "f32:flat"
    # The scale Mul is the epilogue of the scores MatMul: its output is the
    # softmax's input.
    assert by_rule["softmax_io"] == {"Mul_7", "Softmax_8"}
    assert by_rule["sum_out"] == set()
    for p in ops:
        if p.kept:
            assert all(f.startswith("f32") for f in p.storage), p.nodes
    # Every op touching a kept tensor runs fp32; the others fp16.
    for p in ops:
        touches = p.kept or any(_kept_operand(v, args) for v in p.op.operands)
        assert p.variant == ("fp32" if touches else "fp16"), p.nodes
    # An fp32 result no rule keeps: only fp32 ops touch it (K, V).
    assert any(not p.kept and p.storage == ("f32:flat",) for p in ops)
    # z is read by the fp16 `aux` Mul and by the fp32 op computing the
    # second LayerNorm's input (its sigmoid is in that op's epilogue):
    # stored fp16, converted for the latter.
    assert args["z"] == "f16:flat"
    ((name, src, dst, conv),) = V.converts(module)
    assert (name, src, dst) == ("z", "f16:flat", "f32:flat")
    assert any("Add_12" in p.nodes and conv.result in p.op.operands for p in ops)
    # The final module: one conversion dispatch per vkd.convert; beta has
    # an fp32 copy (the LayerNorms) and an fp16 one (aux).
    final = _final(tiny_transformer(), "normal")
    assert V.conversions(final) == ["fp16->fp32 z"]
    # (A handle parsed again in one process gets a suffix: "beta_1".)
    beta = {st for w, _, st in V.weight_forms(final) if w.split("_")[0] == "beta"}
    assert beta == {"f32", "f16"}


def test_low_and_high_unchanged(session_device) -> None:  # type: ignore[no-untyped-def]
    model = tiny_transformer()
    final = {p: _final(model, p) for p in ("high", "low", "normal")}
    for p in ("high", "low"):
        module = _storage(model, p)
        assert V.converts(module) == [] and V.conversions(final[p]) == []
        assert all(not op.rules for op in V.placed(module))
        assert {op.variant for op in V.placed(module)} == {"fp32" if p == "high" else "fp16"}
        want = "f32" if p == "high" else "f16"
        assert {b.storage for d in V.dispatches(final[p]) for b in d.bufs} == {want}
    count = {p: len(V.dispatches(m)) for p, m in final.items()}
    assert count["low"] == count["high"]
    # normal: the same kernels plus one dispatch per conversion.
    n_conv = len(V.conversions(final["normal"]))
    assert n_conv >= 1 and count["normal"] == count["low"] + n_conv


def test_tiny_transformer_numerics(session_device) -> None:  # type: ignore[no-untyped-def]
    model = tiny_transformer()
    feeds = model_inputs(model, {})
    feeds["x"] = feeds["x"] * 30 + 5  # a residual stream far from unit scale
    ref = _ort(model, feeds)
    err: dict[str, dict[str, float]] = {}
    for p in ("high", "normal", "low"):
        out = _session(model, p).run(feeds)
        err[p] = {k: cosine_and_error(ref[k], out[k])[1] for k in ref}
        if p != "high":
            # aux = z * beta reads fp16 storage (beta's fp16 copy under normal).
            np.testing.assert_allclose(out["aux"], ref["aux"], rtol=2e-3, atol=1e-4)
    # Measured: y 2e-7 / 8e-5 / 4e-4, probs 1e-8 / 7e-7 / 3e-5 (high / normal / low).
    for k in ("y", "probs"):
        assert err["high"][k] < 1e-5
        assert err["normal"][k] < 1e-3
        assert err["normal"][k] <= err["low"][k], (k, err)


def test_staging_path_matches(session_device) -> None:  # type: ignore[no-untyped-def]
    """Compiled for a device without host-visible device memory (staging
    copies): the same conversions, the same numbers."""
    from dataclasses import replace

    model = tiny_transformer()
    feeds = model_inputs(model, {})
    want = _session(model, "normal").run(feeds)
    staging = replace(_target(), memory="staging")
    got, program = run_for_target(model, staging, feeds, precision="normal")
    kernels = [program.kernels[c.kernel] for s in program.buckets[0].segments
               for c in getattr(s, "commands", ()) if hasattr(c, "kernel")]  # fmt: skip
    assert sum(k.shader == "convert_storage" for k in kernels) == len(_conversions(model, "normal"))
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)


# ---------------------------------------------------------------------------
# What fp16 storage breaks and normal keeps
# ---------------------------------------------------------------------------


def test_softmax_logits_past_fp16_range(session_device) -> None:  # type: ignore[no-untyped-def]
    """Logits of ~1e5: `low` stores them saturated at 65504 (equal, so the
    softmax flattens); `normal` keeps them in fp32 and is exact. Every input
    is an integer, exact in fp16, so only the logits' storage differs."""
    rng = np.random.default_rng(3)
    k = 16
    w = rng.integers(30, 60, (k, 8)).astype(np.float32)
    c = rng.integers(0, 50, (k,)).astype(np.float32)
    model = _model(
        [
            oh.make_node("Add", ["x", "c"], ["a"]),
            oh.make_node("MatMul", ["a", "w"], ["logits"]),
            oh.make_node("Softmax", ["logits"], ["p"], axis=-1),
        ],
        [("x", [1, 4, k])],
        ["p"],
        [nh.from_array(w, "w"), nh.from_array(c, "c")],
    )
    x = rng.integers(100, 200, (1, 4, k)).astype(np.float32)
    logits = (x + c).astype(np.float64) @ w.astype(np.float64)
    assert logits.min() > 65504
    e = np.exp(logits - logits.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)

    normal = _session(model, "normal")
    # The Add's fp16 result, into the fp32 MatMul.
    assert [c.split()[0] for c in _conversions(model, "normal")] == ["fp16->fp32"]
    got = normal.run({"x": x})["p"]
    np.testing.assert_allclose(got, want, atol=1e-6)
    low = _session(model, "low").run({"x": x})["p"]
    assert np.isfinite(low).all()
    assert np.abs(low - want).max() > 0.1


def decomposed_layernorm() -> onnx.ModelProto:
    eps = nh.from_array(np.array(1e-5, np.float32), "eps")
    nodes = [
        oh.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
        oh.make_node("Sub", ["x", "mean"], ["d"]),
        oh.make_node("Mul", ["d", "d"], ["d2"]),
        oh.make_node("ReduceMean", ["d2"], ["var"], axes=[-1], keepdims=1),
        oh.make_node("Add", ["var", "eps"], ["ve"]),
        oh.make_node("Sqrt", ["ve"], ["std"]),
        oh.make_node("Div", ["d", "std"], ["y"]),
        oh.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1]),
        oh.make_node("Relu", ["yt"], ["out"]),
    ]
    return _model(nodes, [("x", [2, 8, 64])], ["out"], [eps])


def test_decomposed_layernorm(session_device) -> None:  # type: ignore[no-untyped-def]
    """A LayerNorm written as ReduceMean / Sub / Mul / ReduceMean / Add /
    Sqrt / Div (fused into 5 steps): its input, mean, centered values,
    variance chain and output stay fp32; the Relu after its transpose does
    not (the transpose reads fp32, writes fp16: one conversion). With an
    input of mean 1000 and spread 0.05, fp16 storage of x (spacing 0.5)
    destroys the deviations; normal keeps them."""
    model = decomposed_layernorm()
    sess = _session(model, "normal")
    module = _storage(model, "normal")
    ops = V.placed(module)
    assert {r for p in ops for r in p.rules} == {"layernorm_io"}
    # x, mean, x - mean and its square, std (var + eps and the sqrt are the
    # variance reduction's epilogue) and y: x an fp32 input, 5 kept results.
    assert V.arg_storage(module)["x"] == "f32:flat"
    assert sum(len(p.rules) for p in ops) == 5
    for p in ops:
        assert p.variant == ("fp16" if "Relu_8" in p.nodes else "fp32"), p.nodes
    # The transpose's fp32 result converted for the fp16 Relu.
    assert [(n, a, b) for n, a, b, _ in V.converts(module)] == [
        ("Transpose_7", "f32:flat", "f16:flat")
    ]
    assert len(_conversions(model, "normal")) == 1

    rng = np.random.default_rng(5)
    x = (1000 + 0.05 * rng.standard_normal((2, 8, 64))).astype(np.float32)
    ref = _ort(model, {"x": x})["out"]
    cos_n, err_n, _ = cosine_and_error(ref, sess.run({"x": x})["out"])
    cos_l, err_l, _ = cosine_and_error(ref, _session(model, "low").run({"x": x})["out"])
    assert cos_n > 0.9999 and err_n < 0.05, (cos_n, err_n)
    assert cos_l < 0.5, cos_l  # x rounded to fp16: the signal is gone


def test_concat_of_mixed_storage(session_device) -> None:  # type: ignore[no-untyped-def]
    """A batch-1 channel concat of an fp32 softmax result and an fp16 tensor:
    the concat is stored in one width (fp32); the softmax writes its part in
    place and the fp16 part is converted into its place."""
    model = _model(
        [
            oh.make_node("Softmax", ["a"], ["p"], axis=1),
            oh.make_node("Relu", ["b"], ["r"]),
            oh.make_node("Concat", ["p", "r"], ["c"], axis=1),
            oh.make_node("Sigmoid", ["c"], ["y"]),
        ],
        [("a", [1, 8, 4, 4]), ("b", [1, 8, 4, 4])],
        ["y"],
    )
    feeds = model_inputs(model, {})
    ref = _ort(model, feeds)["y"]
    sess = _session(model, "normal")
    final = _final(model, "normal")
    assert "fp16->fp32 Relu_1:0" in V.conversions(final)
    parts = [d for d in V.dispatches(final) if d.node == "Softmax_0" or "Relu_1:0" in d.label]
    into = [b for d in parts for b in d.writes]
    assert len(into) == 2 and len({V.root(b.value) for b in into}) == 1, into
    assert {(b.shape, b.storage) for b in into} == {((1, 16, 4, 4), "f32")}
    np.testing.assert_allclose(sess.run(feeds)["y"], ref, atol=2e-3)


@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_split_k_with_epilogue_into_softmax(session_device, kind: str) -> None:  # type: ignore[no-untyped-def]
    """A long-K product on a small grid (split-K) with a bias epilogue whose
    result feeds a softmax: the whole merged step runs fp32 (partials, sum
    pass and epilogue), its fp16 input is converted first."""
    rng = np.random.default_rng(7)
    if kind == "matmul":
        w = rng.standard_normal((2048, 16)).astype(np.float32) / 45
        nodes = [
            oh.make_node("Relu", ["x"], ["r"]),
            oh.make_node("MatMul", ["r", "w"], ["m"]),
            oh.make_node("Add", ["m", "b"], ["a"]),
            oh.make_node("Softmax", ["a"], ["y"], axis=-1),
        ]
        shape, b = [1, 4, 2048], rng.standard_normal(16).astype(np.float32)
    else:
        w = rng.standard_normal((8, 256, 3, 3)).astype(np.float32) / 48
        nodes = [
            oh.make_node("Relu", ["x"], ["r"]),
            oh.make_node("Conv", ["r", "w", "b"], ["a"], pads=[1, 1, 1, 1]),
            oh.make_node("Softmax", ["a"], ["y"], axis=1),
        ]
        shape, b = [1, 256, 4, 4], rng.standard_normal(8).astype(np.float32)
    model = _model(nodes, [("x", shape)], ["y"], [nh.from_array(w, "w"), nh.from_array(b, "b")])
    feeds = model_inputs(model, {})
    sess = _session(model, "normal")
    (prod,) = [
        p for p in V.placed(_storage(model, "normal")) if {"MatMul_1", "Conv_1"} & set(p.nodes)
    ]
    assert prod.variant == "fp32"
    # x (>= GPU_CONVERT_MIN_ELEMENTS) is converted on the device for the fp16
    # Relu; r is converted for the fp32 product. The conv case runs NC4HW4
    # (the Relu before it reads a flat input, so it stays flat): r is packed
    # on the way, the product unpacked for the (flat) softmax.
    want = ["fp32->fp16", "fp16->fp32"]
    if kind == "conv":
        want = ["fp32->fp16", "fp16->fp32/nc4hw4", "fp32/nc4hw4->fp32"]
    final = _final(model, "normal")
    convs = V.conversions(final)
    assert [c.split()[0] for c in convs] == want
    assert convs[0].split()[1] == "x"
    # The whole merged op (partials, sum pass, epilogue) runs fp32.
    product = [d for d in V.dispatches(final) if d.kind in ("MatMul", "Conv")]
    assert product and all(d.variant == "fp32" for d in product)
    if kind == "conv":
        assert any("split-K" in d.label for d in product)
    got = sess.run(feeds)["y"]
    np.testing.assert_allclose(got, _ort(model, feeds)["y"], atol=2e-3)


# ---------------------------------------------------------------------------
# BERT
# ---------------------------------------------------------------------------

DIMS = {"batch": 1, "seq": 128}


@pytest.mark.slow
def test_bert_normal(session_device) -> None:  # type: ignore[no-untyped-def]
    """Rules on the encoder (LayerNorms, softmaxes unless fused into
    attention kernels) and accuracy vs onnxruntime for high / normal / low."""
    model = torch_model("bert_encoder")
    feeds = model_inputs(model, DIMS)
    ref = _ort(model, feeds)
    err: dict[str, float] = {}
    for p in ("high", "normal", "low"):
        sess = vknn.Session(model, vknn.Config(dims=DIMS, precision=p, cache_file="off"))
        storage, final = V.stages(model, _target(), DIMS, precision=p)
        convs = [d for d in V.dispatches(final) if d.is_convert]
        if p == "high":
            assert convs == []
        elif p == "low":
            # Only the large float inputs/outputs, converted on the device.
            assert all(V.is_boundary_conversion(final, d) for d in convs), convs
            assert len(convs) == len(V.converts(storage))
        else:
            ops = V.placed(storage)
            args = V.arg_storage(storage)
            kept = [
                (op, "layernorm_io" if op.op.name == "vx.layernorm" else "softmax_io")
                for op in ops
                if op.op.name in ("vx.layernorm", "vx.softmax")
            ]
            for op, rule in kept:
                assert rule in op.rules, op.nodes
                producer = V.producer(op.op.operands[0])
                if producer is None:
                    assert _kept_operand(op.op.operands[0], args), op.nodes
                else:
                    assert rule in [r.data for r in producer.attributes["vkd.fp32_rules"].data]
            assert {r for op in ops for r in op.rules} == {r for _, r in kept}
            print(
                f"normal: {len(kept)} norms/softmaxes, {len(convs)} conversions, "
                f"{sum(op.kept for op in ops)} fp32-kept ops"
            )
            assert sum(op.op.name == "vx.layernorm" for op in ops) == 9
        out = sess.run(feeds)
        errs = []
        for name, value in out.items():
            cos, e, scale = cosine_and_error(ref[name], value)
            print(f"bert {p} {name}: cosine {cos:.8f}, max abs err {e:.3g} (ref {scale:.3g})")
            if p == "normal":
                assert cos >= 0.9999, (name, cos)
            errs.append(e)
        err[p] = max(errs)
    assert err["high"] <= err["normal"] <= err["low"], err


# ---------------------------------------------------------------------------
# Segment boundaries under fp16 storage


def _two_branch_conv(c: int, hw: int) -> onnx.ModelProto:
    """x feeds two convs (one conversion must serve both); y is large, the
    pooled z small."""
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((8, c, 3, 3)) / 6).astype(np.float32)
    w2 = (rng.standard_normal((8, c, 1, 1)) / 2).astype(np.float32)
    nodes = [
        oh.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        oh.make_node("Conv", ["x", "w2"], ["b"]),
        oh.make_node("Add", ["a", "b"], ["y"]),
        oh.make_node("GlobalAveragePool", ["y"], ["z"]),
    ]
    return _model(
        nodes,
        [("x", [1, c, hw, hw])],
        ["y", "z"],
        [nh.from_array(w1, "w1"), nh.from_array(w2, "w2")],
    )


def test_low_converts_large_boundaries_on_device(session_device) -> None:  # type: ignore[no-untyped-def]
    model = _two_branch_conv(4, 32)  # x, y: 4096 / 8192 elements; z: 8
    assert 4 * 32 * 32 >= GPU_CONVERT_MIN_ELEMENTS
    feeds = model_inputs(model, {})
    ref = _ort(model, feeds)
    # Flat storage: only the width changes here (NC4HW4: test_nc4hw4.py).
    sess = _session(model, "low", device_layout="flat")
    final = _final(model, "low", device_layout="flat")
    (x,) = V.uploads(final)
    y, z = V.downloads(final)
    assert x.storage == y.storage == "f32" and (x.shape, y.shape) == (
        (1, 4, 32, 32),
        (1, 8, 32, 32),
    )
    assert z.storage == "f16" and z.shape == (1, 8, 1, 1)  # small: the host converts it
    # One fp32->fp16 of x for both convs, one fp16->fp32 of y.
    assert sorted(V.conversions(final)) == ["fp16->fp32 Add_2:0", "fp32->fp16 x"]
    high = _final(model, "high", device_layout="flat")
    assert len(V.dispatches(final)) == len(V.dispatches(high)) + 2
    out = sess.run(feeds)
    for k in ("y", "z"):
        cos, _, _ = cosine_and_error(ref[k], out[k])
        assert cos >= 0.999, k
        np.testing.assert_allclose(out[k], ref[k], atol=0.05, rtol=0.02)


def test_low_device_conversion_saturates(session_device) -> None:  # type: ignore[no-untyped-def]
    """A boundary input beyond fp16 range converted on the device saturates to
    +-65504 (never inf), like the host path for small inputs."""
    model = _model([oh.make_node("Relu", ["x"], ["y"])], [("x", [1, 8, 32, 32])], ["y"])
    x = np.full((1, 8, 32, 32), 1.0, np.float32)
    x[0, 0, 0, :4] = [1e6, 70000.0, 3.0e38, 65519.0]
    sess = _session(model, "low")
    assert V.conversions(_final(model, "low"))
    y = sess.run({"x": x})["y"]
    assert np.isfinite(y).all()
    np.testing.assert_array_equal(y[0, 0, 0, :5], [65504.0, 65504.0, 65504.0, 65504.0, 1.0])
