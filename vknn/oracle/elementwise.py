"""CPU kernels of the element-wise families: `vx.unary`, `vx.binary`,
`vx.select`, `vx.cast` and the `vx.fused_pointwise` region interpreter.

These are the numeric oracle for every pointwise Vulkan kernel, so each
formula is ONNX's own (the operator's documented definition), evaluated as
exactly as numpy allows: transcendental functions of f16/f32 tensors run in
f64 and are rounded once to the result type, which keeps them within an ulp
of onnxruntime. Every kernel returns exactly `step.out_specs[0].dtype`.

This module must not know about layouts or backends other than the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vknn.oracle.numerics import contiguous
from vknn.oracle.registry import register
from vknn.runtime.op_kinds import CMPF_PREDICATES, CMPI_PREDICATES
from vknn.runtime.plan import Step

Array = np.ndarray
UnaryFn = Callable[..., Array]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _out_dtype(step: Step, i: int = 0) -> np.dtype:
    return np.dtype(step.out_specs[i].dtype)


def _wide(x: Array) -> Array:
    """Floats of at most 32 bits computed in f64, rounded once at the end."""
    if x.dtype.kind == "f" and x.dtype.itemsize < 8 or x.dtype.name == "bfloat16":
        return x.astype(np.float64)
    return x


def _to(x: Any, dtype: np.dtype) -> Array:
    """`x` as exactly `dtype` (no copy when it already is)."""
    a = np.asarray(x)
    return a if a.dtype == dtype else a.astype(dtype)


# ---------------------------------------------------------------------------
# erf: numpy has none, and a per-element math.erf loop is far too slow for
# the oracle of a GELU-heavy model. Below |x| < 2.5 the all-positive series
# erf(x) = 2/sqrt(pi) e^{-x^2} sum_n (2x^2)^n x / (2n+1)!! has no
# cancellation; above, Lentz-free bottom-up evaluation of the continued
# fraction for erfc converges in a few dozen terms. Both reach ~1e-16.
# ---------------------------------------------------------------------------

_ERF_SERIES_TERMS = 64
_ERFC_CF_DEPTH = 60
_ERF_SWITCH = 2.5


def erf(x: Array) -> Array:
    """Vectorized f64 error function (input of any float dtype)."""
    shape = np.shape(x)
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    ax = np.abs(x)
    small = ax < _ERF_SWITCH
    out = np.empty_like(x)

    xs = ax[small]
    if xs.size:
        x2 = xs * xs
        term = xs.copy()
        total = xs.copy()
        for n in range(1, _ERF_SERIES_TERMS):
            term = term * (2.0 * x2) / (2 * n + 1)
            total += term
        out[small] = _TWO_OVER_SQRT_PI * np.exp(-x2) * total

    xl = ax[~small]
    if xl.size:
        with np.errstate(over="ignore", under="ignore"):
            # erfc(x) = e^{-x^2}/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
            frac = np.zeros_like(xl)
            for k in range(_ERFC_CF_DEPTH, 0, -1):
                frac = (k / 2.0) / (xl + frac)
            erfc = np.exp(-xl * xl) / math.sqrt(math.pi) / (xl + frac)
        out[~small] = 1.0 - erfc
    out = np.copysign(out, x)
    out[np.isnan(x)] = np.nan
    return out.reshape(shape)


# ---------------------------------------------------------------------------
# vx.unary
# ---------------------------------------------------------------------------


def _sigmoid(x: Array) -> Array:
    # Both branches are exp of a non-positive number: never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus(x: Array) -> Array:
    return np.logaddexp(0.0, x)


def _clip(x: Array, lo: float, hi: float) -> Array:
    if x.dtype.kind in "iu":
        # Bounds arrive as f32; only the integers inside them are kept, and
        # bounds beyond the type's range are no bound at all.
        info = np.iinfo(x.dtype)
        lo_i = info.min if lo <= info.min else int(math.ceil(lo))
        hi_i = info.max if hi >= info.max else int(math.floor(hi))
        return np.minimum(np.maximum(x, x.dtype.type(lo_i)), x.dtype.type(hi_i))
    # max-then-min (not np.clip) so that min > max gives max, as ONNX says.
    return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))


def _relu(x: Array) -> Array:
    return np.maximum(x, x.dtype.type(0)) if x.dtype.kind != "u" else x


def _sign(x: Array) -> Array:
    return np.sign(x).astype(x.dtype, copy=False)


# kind -> (function, wide): `wide` kinds are computed in f64 (see `_wide`);
# the others are exact in the input type. Params follow vx.UNARY_PARAMS.
_UNARY: dict[str, tuple[UnaryFn, bool]] = {
    "relu": (_relu, False),
    "abs": (np.abs, False),
    "neg": (np.negative, False),
    "floor": (np.floor, False),
    "ceil": (np.ceil, False),
    "round": (np.rint, False),  # round half to even, as ONNX Round
    "sign": (_sign, False),
    "not": (np.logical_not, False),
    "identity": (lambda x: x, False),
    "clip": (_clip, False),
    "sigmoid": (_sigmoid, True),
    "tanh": (np.tanh, True),
    "exp": (np.exp, True),
    "log": (np.log, True),
    "sqrt": (np.sqrt, True),
    "reciprocal": (np.reciprocal, True),
    "erf": (erf, True),
    "sin": (np.sin, True),
    "cos": (np.cos, True),
    "tan": (np.tan, True),
    "softplus": (_softplus, True),
    "softsign": (lambda x: x / (1.0 + np.abs(x)), True),
    "gelu": (lambda x: 0.5 * x * (1.0 + erf(x * _SQRT1_2)), True),
    "gelu_tanh": (
        lambda x: 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))),
        True,
    ),
    "silu": (lambda x: x * _sigmoid(x), True),
    "mish": (lambda x: x * np.tanh(_softplus(x)), True),
    "leaky_relu": (lambda x, alpha: np.where(x < 0, alpha * x, x), True),
    "elu": (lambda x, alpha: np.where(x < 0, alpha * np.expm1(x), x), True),
    "celu": (
        lambda x, alpha: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha)),
        True,
    ),
    "selu": (
        lambda x, alpha, gamma: gamma * np.where(x > 0, x, alpha * np.expm1(x)),
        True,
    ),
    "thresholded_relu": (lambda x, alpha: np.where(x > alpha, x, 0.0), True),
    "hard_sigmoid": (
        lambda x, alpha, beta: np.maximum(0.0, np.minimum(1.0, alpha * x + beta)),
        True,
    ),
    "hard_swish": (lambda x: x * np.maximum(0.0, np.minimum(1.0, x / 6.0 + 0.5)), True),
}


def unary(kind: str, x: Array, params: tuple[float, ...] = ()) -> Array:
    """ONNX's formula for `kind` on `x`, in `x`'s dtype."""
    fn, wide = _UNARY[kind]
    # Params are f32 in the IR; widening them keeps f64 math in f64.
    args = [float(np.float32(p)) for p in params]
    with np.errstate(all="ignore"):
        y = fn(_wide(x) if wide else x, *args)
    return _to(y, x.dtype)


@register("vx.unary")
def unary_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = inputs[0]
    assert x is not None
    y = unary(step.attrs["kind"], x, tuple(step.attrs.get("params", ())))
    return [_to(y, _out_dtype(step))]


# ---------------------------------------------------------------------------
# vx.binary
# ---------------------------------------------------------------------------


def _div(a: Array, b: Array) -> Array:
    if a.dtype.kind not in "iu":
        return np.divide(a, b)
    # ONNX integer Div is C division: the quotient truncates toward zero.
    # A zero divisor (undefined in ONNX) gives 0 rather than a crash.
    safe = np.where(b == 0, 1, b).astype(b.dtype, copy=False)
    q = np.floor_divide(a, safe)
    if a.dtype.kind == "i":
        q = q + ((np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0)))
    return np.where(b == 0, 0, q).astype(a.dtype, copy=False)


def _pow(a: Array, b: Array) -> Array:
    """ONNX Pow: the result has the base's type, whatever the exponent's."""
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return _to(np.power(_wide(a), b.astype(np.float64)), a.dtype)
    # Integer bases: onnxruntime computes static_cast<T>(std::pow(double,
    # double)), so results truncate toward zero, lose precision past 2^53
    # like it does, and an out-of-range result is x86's "integer indefinite"
    # (the type's minimum), which is what its conversion instruction gives.
    r = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
    info = np.iinfo(a.dtype)
    bad = ~((r >= info.min) & (r <= info.max))  # also NaN
    return np.where(bad, info.min, r).astype(a.dtype)


def _mod(a: Array, b: Array) -> Array:
    # fmod=0: the sign of the divisor (numpy's remainder). Zero divisor -> 0.
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b).astype(b.dtype, copy=False)
        return np.where(b == 0, 0, np.remainder(a, safe)).astype(a.dtype, copy=False)
    return np.remainder(a, b)


def _fmod(a: Array, b: Array) -> Array:
    if a.dtype.kind in "iu":
        safe = np.where(b == 0, 1, b).astype(b.dtype, copy=False)
        return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype, copy=False)
    return np.fmod(a, b)


def _shift(fn: Callable[[Array, Array], Array]) -> Callable[[Array, Array], Array]:
    def shift(a: Array, b: Array) -> Array:
        # A shift by the bit width or more gives 0 (C leaves it undefined;
        # onnxruntime's x86 result differs by width, so 0 is the stable choice).
        bits = a.dtype.itemsize * 8
        out = fn(a, np.minimum(b, bits - 1).astype(a.dtype, copy=False))
        return np.where(b >= bits, 0, out).astype(a.dtype, copy=False)

    return shift


_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": _div,
    "pow": _pow,
    "max": np.maximum,
    "min": np.minimum,
    "mod": _mod,
    "fmod": _fmod,
    "prelu": lambda a, b: np.where(a < 0, a * b, a),
    "equal": np.equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "and": np.logical_and,
    "or": np.logical_or,
    "xor": np.logical_xor,
    "shift_left": _shift(np.left_shift),
    "shift_right": _shift(np.right_shift),
}


def binary(kind: str, a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return _BINARY[kind](a, b)


@register("vx.binary")
def binary_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    a, b = inputs
    assert a is not None and b is not None
    return [_to(binary(step.attrs["kind"], a, b), _out_dtype(step))]


# ---------------------------------------------------------------------------
# vx.select and vx.cast
# ---------------------------------------------------------------------------


@register("vx.select")
def select_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    cond, x, y = inputs
    assert cond is not None and x is not None and y is not None
    return [_to(np.where(cond, x, y), _out_dtype(step))]


def cast(x: Array, dtype: np.dtype) -> Array:
    """ONNX Cast: float -> int truncates toward zero, -> bool is `!= 0`
    (NaN is true), floats round to nearest even (overflow gives inf)."""
    if x.dtype == dtype:
        return x
    with np.errstate(all="ignore"):
        if dtype == np.bool_:
            return x != 0
        if dtype.kind in "iu" and (x.dtype.kind == "f" or x.dtype.name == "bfloat16"):
            # astype truncates, but a bfloat16/f16 source goes through f32 so
            # that numpy's cast path is the plain C conversion.
            src = x.astype(np.float64) if x.dtype.itemsize < 4 else x
            return np.trunc(src).astype(dtype)
        return x.astype(dtype)


@register("vx.cast")
def cast_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    x = inputs[0]
    assert x is not None
    return [cast(x, _out_dtype(step))]


# ---------------------------------------------------------------------------
# vx.fused_pointwise: the region interpreter. Each body op runs once over
# whole (broadcast) arrays; `_SCALAR_OPS` maps an arith/math op name to
# `f(step, args) -> array`, so a new body op is one line.
# ---------------------------------------------------------------------------

ScalarOp = Callable[[Step, list[Array]], Array]


def _signed(x: Array) -> Array:
    """Signless integers read as signed (bool stays bool)."""
    return x.view(f"i{x.dtype.itemsize}") if x.dtype.kind == "u" else x


def _unsigned(x: Array) -> Array:
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "i" else x


def _as(dtype_like: Array, y: Array) -> Array:
    """`y` reinterpreted / converted back to `dtype_like`'s dtype."""
    if y.dtype == dtype_like.dtype:
        return y
    if y.dtype.itemsize == dtype_like.dtype.itemsize and y.dtype.kind in "iu":
        return y.view(dtype_like.dtype)
    return y.astype(dtype_like.dtype)


