"""If / Loop / Scan run their bodies on our own kernels: against onnxruntime,
with outer-scope captures, loop-carried state, scan outputs and a reverse
scan direction."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from tests.unit.cpu.onnx_oracle import build, check, rng

F = TensorProto.FLOAT


def _vi(name: str, elem: int, shape: list[int] | None) -> object:
    return helper.make_tensor_value_info(name, elem, shape)


def test_loop_with_capture() -> None:
    """acc = acc * w + i, w captured from the outer graph. (A Loop's scan
    outputs have a trip-count extent that shape inference leaves unknown.)"""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["acc", "w"], ["m"]),
            helper.make_node("Add", ["m", "fi"], ["acc_out"]),
        ],
        "body",
        [_vi("i", TensorProto.INT64, []), _vi("c_in", TensorProto.BOOL, []),
         _vi("acc", F, [2, 3])],
        [_vi("c_out", TensorProto.BOOL, []), _vi("acc_out", F, [2, 3])],
    )  # fmt: skip
    x = rng(1).standard_normal((2, 3)).astype(np.float32)
    w = rng(2).standard_normal((2, 3)).astype(np.float32)
    m = build(
        [("Mul", ["w0", "two"], ["w"], {}),
         ("Loop", ["n", "", "x"], ["y"], {"body": body})],
        {"x": x, "w0": w}, ["y"],
        {"n": np.array(4, np.int64), "two": np.array(2.0, np.float32)},
        opset=16,
    )  # fmt: skip
    check(m, {"x": x, "w0": w})


def test_if_branches() -> None:
    then = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["t"])], "then", [], [_vi("t", F, [3])]
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e", F, [3])]
    )
    x = np.array([1.0, -2.0, 3.0], np.float32)
    for flag in (True, False):
        m = build([("If", ["c"], ["y"], {"then_branch": then, "else_branch": other})],
                  {"x": x, "c": np.array(flag)}, ["y"], opset=16)  # fmt: skip
        check(m, {"x": x, "c": np.array(flag)})


def test_scan_reverse_with_state() -> None:
    """A running sum over axis 1, scanned backwards, and each step's output."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xt"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "xt"], ["y"])],
        "body",
        [_vi("s", F, [2]), _vi("xt", F, [2])],
        [_vi("s_out", F, [2]), _vi("y", F, [2])],
    )  # fmt: skip
    x = rng(3).standard_normal((2, 5)).astype(np.float32)
    s0 = np.zeros(2, np.float32)
    m = build(
        [("Scan", ["s0", "x"], ["s", "ys"],
          {"body": body, "num_scan_inputs": 1, "scan_input_axes": [-1],
           "scan_input_directions": [1], "scan_output_axes": [1]})],
        {"s0": s0, "x": x}, ["s", "ys"], opset=16,
    )  # fmt: skip
    check(m, {"s0": s0, "x": x})
