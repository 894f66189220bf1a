"""Whole models on the CPU oracle against onnxruntime: the nine light models
(seeded random weights) and three models exported with torch.onnx.export.

Bar (issue 3): cosine >= 0.999999 and max abs error <= 1e-4 * max|ref|.
Each test prints its figures; `pytest -s` shows them.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import vknn
from tests.unit.conftest import LIGHT_MODELS
from tests.unit.models import TORCH_MODELS, cosine_and_error, light_model, model_inputs, torch_model

DIMS = {"batch": 1, "seq": 128}


def _check(model, name: str) -> None:  # type: ignore[no-untyped-def]
    feeds = model_inputs(model, DIMS)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    ref_sess = ort.InferenceSession(
        model.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )
    refs = ref_sess.run(None, feeds)
    sess = vknn.Session(model, vknn.Config(backends=("cpu",), dims=DIMS))
    outs = sess.run(feeds)
    assert list(outs) == [o.name for o in ref_sess.get_outputs()]
    for (out_name, out), ref in zip(outs.items(), refs, strict=True):
        assert out.shape == ref.shape and out.dtype == ref.dtype, out_name
        cos, err, scale = cosine_and_error(ref, out)
        print(f"{name}:{out_name} cosine {cos:.7f} max abs err {err:.3g} (max |ref| {scale:.3g})")
        assert np.isfinite(out).all()
        assert cos >= 0.999999, f"{name}:{out_name}: cosine {cos}"
        assert err <= 1e-4 * scale + 1e-6, (
            f"{name}:{out_name}: max abs err {err} (max |ref| {scale})"
        )


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_onnxruntime(name: str) -> None:
    _check(light_model(name), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", TORCH_MODELS)
def test_torch_model_matches_onnxruntime(name: str) -> None:
    _check(torch_model(name), name)
