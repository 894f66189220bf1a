"""Whole models on the Vulkan device (lavapipe in CI) against onnxruntime.

Issue 5's bar: the nine light models, MobileNetV2, ResNet-18 and the
BERT-style encoder run with zero ops on the CPU; `high` precision: cosine >=
0.99999 and max abs error <= 1e-3 * max|ref|; `low`: cosine >= 0.999, no
inf/NaN. The validation layer is on and must stay silent.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import vknn
from tests.unit.conftest import LIGHT_MODELS
from tests.unit.models import cosine_and_error, light_model, model_inputs, torch_model
from tests.unit.program_steps import cpu_steps

DIMS = {"batch": 1, "seq": 128}
MODELS = [*LIGHT_MODELS, "mobilenet_v2", "resnet18", "bert_encoder"]
# fp16 storage on random-weight CNNs: deep ones overflow fp16's range (the
# activations of ResNet-50 with random BatchNorm statistics pass 65504), so
# `low` is checked on the models whose activations stay in range.
LOW_MODELS = ["light_squeezenet.onnx", "mobilenet_v2", "resnet18", "bert_encoder"]


def _model(name: str):  # type: ignore[no-untyped-def]
    return light_model(name) if name.endswith(".onnx") else torch_model(name)


def _reference(model, feeds):  # type: ignore[no-untyped-def]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_model_runs_entirely_on_vulkan(name: str, session_device) -> None:  # type: ignore[no-untyped-def]
    model = _model(name)
    sess = vknn.Session(model, vknn.Config(dims=DIMS, allow_cpu_fallback=False))
    assert set(sess.node_backends().values()) == {"vulkan"}
    feeds = model_inputs(model, DIMS)
    refs = _reference(model, feeds)
    for out_name, out in sess.run(feeds).items():
        cos, err, scale = cosine_and_error(refs[out_name], out)
        print(f"{name}:{out_name} high: cosine {cos:.7f}, max abs err {err:.3g} (ref {scale:.3g})")
        assert cos >= 0.99999, f"{name}:{out_name}: cosine {cos}"
        assert err <= 1e-3 * scale + 1e-6, f"{name}:{out_name}: max abs err {err}"


@pytest.mark.slow
@pytest.mark.parametrize("name", LOW_MODELS)
def test_model_low_precision(name: str, session_device) -> None:  # type: ignore[no-untyped-def]
    model = _model(name)
    sess = vknn.Session(model, vknn.Config(dims=DIMS, precision="low", allow_cpu_fallback=False))
    feeds = model_inputs(model, DIMS)
    refs = _reference(model, feeds)
    for out_name, out in sess.run(feeds).items():
        assert np.isfinite(out).all(), f"{name}:{out_name}: inf/NaN at precision low"
        cos, err, scale = cosine_and_error(refs[out_name], out)
        print(f"{name}:{out_name} low: cosine {cos:.7f}, max abs err {err:.3g}")
        assert cos >= 0.999, f"{name}:{out_name}: cosine {cos}"


@pytest.mark.slow
@pytest.mark.parametrize("disabled", ["Conv", "MatMul,Gemm"])
def test_disable_vk_ops_keeps_results(disabled: str, session_device) -> None:  # type: ignore[no-untyped-def]
    name = "resnet18" if disabled == "Conv" else "bert_encoder"
    model = torch_model(name)
    feeds = model_inputs(model, DIMS)
    full = vknn.Session(model, vknn.Config(dims=DIMS)).run(feeds)
    # Island folding off: this checks exactly what disable_vk_ops moves.
    forced = vknn.Session(
        model, vknn.Config(dims=DIMS, disable_vk_ops=disabled, fold_gpu_islands=0)
    )
    kinds = {k for k in disabled.split(",")}
    reasons = forced.fallback_reasons()
    assert reasons and all("disabled by Config.disable_vk_ops" in r for r in reasons.values())
    assert {s.kind for s in cpu_steps(forced)} <= kinds | {"FusedPointwise"}
    for out_name, out in forced.run(feeds).items():
        cos, err, scale = cosine_and_error(full[out_name], out)
        assert cos >= 0.999999 and err <= 1e-4 * scale + 1e-6, (out_name, cos, err)
