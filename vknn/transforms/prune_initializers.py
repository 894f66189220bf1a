"""prune-initializers: drop constants nobody reads and give their bytes back
to the weight store, and merge identical small constants into one.

Weights die as the graph is rewritten (folded batchnorms, dequantized
weights, const-folded shape chains); this pass is where their
`dense_resource` entries are released (`WEIGHTS.release`), so a compiled
model holds only what it runs. Identical small constants (zero points, clip
bounds, shape vectors: at most `max-elements` elements) of the same op kind
and type in the same block become one; the first in the block stays, so it
dominates every use it takes over.

It must leave alone: constants that are used, large constants (comparing
them costs more than it saves, and equal weights in real models are rare),
constants in different blocks, and weight-store entries still named by any
op of the module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from vknn.errors import VknnError
from vknn.ir.constants import to_numpy
from vknn.transforms.dce import release_unreferenced, resource_handles

_CONSTANTS = ("onnx.Constant", "vx.constant")


def _value_attr(op: Operation):
    value = op.properties.get("value")
    return value if value is not None else op.attributes.get("value")


def _key(op: Operation, max_elements: int) -> tuple | None:
    """What makes two constants interchangeable: op kind, type and bytes."""
    attr = _value_attr(op)
    if attr is None or len(op.results) != 1:
        return None
    typ = op.results[0].type
    try:
        value = to_numpy(attr)
    except VknnError:
        return None  # a resource without data: nothing to compare
    if value.size > max_elements:
        return None
    return (op.name, typ, np.ascontiguousarray(value).tobytes())


@dataclass(frozen=True)
class PruneInitializersPass(ModulePass):
    """Erase unused constants (releasing their weights); dedupe small identical ones."""

    name = "prune-initializers"

    max_elements: int = 4096
    """Largest constant (in elements) compared for deduplication; 0 turns dedupe off."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_elements < 0:
            raise VknnError(
                f"prune-initializers: max-elements must be >= 0, got {self.max_elements}"
            )
        released: set[str] = set()
        blocks = {o.parent_block() for o in op.walk() if o.name in _CONSTANTS}
        for block in blocks:
            if block is not None and self.max_elements:
                released |= self._dedupe(block)
        for o in reversed(list(op.walk())):
            if o.name in _CONSTANTS and not any(r.uses for r in o.results):
                released |= resource_handles(o)
                o.detach()
                o.erase()
        release_unreferenced(op, released)

    def _dedupe(self, block: Block) -> set[str]:
        first: dict[tuple, Operation] = {}
        released: set[str] = set()
        for o in list(block.ops):
            if o.name not in _CONSTANTS:
                continue
            key = _key(o, self.max_elements)
            if key is None:
                continue
            keep = first.setdefault(key, o)
            if keep is o:
                continue
            o.results[0].replace_all_uses_with(keep.results[0])
            released |= resource_handles(o)
            o.detach()
            o.erase()
        return released
