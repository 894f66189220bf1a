"""Compiled plans -> the `vkd` module, and the `.vxm` compile driver.

`plans_to_vkd` prints what the runtime will do with each plan bucket on a
device with given capabilities: it partitions a copy of every plan exactly as
`Session` does (split oversized GEMMs, `assign_backends`, epilogue merging,
`make_segments`) and emits one `vkd.plan` per bucket:

- `vkd.input` / `vkd.output` for the graph boundary (host nchw tensors);
- one device `vkd.arena` per Vulkan segment (the executor's one arena per
  segment), offsets from the executor's interval planner (`plan_arena`) over
  the segment's step live ranges, with reshape-like steps aliasing their
  input's bytes; one host arena for the tensors that cross segments;
- `vkd.weight` per constant a Vulkan step reads, a `dense_resource` handle
  named after its entry in the .vxm weights table (`w<id>`; never inline);
- `vkd.vulkan_segment`: uploads, then one `vkd.dispatch` per plan step,
  `vkd.barrier`s where a step touches bytes an earlier unbarriered step wrote
  (or overwrites bytes one read), then downloads;
- `vkd.cpu_segment`: the compiled `vx.*` / `onnx.*` ops themselves (cloned
  from the compiled module), each with its fallback reason.

Granularity (the module says so: `vkd.granularity = "step"`): a dispatch here
is one plan *step*, not one `vkCmdDispatch`. Its `vkd.kernel` names the
step's op (`shader "vx.conv"`), its precision variant, its bindings (inputs
read, outputs written) and its merged epilogue; push constants, spec
constants, group counts and the actual shader are left empty (`push 0`,
`groups [1, 1, 1]`) because the kernel recorders choose them when the
executor is built on the device. Tensors the executor stores NC4HW4
(`layouts.plan_layouts`, `Config.device_layout`) print as `nc4hw4` with
their padded sizes, and a reshape of one as a dispatch (it unpacks). Not
modelled: the executor's view folding and the storage conversions it
records around flat kernels reading packed tensors, its in-place concat
placement (the arena can be larger than the executor's), staging copies,
`precision="normal"`'s fp32-kept tensors (printed as fp16 storage, like
`low`); 8/16-bit integer and bool tensors, stored on the device as
int32 words, print with their logical type as storage (the dialect has no
such widening; the allocs' sizes are the real word sizes). The runtime never
reads this module.

`build_vxm` compiles an ONNX model once per bucket and returns the plans,
metadata and printed vkd module that `vknn.runtime.vxm` writes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto, helper
from xdsl.dialects.builtin import (
    DenseResourceAttr,
    ModuleOp,
    NoneType,
    StringAttr,
    TensorType,
    UnregisteredOp,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.printer import Printer

from vknn.dialects.onnx import OPSET_ATTR, NoValueOp
from vknn.dialects.vkd import (
    REASON_ATTR,
    Access,
    AllocOp,
    ArenaOp,
    BarrierOp,
    CpuSegmentOp,
    DispatchOp,
    DownloadOp,
    InputOp,
    KernelOp,
    Layout,
    Memory,
    OutputOp,
    PlanOp,
    Precision,
    Stage,
    TensorBufferType,
    UploadOp,
    VulkanSegmentOp,
    WeightOp,
    YieldOp,
)
from vknn.dialects.vx import ConstantOp
from vknn.errors import InvalidArgument, Unsupported, VknnError
from vknn.ir.constants import INLINE_DTYPES, INLINE_LIMIT, dense_attr
from vknn.ir.types import element_from_onnx
from vknn.config import Config
from vknn.runtime.partition import Segment, assign_backends, make_segments, slot_specs
from vknn.runtime.plan import NO_VALUE, Plan, Step, TensorSpec

GRANULARITY = "step"
_CONSTANT_OPS = ("onnx.Constant", "vx.constant")
_HOST_ALIGN = 64

WeightName = Callable[[np.ndarray], str]


# -- types -------------------------------------------------------------------


def _elem(dtype: str) -> Attribute:
    try:
        return element_from_onnx(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    except Exception:
        raise Unsupported(f"vkd: {dtype} tensors have no element type") from None


def _numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape)) if shape else 1


class _Types:
    """Host and device buffer types and sizes, as the executor stores tensors."""

    def __init__(self, fp16: bool) -> None:
        from vknn.runtime.vulkan.dtypes import FLOAT_DTYPES

        self.fp16 = fp16
        self._floats = FLOAT_DTYPES

    def host(self, spec: TensorSpec) -> TensorBufferType:
        return TensorBufferType(spec.shape, _elem(spec.dtype), Layout.NCHW)

    def host_bytes(self, spec: TensorSpec) -> int:
        return np.dtype(spec.dtype).itemsize * _numel(spec.shape)

    def tensor(self, spec: TensorSpec) -> TensorType:
        return TensorType(_elem(spec.dtype), spec.shape)

    def device(self, spec: TensorSpec, packed: bool = False) -> TensorBufferType:
        elem = _elem(spec.dtype)
        if spec.dtype in self._floats:
            storage = _elem("float16" if self.fp16 else "float32")
        elif spec.dtype == "int64":
            storage = _elem("int32")
        else:
            storage = elem  # int32 words; see the module docstring
        layout = Layout.NC4HW4 if packed else Layout.FLAT
        return TensorBufferType(spec.shape, elem, layout, storage)

    def device_bytes(self, spec: TensorSpec, packed: bool = False) -> int:
        from vknn.kernels.layouts import packed_numel

        word = 2 if self.fp16 and spec.dtype in self._floats else 4
        return word * max(1, packed_numel(spec.shape) if packed else _numel(spec.shape))


# -- kernels -----------------------------------------------------------------


class _Kernels:
    """One `vkd.kernel` per distinct (op, variant, bindings, epilogue)."""

    def __init__(self) -> None:
        self.ops: list[KernelOp] = []
        self._by_key: dict[tuple[Any, ...], str] = {}
        self._names: set[str] = set()

    def symbol(self, step: Step, variant: str, n_in: int, n_out: int) -> str:
        epi = step.attrs.get("vk.epilogue")
        epilogue = None
        if isinstance(epi, dict) and epi.get("region"):
            epilogue = ",".join(s.op for s in epi["region"][:-1]) or "yield"
        key = (step.op, variant, n_in, n_out, epilogue)
        name = self._by_key.get(key)
        if name is not None:
            return name
        base = step.op.replace(".", "_") + f"_{variant}" + ("_epi" if epilogue else "")
        name, n = base, 0
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        self._by_key[key] = name
        self.ops.append(
            KernelOp(
                name,
                step.op,
                Precision(variant),
                local_size=(1, 1, 1),
                bindings=[Access.READ] * n_in + [Access.WRITE] * n_out,
                push_size=0,
                epilogue=epilogue,
            )
        )
        return name


# -- one bucket --------------------------------------------------------------


def step_ops(module: ModuleOp) -> list[Operation]:
    """The compiled function's ops in plan-step order (what `module_to_plan`
    turns into steps: not constants, absent values or the return)."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        raise VknnError(f"expected one function in the compiled module, found {len(funcs)}")
    return [
        op
        for op in funcs[0].body.block.ops
        if op.name not in _CONSTANT_OPS and not isinstance(op, NoValueOp | ReturnOp)
    ]


