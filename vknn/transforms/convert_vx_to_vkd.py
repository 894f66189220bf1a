"""convert-vx-to-vkd: each `vkd.segment "vulkan"` becomes a `vkd.vulkan_segment`
of buffers and the exact dispatches the runtime will record.

One rewrite pattern per kernel family (`vknn/kernels/<family>.py`): it asks
the family's recorder, a pure function of the op and the target, for the
op's dispatches (shader variant, local size, push-constant words, group
counts, bindings with byte ranges) and writes them as `vkd.dispatch` ops,
the op's results replaced by `builtin.unrealized_conversion_cast`s of their
buffers until every op of the segment is converted. `vkd.convert` ops and
reshapes of packed tensors lower to the storage-conversion kernel.

Memory (`vkd.alloc`, unplaced: `plan-memory` gives offsets):

- every result gets its storage (the form assign-storage chose) except
  where it needs none: a reshape of a flat tensor is its input's bytes, and
  a batch-1 concat's inputs are written by their producers straight into
  their part of its result (then the concat copies nothing);
- constants become `vkd.weight`s in the form each reader needs (its
  variant's width, `vkd.const_forms` transforms); kernel tables too;
- split-K partial sums get scratch allocs used by one op alone;
- segment inputs are uploaded, into device memory (target memory `unified`
  / `rebar`) or a staging alloc and a copy (`staging`); results are
  downloaded, from device memory (`unified`) or a readback copy.

Algorithm choices are the recorders' heuristics unless the op carries
`vkd.config` (autotune results, or a user's pin): then that config, which
must be one the family lists as valid here. `vx.conv_algorithm =
"implicit_gemm"` (lower-conv) picks the GEMM kernel.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseResourceAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from vknn.dialects import vkd
from vknn.dialects.onnx import NAME_ATTR
from vknn.errors import InvalidArgument
from vknn.ir.to_plan import plain
from vknn.ir.types import element_from_numpy
from vknn.ir.weights import WEIGHTS
from vknn.kernels import KERNELS, RecordContext, TensorArg
from vknn.kernels.convert_storage import record_convert
from vknn.kernels.data_movement import concat_in_place
from vknn.kernels.records import Copy, Dispatch, KernelKey, TensorRef
from vknn.runtime.plan import NO_VALUE, Step
from vknn.runtime.target import Target
from vknn.runtime.vulkan.dtypes import is_float
from vknn.transforms import segment_steps
from vknn.transforms.assign_storage import parse, storage_of
from vknn.transforms.lower_conv import ALGORITHM_ATTR, IMPLICIT_GEMM
from vknn.transforms.target_option import module_target
from vknn.transforms.vx_graph import nodes_of

CONFIG_ATTR = "vkd.config"
"""Op attribute: the algorithm/tile configuration to record the op with."""


# -- kernels -------------------------------------------------------------------


class KernelTable:
    """One `vkd.kernel` per distinct pipeline, at the top of the module."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.names: dict[KernelKey, str] = {}
        self.ops: dict[str, vkd.KernelOp] = {}
        self.used: set[str] = set()
        for op in module.ops:
            if isinstance(op, vkd.KernelOp):
                self.ops[op.sym_name.data] = op
                self.used.add(op.sym_name.data)

    def symbol(self, key: KernelKey, writes: list[bool]) -> str:
        from vknn.kernels.shaders import generated_variant

        name = self.names.get(key)
        if name is not None:
            op = self.ops[name]
            accesses = list(op.bindings.data)
            if any(w and not a.data.writes for a, w in zip(accesses, writes, strict=True)):
                merged = [
                    vkd.Access.WRITE if w or a.data.writes else vkd.Access.READ
                    for a, w in zip(accesses, writes, strict=True)
                ]
                op.properties["bindings"] = ArrayAttr([vkd.AccessAttr(a) for a in merged])
            return name
        base, defines, sources = generated_variant(key.shader)
        stem = f"{base}_{key.variant}" + ("_gen" if sources else "")
        n = 0
        name = f"{stem}_{n}"
        while name in self.used:
            n += 1
            name = f"{stem}_{n}"
        op = vkd.KernelOp(
            name,
            base,
            vkd.Precision(key.variant),
            local_size=key.local_size,
            bindings=[vkd.Access.WRITE if w else vkd.Access.READ for w in writes],
            push_size=key.push_size,
            spec=[(i, int(v) if isinstance(v, bool) else v) for i, v in key.spec],
            defines=defines,
            sources=sources,
            fastmath=key.fastmath,
        )
        first = self.module.body.block.first_op
        if first is None:
            self.module.body.block.add_op(op)
        else:
            last_kernel = None
            for o in self.module.ops:
                if isinstance(o, vkd.KernelOp):
                    last_kernel = o
            if last_kernel is None:
                self.module.body.block.insert_op_before(op, first)
            else:
                self.module.body.block.insert_op_after(op, last_kernel)
        self.names[key] = name
        self.ops[name] = op
        self.used.add(name)
        return name


