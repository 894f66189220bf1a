"""infer-shapes: make every tensor shape in the graph static.

Inputs first: a dynamic axis 0 (batch) defaults to `batch`; any other dynamic
axis must be declared, either by its symbolic name (`dims="seq=128"`) or by
the input's whole shape (`shapes="x=1x128"`); an undeclared one is a hard
error naming the input and the axis — never a silent 1.

Then every op result, by ONNX's own type and shape inference run once over
the whole function (with data propagation, so Shape -> Gather -> Reshape
chains resolve). Results that stay dynamic here (data-dependent ops) are left
for const-fold, which alternates with this pass until nothing changes.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from vknn.dialects.onnx import NAME_ATTR, CustomOp, NoValueOp, OnnxOp, module_opset
from vknn.errors import ShapeInferenceError
from vknn.hints import declare_hint
from vknn.ir.constants import to_numpy
from vknn.ir.onnx_export import ValueNames, node_proto, value_info
from vknn.ir.types import static_shape

DIM_PARAMS_ATTR = "onnx.dim_params"
_DATA_LIMIT = 4096  # constants up to this size are given to inference as data


def parse_shapes(spec: str) -> dict[str, tuple[int, ...]]:
    """`"x=1x3x224x224;y=1x128"` -> {"x": (1, 3, 224, 224), "y": (1, 128)}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in filter(None, (s.strip() for s in spec.replace(";", " ").split())):
        name, _, dims = item.rpartition("=")
        try:
            shapes[name] = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            raise ShapeInferenceError(
                f"bad shape declaration '{item}' (expected name=1x3x224x224)"
            ) from None
    return shapes


def parse_dims(spec: str) -> dict[str, int]:
    """`"batch=1,seq=128"` -> {"batch": 1, "seq": 128}."""
    dims: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, value = item.partition("=")
        try:
            dims[name.strip()] = int(value)
        except ValueError:
            raise ShapeInferenceError(
                f"bad dimension declaration '{item}' (expected name=128)"
            ) from None
    return dims


def _arg_name(func: FuncOp, i: int) -> str:
    if func.arg_attrs is not None:
        attrs = func.arg_attrs.data[i]
        if isinstance(attrs, DictionaryAttr) and isinstance(
            n := attrs.data.get(NAME_ATTR), StringAttr
        ):
            return n.data
    return f"arg{i}"


def _dim_params(func: FuncOp, i: int) -> list[str]:
    if func.arg_attrs is not None:
        attrs = func.arg_attrs.data[i]
        if isinstance(attrs, DictionaryAttr) and isinstance(
            p := attrs.data.get(DIM_PARAMS_ATTR), ArrayAttr
        ):
            return [s.data for s in p.data if isinstance(s, StringAttr)]
    return []


def _say_batch(name: str, param: str, batch: int, said: set[str]) -> None:
    """A dynamic axis 0 taken as `batch` is said once per axis name."""
    if (param or name) in said:
        return
    said.add(param or name)
    label = f" ('{param}')" if param else ""
    warnings.warn(
        f"vknn: input '{name}' axis 0{label} is dynamic and not declared; taking {batch} "
        f"(declare it, e.g. {declare_hint(param, name)})",
        stacklevel=3,
    )