def _partitioned(
    plan: Plan, config: Config, caps: Any, no_vulkan: str | None, origin: dict[int, Operation]
) -> tuple[Plan, list[Segment], dict[int, Operation]]:
    """A copy of `plan` partitioned as a Session would (the plan is untouched),
    and `origin` re-keyed to the copy's steps."""
    steps = [copy.copy(s) for s in plan.steps]
    moved = {
        id(c): origin[id(s)] for c, s in zip(steps, plan.steps, strict=True) if id(s) in origin
    }
    p = Plan(
        list(plan.inputs),
        list(plan.outputs),
        dict(plan.constants),
        steps,
        plan.num_slots,
        dict(plan.last_use),
    )
    if caps is not None:
        from vknn.runtime.vulkan.split_large import split_oversized_gemms

        split_oversized_gemms(p, caps.max_storage_buffer_range)
    assign_backends(p, config, caps, no_vulkan)
    if caps is not None:
        from vknn.kernels.epilogues import attach_epilogues

        p.steps = attach_epilogues(p.steps, slot_specs(p), caps)
        p.compute_last_use()
    return p, make_segments(p), moved


class _Bucket:
    """Lowers one partitioned plan to a `vkd.plan`."""

    def __init__(
        self,
        plan: Plan,
        segments: list[Segment],
        origin: dict[int, Operation],
        types: _Types,
        kernels: _Kernels,
        weight_name: WeightName,
        caps: Any,
        device_layout: str = "nc4hw4",
    ) -> None:
        self.plan, self.segments, self.origin = plan, segments, origin
        self.device_layout = device_layout
        self.packed: set[int] = set()
        self.types, self.kernels, self.weight_name = types, kernels, weight_name
        self.caps = caps
        self.specs = slot_specs(plan)
        self.variant = "fp16" if types.fp16 else "fp32"
        self.head: list[Operation] = []  # inputs, outputs, arenas, weights, allocs
        self.host: dict[int, SSAValue] = {}  # slot -> its host tensor
        self.weights: dict[tuple[int, tuple[int, ...]], SSAValue] = {}

    def lower(self, sym_name: str) -> PlanOp:
        plan = self.plan
        for spec, slot in plan.inputs:
            op = InputOp(spec.name, self.types.host(spec))
            self.head.append(op)
            self.host[slot] = op.result
        for spec, slot in plan.outputs:
            op = OutputOp(spec.name, self.types.host(spec))
            self.head.append(op)
            self.host.setdefault(slot, op.result)
        self._host_arena()
        segment_ops: list[Operation] = []
        for seg in self.segments:
            if seg.backend == "vulkan":
                segment_ops.append(self._vulkan(seg))
            else:
                segment_ops.append(self._cpu(seg))
        shapes = {spec.name: spec.shape for spec, _ in plan.inputs}
        return PlanOp(sym_name, shapes, Region(Block([*self.head, *segment_ops])))

    # -- memory ------------------------------------------------------------

    def _host_arena(self) -> None:
        """Host tensors for the values that cross segments (not graph I/O)."""
        from vknn.runtime.vulkan.memory import plan_arena

        produced: dict[int, int] = {}
        last: dict[int, int] = {}
        for i, seg in enumerate(self.segments):
            for s in seg.outputs:
                produced[s] = i
            for s in seg.inputs:
                last[s] = max(last.get(s, i), i)
        tensors = [
            (s, self.types.host_bytes(self.specs[s]), i, last.get(s, i))
            for s, i in produced.items()
            if s not in self.host
        ]
        if not tensors:
            return
        offsets, size = plan_arena(tensors, _HOST_ALIGN)
        arena = ArenaOp(Memory.HOST, size, _HOST_ALIGN)
        self.head.append(arena)
        for s, nbytes, _, _ in tensors:
            alloc = AllocOp(arena.result, offsets[s], self.types.host(self.specs[s]), nbytes)
            self.head.append(alloc)
            self.host[s] = alloc.result

    def _weight(self, slot: int, spec: TensorSpec) -> SSAValue:
        key = (slot, spec.shape)
        value = self.weights.get(key)
        if value is None:
            t = self.types.device(spec)
            blob = TensorType(t.storage, spec.shape)
            handle = self.weight_name(self.plan.constants[slot])
            op = WeightOp(DenseResourceAttr.from_params(handle, blob), t)
            self.head.append(op)
            value = self.weights[key] = op.result
        return value

    def _device_allocs(
        self, seg: Segment
    ) -> tuple[dict[int, SSAValue], dict[int, tuple[int, int]]]:
        """Device tensors of a Vulkan segment: slot -> value, and slot -> its
        byte range in the segment's arena (weights have none)."""
        from vknn.kernels import KERNELS
        from vknn.runtime.vulkan.memory import plan_arena

        constants = self.plan.constants
        self.packed = self._packed_slots(seg)
        packed = self.packed
        parent: dict[int, int] = {}
        for step in seg.steps:
            spec = KERNELS.get(step.op)
            if spec is not None and spec.aliases and step.inputs[0] not in packed:
                parent[step.outputs[0]] = step.inputs[0]

        def root(s: int) -> int:
            while s in parent:
                s = parent[s]
            return s

        end = len(seg.steps)
        first: dict[int, int] = {s: 0 for s in seg.inputs}
        last: dict[int, int] = {}
        for i, step in enumerate(seg.steps):
            for s in step.inputs:
                if s != NO_VALUE and s not in constants:
                    last[s] = i
            for s in step.outputs:
                first.setdefault(s, i)
        for s in seg.outputs:
            last[s] = end
        rfirst: dict[int, int] = {}
        rlast: dict[int, int] = {}
        for s, f in first.items():
            r = root(s)
            if r in constants:
                continue
            rfirst[r] = min(rfirst.get(r, f), f)
            rlast[r] = max(rlast.get(r, f), last.get(s, f))
        align = max(16, int(getattr(self.caps, "min_storage_buffer_offset_alignment", 16)))
        tensors = [
            (r, self.types.device_bytes(self.specs[r], r in packed), f, rlast[r])
            for r, f in rfirst.items()
        ]
        offsets, size = plan_arena(tensors, align)
        arena = ArenaOp(Memory.DEVICE, size, align)
        self.head.append(arena)
        values: dict[int, SSAValue] = {}
        ranges: dict[int, tuple[int, int]] = {}
        for s in first:
            r = root(s)
            spec = self.specs[s]
            if r in constants:
                values[s] = self._weight(r, spec)
                continue
            nbytes = self.types.device_bytes(spec, s in packed)
            alloc = AllocOp(arena.result, offsets[r], self.types.device(spec, s in packed), nbytes)
            self.head.append(alloc)
            values[s] = alloc.result
            ranges[s] = (offsets[r], offsets[r] + nbytes)
        return values, ranges

    def _packed_slots(self, seg: Segment) -> set[int]:
        """The segment's NC4HW4 tensors, as the executor plans them
        (`layouts.plan_layouts` on the steps, before its view folding)."""
        from vknn.kernels.layouts import PACKED, plan_layouts

        if self.caps is None:
            return set()
        lp = plan_layouts(
            seg.steps,
            self.specs,
            set(self.plan.constants),
            seg.outputs,
            self.device_layout == PACKED,
            self.caps.max_storage_buffer_range,
        )
        return lp.packed_slots

    # -- segments ----------------------------------------------------------

    def _vulkan(self, seg: Segment) -> VulkanSegmentOp:
        from vknn.kernels import KERNELS
        from vknn.kernels.epilogues import merged_nodes

        dev, ranges = self._device_allocs(seg)
        body: list[Operation] = [UploadOp(self.host[s], dev[s]) for s in seg.inputs]
        if body:
            body.append(BarrierOp(Stage.HOST, Stage.COMPUTE))
        written: list[tuple[int, int]] = []
        read: list[tuple[int, int]] = []

        def overlaps(r: tuple[int, int], rs: list[tuple[int, int]]) -> bool:
            return any(a < r[1] and r[0] < b for a, b in rs)

        for step in seg.steps:
            spec = KERNELS.get(step.op)
            if spec is not None and spec.aliases and step.inputs[0] not in self.packed:
                continue  # same bytes as its input: nothing recorded
            ins = [s for s in step.inputs if s != NO_VALUE]
            values = [dev[s] if s in dev else self._weight(s, self.specs[s]) for s in ins]
            values += [dev[s] for s in step.outputs]
            r_in = [ranges[s] for s in ins if s in ranges]
            r_out = [ranges[s] for s in step.outputs]
            if any(overlaps(r, written) for r in r_in + r_out) or any(
                overlaps(r, read) for r in r_out
            ):
                body.append(BarrierOp(Stage.COMPUTE, Stage.COMPUTE))
                written, read = [], []
            kernel = self.kernels.symbol(step, self.variant, len(ins), len(step.outputs))
            body.append(
                DispatchOp(kernel, values, groups=(1, 1, 1), node_name=",".join(merged_nodes(step)))
            )
            written += r_out
            read += r_in
        if seg.outputs:
            body.append(BarrierOp(Stage.COMPUTE, Stage.HOST))
            body += [DownloadOp(dev[s], self.host[s]) for s in seg.outputs]
        return VulkanSegmentOp(Region(Block(body)))

    def _cpu(self, seg: Segment) -> CpuSegmentOp:
        block = Block(arg_types=[self.types.tensor(self.specs[s]) for s in seg.inputs])
        local: dict[int, SSAValue] = dict(zip(seg.inputs, block.args, strict=True))
        ops: list[Operation] = []

        def operand(s: int) -> SSAValue:
            if s in local:
                return local[s]
            if s == NO_VALUE:
                op: Operation = NoValueOp.create(result_types=[NoneType()])
                reason = "absent optional operand"
            else:
                op = ConstantOp(self._constant_attr(s))
                reason = "constant operand"
            op.attributes[REASON_ATTR] = StringAttr(reason)
            ops.append(op)
            local[s] = op.results[0]
            return local[s]

        for step in seg.steps:
            values = [operand(s) for s in step.inputs]
            src = self.origin.get(id(step))
            if src is not None and len(src.operands) == len(values):
                new = src.clone(value_mapper=dict(zip(src.operands, values, strict=True)))
            else:  # a step the partitioner made (no compiled op): generic form
                new = UnregisteredOp.with_name(step.op).create(
                    operands=[v for v, s in zip(values, step.inputs, strict=True) if s != NO_VALUE],
                    result_types=[self.types.tensor(t) for t in step.out_specs],
                )
            new.attributes[REASON_ATTR] = StringAttr(step.reason or f"{step.kind}: runs on the CPU")
            ops.append(new)
            for s, r in zip(step.outputs, new.results, strict=True):
                local[s] = r
        ops.append(YieldOp(*[local[s] for s in seg.outputs]))
        block.add_ops(ops)
        return CpuSegmentOp(
            [self.host[s] for s in seg.inputs], [self.host[s] for s in seg.outputs], Region(block)
        )

    def _constant_attr(self, slot: int) -> Attribute:
        array = np.asarray(self.plan.constants[slot])
        typ = self.types.tensor(self.specs[slot])
        if array.size <= INLINE_LIMIT and array.dtype.name in INLINE_DTYPES:
            return dense_attr(array, typ)
        return DenseResourceAttr.from_params(self.weight_name(array), typ)


