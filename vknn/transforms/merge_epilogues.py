"""merge-epilogues: a `vx.fused_pointwise` marked `vx.epilogue` joins the op
that produces its first operand, as one `vkd.with_epilogue`.

fuse-pointwise marks a pointwise region as the epilogue of a producer whose
kernel can apply it right before storing (`HOSTS_EPILOGUE` in the vx
dialect: conv, conv_transpose, matmul, gemm, pool, reduce). In a Vulkan
segment this pass merges the two when

- the producer has one result, read only by the epilogue (as operand 0),
- the producer's kernel family registered as a host (`kernels.epilogues`),
- and the merged op passes the Vulkan gate on the module's target (the
  generated body must compile against the producer's output, e.g. a
  broadcast extra it cannot index is refused and the two stay apart).

The merged op stands where the epilogue stood (its extra operands, such as
a residual, may be computed after the producer). CPU segments are left
alone: the CPU runs the two ops as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from vknn.dialects import vkd, vx
from vknn.ir.to_plan import op_attrs, region_steps, tensor_spec
from vknn.kernels.epilogues import EPILOGUE_ATTR, HOSTS
from vknn.runtime.plan import Step
from vknn.runtime.target import Target
from vknn.transforms.target_option import module_target
from vknn.transforms.vx_graph import node_name


def _in_vulkan_segment(op: Operation) -> bool:
    parent = op.parent_op()
    return isinstance(parent, vkd.SegmentOp) and parent.backend.data == "vulkan"


def merged_step(host: Operation, epi: Operation) -> tuple[Step, list]:
    """The step the merged op is (as `segment_steps` builds it) and its input specs."""
    operands = [*host.operands, *epi.operands[1:]]
    specs = [tensor_spec(f"in{i}", v.type) for i, v in enumerate(operands)]
    attrs = op_attrs(host)
    attrs[EPILOGUE_ATTR] = {
        "region": region_steps(epi.regions[0].block),
        "inputs": len(epi.operands) - 1,
        "node": node_name(epi),
        "nodes": list(op_attrs(epi).get("vx.fused_names") or [node_name(epi)]),
    }
    out = tensor_spec(f"{node_name(epi)}:0", epi.results[0].type)
    step = Step(
        host.name, node_name(host), list(range(len(operands))), [len(operands)], [out], attrs
    )
    return step, specs


@dataclass
class MergeEpilogue(RewritePattern):
    target: Target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, epi: vx.FusedPointwiseOp, rewriter: PatternRewriter) -> None:
        from vknn.kernels import gate

        if "vx.epilogue" not in epi.attributes or not _in_vulkan_segment(epi):
            return
        if len(epi.results) != 1 or not epi.operands:
            return
        host = epi.operands[0].owner
        if not isinstance(host, Operation) or host.parent_block() is not epi.parent_block():
            return
        if host.name not in HOSTS or len(host.results) != 1:
            return
        if host.results[0].uses.get_length() != 1:
            return
        step, specs = merged_step(host, epi)
        if gate(step, self.target, specs) is not None:
            return
        operands = [*host.operands, *epi.operands[1:]]
        body = Block(arg_types=[v.type for v in operands])
        args = list(body.args)
        n_host = len(host.operands)
        new_host = host.clone()
        new_epi = epi.clone()
        for i in range(n_host):
            new_host.operands[i] = args[i]
        new_epi.operands[0] = new_host.results[0]
        for i in range(1, len(epi.operands)):
            new_epi.operands[i] = args[n_host + i - 1]
        body.add_ops([new_host, new_epi, vkd.YieldOp(new_epi.results[0])])
        merged = vkd.WithEpilogueOp(operands, epi.results[0].type, Region(body))
        for key in (vkd.BACKEND_ATTR, "onnx.name"):
            if key in host.attributes:
                merged.attributes[key] = host.attributes[key]
        names = [node_name(host)] + [
            n for n in step.attrs[EPILOGUE_ATTR]["nodes"] if n != node_name(host)
        ]
        merged.attributes["onnx.name"] = StringAttr(node_name(host))
        merged.attributes["vkd.nodes"] = StringAttr(",".join(names))
        rewriter.replace(epi, merged, merged.results)
        rewriter.erase(host)


@dataclass(frozen=True)
class MergeEpiloguesPass(ModulePass):
    """Merge marked epilogues into their producers in Vulkan segments."""

    name = "merge-epilogues"

    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MergeEpilogue(target)]), apply_recursively=False
        ).rewrite_module(op)
