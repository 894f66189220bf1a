"""IR -> `runtime.plan.Plan`: the compiler's hand-off to the runtime.

Walks the one function of a compiled module and turns every op into a plain
`Step` (attributes converted to Python values, constants to numpy arrays), so
the runtime never touches xDSL objects. Operators still in the `onnx` dialect
(no `vx` lowering) carry a one-node ONNX model, which the CPU runs with ONNX's
reference implementation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrankedTensorType,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, Operation, SSAValue, TypeAttribute

from vknn.dialects.onnx import NAME_ATTR, CustomOp, GraphAttr, OnnxOp, module_opset
from vknn.errors import VknnError
from vknn.ir.constants import to_numpy
from vknn.ir.onnx_export import ValueNames, node_proto, op_type_and_domain, value_info
from vknn.ir.types import numpy_dtype
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec

OUTPUT_NAMES_ATTR = "onnx.output_names"
_CONSTANT_OPS = ("onnx.Constant", "vx.constant")


def plain(attr: Attribute) -> Any:
    """An IR attribute as a plain Python value."""
    if isinstance(attr, IntegerAttr):
        v = int(attr.value.data)
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(v)
        return v
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, EnumAttribute):
        return str(attr.data)
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if isinstance(attr, ArrayAttr):
        return [plain(a) for a in attr.data]
    if isinstance(attr, DictionaryAttr):
        return {k: plain(v) for k, v in attr.data.items()}
    if isinstance(attr, DenseIntOrFPElementsAttr | DenseResourceAttr):
        return np.asarray(to_numpy(attr))
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, GraphAttr):
        return attr.handle.data
    if isinstance(attr, TypeAttribute):
        try:
            return numpy_dtype(attr).name
        except Exception:
            return str(attr)
    return str(attr)


def tensor_spec(name: str, t: Attribute) -> TensorSpec:
    if isinstance(t, TensorType):
        return TensorSpec(name, tuple(t.get_shape()), numpy_dtype(t.element_type).name)
    if isinstance(t, UnrankedTensorType):
        return TensorSpec(name, (), numpy_dtype(t.element_type).name)
    raise VknnError(f"value '{name}' has non-tensor type {t}")


def _scalar_spec(name: str, t: Attribute) -> TensorSpec:
    """A body value's spec: shape () and its element type's dtype."""
    if isinstance(t, TensorType | UnrankedTensorType):
        return tensor_spec(name, t)
    try:
        return TensorSpec(name, (), numpy_dtype(t).name)
    except Exception:
        return TensorSpec(name, (), str(t))


def _node_name(op: Operation) -> str:
    a = op.attributes.get(NAME_ATTR)
    return a.data if isinstance(a, StringAttr) else op.name


def onnx_node_model(op: Operation) -> bytes:
    """A serialized one-node ModelProto for an `onnx.*` op; its graph inputs
    are the op's operands in order (subgraph captures included), so the CPU
    feeds them positionally."""
    names = ValueNames([op])
    node = node_proto(op, names)
    inputs = [value_info(names[v], v.type) for v in op.operands if not isinstance(v.type, NoneType)]
    outputs = [value_info(names[r], r.type) for r in op.results]
    graph = helper.make_graph([node], "node", inputs, outputs)
    opsets = [helper.make_opsetid("", module_opset(op))]
    _, domain = op_type_and_domain(op)
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=onnx.IR_VERSION)
    return model.SerializeToString()


class _PlanBuilder:
    def __init__(self) -> None:
        self.slots: dict[SSAValue, int] = {}
        self.constants: dict[int, np.ndarray] = {}
        self.next_slot = 0

    def new_slot(self, v: SSAValue) -> int:
        s = self.next_slot
        self.next_slot += 1
        self.slots[v] = s
        return s

    def slot(self, v: SSAValue) -> int:
        if isinstance(v.type, NoneType):
            return NO_VALUE
        return self.slots[v]

    def step(self, op: Operation) -> Step:
        attrs = op_attrs(op)
        inputs = [self.slot(v) for v in op.operands]
        outputs = [self.new_slot(r) for r in op.results]
        specs = [tensor_spec(f"{_node_name(op)}:{i}", r.type) for i, r in enumerate(op.results)]
        region = None
        if op.regions:
            region = self.region_steps(op.regions[0].block)
        return Step(op.name, _node_name(op), inputs, outputs, specs, attrs, region)

    def region_steps(self, block: Block) -> list[Step]:
        return region_steps(block)


def op_attrs(op: Operation) -> dict[str, Any]:
    """An op's properties and attributes as plain Python values (`onnx.*`
    keys as `onnx_*`), plus, for ops still in the `onnx` dialect, the one-node
    model the CPU runs it with."""
    attrs: dict[str, Any] = {}
    for key, a in (*op.properties.items(), *op.attributes.items()):
        if key != NAME_ATTR:
            attrs[key.replace("onnx.", "onnx_")] = plain(a)
    if isinstance(op, OnnxOp | CustomOp):
        op_type, _ = op_type_and_domain(op)
        attrs["onnx_op_type"] = op_type
        attrs["onnx_model"] = onnx_node_model(op)
    return attrs


def region_steps(block: Block) -> list[Step]:
    """A body as steps over local slots: its arguments first."""
    local = _PlanBuilder()
    for arg in block.args:
        local.new_slot(arg)
    steps = []
    for op in block.ops:
        s = Step(
            op.name,
            op.name,
            [local.slot(v) for v in op.operands],
            [local.new_slot(r) for r in op.results],
            # Scalar specs: the interpreter needs each result's element
            # type (a cast's target is nowhere else).
            [_scalar_spec(op.name, r.type) for r in op.results],
            {k: plain(a) for k, a in (*op.properties.items(), *op.attributes.items())},
        )
        steps.append(s)
    return steps


def op_step(op: Operation) -> Step:
    """One op as a plan step whose inputs are slots 0..n-1 (its operands in
    order) — how compile-time evaluation runs a single op on a CPU kernel."""
    b = _PlanBuilder()
    for v in op.operands:
        if not isinstance(v.type, NoneType) and v not in b.slots:
            b.new_slot(v)
    return b.step(op)
