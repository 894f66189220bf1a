"""Tensor-core kernels on a device: every coopmat family (MatMul, batched and
transposed MatMul, Gemm with C, Conv flat / NC4HW4 / strided / grouped /
split-K, attention with a mask) against a float64 numpy reference of the
fp16-rounded inputs, with shapes off every tile (M, N, K not multiples of
16 / 32), under the validation layer.

Skipped where the test device has no VK_KHR_cooperative_matrix with the
16x16x16 fp16 -> fp32 subgroup shape: Mesa lavapipe (25.0, the CI device)
lists none, and the Debian validation layer (1.3.239) predates the
extension, so `Device` leaves it off under VKNN_VALIDATION=1 anyway. The
device-free half (selection, geometry, SPIR-V validation) is
tests/unit/test_coopmat_selection.py; on the H200, benchmarks/coopmat_check.py
runs the same kinds of cases plus whole models.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.vulkan.harness import graph, node, vk_session
from vknn.kernels import coopmat


@pytest.fixture
def coopmat_device(session_device):  # type: ignore[no-untyped-def]
    from vknn.runtime.target import from_caps

    t = from_caps(session_device.caps)
    if not coopmat.usable(t, "fp16"):
        have = session_device.caps.cooperative_matrix_shapes
        pytest.skip(
            f"{session_device.caps.name} has no usable cooperative matrix "
            f"(16x16x16 f16->f32 subgroup); enabled shapes: {list(have) or 'none'}"
        )
    return session_device


def _f16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float16).astype(np.float64)


def _run(model, feeds, **config):  # type: ignore[no-untyped-def]
    sess = vk_session(model, precision="low", cache_file="off", profiling=True, **config)
    out = list(sess.run(feeds).values())[0]
    kernels = [r.kernel for r in sess.profile(feeds, runs=1)]  # dispatch labels
    return np.asarray(out, np.float64), kernels


def _close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert np.isfinite(got).all()
    err = float(np.max(np.abs(got - want)))
    assert err <= 2e-2 * float(np.max(np.abs(want))), err


RNG = np.random.default_rng(7)


def _r(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((100, 200), (200, 300)),
        ((2, 77, 64), (64, 130)),
        ((1000, 72), (72, 36)),
        ((17, 33), (33, 19)),
    ],  # fmt: skip
)
def test_matmul_bias_relu(coopmat_device, a, b) -> None:  # type: ignore[no-untyped-def]
    x, w, bias = _r(*a), _r(*b, scale=b[0] ** -0.5), _r(b[-1])
    nodes = [node("MatMul", ["x", "w"], ["t"]), node("Add", ["t", "b"], ["u"]),
             node("Relu", ["u"], ["y"])]  # fmt: skip
    model = graph(nodes, {"x": (a, "float32")}, ["y"], {"w": w, "b": bias})
    got, kernels = _run(model, {"x": x})
    assert any("coopmat" in k for k in kernels), kernels
    _close(got, np.maximum(_f16(x) @ _f16(w) + _f16(bias), 0))


@pytest.mark.parametrize("trans_b", [False, True])
def test_batched_matmul(coopmat_device, trans_b: bool) -> None:  # type: ignore[no-untyped-def]
    a, b = _r(3, 45, 19), _r(3, 61, 19) if trans_b else _r(3, 19, 61)
    nodes = [node("MatMul", ["a", "bt" if trans_b else "b"], ["y"])]
    if trans_b:
        nodes.insert(0, node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]))
    model = graph(nodes, {"a": (a.shape, "float32"), "b": (b.shape, "float32")}, ["y"])
    got, kernels = _run(model, {"a": a, "b": b})
    assert any("coopmat" in k for k in kernels), kernels
    bb = np.swapaxes(_f16(b), -1, -2) if trans_b else _f16(b)
    _close(got, _f16(a) @ bb)


def test_gemm_alpha_beta_c(coopmat_device) -> None:  # type: ignore[no-untyped-def]
    a, w, c = _r(50, 90), _r(70, 90, scale=0.1), _r(70)
    model = graph([node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
                  {"a": ((50, 90), "float32")}, ["y"], {"w": w, "c": c})  # fmt: skip
    got, kernels = _run(model, {"a": a})
    assert any("coopmat" in k for k in kernels), kernels
    _close(got, 0.5 * _f16(a) @ _f16(w).T + 2.0 * _f16(c))


def _conv_ref(x, w, b, stride, pad, group):  # type: ignore[no-untyped-def]
    n, _, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i : i + stride * oh : stride,
                    j : j + stride * ow : stride,
                ]
                y[:, g * mg:(g + 1) * mg] += np.einsum(
                    "mc,nchw->nmhw", w[g * mg:(g + 1) * mg, :, i, j], patch
                )  # fmt: skip
    return y + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("layout", ["nc4hw4", "flat"])
@pytest.mark.parametrize(
    ("x", "m", "k", "stride", "pad", "group"),
    [
        ((1, 32, 31, 29), 48, 3, 2, 1, 1),
        ((2, 64, 14, 14), 64, 1, 1, 0, 1),
        ((1, 48, 12, 12), 96, 3, 1, 1, 3),
        ((1, 18, 16, 16), 36, 3, 1, 1, 1),
        ((1, 30, 15, 17), 40, 1, 1, 0, 1),
    ],  # fmt: skip
)
def test_conv_bias_residual_relu(  # type: ignore[no-untyped-def]
    coopmat_device, layout, x, m, k, stride, pad, group, monkeypatch
) -> None:
    monkeypatch.setenv("VKNN_COOPMAT_CONV", "1")  # tensor-core convs are not the default
    xv = _r(*x)
    cg = x[1] // group
    w, b = _r(m, cg, k, k, scale=(cg * k * k) ** -0.5), _r(m)
    ref = _conv_ref(_f16(xv), _f16(w), _f16(b), stride, pad, group)
    r = _r(*ref.shape)
    attrs = {"kernel_shape": [k, k], "strides": [stride] * 2, "pads": [pad] * 4, "group": group}
    nodes = [node("Conv", ["x", "w", "b"], ["t"], **attrs), node("Add", ["t", "r"], ["u"]),
             node("Relu", ["u"], ["y"])]  # fmt: skip
    model = graph(nodes, {"x": (x, "float32"), "r": (ref.shape, "float32")}, ["y"],
                  {"w": w, "b": b})  # fmt: skip
    got, kernels = _run(model, {"x": xv, "r": r}, device_layout=layout)
    assert any("Conv coopmat" in k for k in kernels), kernels
    _close(got, np.maximum(ref + _f16(r), 0))


@pytest.mark.parametrize(("seq", "dh", "mask"), [(77, 32, True), (50, 30, False), (40, 128, True)])
def test_attention(coopmat_device, seq: int, dh: int, mask: bool) -> None:  # type: ignore[no-untyped-def]
    shape = (2, 2, seq, dh)
    q, k, v = _r(*shape), _r(*shape), _r(*shape)
    scale = np.array(dh**-0.5, np.float32)
    m = np.zeros((2, 1, 1, seq), np.float32)
    m[..., seq - seq // 3 :] = -10000.0
    nodes = [
        node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "kt"], ["s"]),
        node("Mul", ["s", "scale"], ["ss"]),
    ]
    inits = {"scale": scale}
    s = (_f16(q) @ np.swapaxes(_f16(k), -1, -2)) * float(scale)
    if mask:
        nodes.append(node("Add", ["ss", "mask"], ["sm"]))
        inits["mask"] = m
        s = s + m
    nodes += [node("Softmax", ["sm" if mask else "ss"], ["p"], axis=-1),
              node("MatMul", ["p", "v"], ["y"])]  # fmt: skip
    spec = (shape, "float32")
    model = graph(nodes, {"q": spec, "k": spec, "v": spec}, ["y"], inits)
    got, kernels = _run(model, {"q": q, "k": k, "v": v})
    assert any("Attention, coopmat" in k for k in kernels), kernels
    e = np.exp(s - s.max(-1, keepdims=True))
    _close(got, (e / e.sum(-1, keepdims=True)) @ _f16(v))
