"""The Vulkan instance, the chosen physical device, the logical device and its one
compute queue; plus the capability query that fills `DeviceCaps`.

Selection: env `VKNN_DEVICE` (an index into the enumeration, or a substring of
the device name) wins; otherwise the first discrete GPU, else integrated, else
virtual, else CPU (lavapipe). Env `VKNN_VALIDATION=1` enables the Khronos
validation layer with a debug-utils messenger that records every message in
`Device.messages` (tests assert it stays empty).

Features are enabled explicitly and only those VKNN uses: push descriptors,
16-bit storage, shaderFloat16, shaderInt64, float_controls2 (chained by hand: the `vulkan`
package 1.3.275 has no struct for it). Structures are built with `vulkan.ffi`
directly: the package's wrappers cannot chain every pNext and cost ~6 us each.

This module must not know about tensors, kernels or plans.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vknn.errors import VknnError
from vknn.runtime.vulkan.caps import DeviceCaps

try:  # the loader may be missing entirely (no libvulkan.so.1)
    import vulkan as vk

    ffi: Any = vk.ffi
    lib: Any = vk.lib
    _IMPORT_ERROR: str | None = None
except OSError as e:  # pragma: no cover - machine without a Vulkan loader
    vk = None
    ffi = lib = None
    _IMPORT_ERROR = str(e)

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
STYPE_FLOAT_CONTROLS2_FEATURES = 1000528000
"""VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT_CONTROLS_2_FEATURES_KHR."""
EXT_FLOAT_CONTROLS2 = "VK_KHR_shader_float_controls2"
EXT_PUSH_DESCRIPTOR = "VK_KHR_push_descriptor"
EXT_COOPERATIVE_MATRIX = "VK_KHR_cooperative_matrix"
COOPERATIVE_MATRIX_HEADER = (1, 3, 255)
"""The first Vulkan header with VK_KHR_cooperative_matrix (older validation
layers report its feature struct as unknown: the extension is left off)."""
_COMPONENT_TYPES = {
    0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64",
    7: "u8", 8: "u16", 9: "u32", 10: "u64", 1000141000: "bf16",
    1000491002: "e4m3", 1000491003: "e5m2",
}  # fmt: skip
_SCOPES = {1: "device", 2: "workgroup", 3: "subgroup", 5: "queue_family"}

_DEVICE_TYPES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}
_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}


class VulkanError(VknnError):
    """A Vulkan call failed, or no usable device exists."""


def check(result: int, what: str) -> None:
    if result != 0:  # VK_SUCCESS
        raise VulkanError(f"{what} failed with VkResult {result}")


def _version(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def _cstr(chars: Any) -> str:
    return ffi.string(chars).decode("utf-8", "replace")


def _struct(ctype: str, stype: int, keep: list[Any], pnext: Any = None, **fields: Any) -> Any:
    """A zeroed `ctype` with sType/pNext set; kept alive in `keep` (cffi frees
    an object when its last Python reference goes, pNext chains included)."""
    p = ffi.new(ctype + "*")
    p.sType = stype
    p.pNext = pnext if pnext is not None else ffi.NULL
    for k, v in fields.items():
        setattr(p, k, v)
    keep.append(p)
    return p


def _cstr_array(names: list[str], keep: list[Any]) -> Any:
    bufs = [ffi.new("char[]", n.encode()) for n in names]
    arr = ffi.new("char*[]", bufs) if bufs else ffi.NULL
    keep.extend(bufs)
    keep.append(arr)
    return arr


def vulkan_unavailable_reason() -> str | None:
    """None when a Vulkan loader and at least one physical device exist, else why not."""
    if vk is None:
        return f"no Vulkan loader: {_IMPORT_ERROR}"
    try:
        inst = _create_instance(validation=False, keep=[])
    except VulkanError as e:
        return str(e)
    try:
        if not _physical_devices(inst):
            return "no Vulkan physical device"
    finally:
        lib.vkDestroyInstance(inst, ffi.NULL)
    return None


def _instance_extensions() -> set[str]:
    n = ffi.new("uint32_t*")
    check(lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, n, ffi.NULL), "extension count")
    props = ffi.new("VkExtensionProperties[]", n[0])
    check(lib.vkEnumerateInstanceExtensionProperties(ffi.NULL, n, props), "extensions")
    return {_cstr(props[i].extensionName) for i in range(n[0])}


def _instance_layers() -> dict[str, tuple[int, int, int]]:
    """Installed instance layers -> the Vulkan header version each was built with."""
    n = ffi.new("uint32_t*")
    check(lib.vkEnumerateInstanceLayerProperties(n, ffi.NULL), "layer count")
    props = ffi.new("VkLayerProperties[]", n[0])
    check(lib.vkEnumerateInstanceLayerProperties(n, props), "layers")
    return {_cstr(props[i].layerName): _version(props[i].specVersion) for i in range(n[0])}


FLOAT_CONTROLS2_HEADER = (1, 3, 280)
"""The first Vulkan header with VK_KHR_shader_float_controls2: a validation
layer built from an older one (Debian 12 ships 1.3.239) reports the extension's
feature struct as an unknown pNext and its SPIR-V capability as invalid, so
under such a layer the extension is left off (fastmath then stays off)."""


def _create_instance(validation: bool, keep: list[Any], messenger_info: Any = None) -> Any:
    app = _struct(
        "VkApplicationInfo",
        vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
        keep,
        apiVersion=vk.VK_MAKE_VERSION(1, 3, 0),
        engineVersion=1,
    )
    app.pApplicationName = app.pEngineName = _keep(ffi.new("char[]", b"vknn"), keep)
    layers: list[str] = []
    exts: list[str] = []
    if validation:
        if VALIDATION_LAYER not in _instance_layers():
            raise VulkanError(
                f"VKNN_VALIDATION=1 but {VALIDATION_LAYER} is not installed "
                "(apt install vulkan-validationlayers)"
            )
        layers.append(VALIDATION_LAYER)
        exts.append("VK_EXT_debug_utils")
        # Synchronization validation too: a missing barrier between dispatches
        # that share arena memory is exactly the bug the planner could cause.
        enables = _keep(
            ffi.new(
                "VkValidationFeatureEnableEXT[]",
                [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT],
            ),
            keep,
        )
        messenger_info = _struct(
            "VkValidationFeaturesEXT",
            vk.VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
            keep,
            pnext=messenger_info,
            enabledValidationFeatureCount=1,
            pEnabledValidationFeatures=enables,
        )
    info = _struct(
        "VkInstanceCreateInfo",
        vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        keep,
        # Chaining the messenger info also reports instance creation/destruction.
        pnext=messenger_info,
        pApplicationInfo=app,
        enabledLayerCount=len(layers),
        ppEnabledLayerNames=_cstr_array(layers, keep),
        enabledExtensionCount=len(exts),
        ppEnabledExtensionNames=_cstr_array(exts, keep),
    )
    out = ffi.new("VkInstance*")
    res = lib.vkCreateInstance(info, ffi.NULL, out)
    if res == vk.VK_ERROR_INCOMPATIBLE_DRIVER:
        raise VulkanError("no Vulkan driver (VK_ERROR_INCOMPATIBLE_DRIVER)")
    check(res, "vkCreateInstance")
    return out[0]


def _keep(obj: Any, keep: list[Any]) -> Any:
    keep.append(obj)
    return obj


def _physical_devices(instance: Any) -> list[Any]:
    n = ffi.new("uint32_t*")
    check(lib.vkEnumeratePhysicalDevices(instance, n, ffi.NULL), "device count")
    arr = ffi.new("VkPhysicalDevice[]", n[0])
    check(lib.vkEnumeratePhysicalDevices(instance, n, arr), "devices")
    return [arr[i] for i in range(n[0])]


def _device_extensions(pd: Any) -> set[str]:
    n = ffi.new("uint32_t*")
    check(lib.vkEnumerateDeviceExtensionProperties(pd, ffi.NULL, n, ffi.NULL), "dev ext count")
    props = ffi.new("VkExtensionProperties[]", n[0])
    check(lib.vkEnumerateDeviceExtensionProperties(pd, ffi.NULL, n, props), "dev exts")
    return {_cstr(props[i].extensionName) for i in range(n[0])}


def _properties(pd: Any) -> Any:
    p = ffi.new("VkPhysicalDeviceProperties*")
    lib.vkGetPhysicalDeviceProperties(pd, p)
    return p


def select_physical_device(instance: Any, want: str | None = None) -> Any:
    """`want` (or env VKNN_DEVICE): an index or a name substring; else by type."""
    devices = _physical_devices(instance)
    if not devices:
        raise VulkanError("no Vulkan physical device")
    names = [_cstr(_properties(d).deviceName) for d in devices]
    want = want if want is not None else os.environ.get("VKNN_DEVICE") or None
    if want is not None:
        if want.isdigit():
            i = int(want)
            if i >= len(devices):
                raise VulkanError(f"VKNN_DEVICE={want}: only {len(devices)} device(s): {names}")
            return devices[i]
        for d, name in zip(devices, names, strict=True):
            if want.lower() in name.lower():
                return d
        raise VulkanError(f"VKNN_DEVICE={want!r} matches none of {names}")
    ranked = sorted(
        range(len(devices)),
        key=lambda i: (
            _TYPE_RANK[_DEVICE_TYPES.get(_properties(devices[i]).deviceType, "other")],
            i,
        ),
    )
    return devices[ranked[0]]


@dataclass
class _Features:
    """The feature structs of one query (or one enable) chain."""

    head: Any
    v11: Any = None
    v12: Any = None
    s16: Any = None
    f16: Any = None
    fc2: Any = None
    keep: list[Any] = field(default_factory=list)
    coopmat: Any = None
    """VkPhysicalDeviceCooperativeMatrixFeaturesKHR (with the extension)."""

    @property
    def cooperative_matrix(self) -> bool:
        return bool(self.coopmat is not None and self.coopmat.cooperativeMatrix)

    @property
    def fp16_storage(self) -> bool:
        src = self.v11 if self.v11 is not None else self.s16
        return bool(src is not None and src.storageBuffer16BitAccess)

    @property
    def fp16_arith(self) -> bool:
        src = self.v12 if self.v12 is not None else self.f16
        return bool(src is not None and src.shaderFloat16)

    @property
    def float_controls2(self) -> bool:
        # The float_controls2 features struct has the layout of any one-VkBool32
        # features struct; VkPhysicalDeviceShaderDrawParametersFeatures is one.
        return bool(self.fc2 is not None and self.fc2.shaderDrawParameters)


def _feature_chain(api: tuple[int, int, int], exts: set[str]) -> _Features:
    keep: list[Any] = []
    nxt: Any = None
    v11 = v12 = s16 = f16 = fc2 = coopmat = None
    if EXT_COOPERATIVE_MATRIX in exts:
        coopmat = nxt = _struct(
            "VkPhysicalDeviceCooperativeMatrixFeaturesKHR",
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
            keep,
        )
    if EXT_FLOAT_CONTROLS2 in exts:
        fc2 = nxt = _struct(
            "VkPhysicalDeviceShaderDrawParametersFeatures",
            STYPE_FLOAT_CONTROLS2_FEATURES,
            keep,
            pnext=nxt,
        )
    if api >= (1, 2, 0):
        v12 = nxt = _struct(
            "VkPhysicalDeviceVulkan12Features",
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
            keep,
            pnext=nxt,
        )
        v11 = nxt = _struct(
            "VkPhysicalDeviceVulkan11Features",
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
            keep,
            pnext=nxt,
        )
    else:
        if "VK_KHR_shader_float16_int8" in exts:
            f16 = nxt = _struct(
                "VkPhysicalDeviceShaderFloat16Int8Features",
                vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
                keep,
                pnext=nxt,
            )
        s16 = nxt = _struct(
            "VkPhysicalDevice16BitStorageFeatures",
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
            keep,
            pnext=nxt,
        )
    head = _struct(
        "VkPhysicalDeviceFeatures2",
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        keep,
        pnext=nxt,
    )
    return _Features(head, v11, v12, s16, f16, fc2, keep, coopmat)


def cooperative_matrix_shapes(
    instance: Any, pd: Any
) -> tuple[tuple[int, int, int, str, str, str, str, str], ...]:
    """Every VkCooperativeMatrixPropertiesKHR of `pd` as (M, N, K, A, B, C,
    result, scope) names (the loader does not export the function: it comes
    from vkGetInstanceProcAddr); entries with unnamed types are skipped."""
    addr = lib.vkGetInstanceProcAddr(instance, b"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
    if addr == ffi.NULL:
        return ()
    fn = ffi.cast(
        "VkResult (*)(VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *)", addr
    )
    n = ffi.new("uint32_t*")
    check(fn(pd, n, ffi.NULL), "cooperative matrix property count")
    props = ffi.new("VkCooperativeMatrixPropertiesKHR[]", n[0])
    for i in range(n[0]):
        props[i].sType = vk.VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
        props[i].pNext = ffi.NULL
    check(fn(pd, n, props), "cooperative matrix properties")
    out = []
    for i in range(n[0]):
        p = props[i]
        types = [_COMPONENT_TYPES.get(int(t)) for t in (p.AType, p.BType, p.CType, p.ResultType)]
        scope = _SCOPES.get(int(p.scope))
        if None in types or scope is None or p.saturatingAccumulation:
            continue
        out.append((int(p.MSize), int(p.NSize), int(p.KSize), *types, scope))
    return tuple(out)  # type: ignore[return-value]


def query_caps(pd: Any, enabled: _Features | None = None, instance: Any = None) -> DeviceCaps:
    """DeviceCaps of `pd`; with `enabled`, feature flags are those enabled
    (cooperative-matrix shapes need the `instance` to look the query up)."""
    props = _properties(pd)
    api = _version(props.apiVersion)
    exts = _device_extensions(pd)
    keep: list[Any] = []

    sub = _struct(
        "VkPhysicalDeviceSubgroupProperties",
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        keep,
    )
    fc = None
    if api >= (1, 2, 0) or "VK_KHR_shader_float_controls" in exts:
        fc = _struct(
            "VkPhysicalDeviceFloatControlsProperties",
            vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES,
            keep,
            pnext=sub,
        )
    props2 = _struct(
        "VkPhysicalDeviceProperties2",
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        keep,
        pnext=fc if fc is not None else sub,
    )
    lib.vkGetPhysicalDeviceProperties2(pd, props2)

    feats = enabled
    if feats is None:
        feats = _feature_chain(api, exts)
        lib.vkGetPhysicalDeviceFeatures2(pd, feats.head)

    mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
    lib.vkGetPhysicalDeviceMemoryProperties(pd, mem)
    both = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
    dlhv = any(
        (mem.memoryTypes[i].propertyFlags & both) == both for i in range(mem.memoryTypeCount)
    )
    family = compute_queue_family(pd)
    qprops = _queue_families(pd)[family]
    lim = props.limits
    return DeviceCaps(
        name=_cstr(props.deviceName),
        vendor_id=props.vendorID,
        device_id=props.deviceID,
        device_type=_DEVICE_TYPES.get(props.deviceType, "other"),
        driver_version=props.driverVersion,
        api_version=api,
        pipeline_cache_uuid=bytes(ffi.buffer(props.pipelineCacheUUID)),
        max_compute_work_group_count=tuple(lim.maxComputeWorkGroupCount),  # type: ignore[arg-type]
        max_compute_work_group_size=tuple(lim.maxComputeWorkGroupSize),  # type: ignore[arg-type]
        max_compute_work_group_invocations=lim.maxComputeWorkGroupInvocations,
        max_compute_shared_memory_size=lim.maxComputeSharedMemorySize,
        max_storage_buffer_range=lim.maxStorageBufferRange,
        max_push_constants_size=lim.maxPushConstantsSize,
        min_storage_buffer_offset_alignment=lim.minStorageBufferOffsetAlignment,
        subgroup_size=sub.subgroupSize,
        has_fp16_storage=feats.fp16_storage,
        has_fp16_arith=feats.fp16_arith,
        has_int64=bool(feats.head.features.shaderInt64),
        has_push_descriptor=EXT_PUSH_DESCRIPTOR in exts
        and (enabled is None or EXT_PUSH_DESCRIPTOR in enabled_extensions(api, exts)),
        has_float_controls2=feats.float_controls2,
        has_cooperative_matrix=feats.cooperative_matrix,
        cooperative_matrix_shapes=(
            cooperative_matrix_shapes(instance, pd)
            if feats.cooperative_matrix and instance is not None
            else ()
        ),
        rte_fp16=bool(fc is not None and fc.shaderRoundingModeRTEFloat16),
        signed_zero_inf_nan_preserve_fp32=bool(
            fc is not None and fc.shaderSignedZeroInfNanPreserveFloat32
        ),
        signed_zero_inf_nan_preserve_fp16=bool(
            fc is not None and fc.shaderSignedZeroInfNanPreserveFloat16
        ),
        timestamp_valid_bits=qprops.timestampValidBits,
        timestamp_period_ns=float(lim.timestampPeriod),
        has_device_local_host_visible=dlhv,
    )


def _queue_families(pd: Any) -> list[Any]:
    n = ffi.new("uint32_t*")
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, ffi.NULL)
    arr = ffi.new("VkQueueFamilyProperties[]", n[0])
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, arr)
    return [arr[i] for i in range(n[0])]


def compute_queue_family(pd: Any) -> int:
    """A compute family, preferring one without graphics (a dedicated async
    compute queue does not share time slices with a display)."""
    fams = _queue_families(pd)
    compute = [i for i, f in enumerate(fams) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
    if not compute:
        raise VulkanError("the device has no compute queue")
    dedicated = [i for i in compute if not fams[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT]
    return (dedicated or compute)[0]


def enabled_extensions(api: tuple[int, int, int], exts: set[str]) -> list[str]:
    want = [EXT_PUSH_DESCRIPTOR, EXT_FLOAT_CONTROLS2, EXT_COOPERATIVE_MATRIX]
    if api < (1, 2, 0):
        want += [
            "VK_KHR_16bit_storage",
            "VK_KHR_storage_buffer_storage_class",
            "VK_KHR_shader_float16_int8",
            "VK_KHR_shader_float_controls",
        ]
    return [e for e in want if e in exts]


@dataclass
class Message:
    severity: int
    types: int
    id_name: str
    text: str

    def __str__(self) -> str:
        return f"[{self.id_name}] {self.text}"


class Device:
    """One logical device with one compute queue. Use `Device.open()`; `close()`
    (or the context manager) destroys everything in reverse creation order."""

    def __init__(self, device: str | None = None, validation: bool | None = None) -> None:
        if vk is None:
            raise VulkanError(f"no Vulkan loader: {_IMPORT_ERROR}")
        if validation is None:
            validation = os.environ.get("VKNN_VALIDATION", "") not in ("", "0")
        self.validation = validation
        self.queue_lock = threading.Lock()
        """vkQueueSubmit needs the queue externally synchronized (runs of
        several threads submit to the one queue)."""
        self.messages: list[Message] = []
        self._keep: list[Any] = []
        self._closers: list[Callable[[], None]] = []
        self._closed = False
        self.instance: Any = None
        self.device: Any = None
        self._messenger: Any = None
        try:
            self._open(device)
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(cls, device: str | None = None, validation: bool | None = None) -> Device:
        return cls(device, validation)

    def _open(self, want: str | None) -> None:
        keep = self._keep
        messenger_info = None
        if self.validation:
            self._callback = ffi.callback("PFN_vkDebugUtilsMessengerCallbackEXT", self._on_message)
            sev = vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            sev |= vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
            kinds = vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
            kinds |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
            kinds |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
            messenger_info = _struct(
                "VkDebugUtilsMessengerCreateInfoEXT",
                vk.VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
                keep,
                messageSeverity=sev,
                messageType=kinds,
                pfnUserCallback=self._callback,
            )
        self.instance = _create_instance(self.validation, keep, messenger_info)
        if self.validation:
            create = ffi.cast(
                "PFN_vkCreateDebugUtilsMessengerEXT",
                lib.vkGetInstanceProcAddr(self.instance, b"vkCreateDebugUtilsMessengerEXT"),
            )
            self._destroy_messenger = ffi.cast(
                "PFN_vkDestroyDebugUtilsMessengerEXT",
                lib.vkGetInstanceProcAddr(self.instance, b"vkDestroyDebugUtilsMessengerEXT"),
            )
            out = ffi.new("VkDebugUtilsMessengerEXT*")
            check(create(self.instance, messenger_info, ffi.NULL, out), "create messenger")
            self._messenger = out[0]

        self.skipped_extensions: dict[str, str] = {}
        if self.validation:
            layer_header = _instance_layers().get(VALIDATION_LAYER, (0, 0, 0))
            if layer_header < FLOAT_CONTROLS2_HEADER:
                self.skipped_extensions[EXT_FLOAT_CONTROLS2] = (
                    f"the validation layer ({'.'.join(map(str, layer_header))}) predates it"
                )
            if layer_header < COOPERATIVE_MATRIX_HEADER:
                self.skipped_extensions[EXT_COOPERATIVE_MATRIX] = (
                    f"the validation layer ({'.'.join(map(str, layer_header))}) predates it"
                )
        self.physical = select_physical_device(self.instance, want)
        props = _properties(self.physical)
        api = _version(props.apiVersion)
        if api < (1, 1, 0):
            raise VulkanError(f"{_cstr(props.deviceName)}: Vulkan {api} < 1.1")
        exts = _device_extensions(self.physical) - set(self.skipped_extensions)
        self.queue_family = compute_queue_family(self.physical)

        # Query, then enable only what VKNN uses (everything else left off).
        query = _feature_chain(api, exts)
        lib.vkGetPhysicalDeviceFeatures2(self.physical, query.head)
        enable = _feature_chain(api, exts)
        if enable.v11 is not None:
            enable.v11.storageBuffer16BitAccess = query.v11.storageBuffer16BitAccess
        if enable.s16 is not None:
            enable.s16.storageBuffer16BitAccess = query.s16.storageBuffer16BitAccess
        if enable.v12 is not None:
            enable.v12.shaderFloat16 = query.v12.shaderFloat16
        if enable.f16 is not None:
            enable.f16.shaderFloat16 = query.f16.shaderFloat16
        # int64 tensors are exact on the device only with 64-bit shader arithmetic.
        enable.head.features.shaderInt64 = query.head.features.shaderInt64
        if enable.fc2 is not None:
            enable.fc2.shaderDrawParameters = query.fc2.shaderDrawParameters
        if enable.coopmat is not None:
            # Only cooperativeMatrix: robust buffer access costs and is unused.
            enable.coopmat.cooperativeMatrix = query.coopmat.cooperativeMatrix
        self._enabled = enable
        ext_names = enabled_extensions(api, exts)
        self.extensions = set(ext_names)

        priority = ffi.new("float*", 1.0)
        qinfo = _struct(
            "VkDeviceQueueCreateInfo",
            vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            keep,
            queueFamilyIndex=self.queue_family,
            queueCount=1,
            pQueuePriorities=priority,
        )
        keep.append(priority)
        dinfo = _struct(
            "VkDeviceCreateInfo",
            vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
            keep,
            pnext=enable.head,
            queueCreateInfoCount=1,
            pQueueCreateInfos=qinfo,
            enabledExtensionCount=len(ext_names),
            ppEnabledExtensionNames=_cstr_array(ext_names, keep),
        )
        out = ffi.new("VkDevice*")
        check(lib.vkCreateDevice(self.physical, dinfo, ffi.NULL, out), "vkCreateDevice")
        self.device = out[0]
        q = ffi.new("VkQueue*")
        lib.vkGetDeviceQueue(self.device, self.queue_family, 0, q)
        self.queue = q[0]
        self.caps = query_caps(self.physical, enabled=enable, instance=self.instance)
        mem = ffi.new("VkPhysicalDeviceMemoryProperties*")
        lib.vkGetPhysicalDeviceMemoryProperties(self.physical, mem)
        self.memory_properties = mem

        self.push_descriptor_fn: Any = None
        if EXT_PUSH_DESCRIPTOR in self.extensions:
            fn = lib.vkGetDeviceProcAddr(self.device, b"vkCmdPushDescriptorSetKHR")
            if fn != ffi.NULL:
                self.push_descriptor_fn = ffi.cast("PFN_vkCmdPushDescriptorSetKHR", fn)

    def _on_message(self, severity: int, types: int, data: Any, user: Any) -> int:
        id_name = _cstr(data.pMessageIdName) if data.pMessageIdName != ffi.NULL else ""
        text = _cstr(data.pMessage) if data.pMessage != ffi.NULL else ""
        self.messages.append(Message(severity, types, id_name, text))
        return 0  # VK_FALSE: never abort the call

    def on_close(self, fn: Callable[[], None]) -> None:
        """Run `fn` (destroying a device object) before the device is destroyed."""
        self._closers.append(fn)

    def wait_idle(self) -> None:
        if self.device is not None:
            check(lib.vkDeviceWaitIdle(self.device), "vkDeviceWaitIdle")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.device is not None:
            lib.vkDeviceWaitIdle(self.device)
            while self._closers:
                self._closers.pop()()
            lib.vkDestroyDevice(self.device, ffi.NULL)
            self.device = None
        if self._messenger is not None:
            self._destroy_messenger(self.instance, self._messenger, ffi.NULL)
            self._messenger = None
        if self.instance is not None:
            lib.vkDestroyInstance(self.instance, ffi.NULL)
            self.instance = None
        self._keep.clear()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def memory_type(self, required: int, preferred: int = 0, type_bits: int = 0xFFFFFFFF) -> int:
        """Index of a memory type with `required` flags (and `preferred` if any has them)."""
        mem = self.memory_properties
        best = -1
        for i in range(mem.memoryTypeCount):
            flags = mem.memoryTypes[i].propertyFlags
            if not (type_bits >> i) & 1 or (flags & required) != required:
                continue
            if (flags & preferred) == preferred:
                return i
            if best < 0:
                best = i
        if best < 0:
            raise VulkanError(f"no memory type with flags 0x{required:x}")
        return best

    def validation_errors(self) -> list[Message]:
        return list(self.messages)
