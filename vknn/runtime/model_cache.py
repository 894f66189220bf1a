"""The per-model cache: one msgpack file that makes the second session fast.

    <model>.onnx.vkcache   (Config.cache_file; default next to the model)

The file holds, for each cache-affecting configuration (a *variant*: precision,
fastmath, compiler pipeline, shape buckets), everything a session would
otherwise recompute: the compiled plans, the driver's VkPipelineCache blob,
the post-processed SPIR-V of every pipeline, prepacked (device-format)
weights and the autotune table.

It is trusted only when its guard matches the running process exactly:

- format version of this module,
- kernel hash (every shader source and VKNN's own sources: what all the
  embedded SPIR-V and plans were built from),
- device identity (vendor, device, driver version, pipelineCacheUUID),
- model hash (sha256 of the model file's bytes and its external data),

and when the payload's sha256 matches. A truncated, corrupt, foreign-device
or stale file is discarded with one line on stderr and rebuilt; reading a
cache never raises. The file is written at teardown, only if something was
added, by write-then-rename (a crash never leaves a torn file).

This module needs msgpack and the standard library only (a `.vxm` session
runs without xDSL, and so does the cache).
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

MAGIC = "vknn-model-cache"
FORMAT_VERSION = 1
SUFFIX = ".vkcache"


@dataclass(frozen=True)
class CacheGuard:
    """What a cache file must have been written for to be trusted."""

    kernel_hash: str
    device: tuple[int, int, int, str]
    """(vendor id, device id, driver version, pipelineCacheUUID hex)"""
    model_hash: str

    def to_plain(self) -> dict[str, Any]:
        return {
            "kernel_hash": self.kernel_hash,
            "device": list(self.device),
            "model_hash": self.model_hash,
        }

    def mismatch(self, stored: Any) -> str | None:
        """Why a stored guard does not match this one (None when it does)."""
        if not isinstance(stored, dict):
            return "corrupt header"
        if stored.get("device") != list(self.device):
            return "written for another device or driver"
        if stored.get("kernel_hash") != self.kernel_hash:
            return "stale: VKNN's kernels changed since it was written"
        if stored.get("model_hash") != self.model_hash:
            return "stale: the model changed since it was written"
        return None


@dataclass
class CacheVariant:
    """Everything cached for one cache-affecting configuration."""

    plans: dict[str, bytes] = field(default_factory=dict)
    """bucket key (input shapes) -> encoded plan (runtime.plan_codec)"""
    pipeline_cache: bytes = b""
    """vkGetPipelineCacheData of the pipelines this model's sessions built"""
    pipelines: list[str] = field(default_factory=list)
    """ids of the pipelines that blob holds (a session building only these
    leaves the file alone)"""
    spirv: dict[str, bytes] = field(default_factory=dict)
    """pipeline SPIR-V key -> the post-processed module given to the driver"""
    weights: dict[str, bytes] = field(default_factory=dict)
    """prepacked constant key -> device-format bytes"""
    autotune: dict[str, Any] = field(default_factory=dict)
    """autotune table: kernel key -> chosen configuration"""

    def to_plain(self) -> dict[str, Any]:
        return {
            "plans": self.plans,
            "pipeline_cache": self.pipeline_cache,
            "pipelines": self.pipelines,
            "spirv": self.spirv,
            "weights": self.weights,
            "autotune": self.autotune,
        }

    @classmethod
    def from_plain(cls, d: Any) -> CacheVariant:
        if not isinstance(d, dict):
            raise ValueError("variant is not a map")
        v = cls(
            plans=d.get("plans", {}),
            pipeline_cache=d.get("pipeline_cache", b""),
            pipelines=d.get("pipelines", []),
            spirv=d.get("spirv", {}),
            weights=d.get("weights", {}),
            autotune=d.get("autotune", {}),
        )
        for name in ("plans", "spirv", "weights"):
            table = getattr(v, name)
            if not isinstance(table, dict) or not all(
                isinstance(k, str) and isinstance(b, bytes) for k, b in table.items()
            ):
                raise ValueError(f"variant field {name!r} is malformed")
        if (
            not isinstance(v.pipeline_cache, bytes)
            or not isinstance(v.autotune, dict)
            or not isinstance(v.pipelines, list)
        ):
            raise ValueError("variant is malformed")
        return v


