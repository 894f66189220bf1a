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

from collections.abc import Callable
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
    onnx_reference: bool = False
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
        f"onnx_reference={str(opts.onnx_reference).lower()} "
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
            f"assign-storage{{precision={_q(opts.precision)} "
            f"device_layout={_q(opts.device_layout)}}}",
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
    from vknn.transforms.pipelines import pipeline_spec

    spec = pipeline_spec(pipeline, _shape_spec(shapes or {}), _dims_spec(dims or {}))
    _apply(spec, module, "vknn compile (graph)")
    return module


def _apply(spec: str, module: ModuleOp, desc: str) -> None:
    """Run a pass pipeline, with a bar of its passes on a terminal (vknn.progress)."""
    from vknn.dialects import make_context
    from vknn.progress import Bar
    from vknn.transforms.registry import available_passes

    passes = PassPipeline.parse_spec(available_passes(), spec).passes
    with Bar(len(passes), desc) as bar:

        def step(prev: Any, _m: Any, nxt: Any) -> None:
            if prev is not None:
                bar.update(1, nxt.name if nxt is not None else "")

        PassPipeline(passes, step if bar.active else None).apply(make_context(), module)


def lower(
    module: ModuleOp,
    opts: LoweringOptions,
    target: Target | None,
    before_convert: Callable[[ModuleOp], None] | None = None,
) -> ModuleOp:
    """Run the lowering pipeline on a `vx` module for `target` (recorded on
    the module as `#vkd.target` first), in place. `before_convert` sees the
    module after assign-storage (the autotuner pins `vkd.config` there)."""
    from vknn.dialects.vkd import TARGET_ATTR
    from vknn.transforms.target_option import target_attr

    if target is not None:
        module.attributes[TARGET_ATTR] = target_attr(target)
    spec = lowering_spec(opts)
    if before_convert is None or "convert-vx-to-vkd" not in spec:
        _apply(spec, module, "vknn compile (lower)")
        return module
    cut = spec.index("convert-vx-to-vkd")
    first, rest = spec[:cut].rstrip(","), spec[cut:]
    _apply(first, module, "vknn compile (lower)")
    before_convert(module)
    _apply(rest, module, "vknn compile (to vkd)")
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
    before_convert: Callable[[ModuleOp], None] | None = None,
) -> dict[str, Any]:
    """An imported module through both pipelines, serialized: the program."""
    from vknn.serialize import module_to_program

    graph_pipeline(module, pipeline, shapes, dims)
    lower(module, opts, target, before_convert)
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


# -- several buckets and targets ------------------------------------------------


def merge_modules(modules: list[ModuleOp]) -> ModuleOp:
    """One module holding every bucket's function (`@b0`, `@b1`, ... when
    there are several) and each distinct kernel once. The modules must have
    been lowered for one target and precision."""
    from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
    from xdsl.dialects.func import FuncOp

    from vknn.dialects import vkd
    from vknn.errors import InvalidArgument

    if len(modules) == 1:
        return modules[0]
    out = ModuleOp([])
    for key in (vkd.TARGET_ATTR, "vkd.precision", "onnx.opset"):
        values = {str(m.attributes.get(key)) for m in modules}
        if len(values) > 1:
            raise InvalidArgument(f"cannot merge buckets compiled with different {key}")
        if key in modules[0].attributes:
            out.attributes[key] = modules[0].attributes[key]
    kernels: dict[str, str] = {}  # printed properties -> symbol in `out`
    for i, m in enumerate(modules):
        renames: dict[str, str] = {}
        for op in list(m.ops):
            if isinstance(op, vkd.KernelOp):
                old = op.sym_name.data
                props = {k: str(v) for k, v in op.properties.items() if k != "sym_name"}
                key = repr(sorted(props.items()))
                name = kernels.get(key)
                if name is None:
                    name = old
                    while name in kernels.values():
                        name += "_"
                    kernels[key] = name
                    op.detach()
                    op.properties["sym_name"] = StringAttr(name)
                    out.body.block.add_op(op)
                renames[old] = name
        for op in list(m.ops):
            if isinstance(op, FuncOp):
                for d in op.walk():
                    if isinstance(d, vkd.DispatchOp):
                        old = d.kernel.root_reference.data
                        d.properties["kernel"] = SymbolRefAttr(renames.get(old, old))
                op.detach()
                op.properties["sym_name"] = StringAttr(f"b{i}")
                out.body.block.add_op(op)
    return out


