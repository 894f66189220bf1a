"""fold-batchnorm, lower-batchnorm, dce and prune-initializers on a real
model (resnet50 with seeded random weights): CPU outputs before and after the
passes agree, and the ops they target are gone."""

from __future__ import annotations

import collections

import pytest

import vknn
from tests.unit.models import light_model, model_inputs
from tests.unit.program_steps import cpu_steps
from tests.unit.quant_models import cosine

BASE = "infer-shapes,const-fold,convert-onnx-to-vx"


@pytest.mark.parametrize(
    "passes,gone",
    [
        ("fold-batchnorm,lower-batchnorm,dce,prune-initializers", "vx.batchnorm"),
        ("lower-batchnorm,dce", "vx.batchnorm"),
    ],
)
def test_resnet50_before_after(passes: str, gone: str) -> None:
    model = light_model("light_resnet50.onnx")
    feeds = model_inputs(model, {})
    before = vknn.Session(model, vknn.Config(backends=("cpu",), pipeline=BASE))
    after = vknn.Session(model, vknn.Config(backends=("cpu",), pipeline=f"{BASE},{passes}"))
    a = next(iter(before.run(feeds).values()))
    b = next(iter(after.run(feeds).values()))
    kinds_before = collections.Counter(s.op for s in cpu_steps(before))
    kinds_after = collections.Counter(s.op for s in cpu_steps(after))
    assert kinds_before[gone] > 0 and kinds_after[gone] == 0, (kinds_before, kinds_after)
    assert cosine(a, b) >= 0.999999