def _ew(fn: Callable[..., Array]) -> ScalarOp:
    """A function of the arguments in their own dtype."""
    return lambda step, args: fn(*args)


def _fw(fn: Callable[..., Array]) -> ScalarOp:
    """A float function computed wide and rounded to the first argument's type."""
    return lambda step, args: _to(fn(*(_wide(a) for a in args)), args[0].dtype)


def _sint(fn: Callable[..., Array]) -> ScalarOp:
    return lambda step, args: _as(args[0], fn(*(_signed(a) for a in args)))


def _uint(fn: Callable[..., Array]) -> ScalarOp:
    return lambda step, args: _as(args[0], fn(*(_unsigned(a) for a in args)))


def _convert(read: Callable[[Array], Array]) -> ScalarOp:
    """A conversion to the result's type, reading the source as `read` says."""
    return lambda step, args: read(args[0]).astype(_out_dtype(step))


def _fptoi(step: Step, args: list[Array]) -> Array:
    return cast(args[0], _out_dtype(step))


def _constant(step: Step, args: list[Array]) -> Array:
    value = step.attrs["value"]
    dtype = _out_dtype(step) if step.out_specs else None
    arr = np.asarray(value, dtype=dtype)
    # A dense splat (vector/tensor constant) is used as the scalar it holds.
    return arr.reshape(()) if arr.size == 1 else arr


