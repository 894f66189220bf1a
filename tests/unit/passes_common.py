"""Shared by the graph-pass tests: run a model on the CPU oracle with and
without a pass, and count the vx ops of the compiled plan."""

from __future__ import annotations

import collections

import numpy as np
import onnx

import vknn
from tests.unit.models import cosine_and_error, model_inputs
from tests.unit.program_steps import cpu_steps

BASE = "infer-shapes,const-fold,convert-onnx-to-vx,dce"


def run_cpu(
    model: onnx.ModelProto,
    pipeline: str,
    feeds: dict[str, np.ndarray],
    dims: dict[str, int] | None = None,
) -> tuple[list[np.ndarray], collections.Counter[str]]:
    config = vknn.Config(backends=("cpu",), pipeline=pipeline, dims=dict(dims or {}))
    sess = vknn.Session(model, config)
    outs = list(sess.run(feeds).values())
    return outs, collections.Counter(s.op for s in cpu_steps(sess))


def before_after(
    model: onnx.ModelProto, passes: str, dims: dict[str, int] | None = None
) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """Assert every output agrees (cosine >= 0.999999) with and without
    `passes` appended to BASE; return the op counts before and after."""
    feeds = model_inputs(model, dims or {}, seed=3)
    before, kinds_before = run_cpu(model, BASE, feeds, dims)
    after, kinds_after = run_cpu(model, f"{BASE},{passes}", feeds, dims)
    assert len(before) == len(after)
    for ref, out in zip(before, after, strict=True):
        assert ref.shape == out.shape
        cos, err, scale = cosine_and_error(ref, out)
        assert cos >= 0.999999, (cos, err, scale)
        assert err <= 1e-4 * max(scale, 1.0), (cos, err, scale)
    return kinds_before, kinds_after
