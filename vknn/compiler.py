"""The compiler driver: ONNX model -> passes -> IR -> runtime plan.

This is the only place the runtime's session reaches into the compiler (and
so into xDSL); a serialized plan (.vxm, later) needs neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onnx import ModelProto
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp
from xdsl.passes import PassPipeline

from vknn.runtime.plan import Plan


def _shape_spec(shapes: dict[str, tuple[int, ...]]) -> str:
    return ";".join(f"{k}={'x'.join(str(d) for d in v)}" for k, v in shapes.items())


def _dims_spec(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


@dataclass
class CompileResult:
    module: ModuleOp
    plan: Plan


def import_any(model: str | Path | ModelProto | bytes) -> ModuleOp:
    from vknn.frontend import import_model, import_onnx_bytes, import_onnx_file

    if isinstance(model, ModelProto):
        return import_model(model)
    if isinstance(model, bytes):
        return import_onnx_bytes(model)
    return import_onnx_file(model)


def compile_module(
    module: ModuleOp,
    *,
    pipeline: str = "standard",
    shapes: dict[str, tuple[int, ...]] | None = None,
    dims: dict[str, int] | None = None,
) -> CompileResult:
    """Run the named pipeline on an imported module and lower it to a plan.

    The module is changed in place; weights it no longer needs are released.
    """
    from vknn.dialects import make_context
    from vknn.ir.to_plan import module_to_plan
    from vknn.transforms.pipelines import pipeline_spec
    from vknn.transforms.registry import available_passes

    spec = pipeline_spec(pipeline, _shape_spec(shapes or {}), _dims_spec(dims or {}))
    PassPipeline.parse_spec(available_passes(), spec).apply(make_context(), module)
    plan = module_to_plan(module)
    return CompileResult(module, plan)


def release_weights(module: ModuleOp) -> None:
    """Drop the weight-store entries a module refers to (the plan holds its own
    references to the arrays it needs)."""
    from vknn.ir.weights import WEIGHTS

    handles = set()
    for op in module.walk():
        for a in (*op.properties.values(), *op.attributes.values()):
            if isinstance(a, DenseResourceAttr):
                handles.add(a.resource_handle.data)
            elif getattr(a, "name", "") == "onnx.graph":
                handles.add(a.handle.data)  # type: ignore[attr-defined]
    WEIGHTS.release(handles)
