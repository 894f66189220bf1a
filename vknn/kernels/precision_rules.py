"""Named rules of `precision="normal"`: which float tensors stay in fp32.

`normal` is `low` (fp16 storage, fp32 arithmetic) except the tensors these
rules keep in fp32. Each rule is a pure function of a Vulkan segment's steps
(after epilogue merging) and the slots' specs, returning the slots it keeps;
`fp32_slots` runs a rule set and says which rule kept which slot, so a
report can tell a user *why* a tensor is fp32.

The rules (`DEFAULT_RULES`, what `normal` uses):

- `softmax_io`: the input and output of every softmax / log-softmax. exp()
  turns an absolute error of the logits into a relative error of the
  result (fp16 rounds logits of ~100 by 0.03), logits past 65504 saturate,
  and attention probabilities are summed over long rows by their reader.
  (A softmax fused into `vx.attention` keeps scores and probabilities in
  registers, in fp32: nothing to keep there.)
- `layernorm_io`: the input and output of every layer normalization
  (`vx.layernorm`), and of a normalization left decomposed (a `mean`
  reduction whose input is re-read together with the mean: `x - mean(x)`,
  then a variance and a division, fused by fuse-pointwise into a few
  steps; GroupNorm / InstanceNorm exported that way too): its input, the
  mean, the centered values, the variance chain and the normalized output.
  The input is the residual stream of a transformer, whose magnitude
  grows with depth; x - mean(x) cancels, so fp16 rounding of x becomes a
  large relative error of the centered values; squared deviations overflow.
- `sum_out`: the output of sum-like reductions (sum, sum of squares, L1,
  product): it grows with the reduced count past what the inputs' range
  suggests.

`plan_mixed` turns the kept slots into the executor's plan: a kept slot (and
every slot sharing its memory: reshapes) is stored as fp32; every step that
reads or writes a kept slot runs its fp32 shader variant, so the kept value
is computed and consumed without an fp16 round trip; such a step's other
float tensors are converted around it (`kernels/convert_storage.py`) unless
every step touching them runs fp32 too, in which case they are stored fp32
as well (no conversion at all). Kernels bind every float tensor of a step
in one width, hence one variant per step and conversions between.

This module must not import xDSL or the CPU backend, or touch a device.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.dtypes import is_float

Select = Callable[[Sequence[Step], Mapping[int, TensorSpec]], set[int]]


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    """One line for reports and docs."""
    select: Select


RULES: dict[str, Rule] = {}


def rule(name: str, why: str) -> Callable[[Select], Select]:
    def register(fn: Select) -> Select:
        RULES[name] = Rule(name, why, fn)
        return fn

    return register


# Pointwise ops a decomposed normalization's variance chain goes through.
_POINTWISE = ("vx.fused_pointwise", "vx.binary", "vx.unary")
_SUM_LIKE = ("sum", "sum_square", "l1", "prod")
_CHAIN_LIMIT = 8
"""Steps followed from a variance to the division that normalizes."""


def alias_roots(steps: Sequence[Step]) -> dict[int, int]:
    """slot -> the slot whose memory it reinterprets (reshape-like steps,
    transitively); slots absent map to themselves."""
    from vknn.kernels import KERNELS

    parent: dict[int, int] = {}
    for st in steps:
        spec = KERNELS.get(st.op)
        if spec is not None and spec.aliases and st.inputs and st.outputs:
            parent[st.outputs[0]] = st.inputs[0]
    roots: dict[int, int] = {}
    for s in parent:
        r = s
        while r in parent:
            r = parent[r]
        roots[s] = r
    return roots


@rule("softmax_io", "input and output of softmax / log-softmax")
def softmax_io(steps: Sequence[Step], specs: Mapping[int, TensorSpec]) -> set[int]:
    keep: set[int] = set()
    for st in steps:
        if st.op in ("vx.softmax", "vx.log_softmax"):
            keep.add(st.inputs[0])
            keep.update(st.outputs)
    return keep


@rule(
    "layernorm_io",
    "input and output of layer normalization (also decomposed: mean, centered values, variance)",
)
def layernorm_io(steps: Sequence[Step], specs: Mapping[int, TensorSpec]) -> set[int]:
    keep: set[int] = set()
    for st in steps:
        if st.op == "vx.layernorm":
            keep.add(st.inputs[0])
            keep.update(st.outputs)
    keep |= _decomposed_norms(steps)
    return keep


def _decomposed_norms(steps: Sequence[Step]) -> set[int]:
    """The tensors of normalizations written as reductions and pointwise ops:
    mean(x) re-read with x (centering), reductions of the centered values
    (variance), and the pointwise chain from there to the step that reads a
    centered value again (the division: its outputs are the norm's output)."""
    roots = alias_roots(steps)

    def root(s: int) -> int:
        return roots.get(s, s)

    readers: dict[int, list[int]] = {}
    for i, st in enumerate(steps):
        for s in st.inputs:
            if s != NO_VALUE:
                readers.setdefault(root(s), []).append(i)
    keep: set[int] = set()
    for st in steps:
        if st.op != "vx.reduce" or st.attrs.get("kind") != "mean":
            continue
        x, mean = root(st.inputs[0]), root(st.outputs[0])
        centering = [
            j
            for j in readers.get(mean, [])
            if x in {root(s) for s in steps[j].inputs if s != NO_VALUE}
        ]
        if not centering:
            continue
        keep.update((st.inputs[0], st.outputs[0]))
        centered: set[int] = set()
        for j in centering:
            keep.update(steps[j].outputs)
            centered.update(root(o) for o in steps[j].outputs)
        frontier = [
            root(steps[j].outputs[0])
            for c in centered
            for j in readers.get(c, [])
            if steps[j].op == "vx.reduce"
        ]
        keep.update(frontier)
        seen: set[int] = set()
        for _ in range(_CHAIN_LIMIT):
            nxt = []
            for s in frontier:
                for j in readers.get(s, []):
                    if j in seen or steps[j].op not in _POINTWISE:
                        continue
                    seen.add(j)
                    keep.update(steps[j].outputs)
                    ins = {root(t) for t in steps[j].inputs if t != NO_VALUE}
                    if not ins & centered:  # not yet the division: follow on
                        nxt += [root(o) for o in steps[j].outputs]
            if not nxt:
                break
            frontier = nxt
    return keep


@rule("sum_out", "output of sum-like reductions (sum, sum of squares, L1, product)")
def sum_out(steps: Sequence[Step], specs: Mapping[int, TensorSpec]) -> set[int]:
    return {
        o
        for st in steps
        if st.op == "vx.reduce" and st.attrs.get("kind") in _SUM_LIKE
        for o in st.outputs
    }


DEFAULT_RULES: tuple[str, ...] = ("softmax_io", "layernorm_io", "sum_out")
"""The rules of `precision="normal"`."""


def fp32_slots(
    steps: Sequence[Step],
    specs: Mapping[int, TensorSpec],
    rules: Sequence[str] = DEFAULT_RULES,
) -> dict[int, tuple[str, ...]]:
    """Float slot -> the names of the rules in `rules` that keep it in fp32
    (slots of unknown or non-float dtype are left out)."""
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ValueError(f"unknown precision rule(s) {unknown}; known: {sorted(RULES)}")
    out: dict[int, tuple[str, ...]] = {}
    for name in rules:
        for s in sorted(RULES[name].select(steps, specs)):
            spec = specs.get(s)
            if s == NO_VALUE or spec is None or not is_float(spec.dtype):
                continue
            out[s] = (*out.get(s, ()), name)
    return out


@dataclass
class MixedStorage:
    """Where a mixed-storage segment keeps what (`plan_mixed`)."""

    variants: list[str]
    """Per step: the shader variant it runs, "fp16" or "fp32" (aliasing
    steps, which record nothing, keep "fp16")."""
    storage: dict[int, str]
    """Float slot -> "float16" / "float32" (a constant: its first copy)."""
    const_copies: dict[int, list[str]]
    """Constant slot -> the further storages it has a copy in."""
    reasons: dict[int, tuple[str, ...]]
    """Slot -> the rules keeping it (or a slot sharing its memory) in fp32."""


def plan_mixed(
    steps: Sequence[Step],
    specs: Mapping[int, TensorSpec],
    constants: Collection[int],
    rules: Sequence[str] = DEFAULT_RULES,
) -> MixedStorage:
    """Mixed storage of a segment (fp16 by default). The slots `rules` keep,
    and every slot sharing memory with one (reshapes), are stored fp32, and
    every step touching one runs its fp32 variant. Any other float slot is
    fp32 too when every step touching it runs fp32 (converting it would cost
    a dispatch and precision for nothing), else fp16. A constant gets a copy
    in each storage its readers' variants use. Pure: the executor (and any
    printer of its decisions) call it with the steps it records."""
    from vknn.kernels import KERNELS

    kept = fp32_slots(steps, specs, rules)
    roots = alias_roots(steps)
    members: dict[int, list[int]] = {}
    for s in specs:
        members.setdefault(roots.get(s, s), []).append(s)
    reasons: dict[int, tuple[str, ...]] = {}
    for group in members.values():
        why = tuple(dict.fromkeys(n for m in group for n in kept.get(m, ())))
        if why:
            reasons.update({m: why for m in group})
    variants = ["fp16"] * len(steps)
    users: dict[int, set[str]] = {}
    for i, st in enumerate(steps):
        if KERNELS[st.op].aliases:
            continue
        slots = [s for s in (*st.inputs, *st.outputs) if s != NO_VALUE and is_float(specs[s].dtype)]
        if any(s in reasons for s in slots):
            variants[i] = "fp32"
        for s in slots:
            users.setdefault(roots.get(s, s), set()).add(variants[i])
    storage: dict[int, str] = {}
    const_copies: dict[int, list[str]] = {}
    for r, group in members.items():
        if not is_float(specs[r].dtype):
            continue
        used = users.get(r, set())
        if r in constants:
            wanted = ["float32" if v == "fp32" else "float16" for v in sorted(used, reverse=True)]
            if wanted:
                storage.update({m: wanted[0] for m in group})
                const_copies[r] = wanted[1:]
            continue
        fp32 = r in reasons or used == {"fp32"}
        storage.update({m: "float32" if fp32 else "float16" for m in group})
    return MixedStorage(variants, storage, const_copies, reasons)