def plans_to_vkd(
    plans: Sequence[Plan],
    modules: Sequence[ModuleOp | None],
    *,
    config: Config,
    caps: Any,
    no_vulkan: str | None = None,
    weight_name: WeightName,
) -> ModuleOp:
    """The vkd module of `plans` (one `vkd.plan` per bucket, `@b0`, `@b1`, ...)
    on a device with `caps` (None: no Vulkan device, every step on the CPU,
    `no_vulkan` saying why). `modules[i]` is the compiled module `plans[i]`
    came from (its ops are cloned into CPU segments; None prints them in
    generic form). The plans are not modified."""
    precision = config.precision or "high"
    fp16 = caps is not None and precision in ("low", "normal") and caps.has_fp16_storage
    types = _Types(fp16)
    kernels = _Kernels()
    plan_ops: list[PlanOp] = []
    opset = None
    for i, (plan, module) in enumerate(zip(plans, modules, strict=True)):
        origin: dict[int, Operation] = {}
        if module is not None:
            opset = opset or module.attributes.get(OPSET_ATTR)
            ops = step_ops(module)
            if len(ops) == len(plan.steps):
                origin = {id(s): op for s, op in zip(plan.steps, ops, strict=True)}
        p, segments, moved = _partitioned(plan, config, caps, no_vulkan, origin)
        lowering = _Bucket(
            p, segments, moved, types, kernels, weight_name, caps, config.device_layout
        )
        plan_ops.append(lowering.lower(f"b{i}"))
    attrs: dict[str, Attribute] = {
        "vkd.granularity": StringAttr(GRANULARITY),
        "vkd.caps": StringAttr(caps.name if caps is not None else f"none ({no_vulkan})"),
        "vkd.precision": StringAttr(precision),
    }
    if opset is not None:
        attrs[OPSET_ATTR] = opset
    module = ModuleOp([*kernels.ops, *plan_ops], attributes=attrs)
    try:
        module.verify()
    except Exception as e:
        raise VknnError(f"vkd lowering produced invalid IR (a bug): {e}") from e
    return module


