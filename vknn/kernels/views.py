"""Strided views: copy-free data movement for kernels that address their
operands through strides.

Every flat device tensor is row-major (NC4HW4 ones, `layouts.py`, are not
views of anything: with packing on, a chain stops before a tensor a step
labelled nc4hw4 produced), so a reshape, a transpose, a gather of one
constant index or a positive-step slice of a tensor is an affine *view* of
its memory: element i of the result is at `offset + sum(i_d * strides[d])`.
`fold_views(steps, ...)` (run by each `VulkanExecutor` before it gates and
records) walks such chains back from the operands of a kernel that takes
strided operands (`register_strided`) and lets the kernel read the chain's
source directly: the step's input slot becomes the source and
`VIEWS_ATTR[position]` the view. Symmetrically, a kernel that writes through
strides may store straight into the result of a bijective chain (transposes,
reshapes) that is its output's only reader (`OUT_VIEW_ATTR`). Chain steps no
longer read by anything are dropped, so e.g. the head split and merge of an
attention block (`Reshape -> Transpose(0, 2, 1, 3)`) run no copy.

Plain steps in, new steps out (the caller's steps are not modified); no
device, no xDSL, no CPU backend. A segment's outputs are never folded away.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from vknn.runtime.plan import NO_VALUE, Step, TensorSpec

VIEWS_ATTR = "vk.views"
"""On a step: {input position: (offset, shape, strides)}, the logical operand
as a view of the memory of the slot now at that position (elements)."""
OUT_VIEW_ATTR = "vk.out_view"
"""On a step: (offset, shape, strides), where output 0's logical elements go
in the memory of the slot now in outputs[0]."""


@dataclass(frozen=True)
class View:
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def as_attr(self) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        return (self.offset, self.shape, self.strides)


def contiguous(shape: Sequence[int]) -> View:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(1, shape[d + 1])
    return View(0, tuple(shape), tuple(strides))


def input_view(step: Step, position: int, shape: Sequence[int]) -> View:
    """The logical operand at input `position` (present inputs) of `step`,
    whose slot holds a tensor of `shape`."""
    v = step.attrs.get(VIEWS_ATTR, {}).get(position)
    return contiguous(shape) if v is None else View(v[0], tuple(v[1]), tuple(v[2]))


def output_view(step: Step, shape: Sequence[int]) -> View:
    """Where output 0's logical elements go in its slot (a tensor of `shape`)."""
    v = step.attrs.get(OUT_VIEW_ATTR)
    return contiguous(shape) if v is None else View(v[0], tuple(v[1]), tuple(v[2]))


# -- the view algebra -----------------------------------------------------------


def reshape(v: View, shape: Sequence[int]) -> View | None:
    """`v` reshaped (row-major) without a copy, if its strides allow (numpy's
    no-copy reshape: every group of old dims merged or split must be
    contiguous within itself)."""
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) != math.prod(v.shape) or 0 in shape:
        return None
    old = [(d, s) for d, s in zip(v.shape, v.strides, strict=True) if d != 1]
    new = [i for i, d in enumerate(shape) if d != 1]
    strides = [0] * len(shape)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        oj, nj = oi + 1, ni + 1
        osz, nsz = old[oi][0], shape[new[ni]]
        while osz != nsz:
            if osz < nsz:
                osz *= old[oj][0]
                oj += 1
            else:
                nsz *= shape[new[nj]]
                nj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None  # the group is not one contiguous run
        stride = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            strides[new[k]] = stride
            stride *= shape[new[k]]
        oi, ni = oj, nj
    return View(v.offset, shape, tuple(strides))


def transpose(v: View, perm: Sequence[int]) -> View:
    return View(v.offset, tuple(v.shape[p] for p in perm), tuple(v.strides[p] for p in perm))


def take(v: View, axis: int, index: int, index_shape: Sequence[int]) -> View | None:
    """Gather of one index along `axis` (the indices tensor has one element
    and shape `index_shape`, whose dims replace the axis)."""
    dim = v.shape[axis]
    if index < 0:
        index += dim
    if not 0 <= index < dim:
        return None
    return View(
        v.offset + index * v.strides[axis],
        (*v.shape[:axis], *index_shape, *v.shape[axis + 1 :]),
        (*v.strides[:axis], *(0 for _ in index_shape), *v.strides[axis + 1 :]),
    )


def slice_(
    v: View, starts: Sequence[int], steps: Sequence[int], shape: Sequence[int]
) -> View | None:
    if any(s <= 0 for s in steps):
        return None  # negative strides: not for uint addressing
    return View(
        v.offset + sum(int(b) * s for b, s in zip(starts, v.strides, strict=True)),
        tuple(shape),
        tuple(s * int(st) for s, st in zip(v.strides, steps, strict=True)),
    )


