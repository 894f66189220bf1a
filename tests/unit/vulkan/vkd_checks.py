"""Reading a compiled `vkd` module for structural checks: which kernel each
dispatch runs, how each tensor it touches is stored (fp32/fp16 words,
flat/NC4HW4), which storage conversions the compiler inserted and where,
which weights are stored in another form. What the runtime replays is
exactly this module (ADR 0008), so a plan decision is asserted here.

`device_module` lowers a model for the test device's own target, the module
a `vknn.Session` on that device compiles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx

from tests.unit.vulkan.harness import lowered


@dataclass(frozen=True)
class Buf:
    """One tensor a dispatch binds: its logical shape, its layout ("flat",
    "nc4hw4"), its storage ("f32", "f16", "i32", ...) and the buffer value."""

    shape: tuple[int, ...]
    layout: str
    storage: str
    value: Any


@dataclass(frozen=True)
class Dispatch:
    label: str
    shader: str
    variant: str
    node: str
    kind: str
    reads: tuple[Buf, ...]
    writes: tuple[Buf, ...]

    @property
    def bufs(self) -> tuple[Buf, ...]:
        return self.reads + self.writes

    @property
    def packed(self) -> bool:
        """Writes an NC4HW4 tensor (the op ran packed)."""
        return any(b.layout == "nc4hw4" for b in self.writes)

    @property
    def is_convert(self) -> bool:
        return self.shader == "convert_storage"


def device_module(model: onnx.ModelProto, device: Any, **options: Any) -> Any:
    """The final `vkd` module of `model` for exactly `device` (what a session
    on it compiles); `options`: `LoweringOptions` fields."""
    from vknn.runtime.target import from_caps

    return lowered(model, from_caps(device.caps), **options)


def _buf(value: Any) -> Buf:
    t = value.type
    shape = tuple(d.data for d in t.shape.data)
    return Buf(shape, t.layout.data.value, str(t.storage), value)


def dispatches(module: Any) -> list[Dispatch]:
    """Every `vkd.dispatch`, in command order."""
    from vknn.dialects.vkd import DispatchOp, KernelOp

    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, KernelOp)}
    out = []
    for op in module.walk():
        if not isinstance(op, DispatchOp):
            continue
        k = kernels[op.kernel.root_reference.data]
        writes = [a.data.writes for a in k.bindings.data]
        bufs = [_buf(v) for v in op.buffers]
        attrs = op.attributes
        out.append(
            Dispatch(
                op.label.data, k.shader.data, k.precision.data.value,
                attrs["onnx.name"].data if "onnx.name" in attrs else "",
                attrs["vkd.kind"].data if "vkd.kind" in attrs else "",
                tuple(b for b, w in zip(bufs, writes, strict=True) if not w),
                tuple(b for b, w in zip(bufs, writes, strict=True) if w),
            )
        )  # fmt: skip
    return out


def conversions(module: Any) -> list[str]:
    """The storage conversions, as their labels say: "fp32->fp32/nc4hw4 x"
    (from form -> to form, and the tensor)."""
    return [d.label.removeprefix("convert ") for d in dispatches(module) if d.is_convert]


def root(value: Any) -> Any:
    """The buffer a (sub)view is of."""
    from vknn.dialects.vkd import SubviewOp

    while isinstance(getattr(value, "owner", None), SubviewOp):
        value = value.owner.source
    return value


def boundary_buffers(module: Any) -> tuple[set[Any], set[Any]]:
    """(buffers uploads write, buffers downloads read): the Vulkan segments'
    inputs and outputs as they sit on the device."""
    from vknn.dialects.vkd import DownloadOp, UploadOp

    ups = {root(op.dest) for op in module.walk() if isinstance(op, UploadOp)}
    downs = {root(op.source) for op in module.walk() if isinstance(op, DownloadOp)}
    return ups, downs


def downloads(module: Any) -> list[Buf]:
    """The device tensors the host reads (segment outputs), in order."""
    from vknn.dialects.vkd import DownloadOp

    return [_buf(op.source) for op in module.walk() if isinstance(op, DownloadOp)]


def uploads(module: Any) -> list[Buf]:
    """The device tensors the host writes (segment inputs), in order."""
    from vknn.dialects.vkd import UploadOp

    return [_buf(op.dest) for op in module.walk() if isinstance(op, UploadOp)]


def weight_forms(module: Any) -> list[tuple[str, str, str]]:
    """(weight handle, transform or "", storage) of every `vkd.weight`."""
    from vknn.dialects.vkd import WeightOp

    out = []
    for op in module.walk():
        if isinstance(op, WeightOp):
            t = op.transform.data if op.transform is not None else ""
            out.append((op.data.resource_handle.data, t, _buf(op.result).storage))
    return out


def is_boundary_conversion(module: Any, d: Dispatch) -> bool:
    """A conversion of a segment input (reads an uploaded buffer) or of a
    segment output (writes a downloaded one)."""
    ups, downs = boundary_buffers(module)
    return any(root(b.value) in ups for b in d.reads) or any(
        root(b.value) in downs for b in d.writes
    )


# -- the storage decisions (the module after `assign-storage`) ------------------


def stages(
    model: onnx.ModelProto,
    target: Any = "lavapipe",
    dims: dict[str, int] | None = None,
    **options: Any,
) -> tuple[Any, Any]:
    """(the module after `assign-storage`, the final `vkd` module) of one
    compile. The first is what `convert-vx-to-vkd` lowers: each Vulkan op
    with its `vkd.variant`, `vkd.storage` (result forms such as "f16:flat")
    and `vkd.fp32_rules`, each conversion a `vkd.convert`. `target`: a
    preset name or a `Target`; `options`: `LoweringOptions` fields."""
    from vknn.compiler import LoweringOptions, graph_pipeline, import_any, lower
    from vknn.kernels.targets import target as named

    seen: list[Any] = []
    module = graph_pipeline(import_any(model), dims=dims)
    t = named(target) if isinstance(target, str) else target
    lower(module, LoweringOptions(**options), t, before_convert=lambda m: seen.append(m.clone()))
    assert seen, "nothing was lowered for Vulkan"
    return seen[0], module


def storage_module(model: onnx.ModelProto, target: Any = "lavapipe", **options: Any) -> Any:
    """The module after `assign-storage` (`stages`)."""
    return stages(model, target, **options)[0]


def _strings(op: Any, key: str) -> tuple[str, ...]:
    a = op.attributes.get(key)
    return tuple(x.data for x in a.data) if a is not None else ()


@dataclass(frozen=True)
class Placed:
    """A Vulkan op after `assign-storage`."""

    op: Any
    nodes: tuple[str, ...]
    """The ONNX nodes it computes (a merged epilogue's too)."""
    variant: str
    storage: tuple[str, ...]
    rules: tuple[str, ...]

    @property
    def kept(self) -> bool:
        """A precision rule keeps its result in fp32."""
        return bool(self.rules)


def _nodes(op: Any) -> tuple[str, ...]:
    for key in ("vkd.nodes", "onnx.name"):
        if key in op.attributes:
            return tuple(op.attributes[key].data.split(","))
    return ()


def placed(module: Any) -> list[Placed]:
    """Every op of the Vulkan segments that runs a kernel, in order."""
    from vknn.dialects import vkd

    out = []
    for seg in module.walk():
        if not (isinstance(seg, vkd.SegmentOp) and seg.backend.data == "vulkan"):
            continue
        for op in seg.body.block.ops:
            v = op.attributes.get("vkd.variant")
            if v is None:
                continue
            out.append(Placed(op, _nodes(op), v.data, _strings(op, "vkd.storage"),
                              _strings(op, "vkd.fp32_rules")))  # fmt: skip
    return out


def producer(value: Any) -> Any:
    """The op computing `value` through views, aliases and reshapes (which
    share its storage); None: a segment input."""
    from xdsl.ir import Operation

    from vknn.dialects import vkd

    owner = value.owner
    while isinstance(owner, vkd.ViewOp | vkd.AliasOp) or getattr(owner, "name", "") == "vx.reshape":
        owner = owner.operands[0].owner
    return owner if isinstance(owner, Operation) else None


def converts(module: Any) -> list[tuple[str, str, str, Any]]:
    """(tensor name, from form, to form, the op) of every `vkd.convert`."""
    from vknn.dialects import vkd
    from vknn.transforms.segment_steps import value_name

    return [
        (value_name(op.source), op.from_form.data, op.to_form.data, op)
        for op in module.walk()
        if isinstance(op, vkd.ConvertOp)
    ]


def arg_storage(module: Any) -> dict[str, str]:
    """Segment input name -> its storage form on the device."""
    from vknn.dialects import vkd
    from vknn.transforms.segment_steps import value_name

    out = {}
    for seg in module.walk():
        if isinstance(seg, vkd.SegmentOp) and seg.backend.data == "vulkan":
            forms = _strings(seg, "vkd.arg_storage")
            for arg, form in zip(seg.body.block.args, forms, strict=True):
                out[value_name(arg)] = form
    return out
