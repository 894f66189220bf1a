"""GLSL from a `vx.fused_pointwise` body: the one translator of scalar
arith/math regions, shared by the standalone fused kernel
(`kernels/fused_pointwise.py`) and by producer epilogues (a conv or matmul
applying the body at its store).

API
---
    code = generate(region, input_specs, out_specs, primary=0, first_binding=3)
    name = shaders.register_variant("matmul", code.defines, {PW_BODY: code.source})
    bindings = own_bindings + code.bindings(extra_args)

`generate` returns a `PointwiseCode`:

- `source`: the text of the virtual include file `pw_body.glsl` (`PW_BODY`).
  It needs `precision.glsl` and `common.glsl` included first (it uses `sfp`,
  `afp`, `LOAD`, `STORE` and the `vknn_*` helpers) and declares, all with the
  `pw_` prefix:
  - one readonly storage buffer per *bound* input (`pw_in<k>`), at bindings
    `first_binding, first_binding + 1, ...` in input order;
  - epilogue mode (`primary` is an input index, one result):
    `afp pw_apply(afp v, uint idx)` - `v` is the producer's value of input
    `primary` at logical element `idx`; returns the body's result there;
  - standalone mode (`primary=None`): every input bound, then one writeonly
    buffer per result (`pw_out<j>`), and `void pw_run(uint idx)` that loads,
    computes and stores element `idx` of every result.
  `idx` is always the row-major (NCHW / flat) index into the result shape
  `out_specs[0].shape`; a producer storing another layout converts its
  position to that index first. Bound inputs are read at their numpy
  broadcast of that index (the index arithmetic is generated with the shapes
  as literals, so divisions by constants fold).
- `extra_inputs`: the input indices bound, in binding order.
- `defines`: `PW_EPI=1` (epilogue) or `PW_GENERATED=1` (standalone): what a
  host shader tests to `#include "pw_body.glsl"`.
- `key`: a content hash (equal bodies over equal shapes share pipelines).

The body computes in fp32 (f16 body values too: rounding once at the store is
at least as accurate as the CPU's per-op f16 rounding), i1 as `bool`
(stored as int32 words 0/1), i8/i16/i32 as `int` (stored as int32 words,
kept sign-extended: results of i8/i16 ops wrap to their width, unsigned ops
reinterpret the width's bits), i64 as `int64_t` (stored as int64; the body
is then built with `VKNN_INT64`, which needs shaderInt64: `uses_int64`);
the semantics are the CPU oracle's (`oracle/elementwise.py`), float ->
int conversions those of onnxruntime's Cast (NaN and values past the range
give the type's minimum before wrapping). Epilogue bodies take no i64.
`unsupported(...)` says why a body cannot be generated (None when it can),
for gates; it is exactly the condition under which `generate` raises.

This module must not touch a device or import xDSL; it only writes text.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vknn.runtime.op_kinds import CMPF_PREDICATES, CMPI_PREDICATES
from vknn.runtime.plan import Step, TensorSpec

PW_BODY = "pw_body.glsl"
"""The virtual include file name `source` is compiled as."""

FLOAT_TYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
"""Signless integer values a body computes on (fuse-pointwise fuses no
unsigned tensor types), by their bits."""
STORED = ("float32", "float16", "bool", "int8", "int16", "int32", "int64")
"""Tensor dtypes a fused op may read and write."""

# Trig functions: Vulkan bounds their error only loosely (absolute 2^-11 for
# sin/cos), far outside the oracle's tolerance.
_REFUSED = {
    op: "Vulkan bounds trigonometric functions only loosely; stays on the CPU"
    for op in (
        "math.sin",
        "math.cos",
        "math.tan",
        "math.asin",
        "math.acos",
        "math.atan",
        "math.atan2",
    )
}
_REFUSED["math.ipowi"] = "integer powers are not generated yet"


# Helpers the body may call, emitted only when used (GLSL has no dead-function
# elimination before compilation, and unused helpers only cost compile time).
_HELPERS: dict[str, str] = {
    "pw_maxnum": "float pw_maxnum(float a, float b) "
    "{ return isnan(a) ? b : (isnan(b) ? a : max(a, b)); }",
    "pw_minnum": "float pw_minnum(float a, float b) "
    "{ return isnan(a) ? b : (isnan(b) ? a : min(a, b)); }",
    "pw_copysign": "float pw_copysign(float a, float b) { return uintBitsToFloat("
    "(floatBitsToUint(a) & 0x7fffffffu) | (floatBitsToUint(b) & 0x80000000u)); }",
    "pw_round": "float pw_round(float x) { return pw_copysign(floor(abs(x) + 0.5), x); }",
    "pw_cbrt": """float pw_cbrt(float x) {
    float a = abs(x);
    if (a == 0.0 || isinf(a) || isnan(a)) return x;
    float y = exp2(log2(a) / 3.0);
    y -= (y * y * y - a) / (3.0 * y * y);  // one Newton step: exp2/log2 are loose
    return pw_copysign(y, x);
}""",
    # GLSL pow is undefined for x < 0 and for x == 0, y <= 0; ONNX Pow is not.
    "pw_pow": """float pw_pow(float x, float y) {
    if (y == 0.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    bool yint = floor(y) == y;
    bool odd = yint && abs(y) < 16777216.0 && (int(abs(y)) & 1) == 1;
    if (x == 0.0) return y > 0.0 ? (odd ? x : 0.0) : (odd ? 1.0 / x : 1.0 / 0.0);
    if (x < 0.0 && !yint) return uintBitsToFloat(0x7fc00000u);
    float r = exp2(y * log2(abs(x)));
    return (x < 0.0 && odd) ? -r : r;
}""",
    # Round to the nearest fp16 value (ties to even; past 65520 +-inf) with
    # integer arithmetic, as cast.comp: lavapipe folds unpackHalf(packHalf(x))
    # into x, which would keep values fp16 cannot hold.
    "pw_f16": """float pw_f16(float v) {
    if (isnan(v) || isinf(v)) return v;
    uint u = floatBitsToUint(v);
    uint sgn = u & 0x80000000u;
    uint mag = u & 0x7fffffffu;
    if (mag >= 0x477ff000u) return uintBitsToFloat(sgn | 0x7f800000u);
    if (mag >= 0x38800000u) {
        mag += 0x00000fffu + ((mag >> 13) & 1u);
        return uintBitsToFloat(sgn | (mag & 0xffffe000u));
    }
    uint e = mag >> 23;
    if (e < 102u) return uintBitsToFloat(sgn);
    uint m = (mag & 0x007fffffu) | 0x00800000u;
    uint s = 126u - e;
    uint q = m >> s;
    uint rem = m & ((1u << s) - 1u);
    uint half_ = 1u << (s - 1u);
    if (rem > half_ || (rem == half_ && (q & 1u) == 1u)) q += 1u;
    float r = float(q) * 5.9604644775390625e-8;
    return sgn != 0u ? -r : r;
}""",
    # Float -> int as onnxruntime's Cast on x86: NaN, inf and values past the
    # range give the minimum (2^31 and 2^63 are exact in fp32).
    "pw_f2i": "int pw_f2i(float x) { return (isnan(x) || x >= 2147483648.0 "
    "|| x < -2147483648.0) ? int(0x80000000u) : int(x); }",
    "pw_f2l": "int64_t pw_f2l(float x) { return (isnan(x) || x >= uintBitsToFloat(0x5f000000u) "
    "|| x < uintBitsToFloat(0xdf000000u)) ? int64_t(0x8000000000000000ul) : int64_t(x); }",
    "pw_sdiv_l": "int64_t pw_sdiv_l(int64_t a, int64_t b) { return b == 0l ? 0l : a / b; }",
    "pw_srem_l": "int64_t pw_srem_l(int64_t a, int64_t b) "
    "{ return b == 0l ? 0l : a - (a / b) * b; }",
    "pw_floordiv_l": """int64_t pw_floordiv_l(int64_t a, int64_t b) {
    if (b == 0l) return 0l;
    int64_t q = a / b;
    return (a - q * b != 0l && ((a < 0l) != (b < 0l))) ? q - 1l : q;
}""",
    "pw_ceildiv_l": """int64_t pw_ceildiv_l(int64_t a, int64_t b) {
    if (b == 0l) return 0l;
    int64_t q = a / b;
    return (a - q * b != 0l && ((a < 0l) == (b < 0l))) ? q + 1l : q;
}""",
    "pw_sdiv": "int pw_sdiv(int a, int b) { return b == 0 ? 0 : a / b; }",
    "pw_srem": "int pw_srem(int a, int b) { return b == 0 ? 0 : a - (a / b) * b; }",
    "pw_floordiv": """int pw_floordiv(int a, int b) {
    if (b == 0) return 0;
    int q = a / b;
    return (a - q * b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}""",
    "pw_ceildiv": """int pw_ceildiv(int a, int b) {
    if (b == 0) return 0;
    int q = a / b;
    return (a - q * b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}""",
    "pw_udiv": "int pw_udiv(int a, int b) { return b == 0 ? 0 : int(uint(a) / uint(b)); }",
    "pw_urem": "int pw_urem(int a, int b) { return b == 0 ? 0 : int(uint(a) % uint(b)); }",
    "pw_uceildiv": "int pw_uceildiv(int a, int b) "
    "{ return b == 0 ? 0 : int((uint(a) + uint(b) - 1u) / uint(b)); }",
    "pw_shl": "int pw_shl(int a, int b) { return uint(b) >= 32u ? 0 : int(uint(a) << uint(b)); }",
    "pw_shru": "int pw_shru(int a, int b) { return uint(b) >= 32u ? 0 : int(uint(a) >> uint(b)); }",
    "pw_shrs": "int pw_shrs(int a, int b) { return a >> min(uint(b), 31u); }",
}
_HELPER_DEPS = {"pw_round": ["pw_copysign"], "pw_cbrt": ["pw_copysign"]}


class CodegenError(ValueError):
    """The body holds something this generator does not translate."""


@dataclass(frozen=True)
class PointwiseCode:
    source: str
    extra_inputs: tuple[int, ...]
    defines: dict[str, str] = field(hash=False)
    key: str

    def bindings(self, inputs: Sequence[Any]) -> list[Any]:
        """Bindings of the bound inputs, from the fused op's input args
        (`kernels.TensorArg`s, all of them, in operand order)."""
        return [inputs[i].binding() for i in self.extra_inputs]


def _glsl_type(dtype: str) -> str:
    if dtype in FLOAT_TYPES:
        return "float"
    if dtype == "bool":
        return "bool"
    if dtype == "int64":
        return "int64_t"
    if dtype in INT_BITS:
        return "int"
    raise CodegenError(f"{dtype} values are not generated (f16/f32, i1 and signless i8..i64 are)")


def _unsigned(a: str, dtype: str) -> str:
    """The bits of signless `a` (held sign-extended) read as unsigned."""
    if dtype == "int64":
        return f"uint64_t({a})"
    if dtype == "bool":
        return f"uint({a})"
    bits = INT_BITS[dtype]
    return f"uint({a})" if bits == 32 else f"(uint({a}) & {(1 << bits) - 1}u)"


def _wrap(expr: str, dtype: str) -> str:
    """`expr` (an int) wrapped to `dtype`'s width, sign-extended."""
    bits = INT_BITS.get(dtype, 32)
    return expr if bits >= 32 else f"bitfieldExtract(int({expr}), 0, {bits})"


def _word(dtype: str) -> str:
    """The GLSL element type of a `dtype` tensor's storage buffer."""
    if dtype in ("float32", "float16"):
        return "sfp"
    return "int64_t" if dtype == "int64" else "int"


def _load(buf: str, ix: str, dtype: str) -> str:
    if dtype in ("float32", "float16"):
        return f"LOAD({buf}, {ix})"
    return f"({buf}[{ix}] != 0)" if dtype == "bool" else f"{buf}[{ix}]"


def _store(buf: str, v: str, dtype: str) -> str:
    if dtype in ("float32", "float16"):
        return f"STORE({buf}, idx, {v});"
    return f"{buf}[idx] = {v} ? 1 : 0;" if dtype == "bool" else f"{buf}[idx] = {v};"


def uses_int64(
    region: Sequence[Step] | None,
    input_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
) -> bool:
    """Whether the body's GLSL needs 64-bit integers (shaderInt64)."""
    specs = [*input_specs, *out_specs, *(s for op in region or () for s in op.out_specs)]
    return any(s.dtype == "int64" for s in specs)


def _float_literal(v: float) -> str:
    v = float(np.float32(v))
    if math.isnan(v):
        return "uintBitsToFloat(0x7fc00000u)"
    if math.isinf(v):
        return "uintBitsToFloat(0x7f800000u)" if v > 0 else "uintBitsToFloat(0xff800000u)"
    text = repr(v)
    return text if ("." in text or "e" in text) else text + ".0"


def _literal(value: Any, ty: str) -> str:
    arr = np.asarray(value)
    if arr.size != 1:
        raise CodegenError("a non-splat constant in a fused body")
    v = arr.reshape(()).item()
    if ty == "float":
        return _float_literal(float(v))
    if ty == "bool":
        return "true" if bool(v) else "false"
    iv = int(v)
    if ty == "int64_t":
        if not -(1 << 63) <= iv < (1 << 64):
            raise CodegenError(f"integer constant {iv} does not fit 64 bits")
        return f"int64_t({iv & 0xFFFFFFFFFFFFFFFF}ul)"
    if not -(1 << 31) <= iv < (1 << 32):
        raise CodegenError(f"integer constant {iv} does not fit 32 bits")
    return f"int({iv & 0xFFFFFFFF}u)" if iv >= (1 << 31) or iv < 0 else str(iv)


def _predicate(step: Step, names: Sequence[str]) -> str:
    p = step.attrs["predicate"]
    return p if isinstance(p, str) else names[int(p)]


def _cmpf(p: str, a: str, b: str) -> str:
    nan = f"(isnan({a}) || isnan({b}))"
    return {
        "false": "false",
        "true": "true",
        "oeq": f"({a} == {b})",
        "ogt": f"({a} > {b})",
        "oge": f"({a} >= {b})",
        "olt": f"({a} < {b})",
        "ole": f"({a} <= {b})",
        "one": f"(!{nan} && {a} != {b})",
        "ord": f"(!{nan})",
        "ueq": f"({nan} || {a} == {b})",
        "ugt": f"!({a} <= {b})",
        "uge": f"!({a} < {b})",
        "ult": f"!({a} >= {b})",
        "ule": f"!({a} > {b})",
        "une": f"({nan} || {a} != {b})",
        "uno": nan,
    }[p]


def _cmpi(p: str, a: str, b: str, ty: str, dtype: str) -> str:
    op = {
        "eq": "==",
        "ne": "!=",
        "slt": "<",
        "sle": "<=",
        "sgt": ">",
        "sge": ">=",
        "ult": "<",
        "ule": "<=",
        "ugt": ">",
        "uge": ">=",
    }[p]
    if ty == "bool":
        # The oracle reads i1 as numpy bool (true = 1) for every predicate.
        return f"(int({a}) {op} int({b}))"
    if p.startswith("u"):
        return f"({_unsigned(a, dtype)} {op} {_unsigned(b, dtype)})"
    return f"({a} {op} {b})"


class _Body:
    """Translates one region into statements over local variables."""

    def __init__(self) -> None:
        self.types: dict[int, str] = {}
        self.dtypes: dict[int, str] = {}
        """Model dtype of each slot (the widths integer ops wrap to)."""
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.consts: dict[int, float] = {}
        """Float constants by slot (a constant exponent specializes powf)."""

    def need(self, helper: str) -> str:
        for dep in _HELPER_DEPS.get(helper, []):
            self.need(dep)
        if helper not in self.helpers:
            self.helpers.append(helper)
        return helper

    def emit(self, op: Step) -> None:
        if op.op in _REFUSED:
            raise CodegenError(f"{op.op}: {_REFUSED[op.op]}")
        if len(op.outputs) != 1 or len(op.out_specs) != 1:
            raise CodegenError(f"{op.op} with {len(op.outputs)} results")
        dtype = op.out_specs[0].dtype
        ty = _glsl_type(dtype)
        args = [f"v{s}" for s in op.inputs]
        arg_types = [self.types[s] for s in op.inputs]
        arg_dtypes = [self.dtypes[s] for s in op.inputs]
        if op.op != "arith.constant" and (
            ty == "int64_t"
            or "int64_t" in arg_types
            or (ty == "int" and dtype != "int32")
            or any(d in ("int8", "int16") for d in arg_dtypes)
        ):
            expr = self.wide_int_expr(op, args, arg_dtypes, dtype)
        else:
            expr = self.expr(op, args, arg_types, ty)
        out = op.outputs[0]
        self.types[out] = ty
        self.dtypes[out] = dtype
        self.lines.append(f"    {ty} v{out} = {expr};")

    def wide_int_expr(  # noqa: C901
        self, op: Step, a: list[str], at: list[str], dtype: str
    ) -> str:
        """Ops on i8/i16 (wrapped to their width) and i64 values, and the
        conversions into and out of them (`at`: the operands' model dtypes)."""
        name = op.op
        ty = _glsl_type(dtype)
        src = at[0] if at else dtype
        wide = ty == "int64_t"
        z = "0l" if wide else "0"
        h = self.need
        sfx = "_l" if wide else ""
        if name in ("arith.extsi", "arith.trunci", "arith.index_cast", "arith.extui"):
            if dtype == "bool":
                return f"({a[0]} != {'0l' if src == 'int64' else '0'})"
            if src == "bool":
                return f"{ty}({a[0]} ? 1 : 0)"
            v = _unsigned(a[0], src) if name == "arith.extui" else a[0]
            return _wrap(f"{ty}({v})", dtype)
        if name in ("arith.sitofp", "arith.uitofp"):
            if src == "bool":
                return f"float({a[0]})"
            v = f"float({_unsigned(a[0], src) if name == 'arith.uitofp' else a[0]})"
            # An f16 result is an f16 value (2^40 is inf), as the oracle's cast.
            return f"{h('pw_f16')}({v})" if dtype == "float16" else v
        if name in ("arith.fptosi", "arith.fptoui"):
            if wide:
                return f"{h('pw_f2l')}({a[0]})"
            return _wrap(f"{h('pw_f2i')}({a[0]})", dtype)
        if name == "arith.cmpi":
            return _cmpi(_predicate(op, CMPI_PREDICATES), a[0], a[1], _glsl_type(src), src)
        if name == "arith.select":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            sym = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[name]
            return f"({a[0]} {sym} {a[1]})"
        signed: dict[str, Callable[[list[str]], str]] = {
            "arith.addi": lambda x: f"{x[0]} + {x[1]}",
            "arith.subi": lambda x: f"{x[0]} - {x[1]}",
            "arith.muli": lambda x: f"{x[0]} * {x[1]}",
            "arith.maxsi": lambda x: f"({x[0]} > {x[1]} ? {x[0]} : {x[1]})",
            "arith.minsi": lambda x: f"({x[0]} < {x[1]} ? {x[0]} : {x[1]})",
            "math.absi": lambda x: f"({x[0]} < {z} ? -{x[0]} : {x[0]})",
            "arith.divsi": lambda x: f"{h('pw_sdiv' + sfx)}({x[0]}, {x[1]})",
            "arith.remsi": lambda x: f"{h('pw_srem' + sfx)}({x[0]}, {x[1]})",
            "arith.floordivsi": lambda x: f"{h('pw_floordiv' + sfx)}({x[0]}, {x[1]})",
            "arith.ceildivsi": lambda x: f"{h('pw_ceildiv' + sfx)}({x[0]}, {x[1]})",
        }
        fn = signed.get(name)
        if fn is not None:
            return _wrap(fn(a), dtype)
        uops = {"arith.divui": "/", "arith.remui": "%"}
        if name in uops:
            ua, ub = _unsigned(a[0], dtype), _unsigned(a[1], dtype)
            uz = "0ul" if wide else "0u"
            return _wrap(f"({ub} == {uz} ? {z} : {ty}({ua} {uops[name]} {ub}))", dtype)
        if name in ("arith.maxui", "arith.minui"):
            ua, ub = _unsigned(a[0], dtype), _unsigned(a[1], dtype)
            cmp = ">" if name == "arith.maxui" else "<"
            return f"({ua} {cmp} {ub} ? {a[0]} : {a[1]})"
        if name == "math.fpowi":
            return f"{h('pw_pow')}({a[0]}, float({a[1]}))"
        raise CodegenError(f"fused body op {name} on {dtype} values is not generated")

    def expr(self, op: Step, a: list[str], at: list[str], ty: str) -> str:  # noqa: C901
        name = op.op
        h = self.need
        if name == "arith.constant":
            return _literal(op.attrs["value"], ty)
        simple: dict[str, Callable[[list[str]], str]] = {
            "arith.addf": lambda x: f"{x[0]} + {x[1]}",
            "arith.subf": lambda x: f"{x[0]} - {x[1]}",
            "arith.mulf": lambda x: f"{x[0]} * {x[1]}",
            "arith.divf": lambda x: f"{x[0]} / {x[1]}",
            "arith.negf": lambda x: f"-{x[0]}",
            "arith.maximumf": lambda x: f"vknn_max({x[0]}, {x[1]})",
            "arith.minimumf": lambda x: f"vknn_min({x[0]}, {x[1]})",
            "arith.maxnumf": lambda x: f"{h('pw_maxnum')}({x[0]}, {x[1]})",
            "arith.minnumf": lambda x: f"{h('pw_minnum')}({x[0]}, {x[1]})",
            "arith.addi": lambda x: f"{x[0]} + {x[1]}",
            "arith.subi": lambda x: f"{x[0]} - {x[1]}",
            "arith.muli": lambda x: f"{x[0]} * {x[1]}",
            "arith.divsi": lambda x: f"{h('pw_sdiv')}({x[0]}, {x[1]})",
            "arith.divui": lambda x: f"{h('pw_udiv')}({x[0]}, {x[1]})",
            "arith.floordivsi": lambda x: f"{h('pw_floordiv')}({x[0]}, {x[1]})",
            "arith.ceildivsi": lambda x: f"{h('pw_ceildiv')}({x[0]}, {x[1]})",
            "arith.ceildivui": lambda x: f"{h('pw_uceildiv')}({x[0]}, {x[1]})",
            "arith.remsi": lambda x: f"{h('pw_srem')}({x[0]}, {x[1]})",
            "arith.remui": lambda x: f"{h('pw_urem')}({x[0]}, {x[1]})",
            "arith.maxsi": lambda x: f"max({x[0]}, {x[1]})",
            "arith.minsi": lambda x: f"min({x[0]}, {x[1]})",
            "arith.maxui": lambda x: f"int(max(uint({x[0]}), uint({x[1]})))",
            "arith.minui": lambda x: f"int(min(uint({x[0]}), uint({x[1]})))",
            "arith.shli": lambda x: f"{h('pw_shl')}({x[0]}, {x[1]})",
            "arith.shrui": lambda x: f"{h('pw_shru')}({x[0]}, {x[1]})",
            "arith.shrsi": lambda x: f"{h('pw_shrs')}({x[0]}, {x[1]})",
            "arith.select": lambda x: f"({x[0]} ? {x[1]} : {x[2]})",
            "math.absf": lambda x: f"abs({x[0]})",
            "math.absi": lambda x: f"abs({x[0]})",
            "math.ceil": lambda x: f"ceil({x[0]})",
            "math.floor": lambda x: f"floor({x[0]})",
            "math.trunc": lambda x: f"trunc({x[0]})",
            "math.round": lambda x: f"{h('pw_round')}({x[0]})",
            "math.roundeven": lambda x: f"roundEven({x[0]})",
            "math.copysign": lambda x: f"{h('pw_copysign')}({x[0]}, {x[1]})",
            "math.sqrt": lambda x: f"sqrt({x[0]})",
            "math.rsqrt": lambda x: f"inversesqrt({x[0]})",
            "math.cbrt": lambda x: f"{h('pw_cbrt')}({x[0]})",
            "math.exp": lambda x: f"exp({x[0]})",
            "math.exp2": lambda x: f"exp2({x[0]})",
            "math.expm1": lambda x: f"vknn_expm1({x[0]})",
            "math.log": lambda x: f"log({x[0]})",
            "math.log2": lambda x: f"log2({x[0]})",
            "math.log10": lambda x: f"(log2({x[0]}) * 0.30102999566398120)",
            "math.log1p": lambda x: f"vknn_log1p({x[0]})",
            "math.erf": lambda x: f"vknn_erf({x[0]})",
            "math.tanh": lambda x: f"vknn_tanh({x[0]})",
            "math.sinh": lambda x: f"(0.5 * (vknn_expm1({x[0]}) - vknn_expm1(-{x[0]})))",
            "math.cosh": lambda x: f"(0.5 * (exp({x[0]}) + exp(-{x[0]})))",
            "math.atanh": lambda x: f"(0.5 * vknn_log1p(2.0 * {x[0]} / (1.0 - {x[0]})))",
            "math.asinh": lambda x: (
                f"{h('pw_copysign')}(vknn_log1p(abs({x[0]}) + {x[0]} * "
                f"{x[0]} / (1.0 + sqrt(1.0 + {x[0]} * {x[0]}))), {x[0]})"
            ),
            "math.acosh": lambda x: f"log({x[0]} + sqrt({x[0]} * {x[0]} - 1.0))",
            "math.fpowi": lambda x: f"{h('pw_pow')}({x[0]}, float({x[1]}))",
            "math.fma": lambda x: f"fma({x[0]}, {x[1]}, {x[2]})",
            "math.ctpop": lambda x: f"bitCount({x[0]})",
        }
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            if ty == "bool":
                sym = {"arith.andi": "&&", "arith.ori": "||", "arith.xori": "^^"}[name]
            else:
                sym = {"arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}[name]
            return f"({a[0]} {sym} {a[1]})"
        if name == "arith.cmpf":
            return _cmpf(_predicate(op, CMPF_PREDICATES), a[0], a[1])
        if name == "arith.cmpi":
            src = self.dtypes[op.inputs[0]]
            return _cmpi(_predicate(op, CMPI_PREDICATES), a[0], a[1], at[0], src)
        if name == "math.powf":
            return self.powf(op, a)
        if name in ("arith.extf", "arith.truncf"):
            if op.out_specs[0].dtype == "float16" and name == "arith.truncf":
                return f"{h('pw_f16')}({a[0]})"
            return a[0]
        if name in ("arith.sitofp", "arith.uitofp"):
            if at[0] == "bool":
                return f"float({a[0]})"
            v = f"float({a[0]})" if name == "arith.sitofp" else f"float(uint({a[0]}))"
            # An f16 result is an f16 value (past 65520 is inf), as the oracle's cast.
            return f"{h('pw_f16')}({v})" if op.out_specs[0].dtype == "float16" else v
        if name in ("arith.fptosi", "arith.fptoui"):
            if ty == "bool":
                return f"({a[0]} != 0.0)"
            return f"{h('pw_f2i')}({a[0]})"  # the oracle casts both the same way
        if name in ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast"):
            if ty == at[0]:
                return a[0]
            if ty == "bool":
                return f"({a[0]} != 0)"
            return f"({a[0]} ? 1 : 0)" if at[0] == "bool" else f"int({a[0]})"
        if name == "arith.bitcast":
            if ty == "float" and at[0] == "int":
                return f"intBitsToFloat({a[0]})"
            if ty == "int" and at[0] == "float":
                return f"floatBitsToInt({a[0]})"
            if ty == at[0]:
                return a[0]
            raise CodegenError(f"bitcast {at[0]} -> {ty}")
        fn = simple.get(name)
        if fn is None:
            raise CodegenError(f"fused body op {name} has no GLSL translation")
        return fn(a)

    def powf(self, op: Step, a: list[str]) -> str:
        # A constant exponent (x^2 in a decomposed LayerNorm, x^0.5) becomes
        # exact arithmetic instead of exp2(y log2 x).
        const = self.consts.get(op.inputs[1])
        x = a[0]
        if const == 1.0:
            return x
        if const == 2.0:
            return f"({x} * {x})"
        if const == 3.0:
            return f"({x} * {x} * {x})"
        if const == 0.5:
            return f"sqrt({x})"
        if const == -1.0:
            return f"(1.0 / {x})"
        return f"{self.need('pw_pow')}({x}, {a[1]})"


def _collapse(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """(dims, strides): the fewest output dims and the input's element stride
    along each (0 where it broadcasts) that index `shape` broadcast to `out`."""
    rank = len(out)
    if len(shape) > rank:
        raise CodegenError(f"input {shape} has more dims than the result {out}")
    full = (1,) * (rank - len(shape)) + tuple(shape)
    st = [0] * rank
    acc = 1
    for d in range(rank - 1, -1, -1):
        if full[d] not in (1, out[d]):
            raise CodegenError(f"input {shape} does not broadcast to {out}")
        st[d] = 0 if full[d] == 1 else acc
        acc *= full[d]
    dims: list[int] = []
    strides: list[int] = []
    for d in range(rank):
        if out[d] == 1:
            continue
        if dims and strides[-1] == st[d] * out[d]:
            dims[-1] *= out[d]
            strides[-1] = st[d]
            continue
        dims.append(out[d])
        strides.append(st[d])
    return dims, strides


def index_expr(shape: tuple[int, ...], out: tuple[int, ...], idx: str = "idx") -> str:
    """GLSL uint expression: the element of `shape` (row-major) that numpy
    broadcasting reads at row-major element `idx` of `out`."""
    dims, strides = _collapse(tuple(shape), tuple(out))
    if all(s == 0 for s in strides):
        return "0u"
    if len(dims) == 1 and strides[0] == 1:
        return idx
    terms = []
    after = math.prod(dims)
    for i, (d, s) in enumerate(zip(dims, strides, strict=True)):
        after //= d
        if s == 0:
            continue
        t = idx if after == 1 else f"({idx} / {after}u)"
        if i > 0:
            t = f"({t} % {d}u)"
        terms.append(t if s == 1 else f"{t} * {s}u")
    return " + ".join(terms)


def unsupported(
    region: Sequence[Step] | None,
    input_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    primary: int | None = None,
) -> str | None:
    """Why `generate` cannot translate this body (None when it can)."""
    try:
        generate(region, input_specs, out_specs, primary=primary)
    except CodegenError as e:
        return str(e)
    return None


def generate(
    region: Sequence[Step] | None,
    input_specs: Sequence[TensorSpec],
    out_specs: Sequence[TensorSpec],
    primary: int | None = 0,
    first_binding: int = 0,
) -> PointwiseCode:
    """GLSL for a fused body; see the module docstring for the contract."""
    if not region:
        raise CodegenError("a fused op without a body")
    if not out_specs:
        raise CodegenError("a fused op without results")
    out_shape = tuple(out_specs[0].shape)
    for s in (*input_specs, *out_specs):
        if s.dtype not in STORED:
            raise CodegenError(f"{s.dtype} tensors are not read or written by fused kernels")
    wide = uses_int64(region, input_specs, out_specs)
    if primary is not None:
        if len(out_specs) != 1:
            raise CodegenError("an epilogue yields one value")
        if tuple(input_specs[primary].shape) != out_shape:
            raise CodegenError("an epilogue's primary input must have the result's shape")
        if input_specs[primary].dtype not in ("float32", "float16"):
            raise CodegenError("an epilogue's primary input must be a float tensor")
        if out_specs[0].dtype not in ("float32", "float16"):
            raise CodegenError("an epilogue's result must be a float tensor")
        if wide:
            raise CodegenError("an epilogue body computes no int64 values")
    body = _Body()
    n_in = len(input_specs)
    for k in range(n_in):
        body.types[k] = _glsl_type(input_specs[k].dtype)
        body.dtypes[k] = input_specs[k].dtype
    yields: list[int] = []
    for op in region:
        if op.op == "vx.yield":
            yields = list(op.inputs)
            break
        body.emit(op)
        if op.op == "arith.constant" and body.types[op.outputs[0]] == "float":
            body.consts[op.outputs[0]] = float(np.asarray(op.attrs["value"]).reshape(-1)[0])
    else:
        raise CodegenError("fused body has no vx.yield")
    if len(yields) != len(out_specs):
        raise CodegenError(f"the body yields {len(yields)} values for {len(out_specs)} results")
    for y, o in zip(yields, out_specs, strict=True):
        if body.types[y] != _glsl_type(o.dtype):
            raise CodegenError(f"the body yields a {body.types[y]} for a {o.dtype} result")

    bound = [k for k in range(n_in) if k != primary]
    decl: list[str] = []
    for j, k in enumerate(bound):
        decl.append(
            f"layout(std430, binding = {first_binding + j}) readonly buffer PwIn{k} "
            f"{{ {_word(input_specs[k].dtype)} pw_in{k}[]; }};"
        )
    loads = []
    for k in bound:
        ix = index_expr(tuple(input_specs[k].shape), out_shape)
        loads.append(f"    {body.types[k]} v{k} = {_load(f'pw_in{k}', ix, input_specs[k].dtype)};")
    helpers = "\n".join(_HELPERS[h] for h in body.helpers)
    lines = "\n".join(body.lines)
    parts = [
        "// Generated by vknn.kernels.pointwise_codegen; do not edit.",
        *decl,
        helpers,
    ]
    if primary is not None:
        parts.append(
            "afp pw_apply(afp v, uint idx) {\n"
            f"    float v{primary} = v;\n" + "\n".join(loads) + "\n" + lines + "\n"
            f"    return v{yields[0]};\n}}"
        )
        defines = {"PW_EPI": "1"}
    else:
        for j, o in enumerate(out_specs):
            parts.append(
                f"layout(std430, binding = {first_binding + len(bound) + j}) writeonly buffer "
                f"PwOut{j} {{ {_word(o.dtype)} pw_out{j}[]; }};"
            )
        stores = "\n".join(
            "    " + _store(f"pw_out{j}", f"v{y}", o.dtype)
            for j, (y, o) in enumerate(zip(yields, out_specs, strict=True))
        )
        parts.append(
            "void pw_run(uint idx) {\n" + "\n".join(loads) + "\n" + lines + "\n" + stores + "\n}"
        )
        defines = {"PW_GENERATED": "1"}
        if wide:
            defines["VKNN_INT64"] = "1"
    source = "\n".join(p for p in parts if p) + "\n"
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    return PointwiseCode(source, tuple(bound), defines, key)
