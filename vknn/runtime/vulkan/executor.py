"""`VulkanExecutor`: runs a list of plan steps (a Vulkan segment) on one device.

Built once per segment: gate every step, plan the arena (inputs, outputs and
intermediates share one buffer at planner offsets), upload constants to their
own buffer, build pipelines, and record one command buffer. Each `run(feeds)`
then writes the inputs, submits that command buffer, waits, and reads the
outputs: no re-recording, no per-op host round trips.

Boundary data is host numpy in the model's dtype. Storage is dtype-aware
(`vulkan/dtypes.py`): float tensors are fp32, or fp16 with `precision="low"`
(fp32 arithmetic in the shaders; finite values saturate at +-65504, never
inf). With fp16 storage, float inputs and outputs of GPU_CONVERT_MIN_ELEMENTS
or more stay fp32 in device memory and a dispatch converts them next to the
steps touching them (numpy's fp16 conversion is ~1 ms per image); smaller
ones are converted by the host. Integer and bool tensors are int32 words (int64 narrowed:
values must fit, checked at the boundary). On devices without device-local
+ host-visible memory (or with `staging=True`) the arena is device-local and
recorded copies move inputs and outputs through a host-visible staging
buffer.

NC4HW4 (`layouts.py`, `device_layout="nc4hw4"`): steps the layout plan runs
packed read and write their rank-4 float tensors as [N, C/4, H, W, 4], and
those tensors are stored so; every other float tensor is flat. Where a step
reads or writes a tensor in another form (width x layout) than it is stored
in, a conversion is recorded (below); packed convs read OHWI weight copies
(`layouts.CONST_TRANSFORMS`), uploaded instead of the model-layout copy when
nothing else reads it.

Aliases: a step whose kernel spec `aliases` (reshape, convert_layout) gets
its input's memory for its output and records nothing, while that input is
flat (of a packed one it records an unpacking conversion instead). A
batch-1 channel concat (every dim before the axis 1) has its inputs
*placed*: their producers write straight into the concat's output (same
form, whole channel blocks when packed), which then copies nothing. Both are one union-find of
slots onto (root slot, byte offset): the planner sees only roots, each live
from its first member's first use to its last member's last use.

Conversions: one dispatch (`kernels/convert_storage.py`) per tensor and
wanted form, into an arena scratch that every later reader of that form
shares; a step writing another form than its output's writes a scratch
converted after it.

Mixed storage (`precision="normal"` on a device with 16-bit storage): each
float slot is fp16 or fp32 and each step runs one shader variant, as
`precision_rules.plan_mixed` decides (a placed concat input keeps its
output's storage). Where a step's variant differs from a tensor it reads,
a conversion dispatch (`kernels/convert_storage.py`) copies the tensor into
an arena scratch of the step's width before it; where it differs from a
tensor it writes, the step writes a scratch that is converted after it.
Scratches are live from the conversion to the step (or back), on a time
axis of three ticks per step. A constant has a copy per width its readers
use. One conversion per tensor and width serves all its later readers.
`high` and `low` plan and record as uniform storage, except the boundary
conversions above (`low`).

This module must not import xDSL or the CPU backend, and must not gate by
anything but `kernels.gate`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vknn.errors import InvalidArgument, Unsupported
from vknn.kernels import KERNELS, RecordContext, TensorArg, gate
from vknn.kernels.conv import OpPhase
from vknn.kernels.convert_storage import Form, record_convert
from vknn.kernels.data_movement import concat_in_place
from vknn.kernels.layouts import (
    CONST_TRANSFORMS,
    DEVICE_LAYOUTS,
    PACKED,
    packed_numel,
    plan_layouts,
)
from vknn.kernels.precision_rules import DEFAULT_RULES, alias_roots, plan_mixed
from vknn.kernels.views import fold_views
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.autotune import AutotuneReport, autotune_steps, check_mode
from vknn.runtime.vulkan.caps import DeviceCaps
from vknn.runtime.vulkan.commands import CommandProgram, Copy, Dispatch, run_once
from vknn.runtime.vulkan.device import Device
from vknn.runtime.vulkan.dtypes import from_device, is_float, storage_dtype, to_device
from vknn.runtime.vulkan.memory import (
    STORAGE,
    TRANSFER_DST,
    TRANSFER_SRC,
    Buffer,
    TensorRef,
    align_up,
    plan_arena,
)
from vknn.runtime.vulkan.pipeline import Pipelines

FP16_MAX = 65504.0
GPU_CONVERT_MIN_ELEMENTS = 4096
"""fp16 storage: float segment inputs/outputs of at least this many elements
are converted on the device (`_keep_boundary_fp32`), smaller ones on the host."""
FP32 = np.dtype(np.float32)
FP16 = np.dtype(np.float16)
# OpPhase of storage conversions before / after a step's own dispatches (a
# split-K sum is phase 1): a distinct phase puts a barrier between them.
_CONVERT_IN_PHASE = -1
_CONVERT_OUT_PHASE = 1 << 16


@dataclass
class ExecutorStats:
    arena_bytes: int
    naive_bytes: int
    """The sum of all arena tensors' sizes (what no planner would need)."""
    pipelines: int
    dispatches: int
    barriers: int
    record_seconds: float
    aliased: int = 0
    """Slots that share another slot's memory (reshapes, placed concat inputs)."""
    conversions: int = 0
    """Conversion dispatches per run between storage forms (fp16/fp32 for
    "normal" and large fp16 segment inputs/outputs, flat/NC4HW4)."""
    packed: int = 0
    """Slots stored NC4HW4."""


