"""Our CPU kernels of Resize with run-time scales/sizes, MaxPool with
Indices, NonMaxSuppression, the quantized-linear ops, DFT and CenterCropPad
against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from tests.unit.cpu.onnx_oracle import build, check, rng


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_runtime_sizes_and_scales(mode: str) -> None:
    """Scales / sizes are graph inputs: the node stays onnx.Resize."""
    x = rng(1).standard_normal((1, 2, 5, 7)).astype(np.float32)
    feeds = {"x": x, "sz": np.array([8, 4], np.int64),
             "sc": np.array([1.0, 1.0, 1.5, 0.6], np.float32)}  # fmt: skip
    nodes = [
        ("Resize", ["x", "", "", "sz"], ["y0"], {"mode": mode, "axes": [-2, -1]}),
        ("Resize", ["x", "", "sc"], ["y1"], {"mode": mode}),
        ("Resize", ["x", "", "", "sz"], ["y2"],
         {"mode": mode, "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}),
    ]  # fmt: skip
    f = np.float32
    types = {"y0": (f, (1, 2, 8, 4)), "y1": (f, (1, 2, 7, 4)), "y2": (f, (1, 2, 4, 4))}
    m = build(nodes, feeds, ["y0", "y1", "y2"], opset=19, out_types=types)
    check(m, feeds, rtol=1e-5, atol=1e-5)


def test_maxpool_indices() -> None:
    x = rng(2).standard_normal((2, 3, 7, 6)).astype(np.float32)
    nodes = [
        ("MaxPool", ["x"], ["y0", "i0"], {"kernel_shape": [3, 2], "strides": [2, 2],
                                         "pads": [1, 0, 1, 1]}),
        ("MaxPool", ["x"], ["y1", "i1"], {"kernel_shape": [2, 2], "storage_order": 1,
                                         "ceil_mode": 1, "strides": [2, 2]}),
    ]  # fmt: skip
    check(build(nodes, {"x": x}, ["y0", "i0", "y1", "i1"]), {"x": x})


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression(center: int) -> None:
    r = rng(3)
    boxes = r.uniform(0, 10, (2, 12, 4)).astype(np.float32)
    if center:
        boxes[..., 2:] = r.uniform(1, 4, (2, 12, 2))
    scores = r.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    consts = {"mx": np.array([4], np.int64), "iou": np.array([0.3], np.float32),
              "st": np.array([0.2], np.float32)}  # fmt: skip
    node = [("NonMaxSuppression", ["b", "s", "mx", "iou", "st"], ["sel"],
             {"center_point_box": center})]  # fmt: skip
    feeds = {"b": boxes, "s": scores}
    # The selection count is data-dependent: declare it from onnxruntime's answer.
    probe = build(node, feeds, ["sel"], consts)
    ref = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    count = ref.run(None, feeds)[0].shape[0]
    m = build(node, feeds, ["sel"], consts, out_types={"sel": (np.int64, (count, 3))})
    check(m, feeds)


def test_quantized_linear() -> None:
    r = rng(4)
    a = r.integers(0, 255, (3, 5)).astype(np.uint8)
    b = r.integers(0, 255, (5, 4)).astype(np.uint8)
    x = r.integers(0, 255, (1, 2, 6, 6)).astype(np.uint8)
    w = r.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)
    consts = {
        "as": np.array(0.02, np.float32), "az": np.array(120, np.uint8),
        "bs": np.array(0.03, np.float32), "bz": np.array(130, np.uint8),
        "ys": np.array(0.5, np.float32), "yz": np.array(100, np.uint8),
        "ws": np.array([0.01, 0.02, 0.03], np.float32), "wz": np.array(128, np.uint8),
    }  # fmt: skip
    nodes = [
        ("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["q0"], {}),
        ("MatMulInteger", ["a", "b", "az", "bz"], ["q1"], {}),
        ("QLinearConv", ["x", "as", "az", "w", "ws", "wz", "ys", "yz"], ["q2"],
         {"pads": [1, 1, 1, 1]}),
        ("ConvInteger", ["x", "w", "az", "wz"], ["q3"], {"strides": [2, 2]}),
        ("DynamicQuantizeLinear", ["f"], ["d0", "d1", "d2"], {}),
    ]  # fmt: skip
    feeds = {"a": a, "b": b, "x": x, "w": w, "f": r.standard_normal((4, 5)).astype(np.float32)}
    m = build(nodes, feeds, ["q0", "q1", "q2", "q3", "d0", "d1", "d2"], consts)
    check(m, feeds)


def test_dft_and_center_crop_pad() -> None:
    r = rng(5)
    sig = r.standard_normal((2, 8, 1)).astype(np.float32)
    img = r.standard_normal((3, 5, 6)).astype(np.float32)
    nodes = [
        ("DFT", ["sig", "", "ax"], ["f0"], {}),
        ("DFT", ["sig", "", "ax"], ["f1"], {"onesided": 1}),
        ("CenterCropPad", ["img", "shape"], ["c0"], {"axes": [-2, -1]}),
    ]
    consts = {"ax": np.array(1, np.int64), "shape": np.array([3, 9], np.int64)}
    check(build(nodes, {"sig": sig, "img": img}, ["f0", "f1", "c0"], consts, opset=20),
          {"sig": sig, "img": img}, atol=1e-5)  # fmt: skip


def test_deform_conv_groups_and_mask() -> None:
    r = rng(6)
    x = r.standard_normal((2, 4, 6, 5)).astype(np.float32)
    w = r.standard_normal((6, 2, 3, 2)).astype(np.float32)
    off = (r.standard_normal((2, 2 * 2 * 6, 3, 5)) * 1.5).astype(np.float32)
    mask = r.uniform(0, 1, (2, 2 * 6, 3, 5)).astype(np.float32)
    attrs = {"kernel_shape": [3, 2], "group": 2, "offset_group": 2, "pads": [1, 0, 1, 1],
             "strides": [2, 1]}  # fmt: skip
    feeds = {"x": x, "off": off, "mask": mask}
    consts = {"w": w, "b": r.standard_normal(6).astype(np.float32)}
    m = build([("DeformConv", ["x", "w", "off", "b", "mask"], ["y"], attrs)], feeds, ["y"],
              consts, opset=19)  # fmt: skip
    check(m, feeds, atol=1e-5)
