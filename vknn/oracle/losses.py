"""CPU kernels of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over
[N, C, d1...] scores: class weights, ignore_index, reductions none/sum/mean
(mean divides by the total weight of the targets not ignored)."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, norm_indices, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


@check("onnx.NegativeLogLikelihoodLoss", "onnx.SoftmaxCrossEntropyLoss")
def _check(step: Step) -> str | None:
    r = attr(step, "reduction", "mean")
    return None if r in ("none", "sum", "mean") else f"reduction '{r}' is not none/sum/mean"


def _nll(step: Step, logp: Array, target: Array, weight: Array | None) -> Array:
    ignore = attr(step, "ignore_index")
    ignored = target == ignore if ignore is not None else np.zeros(target.shape, bool)
    t = norm_indices(step, np.where(ignored, 0, target), logp.shape[1])
    picked = -np.take_along_axis(logp, np.expand_dims(t, 1), axis=1)[:, 0]
    w = widen(weight)[t] if weight is not None else np.ones(t.shape, logp.dtype)
    w = np.where(ignored, 0, w).astype(logp.dtype)
    loss = w * picked
    red = attr(step, "reduction", "mean")
    if red == "sum":
        return np.asarray(loss.sum())
    if red == "mean":
        return np.asarray(loss.sum() / w.sum())
    return loss


@register("onnx.NegativeLogLikelihoodLoss")
def nll_loss(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, target = widen(need(inputs[0])), need(inputs[1])
    weight = inputs[2] if len(inputs) > 2 else None
    return [_nll(step, x, target, weight).astype(out_dtype(step))]


@register("onnx.SoftmaxCrossEntropyLoss")
def softmax_cross_entropy(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, target = widen(need(inputs[0])), need(inputs[1])
    weight = inputs[2] if len(inputs) > 2 else None
    shifted = x - x.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    outs = [_nll(step, logp, target, weight).astype(out_dtype(step))]
    if len(step.out_specs) > 1:
        outs.append(logp.astype(out_dtype(step, 1)))
    return outs