def resolve_inputs(
    func: FuncOp,
    shapes: dict[str, tuple[int, ...]],
    dims: dict[str, int],
    batch: int,
    said: set[str] | None = None,
) -> None:
    """Give every function argument a static type (see the module docstring)."""
    args = func.body.block.args
    unknown = set(shapes) - {_arg_name(func, i) for i in range(len(args))}
    if unknown:
        names = ", ".join(_arg_name(func, i) for i in range(len(args)))
        raise ShapeInferenceError(
            f"shape declared for unknown input(s) {sorted(unknown)}; inputs are: {names}"
        )
    for i, arg in enumerate(args):
        t = arg.type
        name = _arg_name(func, i)
        if name in shapes:
            new_shape = shapes[name]
            if isinstance(t, TensorType):
                old = t.get_shape()
                if len(old) != len(new_shape) or any(
                    o >= 0 and o != n for o, n in zip(old, new_shape, strict=False)
                ):
                    raise ShapeInferenceError(
                        f"input '{name}': declared shape {list(new_shape)} does not match the "
                        f"model's {['?' if d < 0 else d for d in old]}"
                    )
        elif isinstance(t, TensorType):
            params = _dim_params(func, i)
            new = []
            for axis, d in enumerate(t.get_shape()):
                param = params[axis] if axis < len(params) else ""
                if d >= 0:
                    new.append(d)
                elif param and param in dims:
                    new.append(dims[param])
                elif axis == 0:
                    new.append(dims.get(param, batch) if param else batch)
                    _say_batch(name, param, batch, set() if said is None else said)
                else:
                    label = f" ('{param}')" if param else ""
                    raise ShapeInferenceError(
                        f"input '{name}' axis {axis}{label} is dynamic and not declared; "
                        f"declare it, e.g. {declare_hint(param, name)}"
                    )
            new_shape = tuple(new)
        else:
            raise ShapeInferenceError(
                f"input '{name}' has unknown rank; declare its shape, "
                f"e.g. {declare_hint('', name, '1x3x224x224')}"
            )
        if isinstance(t, TensorType) and tuple(t.get_shape()) == new_shape:
            continue
        elem = t.element_type  # type: ignore[union-attr]
        Rewriter.replace_value_with_new_type(arg, TensorType(elem, new_shape))
    _sync_signature(func)


def _sync_signature(func: FuncOp) -> None:
    ret = func.body.block.last_op
    outputs = (
        [v.type for v in ret.operands]
        if isinstance(ret, ReturnOp)
        else func.function_type.outputs.data
    )
    func.function_type = FunctionType.from_lists(list(func.body.block.arg_types), list(outputs))


def refine_types(func: FuncOp) -> int:
    """Set every op result type ONNX's inference can make static. Returns how
    many types changed."""
    block = func.body.block
    ops = list(block.ops)
    names = ValueNames(ops)
    inputs, inits, nodes = [], [], []
    results: dict[str, SSAValue] = {}
    has_custom = False
    for arg in block.args:
        inputs.append(value_info(names[arg], arg.type))
    for op in ops:
        if isinstance(op, NoValueOp | ReturnOp):
            continue
        if isinstance(op, OnnxOp) and op.OP_TYPE == "Constant" and "value" in op.attributes:
            value = op.attributes["value"]
            out = op.results[0]
            shape = static_shape(out.type)
            if shape is not None and int(np.prod(shape)) <= _DATA_LIMIT:
                inits.append(numpy_helper.from_array(np.asarray(to_numpy(value)), names[out]))
            else:
                inputs.append(value_info(names[out], out.type))
            continue
        if isinstance(op, OnnxOp | CustomOp):
            has_custom |= isinstance(op, CustomOp)
            nodes.append(node_proto(op, names))
            for r in op.results:
                results[names[r]] = r
        else:  # already-lowered ops: their (static) result types are facts
            for r in op.results:
                if not isinstance(r.type, NoneType):
                    inputs.append(value_info(names[r], r.type))
    if not nodes:
        return 0
    ret = block.last_op
    outputs = [
        helper.make_value_info(names[v], onnx.TypeProto()) for v in (ret.operands if ret else [])
    ]
    graph = helper.make_graph(nodes, "main", inputs, outputs, inits)
    opsets = [helper.make_opsetid("", module_opset(func))]
    for d in sorted({n.domain for n in nodes if n.domain}):
        opsets.append(helper.make_opsetid(d, 1))
    model = helper.make_model(graph, opset_imports=opsets, ir_version=onnx.IR_VERSION)
    strict_error = None
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=not has_custom, data_prop=True
        )
    except onnx.shape_inference.InferenceError as e:
        # ONNX's strict mode also trips on its own function bodies (e.g.
        # MeanVarianceNormalization); retry leniently and fail below only if
        # the node the error names is left without a static shape.
        strict_error = " ".join(str(e).split())
        try:
            inferred = onnx.shape_inference.infer_shapes(
                model, check_type=True, strict_mode=False, data_prop=True
            )
        except onnx.shape_inference.InferenceError as e2:  # a type error even leniently
            raise ShapeInferenceError(" ".join(str(e2).split())) from None
    changed = 0
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        value = results.get(vi.name)
        if value is None or not vi.type.HasField("tensor_type"):
            continue
        new_type = _type_from_proto(vi.type, value.type)
        if new_type is None or new_type == value.type:
            continue
        old_static = static_shape(value.type)
        new_static = static_shape(new_type)
        if old_static is not None:
            if new_static is not None and new_static != old_static:
                owner = value.owner
                node = owner.attributes.get(NAME_ATTR) if hasattr(owner, "attributes") else None
                raise ShapeInferenceError(
                    f"node '{node.data if isinstance(node, StringAttr) else '?'}' ({owner.name}): "
                    f"declared result shape {list(old_static)} "
                    f"but inference gives {list(new_static)}"
                )
            continue  # a known static shape beats a vaguer inferred one
        if not _more_precise(new_type, value.type):
            continue
        Rewriter.replace_value_with_new_type(value, new_type)
        changed += 1
    changed += _same_shape_results(ops)
    if strict_error is not None:
        _check_named_node(block, strict_error)
    _sync_signature(func)
    return changed


