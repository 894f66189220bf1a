"""Chrome-trace JSON (issue 16 item 4): `vknn run --profile --trace` and
`InferenceSession.end_profiling()` write one; its dispatch events match the
profile table (kernel label, vkd op kind, ONNX nodes, one event per
dispatch), CPU segments, uploads and readbacks sit on their own tracks,
inside their run."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

import vknn
from tests.unit.vulkan.conftest import session_device  # noqa: F401
from tests.unit.vulkan.harness import graph, node
from vknn.tools.cli import main
from vknn.trace import TRACKS

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32)


def _model() -> Any:
    """relu -> conv (kept off Vulkan: disable_vk_ops) -> relu: Vulkan, CPU, Vulkan."""
    return graph(
        [
            node("Relu", ["x"], ["a"], name="relu1"),
            node("Conv", ["a", "w1"], ["b"], pads=[1, 1, 1, 1], name="conv1"),
            node("Relu", ["b"], ["y"], name="relu2"),
        ],
        {"x": ((1, 3, 16, 16), "float32")},
        ["y"],
        {"w1": W1},
    )


def _load(path: Any) -> list[dict]:  # type: ignore[type-arg]
    events = json.loads(path.read_text())
    assert all(e["ph"] in ("X", "M") for e in events)
    return [e for e in events if e["ph"] == "X"]


def _check_tracks(events: list[dict]) -> None:  # type: ignore[type-arg]
    runs = [e for e in events if e["cat"] == "run"]
    for e in events:
        assert e["tid"] == TRACKS[e["cat"]] and e["dur"] >= 0
        run = runs[e["args"]["run"]]
        assert run["ts"] <= e["ts"] + 1e-3 and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3


def test_cli_trace_matches_the_profile_table(session_device, tmp_path, capsys) -> None:  # noqa: F811
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    out = tmp_path / "trace.json"
    args = ["run", str(path), "--profile", "--trace", str(out), "--disable-vk-ops", "Conv"]
    assert main(args) == 0
    table = capsys.readouterr().out
    events = _load(out)
    _check_tracks(events)
    cats = Counter(e["cat"] for e in events)
    assert cats["run"] == 1 and cats["cpu"] == 1 and cats["upload"] == 2 and cats["readback"] == 2
    cpu = next(e for e in events if e["cat"] == "cpu")
    assert "vx.conv" in cpu["args"]["ops"] and "conv1" in cpu["args"]["nodes"]
    # The profile table of the same program: one GPU event per dispatch, same names.
    cfg = vknn.Config(profiling=True, disable_vk_ops="Conv")
    sess = vknn.Session(_model().SerializeToString(), cfg)
    rows = sess.profile(runs=1)
    gpu = [e for e in events if e["cat"] == "gpu"]
    assert len(gpu) == len(rows) == sess.dispatch_count() > 0
    assert sorted((e["name"], e["args"]["op"], e["args"]["nodes"]) for e in gpu) == sorted(
        (r.kernel, r.op, r.node) for r in rows
    )
    for e in gpu:
        assert e["name"] in table  # the printed table lists the same dispatches
        assert e["dur"] > 0
    nodes = " ".join(e["args"]["nodes"] for e in gpu)
    assert "relu1" in nodes and "relu2" in nodes


def test_end_profiling_traces_every_run(session_device, tmp_path) -> None:  # noqa: F811
    so = vknn.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "p_")
    sess = vknn.InferenceSession(_model().SerializeToString(), so)
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    for _ in range(3):
        sess.run(None, {"x": x})
    name = sess.end_profiling()
    assert name.startswith(str(tmp_path / "p_")) and name.endswith(".json")
    events = _load(tmp_path / name.rsplit("/", 1)[1])
    _check_tracks(events)
    per_run = Counter(e["args"]["run"] for e in events if e["cat"] == "gpu")
    assert sorted(per_run) == [0, 1, 2] and len(set(per_run.values())) == 1
    sess.run(None, {"x": x})  # a new trace after end_profiling: one run
    events = _load(tmp_path / sess.end_profiling().rsplit("/", 1)[1])
    assert [e["args"]["run"] for e in events if e["cat"] == "run"] == [0]
