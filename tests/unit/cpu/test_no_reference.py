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


def _loop_model():  # type: ignore[no-untyped-def]
    """A Loop (no kernel of ours): y = x + 1 three times."""
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "one"], ["acc_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("it", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
        ],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
    )
    return build(
        [("Loop", ["n", "c", "x"], ["y"], {"body": body})],
        {"x": np.zeros(2, np.float32)},
        ["y"],
        {"n": np.array(3, np.int64), "c": np.array(True)},
        opset=16,
    )


def test_op_without_kernel_is_a_compile_time_error() -> None:
    with pytest.raises(VknnError) as e:
        vknn.Session(_loop_model(), vknn.Config(backends=("cpu",)))
    msg = str(e.value)
    assert "\n" not in msg and "Loop" in msg and "Config.onnx_reference=True" in msg


def test_onnx_reference_opt_in() -> None:
    sess = vknn.Session(_loop_model(), vknn.Config(backends=("cpu",), onnx_reference=True))
    y = sess.run({"x": np.zeros(2, np.float32)})["y"]
    np.testing.assert_array_equal(y, np.full(2, 3.0, np.float32))
    assert "onnx-reference" in sess.node_backends().values()
