"""Fast-math (SPV_KHR_float_controls2) kernels on a real driver.

The suite's device runs under the Khronos validation layer, and Debian's layer
(1.3.239) predates VK_KHR_shader_float_controls2, so that device leaves the
extension off and never runs a fast-math module. These tests therefore open
a second device *without* validation (in-process for the executor, in a
subprocess with VKNN_VALIDATION=0 for a whole `vknn.Session`), require
float_controls2 there (lavapipe from Mesa 24.1 on has it; skipped with the
reason otherwise), run matmul / conv / softmax / layernorm with fast math on
and off, and check both against numpy and that the fast-math pipelines really
were built from patched SPIR-V.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vknn.runtime import spirv as S
from vknn.runtime.plan import Step, TensorSpec

ROOT = Path(__file__).resolve().parents[3]
F32 = "float32"


@pytest.fixture(scope="module")
def raw_device():  # type: ignore[no-untyped-def]
    """A device without the validation layer, with float_controls2 enabled."""
    from vknn.runtime.vulkan.device import Device, VulkanError, vulkan_unavailable_reason

    why = vulkan_unavailable_reason()
    if why is not None:
        pytest.skip(f"no Vulkan device: {why}")
    try:
        dev = Device.open(validation=False)
    except VulkanError as e:
        pytest.skip(f"no usable Vulkan device: {e}")
    if not dev.caps.has_float_controls2:
        name = dev.caps.name
        dev.close()
        pytest.skip(f"{name} has no VK_KHR_shader_float_controls2 (needs Mesa >= 24.1 lavapipe)")
    yield dev
    dev.close()


def _steps() -> tuple[list[Step], dict[int, np.ndarray], dict[int, TensorSpec]]:
    """conv 3x3 + bias -> flatten -> matmul -> layernorm -> softmax: every
    arithmetic-heavy family whose results fast math could move."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    w = (rng.standard_normal((16, 8, 3, 3)) / np.sqrt(72)).astype(np.float32)
    b = (rng.standard_normal(16) * 0.1).astype(np.float32)
    wm = (rng.standard_normal((144, 96)) / 12).astype(np.float32)
    gamma = rng.standard_normal(96).astype(np.float32)
    beta = rng.standard_normal(96).astype(np.float32)
    attrs = {"strides": (1, 1), "pads": (1, 1, 1, 1), "dilations": (1, 1), "group": 1}
    steps = [
        Step("vx.conv", "conv", [0, 1, 2], [3], [TensorSpec("c", (1, 16, 12, 12), F32)], attrs),
        Step("vx.reshape", "flat", [3], [4], [TensorSpec("f", (16, 144), F32)], {}),
        Step("vx.matmul", "mm", [4, 5], [6], [TensorSpec("m", (16, 96), F32)], {}),
        Step(
            "vx.layernorm",
            "ln",
            [6, 7, 8],
            [9],
            [TensorSpec("l", (16, 96), F32)],
            {"axis": 1, "epsilon": 1e-5},
        ),
        Step("vx.softmax", "sm", [9], [10], [TensorSpec("s", (16, 96), F32)], {"axis": 1}),
    ]
    arrays = {0: x, 1: w, 2: b, 5: wm, 7: gamma, 8: beta}
    specs = {0: TensorSpec("x", x.shape, F32)}
    return steps, arrays, specs


def _numpy_reference(arrays: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    x, w, b = (arrays[i].astype(np.float64) for i in (0, 1, 2))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 16, 12, 12))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i : i + 12, j : j + 12], w[:, :, i, j])
    conv += b[None, :, None, None]
    mm = conv.reshape(16, 144) @ arrays[5].astype(np.float64)
    mu = mm.mean(1, keepdims=True)
    var = mm.var(1, keepdims=True)
    ln = (mm - mu) / np.sqrt(var + 1e-5) * arrays[7] + arrays[8]
    e = np.exp(ln - ln.max(1, keepdims=True))
    return {3: conv, 6: mm, 9: ln, 10: e / e.sum(1, keepdims=True)}


def _run(device, fastmath: bool, precision: str):  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.executor import VulkanExecutor

    steps, arrays, specs = _steps()
    consts = {k: v for k, v in arrays.items() if k not in specs}
    with VulkanExecutor(
        device, steps, specs, [3, 6, 9, 10], consts, precision=precision, fastmath=fastmath
    ) as ex:
        out = ex.run({0: arrays[0]})
        modules = {p.key: p.spirv for p in ex.pipelines.all()}
    return out, modules, _numpy_reference(arrays)


def _check(got: np.ndarray, want: np.ndarray, fp16: bool, what: str) -> None:
    g, w = got.astype(np.float64).ravel(), want.ravel()
    assert np.all(np.isfinite(g)), what
    scale = np.max(np.abs(w))
    err = np.max(np.abs(g - w))
    # fp32: reassociation/contraction move the last bits only. fp16 storage:
    # one rounding per stored tensor (2^-11 relative), compounded.
    tol = 2e-2 if fp16 else 1e-4
    assert err <= tol * scale, f"{what}: max error {err:.3g} vs scale {scale:.3g}"