_CMPF: dict[int, Callable[[Array, Array], Array]] = {
    0: lambda a, b: np.zeros(np.broadcast_shapes(a.shape, b.shape), bool),
    1: np.equal,  # oeq
    2: np.greater,  # ogt
    3: np.greater_equal,  # oge
    4: np.less,  # olt
    5: np.less_equal,  # ole
    6: lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),  # one
    7: lambda a, b: ~np.isnan(a) & ~np.isnan(b),  # ord
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),  # ueq
    9: lambda a, b: ~(a <= b),  # ugt
    10: lambda a, b: ~(a < b),  # uge
    11: lambda a, b: ~(a >= b),  # ult
    12: lambda a, b: ~(a > b),  # ule
    13: np.not_equal,  # une
    14: lambda a, b: np.isnan(a) | np.isnan(b),  # uno
    15: lambda a, b: np.ones(np.broadcast_shapes(a.shape, b.shape), bool),
}

# MLIR's arith.cmpi predicates: eq ne slt sle sgt sge ult ule ugt uge.
_CMPI: dict[int, tuple[Callable[[Array, Array], Array], Callable[[Array], Array]]] = {
    0: (np.equal, _signed),
    1: (np.not_equal, _signed),
    2: (np.less, _signed),
    3: (np.less_equal, _signed),
    4: (np.greater, _signed),
    5: (np.greater_equal, _signed),
    6: (np.less, _unsigned),
    7: (np.less_equal, _unsigned),
    8: (np.greater, _unsigned),
    9: (np.greater_equal, _unsigned),
}


