"""`onnx` dialect -> ONNX protos: the way back, for ONNX's own machinery.

Used where reimplementing ONNX would be worse than asking ONNX: type/shape
inference over a whole function (infer-shapes), evaluating a constant node
with the reference implementation (const-fold), and running an operator that
has no `vx` lowering on the CPU.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TensorProto,
    helper,
    numpy_helper,
)
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue

from vknn.dialects.onnx import (
    CAPTURES_ATTR,
    NAME_ATTR,
    OPSET_ATTR,
    CustomOp,
    GraphAttr,
    OnnxOp,
    module_opset,
)
from vknn.ir.constants import to_numpy
from vknn.ir.types import onnx_from_element
from vknn.ir.weights import WEIGHTS


def op_type_and_domain(op: Operation) -> tuple[str, str]:
    if isinstance(op, CustomOp):
        domain = op.domain.data
        return op.op_type.data, "" if domain == "ai.onnx" else domain
    assert isinstance(op, OnnxOp)
    return op.OP_TYPE, ""


def graph_attr_proto(attr: GraphAttr) -> GraphProto:
    blob = WEIGHTS.get(attr.handle.data)
    if blob is None:
        raise KeyError(f"subgraph {attr.handle.data} is not in the weight store")
    g = GraphProto()
    g.ParseFromString(np.asarray(blob, dtype=np.uint8).tobytes())
    return g


def attribute_proto(name: str, attr: Attribute) -> AttributeProto | None:
    """The ONNX attribute for an IR attribute (None for VKNN's own `onnx.*` ones)."""
    if "." in name:
        return None
    if isinstance(attr, IntegerAttr):
        return helper.make_attribute(name, int(attr.value.data))
    if isinstance(attr, FloatAttr):
        return helper.make_attribute(name, float(attr.value.data))
    if isinstance(attr, StringAttr):
        return helper.make_attribute(name, attr.data.encode())
    if isinstance(attr, DenseArrayBase):
        values = list(attr.get_values())
        if isinstance(attr.elt_type, IntegerType):
            return helper.make_attribute(
                name, [int(v) for v in values], attr_type=AttributeProto.INTS
            )
        return helper.make_attribute(
            name, [float(v) for v in values], attr_type=AttributeProto.FLOATS
        )
    if isinstance(attr, ArrayAttr):
        return helper.make_attribute(
            name,
            [a.data.encode() for a in attr.data if isinstance(a, StringAttr)],
            attr_type=AttributeProto.STRINGS,
        )
    if isinstance(attr, DenseIntOrFPElementsAttr | DenseResourceAttr):
        return helper.make_attribute(name, numpy_helper.from_array(np.asarray(to_numpy(attr))))
    if isinstance(attr, GraphAttr):
        return helper.make_attribute(name, graph_attr_proto(attr))
    raise TypeError(f"attribute '{name}' = {attr} has no ONNX form")


def value_info(name: str, t: Attribute) -> onnx.ValueInfoProto:
    if isinstance(t, TensorType):
        dims = [d if d >= 0 else None for d in t.get_shape()]
        return helper.make_tensor_value_info(name, onnx_from_element(t.element_type), dims)
    if isinstance(t, UnrankedTensorType):
        return helper.make_tensor_value_info(name, onnx_from_element(t.element_type), None)
    raise TypeError(f"value '{name}' of type {t} has no ONNX form")


class ValueNames:
    """Stable ONNX names for SSA values. Values captured by subgraphs keep the
    name the subgraph uses; the rest get `%N`, which no exporter emits."""

    def __init__(self, ops: Iterable[Operation] = ()):
        self.names: dict[SSAValue, str] = {}
        for op in ops:
            caps = op.attributes.get(CAPTURES_ATTR)
            if isinstance(caps, ArrayAttr):
                n = len(caps.data)
                for v, c in zip(op.operands[len(op.operands) - n :], caps.data, strict=True):
                    assert isinstance(c, StringAttr)
                    self.names[v] = c.data

    def __getitem__(self, v: SSAValue) -> str:
        if isinstance(v.type, NoneType):
            return ""
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = f"%{len(self.names)}"
        return name


def explicit_operands(op: Operation) -> list[SSAValue]:
    caps = op.attributes.get(CAPTURES_ATTR)
    n = len(caps.data) if isinstance(caps, ArrayAttr) else 0
    return list(op.operands[: len(op.operands) - n])


def node_proto(op: Operation, names: ValueNames) -> NodeProto:
    op_type, domain = op_type_and_domain(op)
    node = helper.make_node(
        op_type,
        [names[v] for v in explicit_operands(op)],
        [names[r] for r in op.results],
        name=_node_name(op),
        domain=domain or None,
    )
    for key, attr in op.attributes.items():
        proto = attribute_proto(key, attr)
        if proto is not None:
            node.attribute.append(proto)
    return node


def _node_name(op: Operation) -> str:
    attr = op.attributes.get(NAME_ATTR)
    return attr.data if isinstance(attr, StringAttr) else ""


def opset_imports(module_or_op: Operation) -> list[onnx.OperatorSetIdProto]:
    return [helper.make_opsetid("", module_opset(module_or_op))]


def single_node_model(
    op: Operation, inputs: list[tuple[str, np.ndarray | Attribute]]
) -> ModelProto:
    """A model of one op: constant inputs become initializers, the rest typed inputs."""
    names = ValueNames([op])
    node = node_proto(op, names)
    graph_inputs, inits = [], []
    for (name, v), operand in zip(inputs, op.operands, strict=False):
        if isinstance(v, np.ndarray):
            inits.append(numpy_helper.from_array(np.asarray(v), name))
        else:
            graph_inputs.append(value_info(name, operand.type))
    outputs = [value_info(names[r], r.type) for r in op.results]
    graph = helper.make_graph([node], "node", graph_inputs, outputs, inits)
    opsets = opset_imports(op)
    _, domain = op_type_and_domain(op)
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=onnx.IR_VERSION)


__all__ = [
    "CAPTURES_ATTR",
    "OPSET_ATTR",
    "TensorProto",
    "ValueNames",
    "attribute_proto",
    "explicit_operands",
    "graph_attr_proto",
    "node_proto",
    "op_type_and_domain",
    "single_node_model",
    "value_info",
]


def func_of(module: ModuleOp) -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp):
            return op
    raise ValueError("module has no func.func")
