"""The ops today's transformer and vision exports need on Vulkan (issue 15):
IsNaN / IsInf, GatherND, GatherElements, ScatterElements,
InstanceNormalization, GroupNormalization, Gather with negative indices, and
the dynamo exporter's SDPA decomposition with its IsNaN guard. Each small
ONNX graph runs through the real pipeline on the test device (lavapipe
here, validation layer on, zero messages allowed) with the CPU fallback
off, every node asserted on Vulkan, and is compared with onnxruntime.
Index movement is exact in every precision (low: against onnxruntime on the
fp16-rounded inputs); normalizations are within fp32 rounding (low: cosine)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import vknn
from tests.unit.vulkan.harness import check, cpu, graph, lowered, node, shaders, vk_session

PRECISIONS = ["high", "low"]


def _typed(model: onnx.ModelProto, dtype: int = onnx.TensorProto.FLOAT) -> onnx.ModelProto:
    """Outputs ONNX's inference left untyped (function ops) get `dtype`."""
    for o in model.graph.output:
        if o.type.tensor_type.elem_type == onnx.TensorProto.UNDEFINED:
            o.type.tensor_type.elem_type = dtype
    return model


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _fp16(x: np.ndarray, precision: str) -> np.ndarray:
    if precision == "low" and x.dtype == np.float32:
        y = np.where(np.isinf(x), x, np.clip(x, -65504, 65504))  # inf stays inf
        return y.astype(np.float16).astype(np.float32)
    return x


def _on_vulkan(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], precision: str = "high", **cfg: Any
) -> tuple[list[np.ndarray], Any]:
    """Outputs on Vulkan with every node there (0 CPU nodes), and the session."""
    sess = vk_session(model, precision=precision, **cfg)
    backends = sess.node_backends()
    assert backends and set(backends.values()) == {"vulkan"}, backends
    assert sess.fallback_reasons() == {}
    out = sess.run(feeds)
    return [out[o.name] for o in model.graph.output], sess


def _exact(model: onnx.ModelProto, feeds: dict[str, np.ndarray], precision: str) -> None:
    got, _ = _on_vulkan(model, feeds, precision)
    want = _ort(model, {k: _fp16(v, precision) for k, v in feeds.items()})
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_isnan_isinf(session_device, precision: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 33)).astype(np.float32)
    x[0, 0, :3] = np.nan
    x[1, 2, 5] = -np.nan
    # +-inf survives fp16 storage (finite overflow saturates, inf stays).
    x[2, 1, 7], x[2, 3, 0] = np.inf, -np.inf
    nodes = [
        node("IsNaN", ["x"], ["nan"]),
        node("IsInf", ["x"], ["inf"]),
        node("IsInf", ["x"], ["pos"], detect_negative=0),
        node("IsInf", ["x"], ["neg"], detect_positive=0),
    ]
    outs = ["nan", "inf", "pos", "neg"]
    _exact(graph(nodes, {"x": ((3, 4, 33), "float32")}, outs), {"x": x}, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(
    ("data", "idx", "axis"),
    [
        ((2, 3, 7), (2, 3, 4), -1),  # relative-position attention: shorter along the axis
        ((4, 5), (2, 5), 0),
        ((3, 6, 5), (2, 2, 3), 1),  # smaller on every axis
        ((1, 128), (1, 128), 1),  # position ids, dynamo's inputs_embeds export
    ],
)
def test_gather_elements(
    session_device, precision: str, data: tuple[int, ...], idx: tuple[int, ...], axis: int
) -> None:
    rng = np.random.default_rng(1)
    dim = data[axis]
    feeds = {
        "x": rng.standard_normal(data).astype(np.float32),
        "i": rng.integers(-dim, dim, idx).astype(np.int64),
    }
    model = graph(
        [node("GatherElements", ["x", "i"], ["y"], axis=axis)],
        {"x": (data, "float32"), "i": (idx, "int64")},
        ["y"],
    )
    _exact(model, feeds, precision)


def test_gather_elements_of_expanded_constant(session_device) -> None:
    """The BERT-style export: data an Expand-ed constant, indices from a Slice."""
    pos = np.arange(512, dtype=np.int64).reshape(1, 512)
    model = graph(
        [
            node("Expand", ["pos", "shape"], ["data"]),
            node("Slice", ["pos", "starts", "ends", "axes"], ["idx"]),
            node("GatherElements", ["data", "idx"], ["y"], axis=1),
            node("Add", ["y", "x"], ["z"]),
        ],
        {"x": ((1, 128), "int64")},
        ["z"],
        {
            "pos": pos,
            "shape": np.array([1, 512], np.int64),
            "starts": np.array([3], np.int64),
            "ends": np.array([131], np.int64),
            "axes": np.array([1], np.int64),
        },
    )
    x = np.arange(128, dtype=np.int64).reshape(1, 128)
    _exact(model, {"x": x}, "high")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(
    ("data", "idx", "axis"), [((2, 3, 7), (2, 3, 4), -1), ((4, 5), (2, 5), 0), ((3, 6), (3, 1), 1)]
)
def test_scatter_elements(
    session_device, precision: str, data: tuple[int, ...], idx: tuple[int, ...], axis: int
) -> None:
    rng = np.random.default_rng(2)
    dim = data[axis]
    # Distinct targets along the axis (repeated ones are undefined in ONNX).
    perm = np.argsort(rng.random((*idx[:axis % len(data)], dim, *idx[axis % len(data) + 1 :])),
                      axis=axis)  # fmt: skip
    i = np.take(perm, range(idx[axis]), axis=axis)
    i = np.where(rng.random(i.shape) < 0.5, i - dim, i).astype(np.int64)
    feeds = {
        "x": rng.standard_normal(data).astype(np.float32),
        "i": i,
        "u": rng.standard_normal(idx).astype(np.float32),
    }
    model = graph(
        [node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis)],
        {"x": (data, "float32"), "i": (idx, "int64"), "u": (idx, "float32")},
        ["y"],
    )
    _exact(model, feeds, precision)


