"""The `.vxm` compiled model: one or more programs (one per target), msgpack.

A `.vxm` is a serialized `vkd` module per target (`vknn.serialize`: kernels
with SPIR-V, weights in their device bytes, commands, CPU ops), written by
`vknn compile m.onnx -o m.vxm [--target lavapipe --target nvidia]`. At
load, `VxmModel.select(caps)` takes the first variant the device satisfies
(`target.unmet`), or says which targets the file holds and what the device
lacks. The file is untrusted input: it is read only if it is a regular file
of bounded size, every field is checked (`Program.decode`), and problems are
one `ModelLoadError` line naming the file; SPIR-V is validated on top of
that by the session (`spirv_check.py`).

The map, in this order (the writer packs it so; the reader checks):

| entry | content |
|---|---|
| `magic` | `"VXM"` |
| `format_version` | `2` |
| `vknn_version`, `created_by` | the writer and its command line |
| `weights` | every variant's weight bytes once (deduplicated by content) |
| `variants` | one program each (`runtime.program`), `weights` as indices into the table |
| `content_hash` | sha256 (hex) of every byte before this entry (corruption, not authenticity) |

This module imports no xDSL and no compiler code.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from vknn.errors import ModelLoadError
from vknn.runtime.program import Program, ProgramError, VulkanSegment
from vknn.runtime.target import unmet

MAGIC = "VXM"
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (2,)
SUFFIX = ".vxm"
FIELDS = ("magic", "format_version", "vknn_version", "created_by", "weights", "variants")
MAX_BYTES = 1 << 36
"""Largest .vxm read (64 GiB): a bound, so a device file or a huge sparse
file is refused instead of read forever."""
_MAGIC_BYTES = msgpack.packb("magic") + msgpack.packb(MAGIC)


@dataclass
class VxmModel:
    """A decoded .vxm file."""

    path: str
    format_version: int
    vknn_version: str
    created_by: str
    programs: list[Program]

    @property
    def targets(self) -> list[str]:
        return [p.compiled_for.name for p in self.programs]

    def select(self, caps: Any, vulkan: bool = True) -> Program:
        """The first variant a device with `caps` (None: no device) runs, a
        CPU-only variant needing none; else ModelLoadError saying why not."""
        reasons = []
        for p in self.programs:
            needs_gpu = any(isinstance(s, VulkanSegment) for b in p.buckets for s in b.segments)
            if not needs_gpu:
                return p
            if not vulkan:
                reasons.append(
                    f"'{p.compiled_for.name}' runs on Vulkan (the session's backends exclude it)"
                )
                continue
            if caps is None:
                reasons.append(f"'{p.compiled_for.name}' needs a Vulkan device (there is none)")
                continue
            why = unmet(p.target, caps)
            if why is None:
                return p
            reasons.append(f"'{p.compiled_for.name}' needs {why}")
        raise ModelLoadError(
            f"{self.path}: no variant runs here: "
            + "; ".join(reasons)
            + ". Recompile for this device: `vknn compile <model.onnx> -o "
            + f"{self.path} --target from-device`"
        )


def looks_like_vxm(head: bytes) -> bool:
    """Whether the first bytes of a file are a .vxm's (a map whose first entry is the magic)."""
    return _MAGIC_BYTES in head[:16]


def is_vxm(model: Any) -> bool:
    """A path ending in .vxm, a regular file starting with the .vxm magic, or such bytes."""
    if isinstance(model, bytes | bytearray):
        return looks_like_vxm(bytes(model[:16]))
    if isinstance(model, str | Path):
        path = Path(model)
        if path.suffix == SUFFIX:
            return True
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return False
            with open(path, "rb") as f:
                return looks_like_vxm(f.read(16))
        except OSError:
            return False
    return False


# -- writing -----------------------------------------------------------------


def encode_vxm(programs: list[dict[str, Any]], *, created_by: str) -> bytes:
    """The bytes of a .vxm file holding `programs` (plain program data, one
    per target, in the order a device should try them)."""
    from vknn import __version__

    table: list[bytes] = []
    ids: dict[bytes, int] = {}
    variants = []
    for p in programs:
        refs = []
        for w in p["weights"]:
            key = hashlib.sha256(msgpack.packb(w, use_bin_type=True)).digest()
            if key not in ids:
                ids[key] = len(table)
                table.append(w)
            refs.append(ids[key])
        variants.append({**p, "weights": refs})
    values = {
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "vknn_version": __version__,
        "created_by": created_by,
        "weights": table,
        "variants": variants,
    }
    packer = msgpack.Packer(use_bin_type=True)
    parts = [packer.pack_map_header(len(FIELDS) + 1)]
    for key in FIELDS:
        parts += [packer.pack(key), packer.pack(values[key])]
    body = b"".join(parts)
    digest = hashlib.sha256(body).hexdigest()
    return body + packer.pack("content_hash") + packer.pack(digest)


