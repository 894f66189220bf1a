"""const-fold: evaluate at compile time what does not depend on the inputs.

Folds, to convergence with infer-shapes' type refinement:
  * Shape / Size of a statically shaped value (the head of Shape -> Gather ->
    Reshape chains that exporters emit for dynamic batch handling);
  * ConstantOfShape with a constant shape, as a zero-copy splat in the weight
    store (VGG-19's fully connected weights cost no memory until used);
  * any other deterministic operator whose inputs are all constants, evaluated
    by the CPU kernel of its `onnx.*` op (vknn.oracle), or, for an op with
    no such kernel, by ONNX's reference implementation (imported only then).
Results become `onnx.Constant` ops (inline when small, else resources).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, NoneType, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects.onnx import NAME_ATTR, OPS, GraphAttr, OnnxOp, module_opset
from vknn.errors import VknnError
from vknn.ir.constants import from_numpy, to_numpy
from vknn.ir.onnx_export import CAPTURES_ATTR, ValueNames, node_proto, value_info
from vknn.ir.types import numpy_dtype, static_shape
from vknn.ir.weights import WEIGHTS
from vknn.transforms.infer_shapes import funcs, refine_types

_NONDETERMINISTIC = {
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "Dropout",
}  # Dropout: folded by convert-onnx-to-vx as identity, not evaluated (it can draw a mask)
_MAX_FOLD_ELEMENTS = 1 << 24


def constant_value(v: SSAValue) -> np.ndarray | None:
    """The value of `v` if an `onnx.Constant` (or `vx.constant`) defines it."""
    owner = v.owner
    if isinstance(owner, Operation) and owner.name in ("onnx.Constant", "vx.constant"):
        attr = owner.attributes.get("value")
        if attr is None:
            attr = owner.properties.get("value")
        if attr is not None:
            try:
                return to_numpy(attr)
            except VknnError:
                return None
    return None


def _node_name(op: Operation) -> str:
    a = op.attributes.get(NAME_ATTR)
    return a.data if isinstance(a, StringAttr) else op.name


def replace_with_constants(
    rewriter: PatternRewriter, op: Operation, values: list[np.ndarray]
) -> None:
    const_cls = OPS["Constant"]
    name = _node_name(op)
    new_ops = []
    for i, (result, value) in enumerate(zip(op.results, values, strict=True)):
        value = np.asarray(value)
        shape = static_shape(result.type)
        if shape is not None and tuple(value.shape) != shape:
            raise VknnError(
                f"const-fold: node '{name}' ({op.name}) evaluates to shape {list(value.shape)}, "
                f"but its type says {list(shape)}"
            )
        elem_dtype = numpy_dtype(result.type.element_type)  # type: ignore[attr-defined]
        if value.dtype != elem_dtype:
            value = value.astype(elem_dtype)
        # The handle reads like the tensor (its SSA name), not like the node.
        attr = from_numpy(value, result.name_hint or (f"{name}_out{i}" if i else name))
        c = const_cls.create(
            result_types=[attr.type],  # type: ignore[attr-defined]
            attributes={"value": attr, NAME_ATTR: StringAttr(name if i == 0 else f"{name}:{i}")},
        )
        new_ops.append(c)
    rewriter.replace(op, new_ops, [c.results[0] for c in new_ops])


class FoldShape(RewritePattern):
    """Shape / Size of a value whose type is static."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OnnxOp, rewriter: PatternRewriter) -> None:
        if op.OP_TYPE not in ("Shape", "Size"):
            return
        shape = static_shape(op.inputs[0].type)
        if shape is None:
            return
        if op.OP_TYPE == "Size":
            replace_with_constants(rewriter, op, [np.array(int(np.prod(shape)), dtype=np.int64)])
            return
        rank = len(shape)
        start = op.attributes.get("start")
        end = op.attributes.get("end")
        s = start.value.data if start is not None else 0  # type: ignore[attr-defined]
        e = end.value.data if end is not None else rank  # type: ignore[attr-defined]
        s = min(max(s + rank if s < 0 else s, 0), rank)
        e = min(max(e + rank if e < 0 else e, 0), rank)
        replace_with_constants(rewriter, op, [np.array(shape[s:e], dtype=np.int64)])


class FoldConstantOfShape(RewritePattern):
    """A splat that costs no memory: a broadcast view of one scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OnnxOp, rewriter: PatternRewriter) -> None:
        if op.OP_TYPE != "ConstantOfShape":
            return
        shape = constant_value(op.inputs[0])
        if shape is None:
            return
        fill = op.attributes.get("value")
        scalar = to_numpy(fill).reshape(-1)[0] if fill is not None else np.float32(0)
        splat = np.broadcast_to(np.asarray(scalar), tuple(int(d) for d in shape))
        replace_with_constants(rewriter, op, [splat])


class FoldConstantOperands(RewritePattern):
    """Any deterministic op whose inputs are all constants, by ONNX's reference."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OnnxOp, rewriter: PatternRewriter) -> None:
        if op.OP_TYPE in _NONDETERMINISTIC or op.OP_TYPE in ("Constant", "ConstantOfShape"):
            return
        if CAPTURES_ATTR in op.attributes or any(
            isinstance(a, GraphAttr) for a in op.attributes.values()
        ):
            return
        if not op.inputs or all(isinstance(v.type, NoneType) for v in op.inputs):
            return
        values: list[np.ndarray | None] = []
        for v in op.inputs:
            if isinstance(v.type, NoneType):
                values.append(None)
                continue
            c = constant_value(v)
            if c is None:
                return
            values.append(c)
        for r in op.results:
            shape = static_shape(r.type)
            if shape is not None and int(np.prod(shape)) > _MAX_FOLD_ELEMENTS:
                return
        outs = evaluate(op, values)
        if outs is not None:
            replace_with_constants(rewriter, op, outs)


