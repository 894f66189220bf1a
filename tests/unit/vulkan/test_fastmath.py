"""Fast-math (SPV_KHR_float_controls2) kernels on a real driver.

The suite's device runs under the Khronos validation layer, and Debian's layer
(1.3.239) predates VK_KHR_shader_float_controls2, so that device leaves the
extension off and never runs a fast-math module. These tests therefore open
a second device *without* validation (in-process: a program compiled for it
and run by the runtime; in a subprocess with VKNN_VALIDATION=0: a whole
`vknn.Session`), require float_controls2 there (lavapipe from Mesa 24.1 on
has it; skipped with the reason otherwise), run matmul / conv / softmax /
layernorm with fast math on and off, and check both against numpy, that
exactly the fast-math kernels' SPIR-V is patched, and that the pipelines
were built from those bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.unit.vulkan.harness import graph, lowered, node, vk_session
from vknn.kernels import spirv as S

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


def _model() -> tuple[onnx.ModelProto, dict[int, np.ndarray]]:
    """conv 3x3 + bias -> flatten -> matmul -> layernorm -> softmax, every
    intermediate an output: every arithmetic-heavy family whose results fast
    math could move. Also the arrays by the numpy reference's slots."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    w = (rng.standard_normal((16, 8, 3, 3)) / np.sqrt(72)).astype(np.float32)
    b = (rng.standard_normal(16) * 0.1).astype(np.float32)
    wm = (rng.standard_normal((144, 96)) / 12).astype(np.float32)
    gamma = rng.standard_normal(96).astype(np.float32)
    beta = rng.standard_normal(96).astype(np.float32)
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("Reshape", ["c", "shape"], ["f"]),
        node("MatMul", ["f", "wm"], ["m"]),
        node("LayerNormalization", ["m", "gamma", "beta"], ["l"], axis=1, epsilon=1e-5),
        node("Softmax", ["l"], ["s"], axis=1),
    ]
    inits = {"w": w, "b": b, "wm": wm, "gamma": gamma, "beta": beta,
             "shape": np.array([16, 144], np.int64)}  # fmt: skip
    model = graph(nodes, {"x": (x.shape, F32)}, list(OUTPUTS.values()), inits)
    return model, {0: x, 1: w, 2: b, 5: wm, 7: gamma, 8: beta}


OUTPUTS = {3: "c", 6: "m", 9: "l", 10: "s"}
"""Reference slot -> model output."""


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
    """Compile for exactly this device (fastmath on/off), run the program on
    it: (outputs by reference slot, the program, the pipelines built)."""
    from vknn.runtime.executable import Executable
    from vknn.runtime.program import Program
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.pipeline import Pipelines
    from vknn.serialize import module_to_program

    model, arrays = _model()
    module = lowered(
        model, from_caps(device.caps), precision=precision, fastmath="on" if fastmath else "off"
    )
    program = Program.decode(module_to_program(module))
    pipelines = Pipelines(device)
    exe = Executable(program, device, pipelines)
    try:
        got = exe.run(0, {"x": arrays[0]})
    finally:
        exe.close()
    out = {slot: got[name] for slot, name in OUTPUTS.items()}
    return out, program, pipelines, _numpy_reference(arrays)


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
        out, program, pipelines, ref = _run(raw_device, fastmath, precision)
        for slot, want in ref.items():
            _check(out[slot], want, fp16, f"slot {slot}, fastmath={fastmath}, {precision}")
        results[fastmath] = out
        arith = [k for k in program.kernels if k.shader != "copy"]
        assert arith, "no arithmetic kernel was compiled"
        for k in arith:
            # Patched exactly when asked.
            assert _has_fastmath(k.spirv) is fastmath, k.name
        # What was patched is what the driver got: the pipelines were built
        # from the program's bytes.
        built = {p.key.spirv_hash for p in pipelines.all()}
        assert built == {hashlib.sha256(k.spirv).digest() for k in program.kernels}
        families = {k.shader for k in arith}
        assert {"matmul", "softmax", "layernorm"} <= families, families
        assert any(f.startswith("conv") for f in families), families
    # Both runs agree with each other as closely as with numpy.
    for slot in OUTPUTS:
        _check(results[True][slot], results[False][slot].astype(np.float64), fp16, f"on/off {slot}")


def test_fastmath_request_is_ignored_without_float_controls2(session_device) -> None:  # type: ignore[no-untyped-def]
    """The validated test device (float_controls2 left off under an old layer)
    runs unpatched modules for a fastmath request, with no layer message."""
    model, arrays = _model()
    sess = vk_session(model, fastmath="on", cache_file="off")
    out = sess.run({"x": arrays[0]})
    _check(out["s"], _numpy_reference(arrays)[10], False, "softmax")
    spirvs = [k.spirv for k in sess.program.kernels]
    assert spirvs
    assert all(_has_fastmath(s) is session_device.caps.has_float_controls2 for s in spirvs)


SESSION_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import vknn
    from vknn.kernels import spirv as S
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
    keys = []
    built = set()
    for mode in ("off", "on"):
        sess = vknn.Session(model, vknn.Config(fastmath=mode, cache_file="off"))
        got = sess.run({"x": x})["y"]
        out[mode] = {
            "err": float(np.max(np.abs(got - want))),
            "backends": sorted(set(sess.node_backends().values())),
        }
        for k in sess.program.kernels:
            caps = S.capabilities(S.parse(S.words_of(k.spirv))[1])
            keys.append((mode == "on", k.shader, S.CAP_FLOAT_CONTROLS2 in caps))
            built.add(hashlib.sha256(k.spirv).hexdigest())
        sess.close()
    dev, pipes, why = shared_device()
    # Every kernel's bytes are what a pipeline was built from.
    patched = [p for _, _, p in keys]
    driver = {p.key.spirv_hash.hex() for p in pipes.all()}
    print(json.dumps({
        "fc2": dev.caps.has_float_controls2,
        "validation": dev.validation,
        "name": dev.caps.name,
        "runs": out,
        "keys": keys,
        "patched": patched,
        "built": built <= driver,
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
    assert r["built"], "a kernel's SPIR-V is not what a pipeline was built from"
    modes = {on for on, _, _ in r["keys"]}
    assert modes == {False, True}, r["keys"]
    # Patched kernels are exactly the "on" session's, matmul and softmax
    # among them.
    assert all(patched == on for on, _, patched in r["keys"]), r["keys"]
    on_shaders = {s for on, s, _ in r["keys"] if on}
    assert {"matmul", "softmax"} <= on_shaders, on_shaders


def test_fastmath_config_decision_on_this_driver(raw_device) -> None:  # type: ignore[no-untyped-def]
    assert S.fastmath_enabled("auto", raw_device.caps) is raw_device.caps.has_float_controls2
    assert S.fastmath_enabled("off", raw_device.caps) is False
