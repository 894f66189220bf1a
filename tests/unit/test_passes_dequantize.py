"""dequantize on real quantized graphs: squeezenet and resnet50 quantized by
onnxruntime (QDQ per-channel, and QOperator), run by VKNN's CPU backend after
the pass, against onnxruntime running the quantized model."""

from __future__ import annotations

import collections

import numpy as np
import onnxruntime as ort
import pytest

import vknn
from tests.unit.models import model_inputs
from tests.unit.program_steps import cpu_steps
from tests.unit.quant_models import cosine, float_model, quantized

PIPELINE = "dequantize,infer-shapes,const-fold,convert-onnx-to-vx,dce"


@pytest.fixture(scope="module")
def quantized_models(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = {}
    d = tmp_path_factory.mktemp("quant")
    for name in ("squeezenet", "resnet50"):
        model = float_model(name)
        for fmt in ("qdq", "qoperator"):
            path = d / f"{name}_{fmt}.onnx"
            out[name, fmt] = (quantized(model, fmt, path), path)
    return out


def _ort(path, feeds: dict, optimize: bool) -> np.ndarray:
    so = ort.SessionOptions()
    if not optimize:
        # The QDQ graph as written (no fusion into integer kernels).
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)[
        0
    ]


@pytest.mark.parametrize("fmt", ["qdq", "qoperator"])
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_quantized_model_matches_onnxruntime(quantized_models: dict, name: str, fmt: str) -> None:
    model, path = quantized_models[name, fmt]
    feeds = model_inputs(model, {}, seed=7)
    sess = vknn.Session(model, vknn.Config(backends=("cpu",), pipeline=PIPELINE))
    out = next(iter(sess.run(feeds).values()))
    kinds = collections.Counter(s.op for s in cpu_steps(sess))
    # No quantized operator survives: every step is a float vx op.
    assert not [k for k in kinds if not k.startswith("vx.")], kinds
    ref_literal = _ort(path, feeds, optimize=False)
    ref_fused = _ort(path, feeds, optimize=True)
    assert cosine(out, ref_literal) >= 0.9999
    # onnxruntime's fused integer kernels requantize with a precomputed
    # multiplier, so ties round differently; ORT's own fused vs literal runs
    # differ by as much (squeezenet QDQ: 0.99971).
    assert cosine(out, ref_fused) >= 0.999


def test_disabled_keeps_quantized_ops(quantized_models: dict) -> None:
    model, _ = quantized_models["squeezenet", "qdq"]
    sess = vknn.Session(
        model,
        vknn.Config(
            backends=("cpu",),
            pipeline="dequantize{enabled=false},infer-shapes,const-fold",
            onnx_reference=True,  # the quantized onnx ops have no kernel of ours
        ),
    )
    kinds = {s.op for s in cpu_steps(sess)}
    assert {"onnx.QuantizeLinear", "onnx.DequantizeLinear"} <= kinds
