"""`vknn cache list|clear` on real caches: a session writes `<model>.vkcache`
beside the model; `list` finds it (by model, file or folder) with its
variants, `clear` removes exactly the caches named (never a file that is not
a cache) and, with `--user`, the user folder's SPIR-V but not its secret."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vknn
from vknn.tools.cli import main as cli_main


@pytest.fixture
def cached_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VKNN_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("VKNN_MODEL_CACHE", "1")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "models" / "m.onnx"
    path.parent.mkdir()
    onnx.save(m, path)
    sess = vknn.Session(str(path), vknn.Config(backends=("cpu",)))
    sess.run({"x": np.ones((2, 3), np.float32)})
    sess.close()  # the cache is written at close
    assert (path.parent / "m.onnx.vkcache").exists()
    return path


def test_list_finds_caches(cached_model: Path, capsys: pytest.CaptureFixture) -> None:
    for arg in (cached_model, cached_model.parent, cached_model.parent / "m.onnx.vkcache"):
        assert cli_main(["cache", "list", str(arg)]) == 0
        out = capsys.readouterr().out
        assert "m.onnx.vkcache" in out and "1 variant(s)" in out, out


def test_clear_removes_only_caches(cached_model: Path, capsys: pytest.CaptureFixture) -> None:
    other = cached_model.parent / "notes.vkcache"
    other.write_text("not a cache")
    assert cli_main(["cache", "clear", str(other)]) == 1
    assert other.exists() and "not a VKNN model cache" in capsys.readouterr().err
    assert cli_main(["cache", "clear", str(cached_model.parent)]) == 0
    assert not (cached_model.parent / "m.onnx.vkcache").exists()
    assert other.exists() and cached_model.exists()


def test_clear_user_keeps_the_secret(cached_model: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / "spirv").mkdir(parents=True, exist_ok=True)
    (user / "spirv" / "entry").write_bytes(b"x" * 10)
    (user / "secret").write_bytes(b"s" * 32)
    assert cli_main(["cache", "clear", "--user"]) == 0
    assert not (user / "spirv").exists() and (user / "secret").exists()
