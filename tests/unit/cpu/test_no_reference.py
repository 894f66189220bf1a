"""onnx.reference is opt-in only: `import vknn` and a default Session on
models with ops that have no `vx` lowering (GatherElements, TopK, CumSum, ...)
never import it; an op with no kernel of ours is a one-line error at compile
time naming the opt-in, and under the opt-in it runs as `onnx-reference`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vknn
from tests.unit.cpu.onnx_oracle import build
from vknn.errors import VknnError

_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import vknn
    assert "onnx.reference" not in sys.modules, "import vknn loaded onnx.reference"
    from tests.unit.cpu.onnx_oracle import build
    r = np.random.default_rng(0)
    d = r.standard_normal((2, 4, 9)).astype(np.float32)
    i = r.integers(-9, 9, (2, 4, 5)).astype(np.int64)
    m = build(
        [("GatherElements", ["d", "i"], ["g"], {"axis": -1}),
         ("TopK", ["g", "k"], ["v", "ix"], {"axis": -1}),
         ("CumSum", ["v", "ax"], ["y"], {"reverse": 1})],
        {"d": d, "i": i}, ["y", "ix"],
        {"k": np.array([3], np.int64), "ax": np.array(-1, np.int64)},
    )
    sess = vknn.Session(m)
    sess.run({"d": d, "i": i})
    assert set(sess.node_backends().values()) <= {"cpu", "vulkan"}, sess.node_backends()
    assert "onnx.reference" not in sys.modules, "a default Session loaded onnx.reference"
    print("ok")
    """
)


def test_default_session_never_imports_onnx_reference() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def _roi_align_model():  # type: ignore[no-untyped-def]
    """RoiAlign: an op with no kernel of ours."""
    r = np.random.default_rng(0)
    feeds = {
        "x": r.standard_normal((1, 2, 6, 6)).astype(np.float32),
        "rois": np.array([[0.5, 0.5, 4.0, 3.5], [1.0, 2.0, 5.5, 5.0]], np.float32),
    }
    m = build(
        [("RoiAlign", ["x", "rois", "bi"], ["y"], {"output_height": 2, "output_width": 3})],
        feeds,
        ["y"],
        {"bi": np.array([0, 0], np.int64)},
        opset=16,
    )
    return m, feeds


def test_op_without_kernel_is_a_compile_time_error() -> None:
    m, _ = _roi_align_model()
    with pytest.raises(VknnError) as e:
        vknn.Session(m, vknn.Config(backends=("cpu",)))
    msg = str(e.value)
    assert "\n" not in msg and "RoiAlign" in msg and "Config.onnx_reference=True" in msg


def test_onnx_reference_opt_in() -> None:
    m, feeds = _roi_align_model()
    sess = vknn.Session(m, vknn.Config(backends=("cpu",), onnx_reference=True))
    y = sess.run(feeds)["y"]
    from onnx.reference import ReferenceEvaluator

    want = ReferenceEvaluator(m).run(None, feeds)[0]
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert sess.node_backends() == {"n0_RoiAlign": "onnx-reference"}