def step_view(step: Step, v: View, constants: Mapping[int, np.ndarray]) -> View | None:
    """The view of `step`'s result when its data input is the view `v`
    (None: the step is no view op, or this one needs a copy)."""
    out = tuple(step.out_specs[0].shape)
    if step.op in ("vx.reshape", "vx.convert_layout"):
        return reshape(v, out)
    if step.op == "vx.transpose":
        return transpose(v, [int(p) for p in step.attrs["perm"]])
    if step.op == "vx.gather":
        idx = constants.get(step.inputs[1]) if len(step.inputs) > 1 else None
        if idx is None or idx.size != 1 or idx.dtype.kind not in "iu":
            return None
        return take(v, int(step.attrs["axis"]), int(idx.reshape(())), idx.shape)
    if step.op == "vx.slice":
        return slice_(v, step.attrs["starts"], step.attrs["steps"], out)
    return None


def inverse_view(step: Step, v: View, in_shape: Sequence[int]) -> View | None:
    """For a bijective view op (reshape, transpose): the view of its *input*
    when its result is the view `v`."""
    if step.op in ("vx.reshape", "vx.convert_layout"):
        return reshape(v, in_shape)
    if step.op == "vx.transpose":
        perm = [int(p) for p in step.attrs["perm"]]
        return transpose(v, list(np.argsort(perm)))
    return None


VIEW_OPS = frozenset({"vx.reshape", "vx.convert_layout", "vx.transpose", "vx.gather", "vx.slice"})
BIJECTIVE_OPS = frozenset({"vx.reshape", "vx.convert_layout", "vx.transpose"})
ALIAS_OPS = frozenset({"vx.reshape", "vx.convert_layout"})
"""View ops the executor already runs as aliases of their input."""


# -- kernels that take views ------------------------------------------------------

AcceptInput = Callable[[Step, int, View], bool]
AcceptOutput = Callable[[Step, View], bool]


@dataclass(frozen=True)
class StridedKernel:
    inputs: AcceptInput
    """(step, input position, view) -> whether the kernel reads that operand so."""
    output: AcceptOutput | None = None
    """(step, view) -> whether the kernel writes output 0 so."""


STRIDED: dict[str, StridedKernel] = {}


def register_strided(op: str, inputs: AcceptInput, output: AcceptOutput | None = None) -> None:
    STRIDED[op] = StridedKernel(inputs, output)


# -- the plan transform -------------------------------------------------------------


def fold_views(
    steps: Sequence[Step],
    input_specs: Mapping[int, TensorSpec],
    constants: Mapping[int, np.ndarray],
    keep: Iterable[int],
    through_packed: bool = True,
) -> list[Step]:
    """`steps` with view chains folded into the strided kernels that read or
    write them (module docstring); `keep`: slots that must stay materialized
    (the segment's outputs). `through_packed=False`: a chain stops at a
    `vx.convert_layout` from or to NC4HW4 (that tensor may be stored packed,
    which no stride describes; `layouts.py`)."""
    steps = list(steps)
    if not any(s.op in STRIDED for s in steps):
        return steps
    keep = set(keep)
    shapes: dict[int, tuple[int, ...]] = {s: tuple(t.shape) for s, t in input_specs.items()}
    shape_of = getattr(constants, "shape_of", None)  # lazy constants know shapes unloaded
    shapes.update({s: shape_of(s) if shape_of else tuple(constants[s].shape) for s in constants})
    specs: dict[int, TensorSpec] = {}
    producer: dict[int, int] = {}
    for i, st in enumerate(steps):
        for slot, spec in zip(st.outputs, st.out_specs, strict=False):
            producer[slot] = i
            shapes[slot] = tuple(spec.shape)
            specs[slot] = spec
    readers: dict[int, list[int]] = {}
    for i, st in enumerate(steps):
        for slot in st.inputs:
            readers.setdefault(slot, []).append(i)
    dropped: set[int] = set()

    for i, st in enumerate(steps):
        kernel = STRIDED.get(st.op)
        if kernel is None:
            continue
        inputs = list(st.inputs)
        views = dict(st.attrs.get(VIEWS_ATTR, {}))
        present = [s for s in inputs if s != NO_VALUE]
        for pos, slot in enumerate(present):
            found = _fold_input(
                st, pos, slot, steps, producer, shapes, constants, kernel, through_packed
            )
            if found is None:
                continue
            base, view = found
            inputs[_nth(inputs, pos)] = base
            views[pos] = view.as_attr()
        attrs = dict(st.attrs)
        if views:
            attrs[VIEWS_ATTR] = views
        outputs, out_specs = list(st.outputs), list(st.out_specs)
        if kernel.output is not None and len(outputs) == 1 and outputs[0] not in keep:
            chain = _fold_output(
                st, outputs[0], steps, readers, shapes, keep, kernel.output, through_packed
            )
            if chain is not None:
                last, view, members = chain
                outputs, out_specs = [last], [specs[last]]
                attrs[OUT_VIEW_ATTR] = view.as_attr()
                dropped.update(members)
                for j in members:
                    del producer[steps[j].outputs[0]]
                producer[last] = i
        if inputs != st.inputs or attrs != st.attrs or outputs != st.outputs:
            steps[i] = replace(st, inputs=inputs, outputs=outputs, out_specs=out_specs, attrs=attrs)

    kept = [st for i, st in enumerate(steps) if i not in dropped]
    return _drop_dead_views(kept, keep)


