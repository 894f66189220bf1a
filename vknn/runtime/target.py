"""`Target`: what a compiled module may rely on about the device it runs on.

The compiler decides every dispatch for one target (kernel variant, local
size, tiles, group counts, bindings within maxStorageBufferRange, storage
forms, staging copies); the runtime checks, before it builds anything, that
the device at hand satisfies it (`unmet`) and then replays the module. The
target travels inside the compiled module as a plain dict (`to_dict`), so
this module is shared by both halves and imports neither: no xDSL, no device.

Named presets (`generic`, `lavapipe`, `nvidia`) and `from-device` live on the
compiler side (`vknn/kernels/targets.py`); this file is only the schema.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

MEMORY_MODELS = ("unified", "rebar", "staging")
"""How host and device exchange tensors, as the compiled module records it:

- `unified`: device memory is host-visible and host-cached enough to read
  (lavapipe, integrated GPUs): inputs are written and outputs read in place;
- `rebar`: device memory is host-visible (a discrete GPU with resizable
  BAR): inputs are written in place, outputs are copied at the end of the
  command buffer into host-cached memory (the CPU reads VRAM uncached);
- `staging`: neither: inputs and outputs go through host-visible staging
  buffers and recorded copies."""

CoopMatShape = tuple[int, int, int, str, str, str, str, str]
"""(M, N, K, A type, B type, C type, result type, scope), e.g.
(16, 16, 16, "f16", "f16", "f32", "f32", "subgroup")."""


@dataclass(frozen=True)
class Target:
    """Device facts the compiler decides with (the fields kernel gates and
    recorders read keep DeviceCaps' names, so one spec serves both)."""

    name: str = "generic"
    api_version: tuple[int, int, int] = (1, 2, 0)
    max_compute_work_group_count: tuple[int, int, int] = (65535, 65535, 65535)
    max_compute_work_group_size: tuple[int, int, int] = (128, 128, 64)
    max_compute_work_group_invocations: int = 128
    max_compute_shared_memory_size: int = 16384
    max_storage_buffer_range: int = 1 << 27
    max_push_constants_size: int = 128
    min_storage_buffer_offset_alignment: int = 256
    subgroup_size: int = 1
    """The subgroup size kernels may assume as a minimum (1: no subgroup ops)."""
    subgroup_arithmetic: bool = False
    has_fp16_storage: bool = False
    has_fp16_arith: bool = False
    has_int64: bool = False
    """shaderInt64: 64-bit integer arithmetic (exact int64 tensors on the device)."""
    has_float_controls2: bool = False
    rte_fp16: bool = False
    signed_zero_inf_nan_preserve_fp32: bool = False
    signed_zero_inf_nan_preserve_fp16: bool = False
    cooperative_matrix: tuple[CoopMatShape, ...] = ()
    memory: str = "staging"

    def __post_init__(self) -> None:
        if self.memory not in MEMORY_MODELS:
            raise ValueError(f"target memory model {self.memory!r}: one of {MEMORY_MODELS}")

    # DeviceCaps compatibility for kernel code written against caps.
    @property
    def has_cooperative_matrix(self) -> bool:
        return bool(self.cooperative_matrix)

    @property
    def has_device_local_host_visible(self) -> bool:
        return self.memory != "staging"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["api_version"] = list(self.api_version)
        d["max_compute_work_group_count"] = list(self.max_compute_work_group_count)
        d["max_compute_work_group_size"] = list(self.max_compute_work_group_size)
        d["cooperative_matrix"] = [list(s) for s in self.cooperative_matrix]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Target:
        """The target of a compiled module; unknown keys or wrong types are a
        ValueError (the caller names the file)."""
        if not isinstance(d, dict):
            raise ValueError("target is not a map")
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in d.items():
            if key not in known:
                raise ValueError(f"unknown target field {key!r}")
            default = getattr(cls(), key)
            kwargs[key] = _coerce(key, value, default)
        return cls(**kwargs)

    def with_(self, **changes: Any) -> Target:
        return replace(self, **changes)


def _coerce(key: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"target field {key!r} must be a bool")
        return value
    if isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"target field {key!r} must be a non-negative int")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ValueError(f"target field {key!r} must be a string")
        return value
    if key == "cooperative_matrix":
        if not isinstance(value, list | tuple):
            raise ValueError("target field 'cooperative_matrix' must be a list")
        out = []
        for s in value:
            if not isinstance(s, list | tuple) or len(s) != 8:
                raise ValueError("a cooperative_matrix entry has 8 fields")
            m, n, k, *types = s
            if not all(isinstance(x, int) and x > 0 for x in (m, n, k)) or not all(
                isinstance(t, str) for t in types
            ):
                raise ValueError("a cooperative_matrix entry is (M, N, K, 5 type/scope names)")
            out.append((m, n, k, *types))
        return tuple(out)
    if isinstance(default, tuple):
        if (
            not isinstance(value, list | tuple)
            or len(value) != len(default)
            or not all(isinstance(x, int) and x >= 0 for x in value)
        ):
            raise ValueError(f"target field {key!r} must be {len(default)} non-negative ints")
        return tuple(value)
    raise ValueError(f"target field {key!r} has an unsupported type")


