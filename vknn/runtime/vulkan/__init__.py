"""The Vulkan backend: device, memory, shaders, pipelines, command recording and
the kernels (gates + recorders) that turn plan steps into dispatches.

Entry points (import the submodules; this package imports nothing eagerly so
that `vknn.runtime` loads on machines without a Vulkan loader):

- `device.vulkan_unavailable_reason()` -> None | why not
- `device.Device.open()` -> the device; `.caps` is its `caps.DeviceCaps`
- `kernels.gate(step, caps, in_specs=None)` -> None | "<Kind>: <reason>"
- `executor.VulkanExecutor(device, steps, input_specs, outputs, constants,
  precision=...)`; `.run({slot: array}) -> {slot: array}`; `.profile()`

Nothing here may import xDSL or the CPU backend.
"""