def test_scatter_elements_reduction_stays_on_cpu(session_device) -> None:
    model = graph(
        [node("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="add")],
        {"x": ((4, 3), "float32"), "i": ((2, 3), "int64"), "u": ((2, 3), "float32")},
        ["y"],
    )
    sess = vk_session(model, allow_cpu_fallback=True)
    (reason,) = sess.fallback_reasons().values()
    assert "reduction 'add'" in reason
    feeds = {
        "x": np.ones((4, 3), np.float32),
        "i": np.array([[0, 1, 2], [0, 1, -1]], np.int64),
        "u": np.full((2, 3), 2.0, np.float32),
    }
    np.testing.assert_array_equal(sess.run(feeds)["y"], _ort(model, feeds)[0])


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(
    ("data", "idx", "batch_dims"),
    [
        ((2, 3, 5), (4, 2), 0),
        ((2, 3, 5), (2, 4, 1), 1),
        ((2, 3, 5), (3, 3), 0),
        ((4, 6), (4, 1), 0),
    ],
)
def test_gather_nd(
    session_device, precision: str, data: tuple[int, ...], idx: tuple[int, ...], batch_dims: int
) -> None:
    rng = np.random.default_rng(3)
    k = idx[-1]
    dims = np.array(data[batch_dims : batch_dims + k])
    i = (rng.integers(0, 1 << 20, idx) % dims) - rng.integers(0, 2, idx) * dims
    feeds = {"x": rng.standard_normal(data).astype(np.float32), "i": i.astype(np.int64)}
    model = graph(
        [node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)],
        {"x": (data, "float32"), "i": (idx, "int64")},
        ["y"],
    )
    _exact(model, feeds, precision)


def test_gather_nd_of_cast_mask(session_device) -> None:
    """The mask path of the dynamo exports: GatherND(Cast(attention_mask))."""
    model = graph(
        [
            node("Cast", ["mask"], ["m"], to=onnx.TensorProto.FLOAT),
            node("GatherND", ["m", "i"], ["y"], batch_dims=1),
        ],
        {"mask": ((2, 8), "int64")},
        ["y"],
        {"i": np.array([[[0], [7], [-1]], [[3], [4], [5]]], np.int64)},
    )
    mask = np.array([[1] * 8, [1] * 5 + [0] * 3], np.int64)
    _exact(model, {"mask": mask}, "high")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_gather_negative_indices(session_device, precision: str) -> None:
    """Dynamic negative indices count from the end, as onnxruntime does."""
    rng = np.random.default_rng(4)
    model = graph(
        [node("Gather", ["x", "i"], ["y"], axis=1)],
        {"x": ((2, 9, 3), "float32"), "i": ((5,), "int64")},
        ["y"],
    )
    feeds = {
        "x": rng.standard_normal((2, 9, 3)).astype(np.float32),
        "i": np.array([-9, -1, 0, 8, -4], np.int64),
    }
    _exact(model, feeds, precision)


def test_gather_out_of_range_stays_inside(session_device) -> None:
    """An out-of-range dynamic index is clamped on the device: no read past
    the tensor (the validation layer and the result say so), where
    onnxruntime raises."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    model = graph(
        [node("Gather", ["x", "i"], ["y"], axis=0)],
        {"x": ((4, 3), "float32"), "i": ((2,), "int64")},
        ["y"],
    )
    (y,), _ = _on_vulkan(model, {"x": x, "i": np.array([7, -9], np.int64)})
    np.testing.assert_array_equal(y, x[[3, 0]])
    with pytest.raises(Exception, match="(?i)out of (range|bounds)|indices"):
        _ort(model, {"x": x, "i": np.array([7, -9], np.int64)})


_OOB_CASES = {
    # op: (attrs, x shape, indices) with indices past both ends, a 64-bit one
    # past 32 bits, and in-range negatives that wrap as in onnxruntime.
    "Gather": ({"axis": 1}, (2, 5, 3), [[7, -9], [-1, 2**40], [-5, 4]]),
    "GatherElements": ({"axis": 1}, (2, 5), [[7, -9, -1, 0], [-(2**40), 4, -5, 9]]),
    "GatherND": ({}, (4, 5), [[0, 9], [-1, -2], [7, -8], [2**33, 1]]),
}


@pytest.mark.parametrize("op", list(_OOB_CASES))
def test_dynamic_out_of_range_index_same_on_every_backend(session_device, op: str) -> None:
    """A dynamic out-of-range index gives the same result on the CPU backend
    as on Vulkan (both clamp into the axis; the device never reads outside a
    tensor), while in-range negatives wrap from the end as onnxruntime does."""
    attrs, shape, raw = _OOB_CASES[op]
    ix = np.array(raw, np.int64)
    model = graph(
        [node(op, ["x", "i"], ["y"], **attrs)],
        {"x": (shape, "float32"), "i": (ix.shape, "int64")},
        ["y"],
    )
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    (y,), _ = _on_vulkan(model, {"x": x, "i": ix})
    want = cpu(model, {"x": x, "i": ix})["y"]
    np.testing.assert_array_equal(y, want)
    # In range, both agree with onnxruntime (negatives wrap).
    inside = np.where(ix < 0, -1, np.minimum(ix, 1))
    (y,), _ = _on_vulkan(model, {"x": x, "i": inside})
    np.testing.assert_array_equal(y, _ort(model, {"x": x, "i": inside})[0])
    np.testing.assert_array_equal(cpu(model, {"x": x, "i": inside})["y"], y)


@pytest.mark.parametrize("op", ["Gather", "GatherElements"])
def test_constant_out_of_range_index_is_an_error(session_device, op: str) -> None:
    """A constant index out of range is known at compile time: the node is
    not given to a clamping kernel, and running it is a one-line error, where
    onnxruntime raises too."""
    model = graph(
        [node(op, ["x", "i"], ["y"], axis=1)],
        {"x": ((2, 4), "float32")},
        ["y"],
        {"i": np.array([[0, 4]] * 2 if op == "GatherElements" else [0, 4], np.int64)},
    )
    sess = vk_session(model, allow_cpu_fallback=True)
    assert list(sess.node_backends().values()) != ["vulkan"]
    with pytest.raises(vknn.errors.VknnError, match="out of (range|bounds)"):
        sess.run({"x": np.ones((2, 4), np.float32)})


@pytest.mark.parametrize("precision", PRECISIONS)
def test_instance_norm(session_device, precision: str) -> None:
    rng = np.random.default_rng(5)
    model = graph(
        [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
        {"x": ((2, 6, 5, 7), "float32")},
        ["y"],
        {
            "s": rng.standard_normal(6).astype(np.float32),
            "b": rng.standard_normal(6).astype(np.float32),
        },
    )
    x = (rng.standard_normal((2, 6, 5, 7)) * 3 + 1).astype(np.float32)
    (got,), _ = _on_vulkan(model, {"x": x}, precision)
    check(got, _ort(model, {"x": x})[0], precision == "low")


@pytest.mark.parametrize(("opset", "per"), [(18, "group"), (21, "channel")])
def test_group_norm(session_device, opset: int, per: str) -> None:
    rng = np.random.default_rng(6)
    c, g = 8, 4
    n = g if per == "group" else c
    model = _typed(
        graph(
            [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=g, epsilon=1e-4)],
            {"x": ((2, c, 3, 5), "float32")},
            ["y"],
            {
                "s": rng.standard_normal(n).astype(np.float32),
                "b": rng.standard_normal(n).astype(np.float32),
            },
            opset=opset,
        )
    )
    x = rng.standard_normal((2, c, 3, 5)).astype(np.float32)
    (got,), _ = _on_vulkan(model, {"x": x})
    check(got, _ort(model, {"x": x})[0], False)


@pytest.mark.parametrize(
    ("shape", "axes"), [((1, 4, 5, 6), None), ((2, 3, 8), [2]), ((2, 3, 4, 5), [1, 2, 3])]
)
def test_mean_variance_normalization(
    session_device, shape: tuple[int, ...], axes: list[int] | None
) -> None:
    rng = np.random.default_rng(10)
    attrs = {} if axes is None else {"axes": axes}
    model = _typed(
        graph(
            [node("MeanVarianceNormalization", ["x"], ["y"], **attrs)],
            {"x": (shape, "float32")},
            ["y"],
        )
    )
    x = (rng.standard_normal(shape) * 2 + 3).astype(np.float32)
    (got,), _ = _on_vulkan(model, {"x": x})
    check(got, _ort(model, {"x": x})[0], False)


def test_group_norm_as_exported(session_device) -> None:
    """torch's GroupNorm export: Reshape -> InstanceNormalization (ones, zeros
    over the groups) -> Reshape -> Mul -> Add."""
    rng = np.random.default_rng(7)
    c, g = 8, 2
    model = graph(
        [
            node("Reshape", ["x", "grouped"], ["xg"]),
            node("InstanceNormalization", ["xg", "ones", "zeros"], ["ng"], epsilon=1e-5),
            node("Reshape", ["ng", "full"], ["n"]),
            node("Mul", ["n", "gamma"], ["m"]),
            node("Add", ["m", "beta"], ["y"]),
        ],
        {"x": ((2, c, 4, 4), "float32")},
        ["y"],
        {
            "grouped": np.array([2, g, -1], np.int64),
            "ones": np.ones(g, np.float32),
            "zeros": np.zeros(g, np.float32),
            "full": np.array([2, c, 4, 4], np.int64),
            "gamma": rng.standard_normal((c, 1, 1)).astype(np.float32),
            "beta": rng.standard_normal((c, 1, 1)).astype(np.float32),
        },
    )
    x = rng.standard_normal((2, c, 4, 4)).astype(np.float32)
    (got,), _ = _on_vulkan(model, {"x": x})
    check(got, _ort(model, {"x": x})[0], False)


# ---------------------------------------------------------------------------
# The dynamo exporter's SDPA decomposition
# ---------------------------------------------------------------------------


def sdpa_model(bool_mask: bool, seq: int | str = 8) -> onnx.ModelProto:
    """softmax(Q K^T * scale + mask) V with the exporter's guard
    Where(IsNaN(p), 0, p); the mask additive (float) or boolean (-inf where
    false, built in the graph as the exporters do)."""
    nodes = [
        node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "kt"], ["s0"]),
        node("Mul", ["s0", "scale"], ["s1"]),
    ]
    if bool_mask:
        nodes.append(node("Where", ["mask", "zero", "ninf"], ["add_mask"]))
    nodes += [
        node("Add", ["s1", "add_mask" if bool_mask else "mask"], ["s2"]),
        node("Softmax", ["s2"], ["p"], axis=-1),
        node("IsNaN", ["p"], ["nan"]),
        node("Where", ["nan", "zero", "p"], ["p2"]),
        node("MatMul", ["p2", "v"], ["y"]),
    ]
    qkv = (1, 2, seq, 16)
    ins = {n: (qkv, "float32") for n in "qkv"}
    ins["mask"] = ((1, 1, seq, seq), "bool" if bool_mask else "float32")
    inits = {
        "scale": np.float32(0.25),
        "zero": np.float32(0.0),
        "ninf": np.float32(-np.inf),
    }
    model = graph(nodes, ins, ["y"], inits, opset=18)
    return model


def _sdpa_feeds(bool_mask: bool, seq: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    feeds = {n: rng.standard_normal((1, 2, seq, 16)).astype(np.float32) for n in "qkv"}
    keep = np.tril(np.ones((seq, seq), bool))
    keep[0, :] = False  # a fully masked row: NaN from softmax, 0 after the guard
    keep = keep.reshape(1, 1, seq, seq)
    feeds["mask"] = keep if bool_mask else np.where(keep, 0, -np.inf).astype(np.float32)
    return feeds


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("bool_mask", [False, True])
def test_sdpa_decomposition_on_vulkan(session_device, bool_mask: bool, precision: str) -> None:
    """Also at fp16 storage: the -inf of the mask stays -inf (only finite
    overflow saturates), so the fully masked row is 0, not uniform."""
    model = sdpa_model(bool_mask)
    feeds = _sdpa_feeds(bool_mask)
    (got,), _ = _on_vulkan(model, feeds, precision)
    want = _ort(model, feeds)[0]
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got[0, :, 0], 0)  # the fully masked row
    check(got, want, precision != "high")


@pytest.mark.parametrize("bool_mask", [False, True])
def test_sdpa_guard_is_folded_into_the_softmax(bool_mask: bool) -> None:
    """No IsNaN or Where dispatch is left: the softmax stores 0 for NaN."""
    kinds = shaders(lowered(sdpa_model(bool_mask)))
    assert "float_test" not in kinds and kinds.count("softmax") == 1, kinds
    assert kinds.count("select") == (1 if bool_mask else 0), kinds  # the mask's own Where


@pytest.mark.parametrize("precision", PRECISIONS)
def test_softmax_of_a_masked_row_is_nan_unguarded(session_device, precision: str) -> None:
    """Without the guard a row of all -inf stays NaN (as onnxruntime), so an
    exporter's guard that is not folded still sees it."""
    x = np.random.default_rng(9).standard_normal((2, 3, 40)).astype(np.float32)
    x[0, 1, :] = -np.inf
    model = graph(
        [node("Softmax", ["x"], ["p"], axis=-1), node("IsNaN", ["p"], ["n"])],
        {"x": ((2, 3, 40), "float32")},
        ["n"],
    )
    (n,), _ = _on_vulkan(model, {"x": x}, precision)
    np.testing.assert_array_equal(n, _ort(model, {"x": x})[0])
    assert n[0, 1].all() and n.sum() == 40


def test_sdpa_dynamic_seq_has_no_islands(session_device) -> None:
    """With a dynamic sequence axis the whole layer still runs on Vulkan: no
    small GPU islands between CPU segments (issue 15's island folding)."""
    model = sdpa_model(True, seq="seq")
    feeds = _sdpa_feeds(True, seq=12)
    (got,), sess = _on_vulkan(model, feeds, dims={"seq": 12})
    check(got, _ort(model, feeds)[0], False)
