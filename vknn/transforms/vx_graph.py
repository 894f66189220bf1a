"""Small helpers shared by the `vx` graph passes (fuse-pointwise,
assign-layouts, subpixel-conv-transpose, lower-conv): node names for
messages, the static-shape precondition, and keeping a block in def-before-use
order after a pass has moved ops. Not a pass; it never changes IR by itself
except `restore_topological_order`, which only reorders."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue

from vknn.dialects.onnx import NAME_ATTR
from vknn.errors import ShapeInferenceError


def node_name(op: Operation) -> str:
    """The ONNX node name a user knows the op by, else the op's name."""
    a = op.attributes.get(NAME_ATTR)
    return a.data if isinstance(a, StringAttr) else op.name


def nodes_of(op: Operation) -> list[str]:
    """Every ONNX node an op computes: its own name (or the `vkd.nodes` list
    of a merged step) and the members of a fused op (`vx.fused_names`)."""
    names: list[str] = []
    a = op.attributes.get("vkd.nodes")
    if isinstance(a, StringAttr):
        names += [n for n in a.data.split(",") if n]
    else:
        names.append(node_name(op))
    f = op.attributes.get("vx.fused_names")
    if isinstance(f, ArrayAttr):
        names += [x.data for x in f.data if isinstance(x, StringAttr) and x.data not in names]
    return names


def graph_blocks(module: ModuleOp) -> Iterator[Block]:
    """The body block of every function of the module."""
    for op in module.ops:
        if isinstance(op, FuncOp):
            yield op.body.block


def is_static(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape())


def require_static(op: Operation, pass_name: str) -> None:
    """Raise a user-facing error if an operand or result of `op` has a dynamic
    dim: the graph passes decide by shapes, and guessing one is how a wrong
    plan gets built silently."""
    for what, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            if isinstance(v.type, TensorType) and not is_static(v):
                raise ShapeInferenceError(
                    f"{pass_name}: node '{node_name(op)}' ({op.name}) has a dynamic {what} {i} "
                    f"of type {v.type}; resolve shapes first (run infer-shapes, declaring the "
                    "shapes of dynamic inputs)"
                )


def restore_topological_order(block: Block) -> None:
    """Reorder `block` so every op follows the ops it uses, keeping the
    original order wherever it is already valid (a stable Kahn sort). A fused
    op is placed where its last member was, which can precede an outside user
    of an earlier member; this moves such users down."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    defined: set[SSAValue] = set(block.args)
    in_order = True
    for op in ops:
        if any(_external(v, block) and v not in defined for v in _used(op)):
            in_order = False
            break
        defined.update(op.results)
    if in_order:
        return
    producers: dict[Operation, set[Operation]] = {op: set() for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for v in _used(op):
            p = v.owner
            if isinstance(p, Operation) and p in position and p is not op:
                if p not in producers[op]:
                    producers[op].add(p)
                    users[p].append(op)
    ready = [position[op] for op in ops if not producers[op]]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for u in users[op]:
            producers[u].discard(op)
            if not producers[u]:
                heapq.heappush(ready, position[u])
    assert len(order) == len(ops), "cycle in a graph block"
    for op in ops:
        block.detach_op(op)
    block.add_ops(order)


def _used(op: Operation) -> Iterator[SSAValue]:
    """Operands of `op` and of the ops nested in its regions."""
    for inner in op.walk():
        yield from inner.operands


def _external(v: SSAValue, block: Block) -> bool:
    owner = v.owner
    if isinstance(owner, Operation):
        return owner.parent_block() is block
    return owner is block
