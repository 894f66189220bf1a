"""The model cache: one file per model that makes the second session fast.

    <model>.onnx.vkcache   (Config.cache_file; default next to the model)

For each cache-affecting configuration (a *variant*: precision, backends,
disabled ops, device layout, fast math, autotune mode, compiler pipeline,
dims, and the device the program was compiled for) it holds the compiled
programs per input-shape bucket (`vknn.runtime.program`: a hit does no
compiler work, imports neither onnx nor xDSL), the autotune table, the
driver's VkPipelineCache blob and the declared inputs and outputs.

Trust. The file is authenticated: an HMAC-SHA256 under a per-user secret
(`~/.cache/vknn/secret`, 32 random bytes, mode 0600, made on first use; one
with looser permissions or another owner is replaced) covers the whole
payload, so a cache this user's VKNN did not write — edited weights, swapped
kernels, crafted metadata — is discarded and rebuilt, never trusted. It is
also guarded: this format, a hash of VKNN's own sources (kernels, compiler),
and the model (sha256 of the model file and of every external-data file the
program was compiled from, which the loader checked to be regular files in
the model's folder). Anything else — truncated, corrupt, foreign, stale — is
discarded with one line on stderr; reading a cache never raises.

Bounds. Only a regular file of at most `MAX_FILE` bytes is read (never a
FIFO or a device); a path that exists and is not a cache is never
overwritten (one warning, the session runs without a cache). Splat weights
cost nothing (programs store them as one element), so a variant is about the
size of the model's real weights; the whole file is capped at
`cap_bytes(model)`, evicting the least recently used variants. Nothing is
written for a session that never ran successfully.

Writes happen at `Session.close()` (or collection), only when something was
added: under an exclusive lock on `<cache>.lock`, the file on disk is re-read
and its variants merged with ours (two processes writing different variants
keep both), then written to a temporary file and renamed over it; leftover
temporary files of crashed writers are removed.

This module needs msgpack and the standard library only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from vknn.runtime.user_cache import mac, secret, user_cache_dir  # noqa: F401  (re-exported)

MAGIC = "VKNN-CACHE"
FORMAT_VERSION = 2
SUFFIX = ".vkcache"
MAX_FILE = 1 << 34
"""Largest cache file read (16 GiB)."""
STALE_TMP_SECONDS = 600


def cap_bytes(model_bytes: int) -> int:
    """The size a cache file may grow to: a few variants of the model."""
    return 3 * model_bytes + (64 << 20)


def _warn(msg: str) -> None:
    print(f"vknn: {msg}", file=sys.stderr)


def _mac(payload: bytes) -> str:
    return mac(payload).hex()


@functools.cache
def kernel_hash() -> str:
    """A hash of VKNN's own sources: what every cached program was built from."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.suffix in (".py", ".comp", ".glsl") and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def hash_file(path: Path, limit: int = 1 << 40) -> tuple[str, int]:
    """(sha256, size) of a regular file (ValueError otherwise)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise ValueError(f"{path} is not a regular file of bounded size")
        h = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        return h.hexdigest(), st.st_size
    finally:
        os.close(fd)


@dataclass
class Variant:
    """Everything cached for one configuration."""

    programs: dict[str, Any] = field(default_factory=dict)
    """bucket key -> program data"""
    autotune: dict[str, Any] = field(default_factory=dict)
    pipeline_cache: bytes = b""
    io: dict[str, Any] = field(default_factory=dict)
    """Declared inputs and outputs (so a hit needs no ONNX parsing)."""
    used: float = 0.0


@dataclass
class ModelCache:
    path: Path
    guard: dict[str, Any]
    variant_key: str
    variants: dict[str, Variant] = field(default_factory=dict)
    dirty: bool = False
    ran: bool = False
    """Set by the session after a successful run: only then is it written."""
    model_bytes: int = 0

    @property
    def variant(self) -> Variant:
        v = self.variants.get(self.variant_key)
        if v is None:
            v = self.variants[self.variant_key] = Variant()
        return v

    # -- opening -------------------------------------------------------------

    external: list[list[Any]] = field(default_factory=list)
    """[path relative to the model's folder, sha256, size] of each
    external-data file the programs were compiled from (checked again at
    every open; the cache file may live elsewhere: Config.cache_file)."""
    model_dir: Path | None = None

    @classmethod
    def open_for(cls, config: Any, model_path: Path | None, variant_key: str) -> ModelCache | None:
        """The cache of a model file for a session with this config (None
        when caching is off or impossible); a bad file is discarded."""
        path = cache_path(config, model_path)
        if path is None or model_path is None:
            return None
        try:
            model_hash, size = hash_file(model_path)
        except (OSError, ValueError):
            return None
        guard = {"format": FORMAT_VERSION, "kernels": kernel_hash(), "model": model_hash}
        cache = cls(path, guard, variant_key, model_bytes=size)
        cache.model_dir = model_path.parent.resolve()
        cache._read()
        return cache

    def set_external(self, files: list[Path]) -> None:
        """Record the external-data files (inside the model's folder, checked
        by the loader) the programs are compiled from."""
        folder = self.model_dir or self.path.parent.resolve()
        out = []
        for p in files:
            h, n = hash_file(p)
            out.append([str(p.resolve().relative_to(folder)), h, n])
        if out != self.external:
            self.external = out
            self.model_bytes = sum(n for _, _, n in out) + self.model_bytes
            self.dirty = True

    def _external_ok(self, entries: Any) -> bool:
        folder = self.model_dir or self.path.parent.resolve()
        for rel, h, n in entries:
            p = (folder / rel).resolve()
            if not p.is_relative_to(folder):
                return False
            try:
                if hash_file(p) != (h, n):
                    return False
            except (OSError, ValueError):
                return False
        return True

    def _read(self) -> None:
        why = None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        except OSError as e:
            why = f"unreadable ({e.strerror})"
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            why = "not a regular file; left alone"
        elif st is not None and st.st_size > MAX_FILE:
            why = "too large"
        data = b""
        if why is None:
            try:
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
                with os.fdopen(fd, "rb") as f:
                    size = os.fstat(f.fileno()).st_size  # this inode's (a writer renames)
                    # read(n) allocates n bytes up front: never read(MAX_FILE)
                    data = f.read(min(MAX_FILE, size) + 1)
            except OSError as e:
                why = f"unreadable ({e.strerror})"
        if why is None:
            why = self._load(data)
        if why is not None:
            self.variants = {}
            self.dirty = True
            _warn(f"model cache {self.path} discarded ({why}); rebuilding it")

    def _load(self, data: bytes) -> str | None:
        try:
            outer = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except Exception as e:
            if len(data) < len(HEADER) and _starts_like_a_cache(data):
                return "truncated before its header"
            if not _starts_like_a_cache(data[: len(HEADER)]):
                return "not a VKNN model cache"
            return "truncated" if "incomplete" in str(e) else "corrupt"
        if not isinstance(outer, dict) or outer.get("magic") != MAGIC:
            return "not a VKNN model cache"
        if outer.get("format") != FORMAT_VERSION:
            return (
                f"written by another VKNN version (format {outer.get('format')!r}, "
                f"this VKNN reads {FORMAT_VERSION})"
            )
        payload, mac = outer.get("payload"), outer.get("mac")
        if not isinstance(payload, bytes) or not isinstance(mac, str):
            return "corrupt"
        if not hmac.compare_digest(mac, _mac(payload)):
            return "not written by this user's VKNN (authentication failed)"
        try:
            body = msgpack.unpackb(payload, raw=False, strict_map_key=True)
            if body.get("guard") != self.guard:
                return "stale: the model or VKNN changed since it was written"
            if not self._external_ok(body["external"]):
                return "stale: the model's external data changed since it was written"
            self.external = list(body["external"])
            for key, v in body["variants"].items():
                self.variants[key] = Variant(
                    programs=dict(v["programs"]),
                    autotune=dict(v["autotune"]),
                    pipeline_cache=bytes(v["pipeline_cache"]),
                    io=dict(v["io"]),
                    used=float(v["used"]),
                )
        except Exception:
            return "corrupt"
        return None

    # -- contents --------------------------------------------------------------

    def program(self, bucket: str) -> Any:
        v = self.variants.get(self.variant_key)
        if v is None:
            return None
        p = v.programs.get(bucket)
        if p is not None:
            v.used = time.time()
        return p

    def store_program(self, bucket: str, program: Any, io: dict[str, Any]) -> None:
        v = self.variant
        v.programs[bucket] = program
        v.io = io
        v.used = time.time()
        self.dirty = True

    def store_pipeline_cache(self, blob: bytes) -> None:
        if blob and blob != self.variant.pipeline_cache:
            self.variant.pipeline_cache = blob
            self.dirty = True

    # -- writing ---------------------------------------------------------------

    def save(self) -> None:
        """Write if something was added and a run succeeded (module docstring)."""
        if not (self.dirty and self.ran):
            return
        try:
            with self._locked():
                self._merge_from_disk()
                self._evict()
                self._write()
            self.dirty = False
        except OSError as e:
            _warn(f"model cache {self.path} not written ({e.strerror or e})")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _merge_from_disk(self) -> None:
        mine = self.variants
        self.variants = {}
        try:
            st = os.stat(self.path)
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE:
                with open(self.path, "rb") as f:
                    if self._load(f.read()) is not None:
                        self.variants = {}
        except OSError:
            pass
        for key, v in mine.items():
            theirs = self.variants.get(key)
            if theirs is not None:
                v.programs = {**theirs.programs, **v.programs}
                v.autotune = {**theirs.autotune, **v.autotune}
            self.variants[key] = v

    def _evict(self) -> None:
        cap = cap_bytes(self.model_bytes)
        while len(self.variants) > 1 and len(self._payload()) > cap:
            oldest = min(
                (k for k in self.variants if k != self.variant_key),
                key=lambda k: self.variants[k].used,
            )
            del self.variants[oldest]

    def _payload(self) -> bytes:
        body = {
            "guard": self.guard,
            "external": self.external,
            "variants": {
                k: {
                    "programs": v.programs,
                    "autotune": v.autotune,
                    "pipeline_cache": v.pipeline_cache,
                    "io": v.io,
                    "used": v.used,
                }
                for k, v in self.variants.items()
            },
        }
        return msgpack.packb(body, use_bin_type=True)

    def _write(self) -> None:
        if self.path.exists() and not is_cache_file(self.path):
            _warn(f"{self.path} exists and is not a VKNN model cache; not overwritten")
            return
        payload = self._payload()
        data = msgpack.packb(
            {"magic": MAGIC, "format": FORMAT_VERSION, "mac": _mac(payload), "payload": payload},
            use_bin_type=True,
        )
        _remove_stale_temps(self.path)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)


HEADER = b"\x84" + msgpack.packb("magic") + msgpack.packb(MAGIC)
"""How every cache file starts (the outer map's header, then the magic entry)."""


def is_cache_file(path: Path) -> bool:
    """A regular file that starts like a VKNN model cache, or one cut before
    the end of that start (empty, or a prefix of it: a damaged cache, which
    is rebuilt; anything else is somebody's file and never overwritten)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            head = f.read(len(HEADER))
    except OSError:
        return False
    return _starts_like_a_cache(head)


def _starts_like_a_cache(head: bytes) -> bool:
    """A msgpack map header (any size) then the magic entry, or a prefix of that."""
    entry = HEADER[1:]
    if not head:
        return True
    if not 0x80 <= head[0] <= 0x8F:
        return False
    return head[1:].startswith(entry) or (len(head) <= len(entry) and entry.startswith(head[1:]))


def _remove_stale_temps(path: Path) -> None:
    now = time.time()
    for p in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - p.stat().st_mtime > STALE_TMP_SECONDS:
                p.unlink()


def cache_path(config: Any, model_path: Path | None) -> Path | None:
    """Where a session's cache lives (None: no cache)."""
    setting = getattr(config, "cache_file", None)
    if setting == "off":
        return None
    if setting:
        path = Path(setting)
        if path.exists() and not is_cache_file(path):
            _warn(f"Config.cache_file {path} is not a VKNN model cache; running without one")
            return None
        return path
    if model_path is None or os.environ.get("VKNN_MODEL_CACHE", "1") == "0":
        return None
    path = model_path.with_name(model_path.name + SUFFIX)
    if path.exists() and not is_cache_file(path):
        _warn(f"{path} is not a VKNN model cache; running without one")
        return None
    return path


def describe(path: Path) -> dict[str, Any]:
    """What `vknn cache list` shows of one cache file (without trusting it)."""
    out: dict[str, Any] = {"path": str(path), "bytes": path.stat().st_size}
    try:
        outer = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=True)
        ok = hmac.compare_digest(outer["mac"], _mac(outer["payload"]))
        body = msgpack.unpackb(outer["payload"], raw=False, strict_map_key=True)
        out["authentic"] = ok
        out["variants"] = [
            {"key": k, "buckets": len(v["programs"]), "used": v["used"]}
            for k, v in body["variants"].items()
        ]
    except Exception:
        out["authentic"] = False
        out["variants"] = []
    return out
