"""`.vxm`: a compiled model — plan buckets, weights and metadata in one file.

The file is one msgpack map whose entries are, in this order:

    magic           "VXM"
    format_version  int (this vknn writes FORMAT_VERSION, reads SUPPORTED_VERSIONS)
    vknn_version    the writer's vknn version
    created_by      what wrote it (e.g. "vknn compile model.onnx ...")
    precision       the default Config.precision of a session on it
    metadata        model name, producer, declared inputs/outputs (dims may be
                    symbolic), bucket shapes, compile pipeline, dims, target caps
    weights         [encoded array]: every plan constant, stored once however
                    many buckets use it (deduplicated by content hash)
    buckets         [encoded plan] (plan_codec; constants refer to `weights` by index)
    vkd             the printed `vkd` module (for inspection; the runtime ignores it)
    content_hash    sha256 (hex) of every byte of the file before this entry

`content_hash` is the last entry and nothing follows it, so the hash covers the
map header and every other field exactly as written (the writer packs them in
this fixed order), and checking it needs no re-encoding.

Loading needs msgpack and numpy only: no xDSL, no compiler. Every problem —
not a .vxm, an unsupported version, a truncated file, a hash mismatch, bad
content — is a `ModelLoadError` naming the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from vknn.errors import ModelLoadError
from vknn.runtime.plan import Plan
from vknn.runtime.codec import (
    TAG,
    PlanCodecError,
    decode_array,
    decode_plan,
    encode_array,
    encode_plan,
)

MAGIC = "VXM"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
SUFFIX = ".vxm"
FIELDS = (
    "magic",
    "format_version",
    "vknn_version",
    "created_by",
    "precision",
    "metadata",
    "weights",
    "buckets",
    "vkd",
)
_MAGIC_BYTES = msgpack.packb("magic") + msgpack.packb(MAGIC)


@dataclass
class VxmModel:
    """A decoded .vxm file."""

    path: str
    format_version: int
    vknn_version: str
    created_by: str
    precision: str
    metadata: dict[str, Any]
    plans: list[Plan]
    vkd: str
    weights: list[np.ndarray] = field(default_factory=list)


def looks_like_vxm(head: bytes) -> bool:
    """Whether the first bytes of a file are a .vxm's (a map whose first entry is the magic)."""
    return _MAGIC_BYTES in head[:16]


def is_vxm(model: Any) -> bool:
    """A path ending in .vxm, a file starting with the .vxm magic, or such bytes."""
    if isinstance(model, bytes | bytearray):
        return looks_like_vxm(bytes(model[:16]))
    if isinstance(model, str | Path):
        path = Path(model)
        if path.suffix == SUFFIX:
            return True
        try:
            with open(path, "rb") as f:
                return looks_like_vxm(f.read(16))
        except OSError:
            return False
    return False


# -- writing -----------------------------------------------------------------


class WeightTable:
    """Plan constants stored once: equal arrays (dtype, shape, bytes) share an id."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self._ids: dict[bytes, int] = {}

    def add(self, array: np.ndarray) -> dict[str, Any]:
        enc = encode_array(array)
        key = hashlib.sha256(msgpack.packb(enc)).digest()
        index = self._ids.get(key)
        if index is None:
            index = self._ids[key] = len(self.entries)
            self.entries.append(enc)
        return {TAG: "w", "id": index}


def encode_vxm(
    plans: list[Plan],
    *,
    precision: str,
    metadata: dict[str, Any],
    vkd: str,
    created_by: str,
) -> bytes:
    """The bytes of a .vxm file holding `plans` (one per bucket)."""
    from vknn import __version__

    table = WeightTable()
    buckets = [encode_plan(p, weight=table.add) for p in plans]
    values = {
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "vknn_version": __version__,
        "created_by": created_by,
        "precision": precision,
        "metadata": metadata,
        "weights": table.entries,
        "buckets": buckets,
        "vkd": vkd,
    }
    packer = msgpack.Packer(use_bin_type=True)
    parts = [packer.pack_map_header(len(FIELDS) + 1)]
    for key in FIELDS:
        parts += [packer.pack(key), packer.pack(values[key])]
    body = b"".join(parts)
    digest = hashlib.sha256(body).hexdigest()
    return body + packer.pack("content_hash") + packer.pack(digest)


def save_vxm(path: str | Path, plans: list[Plan], **kwargs: Any) -> int:
    """Write a .vxm file (see `encode_vxm`); return its size in bytes."""
    data = encode_vxm(plans, **kwargs)
    Path(path).write_bytes(data)
    return len(data)


# -- reading -----------------------------------------------------------------


def load_vxm(path: str | Path) -> VxmModel:
    """Read and check a .vxm file; ModelLoadError (naming it) on any problem."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ModelLoadError(f"{path}: cannot read the compiled model: {e.strerror or e}") from None
    return decode_vxm(data, str(path))


def decode_vxm(data: bytes, where: str = "<bytes>") -> VxmModel:
    def fail(problem: str) -> ModelLoadError:
        return ModelLoadError(f"{where}: {problem}")

    if not data:
        raise fail("the file is empty, not a .vxm compiled model")
    up = msgpack.Unpacker(raw=False, max_buffer_size=max(len(data), 1))
    up.feed(data)
    # Magic and version first, so a wrong file says so instead of "corrupt".
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
            "content hash mismatch: the file was tampered with or is corrupt "
            f"(stored {str(want)[:16]}..., computed {got[:16]}...)"
        )
    missing = [k for k in FIELDS if k not in fields]
    if missing:
        raise fail(f"the file is corrupt (missing {', '.join(missing)})")
    try:
        weights = [decode_array(w) for w in fields["weights"]]

        def weight(ref: Any) -> np.ndarray:
            if not isinstance(ref, dict) or ref.get(TAG) != "w":
                raise PlanCodecError(
                    f"a plan constant is not a weights-table reference: {ref!r:.60}"
                )
            return weights[int(ref["id"])]

        plans = [decode_plan(b, weight=weight) for b in fields["buckets"]]
    except (PlanCodecError, KeyError, IndexError, TypeError, ValueError) as e:
        raise fail(f"the file's plans are corrupt: {e}") from None
    if not plans:
        raise fail("the file holds no plan bucket")
    return VxmModel(
        path=where,
        format_version=version,
        vknn_version=str(fields["vknn_version"]),
        created_by=str(fields["created_by"]),
        precision=str(fields["precision"]),
        metadata=dict(fields["metadata"]),
        plans=plans,
        vkd=str(fields["vkd"]),
        weights=weights,
    )
