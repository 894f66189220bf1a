"""A wheel that works (issue 16 item 6): `pip wheel .` builds without
setuptools deprecation warnings, carries the GLSL shaders, and a
non-editable install of it, outside the checkout, runs a model on the CPU
and on lavapipe (the shaders compiled from the installed package).

The throwaway venv gets vknn only from the wheel; its dependencies come from
the test environment's site-packages (a .pth file), so nothing is downloaded
but the build backend."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _model(path: Path) -> None:
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["a"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(w, "w")],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())


def test_wheel_builds_ships_shaders_and_runs_installed(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(wheels), "-v"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    log = build.stdout + build.stderr
    assert "Deprecat" not in log, [line for line in log.splitlines() if "Deprecat" in line]
    (wheel,) = wheels.glob("vknn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("vknn/kernels/glsl/")}
    assert shipped == {p.name for p in (ROOT / "vknn/kernels/glsl").iterdir()}
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in meta

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    deps = sysconfig.get_path("purelib")  # the test environment's packages, not its vknn
    Path(site, "vknn_test_deps.pth").write_text(deps + "\n")
    pip = [str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)]
    subprocess.run(pip, check=True)

    model = tmp_path / "m.onnx"
    _model(model)
    tools = Path(sys.executable).parent  # the cmeel wrappers of glslangValidator, spirv-val
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}",
           "VKNN_CACHE_DIR": str(tmp_path / "cache"), "VKNN_MODEL_CACHE": "0"}  # fmt: skip
    env.pop("PYTHONPATH", None)
    where = subprocess.run([str(py), "-c", "import vknn; print(vknn.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert where.startswith(site), f"vknn imported from {where}, not the installed wheel"
    vknn_cli = str(venv / "bin" / "vknn")
    for backends in ("cpu", "vulkan"):
        run = subprocess.run(
            [vknn_cli, "run", str(model), "--backends", backends, "--compare-ort"],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        assert "cosine 1.0000000" in run.stdout or "cosine 0.99999" in run.stdout, run.stdout
        if backends == "vulkan":
            assert "vulkan 2" in run.stdout, run.stdout  # both nodes ran on the device