def unmet(target: Target, caps: Any) -> str | None:
    """Why a device with `caps` (`vulkan.caps.DeviceCaps`) cannot run code
    compiled for `target`, naming the first capability it lacks; None if it can."""
    t, c = target, caps
    if tuple(c.api_version[:2]) < tuple(t.api_version[:2]):
        have = f"{c.api_version[0]}.{c.api_version[1]}"
        return f"Vulkan {t.api_version[0]}.{t.api_version[1]} (the device has {have})"
    limits = [
        ("maxComputeWorkGroupInvocations", c.max_compute_work_group_invocations,
         t.max_compute_work_group_invocations),
        ("maxComputeSharedMemorySize", c.max_compute_shared_memory_size,
         t.max_compute_shared_memory_size),
        ("maxStorageBufferRange", c.max_storage_buffer_range, t.max_storage_buffer_range),
        ("maxPushConstantsSize", c.max_push_constants_size, t.max_push_constants_size),
    ]  # fmt: skip
    for i, axis in enumerate("xyz"):
        limits.append(
            (f"maxComputeWorkGroupCount[{axis}]", c.max_compute_work_group_count[i],
             t.max_compute_work_group_count[i])
        )  # fmt: skip
        limits.append(
            (f"maxComputeWorkGroupSize[{axis}]", c.max_compute_work_group_size[i],
             t.max_compute_work_group_size[i])
        )  # fmt: skip
    for what, have, need in limits:
        if have < need:
            return f"{what} >= {need} (the device has {have})"
    align = c.min_storage_buffer_offset_alignment
    if t.min_storage_buffer_offset_alignment % max(1, align):
        return (
            f"minStorageBufferOffsetAlignment dividing {t.min_storage_buffer_offset_alignment} "
            f"(the device needs {align})"
        )
    if t.subgroup_size > 1 and c.subgroup_size < t.subgroup_size:
        return f"subgroups of at least {t.subgroup_size} lanes (the device has {c.subgroup_size})"
    features = [
        ("16-bit storage buffers", t.has_fp16_storage, c.has_fp16_storage),
        ("shaderFloat16", t.has_fp16_arith, c.has_fp16_arith),
        ("shaderInt64", t.has_int64, getattr(c, "has_int64", False)),
        ("VK_KHR_shader_float_controls2 (enabled)", t.has_float_controls2, c.has_float_controls2),
        ("shaderRoundingModeRTEFloat16", t.rte_fp16, c.rte_fp16),
        ("shaderSignedZeroInfNanPreserveFloat32", t.signed_zero_inf_nan_preserve_fp32,
         c.signed_zero_inf_nan_preserve_fp32),
        ("shaderSignedZeroInfNanPreserveFloat16", t.signed_zero_inf_nan_preserve_fp16,
         c.signed_zero_inf_nan_preserve_fp16),
        ("device-local host-visible memory", t.memory != "staging",
         c.has_device_local_host_visible),
    ]  # fmt: skip
    for what, need, have in features:
        if need and not have:
            return what
    if t.cooperative_matrix and c.subgroup_size != t.subgroup_size:
        # The coopmat kernels lay 4 subgroups of exactly this size over a tile.
        return (
            f"subgroups of exactly {t.subgroup_size} lanes for cooperative-matrix kernels "
            f"(the device has {c.subgroup_size})"
        )
    have_cm = set(getattr(c, "cooperative_matrix_shapes", ()) or ())
    for shape in t.cooperative_matrix:
        if tuple(shape) not in have_cm:
            return f"cooperative matrix {shape[0]}x{shape[1]}x{shape[2]} {'/'.join(shape[3:7])}"
    return None


def from_caps(caps: object, name: str = "from-device") -> Target:
    """The target that is exactly what a device (`DeviceCaps`) offers; env
    `VKNN_COOPMAT=0` leaves its cooperative matrices out (the scalar kernels
    then run everywhere, e.g. to measure tensor cores against them)."""
    c = caps
    coopmat = tuple(getattr(c, "cooperative_matrix_shapes", ()) or ())
    if os.environ.get("VKNN_COOPMAT", "") == "0":
        coopmat = ()
    if getattr(c, "has_device_local_host_visible", False):
        memory = "rebar" if getattr(c, "device_type", "") == "discrete" else "unified"
    else:
        memory = "staging"
    return Target(
        name=name,
        api_version=tuple(c.api_version[:2]) + (0,),  # type: ignore[attr-defined]
        max_compute_work_group_count=tuple(c.max_compute_work_group_count),  # type: ignore[attr-defined]
        max_compute_work_group_size=tuple(c.max_compute_work_group_size),  # type: ignore[attr-defined]
        max_compute_work_group_invocations=c.max_compute_work_group_invocations,  # type: ignore[attr-defined]
        max_compute_shared_memory_size=c.max_compute_shared_memory_size,  # type: ignore[attr-defined]
        max_storage_buffer_range=c.max_storage_buffer_range,  # type: ignore[attr-defined]
        max_push_constants_size=c.max_push_constants_size,  # type: ignore[attr-defined]
        min_storage_buffer_offset_alignment=c.min_storage_buffer_offset_alignment,  # type: ignore[attr-defined]
        subgroup_size=c.subgroup_size,  # type: ignore[attr-defined]
        subgroup_arithmetic=c.subgroup_size >= 4,  # type: ignore[attr-defined]
        has_fp16_storage=c.has_fp16_storage,  # type: ignore[attr-defined]
        has_fp16_arith=c.has_fp16_arith,  # type: ignore[attr-defined]
        has_int64=getattr(c, "has_int64", False),
        has_float_controls2=c.has_float_controls2,  # type: ignore[attr-defined]
        rte_fp16=c.rte_fp16,  # type: ignore[attr-defined]
        signed_zero_inf_nan_preserve_fp32=c.signed_zero_inf_nan_preserve_fp32,  # type: ignore[attr-defined]
        signed_zero_inf_nan_preserve_fp16=c.signed_zero_inf_nan_preserve_fp16,  # type: ignore[attr-defined]
        cooperative_matrix=coopmat,
        memory=memory,
    )
