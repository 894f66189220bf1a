"""Our CPU kernels of RNN / GRU / LSTM against onnxruntime: every direction,
both layouts, sequence_lens shorter than the sequence, initial states,
peepholes, linear_before_reset and clip."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import vknn
from tests.unit.cpu.onnx_oracle import build, check, rng

SEQ, BATCH, INP, HID = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_recurrent(kind: str, direction: str, layout: int) -> None:
    r = rng(hash((kind, direction, layout)) % 1000)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[kind]
    xs = (BATCH, SEQ, INP) if layout else (SEQ, BATCH, INP)
    hs = (BATCH, dirs, HID) if layout else (dirs, BATCH, HID)
    feeds = {
        "x": r.standard_normal(xs).astype(np.float32),
        "h0": r.standard_normal(hs).astype(np.float32),
    }
    consts = {
        "w": (r.standard_normal((dirs, g * HID, INP)) * 0.5).astype(np.float32),
        "r": (r.standard_normal((dirs, g * HID, HID)) * 0.5).astype(np.float32),
        "b": (r.standard_normal((dirs, 2 * g * HID)) * 0.1).astype(np.float32),
        "lens": np.array([5, 2, 4], np.int32),
    }
    ins = ["x", "w", "r", "b", "lens", "h0"]
    attrs: dict = {"hidden_size": HID, "direction": direction, "layout": layout}
    outs = ["y", "yh"]
    if kind == "LSTM":
        feeds["c0"] = r.standard_normal(hs).astype(np.float32)
        consts["p"] = (r.standard_normal((dirs, 3 * HID)) * 0.1).astype(np.float32)
        ins += ["c0", "p"]
        outs.append("yc")
        attrs["clip"] = 2.5
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    m = build([(kind, ins, outs, attrs)], feeds, outs, consts)
    if not layout:
        check(m, feeds, rtol=1e-5, atol=1e-5)
        return
    # onnxruntime has no batch-major layout: compare with its seq-major run.
    got = vknn.Session(m, vknn.Config(backends=("cpu",))).run(feeds)
    seq_major = {k: v.transpose(1, 0, 2) for k, v in feeds.items()}
    ref_m = build([(kind, ins, outs, {**attrs, "layout": 0})], seq_major, outs, consts)
    ref = ort.InferenceSession(ref_m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = dict(zip(outs, ref.run(None, seq_major), strict=True))
    np.testing.assert_allclose(got["y"], want["y"].transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-5)
    for o in outs[1:]:
        np.testing.assert_allclose(got[o], want[o].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
