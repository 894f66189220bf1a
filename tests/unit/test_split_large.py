"""GEMMs with weights past the device's storage-buffer range are split into
column blocks joined by a concat: same numbers, every block under the limit."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn.runtime.cpu.executor import run_plan
from vknn.runtime.vulkan.split_large import split_oversized_gemms


def _gemm_model(trans_b: int, bias_shape: tuple[int, ...] | None) -> tuple:
    rng = np.random.default_rng(0)
    k, n = 96, 1000
    w = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    inputs = ["x", "w"]
    if bias_shape is not None:
        inits.append(
            numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "c")
        )
        inputs.append("c")
    node = helper.make_node("Gemm", inputs, ["y"], transB=trans_b, alpha=0.5, beta=2.0)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), k


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias_shape", [None, (1000,), (1, 1000), (2, 1000), (1,)])
def test_split_gemm_matches(trans_b: int, bias_shape: tuple[int, ...] | None) -> None:
    model, k = _gemm_model(trans_b, bias_shape)
    sess = vknn.Session(model, vknn.Config(backends=("cpu",)))
    x = np.random.default_rng(1).standard_normal((2, k)).astype(np.float32)
    ref = sess.run({"x": x})["y"]
    plan = sess.plan
    limit = 64 * 4 * k * 3  # 192-column blocks: several of them for N = 1000
    assert split_oversized_gemms(plan, limit) == 1
    gemms = [s for s in plan.steps if s.op == "vx.gemm"]
    assert len(gemms) > 1 and plan.steps[-1].op == "vx.concat"
    assert all(plan.constants[s.inputs[1]].nbytes <= limit for s in gemms)
    values: list = [None] * plan.num_slots
    for slot, arr in plan.constants.items():
        values[slot] = arr
    values[plan.inputs[0][1]] = x
    run_plan(plan, values)
    np.testing.assert_allclose(values[plan.outputs[0][1]], ref, rtol=1e-5, atol=1e-5)
