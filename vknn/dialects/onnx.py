"""The `onnx` dialect: one op per ONNX operator, as faithful as the import.

Op classes are generated from ONNX's own operator schemas (`onnx.defs`), so
every operator of the default domain has a definition and is verified against
the schema of the opset the model declares: input/output counts, required
attributes, attribute kinds, and element types against the schema's type
constraints. Attributes keep their ONNX names and are stored as:

    INT -> i64 IntegerAttr     FLOAT -> f32 FloatAttr     STRING -> StringAttr
    INTS -> array<i64: ...>    FLOATS -> array<f32: ...>  STRINGS -> [StringAttr]
    TENSOR -> dense<...> / dense_resource<...>            GRAPH -> #onnx.graph<...>

A missing optional input in the middle of the list is a `none` value from
`onnx.NoValue`. Every op also carries `onnx.name`, the ONNX node name, so
later stages report nodes by the name the user knows. An operator outside the
default domain (or unknown to this `onnx` version) imports as `onnx.custom`
with its `op_type` and `domain`, and is reported by name downstream.

This module only defines IR; it does not import or transform anything.
"""

from __future__ import annotations

from typing import ClassVar

import onnx.defs
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    param_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from vknn.ir.types import ELEMENT_TO_ONNX, ONNX_TYPE_STR

OPSET_ATTR = "onnx.opset"
"""Module attribute: the default-domain opset the model imports."""
NAME_ATTR = "onnx.name"
"""Op attribute: the ONNX node (or initializer) name."""
CAPTURES_ATTR = "onnx.captures"
"""Op attribute: outer-scope names its subgraphs read. Those values follow the
op's ONNX inputs in its operand list, so data flow stays visible in the IR."""

LATEST_OPSET = onnx.defs.onnx_opset_version()
_AttrType = onnx.defs.OpSchema.AttrType
_Option = onnx.defs.OpSchema.FormalParameterOption


@irdl_attr_definition
class GraphAttr(ParametrizedAttribute):
    """A GRAPH attribute (If/Loop/Scan bodies), kept as a handle to the
    serialized GraphProto in the weight store: subgraphs run on the CPU path,
    which executes them with ONNX's reference implementation."""

    name = "onnx.graph"
    handle: StringAttr = param_def(StringAttr)


def module_opset(op: Operation) -> int:
    """The default-domain opset in force for `op` (the newest if undeclared)."""
    parent: Operation | None = op
    while parent is not None:
        if (attr := parent.attributes.get(OPSET_ATTR)) is not None:
            assert isinstance(attr, IntegerAttr)
            return attr.value.data
        if isinstance(parent, ModuleOp):
            break
        parent = parent.parent_op()
    return LATEST_OPSET


_ATTR_KINDS: dict[int, tuple[type[Attribute], ...]] = {
    _AttrType.INT: (IntegerAttr,),
    _AttrType.FLOAT: (FloatAttr,),
    _AttrType.STRING: (StringAttr,),
    _AttrType.INTS: (DenseArrayBase,),
    _AttrType.FLOATS: (DenseArrayBase,),
    _AttrType.STRINGS: (ArrayAttr,),
    _AttrType.TENSOR: (DenseIntOrFPElementsAttr, DenseResourceAttr),
    _AttrType.GRAPH: (GraphAttr,),
}


def _type_str(t: Attribute) -> str | None:
    if isinstance(t, TensorType | UnrankedTensorType):
        code = ELEMENT_TO_ONNX.get(t.element_type)
        return f"tensor({ONNX_TYPE_STR[code]})" if code is not None else None
    return None


