"""`vknn bench` (issue 16 item 3, issue 17's single-machine path): start-up,
latency percentiles, throughput at --batch, onnxruntime side by side, the
JSON and the plot; several sessions in one process (`--devices 0,0` on
lavapipe's one device) spread requests from threads with every output
checked, through the same code as one device (`--devices all`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.unit.vulkan.conftest import session_device  # noqa: F401
from vknn.runtime.vulkan.context import physical_devices
from vknn.tools.cli import main

pytestmark = pytest.mark.usefixtures("session_device")


def _model_file(tmp_path: Any) -> str:
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    g = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1], name="conv"),
            helper.make_node("Relu", ["a"], ["b"], name="relu"),
            helper.make_node("GlobalAveragePool", ["b"], ["y"], name="gap"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 1, 1])],
        [numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return str(path)


def _bench(tmp_path: Any, capsys: Any, *extra: str) -> tuple[dict, str]:  # type: ignore[type-arg]
    out = tmp_path / "b.json"
    args = ["bench", _model_file(tmp_path), "--batch", "4", "--runs", "12", "--warmup", "2"]
    assert main([*args, "--json", str(out), *extra]) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def test_bench_reports_and_compares_with_onnxruntime(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    r, text = _bench(tmp_path, capsys)
    assert r["batch"] == 4 and len(r["samples_ms"]) == 12
    lat = r["latency_ms"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]
    assert r["throughput_per_s"] == pytest.approx(4 * 12 / (sum(r["samples_ms"]) / 1000))
    assert r["start"]["cold_s"] > 0 and r["start"]["warm_s"] > 0
    assert r["start"]["warm_s"] < r["start"]["cold_s"]  # the model cache skips the compiler
    assert [d["name"] for d in r["machine"]["devices"]] == [physical_devices()[0][0]]
    ort = r["onnxruntime"]
    assert ort["provider"] == "CPUExecutionProvider" and min(ort["cosine"].values()) > 0.9999
    assert ort["latency_ms"]["p50"] > 0
    assert r["op_kinds_ms"] and all(v > 0 for v in r["op_kinds_ms"].values())
    assert [row["devices"] for row in r["spread"]] == [1]
    for word in ("p50", "p99", "onnxrt cpu", "cold", "warm", "GPU ms by op kind"):
        assert word in text


def test_bench_several_sessions_one_process(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    r, text = _bench(tmp_path, capsys, "--devices", "0,0", "--no-ort")
    assert "onnxruntime" not in r
    one, two = r["spread"]
    assert (one["devices"], two["devices"]) == (1, 2)
    assert two["throughput_per_s"] > 0 and two["scaling"] > 0
    assert "scaling x" in text
    r, _ = _bench(tmp_path, capsys, "--devices", "all", "--no-ort")  # the same path, 1 device
    assert [row["devices"] for row in r["spread"]] == [len(physical_devices())]


def test_bench_plot(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    png = tmp_path / "b.png"
    _bench(tmp_path, capsys, "--plot", str(png), "--no-ort")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_errors_are_one_line(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = _model_file(tmp_path)
    assert main(["bench", path, "--devices", "7", "--runs", "2"]) == 1
    assert "device 7" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the extra were not installed
    args = ["bench", path, "--runs", "2", "--warmup", "0", "--no-ort", "--plot", "x.png"]
    assert main(args) == 1
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert err == ["vknn: error: --plot needs matplotlib: pip install 'vknn[plot]'"]
