"""A segment's graph ops as plain `Step`s, the form the kernel specs read.

Gates, layout rules, precision rules and recorders (`vknn/kernels`) are pure
functions of plain data (op name, attributes as Python values, tensor specs),
so the same spec serves the support report, the passes and the tests. The
passes that ask them questions (`partition`, `merge-epilogues`, `fold-views`,
`assign-storage`, `convert-vx-to-vkd`) look at a segment through this view:

- every value gets a slot (block arguments first, in order);
- `vx.constant` / `onnx.Constant` results are constant slots with their arrays;
- a `vkd.with_epilogue` is one step: its host op with the epilogue's body
  under `epilogues.EPILOGUE_ATTR` and the epilogue's extra operands appended;
- an operand defined by `vkd.view` reads the view's source slot, the view
  under `views.VIEWS_ATTR` at that position;
- an op carrying `vkd.out_view` writes the slot of the `vkd.alias` reading
  its result, the view under `views.OUT_VIEW_ATTR`;
- everything else is one step per op.

`StepView.op_of(step)` maps a step back to its op. Not a pass: it never
changes IR.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from vknn.dialects import vkd
from vknn.ir.to_plan import op_attrs, region_steps, tensor_spec
from vknn.kernels.epilogues import EPILOGUE_ATTR
from vknn.kernels.views import OUT_VIEW_ATTR, VIEWS_ATTR
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.transforms.vx_graph import node_name

CONSTANT_OPS = ("vx.constant", "onnx.Constant")
OUT_VIEW = "vkd.out_view"
"""Op attribute (fold-views): [offset, [shape], [strides]] of how output 0 is
stored in the memory of the `vkd.alias` that reads it."""
OP_KEY = "__op"


def constant_value(op: Operation) -> np.ndarray:
    from vknn.ir.constants import to_numpy

    value = op.properties.get("value")
    if value is None:  # not `or`: an empty (0-element) constant is falsy
        value = op.attributes.get("value")
    assert value is not None
    return np.asarray(to_numpy(value))


def view_of(op: vkd.ViewOp) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    from vknn.dialects.vx import shape_of

    return (
        op.offset.value.data,
        tuple(shape_of(op.result)),
        tuple(int(s) for s in op.strides.get_values()),
    )


def out_view_attr(op: Operation) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    a = op.attributes.get(OUT_VIEW)
    if not isinstance(a, ArrayAttr):
        return None
    off, shape, strides = a.data
    assert isinstance(off, IntegerAttr)
    assert isinstance(shape, DenseArrayBase) and isinstance(strides, DenseArrayBase)
    return (
        off.value.data,
        tuple(int(x) for x in shape.get_values()),
        tuple(int(x) for x in strides.get_values()),
    )


class Constants(dict):  # type: ignore[type-arg]
    """slot -> constant array, each read from its op only when asked for (a
    pass deciding storage needs only which slots are constants and their
    shapes, which printed IR without its weights still has)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[int, Operation] = {}

    def add(self, slot: int, op: Operation) -> None:
        self.ops[slot] = op
        super().__setitem__(slot, None)

    def __getitem__(self, slot: int) -> np.ndarray:
        value = super().__getitem__(slot)
        if value is None:
            value = constant_value(self.ops[slot])
            super().__setitem__(slot, value)
        return value

    def get(self, slot: int, default: object = None) -> object:  # type: ignore[override]
        return self[slot] if slot in self else default

    def items(self):  # type: ignore[no-untyped-def,override]
        return [(s, self[s]) for s in self]

    def values(self):  # type: ignore[no-untyped-def,override]
        return [self[s] for s in self]

    def shape_of(self, slot: int) -> tuple[int, ...]:
        from vknn.dialects.vx import shape_of

        return tuple(shape_of(self.ops[slot].results[0]))


@dataclass
class StepView:
    block: Block
    steps: list[Step] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)
    slot: dict[SSAValue, int] = field(default_factory=dict)
    values: list[SSAValue] = field(default_factory=list)
    specs: dict[int, TensorSpec] = field(default_factory=dict)
    constants: Constants = field(default_factory=Constants)
    constant_ops: dict[int, Operation] = field(default_factory=dict)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def op_of(self, step: Step) -> Operation:
        return self.ops[step.attrs[OP_KEY]]

    def index_of(self, op: Operation) -> int:
        """The step index of `op` (a step's op, or the op inside a with_epilogue)."""
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        raise KeyError(op.name)

    def in_specs(self, step: Step) -> list[TensorSpec]:
        return [self.specs[s] for s in step.inputs if s != NO_VALUE]


def _new_slot(view: StepView, v: SSAValue, name: str) -> int:
    s = len(view.values)
    view.slot[v] = s
    view.values.append(v)
    view.specs[s] = tensor_spec(name, v.type)
    return s


