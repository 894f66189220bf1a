"""The model cache file (`vknn.model_cache`): round trip of compiled programs,
and every kind of damage discarded with one line on stderr, never trusted
and never an exception. Each test has its own per-user secret (VKNN_CACHE_DIR)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn import model_cache as mc
from vknn.runtime import user_cache
from vknn.runtime.program import Program

KEY = "variant-a"


@pytest.fixture(autouse=True)
def own_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = tmp_path / "user-cache"
    monkeypatch.setenv("VKNN_CACHE_DIR", str(d))
    user_cache.secret.cache_clear()
    yield d
    user_cache.secret.cache_clear()


def _model(path: Path, scale: float = 1.0) -> Path:
    w = (np.arange(12, dtype=np.float32).reshape(4, 3) * scale).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def program_data() -> dict[str, Any]:
    """A real compiled program (CPU backend) of the model, as the cache stores it."""
    from vknn.compiler import LoweringOptions, compile_module, import_any

    m = onnx.load_from_string(_model_bytes())
    return compile_module(import_any(m), LoweringOptions(backends=("cpu",)), None)


def _model_bytes() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        return _model(Path(d) / "m.onnx").read_bytes()


def _open(model: Path, cache: Path, key: str = KEY) -> mc.ModelCache:
    c = mc.ModelCache.open_for(vknn.Config(cache_file=str(cache)), model, key)
    assert c is not None
    return c


IO = {"inputs": [{"name": "x", "dims": [2, 4], "dtype": "float32"}], "outputs": []}


def _filled(model: Path, cache: Path, program: dict[str, Any], key: str = KEY) -> mc.ModelCache:
    c = _open(model, cache, key)
    c.store_program("[('x', (2, 4))]", program, IO)
    c.store_pipeline_cache(b"\x01\x02")
    c.variant.autotune["conv:1x1"] = {"tile": 16, "splitk": 2}
    c.ran = True
    c.save()
    assert cache.exists()
    return c


def test_round_trip(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    again = _open(model, cache)
    assert not again.dirty and set(again.variants) == {KEY}
    v = again.variant
    assert v.pipeline_cache == b"\x01\x02" and v.io == IO
    assert v.autotune == {"conv:1x1": {"tile": 16, "splitk": 2}}
    back = again.program("[('x', (2, 4))]")
    assert back == program_data
    assert Program.decode(back).buckets[0].inputs[0].shape == (2, 4)
    assert again.program("[('x', (9, 4))]") is None
    assert capsys.readouterr().err == ""


def test_unchanged_cache_is_not_rewritten(tmp_path: Path, program_data: dict[str, Any]) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    os.utime(cache, (1, 1))
    again = _open(model, cache)
    assert again.variant.programs  # reading an existing variant adds nothing
    again.program("[('x', (2, 4))]")
    again.ran = True
    again.save()
    assert cache.stat().st_mtime == 1


def test_nothing_written_without_a_successful_run(
    tmp_path: Path, program_data: dict[str, Any]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    c = _open(model, cache)
    c.store_program("b", program_data, IO)
    c.save()
    assert not cache.exists()
    c.ran = True
    c.save()
    assert cache.exists()


def _damaged(
    model: Path, cache: Path, capsys: pytest.CaptureFixture[str], program: dict[str, Any]
) -> str:
    """The cache is discarded with one line naming it, then rebuilt."""
    capsys.readouterr()
    c = _open(model, cache)
    assert c.variants == {} and c.dirty
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "discarded" in err and str(cache) in err, err
    c.store_program("b", program, IO)
    c.ran = True
    c.save()
    assert _open(model, cache).program("b") == program
    assert capsys.readouterr().err == ""
    return err


def test_truncated(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    data = cache.read_bytes()
    for cut in (len(data) // 2, len(data) - 1, 40):
        cache.write_bytes(data[:cut])
        assert "truncated" in _damaged(model, cache, capsys, program_data)
        _filled(model, cache, program_data)


def test_cache_cut_before_its_magic_is_rebuilt(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut inside its first bytes (or emptied): a prefix of how every cache
    starts is a damaged cache, discarded with one line and rebuilt, never
    left to make every later session run without a cache."""
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    for data in (cache.read_bytes()[:10], cache.read_bytes()[:3], b""):
        cache.write_bytes(data)
        assert "truncated before its header" in _damaged(model, cache, capsys, program_data)
        _filled(model, cache, program_data)


