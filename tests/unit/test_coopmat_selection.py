"""Tensor-core kernels, device-free: which targets and precisions select the
cooperative-matrix kernels, what they record, that their shaders compile
and validate, and that targets without cooperative matrices (and `high`
anywhere) record exactly what the scalar kernels recorded before.

Correctness on a device: tests/unit/vulkan/test_coopmat_shaders.py (where
the device has VK_KHR_cooperative_matrix) and benchmarks/coopmat_check.py
(the H200)."""

from __future__ import annotations

import math
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vknn.compiler import LoweringOptions, compile_module, graph_pipeline, import_any, lower
from vknn.kernels import coopmat
from vknn.kernels.shaders import compile_shader, kernel_spirv, register_variant, validate
from vknn.kernels.targets import target
from vknn.runtime.target import Target, from_caps, unmet
from vknn.runtime.vulkan.caps import DeviceCaps

NVIDIA = target("nvidia")
NO_COOPMAT = NVIDIA.with_(cooperative_matrix=())


def _model(nodes: list, inputs: dict, inits: dict) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
    outs = [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)]
    init = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
    g = helper.make_graph(nodes, "g", ins, outs, init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def matmul_model() -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]  # fmt: skip
    return _model(nodes, {"a": (2, 50, 64)}, {"w": _rand(64, 96)})


def gemm_model() -> onnx.ModelProto:
    node = helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="fc", transB=1, beta=2.0)
    return _model([node], {"a": (100, 200)}, {"w": _rand(300, 200), "c": _rand(300)})


