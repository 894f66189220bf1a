"""fuse-pointwise: the one general region-growing fusion of per-element ops.

Grows each maximal, convex, same-shape region of `vx` pointwise ops
(`vx.unary`, `vx.binary`, `vx.select`, `vx.cast`) whose kinds have a scalar
`arith`/`math` form into one `vx.fused_pointwise` op:

  * the region's *primary input* (a non-constant input of the region's full
    shape) is operand 0; other inputs, broadcast ones such as a per-channel
    bias `[1, C, 1, 1]`, follow; a splat constant becomes an `arith.constant`
    in the body instead of an operand;
  * every member whose value is used outside the region is a result, so no
    value is computed twice and nothing outside changes;
  * when the primary input is the only use of a value produced by an op that
    HOSTS_EPILOGUE (conv, matmul/gemm, pool, reduce), the region (then with a
    single result) is marked `vx.epilogue`: the producer applies it at its
    store (docs/adr/0003-fusion-and-layouts.md). The CPU backend runs it as
    an ordinary fused op, so marking never changes numerics.

What it must leave alone: kinds with no scalar mapping (they end a region),
regions with fewer than `min-ops` members that cannot be an epilogue (one op
in a kernel of its own gains nothing), values whose shape differs from the
region's (a broadcast that grows the shape starts a new region), constants
(never a primary input; all-constant ops are const-fold's), and every op that
is not pointwise. It must run after shape resolution: a dynamic shape on a
pointwise op or an epilogue host is an error, not a guess.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects import vx
from vknn.dialects.onnx import NAME_ATTR
from vknn.ir.constants import to_numpy
from vknn.transforms.vx_graph import (
    graph_blocks,
    require_static,
    restore_topological_order,
)

EPILOGUE_ATTR = "vx.epilogue"
"""Unit attribute on a `vx.fused_pointwise`: it is the store epilogue of the
op that defines its operand 0."""
FUSED_NAMES_ATTR = "vx.fused_names"
"""The ONNX node names a fused op was made of, in graph order (for reports)."""

_MEMBER_TYPES = (vx.UnaryOp, vx.BinaryOp, vx.SelectOp, vx.CastOp)


# ---------------------------------------------------------------------------
# Scalar forms: each vx kind as arith/math ops on one element.
# ---------------------------------------------------------------------------


class _Body:
    """Builds a fused body; scalar constants are created once per body."""

    def __init__(self, block: Block):
        self.block = block
        self._consts: dict[tuple[str, Attribute], SSAValue] = {}

    def __call__(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        key = (repr(value), t)
        if key not in self._consts:
            if isinstance(t, AnyFloat):
                attr: Attribute = FloatAttr(float(value), t)
            else:
                assert isinstance(t, IntegerType)
                attr = IntegerAttr(int(value) if t != i1 else int(bool(value)), t)
            self._consts[key] = self(arith.ConstantOp(attr))  # type: ignore[arg-type]
        return self._consts[key]


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _is_signless_int(t: Attribute) -> bool:
    return (
        isinstance(t, IntegerType) and t.width.data > 1 and t.signedness.data == Signedness.SIGNLESS
    )


Unary = Callable[[_Body, SSAValue, Sequence[float]], SSAValue]


def _sigmoid(b: _Body, x: SSAValue) -> SSAValue:
    one = b.const(1.0, x.type)
    e = b(math.ExpOp(b(arith.NegfOp(x))))
    return b(arith.DivfOp(one, b(arith.AddfOp(one, e))))


def _softplus(b: _Body, x: SSAValue) -> SSAValue:
    # log(exp(x) + 1), as ONNX defines it (log1p would round differently)
    return b(math.LogOp(b(arith.AddfOp(b(math.ExpOp(x)), b.const(1.0, x.type)))))


def _expm1_scaled(b: _Body, x: SSAValue, alpha: float) -> SSAValue:
    """alpha * (exp(x) - 1)"""
    t = x.type
    em1 = b(arith.SubfOp(b(math.ExpOp(x)), b.const(1.0, t)))
    return b(arith.MulfOp(b.const(alpha, t), em1))


def _lt0(b: _Body, x: SSAValue) -> SSAValue:
    return b(arith.CmpfOp(x, b.const(0.0, x.type), "olt"))


def _clamp(b: _Body, x: SSAValue, lo: float, hi: float) -> SSAValue:
    return b(arith.MinimumfOp(b(arith.MaximumfOp(x, b.const(lo, x.type))), b.const(hi, x.type)))


def _gelu(b: _Body, x: SSAValue) -> SSAValue:
    t = x.type
    e = b(math.ErfOp(b(arith.MulfOp(x, b.const(1.0 / pymath.sqrt(2.0), t)))))
    half_x = b(arith.MulfOp(x, b.const(0.5, t)))
    return b(arith.MulfOp(half_x, b(arith.AddfOp(b.const(1.0, t), e))))


def _gelu_tanh(b: _Body, x: SSAValue) -> SSAValue:
    t = x.type
    x3 = b(arith.MulfOp(b(arith.MulfOp(x, x)), x))
    inner = b(arith.AddfOp(x, b(arith.MulfOp(b.const(0.044715, t), x3))))
    th = b(math.TanhOp(b(arith.MulfOp(b.const(pymath.sqrt(2.0 / pymath.pi), t), inner))))
    half_x = b(arith.MulfOp(x, b.const(0.5, t)))
    return b(arith.MulfOp(half_x, b(arith.AddfOp(b.const(1.0, t), th))))


def _sign(b: _Body, x: SSAValue) -> SSAValue:
    t = x.type
    zero = b.const(0.0, t)
    neg = b(arith.SelectOp(b(arith.CmpfOp(x, zero, "olt")), b.const(-1.0, t), x))
    return b(arith.SelectOp(b(arith.CmpfOp(x, zero, "ogt")), b.const(1.0, t), neg))


_UNARY_FLOAT: dict[vx.UnaryKind, Unary] = {
    vx.UnaryKind.RELU: lambda b, x, p: b(arith.MaximumfOp(x, b.const(0.0, x.type))),
    vx.UnaryKind.SIGMOID: lambda b, x, p: _sigmoid(b, x),
    vx.UnaryKind.TANH: lambda b, x, p: b(math.TanhOp(x)),
    vx.UnaryKind.EXP: lambda b, x, p: b(math.ExpOp(x)),
    vx.UnaryKind.LOG: lambda b, x, p: b(math.LogOp(x)),
    vx.UnaryKind.SQRT: lambda b, x, p: b(math.SqrtOp(x)),
    vx.UnaryKind.RECIPROCAL: lambda b, x, p: b(arith.DivfOp(b.const(1.0, x.type), x)),
    vx.UnaryKind.ABS: lambda b, x, p: b(math.AbsFOp(x)),
    vx.UnaryKind.NEG: lambda b, x, p: b(arith.NegfOp(x)),
    vx.UnaryKind.FLOOR: lambda b, x, p: b(math.FloorOp(x)),
    vx.UnaryKind.CEIL: lambda b, x, p: b(math.CeilOp(x)),
    # ONNX Round is half-to-even
    vx.UnaryKind.ROUND: lambda b, x, p: b(math.RoundEvenOp(x)),
    vx.UnaryKind.SIGN: lambda b, x, p: _sign(b, x),
    vx.UnaryKind.ERF: lambda b, x, p: b(math.ErfOp(x)),
    vx.UnaryKind.GELU: lambda b, x, p: _gelu(b, x),
    vx.UnaryKind.GELU_TANH: lambda b, x, p: _gelu_tanh(b, x),
    vx.UnaryKind.SILU: lambda b, x, p: b(arith.MulfOp(x, _sigmoid(b, x))),
    vx.UnaryKind.MISH: lambda b, x, p: b(arith.MulfOp(x, b(math.TanhOp(_softplus(b, x))))),
    vx.UnaryKind.SOFTPLUS: lambda b, x, p: _softplus(b, x),
    vx.UnaryKind.SOFTSIGN: lambda b, x, p: b(
        arith.DivfOp(x, b(arith.AddfOp(b.const(1.0, x.type), b(math.AbsFOp(x)))))
    ),
    vx.UnaryKind.SIN: lambda b, x, p: b(math.SinOp(x)),
    vx.UnaryKind.COS: lambda b, x, p: b(math.CosOp(x)),
    vx.UnaryKind.TAN: lambda b, x, p: b(math.TanOp(x)),
    vx.UnaryKind.LEAKY_RELU: lambda b, x, p: b(
        arith.SelectOp(_lt0(b, x), b(arith.MulfOp(b.const(p[0], x.type), x)), x)
    ),
    vx.UnaryKind.ELU: lambda b, x, p: b(arith.SelectOp(_lt0(b, x), _expm1_scaled(b, x, p[0]), x)),
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    vx.UnaryKind.CELU: lambda b, x, p: b(
        arith.AddfOp(
            b(arith.MaximumfOp(x, b.const(0.0, x.type))),
            b(
                arith.MinimumfOp(
                    b.const(0.0, x.type),
                    _expm1_scaled(b, b(arith.DivfOp(x, b.const(p[0], x.type))), p[0]),
                )
            ),
        )
    ),
    # gamma * (x > 0 ? x : alpha * (exp(x) - 1))
    vx.UnaryKind.SELU: lambda b, x, p: b(
        arith.MulfOp(
            b.const(p[1], x.type),
            b(
                arith.SelectOp(
                    b(arith.CmpfOp(x, b.const(0.0, x.type), "ogt")), x, _expm1_scaled(b, x, p[0])
                )
            ),
        )
    ),
    vx.UnaryKind.THRESHOLDED_RELU: lambda b, x, p: b(
        arith.SelectOp(b(arith.CmpfOp(x, b.const(p[0], x.type), "ogt")), x, b.const(0.0, x.type))
    ),
    vx.UnaryKind.HARD_SIGMOID: lambda b, x, p: _clamp(
        b, b(arith.AddfOp(b(arith.MulfOp(b.const(p[0], x.type), x)), b.const(p[1], x.type))), 0, 1
    ),
    vx.UnaryKind.HARD_SWISH: lambda b, x, p: b(
        arith.MulfOp(
            x,
            _clamp(
                b,
                b(
                    arith.AddfOp(
                        b(arith.MulfOp(b.const(1.0 / 6.0, x.type), x)), b.const(0.5, x.type)
                    )
                ),
                0,
                1,
            ),
        )
    ),
    vx.UnaryKind.CLIP: lambda b, x, p: _clamp(b, x, p[0], p[1]),
    vx.UnaryKind.IDENTITY: lambda b, x, p: x,
}

_UNARY_INT: dict[vx.UnaryKind, Unary] = {
    vx.UnaryKind.RELU: lambda b, x, p: b(arith.MaxSIOp(x, b.const(0, x.type))),
    vx.UnaryKind.NEG: lambda b, x, p: b(arith.SubiOp(b.const(0, x.type), x)),
    vx.UnaryKind.IDENTITY: lambda b, x, p: x,
}

Binary = Callable[[_Body, SSAValue, SSAValue], SSAValue]

_BINARY_FLOAT: dict[vx.BinaryKind, Binary] = {
    vx.BinaryKind.ADD: lambda b, x, y: b(arith.AddfOp(x, y)),
    vx.BinaryKind.SUB: lambda b, x, y: b(arith.SubfOp(x, y)),
    vx.BinaryKind.MUL: lambda b, x, y: b(arith.MulfOp(x, y)),
    vx.BinaryKind.DIV: lambda b, x, y: b(arith.DivfOp(x, y)),
    vx.BinaryKind.POW: lambda b, x, y: b(math.PowFOp(x, y)),
    # NaN-propagating, like numpy's maximum/minimum and ONNX Max/Min
    vx.BinaryKind.MAX: lambda b, x, y: b(arith.MaximumfOp(x, y)),
    vx.BinaryKind.MIN: lambda b, x, y: b(arith.MinimumfOp(x, y)),
    vx.BinaryKind.PRELU: lambda b, x, y: b(arith.SelectOp(_lt0(b, x), b(arith.MulfOp(x, y)), x)),
    vx.BinaryKind.EQUAL: lambda b, x, y: b(arith.CmpfOp(x, y, "oeq")),
    vx.BinaryKind.LESS: lambda b, x, y: b(arith.CmpfOp(x, y, "olt")),
    vx.BinaryKind.LESS_EQUAL: lambda b, x, y: b(arith.CmpfOp(x, y, "ole")),
    vx.BinaryKind.GREATER: lambda b, x, y: b(arith.CmpfOp(x, y, "ogt")),
    vx.BinaryKind.GREATER_EQUAL: lambda b, x, y: b(arith.CmpfOp(x, y, "oge")),
}

_BINARY_INT: dict[vx.BinaryKind, Binary] = {
    vx.BinaryKind.ADD: lambda b, x, y: b(arith.AddiOp(x, y)),
    vx.BinaryKind.SUB: lambda b, x, y: b(arith.SubiOp(x, y)),
    vx.BinaryKind.MUL: lambda b, x, y: b(arith.MuliOp(x, y)),
    vx.BinaryKind.MAX: lambda b, x, y: b(arith.MaxSIOp(x, y)),
    vx.BinaryKind.MIN: lambda b, x, y: b(arith.MinSIOp(x, y)),
    vx.BinaryKind.EQUAL: lambda b, x, y: b(arith.CmpiOp(x, y, "eq")),
    vx.BinaryKind.LESS: lambda b, x, y: b(arith.CmpiOp(x, y, "slt")),
    vx.BinaryKind.LESS_EQUAL: lambda b, x, y: b(arith.CmpiOp(x, y, "sle")),
    vx.BinaryKind.GREATER: lambda b, x, y: b(arith.CmpiOp(x, y, "sgt")),
    vx.BinaryKind.GREATER_EQUAL: lambda b, x, y: b(arith.CmpiOp(x, y, "sge")),
}

_BINARY_BOOL: dict[vx.BinaryKind, Binary] = {
    vx.BinaryKind.AND: lambda b, x, y: b(arith.AndIOp(x, y)),
    vx.BinaryKind.OR: lambda b, x, y: b(arith.OrIOp(x, y)),
    vx.BinaryKind.XOR: lambda b, x, y: b(arith.XOrIOp(x, y)),
    vx.BinaryKind.EQUAL: lambda b, x, y: b(arith.CmpiOp(x, y, "eq")),
}


def _cast(b: _Body, x: SSAValue, dst: Attribute) -> SSAValue | None:
    src = x.type
    if src == dst:
        return x
    if _is_float(src) and _is_float(dst):
        assert isinstance(src, AnyFloat) and isinstance(dst, AnyFloat)
        if src.bitwidth < dst.bitwidth:
            return b(arith.ExtFOp(x, dst))
        return b(arith.TruncFOp(x, dst))
    if _is_float(src) and dst == i1:
        # ONNX: x != 0, and NaN is true (unordered-or-not-equal)
        return b(arith.CmpfOp(x, b.const(0.0, src), "une"))
    if _is_float(src) and _is_signless_int(dst):
        return b(arith.FPToSIOp(x, dst))  # type: ignore[arg-type]
    if src == i1 and _is_float(dst):
        return b(arith.UIToFPOp(x, dst))  # type: ignore[arg-type]
    if _is_signless_int(src) and _is_float(dst):
        return b(arith.SIToFPOp(x, dst))  # type: ignore[arg-type]
    if _is_signless_int(src) and dst == i1:
        return b(arith.CmpiOp(x, b.const(0, src), "ne"))
    if _is_signless_int(src) and _is_signless_int(dst):
        assert isinstance(src, IntegerType) and isinstance(dst, IntegerType)
        if src.width.data < dst.width.data:
            return b(arith.ExtSIOp(x, dst))
        return b(arith.TruncIOp(x, dst))
    return None


def emit_scalar(b: _Body, op: Operation, args: Sequence[SSAValue]) -> SSAValue | None:
    """The scalar form of one pointwise op on `args`, or None if it has none
    (the body may then hold unused ops: call `has_scalar_form` first)."""
    if isinstance(op, vx.UnaryOp):
        kind = op.kind.data
        params = tuple(float(v) for v in op.params.get_values()) if op.params else ()
        t = args[0].type
        table = _UNARY_FLOAT if _is_float(t) else _UNARY_INT if _is_signless_int(t) else {}
        if t == i1 and kind == vx.UnaryKind.NOT:
            return b(arith.XOrIOp(args[0], b.const(True, i1)))
        fn = table.get(kind)
        return fn(b, args[0], params) if fn else None
    if isinstance(op, vx.BinaryOp):
        kind = op.kind.data
        x, y = args
        if x.type != y.type:  # only Pow may mix types; its exponent must agree here
            return None
        t = x.type
        table = (
            _BINARY_FLOAT
            if _is_float(t)
            else _BINARY_INT
            if _is_signless_int(t)
            else _BINARY_BOOL
            if t == i1
            else {}
        )
        fn = table.get(kind)
        return fn(b, x, y) if fn else None
    if isinstance(op, vx.SelectOp):
        return b(arith.SelectOp(*args))
    if isinstance(op, vx.CastOp):
        return _cast(b, args[0], vx.element_of(op.output))
    return None


def has_scalar_form(op: Operation) -> bool:
    """Whether `op` can be a member of a fused region."""
    if not isinstance(op, _MEMBER_TYPES):
        return False
    scratch = _Body(Block(arg_types=[vx.element_of(v) for v in op.operands]))
    return emit_scalar(scratch, op, scratch.block.args) is not None


# ---------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------


def _splat(v: SSAValue) -> float | int | bool | None:
    """The one value of an inline splat `vx.constant`; resource-backed weights
    stay operands (reading them to check would load every weight)."""
    owner = v.owner
    if not isinstance(owner, vx.ConstantOp) or not isinstance(
        owner.value, DenseIntOrFPElementsAttr
    ):
        return None
    a = np.asarray(to_numpy(owner.value))
    if a.size == 0:
        return None
    first = a.flat[0]
    same = (
        np.isnan(a).all()
        if np.issubdtype(a.dtype, np.floating) and np.isnan(first)
        else ((a == first).all())
    )
    return first.item() if same else None


def epilogue_host(op: vx.FusedPointwiseOp) -> Operation | None:
    """The op whose store `op` can ride, or None. The conditions are the
    epilogue contract: a float primary input of the region's shape, defined
    by an epilogue host with one result that nothing else reads, and a single
    region result (a kernel store writes one tensor)."""
    if not op.inputs or len(op.outputs) != 1:
        return None
    primary = op.inputs[0]
    host = primary.owner
    if not isinstance(host, vx.VxOp) or not host.HOSTS_EPILOGUE or len(host.results) != 1:
        return None
    if not primary.has_one_use() or not _is_float(vx.element_of(primary)):
        return None
    if vx.shape_of(primary) != vx.shape_of(op.outputs[0]):
        return None
    return host


@dataclass
class _Region:
    shape: tuple[int, ...]
    members: list[Operation]


class _RegionBuilder:
    """Grows regions over one block in topological order: each fusible op
    joins the regions of its same-shape operand producers when the union
    stays convex (no path leaves the region and comes back through an outside
    op, which would make the fused op depend on itself) and within max_ops."""

    def __init__(self, block: Block, max_ops: int):
        self.block = block
        self.max_ops = max_ops
        self.index = {op: i for i, op in enumerate(block.ops)}
        self.region_of: dict[Operation, _Region] = {}

    def run(self) -> list[_Region]:
        for op in self.block.ops:
            if not self._fusible(op):
                continue
            region = _Region(vx.shape_of(op.results[0]), [op])
            for v in op.operands:
                other = self.region_of.get(v.owner) if isinstance(v.owner, Operation) else None
                if other is None or other is region or other.shape != region.shape:
                    continue
                if len(other.members) + len(region.members) > self.max_ops:
                    continue
                merged = set(other.members) | set(region.members)
                if self._convex(merged):
                    region = _Region(region.shape, sorted(merged, key=self.index.__getitem__))
            for m in region.members:
                self.region_of[m] = region
        seen: set[int] = set()
        regions = []
        for r in self.region_of.values():
            if id(r) not in seen:
                seen.add(id(r))
                regions.append(r)
        return regions

    def _fusible(self, op: Operation) -> bool:
        if not isinstance(op, _MEMBER_TYPES) or not has_scalar_form(op):
            return False
        # an op of constants only is const-fold's business, not a kernel's
        return any(not isinstance(v.owner, vx.ConstantOp) for v in op.operands)

    def _convex(self, members: set[Operation]) -> bool:
        lo = min(self.index[m] for m in members)
        stack = [
            v.owner
            for m in members
            for v in m.operands
            if isinstance(v.owner, Operation) and v.owner not in members
        ]
        seen: set[Operation] = set()
        while stack:
            p = stack.pop()
            # ops before the region's first member cannot depend on it
            if p in seen or self.index.get(p, -1) < lo:
                continue
            seen.add(p)
            for v in p.operands:
                q = v.owner
                if isinstance(q, Operation):
                    if q in members:
                        return False
                    stack.append(q)
        return True


def _primary_first(inputs: list[SSAValue], shape: tuple[int, ...]) -> list[SSAValue]:
    """Order the inputs so operand 0 is the primary: a non-constant input of
    the region's shape, preferring one an epilogue host produces."""
    full = [v for v in inputs if not isinstance(v.owner, vx.ConstantOp) and vx.shape_of(v) == shape]
    hosted = [v for v in full if isinstance(v.owner, vx.VxOp) and v.owner.HOSTS_EPILOGUE]
    candidates = hosted or full or [v for v in inputs if not isinstance(v.owner, vx.ConstantOp)]
    if not candidates:
        return inputs
    primary = candidates[0]
    return [primary, *(v for v in inputs if v is not primary)]


