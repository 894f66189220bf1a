"""assign-layouts on real models: CPU outputs unchanged (a convert is a
repack, the identity on host NCHW), converts only at CNN <-> flat
boundaries, none in a transformer."""

from __future__ import annotations

import pytest

from tests.unit.models import light_model, torch_model
from tests.unit.passes_common import before_after

CONVERT = "vx.convert_layout"


@pytest.mark.parametrize(
    ("source", "name", "converts"),
    [
        ("light", "light_squeezenet.onnx", 1),  # pool -> flatten for the softmax
        ("torch", "resnet18", 1),  # global pool -> flatten -> Gemm
        ("torch", "bert_encoder", 0),  # flat end to end
    ],
)
def test_real_model_before_after(source: str, name: str, converts: int) -> None:
    model = light_model(name) if source == "light" else torch_model(name)
    _, after = before_after(model, "fuse-pointwise,assign-layouts", {"batch": 1, "seq": 128})
    assert after[CONVERT] == converts, after