_SAME_SHAPE = frozenset(
    {"GroupNormalization", "MeanVarianceNormalization", "InstanceNormalization", "LpNormalization"}
)
"""Ops whose first result has their first input's type, which ONNX's
inference leaves unset for some of them (function ops: GroupNormalization-21,
MeanVarianceNormalization)."""


def _same_shape_results(ops: list) -> int:  # type: ignore[type-arg]
    changed = 0
    for op in ops:
        if not (isinstance(op, OnnxOp) and op.OP_TYPE in _SAME_SHAPE and op.results):
            continue
        x, y = op.operands[0], op.results[0]
        if static_shape(y.type) is None and static_shape(x.type) is not None:
            Rewriter.replace_value_with_new_type(y, x.type)
            changed += 1
    return changed


def _check_named_node(block, message: str) -> None:  # type: ignore[no-untyped-def]
    """Raise the strict-mode error if the node it names still lacks a static shape."""
    import re

    names = set(re.findall(r"node name: ([^)]*)\)", message))
    for op in block.ops:
        name = op.attributes.get(NAME_ATTR)
        if isinstance(name, StringAttr) and name.data in names:
            if any(static_shape(r.type) is None for r in op.results):
                raise ShapeInferenceError(f"shape inference failed: {message}")


def _known_dims(t: Attribute) -> int:
    if isinstance(t, TensorType):
        return 1 + sum(d >= 0 for d in t.get_shape())
    return 0


def _more_precise(new: Attribute, old: Attribute) -> bool:
    """Replace a type only by one that knows more (rank, then more static dims)."""
    if isinstance(old, TensorType) and isinstance(new, TensorType):
        if len(old.get_shape()) != len(new.get_shape()):
            return False
    return _known_dims(new) > _known_dims(old)


def _type_from_proto(tp: onnx.TypeProto, old: Attribute) -> Attribute | None:
    from vknn.ir.types import element_from_onnx

    tt = tp.tensor_type
    try:
        elem = (
            element_from_onnx(tt.elem_type) if tt.elem_type else getattr(old, "element_type", None)
        )
    except Exception:
        return None
    if elem is None:
        return None
    if not tt.HasField("shape"):
        return UnrankedTensorType(elem) if isinstance(old, UnrankedTensorType) else None
    dims = [d.dim_value if d.HasField("dim_value") else DYNAMIC_INDEX for d in tt.shape.dim]
    return TensorType(elem, dims)


def funcs(module: ModuleOp) -> list[FuncOp]:
    return [op for op in module.ops if isinstance(op, FuncOp)]


@dataclass(frozen=True)
class InferShapesPass(ModulePass):
    """Make every shape static (inputs from declarations, ops by ONNX inference)."""

    name = "infer-shapes"

    shapes: str = ""
    """Whole input shapes, `x=1x3x224x224;y=1x128`."""
    dims: str = ""
    """Symbolic dimension values, `batch=1,seq=128`."""
    batch: int = 1
    """The value of a dynamic, undeclared axis 0."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shapes, dims = parse_shapes(self.shapes), parse_dims(self.dims)
        said: set[str] = set()
        for func in funcs(op):
            resolve_inputs(func, shapes, dims, self.batch, said)
            refine_types(func)
