"""insert-barriers: the pipeline barriers of each Vulkan segment, from what
each command reads and writes.

Commands (dispatches and copies) run in order on one queue, but Vulkan lets
them overlap unless a barrier says otherwise. Walking the commands, this
pass puts a `vkd.barrier` before any command that reads or overwrites bytes
an earlier command since the last barrier wrote (read-after-write,
write-after-write), or overwrites bytes one read (write-after-read: arena
reuse makes those real). Bytes are compared in arena coordinates (two
allocations may share memory at different times). Dispatches of one op's
pass (`step`) never wait on each other: they touch disjoint memory. The
barrier waits on every stage used since the last one, makes the writes
since then visible (their byte ranges; none for a write-after-read, an
execution dependency), and a last barrier before the downloads makes every
device write visible to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from vknn.dialects import vkd
from vknn.transforms.plan_memory import root_of


@dataclass
class _Access:
    arena: SSAValue | None
    lo: int
    hi: int
    step: int
    value: SSAValue
    """The tensor the access names (barriers list it with a relative range)."""
    rel: int


def _where(value: SSAValue, offset: int, size: int, step: int) -> _Access:
    root, off = root_of(value)
    owner = root.owner
    arena: SSAValue | None = None
    base = 0
    if isinstance(owner, vkd.AllocOp | vkd.WeightOp) and owner.arena is not None:
        arena = owner.arena
        base = owner.offset.value.data  # type: ignore[union-attr]
    else:
        arena = root  # unplanned: compare per allocation
    lo = base + off + offset
    return _Access(arena, lo, lo + size, step, value, offset)


def _overlaps(a: _Access, accesses: list[_Access]) -> bool:
    return any(
        b.arena is a.arena and b.lo < a.hi and a.lo < b.hi and b.step != a.step for b in accesses
    )


def _accesses(op: Operation, step: int) -> tuple[list[_Access], list[_Access]]:
    """(reads, writes) of a command."""
    if isinstance(op, vkd.CopyOp):
        size = op.size.value.data
        return (
            [_where(op.source, op.src_offset.value.data, size, step)],
            [_where(op.dest, op.dst_offset.value.data, size, step)],
        )
    assert isinstance(op, vkd.DispatchOp)
    kernel = op.kernel_op()
    assert kernel is not None, f"vkd.dispatch @{op.kernel.root_reference.data}: no such kernel"
    reads: list[_Access] = []
    writes: list[_Access] = []
    for v, (off, size), access in zip(
        op.buffers, op.binding_ranges(), kernel.bindings.data, strict=True
    ):
        (writes if access.data.writes else reads).append(_where(v, off, size, step))
    return reads, writes


def barriers_for(seg: vkd.VulkanSegmentOp) -> None:
    block = seg.body.block
    if any(isinstance(op, vkd.BarrierOp) for op in block.ops):
        return  # already done
    writes: list[_Access] = []
    reads: list[_Access] = []
    stages: set[vkd.Stage] = set()
    used: set[vkd.Stage] = set()
    copies = 0
    last_command: Operation | None = None
    for op in list(block.ops):
        if isinstance(op, vkd.DispatchOp):
            step = op.step.value.data
            stage = vkd.Stage.COMPUTE
        elif isinstance(op, vkd.CopyOp):
            copies += 1
            step = -1 - copies  # every copy is its own pass
            stage = vkd.Stage.TRANSFER
        else:
            continue
        op_reads, op_writes = _accesses(op, step)
        hazard = any(_overlaps(a, writes) for a in (*op_reads, *op_writes)) or any(
            _overlaps(a, reads) for a in op_writes
        )
        if hazard:
            block.insert_op_before(_barrier(stages, {stage}, writes), op)
            writes, reads, stages = [], [], set()
        writes += op_writes
        reads += op_reads
        stages.add(stage)
        used.add(stage)
        last_command = op
    if last_command is not None:
        # Every device write visible to the host before the fence signals.
        block.insert_op_after(vkd.BarrierOp(_order(used), [vkd.Stage.HOST]), last_command)


def _order(stages: set[vkd.Stage]) -> list[vkd.Stage]:
    return [s for s in (vkd.Stage.COMPUTE, vkd.Stage.TRANSFER, vkd.Stage.HOST) if s in stages]


def _barrier(src: set[vkd.Stage], dst: set[vkd.Stage], writes: list[_Access]) -> vkd.BarrierOp:
    # Later commands of either kind may read what was written (the runtime
    # adds every access of the destination stages).
    dst = dst | {vkd.Stage.COMPUTE, vkd.Stage.TRANSFER}
    seen: set[tuple[int, int, int]] = set()
    buffers: list[SSAValue] = []
    ranges: list[int] = []
    for w in writes:
        key = (id(w.value), w.rel, w.hi - w.lo)
        if key in seen:
            continue
        seen.add(key)
        buffers.append(w.value)
        ranges += [w.rel, w.hi - w.lo]
    return vkd.BarrierOp(_order(src), _order(dst), buffers, ranges)


@dataclass(frozen=True)
class InsertBarriersPass(ModulePass):
    """Derive every pipeline barrier from the commands' read/write sets."""

    name = "insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for seg in op.walk():
            if isinstance(seg, vkd.VulkanSegmentOp):
                barriers_for(seg)
