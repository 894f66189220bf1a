"""CPU kernel of ONNX Attention (opset 23+) run as `onnx.Attention`: 3D inputs
with q/kv_num_heads or 4D [B, H, S, D]; grouped KV heads; past/present KV
cache; boolean or additive mask (padded to the KV length); causal and
sliding-window masks aligned to the end of the cache (or to nonpad_kv_seqlen);
softcap; every qk_matmul_output_mode. Fully masked rows give 0, as the spec
says. Computes in float32 at least."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


def _heads(x: Array, n: int) -> Array:
    """[B, S, n*D] -> [B, n, S, D]."""
    b, s, h = x.shape
    return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)


def _opt(inputs: list[Array | None], i: int) -> Array | None:
    return inputs[i] if len(inputs) > i else None


def _bias(step: Step, q_len: int, kv_len: int, mask: Array | None, offset: Array) -> Array:
    """The additive bias [B or 1, 1 or H, q, kv]: mask, causal, window."""
    bias = np.zeros((1, 1, q_len, kv_len), np.float64)
    if mask is not None:
        pad = kv_len - mask.shape[-1]
        if mask.dtype == bool:
            mask = np.where(mask, 0.0, -np.inf)
            fill = -np.inf
        else:
            fill = -np.inf
        if pad > 0:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)], constant_values=fill)
        bias = bias + mask.astype(np.float64)
    # offset [B or 1, 1, 1, 1]: where query i sits among the keys.
    diff = np.arange(q_len).reshape(q_len, 1) + offset - np.arange(kv_len)
    allowed = np.ones(diff.shape, bool)
    if int(attr(step, "is_causal", 0)):
        allowed &= diff >= 0
    left, right = int(attr(step, "left_window_size", -1)), int(attr(step, "right_window_size", -1))
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return bias + np.where(allowed, 0.0, -np.inf)


@register("onnx.Attention")
def attention(step: Step, inputs: list[Array | None]) -> list[Array]:
    q, k, v = (widen(need(x)) for x in inputs[:3])
    mask, past_k, past_v = _opt(inputs, 3), _opt(inputs, 4), _opt(inputs, 5)
    nonpad = _opt(inputs, 6)
    rank3 = q.ndim == 3
    if rank3:
        kvh = int(attr(step, "kv_num_heads"))
        q, k, v = _heads(q, int(attr(step, "q_num_heads"))), _heads(k, kvh), _heads(v, kvh)
    if past_k is not None:
        k = np.concatenate([widen(past_k), k], axis=2)
    if past_v is not None:
        v = np.concatenate([widen(past_v), v], axis=2)
    present_k, present_v = k, v
    batch, heads, q_len, d = q.shape
    kv_len = k.shape[2]
    if nonpad is not None and past_k is None:
        offset = (nonpad.reshape(-1) - q_len).reshape(-1, 1, 1, 1)
    else:
        offset = np.full((1, 1, 1, 1), past_k.shape[2] if past_k is not None else 0)
    bias = _bias(step, q_len, kv_len, mask, offset)
    if nonpad is not None:
        keep = np.arange(kv_len) < nonpad.reshape(-1, 1, 1, 1)
        bias = bias + np.where(keep, 0.0, -np.inf)
    if heads != k.shape[1]:  # grouped-query attention: share each KV head
        k = np.repeat(k, heads // k.shape[1], axis=1)
        v = np.repeat(v, heads // v.shape[1], axis=1)
    scale = attr(step, "scale")
    scale = float(scale) if scale is not None else 1 / np.sqrt(d)
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    cap = float(attr(step, "softcap", 0.0))
    if cap > 0:
        scores = cap * np.tanh(scores / cap)
    biased = scores + bias.astype(scores.dtype)
    top = biased.max(axis=-1, keepdims=True)
    dead = np.isneginf(bias.max(axis=-1, keepdims=True)) | np.isneginf(top)
    e = np.exp(biased - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    probs = np.where(dead, 0.0, e / np.where(total == 0, 1, total)).astype(scores.dtype)
    y = probs @ v
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, -1)
    mode = int(attr(step, "qk_matmul_output_mode", 0))
    qk = {2: biased, 3: probs}.get(mode, scores)
    outs = [y, present_k, present_v, qk]
    return [o.astype(out_dtype(step, i)) for i, o in enumerate(outs[: len(step.out_specs)])]