WEIGHTS_ATTR = "vkd.weights"
"""Module attribute of printed IR: the sidecar file holding its weights."""


def save_text(module: ModuleOp, path: Path) -> Path:
    """Write `module` as text and its weights to `<path>.weights` (named in
    the module, so `load_text` finds them); returns the sidecar's path."""
    import msgpack
    from xdsl.dialects.builtin import DenseResourceAttr, StringAttr
    from xdsl.printer import Printer

    from vknn.ir.weights import WEIGHTS
    from vknn.runtime.codec import encode_array

    handles: dict[str, Any] = {}
    for op in module.walk():
        for a in (*op.properties.values(), *op.attributes.values()):
            if isinstance(a, DenseResourceAttr):
                h = a.resource_handle.data
                arr = WEIGHTS.get(h)
                if arr is not None:
                    handles[h] = encode_array(arr)
    sidecar = path.with_name(path.name + ".weights")
    module.attributes[WEIGHTS_ATTR] = StringAttr(sidecar.name)
    sidecar.write_bytes(msgpack.packb(handles, use_bin_type=True))
    with open(path, "w") as f:
        Printer(stream=f).print_op(module)
        f.write("\n")
    return sidecar


def load_text(path: Path) -> ModuleOp:
    """Parse printed IR; weights come from the sidecar the module names (a
    file next to it: nothing outside the module's folder is read)."""
    import re
    import secrets

    import msgpack
    from xdsl.parser import Parser

    from vknn.dialects import make_context
    from vknn.errors import ModelLoadError
    from vknn.ir.weights import WEIGHTS
    from vknn.runtime.codec import decode_array
    from vknn.runtime.vxm import read_regular

    text = read_regular(path, 1 << 32, "IR file").decode("utf-8", errors="replace")
    named = re.search(rf'{re.escape(WEIGHTS_ATTR)} = "([^"]*)"', text)
    if named:
        sidecar = Path(named.group(1))
        if sidecar.name != named.group(1) or sidecar.name in ("", ".", ".."):
            raise ModelLoadError(
                f"{path}: weights file {named.group(1)!r} must be a file next to it"
            )
        raw = read_regular(path.parent / sidecar, 1 << 40, "weights file")
        try:
            entries = msgpack.unpackb(raw, raw=False, strict_map_key=True)
            # Every handle gets a name no parse in this process has seen (xDSL
            # renames a resource key declared before, and so would break the
            # link between the text and its weights).
            tag = secrets.token_hex(4)
            fresh = {h: f"w{tag}_{i}" for i, h in enumerate(entries)}
            for h, enc in entries.items():
                WEIGHTS.add(fresh[h], decode_array(enc))
        except Exception as e:
            raise ModelLoadError(f"{path.parent / sidecar}: bad weights file ({e})") from None
        text = re.sub(
            r"dense_resource<([^>]+)>",
            lambda m: f"dense_resource<{fresh.get(m.group(1), m.group(1))}>",
            text,
        )
    try:
        return Parser(make_context(), text, str(path)).parse_module()
    except Exception as e:
        raise ModelLoadError(f"{path}: not valid IR: {' '.join(str(e).split())[:300]}") from None


def finish_text(path: Path) -> dict[str, Any]:
    """A printed module at any lowering stage, through the rest of the
    lowering pipeline (every pass leaves done work alone), as a program."""
    from vknn.dialects import make_context
    from vknn.serialize import module_to_program
    from vknn.transforms.registry import available_passes

    module = load_text(path)
    try:
        spec = lowering_spec(LoweringOptions())
        PassPipeline.parse_spec(available_passes(), spec).apply(make_context(), module)
        return module_to_program(module)
    finally:
        release_weights(module)