def _predicate(step: Step, names: Sequence[str]) -> int:
    p = step.attrs["predicate"]
    return names.index(p) if isinstance(p, str) else int(p)


def _cmpf(step: Step, args: list[Array]) -> Array:
    return _CMPF[_predicate(step, CMPF_PREDICATES)](*args)


def _cmpi(step: Step, args: list[Array]) -> Array:
    fn, read = _CMPI[_predicate(step, CMPI_PREDICATES)]
    return fn(read(args[0]), read(args[1]))


def _trunc_div(a: Array, b: Array) -> Array:
    return _div(a, b)


def _ceil_div(a: Array, b: Array) -> Array:
    return -_floor_div_safe(-a, b)


def _floor_div_safe(a: Array, b: Array) -> Array:
    safe = np.where(b == 0, 1, b).astype(b.dtype, copy=False)
    return np.where(b == 0, 0, np.floor_divide(a, safe)).astype(a.dtype, copy=False)


def _rem_trunc(a: Array, b: Array) -> Array:
    return _fmod(a, b)


def _shr(a: Array, b: Array) -> Array:
    return _shift(np.right_shift)(a, b)


def _shr_signed(a: Array, b: Array) -> Array:
    # An arithmetic shift by the width or more leaves only the sign bits.
    sa = _signed(a)
    amount = np.minimum(_unsigned(b), sa.dtype.itemsize * 8 - 1).astype(sa.dtype)
    return _as(a, np.right_shift(sa, amount))


