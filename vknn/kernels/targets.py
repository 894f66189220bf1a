"""Named targets the compiler can build for, and the one built from a device.

`target(name)`:

- `generic`: what every Vulkan 1.2 device offers (the spec's minimum limits,
  no 16-bit storage, staging copies): runs anywhere, fastest nowhere;
- `lavapipe`: Mesa's CPU driver (25.x) as CI runs it;
- `nvidia`: an NVIDIA H200-class GPU with a recent driver (Vulkan 1.4,
  float_controls2, cooperative matrices, resizable BAR);
- `from-device`: the device this process would run on (the only name that
  opens a device; sessions that compile on the fly use it).

A JSON file path names a target too (`Target.to_dict()` written out).
"""

from __future__ import annotations

import json
from pathlib import Path

from vknn.errors import InvalidArgument
from vknn.runtime.target import Target, from_caps
from vknn.runtime.vulkan.caps import H200_COOPMAT as _H200_COOPMAT

PRESETS: dict[str, Target] = {
    "generic": Target(),
    "lavapipe": Target(
        name="lavapipe",
        api_version=(1, 3, 0),
        max_compute_work_group_count=(65535, 65535, 65535),
        max_compute_work_group_size=(1024, 1024, 1024),
        max_compute_work_group_invocations=1024,
        max_compute_shared_memory_size=32768,
        max_storage_buffer_range=1 << 27,
        max_push_constants_size=256,
        min_storage_buffer_offset_alignment=16,
        subgroup_size=8,
        subgroup_arithmetic=True,
        has_fp16_storage=True,
        has_fp16_arith=True,
        has_int64=True,
        has_float_controls2=True,
        rte_fp16=True,
        signed_zero_inf_nan_preserve_fp32=True,
        signed_zero_inf_nan_preserve_fp16=True,
        memory="unified",
    ),
    "nvidia": Target(
        name="nvidia",
        api_version=(1, 3, 0),
        max_compute_work_group_count=(2147483647, 65535, 65535),
        max_compute_work_group_size=(1024, 1024, 64),
        max_compute_work_group_invocations=1024,
        max_compute_shared_memory_size=49152,
        max_storage_buffer_range=(1 << 32) - 1,
        max_push_constants_size=256,
        min_storage_buffer_offset_alignment=16,
        subgroup_size=32,
        subgroup_arithmetic=True,
        has_fp16_storage=True,
        has_fp16_arith=True,
        has_int64=True,
        has_float_controls2=True,
        rte_fp16=True,
        signed_zero_inf_nan_preserve_fp32=True,
        signed_zero_inf_nan_preserve_fp16=True,
        cooperative_matrix=_H200_COOPMAT,
        memory="rebar",
    ),
}
NAMES = (*PRESETS, "from-device")
__all__ = ["NAMES", "PRESETS", "from_caps", "target"]


def target(name: str) -> Target:
    """The target called `name` (a preset, `from-device`, or a JSON file)."""
    if name in PRESETS:
        return PRESETS[name]
    if name == "from-device":
        from vknn.runtime.vulkan.context import shared_device

        device, _, why = shared_device()
        if device is None:
            raise InvalidArgument(f"target from-device: {why or 'no Vulkan device'}")
        return from_caps(device.caps)
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        try:
            return Target.from_dict(json.loads(path.read_text()))
        except (ValueError, OSError) as e:
            raise InvalidArgument(f"target file {name}: {e}") from None
    raise InvalidArgument(
        f"unknown target {name!r}: expected one of {', '.join(NAMES)} or a .json file"
    )