def conv_model() -> onnx.ModelProto:
    conv = helper.make_node(
        "Conv", ["x", "w", "b"], ["t"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
    )
    nodes = [conv, helper.make_node("Relu", ["t"], ["y"], name="relu")]
    return _model(nodes, {"x": (1, 32, 20, 20)}, {"w": _rand(48, 32, 3, 3), "b": _rand(48)})


def attention_model() -> onnx.ModelProto:
    shape = (1, 4, 64, 32)
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale"),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    scale = np.array(0.125, np.float32)
    return _model(nodes, {"q": shape, "k": shape, "v": shape}, {"scale": scale})


MODELS = {
    "matmul": (matmul_model, "matmul_coopmat"),
    "gemm": (gemm_model, "matmul_coopmat"),
    "attention": (attention_model, "attention_coopmat"),
}
"""Families recorded by default at fp16 storage on a coopmat target. Convs
record the scalar GEMM unless the autotuner (or a pinned vkd.config) picks
conv_coopmat: as the default it was slower on the H200 (ADR 0009)."""


def _vkd(model: onnx.ModelProto, precision: str, tgt: Target, layout: str = "nc4hw4") -> str:
    module = import_any(model)
    graph_pipeline(module)
    lower(module, LoweringOptions(precision=precision, device_layout=layout), tgt)
    return str(module)


def _shaders(text: str) -> set[str]:
    return set(re.findall(r'vkd\.kernel @\S+ shader "([^"]+)"', text))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_nvidia_low_records_the_coopmat_kernel(name: str) -> None:
    build, family = MODELS[name]
    text = _vkd(build(), "low", NVIDIA)
    assert family in _shaders(text), _shaders(text)
    # The printed module names the tensor-core dispatches.
    assert re.search(r'vkd\.dispatch @\S*coopmat\S*\(.*label "[^"]*coopmat', text)


@pytest.mark.parametrize("name", ["matmul", "gemm"])
def test_flat_layout_also_uses_coopmat(name: str) -> None:
    build, family = MODELS[name]
    assert family in _shaders(_vkd(build(), "low", NVIDIA, layout="flat"))


@pytest.mark.parametrize("layout", ["nc4hw4", "flat"])
def test_convs_default_to_the_scalar_gemm_with_coopmat_as_candidates(layout: str) -> None:
    from vknn.kernels.conv import conv_space
    from vknn.runtime.plan import Step, TensorSpec

    assert "conv_coopmat" not in _shaders(_vkd(conv_model(), "low", NVIDIA, layout=layout))
    x, w = TensorSpec("x", (1, 64, 28, 28), "float32"), TensorSpec("w", (64, 64, 3, 3), "float32")
    y = TensorSpec("y", (1, 64, 28, 28), "float32")
    attrs = {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    step = Step("vx.conv", "c", [0, 1], [2], [y], attrs)
    space = conv_space(step, NVIDIA, [x, w], "fp16", True)
    assert space.default.get("algo") != "coopmat"
    assert any(c.get("algo") == "coopmat" for c in space.fast), "autotune fast measures it"
    assert any(c.get("algo") == "coopmat" for c in space.thorough)


@pytest.mark.parametrize(
    ("precision", "tgt"),
    [
        ("high", NVIDIA),
        ("low", target("lavapipe")),
        ("low", target("generic")),
        ("low", NO_COOPMAT),
    ],  # fmt: skip
    ids=["nvidia-high", "lavapipe-low", "generic-low", "nvidia-without-coopmat-low"],
)
def test_no_coopmat_at_high_or_without_cooperative_matrices(precision: str, tgt: Target) -> None:
    for build, _ in MODELS.values():
        assert "coopmat" not in _vkd(build(), precision, tgt)


def _program(model: onnx.ModelProto, precision: str, tgt: Target) -> dict:
    prog = compile_module(import_any(model), LoweringOptions(precision=precision), tgt)
    return {k: v for k, v in prog.items() if k not in ("target", "compiled_for")}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_cooperative_matrices_change_nothing_at_high(name: str) -> None:
    """The coopmat paths are inert unless chosen: at `high`, a target with
    cooperative matrices compiles to the same program (kernels, SPIR-V,
    commands, weights) as the same target without them."""
    build, _ = MODELS[name]
    assert _program(build(), "high", NVIDIA) == _program(build(), "high", NO_COOPMAT)


def test_usable_needs_the_shape_fp16_storage_and_subgroups() -> None:
    assert coopmat.usable(NVIDIA, "fp16")
    assert not coopmat.usable(NVIDIA, "fp32")
    assert not coopmat.usable(NO_COOPMAT, "fp16")
    assert not coopmat.usable(NVIDIA.with_(has_fp16_arith=False), "fp16")
    assert not coopmat.usable(NVIDIA.with_(subgroup_size=1), "fp16")
    # Only the fp16 -> fp32 16x16x16 subgroup shape counts.
    f16acc = tuple(s for s in NVIDIA.cooperative_matrix if s[5] != "f32")
    assert not coopmat.usable(NVIDIA.with_(cooperative_matrix=f16acc), "fp16")


def test_tiles_fit_shared_memory_and_the_chunk_registers() -> None:
    for t in (NVIDIA, NVIDIA.with_(max_compute_shared_memory_size=32768),
              NVIDIA.with_(subgroup_size=64)):  # fmt: skip
        tiles = coopmat.tiles(t, 1000, 1000, 1)
        assert tiles
        for bm, bn in tiles:
            assert coopmat.shared_bytes(bm, bn) <= t.max_compute_shared_memory_size
            for side in (bm, bn):
                chunks = side * coopmat.BK // 4 / coopmat.local_size(t)
                assert chunks == int(chunks) and 1 <= chunks <= coopmat.MAX_CHUNKS
    assert (128, 128) not in coopmat.tiles(NVIDIA.with_(max_compute_shared_memory_size=32768),
                                           1000, 1000, 1)  # fmt: skip


def test_tuning_spaces_list_coopmat_configs() -> None:
    from vknn.kernels.matmul import matmul_space
    from vknn.runtime.plan import Step, TensorSpec

    a, w = TensorSpec("a", (512, 256), "float32"), TensorSpec("w", (256, 384), "float32")
    out = TensorSpec("y", (512, 384), "float32")
    step = Step("vx.matmul", "mm", [0, 1], [2], [out])
    space = matmul_space(step, NVIDIA, [a, w], "fp16", True)
    assert space.default["algo"] == "coopmat"
    cm = [c for c in space.thorough if c.get("algo") == "coopmat"]
    assert len(cm) >= len(coopmat.tiles(NVIDIA, 512, 384, 1))
    assert any("algo" not in c for c in space.fast), "the scalar kernel stays a candidate"
    assert all(c in space.thorough for c in space.fast)
    for variant, tgt in (("fp32", NVIDIA), ("fp16", NO_COOPMAT)):
        space = matmul_space(step, tgt, [a, w], variant, True)
        assert not any(c.get("algo") == "coopmat" for c in space.thorough)


def test_dispatch_geometry_covers_the_product() -> None:
    """Gemm 100 x 300 x 200: the grid covers M and N with the tiles the spec
    constants name, no more than one partial tile per side."""
    text = _vkd(gemm_model(), "low", NVIDIA)
    spec = re.search(r'shader "matmul_coopmat" fp16 local_size \[(\d+), 1, 1\].*?spec \[[\d, ]+\] '
                     r'= \[(\d+), (\d+),', text)  # fmt: skip
    assert spec is not None
    ls, bm, bn = map(int, spec.groups())
    assert ls == coopmat.local_size(NVIDIA) == 4 * NVIDIA.subgroup_size
    groups = re.search(r"vkd\.dispatch @matmul_coopmat\S*\(.*groups \[(\d+), (\d+), (\d+)\]", text)
    assert groups is not None
    gx, gy, gz = map(int, groups.groups())
    assert gx == math.ceil(300 / bn) and gy == math.ceil(100 / bm)
    split = re.search(r"split-K x(\d+)", text)
    assert gz == (int(split.group(1)) if split else 1)


COOPMAT_FAMILIES = ("matmul_coopmat", "conv_coopmat", "attention_coopmat")  # all compile


@pytest.mark.parametrize("family", COOPMAT_FAMILIES)
def test_coopmat_shaders_compile_and_validate(family: str) -> None:
    """Every coopmat family and variant (and split-K build) compiles with
    glslang and passes spirv-val, also after the fast-math / RTE patches."""
    names = [family]
    if family != "attention_coopmat":
        names.append(register_variant(family, {"VKNN_SPLITK": "1"}))
    for name in names:
        for variant in ("fp32", "fp16", "fp16rte"):
            spirv = compile_shader(name, variant)
            assert spirv[:4] == b"\x03\x02\x23\x07"
        patched = kernel_spirv(name, "fp16", fastmath=True, rte_fp16=True,
                               fastmath_types=("f32", "f16"))  # fmt: skip
        validate(patched, f"{name} (patched)")


def test_device_caps_carry_the_shapes_into_from_device(monkeypatch: pytest.MonkeyPatch) -> None:
    caps = DeviceCaps.h200_like()
    monkeypatch.delenv("VKNN_COOPMAT", raising=False)
    t = from_caps(caps)
    assert set(t.cooperative_matrix) == set(NVIDIA.cooperative_matrix)
    assert coopmat.usable(t, "fp16")
    assert unmet(NVIDIA, caps) is None or "cooperative" not in unmet(NVIDIA, caps)
    # A device without them cannot run a program compiled with them.
    why = unmet(t, caps.with_(cooperative_matrix_shapes=()))
    assert why is not None and "cooperative matrix 16x16x16" in why
    # Their kernels assume the target's subgroup size exactly.
    why = unmet(t, caps.with_(subgroup_size=64))
    assert why is not None and "exactly 32 lanes" in why
    monkeypatch.setenv("VKNN_COOPMAT", "0")
    assert from_caps(caps).cooperative_matrix == ()
    assert DeviceCaps.lavapipe_like().cooperative_matrix_shapes == ()
    assert target("lavapipe").cooperative_matrix == target("generic").cooperative_matrix == ()


def test_target_round_trips_through_the_vkd_attribute() -> None:
    from vknn.transforms.target_option import target_attr, target_from_attr

    assert target_from_attr(target_attr(NVIDIA)) == NVIDIA
    assert Target.from_dict(NVIDIA.to_dict()) == NVIDIA