def _nth(inputs: list[int], pos: int) -> int:
    """The index in `inputs` (with NO_VALUE holes) of present input `pos`."""
    n = -1
    for i, s in enumerate(inputs):
        if s != NO_VALUE:
            n += 1
            if n == pos:
                return i
    raise IndexError(pos)


def _fold_input(
    st: Step, pos: int, slot: int, steps: list[Step], producer: dict[int, int],
    shapes: dict[int, tuple[int, ...]], constants: Mapping[int, np.ndarray],
    kernel: StridedKernel, through_packed: bool = True,
) -> tuple[int, View] | None:  # fmt: skip
    """(source slot, view) for operand `pos`: the deepest source whose view
    chain to the operand the kernel accepts; None to leave it as it is."""
    chain: list[Step] = []  # view steps, operand first
    s = slot
    while s in producer and steps[producer[s]].op in VIEW_OPS:
        vs = steps[producer[s]]
        if not vs.inputs or vs.inputs[0] == NO_VALUE:
            break
        if not through_packed and (
            _packed_boundary(vs)
            or (vs.inputs[0] in producer and _labelled_packed(steps[producer[vs.inputs[0]]]))
        ):
            break  # the chain would start at a tensor that may be stored packed
        chain.append(vs)
        s = vs.inputs[0]
    for depth in range(len(chain), 0, -1):
        links = chain[:depth]
        if all(vs.op in ALIAS_OPS for vs in links):
            continue  # the executor aliases these already: nothing to fold
        base = links[-1].inputs[0]
        v: View | None = contiguous(shapes[base])
        for vs in reversed(links):
            v = step_view(vs, v, constants) if v is not None else None
        if v is not None and kernel.inputs(st, pos, v):
            return base, v
    return None


def _fold_output(
    st: Step, out: int, steps: list[Step], readers: dict[int, list[int]],
    shapes: dict[int, tuple[int, ...]], keep: set[int], accept: AcceptOutput,
    through_packed: bool = True,
) -> tuple[int, View, list[int]] | None:  # fmt: skip
    """(slot to write, view, chain step indices) for output `out`: the
    longest chain of bijective view steps, each the only reader of the
    previous value, whose end the kernel can write through a view."""
    chain: list[int] = []
    s = out
    while s not in keep and len(readers.get(s, [])) == 1:
        j = readers[s][0]
        vs = steps[j]
        if vs.op not in BIJECTIVE_OPS or vs.inputs[:1] != [s] or len(vs.outputs) != 1:
            break
        if not through_packed and _packed_boundary(vs):
            break
        chain.append(j)
        s = vs.outputs[0]
    for depth in range(len(chain), 0, -1):
        links = [steps[j] for j in chain[:depth]]
        last = links[-1].outputs[0]
        v: View | None = contiguous(shapes[last])
        for vs in reversed(links):
            v = inverse_view(vs, v, shapes[vs.inputs[0]]) if v is not None else None
        if v is not None and v.shape == shapes[out] and accept(st, v):
            return last, v, chain[:depth]
    return None


def _packed_boundary(step: Step) -> bool:
    return step.op == "vx.convert_layout" and "nc4hw4" in (
        step.attrs.get("from"),
        step.attrs.get("to"),
    )


def _labelled_packed(step: Step) -> bool:
    return step.attrs.get("vx.layout") == "nc4hw4"


def _drop_dead_views(steps: list[Step], keep: set[int]) -> list[Step]:
    """Remove view steps whose results nothing reads any more (chains)."""
    while True:
        read = {s for st in steps for s in st.inputs} | keep
        dead = [
            i for i, st in enumerate(steps)
            if st.op in VIEW_OPS and not any(o in read for o in st.outputs)
        ]  # fmt: skip
        if not dead:
            return steps
        gone = set(dead)
        steps = [st for i, st in enumerate(steps) if i not in gone]
