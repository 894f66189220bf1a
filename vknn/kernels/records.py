"""What kernel recorders produce: dispatches and copies over symbolic buffers.

A recorder never sees a device. It asks its `RecordContext` for a kernel
(`KernelKey`: shader variant, specialization constants, binding count,
push-constant size, local size) and binds `TensorRef`s, byte ranges of
*symbolic* buffers: whatever the caller handed it (the vx -> vkd conversion
passes the SSA values of `vkd.alloc` / `vkd.weight` ops; the autotuner its
scratch buffers). The result is plain data that `convert-vx-to-vkd` writes
into the `vkd` module as `vkd.dispatch` / `vkd.copy` ops, exactly what the
runtime will record.

This module must not import xDSL or touch a device.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

SpecValue = int | float | bool


@dataclass(frozen=True)
class KernelKey:
    """One pipeline: what `vkd.kernel` declares."""

    shader: str
    """A family (`conv`) or a registered variant (`conv@<hash>`, shaders.py)."""
    variant: str
    """Storage variant: "fp32" or "fp16"."""
    spec: tuple[tuple[int, SpecValue], ...]
    """(constant_id, value) beyond constant 0, which is always the local size x."""
    bindings: int
    push_size: int
    fastmath: bool = False
    local_size_x: int = 1

    @property
    def local_size(self) -> tuple[int, int, int]:
        return (self.local_size_x, 1, 1)


@dataclass(frozen=True)
class TensorRef:
    """A byte range of a symbolic buffer."""

    buffer: Hashable
    offset: int
    nbytes: int


@dataclass
class Binding:
    """Storage-buffer binding i of a dispatch: a byte range of a buffer."""

    buffer: Hashable
    offset: int
    nbytes: int
    write: bool = False


@dataclass
class Dispatch:
    kernel: KernelKey
    bindings: list[Binding]
    push: bytes
    groups: tuple[int, int, int]
    op_index: int = 0
    """Dispatches with equal op_index (and phase) belong to one op and need no
    barrier between them; see `conv.OpPhase` for multi-pass ops."""
    label: str = ""

    @property
    def pipeline(self) -> KernelKey:
        """Recorders written against pipelines read `.pipeline.local_size_x`."""
        return self.kernel


@dataclass
class Copy:
    src: Hashable
    src_offset: int
    dst: Hashable
    dst_offset: int
    nbytes: int
    op_index: int = -1


Record = Dispatch | Copy
