"""Sessions with a model cache: the warm session reuses the compiled plans,
the SPIR-V, the pipeline cache and the autotune table; a damaged, foreign or
stale cache is discarded with one line and rebuilt, outputs unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn.runtime.model_cache import ModelCache

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


def _cache_of(path: Path) -> Path:
    return Path(str(path) + ".vkcache")


def test_default_cache_next_to_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKNN_MODEL_CACHE", "1")
    path = _model(tmp_path / "m.onnx")
    cold = vknn.Session(path, vknn.Config(**CPU))
    ref = cold.run(X)["y"]
    assert cold._cache.plan_misses == 1
    cold.close()
    assert _cache_of(path).exists()
    warm = vknn.Session(path, vknn.Config(**CPU))
    assert warm._cache.plan_hits == 1 and warm._cache.plan_misses == 0
    np.testing.assert_array_equal(warm.run(X)["y"], ref)
    os.utime(_cache_of(path), (1, 1))
    warm.close()  # nothing new: not rewritten
    assert _cache_of(path).stat().st_mtime == 1


def test_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VKNN_MODEL_CACHE", "1")
    path = _model(tmp_path / "m.onnx")
    vknn.Session(path, vknn.Config(cache_file="off", **CPU)).close()
    assert not _cache_of(path).exists()


def test_variants_are_separate(tmp_path: Path) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    for precision in ("high", "low"):
        vknn.Session(path, vknn.Config(cache_file=str(cache), precision=precision, **CPU)).close()
    keys = ModelCache.open(cache, ModelCache.open(cache, _guard(cache)).guard).variants
    assert {k.split(";")[0] for k in keys} == {"precision=high", "precision=low"}


def _guard(cache: Path):  # type: ignore[no-untyped-def]
    from vknn.runtime.model_cache import CacheGuard

    outer = msgpack.unpackb(cache.read_bytes())
    g = outer["guard"]
    return CacheGuard(g["kernel_hash"], tuple(g["device"]), g["model_hash"])


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "foreign", "stale-kernels"])
def test_damaged_cache_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), **CPU)
    s = vknn.Session(path, config)
    ref = s.run(X)["y"]
    s.close()
    data = cache.read_bytes()
    if damage == "truncate":
        cache.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "flip":
        b = bytearray(data)
        b[len(b) - 40] ^= 0x55
        cache.write_bytes(bytes(b))
    elif damage == "garbage":
        cache.write_bytes(os.urandom(len(data)))
    else:
        outer = msgpack.unpackb(data)
        if damage == "foreign":
            outer["guard"]["device"] = [0x10DE, 0x2335, 123, "00" * 16]
        else:
            outer["guard"]["kernel_hash"] = "0" * 64
        cache.write_bytes(msgpack.packb(outer, use_bin_type=True))
    capsys.readouterr()
    s = vknn.Session(path, config)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "discarded" in err, err
    assert s._cache.plan_misses == 1  # recompiled, not trusted
    np.testing.assert_array_equal(s.run(X)["y"], ref)
    s.close()
    again = vknn.Session(path, config)
    assert again._cache.plan_hits == 1 and capsys.readouterr().err == ""


def test_changed_model_invalidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), **CPU)
    before = vknn.Session(path, config)
    ref = before.run(X)["y"]
    before.close()
    _model(path, scale=2.0)  # same graph, new weights
    capsys.readouterr()
    after = vknn.Session(path, config)
    assert "model changed" in capsys.readouterr().err
    np.testing.assert_allclose(after.run(X)["y"], 2 * ref, rtol=1e-5, atol=1e-6)


def test_vulkan_warm_session_needs_no_shader_compiler(tmp_path: Path, session_device) -> None:  # type: ignore[no-untyped-def]
    """The cold session (this process) writes the cache; a warm one in a fresh
    process, with an empty SPIR-V disk cache and no glslangValidator, gets
    every module, the pipeline cache and the plan from the model cache."""
    path, cache = _model(tmp_path / "m.onnx"), tmp_path / "c.vkcache"
    config = vknn.Config(cache_file=str(cache), precision="low", autotune="fast")
    cold = vknn.Session(path, config)
    ref = cold.run(X)["y"]
    assert cold.node_backends()["conv"] == "vulkan"
    cold.close()
    v = next(iter(ModelCache.open(cache, _guard(cache)).variants.values()))
    assert v.spirv and v.plans and v.autotune and v.pipeline_cache
    assert v.weights, "fp16 storage: the converted weights are prepacked"
    script = textwrap.dedent(
        f"""
        import numpy as np, vknn
        import vknn.kernels.shaders as sh
        def no_compiler():
            raise sh.ShaderError("glslangValidator must not run in a warm session")
        sh.glslang = no_compiler
        import vknn.runtime.vulkan.autotune as at
        s = vknn.Session({str(path)!r}, vknn.Config(cache_file={str(cache)!r}, precision="low",
                                                     autotune="fast"))
        assert s._cache.plan_hits == 1, "plan not from the cache"
        assert s.autotune_table, "autotune table not from the cache"
        x = np.load({str(tmp_path / "x.npy")!r})
        np.save({str(tmp_path / "y.npy")!r}, s.run({{"x": x}})["y"])
        reports = [e.autotune_report for b in s._buckets.values() for e in b.executors.values()]
        assert sum(r.kernels for r in reports) == 0, "a warm session measured kernels"
        assert sum(r.reused for r in reports) > 0
        """
    )
    np.save(tmp_path / "x.npy", X["x"])
    os.utime(cache, (1, 1))
    env = {**os.environ, "VKNN_CACHE_DIR": str(tmp_path / "empty-spirv-cache")}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), ref)
    assert cache.stat().st_mtime == 1, "a warm session that added nothing rewrote the cache"
