"""ONNX ModelProto -> `builtin.module` holding one `func.func @main` of `onnx.*` ops.

The import is faithful: one op per node, ONNX attribute names, initializers
as named `onnx.Constant` ops whose values live in the weight store (printed as
`dense_resource<handle>`, never as bytes). Types come from the model's
declarations and ONNX's own type/shape inference; making every shape static
is the job of the `infer-shapes` pass, not of the importer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    TensorProto,
    ValueInfoProto,
    numpy_helper,
)
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    f32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from vknn.dialects.onnx import (
    CAPTURES_ATTR,
    NAME_ATTR,
    OPSET_ATTR,
    CustomOp,
    GraphAttr,
    NoValueOp,
    op_class,
)
from vknn.errors import ModelLoadError, Unsupported
from vknn.frontend.loader import (
    default_opset,
    external_tensor_loader,
    load_model_bytes,
    load_model_file,
)
from vknn.ir.constants import INLINE_DTYPES, INLINE_LIMIT, dense_attr
from vknn.ir.types import element_from_onnx, numpy_dtype
from vknn.ir.weights import WEIGHTS

DIM_PARAMS_ATTR = "onnx.dim_params"
"""Argument attribute: the symbolic names of an input's dynamic axes ("" if none)."""
OUTPUT_NAMES_ATTR = "onnx.output_names"
NODES_ATTR = "onnx.nodes"
"""Function attribute: the name of every node of the ONNX graph, in order, so
the reports can account for nodes folded or eliminated during compilation."""

_SHAPE_INFERENCE_DATA_LIMIT = 4096
"""Initializers larger than this are given to ONNX's type inference as typed
inputs rather than data (it only needs the values of small shape tensors)."""


def import_onnx_file(path: str | Path) -> ModuleOp:
    path = Path(path)
    return import_model(load_model_file(path), base_dir=path.parent, name=str(path))


def import_onnx_bytes(data: bytes, name: str = "<bytes>", base_dir: Path | None = None) -> ModuleOp:
    return import_model(load_model_bytes(data, name), base_dir=base_dir, name=name)


def import_model(
    model: ModelProto, base_dir: Path | None = None, name: str = "<model>"
) -> ModuleOp:
    """Import an in-memory model. External data resolves against `base_dir`."""
    return _Importer(model, base_dir, name).run()


def _tensor_type(vi_type: onnx.TypeProto, where: str) -> Attribute:
    if not vi_type.HasField("tensor_type"):
        kind = vi_type.WhichOneof("value") or "unknown"
        raise Unsupported(f"{where}: {kind} values are not supported (only tensors)")
    tt = vi_type.tensor_type
    elem = element_from_onnx(tt.elem_type, where)
    if not tt.HasField("shape"):
        return UnrankedTensorType(elem)
    dims = [d.dim_value if d.HasField("dim_value") else DYNAMIC_INDEX for d in tt.shape.dim]
    return TensorType(elem, dims)


def _dim_params(vi: ValueInfoProto) -> list[str]:
    if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return []
    return [
        d.dim_param if not d.HasField("dim_value") else "" for d in vi.type.tensor_type.shape.dim
    ]