class PrepackStore(Protocol):
    """Where device-format constants are kept between sessions (a model cache)."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, data: bytes) -> None: ...


def prepack_key(spec: TensorSpec, arr: np.ndarray, st: np.dtype) -> str:
    """Identifies a constant's device form within one plan segment (the store
    is per bucket and segment): its slot name, model dtype, shape, storage, and
    its first/last bytes as a cheap guard against a reordered plan."""
    raw = arr.reshape(-1).view(np.uint8) if arr.flags.c_contiguous else arr.tobytes()
    sample = bytes(raw[:32]) + bytes(raw[-32:])
    return f"{spec.name}:{arr.dtype}:{'x'.join(map(str, arr.shape))}:{st}:{sample.hex()}"


class VulkanExecutor:
    """Runs `steps` (all accepted by `kernels.gate`) on `device`.

    - `input_specs`: slot -> spec of every slot the steps read that no step
      produces and that is not in `constants`.
    - `outputs`: the slots `run` returns.
    - `constants`: slot -> array, uploaded once.
    - `precision`: "high" (fp32 storage) or "low"/"normal" (fp16 storage when
      the device has 16-bit storage; fp32 otherwise). "normal" keeps the
      float tensors that `fp32_rules` (default `precision_rules.DEFAULT_RULES`)
      select in fp32 (the module docstring's "Mixed storage").
    - `caps`: overrides the device's caps for recording (tests shrink
      maxComputeWorkGroupCount to exercise split dispatches).
    - `fastmath`: kernels get FPFastMathDefault (the caller decides with
      `vknn.kernels.spirv.fastmath_enabled`; ignored where the device has no
      float_controls2).
    - `autotune` ("off"/"fast"/"thorough") and `autotune_table` (key ->
      config, filled in place): before recording, measure the tunable steps'
      candidate configs whose key the table lacks (`autotune.py`) and record
      with the table's winners; "off" records the heuristics' configs.
    - `prepacked`: device-format constants from a model cache, by key
      (`prepack_key`); a constant whose device bytes differ from the model's
      (fp16 storage) is taken from it, or converted and put into it.
    """

    def __init__(
        self,
        device: Device,
        steps: Sequence[Step],
        input_specs: Mapping[int, TensorSpec],
        outputs: Sequence[int],
        constants: Mapping[int, np.ndarray] | None = None,
        precision: str = "high",
        profiling: bool = False,
        staging: bool | None = None,
        caps: DeviceCaps | None = None,
        pipelines: Pipelines | None = None,
        fastmath: bool = False,
        fp32_rules: Sequence[str] | None = None,
        autotune: str = "off",
        autotune_table: dict[str, dict[str, Any]] | None = None,
        prepacked: PrepackStore | None = None,
        device_layout: str = "nc4hw4",
    ) -> None:
        self.device = device
        self.fastmath = fastmath
        self.caps = caps or device.caps
        self.steps = list(steps)
        self.outputs = list(outputs)
        constants = dict(constants or {})
        # Reshape/transpose/slice chains around strided kernels become their
        # addressing, before anything is planned (views.py).
        if device_layout not in DEVICE_LAYOUTS:
            raise InvalidArgument(
                f"device_layout {device_layout!r}: expected one of {', '.join(DEVICE_LAYOUTS)}"
            )
        packing = device_layout == PACKED
        self.steps = fold_views(
            self.steps, input_specs, constants, self.outputs, through_packed=not packing
        )
        self.input_specs = dict(input_specs)
        self.fp16 = precision in ("low", "normal") and self.caps.has_fp16_storage
        self.storage = np.dtype(np.float16 if self.fp16 else np.float32)
        self.staging = not self.caps.has_device_local_host_visible if staging is None else staging
        # `is not None`: an empty shared Pipelines is falsy (it has __len__).
        self.pipelines = pipelines if pipelines is not None else Pipelines(device)
        self._buffers: list[Buffer] = []

        specs: dict[int, TensorSpec] = dict(self.input_specs)
        for slot, arr in constants.items():
            specs[slot] = TensorSpec(f"const{slot}", tuple(arr.shape), arr.dtype.name)
        refusals = []
        for step in self.steps:
            ins = [specs.get(s) for s in step.inputs if s != NO_VALUE]
            if any(s is None for s in ins):
                missing = [s for s in step.inputs if s not in specs]
                raise InvalidArgument(
                    f"step '{step.node}' reads slot(s) {missing} that nothing provides"
                )
            why = gate(step, self.caps, ins)  # type: ignore[arg-type]
            if why is not None:
                refusals.append(f"'{step.node}': {why}")
            for slot, spec in zip(step.outputs, step.out_specs, strict=True):
                specs[slot] = spec
        if refusals:
            raise Unsupported("the Vulkan backend refuses: " + "; ".join(refusals))
        for slot in self.outputs:
            if slot not in specs:
                raise InvalidArgument(f"output slot {slot} is produced by no step")
        self.specs = specs
        # NC4HW4: which steps run packed, which slots are stored so (layouts.py).
        self.layouts = plan_layouts(
            self.steps,
            specs,
            set(constants),
            self.outputs,
            packing,
            self.caps.max_storage_buffer_range,
        )

        # Float storage per slot and shader variant per step: uniform unless
        # mixed (precision "normal"; see _plan_storage).
        self.variants: list[str] = ["fp16" if self.fp16 else "fp32"] * len(self.steps)
        self._slot_float: dict[int, np.dtype] = {}
        self._const_copies: dict[int, list[np.dtype]] = {}
        self.fp32_reasons: dict[int, tuple[str, ...]] = {}
        """Slot -> the precision rules that keep it in fp32 (precision "normal")."""
        self._constants = set(constants)
        if precision == "normal" and self.fp16:
            self._plan_storage(constants, DEFAULT_RULES if fp32_rules is None else fp32_rules)
        self.boundary_fp32: set[int] = set()
        if self.fp16:
            self._keep_boundary_fp32(constants)

        # Aliases: slot -> (the slot whose memory it is, byte offset in it).
        self._parent: dict[int, tuple[int, int]] = {}
        self._place_aliases(constants)
        scratch = self._plan_conversions(constants)

        # Live ranges on a time axis of three ticks per step: 3i converts
        # step i's inputs, 3i+1 runs it, 3i+2 converts its outputs (only mixed
        # storage converts). Inputs are live from the first step, outputs to
        # the end. A root lives as long as any slot placed on it.
        end = 3 * len(self.steps)
        first: dict[int, int] = {s: 1 for s in self.input_specs}
        last: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.inputs:
                if s != NO_VALUE and s not in constants:
                    last[s] = 3 * i + 1
            for s in step.outputs:
                first.setdefault(s, 3 * i + 1)
        for s in self.outputs:
            last[s] = end
        rfirst: dict[int, int] = {}
        rlast: dict[int, int] = {}
        for s, f in first.items():
            r, _ = self._root(s)
            if r in constants:
                continue
            rfirst[r] = min(rfirst.get(r, f), f)
            rlast[r] = max(rlast.get(r, f), last.get(s, f))
        align = max(16, self.caps.min_storage_buffer_offset_alignment)
        tensors = [(r, self._nbytes(r), f, rlast[r]) for r, f in rfirst.items()]
        offsets, arena_size = plan_arena([*tensors, *scratch], align)
        self.arena = self._buffer(
            arena_size, STORAGE | TRANSFER_SRC | TRANSFER_DST, not self.staging
        )
        refs: dict[int, TensorRef] = {
            s: TensorRef(self.arena, offsets[s], size) for s, size, _, _ in tensors
        }
        self._scratch = {k: TensorRef(self.arena, offsets[k], size) for k, size, _, _ in scratch}

        # Constants: their own buffer, written once.
        if constants:
            # Mixed storage: a constant read by steps of both variants has a
            # copy in each float storage (`_const_copies`: the extra ones); a
            # packed step may read a transformed copy (`_const_in`, e.g. conv
            # weights as OHWI), and a constant read only so has no plain copy.
            copies: dict[tuple[int, np.dtype, str], None] = {}
            for slot in constants:
                if slot not in self._transformed_only:
                    copies[slot, self._float_of(slot), ""] = None
                for st in self._const_copies.get(slot, ()):
                    copies[slot, st, ""] = None
            for reads in self._const_in:
                for s, st, tf in reads:
                    copies[self._root(s)[0], st, tf] = None
            coff, total = {}, 0
            for key in copies:
                coff[key] = total
                total = align_up(total + self._nbytes(key[0], key[1]), align)
            cbuf = self._buffer(total, STORAGE | TRANSFER_SRC | TRANSFER_DST, not self.staging)
            src = cbuf if not self.staging else Buffer(device, total, TRANSFER_SRC, True)
            self._const_refs: dict[tuple[int, np.dtype, str], TensorRef] = {}
            for key in copies:
                slot, st, tf = key
                spec = specs[slot]
                data = self._device_constant(constants[slot], spec, st, prepacked, tf)
                src.write(coff[key], data)
                ref = TensorRef(cbuf, coff[key], self._nbytes(slot, st))
                self._const_refs[key] = ref
                refs.setdefault(slot, ref)
            if self.staging:
                run_once(device, [Copy(src, 0, cbuf, 0, total)])
                src.destroy()
        for s in self._parent:
            r, off = self._root(s)
            refs[s] = TensorRef(refs[r].buffer, refs[r].offset + off, self._nbytes(s))
        self.refs = refs

        # Staging: one host-visible buffer holding every input and output.
        ops: list[Dispatch | Copy] = []
        self._host: dict[int, tuple[Buffer, int]] = {}
        if self.staging:
            soff, total = {}, 0
            for s in [*self.input_specs, *self.outputs]:
                if s not in soff:
                    soff[s] = total
                    total = align_up(total + refs[s].nbytes, align)
            self.stage_buf = self._buffer(total, TRANSFER_SRC | TRANSFER_DST, True)
            for s in self.input_specs:
                ops.append(
                    Copy(self.stage_buf, soff[s], self.arena, refs[s].offset, refs[s].nbytes)
                )
            self._host = {s: (self.stage_buf, soff[s]) for s in soff}
        else:
            self._host = {
                s: (refs[s].buffer, refs[s].offset) for s in [*self.input_specs, *self.outputs]
            }
        # Readback: on a discrete GPU the directly mapped arena is VRAM behind
        # the PCIe BAR, uncached for the CPU (BERT's 128 KiB output took about
        # 2 ms to read there); outputs are copied into host-cached memory at the
        # end of the command buffer and read from there.
        readback: list[tuple[int, int]] = []
        if not self.staging and self.caps.device_type == "discrete":
            roff, total = {}, 0
            for s in self.outputs:
                if s not in self.input_specs and s not in roff:
                    roff[s] = total
                    total = align_up(total + refs[s].nbytes, align)
            if roff:
                rbuf = Buffer(device, total, TRANSFER_DST, True, readback=True)
                self._buffers.append(rbuf)
                for s, off in roff.items():
                    self._host[s] = (rbuf, off)
                readback = list(roff.items())

        # Autotuning measures on its own scratch buffers, before recording.
        tuning = None
        self.autotune_report: AutotuneReport | None = None
        check_mode(autotune)
        if autotune != "off":
            tuning = autotune_table if autotune_table is not None else {}
            self.autotune_report = autotune_steps(
                device, self.pipelines, self.caps, self.steps, self.variants, self.specs,
                autotune, tuning, fastmath=self.fastmath,
            )  # fmt: skip
        for i, step in enumerate(self.steps):
            ctx = RecordContext(
                self.caps,
                self.pipelines,
                self.variants[i],
                op_index=i,
                upload=self._upload,
                fastmath=self.fastmath,
                tuning=tuning,
            )
            if KERNELS[step.op].aliases and step.outputs[0] not in self._parent:
                # A reshape / convert_layout of a packed tensor: unpack it.
                src, dst = step.inputs[0], step.outputs[0]
                ops += record_convert(
                    ctx, refs[src], refs[dst], self.specs[src].shape, self._form(src),
                    self._form(dst), i, self.specs[dst].name,
                )  # fmt: skip
                continue
            # The step reads and writes its float tensors in its variant's
            # width and its layout plan's forms, through converted copies where
            # they are stored otherwise.
            view: dict[int, TensorRef] = {}
            for s, key, want in self._pre[i]:
                view[s] = self._scratch[key]
                ops += self._convert(
                    ctx, s, refs[s], view[s], self._form(s), want, OpPhase(i, _CONVERT_IN_PHASE)
                )
            for s, key in self._reuse[i]:
                view[s] = self._scratch[key]
            for s, st, tf in self._const_in[i]:
                r, off = self._root(s)
                view[s] = TensorRef(
                    self._const_refs[r, st, tf].buffer,
                    self._const_refs[r, st, tf].offset + off,
                    self._nbytes(s, st),
                )
            for s, key, _ in self._post[i]:
                view[s] = self._scratch[key]
            present = [s for s in step.inputs if s != NO_VALUE]
            lp = self.layouts
            ins = [self._arg(s, view, lp.wants_packed(i, p)) for p, s in enumerate(present)]
            outs = [self._arg(s, view, lp.writes_packed(i, p)) for p, s in enumerate(step.outputs)]
            ops += KERNELS[step.op].record(step, ctx, ins, outs)
            for s, _, have in self._post[i]:
                ops += self._convert(
                    ctx, s, view[s], refs[s], have, self._form(s), OpPhase(i, _CONVERT_OUT_PHASE)
                )
        if self.staging:
            for s in self.outputs:
                buf, off = self._host[s]
                ops.append(Copy(refs[s].buffer, refs[s].offset, buf, off, refs[s].nbytes))
        for s, off in readback:
            ops.append(Copy(refs[s].buffer, refs[s].offset, self._host[s][0], off, refs[s].nbytes))

        self.program = CommandProgram(device, profiling=profiling)
        self.program.record(ops)
        self.stats = ExecutorStats(
            arena_bytes=arena_size,
            naive_bytes=sum(align_up(self._nbytes(s), align) for s in first if s not in constants),
            pipelines=len(self.pipelines),
            dispatches=self.program.stats.dispatches,
            barriers=self.program.stats.barriers,
            record_seconds=self.program.stats.record_seconds,
            aliased=len(self._parent),
            conversions=len(self.conversion_list()),
            packed=len(self.layouts.packed_slots),
        )

    # -- storage -----------------------------------------------------------

    def _float_of(self, slot: int) -> np.dtype:
        """The storage of `slot` were it a float tensor."""
        return self._slot_float.get(slot, self.storage)

    def _storage(self, slot: int, float_storage: np.dtype | None = None) -> np.dtype:
        fs = self._float_of(slot) if float_storage is None else float_storage
        return storage_dtype(self.specs[slot].dtype, fs)

    @staticmethod
    def _device_constant(
        arr: np.ndarray,
        spec: TensorSpec,
        st: np.dtype,
        prepacked: PrepackStore | None,
        transform: str = "",
    ) -> np.ndarray | bytes:
        """`arr` (through `layouts.CONST_TRANSFORMS[transform]` if named) in
        device storage `st`, from/into the prepacked store when it needs
        converting (fp32 weights stored as fp16)."""
        if transform:
            arr = CONST_TRANSFORMS[transform](arr)
        key = prepack_key(spec, arr, st)
        if prepacked is not None:
            cached = prepacked.get(key)
            if cached is not None and len(cached) == arr.size * st.itemsize:
                return cached
        try:
            data = to_device(arr, spec.dtype, st, f"constant {spec.name}")
        except ValueError as e:
            raise Unsupported(str(e)) from None
        if prepacked is not None and data.dtype != arr.dtype:
            prepacked.put(key, data.tobytes())
        return data

    def _nbytes(
        self, slot: int, float_storage: np.dtype | None = None, packed: bool | None = None
    ) -> int:
        spec = self.specs[slot]
        packed = self._packed(slot) if packed is None else packed
        n = packed_numel(spec.shape) if packed else int(np.prod(spec.shape))
        return self._storage(slot, float_storage).itemsize * max(1, n)

    def _packed(self, slot: int) -> bool:
        """Whether `slot` is stored NC4HW4 (`layouts.py`)."""
        return slot in self.layouts.packed_slots

    def _layout_free(self, slot: int) -> bool:
        """NC4HW4 and flat storage of `slot` are the same bytes: [N, C, 1, 1]
        with C a multiple of 4 (a global pool's result, an SE block's scale)."""
        shape = self.specs[slot].shape
        return len(shape) == 4 and shape[2] * shape[3] == 1 and shape[1] % 4 == 0

    def _same_bytes(self, slot: int, a: Form, b: Form) -> bool:
        """Whether `slot` stored as `a` is already what a reader wanting `b` reads."""
        return a == b or (a.fp32 == b.fp32 and self._layout_free(slot))

    def _form(self, slot: int) -> Form:
        return Form(self._float_of(slot) == FP32, self._packed(slot))

    def layout_of(self, slot: int) -> str:
        """How `slot` is laid out in device memory: "nc4hw4" or "flat"."""
        return PACKED if self._packed(slot) else "flat"

    def float_storage(self, slot: int) -> str:
        """How float tensor `slot` is stored: "float16" or "float32"."""
        return self._float_of(slot).name

    def _variant_float(self, i: int) -> np.dtype:
        return FP32 if self.variants[i] == "fp32" else FP16

    def _plan_storage(self, constants: Mapping[int, np.ndarray], rules: Sequence[str]) -> None:
        """Mixed storage (precision "normal"): `precision_rules.plan_mixed`."""
        mixed = plan_mixed(self.steps, self.specs, set(constants), rules)
        self.variants = mixed.variants
        self.fp32_reasons = mixed.reasons
        self._slot_float = {s: np.dtype(d) for s, d in mixed.storage.items()}
        self._const_copies = {s: [np.dtype(d) for d in ds] for s, ds in mixed.const_copies.items()}

    def _keep_boundary_fp32(self, constants: Mapping[int, np.ndarray]) -> None:
        """fp16 storage: large float inputs and outputs stay fp32 in device
        memory and are converted by a dispatch next to the steps touching them.
        numpy's float32<->float16 conversion costs ~6.5 ns per element (1 ms
        for a 224x224 RGB image, more than a MobileNetV2 runs on an H200); a
        conversion dispatch costs a few microseconds. Small tensors (a
        classifier's logits) are cheaper converted on the host than with a
        dispatch and a barrier."""
        roots = alias_roots(self.steps)
        group: dict[int, list[int]] = defaultdict(list)
        for s in self.specs:
            group[roots.get(s, s)].append(s)
        for s in [*self.input_specs, *self.outputs]:
            spec = self.specs[s]
            r = roots.get(s, s)
            if (
                r in constants
                or not is_float(spec.dtype)
                or int(np.prod(spec.shape)) < GPU_CONVERT_MIN_ELEMENTS
            ):
                continue
            for m in group[r]:
                self._slot_float[m] = FP32
                self.boundary_fp32.add(m)

    def _plan_conversions(
        self, constants: Mapping[int, np.ndarray]
    ) -> list[tuple[tuple[str, int, int], int, int, int]]:
        """Per step, the float tensors it reads or writes in another form
        (width, layout) than they are stored in: inputs converted into a
        scratch before it (`_pre`; a later step wanting the same form reads
        that scratch, `_reuse`), outputs written to a scratch and converted
        after it (`_post`), constants read from their copy of the step's
        width (`_const_in`). Aliasing steps whose input is stored packed
        unpack it (`_unpack`). Returns the scratches as arena entries (id,
        bytes, first tick, last tick) on `__init__`'s time axis."""
        n = len(self.steps)
        self._pre: list[list[tuple[int, tuple[str, int, int], Form]]] = [[] for _ in range(n)]
        self._reuse: list[list[tuple[int, tuple[str, int, int]]]] = [[] for _ in range(n)]
        self._post: list[list[tuple[int, tuple[str, int, int], Form]]] = [[] for _ in range(n)]
        self._const_in: list[list[tuple[int, np.dtype, str]]] = [[] for _ in range(n)]
        out: list[tuple[tuple[str, int, int], int, int, int]] = []
        # Constants read plainly somewhere (or returned) vs only transformed.
        plain: set[int] = {self._root(s)[0] for s in self.outputs}
        transformed: set[int] = set()
        # (slot, form) -> index in `out` of its converted copy (slots are
        # written once, so one conversion serves every later reader).
        converted: dict[tuple[int, Form], int] = {}
        for i, step in enumerate(self.steps):
            present = [x for x in step.inputs if x != NO_VALUE]
            if KERNELS[step.op].aliases:
                plain.update(self._root(s)[0] for s in present)
                continue
            width = self._variant_float(i)
            seen: set[int] = set()
            for pos, s in enumerate(present):
                root = self._root(s)[0]
                tf = self.layouts.const_forms.get((i, pos), "")
                if root in constants:
                    (transformed if tf else plain).add(root)
                if s in seen or not is_float(self.specs[s].dtype):
                    continue
                seen.add(s)
                want = Form(width == FP32, self.layouts.wants_packed(i, pos))
                if root in constants:
                    if self._form(s) != Form(width == FP32) or tf:
                        self._const_in[i].append((s, width, tf))
                    continue
                if self._same_bytes(s, self._form(s), want):
                    continue
                k = converted.get((s, want))
                if k is not None:
                    key, size, tick, _ = out[k]
                    out[k] = (key, size, tick, 3 * i + 1)
                    self._reuse[i].append((s, key))
                    continue
                key = ("in", i, s)
                self._pre[i].append((s, key, want))
                converted[s, want] = len(out)
                out.append((key, self._nbytes(s, width, want.packed), 3 * i, 3 * i + 1))
            for pos, s in enumerate(step.outputs):
                if not is_float(self.specs[s].dtype):
                    continue
                have = Form(width == FP32, self.layouts.writes_packed(i, pos))
                if self._same_bytes(s, self._form(s), have):
                    continue
                key = ("out", i, s)
                self._post[i].append((s, key, have))
                converted[s, have] = len(out)  # later readers of this form use it
                out.append((key, self._nbytes(s, width, have.packed), 3 * i + 1, 3 * i + 2))
        self._transformed_only = transformed - plain
        return out

    def _convert(
        self,
        ctx: RecordContext,
        slot: int,
        src: TensorRef,
        dst: TensorRef,
        src_form: Form,
        dst_form: Form,
        op_index: int,
    ) -> list[Dispatch]:
        spec = self.specs[slot]
        return record_convert(ctx, src, dst, spec.shape, src_form, dst_form, op_index, spec.name)

    def conversion_list(self) -> list[tuple[str, str, str]]:
        """(step node, tensor name, "<from>-><to>") of every storage conversion
        recorded, in order; a form is "fp16"/"fp32", "/nc4hw4" when packed."""
        out = []
        for i, step in enumerate(self.steps):
            for s, _, want in self._pre[i]:
                out.append((step.node, self.specs[s].name, f"{self._form(s)}->{want}"))
            if KERNELS[step.op].aliases and step.outputs[0] not in self._parent:
                o = step.outputs[0]
                src = self._form(step.inputs[0])
                out.append((step.node, self.specs[o].name, f"{src}->{self._form(o)}"))
            for s, _, have in self._post[i]:
                out.append((step.node, self.specs[s].name, f"{have}->{self._form(s)}"))
        return out

    def fp32_tensors(self) -> dict[str, str]:
        """Tensor name -> why it is stored in fp32 (precision "normal"): the
        rules keeping it, "segment input/output" for a large boundary tensor
        converted on the device (`_keep_boundary_fp32`), or "fp32 steps only"
        when every step touching it runs fp32 anyway. Constants (a copy per
        storage their readers use) are left out."""
        out: dict[str, str] = {}
        for s, st in self._slot_float.items():
            if st == FP32 and self._root(s)[0] not in self._constants:
                why = self.fp32_reasons.get(s)
                if why:
                    out[self.specs[s].name] = "+".join(why)
                elif s in self.boundary_fp32:
                    out[self.specs[s].name] = "segment input/output"
                else:
                    out[self.specs[s].name] = "fp32 steps only"
        return out

    def _root(self, slot: int) -> tuple[int, int]:
        off = 0
        while slot in self._parent:
            slot, o = self._parent[slot]
            off += o
        return slot, off

    def _place_aliases(self, constants: Mapping[int, np.ndarray]) -> None:
        """Fill `_parent`: reshape-like outputs onto their input, then the
        inputs of batch-1 concats into their slice of the output."""
        producer: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.outputs:
                producer[s] = i
        for i, step in enumerate(self.steps):
            if KERNELS[step.op].aliases:
                # A packed input is unpacked into the output instead.
                src = step.inputs[0]
                if not self._packed(src) or self._layout_free(src):
                    self._parent[step.outputs[0]] = (step.inputs[0], 0)
                continue
            if step.op != "vx.concat":
                continue
            ins = [s for s in step.inputs if s != NO_VALUE]
            offs = concat_in_place(step, [self.specs[s].shape for s in ins])
            out = step.outputs[0]
            # Mixed storage: a concat run in the other width than its output
            # writes a scratch, so placing its inputs would save nothing.
            if offs is None or self._storage(out, self._variant_float(i)) != self._storage(out):
                continue
            esize = self._storage(out).itemsize
            align = max(16, self.caps.min_storage_buffer_offset_alignment)
            seen: set[int] = set()
            for s, off in zip(ins, offs, strict=True):
                # Only a value this segment computes, still in memory of its
                # own (not a reshape of something, not placed elsewhere), and
                # at an offset its own bindings may start at.
                if (
                    s in seen
                    or s in constants
                    or s in self.input_specs
                    or s not in producer
                    or s in self._parent
                    or self._root(out)[0] == s
                    or self._storage(s) != self._storage(out)
                    or (self._packed(s) != self._packed(out) and not self._layout_free(s))
                    or (off * esize) % align
                ):
                    continue
                seen.add(s)
                self._parent[s] = (out, off * esize)

    def _upload(self, arr: np.ndarray) -> TensorRef:
        """A device copy of `arr` (raw words a kernel computed at record time)
        that lives as long as the executor."""
        data = np.ascontiguousarray(arr)
        size = max(4, data.nbytes)
        buf = self._buffer(size, STORAGE | TRANSFER_DST, not self.staging)
        if self.staging:
            src = Buffer(self.device, size, TRANSFER_SRC, True)
            src.write(0, data)
            run_once(self.device, [Copy(src, 0, buf, 0, size)])
            src.destroy()
        else:
            buf.write(0, data)
        return TensorRef(buf, 0, size)

    def _buffer(self, size: int, usage: int, host_visible: bool) -> Buffer:
        b = Buffer(self.device, size, usage, host_visible)
        self._buffers.append(b)
        return b

    def _arg(
        self, slot: int, view: Mapping[int, TensorRef] | None = None, packed: bool = False
    ) -> TensorArg:
        """`slot` as a recorder sees it; `view` overrides where it lives (a
        copy in the step's storage form); `packed`: the recorder gets it NC4HW4."""
        spec = self.specs[slot]
        ref = view.get(slot, self.refs[slot]) if view else self.refs[slot]
        return TensorArg(ref, tuple(spec.shape), spec.dtype, packed)

    def run(self, feeds: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Outputs (slot -> array of the spec's dtype) for inputs `feeds` (slot -> array)."""
        for slot, spec in self.input_specs.items():
            x = feeds.get(slot)
            if x is None:
                raise InvalidArgument(f"missing input for slot {slot} ({spec.name})")
            if tuple(x.shape) != tuple(spec.shape):
                raise InvalidArgument(
                    f"input {spec.name}: shape {tuple(x.shape)}, "
                    f"the plan expects {tuple(spec.shape)}"
                )
            buf, off = self._host[slot]
            try:
                data = to_device(
                    np.asarray(x), spec.dtype, self._float_of(slot), f"input {spec.name}"
                )
            except ValueError as e:
                raise InvalidArgument(str(e)) from None
            buf.write(off, data)
        self.program.run()
        out = {}
        for slot in self.outputs:
            spec = self.specs[slot]
            buf, off = self._host[slot]
            n = int(np.prod(spec.shape))
            st = self._storage(slot)
            raw = buf.read(off, n * st.itemsize).view(st)
            out[slot] = from_device(raw, spec.dtype, tuple(spec.shape))
        return out

    def profile(self) -> list[tuple[str, float]]:
        """(label, GPU milliseconds) per step of the last run (profiling=True)."""
        per: dict[int, float] = defaultdict(float)
        labels: dict[int, str] = {}
        for op, label, ns in self.program.timings_ns():
            per[op] += ns
            labels[op] = label
        return [(labels[i], per[i] / 1e6) for i in sorted(per)]

    def close(self) -> None:
        self.program.destroy()
        for b in self._buffers:
            b.destroy()
        self._buffers.clear()

    def __enter__(self) -> VulkanExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