def _fuse(region: _Region, min_ops: int, epilogues: bool) -> vx.FusedPointwiseOp | None:
    """Replace the region by one fused op; None (and no change) if it should
    stay as is."""
    members = region.members
    member_set = set(members)
    inputs: list[SSAValue] = []
    splats: dict[SSAValue, float | int | bool] = {}
    for m in members:
        others = [vx.shape_of(v) for v in m.operands]
        for i, v in enumerate(m.operands):
            if (isinstance(v.owner, Operation) and v.owner in member_set) or v in inputs:
                continue
            value = _splat(v)
            rest = others[:i] + others[i + 1 :]
            # a splat that grows the shape must stay a tensor operand, else
            # the fused op's broadcast shape would shrink
            if (
                value is not None
                and rest
                and vx.broadcasts_to(vx.shape_of(v), vx.broadcast_shapes(*rest))
            ):
                splats[v] = value
            else:
                inputs.append(v)
    outputs = [
        r for m in members for r in m.results if any(u.operation not in member_set for u in r.uses)
    ]
    if not outputs or not inputs:
        return None
    inputs = _primary_first(inputs, region.shape)
    try:
        if vx.broadcast_shapes(*(vx.shape_of(v) for v in inputs)) != region.shape:
            return None
    except ValueError:
        return None
    block = Block(arg_types=[vx.element_of(v) for v in inputs])
    body = _Body(block)
    scalar: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
    for v, value in splats.items():
        scalar[v] = body.const(value, vx.element_of(v))
    for m in members:
        s = emit_scalar(body, m, [scalar[v] for v in m.operands])
        assert s is not None, f"{m.name} lost its scalar form"
        scalar[m.results[0]] = s
    block.add_op(vx.YieldOp(*(scalar[r] for r in outputs)))
    # the region is reported under its last node (the value it computes);
    # all member names are kept for reports
    names = [a.data for m in members if isinstance(a := m.attributes.get(NAME_ATTR), StringAttr)]
    attributes: dict[str, Attribute] = {}
    if names:
        attributes[NAME_ATTR] = StringAttr(names[-1])
        attributes[FUSED_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in names])
    fused = vx.FusedPointwiseOp.create(
        operands=inputs,
        result_types=[r.type for r in outputs],
        regions=[Region(block)],
        attributes=attributes,
    )
    would_host = epilogues and len(outputs) == 1 and _hosts_after_fusion(fused, member_set)
    if len(members) < min_ops and not would_host:
        fused.erase()
        return None
    last = members[-1]
    assert (parent := last.parent_block()) is not None
    parent.insert_op_before(fused, last)
    for old, new in zip(outputs, fused.results, strict=True):
        old.replace_uses_with_if(new, lambda use: use.operation not in member_set)
    for m in reversed(members):
        parent.erase_op(m)
    return fused


