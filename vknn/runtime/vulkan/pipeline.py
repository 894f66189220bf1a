"""Compute pipelines: shader modules, descriptor-set and pipeline layouts, the
VkPipelineCache, and a registry that builds each distinct pipeline once.

A kernel's pipeline is identified by (shader, variant, specialization
constants, binding count, push-constant size). Bindings are storage buffers
0..n-1 of set 0; with VK_KHR_push_descriptor the set layout carries the
PUSH_DESCRIPTOR flag (no descriptor pools at all), otherwise it is an
ordinary layout and `commands` allocates sets from a pool.

This module must not record commands or know about tensors and steps.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any

from vknn.kernels.shaders import compile_shader
from vknn.kernels.spirv import FastMathRefused, fastmath_float_types, postprocess
from vknn.runtime.vulkan.caps import DeviceCaps
from vknn.runtime.vulkan.device import Device, check, ffi, lib, vk

SpecValue = int | float | bool


@dataclass(frozen=True)
class PipelineKey:
    shader: str
    variant: str
    spec: tuple[tuple[int, SpecValue], ...]
    """(constant_id, value): ints as int32, floats as float32, bools as VkBool32."""
    bindings: int
    push_size: int
    fastmath: bool = False
    """FPFastMathDefault on the module's float types (honoured only where the
    device enabled float_controls2; see `pipeline_spirv`)."""


def pipeline_spirv(key: PipelineKey, caps: DeviceCaps) -> bytes:
    """Exactly the SPIR-V given to vkCreateShaderModule for `key` on a device
    with `caps`: the compiled shader, post-processed (`vknn.kernels.spirv`)
    with fast math when `key.fastmath` and the device has float_controls2,
    and RoundingModeRTE 16 for fp16 variants where the device supports it."""
    ident = spirv_identity(key, caps)
    pre = _PRELOADED.get(ident)
    if pre is not None:
        return pre
    return _postprocessed(*ident)


SpirvIdentity = tuple[str, str, bool, bool, tuple[str, ...]]


def spirv_identity(key: PipelineKey, caps: DeviceCaps) -> SpirvIdentity:
    """What `pipeline_spirv` bytes depend on: (shader, variant, fastmath, rte_fp16,
    fastmath float types). A model cache stores modules under it."""
    fast = key.fastmath and caps.has_float_controls2
    rte = key.variant == "fp16" and caps.rte_fp16
    types = fastmath_float_types(caps) if fast else ()
    return (key.shader, key.variant, fast, rte, types)


_PRELOADED: dict[SpirvIdentity, bytes] = {}


def preload_spirv(modules: dict[SpirvIdentity, bytes]) -> None:
    """Post-processed modules from a model cache: `pipeline_spirv` returns them
    without compiling (a warm session needs no shader compiler)."""
    _PRELOADED.update(modules)


@functools.cache
def _postprocessed(
    shader: str, variant: str, fastmath: bool, rte_fp16: bool, types: tuple[str, ...]
) -> bytes:
    # With RoundingModeRTE the fp16 conversion rounds to nearest even in
    # hardware: the fp16rte build drops precision.glsl's integer rounding.
    spirv = compile_shader(shader, "fp16rte" if rte_fp16 and variant == "fp16" else variant)
    try:
        return postprocess(spirv, fastmath=fastmath, rte_fp16=rte_fp16, fastmath_types=types)
    except FastMathRefused:
        # The kernel opted out itself (`precise` -> NoContraction, which
        # FPFastMathDefault forbids): it runs strict, as written.
        return postprocess(spirv, fastmath=False, rte_fp16=rte_fp16)


def _pack_spec(spec: tuple[tuple[int, SpecValue], ...]) -> bytes:
    out = b""
    for _, v in spec:
        if isinstance(v, bool):
            out += struct.pack("<I", int(v))
        elif isinstance(v, int):
            out += struct.pack("<i", v)
        else:
            out += struct.pack("<f", v)
    return out


class PipelineCache:
    """A VkPipelineCache, optionally seeded with a blob from an earlier run
    (the driver rejects a foreign blob itself; a bad one is never an error)."""

    def __init__(self, device: Device, initial: bytes | None = None) -> None:
        self.device = device
        blob = ffi.from_buffer(initial) if initial else ffi.NULL
        info = ffi.new(
            "VkPipelineCacheCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                "initialDataSize": len(initial) if initial else 0,
                "pInitialData": blob,
            },
        )
        out = ffi.new("VkPipelineCache*")
        res = lib.vkCreatePipelineCache(device.device, info, ffi.NULL, out)
        if res != 0 and initial:  # a stale or foreign blob: start empty instead
            info.initialDataSize, info.pInitialData = 0, ffi.NULL
            res = lib.vkCreatePipelineCache(device.device, info, ffi.NULL, out)
        check(res, "vkCreatePipelineCache")
        self.handle = out[0]
        device.on_close(self.destroy)

    def data(self) -> bytes:
        """The cache blob (the package has no wrapper for vkGetPipelineCacheData)."""
        size = ffi.new("size_t*")
        check(
            lib.vkGetPipelineCacheData(self.device.device, self.handle, size, ffi.NULL),
            "cache size",
        )
        buf = ffi.new("char[]", size[0])
        check(lib.vkGetPipelineCacheData(self.device.device, self.handle, size, buf), "cache data")
        return bytes(ffi.buffer(buf, size[0]))

    def merge(self, blob: bytes) -> bool:
        """Merge a blob from an earlier run into this cache; False when the
        driver rejects it (a foreign or stale blob is never an error)."""
        if not blob:
            return False
        src = PipelineCache(self.device, blob)
        try:
            srcs = ffi.new("VkPipelineCache[]", [src.handle])
            return lib.vkMergePipelineCaches(self.device.device, self.handle, 1, srcs) == 0
        finally:
            src.destroy()

    def destroy(self) -> None:
        if self.handle is not None and self.device.device is not None:
            lib.vkDestroyPipelineCache(self.device.device, self.handle, ffi.NULL)
            self.handle = None


class ComputePipeline:
    """One compute pipeline and the layouts it was built with."""

    def __init__(
        self,
        device: Device,
        key: PipelineKey,
        cache: PipelineCache | None,
        push_descriptors: bool,
        local_size_x: int,
    ) -> None:
        self.device = device
        self.key = key
        self.push_descriptors = push_descriptors
        self.local_size_x = local_size_x
        self.module = self.set_layout = self.layout = self.handle = None
        dev = device.device
        device.on_close(self.destroy)
        # Kept for inspection (tests, a model cache): the cached bytes, no copy.
        spirv = self.spirv = pipeline_spirv(key, device.caps)
        code = ffi.new("char[]", spirv)
        minfo = ffi.new(
            "VkShaderModuleCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                "codeSize": len(spirv),
                "pCode": ffi.cast("uint32_t*", code),
            },
        )
        out_m = ffi.new("VkShaderModule*")
        check(lib.vkCreateShaderModule(dev, minfo, ffi.NULL, out_m), "vkCreateShaderModule")
        self.module = out_m[0]

        binds = ffi.new("VkDescriptorSetLayoutBinding[]", max(key.bindings, 1))
        for i in range(key.bindings):
            binds[i].binding = i
            binds[i].descriptorType = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            binds[i].descriptorCount = 1
            binds[i].stageFlags = vk.VK_SHADER_STAGE_COMPUTE_BIT
        flags = (
            vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR if push_descriptors else 0
        )
        dinfo = ffi.new(
            "VkDescriptorSetLayoutCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                "flags": flags,
                "bindingCount": key.bindings,
                "pBindings": binds,
            },
        )
        out_d = ffi.new("VkDescriptorSetLayout*")
        check(lib.vkCreateDescriptorSetLayout(dev, dinfo, ffi.NULL, out_d), "set layout")
        self.set_layout = out_d[0]

        rng = ffi.new(
            "VkPushConstantRange*",
            {"stageFlags": vk.VK_SHADER_STAGE_COMPUTE_BIT, "offset": 0, "size": key.push_size},
        )
        set_layouts = ffi.new("VkDescriptorSetLayout[]", [self.set_layout])
        linfo = ffi.new(
            "VkPipelineLayoutCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                "setLayoutCount": 1,
                "pSetLayouts": set_layouts,
                "pushConstantRangeCount": 1 if key.push_size else 0,
                "pPushConstantRanges": rng if key.push_size else ffi.NULL,
            },
        )
        out_l = ffi.new("VkPipelineLayout*")
        check(lib.vkCreatePipelineLayout(dev, linfo, ffi.NULL, out_l), "pipeline layout")
        self.layout = out_l[0]

        # Constant 0 is always the workgroup size (local_size_x_id = 0).
        spec = ((0, local_size_x), *key.spec)
        data = _pack_spec(spec)
        entries = ffi.new("VkSpecializationMapEntry[]", len(spec))
        for i, (cid, _) in enumerate(spec):
            entries[i].constantID = cid
            entries[i].offset = 4 * i
            entries[i].size = 4
        data_buf = ffi.new("char[]", data)
        sinfo = ffi.new(
            "VkSpecializationInfo*",
            {
                "mapEntryCount": len(spec),
                "pMapEntries": entries,
                "dataSize": len(data),
                "pData": data_buf,
            },
        )
        name = ffi.new("char[]", b"main")
        cinfo = ffi.new(
            "VkComputePipelineCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                "stage": {
                    "sType": vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                    "stage": vk.VK_SHADER_STAGE_COMPUTE_BIT,
                    "module": self.module,
                    "pName": name,
                    "pSpecializationInfo": sinfo,
                },
                "layout": self.layout,
            },
        )
        out_p = ffi.new("VkPipeline*")
        check(
            lib.vkCreateComputePipelines(
                dev, cache.handle if cache else ffi.NULL, 1, cinfo, ffi.NULL, out_p
            ),
            f"vkCreateComputePipelines({key.shader})",
        )
        self.handle = out_p[0]

    def destroy(self) -> None:
        dev = self.device.device
        if dev is None:
            return
        if self.handle is not None:
            lib.vkDestroyPipeline(dev, self.handle, ffi.NULL)
        if self.layout is not None:
            lib.vkDestroyPipelineLayout(dev, self.layout, ffi.NULL)
        if self.set_layout is not None:
            lib.vkDestroyDescriptorSetLayout(dev, self.set_layout, ffi.NULL)
        if self.module is not None:
            lib.vkDestroyShaderModule(dev, self.module, ffi.NULL)
        self.handle = self.layout = self.set_layout = self.module = None


class Pipelines:
    """Builds each distinct pipeline once per device (many steps share one)."""

    def __init__(
        self,
        device: Device,
        cache: PipelineCache | None = None,
        push_descriptors: bool | None = None,
    ) -> None:
        self.device = device
        self.cache = cache if cache is not None else PipelineCache(device)
        if push_descriptors is None:
            push_descriptors = device.push_descriptor_fn is not None
        self.push_descriptors = push_descriptors and device.push_descriptor_fn is not None
        self._built: dict[tuple[PipelineKey, int], ComputePipeline] = {}
        self.requested: set[tuple[PipelineKey, int]] | None = None
        """When a set, every (key, local size) asked for is added: a session's
        model cache records the pipelines its own executors use, built now or
        by an earlier session of the process."""

    def get(self, key: PipelineKey, local_size_x: int) -> ComputePipeline:
        k = (key, local_size_x)
        if self.requested is not None:
            self.requested.add(k)
        p = self._built.get(k)
        if p is None:
            p = self._built[k] = ComputePipeline(
                self.device, key, self.cache, self.push_descriptors, local_size_x
            )
        return p

    def __len__(self) -> int:
        return len(self._built)

    def all(self) -> list[Any]:
        return list(self._built.values())