# -- one segment ---------------------------------------------------------------


def _itemsize(form: str, dtype: str) -> int:
    if not is_float(dtype):
        return 8 if dtype == "int64" else 4
    return 4 if parse(form).fp32 else 2


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def buffer_type(shape: tuple[int, ...], dtype: str, form: str) -> vkd.TensorBufferType:
    elem = element_from_numpy(np.dtype(dtype))
    if is_float(dtype):
        f = parse(form)
        storage = element_from_numpy(np.dtype(np.float32 if f.fp32 else np.float16))
        layout = vkd.Layout.NC4HW4 if f.packed else vkd.Layout.FLAT
    else:
        storage, layout = (i64 if dtype == "int64" else i32), vkd.Layout.FLAT
    return vkd.TensorBufferType(shape, elem, layout, storage)


@dataclass
class SegmentLowering:
    """The state of converting one segment: slots -> buffers, as the op
    patterns record their ops in order."""

    seg: vkd.SegmentOp
    target: Target
    kernels: KernelTable
    fastmath: bool
    tuning: dict[str, dict[str, Any]] | None = None
    view: segment_steps.StepView = field(init=False)
    forms: dict[int, str] = field(default_factory=dict)
    parent: dict[int, tuple[int, int]] = field(default_factory=dict)
    roots: dict[int, SSAValue] = field(default_factory=dict)
    weights: dict[tuple[int, str, str], SSAValue] = field(default_factory=dict)
    steps_done: int = 0
    step_ids: dict[tuple[int, int], int] = field(default_factory=dict)
    decl_anchor: Operation | None = None
    first_command: Operation | None = None

    def __post_init__(self) -> None:
        self.view = segment_steps.build(self.seg.body.block)
        for s, value in enumerate(self.view.values):
            self.forms[s] = storage_of(value) if is_float(self.view.specs[s].dtype) else ""
        self._place()

    # -- storage ------------------------------------------------------------

    def spec(self, s: int):  # type: ignore[no-untyped-def]
        return self.view.specs[s]

    def packed(self, s: int) -> bool:
        f = self.forms.get(s, "")
        return bool(f) and parse(f).packed

    def nbytes(self, s: int) -> int:
        spec = self.spec(s)
        t = buffer_type(spec.shape, spec.dtype, self.forms[s] or "f32:flat")
        return max(t.byte_size(), 4)

    def _layout_free(self, s: int) -> bool:
        shape = self.spec(s).shape
        return len(shape) == 4 and shape[2] * shape[3] == 1 and shape[1] % 4 == 0

    def root(self, s: int) -> tuple[int, int]:
        off = 0
        while s in self.parent:
            s, o = self.parent[s]
            off += o
        return s, off

    def _place(self) -> None:
        """Which results need no storage of their own (module docstring)."""
        view = self.view
        producer = {s: i for i, st in enumerate(view.steps) for s in st.outputs}
        align = max(vkd.MIN_ALIGNMENT, self.target.min_storage_buffer_offset_alignment)
        for st in view.steps:
            kernel = KERNELS.get(st.op)
            if kernel is not None and kernel.aliases:
                src = st.inputs[0]
                if not self.packed(src) or self._layout_free(src):
                    self.parent[st.outputs[0]] = (src, 0)
                continue
            if st.op != "vx.concat":
                continue
            ins = [s for s in st.inputs if s != NO_VALUE]
            offs = concat_in_place(st, [self.spec(s).shape for s in ins])
            out = st.outputs[0]
            if offs is None:
                continue
            esize = _itemsize(self.forms[out], self.spec(out).dtype)
            seen: set[int] = set()
            for s, off in zip(ins, offs, strict=True):
                if (
                    s in seen
                    or s in view.constants
                    or s in view.inputs
                    or s not in producer
                    or s in self.parent
                    or self.root(out)[0] == s
                    or self.forms[s].split(":")[0] != self.forms[out].split(":")[0]
                    or (self.packed(s) != self.packed(out) and not self._layout_free(s))
                    or (off * esize) % align
                ):
                    continue
                seen.add(s)
                self.parent[s] = (out, off * esize)

    # -- declarations ---------------------------------------------------------

    def _declare(self, op: Operation) -> None:
        block = self.seg.body.block
        if self.decl_anchor is None:
            first = block.first_op
            assert first is not None
            block.insert_op_before(op, first)
        else:
            block.insert_op_after(op, self.decl_anchor)
        self.decl_anchor = op

    def _alloc(self, memory: vkd.Memory, nbytes: int, t: vkd.TensorBufferType) -> SSAValue:
        op = vkd.AllocOp(memory, max(nbytes, t.byte_size(), 4), t)
        self._declare(op)
        return op.result

    def ref(self, s: int) -> TensorRef:
        """Where slot `s` lives: its root allocation and byte offset (a
        reshape of a constant reads the constant's weight)."""
        r, off = self.root(s)
        if r in self.view.constants:
            form = self.forms.get(s) or "f32:flat"
            w = self.weight(r, parse(form).fp32)
            return TensorRef(w.buffer, off, self.nbytes(s))
        if r not in self.roots:
            spec = self.spec(r)
            t = buffer_type(spec.shape, spec.dtype, self.forms[r] or "f32:flat")
            self.roots[r] = self._alloc(vkd.Memory.DEVICE, self.nbytes(r), t)
        return TensorRef(self.roots[r], off, self.nbytes(s))

    def weight(self, s: int, width_fp32: bool, transform: str = "") -> TensorRef:
        spec = self.spec(s)
        form = ("f32" if width_fp32 else "f16") + ":flat" if is_float(spec.dtype) else ""
        key = (s, form, transform)
        if key not in self.weights:
            cop = self.view.constant_ops[s]
            value = cop.properties.get("value") or cop.attributes.get("value")
            if not isinstance(value, DenseResourceAttr):
                array = self.view.constants[s]
                typ = TensorType(element_from_numpy(array.dtype), array.shape)
                value = DenseResourceAttr.from_params(WEIGHTS.add("cst", np.array(array)), typ)
            t = buffer_type(spec.shape, spec.dtype, form or "f32:flat")
            op = vkd.WeightOp(value, t, transform or None)
            self._declare(op)
            self.weights[key] = op.result
        v = self.weights[key]
        return TensorRef(v, 0, max(4, v.type.byte_size()))  # type: ignore[attr-defined]

    def table(self, array: np.ndarray) -> TensorRef:
        array = np.ascontiguousarray(array)
        if array.dtype == np.uint32:
            array = array.view(np.int32)
        typ = TensorType(element_from_numpy(array.dtype), array.shape)
        value = DenseResourceAttr.from_params(WEIGHTS.add("table", array), typ)
        t = buffer_type(tuple(array.shape), array.dtype.name, "f32:flat")
        op = vkd.WeightOp(value, t)
        self._declare(op)
        return TensorRef(op.result, 0, max(4, t.byte_size()))

    def scratch(self, nbytes: int) -> TensorRef:
        n = max(1, -(-nbytes // 4))
        t = buffer_type((n,), "float32", "f32:flat")
        return TensorRef(self._alloc(vkd.Memory.DEVICE, 4 * n, t), 0, 4 * n)

    # -- commands --------------------------------------------------------------

    def emit(
        self, records: list[Dispatch | Copy], before: Operation, nodes: str, kind: str
    ) -> None:
        block = self.seg.body.block
        for rec in records:
            if isinstance(rec, Copy):
                op: Operation = vkd.CopyOp(
                    rec.src, rec.dst, rec.nbytes, rec.src_offset, rec.dst_offset
                )
            else:
                name = self.kernels.symbol(rec.kernel, [b.write for b in rec.bindings])
                phase = getattr(rec.op_index, "phase", 0)
                sid = self.step_ids.setdefault((int(rec.op_index), phase), len(self.step_ids))
                push = list(struct.unpack(f"<{len(rec.push) // 4}I", rec.push))
                ranges = [x for b in rec.bindings for x in (b.offset, b.nbytes)]
                op = vkd.DispatchOp(
                    name,
                    [b.buffer for b in rec.bindings],  # type: ignore[misc]
                    ranges,
                    push,
                    rec.groups,
                    sid,
                    rec.label,
                    {"onnx.name": StringAttr(nodes), "vkd.kind": StringAttr(kind)},
                )
            block.insert_op_before(op, before)
            if self.first_command is None:
                self.first_command = op

    def context(self, step: Step, index: int, variant: str, op: Operation) -> RecordContext:
        config = None
        a = op.attributes.get(CONFIG_ATTR)
        if isinstance(a, DictionaryAttr):
            config = {k: plain(v) for k, v in a.data.items()}
        elif step.op == "vx.conv" and step.attrs.get(ALGORITHM_ATTR) == IMPLICIT_GEMM:
            config = None  # the heuristic's GEMM unless the tuning table says otherwise
        return RecordContext(
            self.target,
            variant,
            op_index=index,
            table=self.table,
            scratch=self.scratch,
            fastmath=self.fastmath,
            tuning=self.tuning,
            config=config,
        )

    def lower(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Record `op` (a step of this segment) and replace its results by
        casts of their buffers."""
        index = self.view.index_of(op)
        step = self.view.steps[index]
        a = op.attributes.get("vkd.variant")
        variant = a.data if isinstance(a, StringAttr) else "fp32"
        ctx = self.context(step, index, variant, op)
        nodes = _nodes(op, step)
        if isinstance(op, vkd.ConvertOp):
            src, dst = step.inputs[0], step.outputs[0]
            nodes = ""  # a conversion computes no ONNX node
            records = record_convert(
                ctx, self.ref(src), self.ref(dst), self.spec(dst).shape,
                parse(op.from_form.data), parse(op.to_form.data), index, self.spec(src).name,
            )  # fmt: skip
        elif KERNELS[step.op].aliases:
            src, out = step.inputs[0], step.outputs[0]
            records = []
            if out not in self.parent:  # a packed input: unpack it
                have = parse(self.forms[src])
                want = parse(self.forms[out])
                records = record_convert(
                    ctx, self.ref(src), self.ref(out), self.spec(src).shape, have, want, index,
                    self.spec(out).name,
                )  # fmt: skip
        else:
            records = KERNELS[step.op].record(step, ctx, *self._args(step, op, variant))
        self.emit(records, op, nodes, "Convert" if isinstance(op, vkd.ConvertOp) else step.kind)
        self._replace_results(op, step, rewriter)

    def _args(
        self, step: Step, op: Operation, variant: str
    ) -> tuple[list[TensorArg], list[TensorArg]]:
        packed_in: set[int] = set()
        packed_out: set[int] = set()
        p = step.attrs.get("vkd.packed")
        if p:
            packed_in, packed_out = set(p[0]), set(p[1])
        forms = step.attrs.get("vkd.const_forms") or {}
        ins: list[TensorArg] = []
        present = [s for s in step.inputs if s != NO_VALUE]
        for pos, s in enumerate(present):
            spec = self.spec(s)
            if s in self.view.constants:
                ref = self.weight(s, variant == "fp32", forms.get(str(pos), ""))
            else:
                ref = self.ref(s)
            ins.append(TensorArg(ref, tuple(spec.shape), spec.dtype, pos in packed_in))
        outs = [
            TensorArg(self.ref(s), tuple(self.spec(s).shape), self.spec(s).dtype, pos in packed_out)
            for pos, s in enumerate(step.outputs)
        ]
        return ins, outs

    def _replace_results(self, op: Operation, step: Step, rewriter: PatternRewriter) -> None:
        casts = []
        slots = step.outputs
        if segment_steps.out_view_attr(op) is not None:
            slots = [step.outputs[0]]
        for r, s in zip(op.results, slots, strict=True):
            ref = self.ref(s)
            cast = UnrealizedConversionCastOp.get([ref.buffer], [r.type])  # type: ignore[list-item]
            cast.attributes["vkd.slot"] = StringAttr(str(s))
            casts.append(cast)
        rewriter.replace(op, casts, [c.results[0] for c in casts])


def _nodes(op: Operation, step: Step) -> str:
    from vknn.kernels.epilogues import merged_nodes

    names = merged_nodes(step)
    for n in step.attrs.get("vx.fused_names") or ():
        if n not in names:
            names.append(n)
    a = op.attributes.get("vkd.nodes")
    if isinstance(a, StringAttr):
        for n in a.data.split(","):
            if n and n not in names:
                names.append(n)
    return ",".join(names)


# -- patterns ------------------------------------------------------------------


def _family_of(op_name: str) -> str:
    spec = KERNELS.get(op_name)
    return spec.record.__module__.rsplit(".", 1)[-1] if spec is not None else ""


@dataclass
class RecordFamily(RewritePattern):
    """Records the ops of one kernel family (e.g. `conv`: conv, conv_transpose,
    batchnorm), epilogue groups whose host is one of them included."""

    family: str
    lowering: dict[vkd.SegmentOp, SegmentLowering]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        seg = op.parent_op()
        if not isinstance(seg, vkd.SegmentOp) or seg not in self.lowering:
            return
        name = op.host.name if isinstance(op, vkd.WithEpilogueOp) else op.name
        if isinstance(op, vkd.ConvertOp):
            family = "convert_storage"
        elif name in segment_steps.CONSTANT_OPS or isinstance(op, vkd.ViewOp | vkd.AliasOp):
            return
        else:
            family = _family_of(name)
        if family != self.family:
            return
        self.lowering[seg].lower(op, rewriter)


def _finish(low: SegmentLowering) -> vkd.VulkanSegmentOp:
    """Uploads, downloads and the segment op itself (after every op is recorded)."""
    seg, target = low.seg, low.target
    block = seg.body.block
    view = low.view
    first_cmd = low.first_command
    # Uploads, before every command.
    for s, arg in zip(view.inputs, block.args, strict=True):
        if low.root(s)[0] not in low.roots:
            continue  # nothing on the device reads it
        dev = low.ref(s)
        dev_type = dev.buffer.type  # type: ignore[attr-defined]
        anchor = first_cmd or block.last_op
        assert anchor is not None
        if target.memory == "staging":
            stage = low._alloc(vkd.Memory.STAGING, dev.nbytes, dev_type)
            block.insert_op_before(vkd.UploadOp(arg, stage), anchor)
            copy = vkd.CopyOp(stage, dev.buffer, dev.nbytes, 0, dev.offset)  # type: ignore[arg-type]
            block.insert_op_before(copy, anchor)
        else:
            block.insert_op_before(vkd.UploadOp(arg, dev.buffer), anchor)  # type: ignore[arg-type]
    # Downloads, after every command.
    yield_op = block.last_op
    assert isinstance(yield_op, vkd.YieldOp)
    sources: list[SSAValue] = []
    for s in view.outputs:
        ref = low.ref(s)
        spec = view.specs[s]
        t = buffer_type(spec.shape, spec.dtype, low.forms[s] or "f32:flat")
        if target.memory in ("rebar", "staging"):
            rb = low._alloc(vkd.Memory.READBACK, ref.nbytes, t)
            copy = vkd.CopyOp(ref.buffer, rb, ref.nbytes, ref.offset, 0)  # type: ignore[arg-type]
            block.insert_op_before(copy, yield_op)
            sources.append(rb)
        elif ref.offset or ref.buffer.type != t:  # type: ignore[attr-defined]
            sub = vkd.SubviewOp(ref.buffer, ref.offset, t)  # type: ignore[arg-type]
            low._declare(sub)
            sources.append(sub.result)
        else:
            sources.append(ref.buffer)  # type: ignore[arg-type]
    results: list[SSAValue] = []
    for v, src in zip(yield_op.values, sources, strict=True):
        d = vkd.DownloadOp(src, v.type)
        block.insert_op_before(d, yield_op)
        results.append(d.result)
    yield_op.operands = results
    # Views, aliases, constants and the casts standing for converted values
    # are dead now (latest first: a view reads a cast).
    for op in reversed(list(block.ops)):
        dead = isinstance(op, UnrealizedConversionCastOp | vkd.ViewOp | vkd.AliasOp) or (
            op.name in segment_steps.CONSTANT_OPS
        )
        if dead and not any(r.uses.get_length() for r in op.results):
            block.erase_op(op)
    leftover = [
        op.name
        for op in block.ops
        if not isinstance(op, (*vkd.DECLARATIONS, *vkd.COMMANDS, vkd.YieldOp))
    ]
    if leftover:
        raise InvalidArgument(f"convert-vx-to-vkd: ops left unconverted: {sorted(set(leftover))}")
    body = Region(Block(arg_types=[a.type for a in block.args]))
    new_block = body.block
    for old, new in zip(block.args, new_block.args, strict=True):
        old.replace_all_uses_with(new)
    for op in list(block.ops):
        op.detach()
        new_block.add_op(op)
    out = vkd.VulkanSegmentOp(list(seg.inputs), [r.type for r in seg.outputs], body)
    return out


@dataclass(frozen=True)
class ConvertVxToVkdPass(ModulePass):
    """Lower Vulkan segments to buffers and the dispatches that run them."""

    name = "convert-vx-to-vkd"

    target: str = ""
    fastmath: str = "auto"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from vknn.kernels.spirv import fastmath_enabled

        target = module_target(op, self.target)
        fast = fastmath_enabled(self.fastmath, target)
        kernels = KernelTable(op)
        segments = [
            s for s in op.walk() if isinstance(s, vkd.SegmentOp) and s.backend.data == "vulkan"
        ]
        lowering = {s: SegmentLowering(s, target, kernels, fast) for s in segments}
        # Every node a segment computes, before ops that record nothing
        # (reshapes, views) disappear: the report names them as on Vulkan.
        members = {s: _segment_nodes(s) for s in segments}
        families = sorted({_family_of(n) for n in KERNELS} | {"convert_storage"})
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [RecordFamily(f, lowering) for f in families], dce_enabled=False
            ),
            apply_recursively=False,
        )
        for seg in segments:
            walker.rewrite_region(seg.body)
            new = _finish(lowering[seg])
            recorded = {
                n
                for d in new.body.block.ops
                if isinstance(d, vkd.DispatchOp)
                and isinstance(names := d.attributes.get(NAME_ATTR), StringAttr)
                for n in names.data.split(",")
            }
            silent = [n for n in members[seg] if n not in recorded]
            if silent:
                new.attributes["vkd.silent_nodes"] = ArrayAttr([StringAttr(n) for n in silent])
            seg.parent_block().insert_op_before(new, seg)  # type: ignore[union-attr]
            for old, res in zip(seg.outputs, new.outputs, strict=True):
                old.replace_all_uses_with(res)
            seg.detach()
            seg.erase()


def _segment_nodes(seg: vkd.SegmentOp) -> list[str]:
    """The nodes `partition` cut into the segment, then those of its ops now."""
    m = seg.attributes.get("vkd.members")
    names = [a.data for a in m.data] if isinstance(m, ArrayAttr) else []  # type: ignore[attr-defined]
    for op in seg.body.block.ops:
        if op.name in segment_steps.CONSTANT_OPS:
            continue
        if NAME_ATTR in op.attributes or "vkd.nodes" in op.attributes:
            names += [n for n in nodes_of(op) if n not in names]
    return names


def _unused(_: Attribute) -> None:
    """(keeps `Attribute` imported for type comments)"""