def _round_away(x: Array) -> Array:
    # math.round: half away from zero (not numpy's half to even).
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _bitcast(step: Step, args: list[Array]) -> Array:
    return args[0].view(_out_dtype(step))


def _ctpop(x: Array) -> Array:
    u = _unsigned(x)
    bits = np.unpackbits(u.view(np.uint8).reshape(*u.shape, u.dtype.itemsize), axis=-1)
    return bits.sum(axis=-1).astype(x.dtype)


_SCALAR_OPS: dict[str, ScalarOp] = {
    "arith.constant": _constant,
    # float arithmetic: IEEE in the operand type, exactly as a GPU does it
    "arith.addf": _ew(np.add),
    "arith.subf": _ew(np.subtract),
    "arith.mulf": _ew(np.multiply),
    "arith.divf": _ew(np.divide),
    "arith.negf": _ew(np.negative),
    "arith.maximumf": _ew(np.maximum),  # NaN-propagating
    "arith.minimumf": _ew(np.minimum),
    "arith.maxnumf": _ew(np.fmax),  # NaN-ignoring
    "arith.minnumf": _ew(np.fmin),
    "arith.cmpf": _cmpf,
    # integer arithmetic: two's complement, signedness chosen by the op
    "arith.addi": _ew(np.add),
    "arith.subi": _ew(np.subtract),
    "arith.muli": _ew(np.multiply),
    "arith.divsi": _sint(_trunc_div),
    "arith.divui": _uint(_trunc_div),
    "arith.floordivsi": _sint(_floor_div_safe),
    "arith.ceildivsi": _sint(_ceil_div),
    "arith.ceildivui": _uint(lambda a, b: _floor_div_safe(a + (b - 1), b)),
    "arith.remsi": _sint(_rem_trunc),
    "arith.remui": _uint(_rem_trunc),
    "arith.maxsi": _sint(np.maximum),
    "arith.minsi": _sint(np.minimum),
    "arith.maxui": _uint(np.maximum),
    "arith.minui": _uint(np.minimum),
    "arith.andi": _ew(np.bitwise_and),
    "arith.ori": _ew(np.bitwise_or),
    "arith.xori": _ew(np.bitwise_xor),
    "arith.shli": _uint(_shift(np.left_shift)),
    "arith.shrui": _uint(_shr),
    "arith.shrsi": _ew(_shr_signed),
    "arith.cmpi": _cmpi,
    "arith.select": _ew(np.where),
    # conversions: the target type is the result's
    "arith.extf": _convert(lambda x: x),
    "arith.truncf": _convert(lambda x: x),
    "arith.sitofp": _convert(_signed),
    "arith.uitofp": _convert(_unsigned),
    "arith.fptosi": _fptoi,
    "arith.fptoui": _fptoi,
    "arith.extsi": _convert(_signed),
    "arith.extui": _convert(_unsigned),
    "arith.trunci": _convert(lambda x: x),
    "arith.index_cast": _convert(_signed),
    "arith.bitcast": _bitcast,
    # math: transcendental functions wide, rounded once
    "math.absf": _ew(np.abs),
    "math.absi": _ew(np.abs),
    "math.ceil": _ew(np.ceil),
    "math.floor": _ew(np.floor),
    "math.trunc": _ew(np.trunc),
    "math.round": _ew(_round_away),
    "math.roundeven": _ew(np.rint),
    "math.copysign": _ew(np.copysign),
    "math.sqrt": _fw(np.sqrt),
    "math.rsqrt": _fw(lambda x: 1.0 / np.sqrt(x)),
    "math.cbrt": _fw(np.cbrt),
    "math.exp": _fw(np.exp),
    "math.exp2": _fw(np.exp2),
    "math.expm1": _fw(np.expm1),
    "math.log": _fw(np.log),
    "math.log2": _fw(np.log2),
    "math.log10": _fw(np.log10),
    "math.log1p": _fw(np.log1p),
    "math.erf": _fw(erf),
    "math.sin": _fw(np.sin),
    "math.cos": _fw(np.cos),
    "math.tan": _fw(np.tan),
    "math.asin": _fw(np.arcsin),
    "math.acos": _fw(np.arccos),
    "math.atan": _fw(np.arctan),
    "math.atan2": _fw(np.arctan2),
    "math.sinh": _fw(np.sinh),
    "math.cosh": _fw(np.cosh),
    "math.tanh": _fw(np.tanh),
    "math.asinh": _fw(np.arcsinh),
    "math.acosh": _fw(np.arccosh),
    "math.atanh": _fw(np.arctanh),
    "math.powf": _fw(np.power),
    "math.fpowi": lambda step, args: _to(
        np.power(_wide(args[0]), args[1].astype(np.float64)), args[0].dtype
    ),
    "math.ipowi": _ew(lambda a, b: _pow(a, b)),
    "math.fma": _fw(lambda a, b, c: a * b + c),
    "math.ctpop": _ew(_ctpop),
}