def test_flipped_byte_in_payload(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    data = bytearray(cache.read_bytes())
    i = data.index(b"conv:1x1")  # inside the authenticated payload
    data[i] ^= 0x01
    cache.write_bytes(bytes(data))
    assert "authentication failed" in _damaged(model, cache, capsys, program_data)


def test_written_under_another_users_secret(
    tmp_path: Path,
    program_data: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A well-formed cache with crafted contents (another secret): never trusted."""
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    monkeypatch.setenv("VKNN_CACHE_DIR", str(tmp_path / "attacker"))
    user_cache.secret.cache_clear()
    _filled(model, cache, program_data)
    monkeypatch.setenv("VKNN_CACHE_DIR", str(tmp_path / "user"))
    user_cache.secret.cache_clear()
    assert "authentication failed" in _damaged(model, cache, capsys, program_data)


def test_garbage_and_foreign_files(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    good = _filled(model, cache, program_data)
    outer = msgpack.unpackb(cache.read_bytes())
    # The magic, then garbage: recognizably ours, so discarded and rebuilt.
    head = msgpack.packb({"magic": mc.MAGIC, "format": mc.FORMAT_VERSION})
    cache.write_bytes(head + os.urandom(4096))
    assert "discarded" in _damaged(model, cache, capsys, program_data)
    for payload in (b"\x00" * 64, msgpack.packb([1, 2, 3])):
        outer2 = {**outer, "payload": payload, "mac": mc._mac(payload)}
        cache.write_bytes(msgpack.packb(outer2, use_bin_type=True))
        assert "corrupt" in _damaged(model, cache, capsys, program_data)
    # A random file, or another program's msgpack, is not a cache: left alone.
    for data in (os.urandom(4096), msgpack.packb({"magic": "something else"})):
        cache.write_bytes(data)
        assert mc.ModelCache.open_for(vknn.Config(cache_file=str(cache)), model, KEY) is None
        assert "not a VKNN model cache" in capsys.readouterr().err
        good.ran = good.dirty = True
        good.save()
        assert cache.read_bytes() == data
        assert "not overwritten" in capsys.readouterr().err


def test_other_format_version(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    outer = msgpack.unpackb(cache.read_bytes())
    outer["format"] = 999
    cache.write_bytes(msgpack.packb(outer, use_bin_type=True))
    err = _damaged(model, cache, capsys, program_data)
    assert "another VKNN version" in err and "format 999" in err


def test_stale_kernels(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Written by this user's VKNN from other sources (an older version)."""
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    old = _open(model, cache)
    old.guard = {**old.guard, "kernels": "x" * 64}
    old.store_program("b", program_data, IO)
    old.ran = True
    old.save()
    assert "stale" in _damaged(model, cache, capsys, program_data)


def test_changed_model(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data)
    _model(model, scale=2.0)  # same graph, new weights
    assert "stale" in _damaged(model, cache, capsys, program_data)


def test_other_device_is_another_variant(tmp_path: Path, program_data: dict[str, Any]) -> None:
    """The device (compile target) is part of the variant key: a cache written
    on one device gives another nothing, and both keep their programs."""
    model, cache = _model(tmp_path / "m.onnx"), tmp_path / "m.vkcache"
    _filled(model, cache, program_data, key="device-a")
    other = _open(model, cache, "device-b")
    assert other.program("[('x', (2, 4))]") is None
    other.store_program("[('x', (2, 4))]", {"other": 1}, IO)
    other.ran = True
    other.save()
    both = _open(model, cache, "device-a")
    assert set(both.variants) == {"device-a", "device-b"}
    assert both.program("[('x', (2, 4))]") == program_data


def test_unwritable_folder_is_a_warning(
    tmp_path: Path, program_data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path / "m.onnx")
    c = _open(model, tmp_path / "missing-dir" / "m.vkcache")
    c.store_program("b", program_data, IO)
    c.ran = True
    c.save()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not written" in err


def test_kernel_hash_is_stable() -> None:
    assert mc.kernel_hash() == mc.kernel_hash() and len(mc.kernel_hash()) == 64
