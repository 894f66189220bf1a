"""The reports agree and count every node (issue 15): `Session.node_report()`,
`node_backends()`, `fallback_reasons()`, `vknn run`'s plan and fallback lines
and `vknn compile --support-report` come from one list of rows
(`vknn.runtime.report`) holding every node of the ONNX graph, on Vulkan, on
the CPU, folded into a constant or eliminated, and a reason for each node
off the preferred backend, fused members included. Real models on the test
device (lavapipe) and the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn.runtime.report import node_rows
from vknn.tools.cli import main as cli_main


@pytest.fixture(scope="module", autouse=True)
def _device() -> None:
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")


def _model() -> onnx.ModelProto:
    """A transpose read as a view (records nothing), a pointwise chain that
    fuses into one step, a shape path folded to a constant, an identity."""
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0], name="kt"),
        helper.make_node("MatMul", ["x", "kt"], ["s"], name="mm"),
        helper.make_node("Mul", ["s", "half"], ["m"], name="scale"),
        helper.make_node("Sigmoid", ["m"], ["g"], name="gate"),
        helper.make_node("Mul", ["g", "m"], ["a"], name="swish"),
        helper.make_node("Identity", ["a"], ["ai"], name="ident"),
        helper.make_node("Shape", ["ai"], ["sh"], name="shape"),
        helper.make_node("Reshape", ["ai", "sh"], ["r"], name="reshape"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", f, [4, 8]),
            helper.make_tensor_value_info("k", f, [6, 8]),
        ],
        [helper.make_tensor_value_info("y", f, [4, 6])],
        [numpy_helper.from_array(np.float32(0.5), "half")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


NAMES = ["kt", "mm", "scale", "gate", "swish", "ident", "shape", "reshape", "relu"]


def _session(**cfg: object) -> vknn.Session:
    return vknn.Session(_model().SerializeToString(), vknn.Config(cache_file="off", **cfg))


def test_every_node_is_reported_on_vulkan() -> None:
    sess = _session()
    rows = sess.node_report()
    assert sorted(r.name for r in rows) == sorted(NAMES)
    where = {r.name: r.backend for r in rows}
    assert where["kt"] == "vulkan"  # a view of the matmul's operand, no dispatch of its own
    assert where["ident"] in ("eliminated", "folded") and where["shape"] in ("eliminated", "folded")
    assert {where[n] for n in ("mm", "scale", "gate", "swish", "relu")} == {"vulkan"}
    assert sess.fallback_reasons() == {}
    assert sess.node_backends() == {r.name: r.backend for r in rows if r.runs}


def test_fused_members_off_vulkan_all_have_reasons() -> None:
    """The pointwise chain fused into one step and kept off Vulkan: each
    member is on the CPU with the step's reason."""
    sess = _session(disable_vk_ops="FusedPointwise,MatMul")
    rows = {r.name: r for r in sess.node_report()}
    off = {n for n, r in rows.items() if r.runs and r.backend != "vulkan"}
    assert {"mm", "scale", "gate", "swish"} <= off
    reasons = sess.fallback_reasons()
    assert set(reasons) == off
    assert all(
        "disabled by Config.disable_vk_ops" in reasons[n] for n in ("scale", "gate", "swish")
    )
    feeds = {"x": np.ones((4, 8), np.float32), "k": np.ones((6, 8), np.float32)}
    want = _session(backends=("cpu",)).run(feeds)["y"]
    np.testing.assert_allclose(sess.run(feeds)["y"], want, rtol=1e-6)


def test_cpu_preferred_has_no_fallbacks() -> None:
    sess = _session(backends=("cpu",))
    assert sess.fallback_reasons() == {}
    assert {r.backend for r in sess.node_report() if r.runs} == {"cpu"}


def test_rows_merge_and_always_give_a_reason() -> None:
    rows = node_rows(
        [
            ("a", "vulkan", ""),
            ("a", "cpu", ""),  # split, no reason recorded for its CPU part
            ("b", "cpu", "B: why"),
            ("c", "folded", ""),
            ("d", "eliminated", ""),
            ("d", "vulkan", ""),  # runs after all: not eliminated
        ],
        "vulkan",
    )
    got = {r.name: (r.backend, r.reason) for r in rows}
    assert got["a"][0] == "vulkan+cpu" and "vulkan+cpu" in got["a"][1]
    assert got["b"] == ("cpu", "B: why")
    assert got["c"] == ("folded", "")
    assert got["d"] == ("vulkan", "")


def test_cli_lines_and_support_report_agree(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    common = ["--disable-vk-ops", "FusedPointwise"]
    assert cli_main(["run", str(path), *common]) == 0
    out = capsys.readouterr().out
    plan = re.search(r"^plan .*?; (\d+) nodes: (.*)$", out, re.M)
    assert plan is not None, out
    assert int(plan.group(1)) == len(NAMES)
    counts = {b: int(n) for b, n in (p.rsplit(" ", 1) for p in plan.group(2).split(", "))}
    off = sum(n for b, n in counts.items() if b not in ("vulkan", "folded", "eliminated"))
    sess = _session(disable_vk_ops="FusedPointwise")
    rows = sess.node_report()
    assert off == sum(r.runs and r.backend != "vulkan" for r in rows) >= 3  # scale, gate, swish
    fb = re.search(r"^fallbacks: (\d+) node\(s\)", out, re.M)
    assert fb is not None and int(fb.group(1)) == off

    report = tmp_path / "r.json"
    assert cli_main(["compile", str(path), "--support-report", str(report), *common]) == 0
    capsys.readouterr()
    data = json.loads(report.read_text())
    assert data["summary"]["total"] == len(NAMES)
    assert sorted(n["name"] for n in data["nodes"]) == sorted(NAMES)
    assert {n["name"]: n["backend"] for n in data["nodes"]} == {r.name: r.backend for r in rows}
    quiet = ("vulkan", "folded", "eliminated")
    assert all("reason" in n for n in data["nodes"] if n["backend"] not in quiet)


def _dynamic_model(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq"])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "dyn.onnx"
    onnx.save(m, path)
    return path


def test_dynamic_axis_hints_in_the_callers_syntax(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _dynamic_model(tmp_path)
    assert cli_main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "--dims seq=N" in err and "infer-shapes{" not in err, err
    with pytest.raises(vknn.errors.ShapeInferenceError, match=r'Config\(dims=\{"seq": N\}\)'):
        vknn.Session(str(path), vknn.Config(cache_file="off"))


def test_undeclared_batch_is_said(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A dynamic `batch` taken as 1 is never silent: a warning names it."""
    path = _dynamic_model(tmp_path)
    assert cli_main(["run", str(path), "--dims", "seq=5"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"vknn: warning: input 'x' axis 0 \('batch'\) .* taking 1", err), err
    assert "--dims batch=N" in err
    assert cli_main(["run", str(path), "--dims", "seq=5,batch=2"]) == 0
    assert "batch" not in capsys.readouterr().err
