"""Sessions with a model cache: the warm session reuses the compiled programs,
the pipeline cache and the autotune table (no compiler, no onnx, no xDSL);
a damaged, foreign or stale cache is discarded with one line and rebuilt,
outputs unchanged; a file that is not a cache is never overwritten."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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
from vknn.session import Session

ROOT = Path(__file__).resolve().parents[3]


def _model(path: Path, scale: float = 1.0) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 4, 3, 3)) * scale).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "m")
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
            helper.make_node("Flatten", ["g"], ["f"], name="flat"),
            helper.make_node("MatMul", ["f", "m"], ["y"], name="fc"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [w, m],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


X = {"x": np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype(np.float32)}
CPU = dict(backends=("cpu",))


@pytest.fixture(autouse=True)
def own_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A per-test user cache folder (the secret, the SPIR-V cache)."""
    d = tmp_path / "user-cache"
    monkeypatch.setenv("VKNN_CACHE_DIR", str(d))
    user_cache.secret.cache_clear()
    yield d
    user_cache.secret.cache_clear()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every bucket a session compiles (a cache hit compiles none)."""
    seen: list[Any] = []
    real = Session._compile

    def counting(self: Session, shapes: Any) -> Any:
        seen.append(shapes)
        return real(self, shapes)

    monkeypatch.setattr(Session, "_compile", counting)
    return seen


def _cache_of(path: Path) -> Path:
    return Path(str(path) + ".vkcache")


def _variants(cache: Path, model: Path) -> dict[str, mc.Variant]:
    c = mc.ModelCache.open_for(vknn.Config(cache_file=str(cache)), model, "any")
    assert c is not None
    return c.variants


def test_default_cache_next_to_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiles: list[Any]
) -> None:
    monkeypatch.setenv("VKNN_MODEL_CACHE", "1")
    path = _model(tmp_path / "m.onnx")
    cold = vknn.Session(path, vknn.Config(**CPU))
    ref = cold.run(X)["y"]
    assert len(compiles) == 1
    cold.close()
    assert _cache_of(path).exists()
    warm = vknn.Session(path, vknn.Config(**CPU))
    assert len(compiles) == 1 and warm._proto is None  # no compile, no ONNX parsing
    np.testing.assert_array_equal(warm.run(X)["y"], ref)
    os.utime(_cache_of(path), (1, 1))
    warm.close()  # nothing new: not rewritten
    assert _cache_of(path).stat().st_mtime == 1


def test_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKNN_MODEL_CACHE", "1")
    path = _model(tmp_path / "m.onnx")
    s = vknn.Session(path, vknn.Config(cache_file="off", **CPU))
    s.run(X)
    s.close()
    assert not _cache_of(path).exists()
    monkeypatch.setenv("VKNN_MODEL_CACHE", "0")
    s = vknn.Session(path, vknn.Config(**CPU))
    s.run(X)
    s.close()
    assert not _cache_of(path).exists()


def test_variants_are_separate(tmp_path: Path, compiles: list[Any]) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    for precision in ("high", "low", "high"):
        s = vknn.Session(path, vknn.Config(cache_file=str(cache), precision=precision, **CPU))
        s.run(X)
        s.close()
    assert len(compiles) == 2  # the second high session is a hit
    variants = _variants(cache, path)
    assert len(variants) == 2 and all(len(v.programs) == 1 for v in variants.values())


def _reauthenticated(cache: Path, edit: Any) -> None:
    """`cache` with `edit(body)` applied to its payload and a valid MAC under
    this user's secret (what an older VKNN of this user would have written)."""
    outer = msgpack.unpackb(cache.read_bytes(), raw=False)
    body = msgpack.unpackb(outer["payload"], raw=False)
    edit(body)
    outer["payload"] = msgpack.packb(body, use_bin_type=True)
    outer["mac"] = mc._mac(outer["payload"])
    cache.write_bytes(msgpack.packb(outer, use_bin_type=True))


@pytest.mark.parametrize(
    "damage",
    ["truncate", "flip", "foreign-secret", "stale-kernels", "bad-program", "bad-io", "bad-io-name"],
)
def test_damaged_cache_is_rebuilt(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    compiles: list[Any],
    damage: str,
) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), **CPU)
    if damage == "foreign-secret":  # written by someone else's VKNN
        monkeypatch.setenv("VKNN_CACHE_DIR", str(tmp_path / "someone-else"))
        user_cache.secret.cache_clear()
    s = vknn.Session(path, config)
    ref = s.run(X)["y"]
    s.close()
    user_cache.secret.cache_clear()
    monkeypatch.setenv("VKNN_CACHE_DIR", str(tmp_path / "user-cache"))
    data = cache.read_bytes()
    if damage == "truncate":
        cache.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "flip":
        b = bytearray(data)
        b[len(b) - 40] ^= 0x55
        cache.write_bytes(bytes(b))
    elif damage == "stale-kernels":
        _reauthenticated(cache, lambda body: body["guard"].update(kernels="0" * 64))
    elif damage == "bad-program":
        # Authentic but malformed program data (a crafted or buggy writer):
        # Program.decode refuses it and the bucket is compiled again.
        def break_programs(body: dict[str, Any]) -> None:
            for v in body["variants"].values():
                for p in v["programs"].values():
                    p["kernels"] = 7

        _reauthenticated(cache, break_programs)
    elif damage == "bad-io":  # malformed declared inputs: raised KeyError before

        def break_io(body: dict[str, Any]) -> None:
            for v in body["variants"].values():
                v["io"]["inputs"] = [{"x": 1}]

        _reauthenticated(cache, break_io)
    elif damage == "bad-io-name":  # well formed, but not the program's input (fuzz seed 21)

        def rename_io(body: dict[str, Any]) -> None:
            for v in body["variants"].values():
                v["io"]["inputs"][0]["name"] = "n7"

        _reauthenticated(cache, rename_io)
    capsys.readouterr()
    compiles.clear()
    s = vknn.Session(path, config)
    err = capsys.readouterr().err
    if damage.startswith("bad-"):  # authentic: rebuilt silently
        assert err == ""
    else:
        assert err.count("\n") == 1 and "discarded" in err and str(cache) in err, err
    # Recompiled, not trusted (malformed inputs/outputs: rebuilt from the model).
    assert len(compiles) == (0 if damage.startswith("bad-io") else 1)
    np.testing.assert_array_equal(s.run(X)["y"], ref)
    s.close()
    compiles.clear()
    again = vknn.Session(path, config)
    assert not compiles and again._proto is None  # a warm hit again
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(again.run(X)["y"], ref)