def _has_fastmath(spirv: bytes) -> bool:
    _, insts = S.parse(S.words_of(spirv))
    modes = [ops for op, ops in insts if op == S.OP_EXECUTION_MODE_ID]
    return S.CAP_FLOAT_CONTROLS2 in S.capabilities(insts) and any(
        m[1] == S.MODE_FP_FAST_MATH_DEFAULT for m in modes
    )


@pytest.mark.parametrize("precision", ["high", "low"])
def test_fastmath_kernels_match_numpy(raw_device, precision: str) -> None:  # type: ignore[no-untyped-def]
    fp16 = precision == "low" and raw_device.caps.has_fp16_storage
    results = {}
    for fastmath in (False, True):
        out, modules, ref = _run(raw_device, fastmath, precision)
        for slot, want in ref.items():
            _check(out[slot], want, fp16, f"slot {slot}, fastmath={fastmath}, {precision}")
        results[fastmath] = out
        arith = {k: v for k, v in modules.items() if k.shader != "copy"}
        assert arith, "no arithmetic pipeline was built"
        for key, spirv in arith.items():
            assert key.fastmath is fastmath
            # Patched exactly when asked (and what was patched is what the
            # driver got: `spirv` is the bytes given to vkCreateShaderModule).
            assert _has_fastmath(spirv) is fastmath, key
        families = {k.shader.split("@")[0] for k in arith}
        assert {"matmul", "softmax", "layernorm"} <= families, families
        assert any(f.startswith("conv") for f in families), families
    # Both runs agree with each other as closely as with numpy.
    for slot in (3, 6, 9, 10):
        _check(results[True][slot], results[False][slot].astype(np.float64), fp16, f"on/off {slot}")


def test_fastmath_request_is_ignored_without_float_controls2(clean) -> None:  # type: ignore[no-untyped-def]
    """The validated test device (float_controls2 left off under an old layer)
    builds unpatched modules for a fastmath request, with no layer message."""
    from vknn.runtime.vulkan.executor import VulkanExecutor

    steps, arrays, specs = _steps()
    consts = {k: v for k, v in arrays.items() if k not in specs}
    with VulkanExecutor(clean, steps, specs, [10], consts, fastmath=True) as ex:
        out = ex.run({0: arrays[0]})
        spirvs = [p.spirv for p in ex.pipelines.all()]
    _check(out[10], _numpy_reference(arrays)[10], False, "softmax")
    assert all(_has_fastmath(s) is clean.caps.has_float_controls2 for s in spirvs)


SESSION_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import vknn
    from vknn.runtime import spirv as S
    from vknn.runtime.vulkan.context import shared_device

    rng = np.random.default_rng(3)
    w = (rng.standard_normal((64, 48)) / 8).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["a"]),
            helper.make_node("Softmax", ["a"], ["y"], axis=-1),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 48])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((32, 64)).astype(np.float32)
    a = x.astype(np.float64) @ w + b
    e = np.exp(a - a.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    out = {}
    for mode in ("off", "on"):
        sess = vknn.Session(model, vknn.Config(fastmath=mode))
        got = sess.run({"x": x})["y"]
        out[mode] = {
            "err": float(np.max(np.abs(got - want))),
            "backends": sorted(set(sess.node_backends().values())),
        }
        sess.close()
    dev, pipes, why = shared_device()
    keys = [(p.key.fastmath, p.key.shader) for p in pipes.all()]
    patched = [
        p.key.fastmath
        for p in pipes.all()
        if S.CAP_FLOAT_CONTROLS2 in S.capabilities(S.parse(S.words_of(p.spirv))[1])
    ]
    print(json.dumps({
        "fc2": dev.caps.has_float_controls2,
        "validation": dev.validation,
        "name": dev.caps.name,
        "runs": out,
        "keys": keys,
        "patched": patched,
    }))
    """
)


def test_session_fastmath_on_a_real_driver() -> None:
    """`Config(fastmath=...)` through `vknn.Session` in a process whose shared
    device runs without validation: "on" builds patched pipelines, "off"
    unpatched ones, and both match numpy."""
    from vknn.runtime.vulkan.device import vulkan_unavailable_reason

    why = vulkan_unavailable_reason()
    if why is not None:
        pytest.skip(f"no Vulkan device: {why}")
    env = {**os.environ, "VKNN_VALIDATION": "0", "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-c", SESSION_SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert r["validation"] is False
    if not r["fc2"]:
        pytest.skip(f"{r['name']} has no VK_KHR_shader_float_controls2")
    for mode, run in r["runs"].items():
        assert run["backends"] == ["vulkan"], (mode, run)
        assert run["err"] <= 1e-5, (mode, run)
    modes = {fm for fm, _ in r["keys"]}
    assert modes == {False, True}, r["keys"]
    # Patched pipelines are exactly the "on" session's, matmul and softmax
    # among them.
    assert r["patched"] and all(r["patched"]), r
    assert len(r["patched"]) == sum(fm for fm, _ in r["keys"]), r
    on_shaders = {s.split("@")[0] for fm, s in r["keys"] if fm}
    assert {"matmul", "softmax"} <= on_shaders, on_shaders


def test_fastmath_config_decision_on_this_driver(raw_device) -> None:  # type: ignore[no-untyped-def]
    assert S.fastmath_enabled("auto", raw_device.caps) is raw_device.caps.has_float_controls2
    assert S.fastmath_enabled("off", raw_device.caps) is False
