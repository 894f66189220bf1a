"""The compiler driver: ONNX model -> `vx` -> final `vkd` module -> program.

`compile_model` imports a model, runs the named graph pipeline (`standard`:
ONNX -> optimized `vx`) and then the lowering pipeline (`lowering_spec`:
split-large-gemms, partition, merge-epilogues, fold-views, assign-storage,
convert-vx-to-vkd, plan-memory, insert-barriers), every decision a pass
with its options spelled out in the spec, so `vknn-opt -p "<spec>"` on the
printed `vx` module reproduces the module exactly. `vknn.serialize` turns
the final module into the program the runtime replays.

This is where the session facade reaches into the compiler (and so into
xDSL and onnx); a compiled program (.vxm, model cache) needs neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onnx import ModelProto
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from vknn.runtime.target import Target


@dataclass(frozen=True)
class LoweringOptions:
    """Every option of the lowering passes (what a `Config` decides)."""

    precision: str = "high"
    backends: tuple[str, ...] = ("vulkan", "cpu")
    disable_vk_ops: str = ""
    allow_cpu_fallback: bool = True
    fold_gpu_islands: int = 2
    device_layout: str = "nc4hw4"
    fastmath: str = "auto"
    vulkan_unavailable: str = ""


def _q(s: str) -> str:
    return '"' + s.replace('"', "") + '"'


def lowering_spec(opts: LoweringOptions, target: str = "") -> str:
    """The `-p` spec of the lowering passes for `opts`; `target` names the
    target when the module does not carry one yet."""
    t = f"target={_q(target)} " if target else ""
    part = (
        f"partition{{{t}backends={_q(','.join(opts.backends))} "
        f"disable_vk_ops={_q(opts.disable_vk_ops)} "
        f"allow_cpu_fallback={str(opts.allow_cpu_fallback).lower()} "
        f"fold_gpu_islands={opts.fold_gpu_islands} "
        f"vulkan_unavailable={_q(opts.vulkan_unavailable)}}}"
    )
    if "vulkan" not in opts.backends or opts.vulkan_unavailable:
        return part  # nothing runs on the GPU: no Vulkan lowering
    split = f"split-large-gemms{{{t.strip()}}}" if t else "split-large-gemms"
    return ",".join(
        [
            split,
            part,
            "merge-epilogues",
            f"fold-views{{device_layout={_q(opts.device_layout)}}}",
            f"assign-storage{{precision={_q(opts.precision)} device_layout={_q(opts.device_layout)}}}",
            f"convert-vx-to-vkd{{fastmath={_q(opts.fastmath)}}}",
            "plan-memory",
            "insert-barriers",
        ]
    )


def _shape_spec(shapes: dict[str, tuple[int, ...]]) -> str:
    return ";".join(f"{k}={'x'.join(str(d) for d in v)}" for k, v in shapes.items())


def _dims_spec(dims: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in dims.items())


def import_any(model: str | Path | ModelProto | bytes, base_dir: Path | None = None) -> ModuleOp:
    from vknn.frontend import import_model, import_onnx_bytes, import_onnx_file

    if isinstance(model, ModelProto):
        return import_model(model, base_dir=base_dir)
    if isinstance(model, bytes):
        return import_onnx_bytes(model)
    return import_onnx_file(model)


def graph_pipeline(
    module: ModuleOp,
    pipeline: str = "standard",
    shapes: dict[str, tuple[int, ...]] | None = None,
    dims: dict[str, int] | None = None,
) -> ModuleOp:
    """Run the named graph pipeline (ONNX -> vx) on `module`, in place."""
    from vknn.dialects import make_context
    from vknn.transforms.pipelines import pipeline_spec
    from vknn.transforms.registry import available_passes

    spec = pipeline_spec(pipeline, _shape_spec(shapes or {}), _dims_spec(dims or {}))
    PassPipeline.parse_spec(available_passes(), spec).apply(make_context(), module)
    return module


def lower(module: ModuleOp, opts: LoweringOptions, target: Target | None) -> ModuleOp:
    """Run the lowering pipeline on a `vx` module for `target` (recorded on
    the module as `#vkd.target` first), in place."""
    from vknn.dialects import make_context
    from vknn.dialects.vkd import TARGET_ATTR
    from vknn.transforms.registry import available_passes
    from vknn.transforms.target_option import target_attr

    if target is not None:
        module.attributes[TARGET_ATTR] = target_attr(target)
    PassPipeline.parse_spec(available_passes(), lowering_spec(opts)).apply(
        make_context(), module
    )
    return module


def compile_module(
    module: ModuleOp,
    opts: LoweringOptions,
    target: Target | None,
    *,
    pipeline: str = "standard",
    shapes: dict[str, tuple[int, ...]] | None = None,
    dims: dict[str, int] | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An imported module through both pipelines, serialized: the program."""
    from vknn.serialize import module_to_program

    graph_pipeline(module, pipeline, shapes, dims)
    lower(module, opts, target)
    return module_to_program(module, metadata)


def release_weights(module: ModuleOp) -> None:
    """Drop the weight-store entries a module refers to (a program holds the
    bytes it needs)."""
    from xdsl.dialects.builtin import DenseResourceAttr

    from vknn.ir.weights import WEIGHTS

    handles = set()
    for op in module.walk():
        for a in (*op.properties.values(), *op.attributes.values()):
            if isinstance(a, DenseResourceAttr):
                handles.add(a.resource_handle.data)
            elif getattr(a, "name", "") == "onnx.graph":
                handles.add(a.handle.data)  # type: ignore[attr-defined]
    WEIGHTS.release(handles)
