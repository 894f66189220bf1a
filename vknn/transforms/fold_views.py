"""fold-views: reshape / transpose / constant-index gather / slice chains
around kernels that address their operands through strides become the
kernels' addressing, so the chains record nothing.

Every flat device tensor is row-major, so such a chain is an affine view of
its source's memory (`vknn.kernels.views`). In each Vulkan segment:

- an operand of a strided kernel (`views.register_strided`: matmul, gemm,
  attention, ...) produced by a chain it accepts becomes a `vkd.view` of the
  chain's source (offset and strides in elements), read in place;
- the result of a kernel that can write through strides, read only by a
  chain of bijective view ops (transposes, reshapes), is written straight
  into the chain's end: the producer carries `vkd.out_view` and the end
  becomes a `vkd.alias` of its result (the attention head merge);
- view ops nothing reads any more are erased.

With `device-layout=nc4hw4` a chain stops at a tensor that may be stored
NC4HW4 (no stride describes a packed tensor; `assign-storage` decides).
A segment's results are never folded away.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    NoneType,
    TensorType,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from vknn.dialects import vkd
from vknn.kernels.views import OUT_VIEW_ATTR, VIEW_OPS, VIEWS_ATTR, fold_views
from vknn.transforms import segment_steps
from vknn.transforms.segment_steps import OP_KEY, OUT_VIEW


def _present_operand(op: Operation, pos: int) -> int:
    """The operand index of present (non-absent) operand `pos`."""
    n = -1
    for i, v in enumerate(op.operands):
        if not isinstance(v.type, NoneType):
            n += 1
            if n == pos:
                return i
    raise IndexError(pos)


def fold_segment(seg: vkd.SegmentOp, device_layout: str) -> None:
    view = segment_steps.build(seg.body.block)
    if not view.steps:
        return
    inputs = {s: view.specs[s] for s in view.inputs}
    folded = fold_views(
        view.steps,
        inputs,
        view.constants,
        view.outputs,
        through_packed=device_layout != "nc4hw4",
    )
    kept = {st.attrs[OP_KEY] for st in folded}
    for st in folded:
        op = view.ops[st.attrs[OP_KEY]]
        old = view.steps[st.attrs[OP_KEY]]
        new_views = st.attrs.get(VIEWS_ATTR, {})
        for pos, (offset, shape, strides) in new_views.items():
            if old.attrs.get(VIEWS_ATTR, {}).get(pos) == (offset, shape, strides):
                continue
            idx = _present_operand(op, pos)
            current = op.operands[idx]
            elem = current.type.element_type  # type: ignore[attr-defined]
            source = view.values[st.inputs[_slot_index(st.inputs, pos)]]
            v = vkd.ViewOp(source, offset, strides, TensorType(elem, shape))
            seg.body.block.insert_op_before(v, op)
            op.operands[idx] = v.result
        out_view = st.attrs.get(OUT_VIEW_ATTR)
        if out_view is not None and OUT_VIEW_ATTR not in old.attrs:
            offset, shape, strides = out_view
            last: SSAValue = view.values[st.outputs[0]]
            alias = vkd.AliasOp(op.results[0], last.type)
            last_op = last.owner
            assert isinstance(last_op, Operation)
            seg.body.block.insert_op_after(alias, last_op)
            last.replace_uses_with_if(alias.result, lambda use, a=alias: use.operation is not a)
            op.attributes[OUT_VIEW] = ArrayAttr(
                [
                    IntegerAttr(offset, i64),
                    DenseArrayBase.from_list(i64, list(shape)),
                    DenseArrayBase.from_list(i64, list(strides)),
                ]
            )
    # View ops no longer read (their chains were folded) go, latest first.
    for i in range(len(view.ops) - 1, -1, -1):
        op = view.ops[i]
        if i not in kept and op.name in VIEW_OPS:
            _erase_dead_chain(op)


def _slot_index(inputs: list[int], pos: int) -> int:
    n = -1
    for i, s in enumerate(inputs):
        if s >= 0:
            n += 1
            if n == pos:
                return i
    raise IndexError(pos)


def _erase_dead_chain(op: Operation) -> None:
    """Erase `op` when nothing reads it; an out-view chain's members read
    each other, so walk it from its end."""
    if op.parent is None or any(r.uses.get_length() for r in op.results):
        return  # already erased, or still read
    sources = [v.owner for v in op.operands]
    op.detach()
    op.erase()
    for src in sources:
        if isinstance(src, Operation) and src.name in VIEW_OPS:
            _erase_dead_chain(src)


@dataclass(frozen=True)
class FoldViewsPass(ModulePass):
    """Fold view chains into the strided kernels that read or write them."""

    name = "fold-views"

    device_layout: str = "nc4hw4"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for seg in op.walk():
            if isinstance(seg, vkd.SegmentOp) and seg.backend.data == "vulkan":
                fold_segment(seg, self.device_layout)
