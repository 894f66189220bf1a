"""CPU kernels of ONNX RNN, GRU and LSTM: forward / reverse / bidirectional,
both layouts, sequence_lens (steps past a row's length output 0 and keep its
state; reverse runs over the valid prefix), initial states, clip, LSTM
peepholes and input_forget, GRU linear_before_reset, and the spec's
activation functions with their alpha/beta."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vknn.oracle.numerics import widen
from vknn.oracle.onnx_common import Array, attr, need, out_dtype
from vknn.oracle.registry import check, register
from vknn.runtime.plan import Step

Act = Callable[[Array], Array]


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _make(name: str, alpha: float | None, beta: float | None) -> Act:
    n = name.lower()
    if n == "sigmoid":
        return _sigmoid
    if n == "tanh":
        return np.tanh
    if n == "relu":
        return lambda x: np.maximum(x, 0)
    if n == "affine":
        return lambda x: (alpha if alpha is not None else 1.0) * x + (beta or 0.0)
    if n == "leakyrelu":
        a = alpha if alpha is not None else 0.01
        return lambda x: np.where(x >= 0, x, a * x)
    if n == "thresholdedrelu":
        a = alpha if alpha is not None else 1.0
        return lambda x: np.where(x > a, x, 0)
    if n == "scaledtanh":
        a, b = (alpha if alpha is not None else 1.0), (beta if beta is not None else 1.0)
        return lambda x: a * np.tanh(b * x)
    if n == "hardsigmoid":
        a, b = (alpha if alpha is not None else 0.2), (beta if beta is not None else 0.5)
        return lambda x: np.clip(a * x + b, 0, 1)
    if n == "elu":
        a = alpha if alpha is not None else 1.0
        return lambda x: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1))
    if n == "softsign":
        return lambda x: x / (1 + np.abs(x))
    if n == "softplus":
        return lambda x: np.logaddexp(0, x)
    raise ValueError(name)


_KNOWN = {
    "sigmoid", "tanh", "relu", "affine", "leakyrelu", "thresholdedrelu", "scaledtanh",
    "hardsigmoid", "elu", "softsign", "softplus",
}  # fmt: skip
_DEFAULTS = {
    "RNN": ["Tanh", "Tanh"],
    "GRU": ["Sigmoid", "Tanh"],
    "LSTM": ["Sigmoid", "Tanh", "Tanh"],
}
_USES_ALPHA = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
_USES_BETA = {"affine", "scaledtanh", "hardsigmoid"}


@check("onnx.RNN", "onnx.GRU", "onnx.LSTM")
def _check(step: Step) -> str | None:
    bad = [a for a in attr(step, "activations", ()) if str(a).lower() not in _KNOWN]
    if bad:
        return f"activation(s) {bad} not implemented"
    d = attr(step, "direction", "forward")
    return None if d in ("forward", "reverse", "bidirectional") else f"direction '{d}'"


def _activations(step: Step, kind: str, dirs: int) -> list[list[Act]]:
    """Per direction, the op's activation functions, alpha/beta consumed in order."""
    names = [str(a) for a in attr(step, "activations", ())]
    per = len(_DEFAULTS[kind]) if kind != "RNN" else 1
    if not names:
        names = _DEFAULTS[kind][:per] * dirs
    elif len(names) == per and dirs == 2:
        names = names * 2
    alphas = list(attr(step, "activation_alpha", ()))
    betas = list(attr(step, "activation_beta", ()))
    fns = []
    for n in names:
        a = alphas.pop(0) if n.lower() in _USES_ALPHA and alphas else None
        b = betas.pop(0) if n.lower() in _USES_BETA and betas else None
        fns.append(_make(n, a, b))
    return [fns[i * per : (i + 1) * per] for i in range(dirs)]


def _inputs(step: Step, inputs: list[Array | None], gates: int):  # type: ignore[no-untyped-def]
    def opt(i: int) -> Array | None:
        return inputs[i] if len(inputs) > i and inputs[i] is not None else None

    x, w, r = widen(need(inputs[0])), widen(need(inputs[1])), widen(need(inputs[2]))
    layout = int(attr(step, "layout", 0))
    if layout:
        x = x.transpose(1, 0, 2)  # -> [seq, batch, input]
    dirs, hidden = w.shape[0], r.shape[-1]
    seq, batch = x.shape[:2]
    b = opt(3)
    b = widen(b) if b is not None else np.zeros((dirs, 2 * gates * hidden), x.dtype)
    lens = opt(4)
    lens = lens.astype(np.int64) if lens is not None else np.full(batch, seq, np.int64)
    h0 = opt(5)
    h0 = widen(h0) if h0 is not None else np.zeros((dirs, batch, hidden), x.dtype)
    if layout and opt(5) is not None:
        h0 = h0.transpose(1, 0, 2)
    return x, w, r, b, lens, h0, layout, dirs, hidden, seq, batch, opt


def _order(d: int, step: Step, seq: int) -> bool:
    """True when direction `d` of `step` runs backwards in time."""
    direction = attr(step, "direction", "forward")
    return direction == "reverse" or (direction == "bidirectional" and d == 1)


