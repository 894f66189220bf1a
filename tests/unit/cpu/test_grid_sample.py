"""Our CPU kernel of GridSample against onnxruntime: every mode, padding mode
and align_corners, with grid points well outside the input."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.cpu.onnx_oracle import build, check, rng


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode: str, padding: str, align: int) -> None:
    r = rng(7)
    x = r.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = r.uniform(-1.7, 1.7, (2, 4, 7, 2)).astype(np.float32)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    m = build([("GridSample", ["x", "g"], ["y"], attrs)], {"x": x, "g": grid}, ["y"], opset=20)
    check(m, {"x": x, "g": grid}, rtol=1e-4, atol=1e-5)
