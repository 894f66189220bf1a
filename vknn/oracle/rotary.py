"""CPU kernel of ONNX RotaryEmbedding (opset 23): [B, S, H*D] with num_heads
or [B, H, S, D] input; cos/sin caches indexed by position_ids (or already
[B, S, D/2]); a rotated prefix of rotary_embedding_dim; split-half or
interleaved pairs."""

from __future__ import annotations

import numpy as np

from vknn.oracle.numerics import contiguous, widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import register
from vknn.runtime.plan import Step


@register("onnx.RotaryEmbedding")
def rotary_embedding(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = widen(need(inputs[0]))
    cos, sin = widen(need(inputs[1])), widen(need(inputs[2]))
    pos = inputs[3] if len(inputs) > 3 else None
    shape = x.shape
    if x.ndim == 4:  # [B, H, S, D] -> [B, S, H, D]
        x = x.transpose(0, 2, 1, 3)
    else:
        b, s, hidden = x.shape
        n = int(attr(step, "num_heads"))
        x = x.reshape(b, s, n, hidden // n)
    dim = int(attr(step, "rotary_embedding_dim", 0)) or x.shape[3]
    if pos is not None:
        cos, sin = cos[pos], sin[pos]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]  # [B, S, 1, dim/2]
    rot = x[..., :dim]
    inter = bool(int(attr(step, "interleaved", 0)))
    x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if inter else np.split(rot, 2, axis=-1)
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if inter:
        rot = np.stack([real, imag], axis=-1).reshape(rot.shape)
    else:
        rot = np.concatenate([real, imag], axis=-1)
    y = np.concatenate([rot, x[..., dim:]], axis=-1)
    y = y.transpose(0, 2, 1, 3) if len(shape) == 4 else y.reshape(shape)
    return [contiguous(y).astype(out_dtype(step))]
