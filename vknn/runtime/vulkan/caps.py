"""`DeviceCaps`: every device fact a Vulkan kernel gate may look at, as plain data.

Gates are pure functions of (step, caps), shared by the support report and the
runtime, so caps must be constructible without a device: `DeviceCaps()` gives
the Vulkan 1.2 minimums, `DeviceCaps.lavapipe_like()` / `h200_like()` give
realistic profiles, and `dataclasses.replace` tweaks one field for a test.
`vknn.runtime.vulkan.device` fills one from a physical device.

This module must not import `vulkan` (the cffi package) or touch a device.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

VENDOR_NAMES = {
    0x10DE: "nvidia",
    0x1002: "amd",
    0x8086: "intel",
    0x13B5: "arm",
    0x5143: "qualcomm",
    0x10005: "mesa",  # VK_VENDOR_ID_MESA: lavapipe / llvmpipe
}


H200_COOPMAT: tuple[tuple[int, int, int, str, str, str, str, str], ...] = tuple(
    (m, n, k, "f16", "f16", c, c, "subgroup")
    for (m, n, k) in ((16, 16, 16), (16, 8, 16), (16, 8, 8))
    for c in ("f16", "f32")
) + (
    (16, 16, 32, "s8", "s8", "s32", "s32", "subgroup"),
    (16, 8, 32, "s8", "s8", "s32", "s32", "subgroup"),
    (16, 16, 32, "u8", "u8", "u32", "u32", "subgroup"),
    (16, 8, 32, "u8", "u8", "u32", "u32", "subgroup"),
    (16, 16, 16, "bf16", "bf16", "f32", "f32", "subgroup"),
)
"""What the H200's driver (580.x) lists for VK_KHR_cooperative_matrix."""


@dataclass(frozen=True)
class DeviceCaps:
    """Capabilities of one physical device, as enabled by `Device` (a feature the
    device has but VKNN did not enable reads False)."""

    name: str = "unknown"
    vendor_id: int = 0
    device_id: int = 0
    device_type: str = "other"
    """"discrete", "integrated", "virtual", "cpu" or "other"."""
    driver_version: int = 0
    api_version: tuple[int, int, int] = (1, 2, 0)
    pipeline_cache_uuid: bytes = bytes(16)

    max_compute_work_group_count: tuple[int, int, int] = (65535, 65535, 65535)
    max_compute_work_group_size: tuple[int, int, int] = (128, 128, 64)
    max_compute_work_group_invocations: int = 128
    max_compute_shared_memory_size: int = 16384
    max_storage_buffer_range: int = 1 << 27
    max_push_constants_size: int = 128
    min_storage_buffer_offset_alignment: int = 256
    subgroup_size: int = 1

    has_fp16_storage: bool = False
    """storageBuffer16BitAccess: fp16 tensors in storage buffers."""
    has_fp16_arith: bool = False
    """shaderFloat16: fp16 arithmetic in shaders."""
    has_int64: bool = False
    """shaderInt64: 64-bit integer arithmetic in shaders (exact int64 tensors)."""
    has_push_descriptor: bool = False
    has_float_controls2: bool = False
    has_cooperative_matrix: bool = False
    """VK_KHR_cooperative_matrix is enabled (its `cooperativeMatrix` feature)."""
    cooperative_matrix_shapes: tuple[tuple[int, int, int, str, str, str, str, str], ...] = ()
    """Every VkCooperativeMatrixPropertiesKHR the device lists, as (M, N, K,
    A, B, C, result type, scope), types named "f16", "f32", "bf16", "s8", ...
    and scope "subgroup" / "workgroup" / ... (empty unless enabled)."""
    rte_fp16: bool = False
    """shaderRoundingModeRTEFloat16: the RoundingModeRTE execution mode works on f16."""
    signed_zero_inf_nan_preserve_fp32: bool = False
    signed_zero_inf_nan_preserve_fp16: bool = False

    timestamp_valid_bits: int = 0
    """Of the compute queue family; 0 means no timestamps."""
    timestamp_period_ns: float = 1.0
    has_device_local_host_visible: bool = False
    """A memory type both DEVICE_LOCAL and HOST_VISIBLE (UMA, lavapipe, ReBAR):
    tensors are mapped directly and no staging copies are recorded."""

    @property
    def vendor(self) -> str:
        return VENDOR_NAMES.get(self.vendor_id, f"0x{self.vendor_id:04x}")

    @property
    def has_timestamps(self) -> bool:
        return self.timestamp_valid_bits > 0

    @property
    def identity(self) -> tuple[int, int, int, bytes]:
        """What a pipeline cache is valid for (vendor, device, driver, cache UUID)."""
        return (self.vendor_id, self.device_id, self.driver_version, self.pipeline_cache_uuid)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pipeline_cache_uuid"] = self.pipeline_cache_uuid.hex()
        d["cooperative_matrix_shapes"] = [list(x) for x in self.cooperative_matrix_shapes]
        return d

    def with_(self, **changes: Any) -> DeviceCaps:
        return replace(self, **changes)

    @classmethod
    def lavapipe_like(cls, **overrides: Any) -> DeviceCaps:
        """Mesa 22.3 lavapipe as measured on the CI machine (no float_controls2)."""
        base = cls(
            name="llvmpipe (LLVM 15.0.6, 256 bits)",
            vendor_id=0x10005,
            device_type="cpu",
            api_version=(1, 3, 230),
            max_compute_work_group_count=(65535, 65535, 65535),
            max_compute_work_group_size=(1024, 1024, 1024),
            max_compute_work_group_invocations=1024,
            max_compute_shared_memory_size=32768,
            max_storage_buffer_range=1 << 27,
            max_push_constants_size=128,
            min_storage_buffer_offset_alignment=16,
            subgroup_size=8,
            has_fp16_storage=True,
            has_fp16_arith=True,
            has_int64=True,
            has_push_descriptor=True,
            timestamp_valid_bits=64,
            timestamp_period_ns=1.0,
            has_device_local_host_visible=True,
        )
        return replace(base, **overrides)

    @classmethod
    def h200_like(cls, **overrides: Any) -> DeviceCaps:
        """An NVIDIA H200 with a recent driver (the performance target)."""
        base = cls(
            name="NVIDIA H200",
            vendor_id=0x10DE,
            device_type="discrete",
            api_version=(1, 4, 0),
            max_compute_work_group_count=(2147483647, 65535, 65535),
            max_compute_work_group_size=(1024, 1024, 64),
            max_compute_work_group_invocations=1024,
            max_compute_shared_memory_size=49152,
            max_storage_buffer_range=(1 << 32) - 1,
            max_push_constants_size=256,
            min_storage_buffer_offset_alignment=16,
            subgroup_size=32,
            has_fp16_storage=True,
            has_fp16_arith=True,
            has_int64=True,
            has_push_descriptor=True,
            has_float_controls2=True,
            has_cooperative_matrix=True,
            cooperative_matrix_shapes=H200_COOPMAT,
            rte_fp16=True,
            signed_zero_inf_nan_preserve_fp32=True,
            signed_zero_inf_nan_preserve_fp16=True,
            timestamp_valid_bits=64,
            timestamp_period_ns=1.0,
            has_device_local_host_visible=True,
        )
        return replace(base, **overrides)