class FoldVxConstantOperands(RewritePattern):
    """A `vx` op whose operands are all constants, evaluated by its CPU kernel
    (the engine's numeric oracle), e.g. a transpose or cast of a weight that a
    later rewrite produced."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not op.name.startswith("vx.") or op.name in ("vx.constant", "vx.yield") or op.regions:
            return
        if not op.operands or not op.results:
            return
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values):
            return
        for r in op.results:
            shape = static_shape(r.type)
            if shape is None or int(np.prod(shape)) > _MAX_FOLD_ELEMENTS:
                return
        from vknn.ir.to_plan import op_step
        from vknn.oracle import kernel_for

        kernel = kernel_for(op.name)
        if kernel is None:
            return
        step = op_step(op)
        try:
            outs = kernel(step, list(values))
        except Exception:
            return  # left for run time, where a failure names the node
        _replace_with_vx_constants(rewriter, op, outs)


def _replace_with_vx_constants(rewriter: PatternRewriter, op: Operation, values: list) -> None:
    from vknn.dialects.vx import ConstantOp

    name = _node_name(op)
    new_ops = []
    for i, (result, value) in enumerate(zip(op.results, values, strict=True)):
        elem_dtype = numpy_dtype(result.type.element_type)  # type: ignore[attr-defined]
        value = np.asarray(value).astype(elem_dtype, copy=False)
        attr = from_numpy(value, result.name_hint or (f"{name}_out{i}" if i else name))
        new_ops.append(ConstantOp(attr, {NAME_ATTR: StringAttr(name)}))
    rewriter.replace(op, new_ops, [c.results[0] for c in new_ops])


def evaluate(op: OnnxOp, values: list[np.ndarray | None]) -> list[np.ndarray] | None:
    """Run one op on constant inputs: our CPU kernel of the `onnx.*` op when
    there is one, else ONNX's reference implementation."""
    from vknn.ir.to_plan import op_step
    from vknn.oracle.registry import kernel_for, refusal

    if kernel_for(op.name) is not None:
        try:
            step = op_step(op)
            if refusal(step) is None:
                return list(kernel_for(op.name)(step, list(values)))  # type: ignore[misc]
        except Exception:
            return None  # not foldable here; the op stays and runs at inference time
    from onnx.reference import ReferenceEvaluator  # only for ops with no kernel of ours

    names = ValueNames([op])
    node = node_proto(op, names)
    inits = [
        numpy_helper.from_array(np.array(v, order="C"), names[x])
        for v, x in zip(values, op.inputs, strict=True)
        if v is not None
    ]
    outputs = [value_info(names[r], r.type) for r in op.results]
    graph = helper.make_graph([node], "fold", [], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", module_opset(op))])
    try:
        return list(ReferenceEvaluator(model).run(None, {}))
    except Exception:
        return None  # not foldable here; the op stays and runs at inference time


@dataclass(frozen=True)
class ConstFoldPass(ModulePass):
    """Fold input-independent ops to constants, to convergence with infer-shapes."""

    name = "const-fold"

    max_rounds: int = 64

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [FoldShape(), FoldConstantOfShape(), FoldConstantOperands(), FoldVxConstantOperands()]
        )
        for _ in range(self.max_rounds):
            walker = PatternRewriteWalker(patterns, apply_recursively=True)
            folded = walker.rewrite_module(op)
            refined = sum(refine_types(f) for f in funcs(op))
            if not folded and not refined:
                break
        _drop_unused_constants(op)


def _drop_unused_constants(module: ModuleOp) -> None:
    """Constants nothing reads any more (their producers folded away)."""
    dead = [
        o
        for o in module.walk()
        if o.name in ("onnx.Constant", "onnx.NoValue", "vx.constant")
        and all(not r.uses for r in o.results)
    ]
    for o in reversed(dead):
        value = o.attributes.get("value")
        if value is None:
            value = o.properties.get("value")
        handle = getattr(value, "resource_handle", None)
        o.detach()
        o.erase()
        if handle is not None and not _handle_used(module, handle.data):
            WEIGHTS.release([handle.data])


def _handle_used(module: ModuleOp, handle: str) -> bool:
    for o in module.walk():
        for a in o.attributes.values():
            if getattr(getattr(a, "resource_handle", None), "data", None) == handle:
                return True
    return False
