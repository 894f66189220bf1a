"""assign-storage: how each tensor of a Vulkan segment is stored on the device,
which shader variant each op runs, and explicit `vkd.convert` ops wherever
an op reads or writes a tensor in another form than it is stored in.

A float tensor's *form* is its words (fp32 or fp16) and layout (flat or
NC4HW4: [N, C/4, H, W, 4]); integers and bools are 32-bit words, flat. Per
segment (the rules of ADR 0007 and `vknn/kernels/layouts.py`,
`precision_rules.py`):

- layout: an op runs packed where assign-layouts labelled it nc4hw4 and its
  kernel can (`KernelSpec.nc4hw4`); its packed results are stored packed,
  except the segment's results; segment inputs and constants are flat
  (`device-layout=flat`: everything flat);
- words: `precision=high` fp32; `low` fp16 (where the target has 16-bit
  storage); `normal` fp16 except what the named rules keep in fp32, every
  op touching such a tensor running its fp32 variant; with fp16 storage, a
  segment input or result of at least `GPU_CONVERT_MIN_ELEMENTS` elements
  stays fp32 and is converted on the device (numpy's fp16 conversion costs
  ~1 ms per 224x224 image, a dispatch microseconds);
- conversions: an op reading a tensor in another form gets a `vkd.convert`
  before it (one per tensor and form, shared by later readers of that
  form); an op writing another form than its result is stored in is
  followed by one. Constants are not converted here: each reader's copy
  (its variant's width, `vkd.const_forms` transforms such as OHWI conv
  weights) is packed when the weights are.

Recorded as attributes: `vkd.variant` ("fp32"/"fp16") and, when it runs
packed, `vkd.packed` = [[input positions], [output positions]] on each op;
`vkd.storage` (one form per result) on each op and `vkd.arg_storage` on the
segment; `vkd.fp32_rules` on results a `normal` rule keeps in fp32.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from vknn.dialects import vkd
from vknn.errors import InvalidArgument
from vknn.kernels.convert_storage import Form
from vknn.kernels.layouts import plan_layouts
from vknn.kernels.precision_rules import DEFAULT_RULES, alias_roots, plan_mixed
from vknn.runtime.plan import NO_VALUE
from vknn.runtime.target import Target
from vknn.runtime.vulkan.dtypes import is_float
from vknn.transforms import segment_steps
from vknn.transforms.target_option import module_target

GPU_CONVERT_MIN_ELEMENTS = 4096
"""fp16 storage: float segment inputs/results of at least this many elements
stay fp32 on the device and are converted by a dispatch."""
PRECISIONS = ("high", "normal", "low")
DEVICE_LAYOUTS = ("nc4hw4", "flat")


def form_name(form: Form) -> str:
    return ("f32" if form.fp32 else "f16") + (":nc4hw4" if form.packed else ":flat")


def parse(form: str) -> Form:
    width, layout = vkd.parse_form(form)
    return Form(width == "f32", layout == "nc4hw4")


def _layout_free(shape: tuple[int, ...]) -> bool:
    """NC4HW4 and flat storage are the same bytes: [N, C, 1, 1], C % 4 == 0."""
    return len(shape) == 4 and shape[2] * shape[3] == 1 and shape[1] % 4 == 0


def _same_bytes(shape: tuple[int, ...], a: Form, b: Form) -> bool:
    return a == b or (a.fp32 == b.fp32 and _layout_free(shape))


def storage_of(value: SSAValue) -> str:
    """The form `value` is stored in ("" for non-float tensors), as recorded."""
    owner = value.owner
    if isinstance(owner, vkd.AliasOp | vkd.ViewOp):
        return storage_of(owner.source)
    if isinstance(owner, vkd.ConvertOp):
        return owner.to_form.data
    if isinstance(owner, Operation):
        a = owner.attributes.get(vkd.STORAGE_ATTR)
        if isinstance(a, ArrayAttr):
            s = a.data[value.index]  # type: ignore[attr-defined]
            return s.data if isinstance(s, StringAttr) else ""
        return ""
    seg = owner.parent_op()  # a block argument
    a = seg.attributes.get(vkd.ARG_STORAGE_ATTR) if seg is not None else None
    if isinstance(a, ArrayAttr):
        s = a.data[value.index]  # type: ignore[attr-defined]
        return s.data if isinstance(s, StringAttr) else ""
    return ""


def _strings(values: list[str]) -> ArrayAttr:
    return ArrayAttr([StringAttr(v) for v in values])


def assign_segment(seg: vkd.SegmentOp, target: Target, precision: str, device_layout: str) -> None:
    from vknn.kernels import KERNELS

    block = seg.body.block
    view = segment_steps.build(block)
    steps, specs, constants = view.steps, view.specs, view.constants
    outputs = set(view.outputs)
    fp16 = precision in ("low", "normal") and target.has_fp16_storage
    layouts = plan_layouts(
        steps,
        specs,
        set(constants),
        outputs,
        device_layout == "nc4hw4",
        target.max_storage_buffer_range,
    )
    variants = ["fp16" if fp16 else "fp32"] * len(steps)
    fp32_slots: set[int] = set()
    reasons: dict[int, tuple[str, ...]] = {}
    if precision == "normal" and fp16:
        mixed = plan_mixed(steps, specs, set(constants), DEFAULT_RULES)
        variants = mixed.variants
        reasons = mixed.reasons
        fp32_slots = {s for s, d in mixed.storage.items() if d == "float32"}
    if fp16:  # large segment inputs and results stay fp32 (module docstring)
        roots = alias_roots(steps)
        group: dict[int, list[int]] = defaultdict(list)
        for s in specs:
            group[roots.get(s, s)].append(s)
        for s in [*view.inputs, *view.outputs]:
            r = roots.get(s, s)
            shape = specs[s].shape
            n = 1
            for d in shape:
                n *= d
            if r not in constants and is_float(specs[s].dtype) and n >= GPU_CONVERT_MIN_ELEMENTS:
                fp32_slots.update(group[r])

    def stored(s: int) -> Form:
        return Form(not fp16 or s in fp32_slots, s in layouts.packed_slots)

    # Segment inputs: flat, in their width.
    seg.attributes[vkd.ARG_STORAGE_ATTR] = _strings(
        [form_name(stored(s)) if is_float(specs[s].dtype) else "" for s in view.inputs]
    )
    current: dict[int, SSAValue] = {s: view.values[s] for s in view.inputs}
    in_form: dict[tuple[int, Form], SSAValue] = {}
    slot_of: dict[SSAValue, int] = dict(view.slot)

    for i, step in enumerate(steps):
        op = view.op_of(step)
        kernel = KERNELS[step.op]
        if kernel.aliases:
            # A reshape keeps its input's words; a packed input is unpacked
            # into its flat result (convert-vx-to-vkd records that).
            out = step.outputs[0]
            op.attributes[vkd.STORAGE_ATTR] = _strings(
                [_form_or_empty(specs[out].dtype, stored(out))]
            )
            current[out] = op.results[0]
            continue
        width_fp32 = variants[i] == "fp32"
        op.attributes["vkd.variant"] = StringAttr(variants[i])
        io = layouts.packed_steps[i]
        if io is not None:
            op.attributes["vkd.packed"] = ArrayAttr(
                [
                    DenseArrayBase.from_list(i64, sorted(io[0])),
                    DenseArrayBase.from_list(i64, sorted(io[1])),
                ]
            )
        forms = {p: name for (j, p), name in layouts.const_forms.items() if j == i}
        if forms:
            op.attributes["vkd.const_forms"] = DictionaryAttr(
                {str(p): StringAttr(n) for p, n in forms.items()}
            )
        # Inputs: in the step's width and layout, through a conversion if stored otherwise.
        reads: dict[int, SSAValue] = {}
        present = [s for s in step.inputs if s != NO_VALUE]
        for pos, s in enumerate(present):
            if s in constants or s in reads or not is_float(specs[s].dtype):
                continue
            want = Form(width_fp32, layouts.wants_packed(i, pos))
            have = stored(s)
            if _same_bytes(specs[s].shape, have, want):
                continue
            value = in_form.get((s, want))
            if value is None:
                conv = vkd.ConvertOp(current[s], form_name(have), form_name(want))
                block.insert_op_before(conv, _outermost_reader(op, block))
                value = in_form[s, want] = conv.result
                slot_of[value] = s
            reads[s] = value
        _rewire(op, slot_of, reads)
        # Results: written in the step's width and layout, converted if stored otherwise.
        result_forms: list[str] = []
        for pos, s in enumerate(step.outputs):
            r = view.values[s]
            if not is_float(specs[s].dtype):
                result_forms.append("")
                current[s] = r
                continue
            have = Form(width_fp32, layouts.writes_packed(i, pos))
            want = stored(s)
            if _same_bytes(specs[s].shape, have, want):
                result_forms.append(form_name(want))
                current[s] = r
                continue
            result_forms.append(form_name(have))
            conv = vkd.ConvertOp(r, form_name(have), form_name(want))
            anchor = r.owner if isinstance(r.owner, Operation) else op
            block.insert_op_after(conv, anchor)
            r.replace_uses_with_if(conv.result, lambda use, c=conv: use.operation is not c)
            in_form[s, have] = r
            current[s] = conv.result
            slot_of[conv.result] = s
        if len(result_forms) != len(op.results):
            result_forms = result_forms[:1] * len(op.results)  # an out-view writes one result
        op.attributes[vkd.STORAGE_ATTR] = _strings(result_forms)
        kept = [("+".join(reasons[s]) if s in reasons else "") for s in step.outputs]
        if any(kept):
            op.attributes["vkd.fp32_rules"] = _strings(kept)


def _form_or_empty(dtype: str, form: Form) -> str:
    return form_name(form) if is_float(dtype) else ""


def _outermost_reader(op: Operation, block: object) -> Operation:
    """Where a conversion for `op`'s operand goes: before `op`, or before the
    `vkd.view` ops fold-views put in front of it."""
    first = op
    prev = op.prev_op
    while isinstance(prev, vkd.ViewOp) and any(u.operation is op for u in prev.result.uses):
        first = prev
        prev = prev.prev_op
    return first


def _rewire(op: Operation, slot_of: dict[SSAValue, int], reads: dict[int, SSAValue]) -> None:
    """Point `op`'s operands (directly or through their `vkd.view`) at the
    value each slot is read from in the form the op wants (`reads`)."""
    for i, v in enumerate(op.operands):
        target = v
        owner = v.owner
        through_view = isinstance(owner, vkd.ViewOp)
        if through_view:
            target = owner.source  # type: ignore[union-attr]
        s = slot_of.get(target)
        if s is None:
            continue
        new = reads.get(s)
        if new is None:
            continue
        if through_view:
            owner.operands[0] = new  # type: ignore[union-attr]
        else:
            op.operands[i] = new


@dataclass(frozen=True)
class AssignStoragePass(ModulePass):
    """Choose storage forms and shader variants; make conversions explicit."""

    name = "assign-storage"

    target: str = ""
    precision: str = "high"
    device_layout: str = "nc4hw4"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.precision not in PRECISIONS:
            raise InvalidArgument(
                f"assign-storage: precision {self.precision!r}: one of {PRECISIONS}"
            )
        if self.device_layout not in DEVICE_LAYOUTS:
            raise InvalidArgument(
                f"assign-storage: device-layout {self.device_layout!r}: one of {DEVICE_LAYOUTS}"
            )
        target = module_target(op, self.target)
        if "vkd.precision" not in op.attributes:
            op.attributes["vkd.precision"] = StringAttr(self.precision)
        for seg in list(op.walk()):
            if (
                isinstance(seg, vkd.SegmentOp)
                and seg.backend.data == "vulkan"
                and vkd.ARG_STORAGE_ATTR not in seg.attributes  # already assigned
            ):
                assign_segment(seg, target, self.precision, self.device_layout)