def _hosts_after_fusion(fused: vx.FusedPointwiseOp, members: set[Operation]) -> bool:
    """Whether `fused` would be an epilogue once the members are replaced:
    every use of its primary input is then the fused op itself."""
    primary = fused.inputs[0]
    host = primary.owner
    if not isinstance(host, vx.VxOp) or not host.HOSTS_EPILOGUE or len(host.results) != 1:
        return False
    return (
        all(u.operation in members or u.operation is fused for u in primary.uses)
        and _is_float(vx.element_of(primary))
        and vx.shape_of(primary) == vx.shape_of(fused.outputs[0])
    )


class AttachEpilogue(RewritePattern):
    """Marks a fused op as the store epilogue of its primary input's producer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vx.FusedPointwiseOp, rewriter: PatternRewriter) -> None:
        if EPILOGUE_ATTR in op.attributes or epilogue_host(op) is None:
            return
        op.attributes[EPILOGUE_ATTR] = UnitAttr()
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class FusePointwisePass(ModulePass):
    """Fuse same-shape pointwise regions into vx.fused_pointwise ops (store
    epilogues of their producer where possible)."""

    name = "fuse-pointwise"

    max_ops: int = 16
    """Most ops in one region: bounds the body (registers, compile time)."""
    min_ops: int = 2
    """Fewest ops worth a standalone fused kernel (epilogues always are)."""
    epilogues: bool = True
    """Mark regions as store epilogues of their producer where possible."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in graph_blocks(op):
            for member in block.ops:
                if isinstance(member, (*_MEMBER_TYPES, vx.FusedPointwiseOp)) or (
                    isinstance(member, vx.VxOp) and member.HOSTS_EPILOGUE
                ):
                    require_static(member, self.name)
            regions = _RegionBuilder(block, max(1, self.max_ops)).run()
            changed = False
            for region in regions:
                changed |= _fuse(region, self.min_ops, self.epilogues) is not None
            if changed:
                restore_topological_order(block)
        if self.epilogues:
            PatternRewriteWalker(
                GreedyRewritePatternApplier([AttachEpilogue()], dce_enabled=False),
                apply_recursively=False,
            ).rewrite_module(op)
