"""SPIR-V VKNN did not just compile is untrusted (issue 14 item 4): a
`.vxm`'s kernels are checked against the program and by spirv-val before
the driver sees them (remembered once validated, in an authenticated
record), and the SPIR-V disk cache recompiles an entry that is truncated,
empty, swapped or not written by this user's VKNN."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

import vknn
from tests.unit.vulkan.harness import graph, node
from vknn.errors import ModelLoadError
from vknn.runtime import spirv_check
from vknn.runtime.vxm import encode_vxm
from vknn.tools.cli import main as cli_main

W = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("VKNN_CACHE_DIR", str(d))
    spirv_check._remembered.cache_clear()
    yield d
    spirv_check._remembered.cache_clear()


def _vxm(tmp_path: Path) -> Path:
    m = graph(
        [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])],
        {"x": ((1, 3, 8, 8), "float32")},
        ["y"],
        {"w": W},
    )
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    out = tmp_path / "m.vxm"
    assert cli_main(["compile", str(src), "-o", str(out), "--target", "from-device"]) == 0
    return out


def _rewrite(path: Path, edit: Any) -> Path:
    """`path` with `edit(programs)` applied, re-encoded with a valid content hash
    (what an attacker can do: the hash is not a signature)."""
    raw = msgpack.unpackb(path.read_bytes(), raw=False)
    table = raw["weights"]
    programs = [{**v, "weights": [table[r] for r in v["weights"]]} for v in raw["variants"]]
    edit(programs)
    out = path.with_name("crafted.vxm")
    out.write_bytes(encode_vxm(programs, created_by="crafted"))
    return out


def _open_error(path: Path) -> str:
    with pytest.raises(ModelLoadError) as e:
        vknn.Session(str(path))
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    return msg


def test_valid_vxm_runs_and_is_remembered(
    session_device: Any, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _vxm(tmp_path)
    sess = vknn.Session(str(path))
    assert set(sess.run(sess.random_inputs())) == {"y"}
    assert (cache_dir / spirv_check.RECORD).is_file()

    # Remembered: a new process (cleared memo) does not run spirv-val again.
    def refuse(spirv: bytes, env: str) -> str:
        raise AssertionError("spirv-val ran for a remembered module")

    spirv_check._remembered.cache_clear()
    monkeypatch.setattr(spirv_check, "_spirv_val", refuse)
    vknn.Session(str(path)).close()

    # A record this user's VKNN did not write is not trusted.
    rec = cache_dir / spirv_check.RECORD
    data = bytearray(rec.read_bytes())
    data[-1] ^= 1
    rec.write_bytes(bytes(data))
    spirv_check._remembered.cache_clear()
    monkeypatch.setattr(spirv_check, "_spirv_val", lambda s, e: "rejected (test)")
    assert "invalid SPIR-V: rejected (test)" in _open_error(path)


def test_random_kernel_bytes_are_refused(
    session_device: Any, tmp_path: Path, cache_dir: Path
) -> None:
    rng = np.random.default_rng(1)

    def scramble(programs: list[dict[str, Any]]) -> None:
        k = programs[0]["kernels"][0]
        body = rng.integers(0, 1 << 32, (len(k["spirv"]) - 20) // 4, dtype=np.uint32)
        k["spirv"] = k["spirv"][:20] + body.tobytes()

    msg = _open_error(_rewrite(_vxm(tmp_path), scramble))
    assert "kernel" in msg


def test_another_kernels_module_is_refused(
    session_device: Any, tmp_path: Path, cache_dir: Path
) -> None:
    """A valid module of another kernel that binds more buffers than the
    dispatches give (here: the conv's module in the relu-less kernel's place)."""

    def swap(programs: list[dict[str, Any]]) -> None:
        ks = programs[0]["kernels"]
        most = max(ks, key=lambda k: len(k["writes"]))
        least = min(ks, key=lambda k: len(k["writes"]))
        assert len(most["writes"]) > len(least["writes"])
        least["spirv"] = most["spirv"]

    assert "binding" in _open_error(_rewrite(_vxm(tmp_path), swap))


def test_spirv_val_rejects_a_damaged_module(
    session_device: Any, tmp_path: Path, cache_dir: Path
) -> None:
    def lower_bound(programs: list[dict[str, Any]]) -> None:
        k = programs[0]["kernels"][0]
        words = bytearray(k["spirv"])
        words[12:16] = (2).to_bytes(4, "little")  # the id bound: every id past it is invalid
        k["spirv"] = bytes(words)

    assert "invalid SPIR-V" in _open_error(_rewrite(_vxm(tmp_path), lower_bound))


# -- the SPIR-V disk cache -------------------------------------------------------


def _entry(family: str) -> tuple[bytes, Path]:
    from vknn.kernels import shaders

    shaders._compile.cache_clear()
    spirv = shaders.compile_shader(family, "fp32")
    (path,) = (shaders.cache_dir()).glob(f"{family}.fp32.*.spvx")
    return spirv, path


@pytest.mark.parametrize("damage", ["truncated", "empty", "swapped", "foreign"])
def test_damaged_disk_cache_entry_is_recompiled(cache_dir: Path, damage: str) -> None:
    from vknn.kernels import shaders

    good, path = _entry("unary")
    other, other_path = _entry("binary")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: len(good) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "swapped":  # a valid entry of another kernel
        path.write_bytes(other_path.read_bytes())
    else:  # the bare module, as another tool (or an older VKNN) would write it
        path.write_bytes(good)
    shaders._compile.cache_clear()
    assert shaders.compile_shader("unary", "fp32") == good
    assert path.read_bytes()[32:] == good  # rewritten sealed
    assert os.stat(path).st_mode & 0o077 == 0
