"""plan-memory: arena offsets for every allocation of each Vulkan segment.

Each memory kind gets one `vkd.arena` per segment: `device` (intermediates,
segment inputs and results), `staging` and `readback` (host-visible copies
at the edges, when the target's memory model needs them) and `const`
(weights and kernel tables, written once at load). A device tensor is live
from the first command that touches it (or anything placed in it: a
`vkd.subview`) to the last, in command order; uploads come before every
command and downloads after, so segment inputs and results are live
throughout; so are staging buffers from the start to their copy (the host
writes all of them before the submit) and readback buffers from their copy
to the end. The interval planner (`kernels/memory_plan.py`, as ARM's ML
emulation layer does it: best-fit free blocks, largest first at each
step) gives the offsets; a tensor never shares bytes with one live at the
same command, so a dispatch's inputs and outputs are always disjoint.
Weights are laid out one after another. Offsets are multiples of the
target's minStorageBufferOffsetAlignment (at least 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from vknn.dialects import vkd
from vknn.kernels.memory_plan import align_up, plan_arena
from vknn.transforms.target_option import module_target


def root_of(value: SSAValue) -> tuple[SSAValue, int]:
    """(the alloc or weight value `value` lives in, its byte offset there)."""
    off = 0
    while isinstance(value.owner, vkd.SubviewOp):
        off += value.owner.offset.value.data
        value = value.owner.source
    return value, off


def plan_segment(seg: vkd.VulkanSegmentOp, alignment: int) -> None:
    block = seg.body.block
    if any(isinstance(op, vkd.ArenaOp) for op in block.ops):
        return  # already planned
    first: dict[SSAValue, int] = {}
    last: dict[SSAValue, int] = {}
    for i, op in enumerate(block.ops):
        if not isinstance(op, vkd.COMMANDS):
            continue
        for v in op.operands:
            if not isinstance(v.type, vkd.TensorBufferType):
                continue
            root, _ = root_of(v)
            first.setdefault(root, i)
            last[root] = i
    # The host writes every upload before the submit and reads every download
    # after the fence, whatever their place among the commands: a staging
    # buffer is live from the start to its copy (two of them must not share
    # bytes because one's copy precedes the other's upload in the block).
    end = len(block.ops)
    for op in block.ops:
        if isinstance(op, vkd.UploadOp):
            first[root_of(op.dest)[0]] = 0
        elif isinstance(op, vkd.DownloadOp):
            last[root_of(op.source)[0]] = end
    allocs = [op for op in block.ops if isinstance(op, vkd.AllocOp)]
    weights = [op for op in block.ops if isinstance(op, vkd.WeightOp)]
    arenas: dict[vkd.Memory, vkd.ArenaOp] = {}
    for memory in (vkd.Memory.DEVICE, vkd.Memory.STAGING, vkd.Memory.READBACK):
        mine = [a for a in allocs if a.memory.data is memory]
        if not mine:
            continue
        tensors = [
            (a.result, a.size.value.data, first.get(a.result, 0), last.get(a.result, 0))
            for a in mine
        ]
        offsets, size = plan_arena(tensors, alignment)
        arena = vkd.ArenaOp(memory, size, alignment)
        block.insert_op_before(arena, block.first_op)  # type: ignore[arg-type]
        arenas[memory] = arena
        for a in mine:
            _place(a, arena, offsets[a.result])
    if weights:
        total = 0
        offsets_w = {}
        for w in weights:
            offsets_w[w] = total
            total = align_up(total + max(4, vkd.buffer_bytes(w.result)), alignment)
        arena = vkd.ArenaOp(vkd.Memory.CONST, total, alignment)
        block.insert_op_before(arena, block.first_op)  # type: ignore[arg-type]
        for w in weights:
            new = vkd.WeightOp(
                w.data,
                w.result.type,  # type: ignore[arg-type]
                w.transform.data if w.transform is not None else None,
                arena.result,
                offsets_w[w],
            )
            _replace(w, new)


def _place(alloc: vkd.AllocOp, arena: vkd.ArenaOp, offset: int) -> None:
    new = vkd.AllocOp(
        alloc.memory.data,
        alloc.size.value.data,
        alloc.result.type,  # type: ignore[arg-type]
        arena.result,
        offset,
    )
    _replace(alloc, new)


def _replace(old: Operation, new: Operation) -> None:
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    for a in ("vkd.name",):
        if a in old.attributes:
            new.attributes[a] = old.attributes[a]
    old.results[0].replace_all_uses_with(new.results[0])
    block.erase_op(old)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Give every allocation of each Vulkan segment an arena offset."""

    name = "plan-memory"

    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        alignment = max(vkd.MIN_ALIGNMENT, target.min_storage_buffer_offset_alignment)
        alignment = 1 << (alignment - 1).bit_length()
        for seg in op.walk():
            if isinstance(seg, vkd.VulkanSegmentOp):
                plan_segment(seg, alignment)