def _run(
    step: Step,
    x: Array,
    lens: Array,
    states: list[Array],
    cell: Callable[[Array, list[Array]], list[Array]],
    backwards: bool,
) -> tuple[Array, list[Array]]:
    """Run `cell` over time for one direction: Y [seq, batch, H] and the
    final states. Row b runs over its first lens[b] steps only."""
    seq = x.shape[0]
    y = np.zeros((seq, *states[0].shape), states[0].dtype)
    for t in range(seq):
        live = (t < lens)[:, None]
        # Backwards: row b reads its valid steps lens[b]-1 .. 0.
        src = np.clip(lens - 1 - t, 0, seq - 1) if backwards else np.full(len(lens), t)
        xt = x[src, np.arange(x.shape[1])]
        new = cell(xt, states)
        states = [np.where(live, n, s) for n, s in zip(new, states, strict=True)]
        out_t = np.where(live, states[0], 0)
        if backwards:
            y[src, np.arange(x.shape[1])] = np.where(live, out_t, y[src, np.arange(x.shape[1])])
        else:
            y[t] = out_t
    return y, states


def _clip(step: Step) -> Callable[[Array], Array]:
    c = attr(step, "clip")
    return (lambda v: v) if c is None else (lambda v: np.clip(v, -float(c), float(c)))


def _finish(step: Step, ys: list[Array], finals: list[list[Array]], layout: int) -> list[Array]:
    y = np.stack(ys, axis=1)  # [seq, dirs, batch, H]
    states = [np.stack([f[i] for f in finals]) for i in range(len(finals[0]))]
    if layout:
        y = y.transpose(2, 0, 1, 3)
        states = [s.transpose(1, 0, 2) for s in states]
    outs = [y, *states]
    return [o.astype(out_dtype(step, i)) for i, o in enumerate(outs[: len(step.out_specs)])]


@register("onnx.RNN")
def rnn(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, w, r, b, lens, h0, layout, dirs, hdim, seq, batch, _ = _inputs(step, inputs, 1)
    acts, clip = _activations(step, "RNN", dirs), _clip(step)
    ys, finals = [], []
    for d in range(dirs):
        bias = b[d, :hdim] + b[d, hdim:]

        def cell(xt: Array, s: list[Array], d: int = d, bias: Array = bias) -> list[Array]:
            return [acts[d][0](clip(xt @ w[d].T + s[0] @ r[d].T + bias))]

        y, st = _run(step, x, lens, [h0[d]], cell, _order(d, step, seq))
        ys.append(y)
        finals.append(st)
    return _finish(step, ys, finals, layout)


@register("onnx.GRU")
def gru(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, w, r, b, lens, h0, layout, dirs, hd, seq, batch, _ = _inputs(step, inputs, 3)
    acts, clip = _activations(step, "GRU", dirs), _clip(step)
    before = int(attr(step, "linear_before_reset", 0))
    ys, finals = [], []
    for d in range(dirs):
        wb, rb = b[d, : 3 * hd], b[d, 3 * hd :]
        f, g = acts[d]

        def cell(xt: Array, s: list[Array], d: int = d, wb: Array = wb, rb: Array = rb,
                 f: Act = f, g: Act = g) -> list[Array]:  # fmt: skip
            h = s[0]
            xw = xt @ w[d].T + wb  # gates z, r, h
            rz = h @ r[d][: 2 * hd].T + rb[: 2 * hd]
            z = f(clip(xw[:, :hd] + rz[:, :hd]))
            rr = f(clip(xw[:, hd : 2 * hd] + rz[:, hd:]))
            rh, rbh = r[d][2 * hd :], rb[2 * hd :]
            if before:
                cand = xw[:, 2 * hd :] + rr * (h @ rh.T + rbh)
            else:
                cand = xw[:, 2 * hd :] + (rr * h) @ rh.T + rbh
            hn = g(clip(cand))
            return [(1 - z) * hn + z * h]

        y, st = _run(step, x, lens, [h0[d]], cell, _order(d, step, seq))
        ys.append(y)
        finals.append(st)
    return _finish(step, ys, finals, layout)


@register("onnx.LSTM")
def lstm(step: Step, inputs: list[Array | None]) -> list[Array]:
    x, w, r, b, lens, h0, layout, dirs, hd, seq, batch, opt = _inputs(step, inputs, 4)
    c0 = opt(6)
    if c0 is None:
        c0 = np.zeros((dirs, batch, hd), x.dtype)
    else:
        c0 = widen(c0).transpose(1, 0, 2) if layout else widen(c0)
    p = opt(7)
    p = widen(p) if p is not None else np.zeros((dirs, 3 * hd), x.dtype)
    acts, clip = _activations(step, "LSTM", dirs), _clip(step)
    couple = int(attr(step, "input_forget", 0))
    ys, finals = [], []
    for d in range(dirs):
        bias = b[d, : 4 * hd] + b[d, 4 * hd :]
        pi, po, pf = p[d, :hd], p[d, hd : 2 * hd], p[d, 2 * hd :]
        f, g, h_act = acts[d]

        def cell(xt: Array, s: list[Array], d: int = d, bias: Array = bias, pi: Array = pi,
                 po: Array = po, pf: Array = pf, f: Act = f, g: Act = g,
                 h_act: Act = h_act) -> list[Array]:  # fmt: skip
            h, c = s
            gates = xt @ w[d].T + h @ r[d].T + bias  # i, o, f, c
            i = f(clip(gates[:, :hd] + pi * c))
            fg = f(clip(gates[:, 2 * hd : 3 * hd] + pf * c))
            if couple:
                fg = 1 - i
            cn = fg * c + i * g(clip(gates[:, 3 * hd :]))
            o = f(clip(gates[:, hd : 2 * hd] + po * cn))
            return [o * h_act(cn), cn]

        y, st = _run(step, x, lens, [h0[d], c0[d]], cell, _order(d, step, seq))
        ys.append(y)
        finals.append(st)
    return _finish(step, ys, finals, layout)