def save_vxm(path: str | Path, programs: list[dict[str, Any]], created_by: str) -> int:
    """Write a .vxm file (`encode_vxm`), by write-then-rename; return its size."""
    data = encode_vxm(programs, created_by=created_by)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return len(data)


# -- reading -----------------------------------------------------------------


def read_regular(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes
    (never a FIFO, device or directory, which could block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise ModelLoadError(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(f"{path}: not a regular file, so not a {what}")
        if st.st_size > limit:
            raise ModelLoadError(f"{path}: {st.st_size} bytes is larger than any {what} VKNN reads")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(st.st_size + 1)
        if len(data) > limit:
            raise ModelLoadError(f"{path}: larger than any {what} VKNN reads")
        return data
    finally:
        os.close(fd)


def load_vxm(path: str | Path) -> VxmModel:
    """Read and check a .vxm file; ModelLoadError (naming it) on any problem."""
    return decode_vxm(read_regular(path, MAX_BYTES, "compiled model"), str(path))


def decode_vxm(data: bytes, where: str = "<bytes>") -> VxmModel:
    def fail(problem: str) -> ModelLoadError:
        return ModelLoadError(f"{where}: {problem}")

    if not data:
        raise fail("the file is empty, not a .vxm compiled model")
    up = msgpack.Unpacker(raw=False, max_buffer_size=max(len(data), 1), strict_map_key=True)
    up.feed(data)
    try:
        n = up.read_map_header()
        key, magic = up.unpack(), up.unpack()
    except msgpack.OutOfData:
        raise fail("the file is truncated (it ends inside the .vxm header)") from None
    except Exception:
        raise fail("not a .vxm compiled model (no VXM magic)") from None
    if key != "magic" or magic != MAGIC:
        raise fail("not a .vxm compiled model (no VXM magic)")
    try:
        key, version = up.unpack(), up.unpack()
    except msgpack.OutOfData:
        raise fail("the file is truncated (it ends inside the .vxm header)") from None
    except Exception:
        raise fail("the .vxm header is corrupt (no format version)") from None
    if key != "format_version" or not isinstance(version, int) or isinstance(version, bool):
        raise fail("the .vxm header is corrupt (no format version)")
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise fail(
            f".vxm format version {version} is not supported (this vknn reads version "
            f"{supported}); recompile the model with this vknn's `vknn compile`"
        )
    fields: dict[str, Any] = {"magic": magic, "format_version": version}
    hash_at = None
    try:
        if not isinstance(n, int) or n > 64:
            raise ValueError("too many entries")
        for _ in range(n - 2):
            at = up.tell()
            key = up.unpack()
            if key == "content_hash":
                hash_at = at
            fields[key] = up.unpack()
    except msgpack.OutOfData:
        raise fail(f"the file is truncated (it ends after {len(data)} bytes, mid-entry)") from None
    except Exception as e:
        raise fail(f"the file is corrupt (not valid msgpack: {type(e).__name__})") from None
    if hash_at is None:
        raise fail("the file is truncated or corrupt (it has no content hash)")
    if up.tell() != len(data):
        raise fail(f"the file is corrupt ({len(data) - up.tell()} bytes after the content hash)")
    want = fields["content_hash"]
    got = hashlib.sha256(data[:hash_at]).hexdigest()
    if want != got:
        raise fail(
            "content hash mismatch: the file was damaged or edited "
            f"(stored {str(want)[:16]}..., computed {got[:16]}...)"
        )
    missing = [k for k in FIELDS if k not in fields]
    if missing:
        raise fail(f"the file is corrupt (missing {', '.join(missing)})")
    table = fields["weights"]
    variants = fields["variants"]
    if not isinstance(table, list) or not isinstance(variants, list) or not variants:
        raise fail("the file is corrupt (no weights table or no variant)")
    programs = []
    for i, v in enumerate(variants):
        try:
            if not isinstance(v, dict) or not isinstance(v.get("weights"), list):
                raise ProgramError("a variant is not a program")
            refs = v["weights"]
            if not all(isinstance(r, int) and 0 <= r < len(table) for r in refs):
                raise ProgramError("a weight reference is out of range")
            programs.append(Program.decode({**v, "weights": [table[r] for r in refs]}))
        except ProgramError as e:
            raise fail(f"variant {i}: {e}") from None
    return VxmModel(
        path=where,
        format_version=version,
        vknn_version=str(fields["vknn_version"]),
        created_by=str(fields["created_by"]),
        programs=programs,
    )
