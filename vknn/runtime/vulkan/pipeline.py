"""Compute pipelines: shader modules, descriptor-set and pipeline layouts, the
VkPipelineCache, and a registry that builds each distinct pipeline once.

A pipeline is identified by its SPIR-V (as the compiled program carries
it), binding count, push-constant size, specialization constants and local
size. Bindings are storage buffers
0..n-1 of set 0; with VK_KHR_push_descriptor the set layout carries the
PUSH_DESCRIPTOR flag (no descriptor pools at all), otherwise it is an
ordinary layout and `commands` allocates sets from a pool.

This module must not record commands or know about tensors and steps.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from dataclasses import dataclass
from typing import Any

from vknn.runtime.vulkan.device import Device, check, ffi, lib, vk

SpecEntry = tuple[int, str, int | float]
"""(constant_id, "i" | "f", value): ints (and bools) as 32-bit words, floats as float32."""


@dataclass(frozen=True)
class PipelineKey:
    """What makes two kernels one pipeline: the same SPIR-V, bindings, push
    size, specialization constants and local size."""

    spirv_hash: bytes
    bindings: int
    push_size: int
    spec: tuple[SpecEntry, ...]
    local_size: tuple[int, int, int]


def _pack_spec(spec: tuple[SpecEntry, ...]) -> bytes:
    out = b""
    for _, kind, v in spec:
        if kind == "f":
            out += struct.pack("<f", float(v))
        else:
            out += struct.pack("<I", int(v) & 0xFFFFFFFF)
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
        spirv: bytes,
        cache: PipelineCache | None,
        push_descriptors: bool,
    ) -> None:
        self.device = device
        self.key = key
        self.push_descriptors = push_descriptors
        self.module = self.set_layout = self.layout = self.handle = None
        dev = device.device
        device.on_close(self.destroy)
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

        # Constant 0 is always the workgroup size x (local_size_x_id = 0).
        spec = ((0, "i", key.local_size[0]), *key.spec)
        data = _pack_spec(spec)
        entries = ffi.new("VkSpecializationMapEntry[]", len(spec))
        for i, (cid, _, _) in enumerate(spec):
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
            "vkCreateComputePipelines",
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
    """Builds each distinct pipeline once per device (many kernels and
    sessions share one); safe to use from several threads."""

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
        self._built: dict[PipelineKey, ComputePipeline] = {}
        self._lock = threading.Lock()

    def get(
        self,
        spirv: bytes,
        bindings: int,
        push_size: int,
        spec: tuple[SpecEntry, ...],
        local_size: tuple[int, int, int],
    ) -> ComputePipeline:
        key = PipelineKey(hashlib.sha256(spirv).digest(), bindings, push_size, spec, local_size)
        with self._lock:
            p = self._built.get(key)
            if p is None:
                p = self._built[key] = ComputePipeline(
                    self.device, key, spirv, self.cache, self.push_descriptors
                )
            return p

    def __len__(self) -> int:
        return len(self._built)

    def all(self) -> list[Any]:
        return list(self._built.values())