def default_cache_path(model_path: str | Path) -> Path:
    return Path(str(model_path) + SUFFIX)


def hash_files(paths: Iterable[Path]) -> str:
    """sha256 over the bytes of `paths` (a model file and its external data)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def warn(message: str) -> None:
    """The one line a user sees about the cache."""
    print(f"vknn: {message}", file=sys.stderr)


class ModelCache:
    """A model's cache file: loaded (or started empty) at session creation,
    filled by the session, saved at teardown if anything was added."""

    def __init__(self, path: Path, guard: CacheGuard) -> None:
        self.path = Path(path)
        self.guard = guard
        self.variants: dict[str, CacheVariant] = {}
        self.dirty = False
        self.discarded: str | None = None
        """Why an existing file was not trusted (None when it was, or there was none)."""
        self.loaded = False

    @classmethod
    def open(cls, path: str | Path, guard: CacheGuard) -> ModelCache:
        cache = cls(Path(path), guard)
        cache._load()
        return cache

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as e:
            self._discard(f"unreadable ({e.strerror})")
            return
        why = self._parse(data)
        if why is not None:
            self._discard(why)

    def _parse(self, data: bytes) -> str | None:
        try:
            outer = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except msgpack.ExtraData:
            return "corrupt (trailing bytes)"
        except (msgpack.OutOfData, ValueError):
            return "truncated or corrupt"
        except Exception as e:  # msgpack raises several unrelated types on garbage
            return f"corrupt ({type(e).__name__})"
        if not isinstance(outer, dict) or outer.get("magic") != MAGIC:
            return "not a VKNN model cache"
        if outer.get("format") != FORMAT_VERSION:
            return f"format version {outer.get('format')!r}, this VKNN reads {FORMAT_VERSION}"
        why = self.guard.mismatch(outer.get("guard"))
        if why is not None:
            return why
        payload = outer.get("payload")
        if (
            not isinstance(payload, bytes)
            or outer.get("sha256") != hashlib.sha256(payload).hexdigest()
        ):
            return "corrupt (checksum mismatch)"
        try:
            variants = msgpack.unpackb(payload, raw=False, strict_map_key=True)
            if not isinstance(variants, dict):
                return "corrupt payload"
            self.variants = {str(k): CacheVariant.from_plain(v) for k, v in variants.items()}
        except Exception as e:
            self.variants = {}
            return f"corrupt payload ({e})"
        self.loaded = True
        return None

    def _discard(self, why: str) -> None:
        self.discarded = why
        self.variants = {}
        self.dirty = True  # rewrite it even if this session adds nothing new
        warn(f"model cache {self.path} discarded ({why}); rebuilding it")

    def variant(self, key: str) -> CacheVariant:
        v = self.variants.get(key)
        if v is None:
            v = self.variants[key] = CacheVariant()
        return v

    def mark_dirty(self) -> None:
        self.dirty = True

    def encode(self) -> bytes:
        payload = msgpack.packb(
            {k: v.to_plain() for k, v in sorted(self.variants.items())}, use_bin_type=True
        )
        outer = {
            "magic": MAGIC,
            "format": FORMAT_VERSION,
            "guard": self.guard.to_plain(),
            "sha256": hashlib.sha256(payload).hexdigest(),
            "payload": payload,
        }
        return msgpack.packb(outer, use_bin_type=True)

    def save(self) -> bool:
        """Write the file if anything changed; True when written. A write
        failure (read-only folder) is one warning, never an error."""
        if not self.dirty:
            return False
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_bytes(self.encode())
            os.replace(tmp, self.path)
        except OSError as e:
            warn(f"model cache {self.path} not written ({e.strerror or e})")
            try:
                tmp.unlink()
            except OSError:
                pass
            return False
        self.dirty = False
        return True


@functools.cache
def kernel_hash() -> str:
    """sha256 of what every cached artifact was produced from: the shader
    sources and VKNN's own Python sources (compiler passes, kernel recorders,
    SPIR-V post-processing). Not the shader compiler's version: the cache
    holds the SPIR-V itself, so a warm session needs no compiler at all."""
    from vknn.kernels.shaders import shader_dir

    h = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for root in (shader_dir(), package):
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in (".comp", ".glsl", ".py"):
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