def print_module(module: ModuleOp) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


# -- the .vxm compile driver -------------------------------------------------


@dataclass
class VxmBuild:
    """What `vknn compile -o model.vxm` writes (see vknn.runtime.vxm)."""

    plans: list[Plan]
    metadata: dict[str, Any]
    precision: str
    vkd: str
    created_by: str = "vknn"
    notes: list[str] = field(default_factory=list)

    def encode(self) -> bytes:
        from vknn.runtime.vxm import encode_vxm

        return encode_vxm(
            self.plans,
            precision=self.precision,
            metadata=self.metadata,
            vkd=self.vkd,
            created_by=self.created_by,
        )

    def save(self, path: str | Path) -> int:
        data = self.encode()
        Path(path).write_bytes(data)
        return len(data)


def _info(vi: Any) -> dict[str, Any]:
    from vknn.session import _declared

    t = _declared(vi)
    return {"name": t.name, "dims": None if t.dims is None else list(t.dims), "dtype": t.dtype.name}


def build_vxm(
    model: str | Path | ModelProto,
    *,
    buckets: Sequence[dict[str, tuple[int, ...]]] = (),
    precision: str = "high",
    pipeline: str = "standard",
    dims: dict[str, int] | None = None,
    caps: Any = None,
    no_vulkan: str | None = None,
    disable_vk_ops: str = "",
    created_by: str = "vknn",
    first: tuple[dict[str, tuple[int, ...]], ModuleOp] | None = None,
) -> VxmBuild:
    """Compile `model` once per bucket (an empty list: one bucket of the
    declared shapes and `dims`) and lower the plans to vkd for `caps`.
    `first` = (shapes, module): an already compiled module for those shapes
    (the CLI's), reused instead of compiling them again."""
    from vknn.compiler import _shape_spec, compile_module, release_weights
    from vknn.frontend import import_model
    from vknn.frontend.loader import load_model_file
    from vknn.ir.to_plan import module_to_plan
    from vknn.ir.weights import sanitize_handle
    from vknn.runtime.vxm import WeightTable

    if isinstance(model, ModelProto):
        proto, base_dir, source = model, None, "<model>"
    else:
        path = Path(model)
        proto, base_dir, source = load_model_file(path), path.parent, str(path)
    inits = {t.name for t in proto.graph.initializer}
    inputs = [_info(vi) for vi in proto.graph.input if vi.name not in inits]
    names = [i["name"] for i in inputs]
    requested = [dict(b) for b in buckets] or [{}]
    for i, b in enumerate(requested):
        unknown = [k for k in b if k not in names]
        if unknown:
            raise InvalidArgument(
                f"bucket {i + 1} ({_shape_spec(b)}): unknown input(s) {', '.join(unknown)}; "
                f"the model's inputs are: {', '.join(names)}"
            )
    plans: list[Plan] = []
    modules: list[ModuleOp] = []
    owned: list[ModuleOp] = []  # imported here: their weights are released below
    keys: dict[tuple[tuple[int, ...], ...], int] = {}
    try:
        for i, shapes in enumerate(requested):
            if first is not None and first[0] == shapes:
                module = first[1]
                plan = module_to_plan(module)
            else:
                module = import_model(proto, base_dir=base_dir, name=source)
                owned.append(module)
                plan = compile_module(
                    module, pipeline=pipeline, shapes=shapes or None, dims=dict(dims or {})
                ).plan
            modules.append(module)
            key = tuple(spec.shape for spec, _ in plan.inputs)
            if key in keys:
                raise InvalidArgument(
                    f"bucket {i + 1} ({_shape_spec(shapes)}) compiles to the same input shapes "
                    f"as bucket {keys[key] + 1}: "
                    + ", ".join(f"{s.name}={'x'.join(map(str, s.shape))}" for s, _ in plan.inputs)
                )
            keys[key] = i
            plans.append(plan)
        table = WeightTable()
        for plan in plans:
            for array in plan.constants.values():
                table.add(array)
        stored = len(table.entries)

        def weight_name(array: np.ndarray) -> str:
            index = table.add(array)["id"]
            return f"w{index}" if index < stored else sanitize_handle(f"derived{index}")

        config = Config(precision=precision, disable_vk_ops=disable_vk_ops)
        vkd_module = plans_to_vkd(
            plans,
            modules,
            config=config,
            caps=caps,
            no_vulkan=no_vulkan,
            weight_name=weight_name,
        )
        vkd_text = print_module(vkd_module)
    finally:
        for m in owned:
            release_weights(m)
    g = proto.graph
    metadata = {
        "model": g.name or Path(source).stem,
        "source": source,
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "opset": next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0),
        "inputs": inputs,
        "outputs": [_info(vi) for vi in g.output],
        "buckets": [{s.name: list(s.shape) for s, _ in p.inputs} for p in plans],
        "pipeline": pipeline,
        "dims": dict(dims or {}),
        "target": caps.name if caps is not None else None,
        "vkd_granularity": GRANULARITY,
    }
    return VxmBuild(plans, metadata, precision, vkd_text, created_by)
