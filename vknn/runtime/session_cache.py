"""A session's view of its model cache (`vknn.runtime.model_cache`).

`Session` calls, in order: `open_for(...)` once, `plan(shapes)` /
`store_plan(shapes, plan)` per bucket, `executors_begin()` /
`executors_end()` around building a bucket's Vulkan executors, and `save()`
at teardown. Everything here is best effort: a cache problem costs speed,
never correctness (the guard and the checksum decide what is trusted).

What makes one variant (a separate entry in the file): everything that
changes the compiled plan or the pipelines (precision, effective fastmath,
the compiler pipeline, backends, disabled ops, island folding, dims).
Shape buckets are plans inside a variant, keyed by the requested shapes.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import weakref
from pathlib import Path
from typing import Any

import msgpack

from vknn.config import Config
from vknn.runtime.model_cache import (
    CacheGuard,
    CacheVariant,
    ModelCache,
    default_cache_path,
    hash_files,
    kernel_hash,
    warn,
)
from vknn.runtime.plan import Plan

DISABLED = ("", "off", "none")
"""Config.cache_file values that turn the cache off."""

_OPEN: weakref.WeakSet[SessionCache] = weakref.WeakSet()


def _save_all_at_exit() -> None:
    for c in list(_OPEN):
        c.save()


atexit.register(_save_all_at_exit)


def cache_path(config: Config, model_path: Path | None) -> Path | None:
    """Where this session's cache lives (None: no cache). Default: next to the
    model file; `VKNN_MODEL_CACHE=0` turns the default off (the test suite
    does, so it never writes next to shared model files)."""
    if config.cache_file is not None:
        if config.cache_file.strip().lower() in DISABLED:
            return None
        return Path(config.cache_file)
    if model_path is None or os.environ.get("VKNN_MODEL_CACHE", "1") in ("0", "off"):
        return None
    return default_cache_path(model_path)


def model_files(model_path: Path, proto: Any) -> list[Path]:
    """The model file and the external-data files its tensors name."""
    files = [model_path]
    if proto is None:
        return files
    seen: set[str] = set()
    tensors = list(proto.graph.initializer)
    for t in tensors:
        for entry in t.external_data:
            if entry.key == "location" and entry.value not in seen:
                seen.add(entry.value)
                files.append(model_path.parent / entry.value)
    return files


def variant_key(config: Config, fastmath: bool) -> str:
    parts = {
        "precision": config.precision,
        "fastmath": fastmath,
        "pipeline": config.pipeline,
        "backends": ",".join(config.backends),
        "disable": ",".join(sorted(config.disabled_vk_ops)),
        "fold": config.fold_gpu_islands,
        "layout": config.device_layout,
        "dims": sorted(config.dims.items()),
    }
    return ";".join(f"{k}={v}" for k, v in parts.items())


def shapes_key(shapes: dict[str, tuple[int, ...]] | None) -> str:
    if not shapes:
        return "default"
    return ",".join(f"{k}={'x'.join(map(str, v))}" for k, v in sorted(shapes.items()))


class SessionCache:
    def __init__(self, cache: ModelCache, variant: CacheVariant, pipelines: Any) -> None:
        self.cache = cache
        self.variant = variant
        self.pipelines = pipelines
        self.plan_hits = 0
        self.plan_misses = 0
        self._autotune_before = 0
        _OPEN.add(self)

    @classmethod
    def open_for(
        cls,
        config: Config,
        model_path: Path | None,
        proto: Any,
        device: Any,
        pipelines: Any,
        fastmath: bool,
    ) -> SessionCache | None:
        path = cache_path(config, model_path)
        if path is None:
            return None
        try:
            if model_path is not None:
                model_hash = hash_files(model_files(model_path, proto))
            else:  # an in-memory model: its serialized bytes are its identity
                model_hash = hashlib.sha256(proto.SerializeToString()).hexdigest()
        except OSError as e:
            warn(f"model cache off: cannot hash the model ({e.strerror or e})")
            return None
        if device is not None:
            v, d, drv, uuid = device.caps.identity
            ident: tuple[int, int, int, str] = (v, d, drv, uuid.hex())
        else:
            ident = (0, 0, 0, "cpu")
        cache = ModelCache.open(path, CacheGuard(kernel_hash(), ident, model_hash))
        self = cls(cache, cache.variant(variant_key(config, fastmath)), pipelines)
        if pipelines is not None:
            from vknn.runtime.vulkan.pipeline import preload_spirv

            if self.variant.spirv:
                preload_spirv({_ident_of(k): b for k, b in self.variant.spirv.items()})
            if self.variant.pipeline_cache:
                pipelines.cache.merge(self.variant.pipeline_cache)
        return self

    # -- plans -------------------------------------------------------------
    def plan(self, shapes: dict[str, tuple[int, ...]] | None) -> Plan | None:
        blob = self.variant.plans.get(shapes_key(shapes))
        if blob is None:
            self.plan_misses += 1
            return None
        from vknn.runtime.codec import decode_plan

        try:
            plan = decode_plan(msgpack.unpackb(blob, raw=False, strict_map_key=False))
        except Exception as e:  # the checksum passed, so this is a codec change
            warn(f"model cache {self.cache.path}: a cached plan is unreadable ({e}); recompiling")
            del self.variant.plans[shapes_key(shapes)]
            self.cache.mark_dirty()
            self.plan_misses += 1
            return None
        self.plan_hits += 1
        return plan

    def store_plan(self, shapes: dict[str, tuple[int, ...]] | None, plan: Plan) -> None:
        """Encode `plan` now (before partitioning mutates it)."""
        from vknn.runtime.codec import encode_plan

        self.variant.plans[shapes_key(shapes)] = msgpack.packb(encode_plan(plan), use_bin_type=True)
        self.cache.mark_dirty()

    # -- pipelines, SPIR-V, autotune ---------------------------------------
    def executors_begin(self, autotune_table: dict[str, Any]) -> None:
        if self.pipelines is not None:
            self.pipelines.requested = set()  # this bucket's pipelines only
        self._autotune_before = len(autotune_table)

    def executors_end(self, autotune_table: dict[str, Any]) -> None:
        p = self.pipelines
        if p is not None:
            from vknn.runtime.vulkan.pipeline import pipeline_spirv, spirv_identity

            used, p.requested = p.requested or set(), None
            for key, _ in used:
                k = _key_of(spirv_identity(key, p.device.caps))
                if k not in self.variant.spirv:
                    self.variant.spirv[k] = pipeline_spirv(key, p.device.caps)
                    self.cache.mark_dirty()
            ids = {_pipeline_id(k) for k in used}
            if not ids <= set(self.variant.pipelines):  # the blob lacks some of them
                self.variant.pipeline_cache = p.cache.data()
                self.variant.pipelines = sorted(ids | set(self.variant.pipelines))
                self.cache.mark_dirty()
        if len(autotune_table) > self._autotune_before:
            self.variant.autotune = dict(autotune_table)
            self.cache.mark_dirty()

    # -- prepacked weights ---------------------------------------------------
    def prepack_store(self, scope: str) -> PrepackView:
        """The executor-facing store of one bucket's segment (`scope`)."""
        return PrepackView(self, scope)

    def save(self) -> bool:
        return self.cache.save()


class PrepackView:
    """`executor.PrepackStore` over a variant's weights table, one scope per
    (bucket, segment) so equal slot names of different plans never meet."""

    def __init__(self, owner: SessionCache, scope: str) -> None:
        self.owner, self.scope = owner, scope

    def get(self, key: str) -> bytes | None:
        return self.owner.variant.weights.get(f"{self.scope}/{key}")

    def put(self, key: str, data: bytes) -> None:
        self.owner.variant.weights[f"{self.scope}/{key}"] = data
        self.owner.cache.mark_dirty()


def _pipeline_id(key: Any) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:20]


def _key_of(ident: tuple[str, str, bool, bool, tuple[str, ...]]) -> str:
    shader, variant, fast, rte, types = ident
    return f"{shader}|{variant}|{int(fast)}|{int(rte)}|{','.join(types)}"


def _ident_of(key: str) -> tuple[str, str, bool, bool, tuple[str, ...]]:
    shader, variant, fast, rte, types = key.split("|")
    return (shader, variant, fast == "1", rte == "1", tuple(t for t in types.split(",") if t))