def run_region(region: list[Step], inputs: list[Array]) -> list[Array]:
    """Interpret a fused body over whole arrays; returns the yielded values."""
    slots: dict[int, Array] = dict(enumerate(inputs))
    for op in region:
        args = [slots[s] for s in op.inputs]
        if op.op == "vx.yield":
            return args
        fn = _SCALAR_OPS.get(op.op)
        if fn is None:
            raise NotImplementedError(
                f"fused body op {op.op} has no CPU interpretation "
                "(add it to elementwise._SCALAR_OPS)"
            )
        with np.errstate(all="ignore"):
            result = fn(op, args)
        if op.out_specs and op.out_specs[0].dtype in _NUMPY_NAMES:
            result = _to(result, np.dtype(op.out_specs[0].dtype))
        slots[op.outputs[0]] = np.asarray(result)
    raise ValueError("fused body has no vx.yield")


_NUMPY_NAMES = frozenset(
    np.dtype(t).name
    for t in ("bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8")
) | {"bfloat16"}


@register("vx.fused_pointwise")
def fused_pointwise_kernel(step: Step, inputs: list[Array | None]) -> list[Array]:
    assert step.region is not None
    args = [x for x in inputs if x is not None]
    results = run_region(step.region, args)
    out = []
    for value, spec in zip(results, step.out_specs, strict=True):
        # A body that ignores some inputs still yields the broadcast shape.
        full = np.broadcast_to(_to(value, spec.np_dtype), spec.shape)
        out.append(contiguous(full))
    return out