def test_file_that_is_not_a_cache_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    junk = os.urandom(4096)
    cache.write_bytes(junk)
    s = vknn.Session(path, vknn.Config(cache_file=str(cache), **CPU))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a VKNN model cache" in err
    s.run(X)
    s.close()
    assert cache.read_bytes() == junk


def test_changed_model_invalidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), **CPU)
    before = vknn.Session(path, config)
    ref = before.run(X)["y"]
    before.close()
    _model(path, scale=2.0)  # same graph, new weights
    capsys.readouterr()
    after = vknn.Session(path, config)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stale: the model or VKNN changed" in err
    np.testing.assert_allclose(after.run(X)["y"], 2 * ref, rtol=1e-5, atol=1e-6)


def test_vulkan_warm_session_needs_no_compiler(
    tmp_path: Path, own_secret: Path, session_device: Any
) -> None:
    """The cold session (this process) writes the cache; a warm one in a fresh
    process, with an empty SPIR-V disk cache, gets the program (SPIR-V and
    device-form weights included) and the pipeline cache from the model
    cache: it imports no compiler, no onnx and no xDSL."""
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), precision="low")
    cold = vknn.Session(path, config)
    ref = cold.run(X)["y"]
    assert cold.node_backends()["conv"] == "vulkan"
    cold.close()
    (v,) = _variants(cache, path).values()
    assert v.pipeline_cache
    (program,) = v.programs.values()
    assert program["kernels"] and all(k["spirv"] for k in program["kernels"])
    assert program["weights"], "fp16 storage: the converted weights are in the program"
    for spirv in (own_secret / "spirv").glob("*"):
        spirv.unlink()  # the warm session must not need the SPIR-V disk cache
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np, vknn
        s = vknn.Session({str(path)!r}, vknn.Config(cache_file={str(cache)!r}, precision="low"))
        x = np.load({str(tmp_path / "x.npy")!r})
        np.save({str(tmp_path / "y.npy")!r}, s.run({{"x": x}})["y"])
        s.close()
        banned = ("onnx", "xdsl", "vknn.compiler", "vknn.kernels", "vknn.transforms",
                  "vknn.frontend", "vknn.tuning", "vknn.serialize")
        loaded = sorted(m for m in sys.modules if m.startswith(banned))
        assert not loaded, loaded
        dev = vknn.runtime.vulkan.context.shared_device()[0]
        assert not dev.messages, [m.text for m in dev.messages]
        """
    )
    np.save(tmp_path / "x.npy", X["x"])
    os.utime(cache, (1, 1))
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), ref)
    assert not list((own_secret / "spirv").glob("*")), "a warm session compiled shaders"
    assert cache.stat().st_mtime == 1, "a warm session that added nothing rewrote the cache"


def test_warm_session_reuses_the_autotune_table(tmp_path: Path) -> None:
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    start = len(dev.messages)
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), precision="low", autotune="fast")
    cold = vknn.Session(path, config)
    ref = cold.run(X)["y"]
    assert cold.autotune_report is not None and cold.autotune_table
    cold.close()
    (v,) = _variants(cache, path).values()
    assert v.autotune == cold.autotune_table
    warm = vknn.Session(path, config)
    assert warm.autotune_report is None, "a warm session measured kernels"
    assert warm.autotune_table == cold.autotune_table
    np.testing.assert_array_equal(warm.run(X)["y"], ref)
    warm.close()
    new = dev.messages[start:]
    assert not new, "validation messages:\n" + "\n".join(m.text for m in new)


def test_pipeline_cache_of_another_driver_is_refused(tmp_path: Path, session_device: Any) -> None:
    """The cached VkPipelineCache blob is the driver's to judge: one written by
    another device or driver (a header with NVIDIA's vendor id, then noise)
    is refused by it, the warm session runs as compiled and stores this
    driver's blob in its place."""
    import struct

    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache))
    cold = vknn.Session(path, config)
    ref = cold.run(X)["y"]
    cold.close()
    foreign = struct.pack("<IIII", 32, 1, 0x10DE, 0x2335) + bytes(16) + os.urandom(256)

    def swap(body: dict[str, Any]) -> None:
        for v in body["variants"].values():
            assert v["pipeline_cache"]
            v["pipeline_cache"] = foreign

    _reauthenticated(cache, swap)
    warm = vknn.Session(path, config)
    np.testing.assert_array_equal(warm.run(X)["y"], ref)
    warm.close()
    (v,) = _variants(cache, path).values()
    assert v.pipeline_cache and v.pipeline_cache != foreign