class _Importer:
    def __init__(self, model: ModelProto, base_dir: Path | None, name: str):
        self.model = model
        self.base_dir = base_dir
        self.name = name
        self.opset = default_opset(model)
        self.values: dict[str, SSAValue] = {}
        self.types: dict[str, Attribute] = {}
        self.handles: list[str] = []

    # -- types ------------------------------------------------------------
    def _infer_types(self) -> None:
        """Element types and shapes of intermediate values, from ONNX's own
        inference on a weightless copy of the graph (weights are typed inputs)."""
        g = self.model.graph
        lite = ModelProto()
        lite.ir_version = max(self.model.ir_version, 4)
        lite.opset_import.extend(self.model.opset_import)
        lg = lite.graph
        lg.node.extend(g.node)
        lg.input.extend(g.input)
        lg.output.extend(g.output)
        lg.value_info.extend(g.value_info)
        declared = {i.name for i in g.input}
        for init in g.initializer:
            small = (
                init.data_location != TensorProto.EXTERNAL
                and (int(np.prod(init.dims)) if init.dims else 1) <= _SHAPE_INFERENCE_DATA_LIMIT
            )
            if small:
                lg.initializer.append(init)
            elif init.name not in declared:
                lg.input.append(
                    onnx.helper.make_tensor_value_info(init.name, init.data_type, init.dims)
                )
        try:
            inferred = onnx.shape_inference.infer_shapes(lite, strict_mode=False, data_prop=True)
            infos = list(inferred.graph.value_info) + list(inferred.graph.output)
        except Exception:  # inference is a hint; the infer-shapes pass decides later
            infos = list(g.value_info) + list(g.output)
        for vi in infos:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                try:
                    self.types[vi.name] = _tensor_type(vi.type, f"value '{vi.name}'")
                except Unsupported:
                    pass

    def _result_type(self, name: str, node: NodeProto) -> Attribute:
        if name in self.types:
            return self.types[name]
        # Unknown to inference: same element type as the first tensor input.
        for inp in node.input:
            if inp and inp in self.values:
                t = self.values[inp].type
                if isinstance(t, TensorType | UnrankedTensorType):
                    return UnrankedTensorType(t.element_type)
        return UnrankedTensorType(f32)

    # -- constants --------------------------------------------------------
    def _constant_attr(self, tensor: TensorProto, hint: str) -> Attribute:
        where = f"tensor '{tensor.name or hint}'"
        elem = element_from_onnx(tensor.data_type, where)
        shape = [int(d) for d in tensor.dims]
        typ = TensorType(elem, shape)
        if tensor.data_location == TensorProto.EXTERNAL:
            if self.base_dir is None:
                raise ModelLoadError(
                    f"{self.name}: {where} uses external data, but the model was not loaded "
                    "from a file (no folder to read it from)"
                )
            loader = external_tensor_loader(tensor, self.base_dir)
        else:
            loader = self._inline_loader(tensor, where)
        count = int(np.prod(shape)) if shape else 1
        if count <= INLINE_LIMIT and numpy_dtype(elem).name in INLINE_DTYPES:
            return dense_attr(loader(), typ)
        from xdsl.dialects.builtin import DenseResourceAttr

        handle = WEIGHTS.add(tensor.name or hint, loader)
        self.handles.append(handle)
        return DenseResourceAttr.from_params(handle, typ)

    def _inline_loader(self, tensor: TensorProto, where: str):
        def load() -> np.ndarray:
            try:
                return numpy_helper.to_array(tensor)
            except Exception as e:
                raise ModelLoadError(f"{self.name}: {where} holds malformed data ({e})") from None

        # Decode now when small: a malformed tensor is an import error, not a late one.
        if len(tensor.raw_data) <= 1 << 16:
            array = load()
            return lambda: array
        return load

    # -- attributes -------------------------------------------------------
    def _attribute(self, attr: AttributeProto, node: NodeProto) -> Attribute:
        A = AttributeProto
        match attr.type:
            case A.INT:
                return IntegerAttr(attr.i, i64)
            case A.FLOAT:
                return FloatAttr(attr.f, f32)
            case A.STRING:
                return StringAttr(attr.s.decode("utf-8", errors="replace"))
            case A.INTS:
                return DenseArrayBase.from_list(i64, list(attr.ints))
            case A.FLOATS:
                return DenseArrayBase.from_list(f32, list(attr.floats))
            case A.STRINGS:
                return ArrayAttr(
                    [StringAttr(s.decode("utf-8", errors="replace")) for s in attr.strings]
                )
            case A.TENSOR:
                return self._constant_attr(attr.t, f"{node.name or node.op_type}.{attr.name}")
            case A.GRAPH:
                blob = np.frombuffer(attr.g.SerializeToString(), dtype=np.uint8)
                handle = WEIGHTS.add(f"{node.name or node.op_type}.{attr.name}", blob)
                self.handles.append(handle)
                return GraphAttr(StringAttr(handle))
        raise Unsupported(
            f"node '{node.name}' ({node.op_type}): attribute '{attr.name}' of kind "
            f"{A.AttributeType.Name(attr.type)} is not supported"
        )

    # -- graph ------------------------------------------------------------
    def run(self) -> ModuleOp:
        from vknn.frontend.schema import check_graph

        g = self.model.graph
        check_graph(self.model, self.name, self.opset)
        self._infer_types()
        initializers = {t.name for t in g.initializer}
        inputs = [vi for vi in g.input if vi.name not in initializers]
        arg_types = [_tensor_type(vi.type, f"input '{vi.name}'") for vi in inputs]
        block = Block(arg_types=arg_types)
        arg_attrs = []
        for vi, arg in zip(inputs, block.args, strict=True):
            arg.name_hint = _ssa_name(vi.name)
            self.values[vi.name] = arg
            attrs: dict[str, Attribute] = {NAME_ATTR: StringAttr(vi.name)}
            params = _dim_params(vi)
            if any(params):
                attrs[DIM_PARAMS_ATTR] = ArrayAttr([StringAttr(p) for p in params])
            arg_attrs.append(DictionaryAttr(attrs))

        const_class = op_class("Constant")
        assert const_class is not None
        for init in g.initializer:
            value = self._constant_attr(init, init.name)
            op = const_class.create(
                result_types=[value.type],  # type: ignore[attr-defined]
                attributes={"value": value, NAME_ATTR: StringAttr(init.name)},
            )
            block.add_op(op)
            op.results[0].name_hint = _ssa_name(init.name)
            self.values[init.name] = op.results[0]

        no_value: SSAValue | None = None
        for index, node in enumerate(g.node):
            operands: list[SSAValue] = []
            for inp in node.input:
                if inp == "":
                    if no_value is None:
                        nv = NoValueOp.create(result_types=[NoneType()])
                        block.add_op(nv)
                        no_value = nv.results[0]
                    operands.append(no_value)
                elif inp in self.values:
                    operands.append(self.values[inp])
                else:
                    raise ModelLoadError(
                        f"{self.name}: node '{node.name or index}' ({node.op_type}) reads "
                        f"'{inp}', which no earlier node produces (graph not topologically sorted?)"
                    )
            attributes: dict[str, Attribute] = {
                NAME_ATTR: StringAttr(node.name or f"{node.op_type}_{index}")
            }
            for a in node.attribute:
                attributes[a.name] = self._attribute(a, node)
            captures = self._captures(node)
            if captures:
                operands.extend(self.values[c] for c in captures)
                attributes[CAPTURES_ATTR] = ArrayAttr([StringAttr(c) for c in captures])
            result_types = [
                self._result_type(o, node) if o else UnrankedTensorType(f32) for o in node.output
            ]
            cls = op_class(node.op_type, node.domain)
            if cls is not None:
                op = cls.create(operands=operands, result_types=result_types, attributes=attributes)
            else:
                op = CustomOp.create(
                    operands=operands,
                    result_types=result_types,
                    attributes=attributes,
                    properties={
                        "op_type": StringAttr(node.op_type),
                        "domain": StringAttr(node.domain or "ai.onnx"),
                    },
                )
            block.add_op(op)
            for out, res in zip(node.output, op.results, strict=True):
                if out:
                    res.name_hint = _ssa_name(out)
                    self.values[out] = res

        results = []
        for out in g.output:
            value = self.values[out.name]
            results.append(value)
        block.add_op(ReturnOp(*results))
        func = FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(block),
            arg_attrs=ArrayAttr(arg_attrs),
        )
        func.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr([StringAttr(o.name) for o in g.output])
        func.attributes[NODES_ATTR] = ArrayAttr(
            [StringAttr(n.name or f"{n.op_type}_{i}") for i, n in enumerate(g.node)]
        )
        module = ModuleOp([func])
        module.attributes[OPSET_ATTR] = IntegerAttr(self.opset, i64)
        return module

    def _captures(self, node: NodeProto) -> list[str]:
        """Outer-scope names read inside the node's subgraphs (recursively)."""
        found: list[str] = []
        for a in node.attribute:
            graphs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
            for sub in graphs:
                for name in _free_names(sub):
                    if name in self.values and name not in found:
                        found.append(name)
        return found


def _free_names(graph: GraphProto) -> list[str]:
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    free: list[str] = []
    for node in graph.node:
        names = list(node.input)
        for a in node.attribute:
            for sub in [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs):
                names.extend(_free_names(sub))
        for n in names:
            if n and n not in defined and n not in free:
                free.append(n)
        defined.update(node.output)
    for out in graph.output:
        if out.name not in defined and out.name not in free:
            free.append(out.name)
    return free


def _ssa_name(name: str) -> str | None:
    """A readable SSA name hint from an ONNX tensor name (None if unusable)."""
    cleaned = "".join(c if c.isalnum() or c in "_.$-" else "_" for c in name)
    return cleaned if cleaned and not cleaned[0].isdigit() else (f"v{cleaned}" if cleaned else None)
