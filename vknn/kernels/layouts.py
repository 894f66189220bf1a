"""NC4HW4 device storage: which steps run packed and where tensors are packed.

A packed (NC4HW4) tensor of logical shape [N, C, H, W] is stored as
[N, ceil(C/4), H, W, 4]: element (n, c, h, w) is at
`((n * C4 + c / 4) * H * W + h * W + w) * 4 + c % 4`. The padded lanes of the
last channel block (C not a multiple of 4) hold unspecified values: no
kernel reads them as data.

The compiler labels every vx op with a layout (`vx.layout`, assign-layouts
pass). The executor honours that label where the step's kernel can run on
packed operands (`KernelSpec.nc4hw4`, a pure function of the step and its
input specs giving the input/output positions it reads/writes packed) and
`plan_layouts` derives the storage from it:

- a step runs packed iff its label is nc4hw4, its kernel accepts the step
  (a layout-agnostic one, `nc4hw4_follows`, only when an operand it reads
  packed is stored packed),
  none of the inputs it would read packed is a constant, and every constant
  its kernel wants transformed (`KernelSpec.packed_constants`: a packed conv
  reads its weight as OHWI, so the K axis of its GEMM runs over channels,
  contiguous in NC4HW4) is a plain constant of the segment; the executor
  uploads that transformed copy (`const_forms`);
- a slot is stored packed iff its producer runs packed and writes it packed,
  and it is not an output of the segment (the host reads NCHW);
- segment inputs and constants are stored flat (the host writes NCHW).

Where a step reads a tensor in the other layout (or width) than it is
stored in, the executor converts it into a scratch first, one conversion per
tensor and form (`kernels/convert_storage.py`); a reshape or convert_layout
of a packed tensor unpacks it (no longer an alias). So the IR's
`vx.convert_layout` ops are where layouts change, and a kernel that cannot
read packed data still gets correct operands.

Pure: plain steps and specs in, a plan out. No device, no xDSL.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from vknn.runtime.plan import NO_VALUE, Step, TensorSpec

PACKED = "nc4hw4"
FLAT = "flat"
LAYOUT_ATTR = "vx.layout"
DEVICE_LAYOUTS = ("nc4hw4", "flat")
"""`Config.device_layout`: honour the compiler's NC4HW4 labels, or store
every device tensor flat (row-major) as before."""


def packable(spec: TensorSpec) -> bool:
    """A tensor that may be stored packed: rank-4 float (N, C, H, W)."""
    return len(spec.shape) == 4 and spec.dtype in ("float32", "float16")


def packed_numel(shape: Sequence[int]) -> int:
    """Elements of the packed storage of `shape` (rank 4): channels padded to 4."""
    n, c, h, w = (int(d) for d in shape)
    return n * (-(-c // 4) * 4) * h * w


def padded_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """A flat shape with the packed storage's element count: [N, C4*4, H, W].
    Elementwise kernels over same-shape packed operands run on it unchanged."""
    n, c, h, w = (int(d) for d in shape)
    return (n, -(-c // 4) * 4, h, w)


def block_shape(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """A packed [N, C, H, W] with C % 4 == 0 as a flat [N, C/4, H, W*4]: a
    channel concat or slice at multiples of 4 is the same op on it."""
    n, c, h, w = (int(d) for d in shape)
    assert c % 4 == 0, shape
    return (n, c // 4, h, w * 4)


def pack(x: np.ndarray) -> np.ndarray:
    """NCHW -> packed (host; tests and reference), padded lanes zero."""
    n, c, h, w = x.shape
    c4 = -(-c // 4)
    out = np.zeros((n, c4 * 4, h, w), x.dtype)
    out[:, :c] = x
    return np.ascontiguousarray(out.reshape(n, c4, 4, h, w).transpose(0, 1, 3, 4, 2))


def unpack(p: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Packed storage (any shape with the right element count) -> NCHW `shape`."""
    n, c, h, w = (int(d) for d in shape)
    c4 = -(-c // 4)
    blocks = np.asarray(p).reshape(n, c4, h, w, 4).transpose(0, 1, 4, 2, 3)
    return np.ascontiguousarray(blocks.reshape(n, c4 * 4, h, w)[:, :c])


TensorArgLike = TypeVar("TensorArgLike", bound=Any)
Nc4hw4Io = tuple[frozenset[int], frozenset[int]]
"""(input positions, output positions) a step reads / writes packed; positions
count the step's present inputs (absent optional operands dropped)."""


def _ohwi(w: np.ndarray) -> np.ndarray:
    """A conv weight [M, Cg, KH, KW] as [M, KH, KW, Cg]."""
    return np.ascontiguousarray(np.asarray(w).transpose(0, 2, 3, 1))


CONST_TRANSFORMS = {"ohwi": _ohwi}
"""Named host transforms of constants a packed kernel reads (`const_forms`)."""


@dataclass
class LayoutPlan:
    packed_steps: list[Nc4hw4Io | None]
    """Per step: its packed positions when it runs packed, else None."""
    packed_slots: set[int] = field(default_factory=set)
    """Slots stored packed."""
    const_forms: dict[tuple[int, int], str] = field(default_factory=dict)
    """(step, input position) -> the `CONST_TRANSFORMS` name of the constant
    copy that packed step reads there."""

    def step_packed(self, i: int) -> bool:
        return self.packed_steps[i] is not None

    def wants_packed(self, i: int, position: int) -> bool:
        io = self.packed_steps[i]
        return io is not None and position in io[0]

    def writes_packed(self, i: int, position: int) -> bool:
        io = self.packed_steps[i]
        return io is not None and position in io[1]


def plan_layouts(
    steps: Sequence[Step],
    specs: Mapping[int, TensorSpec],
    constants: Collection[int],
    outputs: Collection[int],
    enabled: bool = True,
    max_bytes: int | None = None,
) -> LayoutPlan:
    """Which steps run packed and which slots are stored packed (module
    docstring). `enabled=False`: everything flat. `max_bytes` (the device's
    maxStorageBufferRange): a step whose packed tensors (channels padded to
    4, 4 bytes per element) would not fit one binding runs flat."""
    from vknn.kernels import KERNELS

    plan = LayoutPlan([None] * len(steps))
    if not enabled:
        return plan
    outs = set(outputs)
    for i, st in enumerate(steps):
        if st.attrs.get(LAYOUT_ATTR) != PACKED:
            continue
        kernel = KERNELS.get(st.op)
        if kernel is None or kernel.nc4hw4 is None or kernel.aliases:
            continue
        present = [s for s in st.inputs if s != NO_VALUE]
        in_specs = [specs[s] for s in present]
        io = kernel.nc4hw4(st, in_specs)
        if io is None:
            continue
        ins, outs_p = io
        if any(present[p] in constants or not packable(in_specs[p]) for p in ins):
            continue
        if kernel.nc4hw4_follows and not any(present[p] in plan.packed_slots for p in ins):
            continue
        if any(not packable(st.out_specs[p]) for p in outs_p):
            continue
        if max_bytes is not None and any(
            4 * packed_numel(t.shape) > max_bytes
            for t in [*(in_specs[p] for p in ins), *(st.out_specs[p] for p in outs_p)]
        ):
            continue
        forms = kernel.packed_constants(st, in_specs) if kernel.packed_constants else {}
        if any(present[p] not in constants for p in forms):
            continue  # e.g. a weight computed at run time: no host copy to transform
        plan.packed_steps[i] = io
        plan.const_forms.update({(i, p): name for p, name in forms.items()})
        for p in outs_p:
            if st.outputs[p] not in outs:
                plan.packed_slots.add(st.outputs[p])
    return plan


# -- helpers for the kernels' `nc4hw4` functions --------------------------------


def channel_vector(shape: Sequence[int], out: Sequence[int]) -> bool:
    """`shape` broadcasts along H and W only ([N or 1, C, 1, 1] or [C, 1, 1])
    to a rank-4 `out` whose C is a multiple of 4: then it reads as
    [n, C/4, 1, 1, 4] against the packed [N, C/4, H, W, 4] (`as_padded`)
    with no padded lane to read past its end."""
    s = (1,) * (4 - len(shape)) + tuple(int(d) for d in shape)
    return (
        len(shape) in (3, 4)
        and len(out) == 4
        and out[1] % 4 == 0
        and s[1] == out[1] > 1
        and s[2] == s[3] == 1
        and s[0] in (1, out[0])
    )


def same_shape_positions(
    out: TensorSpec,
    in_specs: Sequence[TensorSpec],
    positions: Sequence[int],
    channel_vectors: bool = False,
) -> frozenset[int] | None:
    """Of the inputs at `positions`, those read packed alongside a packed
    `out`: inputs of exactly out's shape (read at out's packed index). A
    one-element input reads the same in both layouts and stays flat, and so
    does a `channel_vector` when the kernel allows them (`as_padded` views
    it as blocks of 4 channels); any other broadcast needs row-major indices:
    None (the step runs flat)."""
    packed: set[int] = set()
    for p in positions:
        spec = in_specs[p]
        if tuple(spec.shape) == tuple(out.shape):
            if not packable(spec):
                return None
            packed.add(p)
        elif int(np.prod(spec.shape)) == 1:
            continue
        elif not (channel_vectors and channel_vector(spec.shape, out.shape)):
            return None
    return frozenset(packed)


def elementwise_nc4hw4(step: Step, in_specs: list[TensorSpec]) -> Nc4hw4Io | None:
    """Elementwise kernels (unary, binary, fused pointwise): packed when every
    result is rank-4 float of one shape and every input has that shape or one
    element; the kernel then runs over the padded element count unchanged."""
    outs = step.out_specs
    if not outs or not all(packable(o) and o.shape == outs[0].shape for o in outs):
        return None
    ins = same_shape_positions(outs[0], in_specs, range(len(in_specs)), channel_vectors=True)
    if not ins:
        return None
    return ins, frozenset(range(len(outs)))


def as_padded(args: list[TensorArgLike]) -> list[TensorArgLike]:
    """The operands of an elementwise kernel running packed, as row-major
    tensors with the same element order: a packed [N, C, H, W] as
    [N, C4, H, W, 4] (its storage), a flat channel vector [n, C, 1, 1] as
    [n, C/4, 1, 1, 4] (C % 4 == 0), one-element operands as they are. Args
    with nothing packed are returned unchanged."""
    packed = [a for a in args if a.packed]
    if not packed:
        return args
    out = []
    for a in args:
        if a.packed:
            n, c, h, w = padded_shape(a.shape)
            out.append(replace(a, shape=(n, c // 4, h, w, 4)))
        elif channel_vector(a.shape, packed[0].shape):
            s = (1,) * (4 - len(a.shape)) + tuple(a.shape)
            out.append(replace(a, shape=(s[0], s[1] // 4, 1, 1, 4)))
        else:
            out.append(a)
    return out
