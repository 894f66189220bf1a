"""The model cache file: round trip, and every kind of damage discarded with
one line on stderr, never trusted and never an exception."""

from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest

from vknn.runtime.model_cache import CacheGuard, ModelCache, kernel_hash

GUARD = CacheGuard("k" * 64, (0x10005, 0, 1, "ab" * 16), "m" * 64)


def _filled(path: Path) -> ModelCache:
    cache = ModelCache.open(path, GUARD)
    v = cache.variant("precision=high")
    v.plans["x=1x3"] = b"plan"
    v.pipeline_cache = b"\x01\x02"
    v.spirv["conv/fp32"] = b"\x03\x02\x23\x07"
    v.weights["0/5"] = bytes(range(256))
    v.autotune["conv:1x1"] = {"tile": 16, "splitk": 2}
    cache.mark_dirty()
    assert cache.save()
    return cache


def test_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.onnx.vkcache"
    _filled(path)
    again = ModelCache.open(path, GUARD)
    assert again.loaded and again.discarded is None and not again.dirty
    v = again.variants["precision=high"]
    assert v.plans == {"x=1x3": b"plan"} and v.pipeline_cache == b"\x01\x02"
    assert v.weights["0/5"] == bytes(range(256))
    assert v.autotune == {"conv:1x1": {"tile": 16, "splitk": 2}}
    assert capsys.readouterr().err == ""


def test_unchanged_cache_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "m.vkcache"
    _filled(path)
    os.utime(path, (1, 1))
    again = ModelCache.open(path, GUARD)
    again.variant("precision=high")  # reading an existing variant adds nothing
    assert not again.save()
    assert path.stat().st_mtime == 1


def _damaged(path: Path, capsys: pytest.CaptureFixture[str], guard: CacheGuard = GUARD) -> str:
    cache = ModelCache.open(path, guard)
    assert not cache.loaded and cache.variants == {}
    assert cache.discarded is not None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "discarded" in err and str(path) in err
    # Rebuilt: the next save writes a valid file again.
    cache.variant("v").autotune["k"] = 1
    assert cache.save()
    assert ModelCache.open(path, guard).loaded
    return cache.discarded


def test_truncated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.vkcache"
    _filled(path)
    data = path.read_bytes()
    for cut in (len(data) // 2, 10, 1):
        path.write_bytes(data[:cut])
        assert "truncated" in _damaged(path, capsys)
        _filled(path)


def test_flipped_byte_in_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.vkcache"
    _filled(path)
    data = bytearray(path.read_bytes())
    i = data.index(bytes(range(64, 80)))  # inside the prepacked weight bytes
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    assert "checksum" in _damaged(path, capsys)


def test_garbage_and_foreign_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.vkcache"
    path.write_bytes(os.urandom(4096))
    _damaged(path, capsys)
    path.write_bytes(msgpack.packb({"magic": "something else"}))
    assert "not a VKNN model cache" in _damaged(path, capsys)
    path.write_bytes(b"")
    _damaged(path, capsys)


def test_other_format_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.vkcache"
    _filled(path)
    outer = msgpack.unpackb(path.read_bytes())
    outer["format"] = 999
    path.write_bytes(msgpack.packb(outer, use_bin_type=True))
    assert "format version 999" in _damaged(path, capsys)


@pytest.mark.parametrize(
    "guard, why",
    [
        (CacheGuard(GUARD.kernel_hash, (0x10DE, 0x2335, 1, "cd" * 16), GUARD.model_hash), "device"),
        (CacheGuard(GUARD.kernel_hash, (0x10005, 0, 2, "ab" * 16), GUARD.model_hash), "driver"),
        (CacheGuard("x" * 64, GUARD.device, GUARD.model_hash), "kernels changed"),
        (CacheGuard(GUARD.kernel_hash, GUARD.device, "y" * 64), "model changed"),
    ],
)
def test_foreign_or_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], guard: CacheGuard, why: str
) -> None:
    path = tmp_path / "m.vkcache"
    _filled(path)
    assert why in _damaged(path, capsys, guard)


def test_unwritable_folder_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing-dir" / "m.vkcache"
    cache = ModelCache.open(path, GUARD)
    cache.variant("v").autotune["k"] = 1
    cache.mark_dirty()
    assert not cache.save()
    assert "not written" in capsys.readouterr().err


def test_kernel_hash_is_stable() -> None:
    assert kernel_hash() == kernel_hash() and len(kernel_hash()) == 64