class OnnxOp(IRDLOperation):
    """Base of the generated operator classes (see the module docstring)."""

    OP_TYPE: ClassVar[str] = ""

    inputs = var_operand_def()
    outputs = var_result_def()

    assembly_format = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    @property
    def node_name(self) -> str:
        attr = self.attributes.get(NAME_ATTR)
        return attr.data if isinstance(attr, StringAttr) else ""

    @property
    def onnx_inputs(self) -> tuple:
        """The operands that are ONNX inputs (subgraph captures excluded)."""
        caps = self.attributes.get(CAPTURES_ATTR)
        n = len(caps.data) if isinstance(caps, ArrayAttr) else 0
        return tuple(self.inputs[: len(self.inputs) - n])

    def schema(self) -> onnx.defs.OpSchema:
        opset = module_opset(self)
        try:
            return onnx.defs.get_schema(self.OP_TYPE, opset, "")
        except onnx.defs.SchemaError:
            raise VerifyException(
                f"{self.name}: operator {self.OP_TYPE} does not exist in opset {opset}"
            ) from None

    def verify_(self) -> None:
        schema = self.schema()
        where = f"{self.name} (node '{self.node_name}', opset {module_opset(self)})"
        n_in, n_out = len(self.onnx_inputs), len(self.outputs)
        if not schema.min_input <= n_in <= schema.max_input:
            raise VerifyException(
                f"{where}: expects {schema.min_input}..{schema.max_input} inputs, got {n_in}"
            )
        if not schema.min_output <= n_out <= schema.max_output:
            raise VerifyException(
                f"{where}: expects {schema.min_output}..{schema.max_output} outputs, got {n_out}"
            )
        self._verify_attributes(schema, where)
        self._verify_types(schema, where)

    def _verify_attributes(self, schema: onnx.defs.OpSchema, where: str) -> None:
        for name, spec in schema.attributes.items():
            value = self.attributes.get(name)
            if value is None:
                if spec.required:
                    raise VerifyException(f"{where}: missing required attribute '{name}'")
                continue
            kinds = _ATTR_KINDS.get(spec.type)
            if kinds is not None and not isinstance(value, kinds):
                raise VerifyException(
                    f"{where}: attribute '{name}' must be {spec.type.name}, got {value}"
                )
        for name in self.attributes:
            if "." not in name and name not in schema.attributes:
                raise VerifyException(f"{where}: unknown attribute '{name}'")

    def _verify_types(self, schema: onnx.defs.OpSchema, where: str) -> None:
        allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
        bound: dict[str, str] = {}

        def check(values, formals, kind: str) -> None:
            for i, value in enumerate(values):
                formal = formals[min(i, len(formals) - 1)] if formals else None
                if formal is None:
                    return
                t = value.type
                if isinstance(t, NoneType):
                    if formal.option != _Option.Optional:
                        raise VerifyException(
                            f"{where}: {kind} '{formal.name}' is not optional but is none"
                        )
                    continue
                ts = _type_str(t)
                if ts is None:
                    continue  # non-tensor types (sequences, strings) are not checked here
                var = formal.type_str
                if var in allowed:
                    if ts not in allowed[var]:
                        raise VerifyException(
                            f"{where}: {kind} '{formal.name}' has type {ts}, "
                            f"allowed: {', '.join(sorted(allowed[var]))}"
                        )
                    if formal.is_homogeneous or formal.option != _Option.Variadic:
                        if bound.setdefault(var, ts) != ts:
                            raise VerifyException(
                                f"{where}: {kind} '{formal.name}' has type {ts} but "
                                f"type variable {var} is already {bound[var]}"
                            )
                elif var.startswith("tensor(") and ts != var:
                    raise VerifyException(
                        f"{where}: {kind} '{formal.name}' must be {var}, got {ts}"
                    )

        check(self.onnx_inputs, schema.inputs, "input")
        check(self.outputs, schema.outputs, "output")


@irdl_op_definition
class CustomOp(IRDLOperation):
    """An operator with no definition here (another domain, or newer than this
    `onnx` package): kept whole so that later stages can name it."""

    name = "onnx.custom"

    op_type = prop_def(StringAttr)
    domain = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()

    assembly_format = (
        "$op_type `(` $inputs `)` `domain` $domain attr-dict `:` functional-type($inputs, $outputs)"
    )

    @property
    def node_name(self) -> str:
        attr = self.attributes.get(NAME_ATTR)
        return attr.data if isinstance(attr, StringAttr) else ""


@irdl_op_definition
class NoValueOp(IRDLOperation):
    """The absent value of an optional input that is followed by present ones."""

    name = "onnx.NoValue"
    result = result_def(NoneType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"


def _make_op(schema: onnx.defs.OpSchema) -> type[OnnxOp]:
    cls = type(
        f"{schema.name}Op",
        (OnnxOp,),
        {
            "name": f"onnx.{schema.name}",
            "OP_TYPE": schema.name,
            "__annotations__": {"OP_TYPE": ClassVar[str]},
            "__module__": __name__,
            "__doc__": f"ONNX operator {schema.name} (domain ai.onnx).",
        },
    )
    return irdl_op_definition(cls)


def _default_domain_schemas() -> list[onnx.defs.OpSchema]:
    latest: dict[str, onnx.defs.OpSchema] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "" and (
            s.name not in latest or s.since_version > latest[s.name].since_version
        ):
            latest[s.name] = s
    return sorted(latest.values(), key=lambda s: s.name)


OPS: dict[str, type[OnnxOp]] = {s.name: _make_op(s) for s in _default_domain_schemas()}
"""ONNX op_type -> its op class, for every operator of the default domain."""


def op_class(op_type: str, domain: str = "") -> type[OnnxOp] | None:
    if domain in ("", "ai.onnx"):
        return OPS.get(op_type)
    return None


ONNX = Dialect("onnx", [*OPS.values(), CustomOp, NoValueOp], [GraphAttr])
