"""`vkd` is the contract: what the compiler prints is what the runtime records.

- the runtime imports nothing from the compiler side, and a `.vxm` session
  loads neither onnx nor xDSL;
- for test models at every precision, the dispatches of the printed module
  (`vknn compile --emit-vkd`), of the program, of the recorded command
  buffers and of the profile are the same count;
- a printed module is runnable text: `Session("m.vkd.mlir")` runs it, and an
  edit to it (fewer workgroups for the last dispatch) changes the result.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import vknn
from tests.unit.models import light_model, model_inputs, torch_model
from vknn.tools.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
COMPILER = ("xdsl", "vknn.transforms", "vknn.dialects", "vknn.frontend", "vknn.compiler",
            "vknn.ir", "vknn.kernels", "vknn.serialize", "vknn.session", "vknn.tuning")  # fmt: skip


def test_runtime_imports_no_compiler() -> None:
    """Neither the runtime nor the numpy oracle it runs CPU segments on
    (ADR 0010) imports the compiler side."""
    pattern = re.compile(r"^\s*(from|import)\s+([\w.]+)", re.M)
    bad = []
    paths = [*(ROOT / "vknn" / "runtime").rglob("*.py"), *(ROOT / "vknn" / "oracle").rglob("*.py")]
    for path in paths:
        for _, module in pattern.findall(path.read_text()):
            if module.startswith(COMPILER):
                bad.append(f"{path.relative_to(ROOT)}: {module}")
    assert not bad, bad


def test_runtime_stays_small() -> None:
    """The replay machinery (the oracle's kernels are counted apart: ADR 0010)."""
    lines = sum(len(p.read_text().splitlines()) for p in (ROOT / "vknn" / "runtime").rglob("*.py"))
    assert lines <= 5000, lines


def _emit_vkd(model: Path, precision: str, *extra: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli(["compile", str(model), "--emit-vkd", "--precision", precision, *extra]) == 0
    return out.getvalue()


MODELS = {
    "light_squeezenet": (lambda: light_model("light_squeezenet.onnx"), {}),
    "mobilenet_v2": (lambda: torch_model("mobilenet_v2"), {}),
    "bert_encoder": (lambda: torch_model("bert_encoder"), {"seq": 128}),
}


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["high", "low", "normal"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_printed_dispatches_are_the_recorded_ones(
    session_device, tmp_path: Path, name: str, precision: str
) -> None:  # type: ignore[no-untyped-def]
    make, dims = MODELS[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(make(), str(path))
    extra = ["--dims", ",".join(f"{k}={v}" for k, v in dims.items())] if dims else []
    printed = _emit_vkd(path, precision, *extra).count("vkd.dispatch @")
    sess = vknn.Session(
        str(path), vknn.Config(precision=precision, profiling=True, dims=dims, cache_file="off")
    )
    recorded = sum(
        sc.program.stats.dispatches
        for ctx in sess.bucket.executable._all
        for sc in ctx.segments.values()
    )
    rows = sess.profile(runs=1)
    assert printed == sess.dispatch_count() == recorded == len(rows) > 0


@pytest.fixture
def session_device():  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    start = len(dev.messages)
    yield dev
    assert not dev.messages[start:], "\n".join(map(str, dev.messages[start:]))


def test_printed_module_runs_and_edits_change_the_run(session_device, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = light_model("light_squeezenet.onnx")
    path = tmp_path / "sq.onnx"
    onnx.save(model, str(path))
    text_path = tmp_path / "sq.vkd.mlir"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["compile", str(path), "-o", str(text_path)]) == 0
    assert (tmp_path / "sq.vkd.mlir.weights").exists()
    feeds = model_inputs(model, {})
    want = vknn.Session(str(path), vknn.Config(cache_file="off")).run(feeds)["softmaxout_1"]
    got = vknn.Session(str(text_path)).run(feeds)["softmaxout_1"]
    np.testing.assert_array_equal(got, want)
    # The global average pool's workgroups cut to one: most of its output is
    # never written, and the softmax after it sees stale memory.
    text = text_path.read_text()
    lines = text.splitlines(keepends=True)
    (i,) = [k for k, line in enumerate(lines) if 'label "n64 (' in line]
    edited_line = re.sub(r"groups \[\d+, \d+, \d+\]", "groups [1, 1, 1]", lines[i])
    assert edited_line != lines[i]
    edited = "".join(lines[:i] + [edited_line] + lines[i + 1 :])
    text_path.write_text(edited)
    changed = vknn.Session(str(text_path)).run(feeds)["softmaxout_1"]
    assert not np.allclose(changed, want)


def test_vxm_session_imports_neither_onnx_nor_xdsl(tmp_path: Path) -> None:
    path = tmp_path / "sq.onnx"
    onnx.save(light_model("light_squeezenet.onnx"), str(path))
    vxm = tmp_path / "sq.vxm"
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(["compile", str(path), "-o", str(vxm), "--target", "generic"]) == 0
    code = (
        "import sys, vknn; s = vknn.Session(sys.argv[1]); s.run(s.random_inputs()); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'xdsl') "
        "or m.startswith(('vknn.transforms', 'vknn.dialects', 'vknn.compiler', 'vknn.kernels')));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code, str(vxm)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
