"""partition: each graph op -> the first backend whose gate accepts it; maximal
runs of ops on one backend become `vkd.segment` ops.

For every op of the function (in order) the backends of `backends` are tried
in turn: `vulkan` asks the kernel gate (`vknn.kernels.gate`, the same
function the support report and `convert-vx-to-vkd` use) with the module's
`#vkd.target`; `cpu` takes any op with a numpy kernel whose compile-time check
accepts it (backend `cpu`, `onnx.*` ops included), and, only with the opt-in
`onnx-reference=true` (Config.onnx_reference), any other op still in the
`onnx` dialect (backend `onnx-reference`). The choice
is recorded on the op as `vkd.backend`, and why it is not on the first
backend as `vkd.reason`. Then runs of at most `fold-gpu-islands` cheap
Vulkan ops between two CPU ops move to the CPU (a GPU round trip costs more
than they do), and every maximal run of ops on one backend family (vulkan /
cpu) is wrapped into a `vkd.segment`: its operands are the values it reads
from outside (constants are cloned in instead), its results the values read
after it.

An op no backend takes is an error naming the node; so is any op off Vulkan
with `allow-cpu-fallback=false`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from vknn.dialects import vkd
from vknn.dialects.onnx import NAME_ATTR
from vknn.errors import Unsupported
from vknn.runtime.plan import Step
from vknn.transforms import segment_steps
from vknn.transforms.target_option import module_target
from vknn.transforms.vx_graph import nodes_of

ONNX_REFERENCE = "onnx-reference"
MEMBERS_ATTR = "vkd.members"
"""On a Vulkan `vkd.segment`: the ONNX nodes of its ops when it was cut."""
HEAVY_KINDS = frozenset(
    {"Conv", "ConvTranspose", "MatMul", "Gemm", "Attention", "LSTM", "GRU", "RNN", "Einsum"}
)
"""Op kinds worth a GPU round trip on their own: never folded onto the CPU."""


def cpu_refusal(step: Step, onnx_reference: bool = False) -> str | None:
    """Why no CPU path runs `step` (one line), or None."""
    from vknn.oracle.registry import refusal

    why = refusal(step)
    if why is None or (onnx_reference and step.op.startswith("onnx.")):
        return None
    hint = " (Config.onnx_reference=True runs it through onnx.reference)"
    return f"{step.kind}: {why}" + (hint if step.op.startswith("onnx.") else "")


def cpu_backend(step: Step, onnx_reference: bool = False) -> tuple[str, str] | None:
    """(backend, note) of the CPU path that runs `step`, or None: our own
    kernel when it takes the step, else onnx.reference for an `onnx.*` op
    under the opt-in."""
    from vknn.oracle.registry import refusal

    why = refusal(step)
    if why is None:
        return "cpu", ""
    if onnx_reference and step.op.startswith("onnx."):
        return ONNX_REFERENCE, f"{step.kind}: {why}; runs through onnx.reference (opt-in)"
    return None


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Assign backends and cut the function into `vkd.segment`s."""

    name = "partition"

    target: str = ""
    backends: str = "vulkan,cpu"
    disable_vk_ops: str = ""
    allow_cpu_fallback: bool = True
    fold_gpu_islands: int = 2
    onnx_reference: bool = False
    """Opt-in: `onnx.*` ops with no kernel of our own run through onnx.reference."""
    vulkan_unavailable: str = ""
    """Why there is no Vulkan device (a session without one): every op's
    Vulkan refusal says so, and no target is needed."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        backends = [b.strip() for b in self.backends.split(",") if b.strip()]
        for b in backends:
            if b not in ("vulkan", "cpu"):
                raise Unsupported(f"partition: unknown backend {b!r} (vulkan, cpu)")
        target = None
        if "vulkan" in backends and not self.vulkan_unavailable:
            target = module_target(op, self.target)
        disabled = {k.strip() for k in self.disable_vk_ops.split(",") if k.strip()}
        for func in op.ops:
            if isinstance(func, FuncOp):
                block = func.body.block
                if any(isinstance(o, vkd.SegmentOp | vkd.VulkanSegmentOp) for o in block.ops):
                    continue  # already partitioned
                view = segment_steps.build(block)
                self._assign(view, backends, target, disabled)
                _wrap_segments(block)

    def _assign(
        self,
        view: segment_steps.StepView,
        backends: list[str],
        target: object,
        disabled: set[str],
    ) -> None:
        from vknn.kernels import gate

        chosen: list[tuple[str, str]] = []
        gaps: list[str] = []
        for step in view.steps:
            reasons: list[str] = []
            pick = None
            for backend in backends:
                if backend == "vulkan":
                    if target is None:
                        why: str | None = f"{step.kind}: {self.vulkan_unavailable}"
                    elif step.kind in disabled or step.op in disabled:
                        why = f"{step.kind}: disabled by Config.disable_vk_ops"
                    else:
                        why = gate(step, target, view.in_specs(step))  # type: ignore[arg-type]
                    if why is None:
                        pick = ("vulkan", "")
                        break
                    reasons.append(why)
                else:
                    cpu = cpu_backend(step, self.onnx_reference)
                    if cpu is not None:
                        pick = cpu
                        if cpu[1]:
                            reasons.append(cpu[1])
                        break
                    reasons.append(cpu_refusal(step) or f"{step.kind}: no CPU kernel")
            if pick is None:
                raise Unsupported(
                    f"node '{step.node}' ({step.kind}) has no backend among {backends}: "
                    + "; ".join(reasons)
                )
            reason = "; ".join(reasons) if pick[0] != backends[0] or pick[1] else ""
            chosen.append((pick[0], reason))
            if backends[0] == "vulkan" and pick[0] != "vulkan" and not self.allow_cpu_fallback:
                gaps.append(f"'{step.node}' ({reasons[0] if reasons else step.kind})")
        if gaps:
            raise Unsupported(
                f"{len(gaps)} op(s) cannot run on the Vulkan backend and Config.allow_cpu_fallback "
                f"is False: {', '.join(gaps[:20])}{' ...' if len(gaps) > 20 else ''}"
            )
        if self.allow_cpu_fallback and self.fold_gpu_islands > 0:
            _fold_islands(view.steps, chosen, self.fold_gpu_islands, self.onnx_reference)
        for step, (backend, reason) in zip(view.steps, chosen, strict=True):
            o = view.op_of(step)
            o.attributes[vkd.BACKEND_ATTR] = StringAttr(backend)
            if reason:
                o.attributes[vkd.REASON_ATTR] = StringAttr(reason)
            elif vkd.REASON_ATTR in o.attributes:
                del o.attributes[vkd.REASON_ATTR]


def _fold_islands(
    steps: list[Step], chosen: list[tuple[str, str]], max_ops: int, onnx_reference: bool
) -> None:
    """Runs of at most `max_ops` cheap Vulkan steps between two CPU steps move
    onto the CPU: such an island costs a download, a submit and an upload on
    each side, more than its few elementwise ops. Only steps with a CPU
    kernel, and no heavy kind, move."""
    i = 0
    while i < len(steps):
        if chosen[i][0] != "vulkan":
            i += 1
            continue
        j = i
        while j < len(steps) and chosen[j][0] == "vulkan":
            j += 1
        island = range(i, j)
        if (
            i > 0
            and j < len(steps)
            and len(island) <= max_ops
            and all(
                steps[k].kind not in HEAVY_KINDS and cpu_backend(steps[k], onnx_reference)
                for k in island
            )
        ):
            for k in island:
                backend, note = cpu_backend(steps[k], onnx_reference)  # type: ignore[misc]
                chosen[k] = (
                    backend,
                    f"{steps[k].kind}: folded onto the CPU with its {len(island)}-op GPU island "
                    f"between CPU segments (Config.fold_gpu_islands={max_ops})"
                    + (f"; {note}" if note else ""),
                )
        i = j


def _family(op: Operation) -> str | None:
    a = op.attributes.get(vkd.BACKEND_ATTR)
    if not isinstance(a, StringAttr):
        return None
    return "vulkan" if a.data == "vulkan" else "cpu"


def _wrap_segments(block: Block) -> None:
    """Wrap each maximal run of same-family ops into a `vkd.segment`."""
    groups: list[tuple[str, list[Operation]]] = []
    for op in block.ops:
        fam = _family(op)
        if fam is None:
            continue  # constants, absent values, the return
        if groups and groups[-1][0] == fam:
            groups[-1][1].append(op)
        else:
            groups.append((fam, [op]))
    for fam, ops in groups:
        _wrap(block, fam, ops)
    for op in list(block.ops):
        if op.name in segment_steps.CONSTANT_OPS and not any(r.uses for r in op.results):
            block.erase_op(op)


def _wrap(block: Block, backend: str, ops: list[Operation]) -> None:
    members = set(ops)

    def inside(o: Operation) -> bool:
        p: Operation | None = o
        while p is not None:
            if p in members:
                return True
            p = p.parent_op()
        return False

    inputs: list[SSAValue] = []
    constants: list[Operation] = []
    for op in ops:
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and inside(owner):
                    continue
                if not isinstance(owner, Operation) and inside(owner.parent_op()):  # type: ignore[arg-type]
                    continue  # a block argument of a nested region
                if isinstance(owner, Operation) and (
                    owner.name in segment_steps.CONSTANT_OPS or owner.name == "onnx.NoValue"
                ):  # an absent optional operand is cloned in like a constant
                    if owner not in constants:
                        constants.append(owner)
                elif v not in inputs:
                    inputs.append(v)
    outputs: list[SSAValue] = []
    for op in ops:
        for r in op.results:
            if any(not inside(u.operation) for u in r.uses):
                outputs.append(r)
    body = Block(arg_types=[v.type for v in inputs])
    seg = vkd.SegmentOp(backend, inputs, [v.type for v in outputs], Region(body))
    if backend == "vulkan":
        # The nodes it computes, for the report: ops that will record nothing
        # (views, reshapes) are gone by the time its dispatches are named.
        named = [op for op in ops if NAME_ATTR in op.attributes]
        names = list(dict.fromkeys(n for op in named for n in nodes_of(op)))
        seg.attributes[MEMBERS_ATTR] = ArrayAttr([StringAttr(n) for n in names])
    block.insert_op_before(seg, ops[0])
    clones = {c: c.clone() for c in constants}
    for c in constants:
        body.add_op(clones[c])
    for op in ops:
        op.detach()
        body.add_op(op)
    body.add_op(vkd.YieldOp(*outputs))
    for v, arg in zip(inputs, body.args, strict=True):
        v.replace_uses_with_if(
            arg, lambda use: inside(use.operation) or use.operation.parent_op() is seg
        )
    for c in constants:
        c.results[0].replace_uses_with_if(
            clones[c].results[0],
            lambda use: use.operation.parent_block() is body or inside(use.operation),
        )
    yield_op = body.last_op
    assert isinstance(yield_op, vkd.YieldOp)
    for v, res in zip(outputs, seg.outputs, strict=True):
        v.replace_uses_with_if(
            res, lambda use: use.operation is not yield_op and not inside(use.operation)
        )
    _ = ReturnOp  # the function's return reads segment results like any op
