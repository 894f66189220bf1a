"""CPU kernels of the stateful sequence ops: CausalConvWithState (a depthwise
causal 1-D conv carrying its last k-1 inputs) and LinearAttention (a linear
recurrence over a [d_k, d_v] state per KV head: linear, gated, delta and
gated-delta update rules, grouped query heads). Computes in float32."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step


def _opt(inputs: list[Array | None], i: int) -> Array | None:
    return inputs[i] if len(inputs) > i else None


@check("onnx.CausalConvWithState")
def _check_conv(step: Step) -> str | None:
    a = attr(step, "activation", "none")
    return None if a in ("none", "silu", "swish") else f"activation '{a}' is not none/silu/swish"


@register("onnx.CausalConvWithState")
def causal_conv(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, w = need(inputs[0]), need(inputs[1])
    bias, past = _opt(inputs, 2), _opt(inputs, 3)
    b, c, _ = x.shape
    k = w.shape[2]
    head = past if past is not None else np.zeros((b, c, k - 1), x.dtype)
    padded = np.concatenate([head, x], axis=2)
    xf, wf = padded.astype(np.float32), w.astype(np.float32)
    windows = np.lib.stride_tricks.sliding_window_view(xf, k, axis=2)  # [b, c, t, k]
    y = np.einsum("bctk,ck->bct", windows, wf[:, 0, :])
    if bias is not None:
        y = y + bias.astype(np.float32)[None, :, None]
    y = y.astype(x.dtype).astype(np.float32)  # the conv result is rounded first
    if attr(step, "activation", "none") in ("silu", "swish"):
        y = y / (1 + np.exp(-y))
    present = padded[:, :, padded.shape[2] - (k - 1) :]
    return [y.astype(out_dtype(step)), contiguous(present)][: len(step.out_specs)]


_RULES = ("linear", "gated", "delta", "gated_delta")


@check("onnx.LinearAttention")
def _check_linear(step: Step) -> str | None:
    rule = attr(step, "update_rule", "gated_delta")
    if rule not in _RULES:
        return f"update_rule '{rule}' is not one of {_RULES}"
    if attr(step, "q_num_heads") is None or attr(step, "kv_num_heads") is None:
        return "q_num_heads and kv_num_heads are required"
    return None


def _heads(x: Array, n: int) -> Array:
    b, t, hd = x.shape
    return x.reshape(b, t, n, hd // n).transpose(0, 2, 1, 3).astype(np.float32)


@register("onnx.LinearAttention")
def linear_attention(step: Step, inputs: list[Array | None]) -> list[Array]:
    q, k, v = need(inputs[0]), need(inputs[1]), need(inputs[2])
    past, decay, beta = _opt(inputs, 3), _opt(inputs, 4), _opt(inputs, 5)
    hq, hk = int(attr(step, "q_num_heads")), int(attr(step, "kv_num_heads"))
    rule = attr(step, "update_rule", "gated_delta")
    b, t, _ = q.shape
    q4, k4, v4 = _heads(q, hq), _heads(k, hk), _heads(v, hk)
    dk, dv = q4.shape[-1], v4.shape[-1]
    if decay is not None:  # per head [B, T, H] or per key channel [B, T, H*dk]
        decay = (
            decay.reshape(b, t, hk, 1).transpose(0, 2, 1, 3).astype(np.float32)
            if decay.shape[-1] == hk
            else _heads(decay, hk)
        )
    if beta is not None:
        beta = beta.reshape(b, t, beta.shape[-1], 1).transpose(0, 2, 1, 3).astype(np.float32)
    state = (
        past.astype(np.float32).copy()
        if past is not None
        else np.zeros((b, hk, dk, dv), np.float32)
    )
    scale = attr(step, "scale")
    scale = float(scale) if scale else 1.0 / np.sqrt(dk)
    out = np.zeros((b, hq, t, dv), np.float32)
    for i in range(t):
        kt, vt = k4[:, :, i, :], v4[:, :, i, :]
        if rule in ("gated", "gated_delta"):
            state = state * np.exp(need(decay)[:, :, i, :])[..., None]
        if rule in ("delta", "gated_delta"):
            vt = need(beta)[:, :, i, :] * (vt - np.einsum("bhdm,bhd->bhm", state, kt))
        state = state + kt[..., :, None] * vt[..., None, :]
        read = np.repeat(state, hq // hk, axis=1) if hq != hk else state
        out[:, :, i, :] = scale * np.einsum("bhd,bhdm->bhm", q4[:, :, i, :], read)
    y = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv)
    return [y.astype(out_dtype(step)), state.astype(out_dtype(step, 1))][: len(step.out_specs)]