def value_name(v: SSAValue) -> str:
    """A tensor's name for messages and labels: the graph input's ONNX name,
    or its producer's node name."""
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr
    from xdsl.dialects.func import FuncOp

    owner = v.owner
    if isinstance(owner, Operation):
        return node_name(owner)
    parent = owner.parent_op()
    if isinstance(parent, FuncOp) and parent.arg_attrs is not None:
        d = parent.arg_attrs.data[v.index]  # type: ignore[attr-defined]
        if isinstance(d, DictionaryAttr) and isinstance(n := d.data.get("onnx.name"), StringAttr):
            return n.data
    if isinstance(parent, vkd.SegmentOp):
        return value_name(parent.inputs[v.index])  # type: ignore[attr-defined]
    return f"in{v.index}"  # type: ignore[attr-defined]


def build(block: Block, input_names: Iterable[str] | None = None) -> StepView:
    """The steps of a segment body (or any graph block); inputs are named
    after the values they stand for unless `input_names` says otherwise."""
    view = StepView(block)
    names = list(input_names) if input_names is not None else [value_name(a) for a in block.args]
    for i, arg in enumerate(block.args):
        name = names[i] if i < len(names) else f"in{i}"
        view.inputs.append(_new_slot(view, arg, name))
    views: dict[SSAValue, tuple[SSAValue, tuple[int, tuple[int, ...], tuple[int, ...]]]] = {}
    for op in block.ops:
        if op.name in CONSTANT_OPS:
            s = _new_slot(view, op.results[0], f"{node_name(op)}:0")
            view.constants.add(s, op)
            view.constant_ops[s] = op
            continue
        if isinstance(op, vkd.YieldOp) or op.name == "func.return":
            view.outputs = [view.slot[v] for v in op.operands]
            continue
        if isinstance(op, vkd.ViewOp):
            views[op.result] = (op.source, view_of(op))
            continue
        if isinstance(op, vkd.AliasOp) and out_view_attr(_owner(op.source)) is not None:
            continue  # its producer writes it (below)
        if op.name == "onnx.NoValue":
            continue
        step = _step(view, op, views)
        step.attrs[OP_KEY] = len(view.ops)
        view.steps.append(step)
        view.ops.append(op)
    return view


def _owner(v: SSAValue) -> Operation:
    owner = v.owner
    return owner if isinstance(owner, Operation) else v.owner.parent_op()  # type: ignore[union-attr]


def _inputs(
    view: StepView,
    operands: Iterable[SSAValue],
    views: dict[SSAValue, tuple[SSAValue, tuple[int, tuple[int, ...], tuple[int, ...]]]],
    attrs: dict[str, Any],
) -> list[int]:
    inputs: list[int] = []
    pos = 0
    folded: dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
    for v in operands:
        if v.owner is not None and getattr(v.owner, "name", "") == "onnx.NoValue":
            inputs.append(NO_VALUE)
            continue
        if v in views:
            src, vw = views[v]
            inputs.append(view.slot[src])
            folded[pos] = vw
        else:
            inputs.append(view.slot[v])
        pos += 1
    if folded:
        attrs[VIEWS_ATTR] = folded
    return inputs


def _step(
    view: StepView,
    op: Operation,
    views: dict[SSAValue, tuple[SSAValue, tuple[int, tuple[int, ...], tuple[int, ...]]]],
) -> Step:
    if isinstance(op, vkd.WithEpilogueOp):
        host, epi = op.host, op.epilogue
        attrs = op_attrs(host)
        attrs.update({k: v for k, v in op_attrs(op).items() if k.startswith("vkd.")})
        inputs = _inputs(view, op.inputs, views, attrs)
        attrs[EPILOGUE_ATTR] = {
            "region": region_steps(epi.regions[0].block),
            "inputs": len(op.inputs) - len(host.operands),
            "node": node_name(epi),
            "nodes": list(op_attrs(epi).get("vx.fused_names") or [node_name(epi)]),
        }
        for k in ("vx.fused_names",):
            if k in attrs and k not in op_attrs(host):
                del attrs[k]
        out = _new_slot(view, op.output, f"{node_name(epi)}:0")
        return Step(host.name, node_name(host), inputs, [out], [view.specs[out]], attrs)
    attrs = op_attrs(op)
    inputs = _inputs(view, op.operands, views, attrs)
    region = region_steps(op.regions[0].block) if op.regions else None
    ov = out_view_attr(op)
    if ov is not None:
        (use,) = op.results[0].uses
        alias = use.operation
        out = _new_slot(view, alias.results[0], f"{node_name(op)}:0")
        attrs[OUT_VIEW_ATTR] = ov
        attrs.pop(OUT_VIEW, None)
        return Step(op.name, node_name(op), inputs, [out], [view.specs[out]], attrs, region)
    outs = [_new_slot(view, r, f"{node_name(op)}:{i}") for i, r in enumerate(op.results)]
    return Step(op.name, node_name(op), inputs, outs, [view.specs[s] for s in outs], attrs, region)
