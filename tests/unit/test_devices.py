"""Device choice (issue 16 item 2): `vknn devices`, Config(device=...) by index
or name, a one-line error listing the devices, `vknn run --device`, and one
session per device driven from several threads at once."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
import pytest

import vknn
from tests.unit.vulkan.conftest import session_device  # noqa: F401
from tests.unit.vulkan.harness import graph, node
from vknn.devices import list_devices
from vknn.runtime.vulkan.context import physical_devices
from vknn.tools.cli import main

W = np.random.default_rng(0).standard_normal((16, 3, 3, 3)).astype(np.float32)


def _model() -> Any:
    return graph(
        [node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]), node("Relu", ["a"], ["y"])],
        {"x": ((1, 3, 32, 32), "float32")},
        ["y"],
        {"w": W},
    )


def test_cli_lists_every_device(session_device, capsys) -> None:  # noqa: F811
    assert main(["devices"]) == 0
    text = capsys.readouterr().out
    names = [n for n, _ in physical_devices()]
    for i, name in enumerate(names):
        assert f"[{i}] {name}" in text
    assert "driver" in text and "target" in text and "GiB" in text
    assert main(["devices", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == names
    for r in rows:
        assert r["memory_bytes"] > 0 and r["caps"]["subgroup_size"] >= 1
        assert r["preset"] in ("nvidia", "lavapipe", "generic", "none")
    assert rows == [d.to_dict() for d in list_devices()]


def test_config_device_by_index_and_name(session_device) -> None:  # noqa: F811
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    name = physical_devices()[0][0]
    model = _model().SerializeToString()
    want = vknn.Session(model, vknn.Config(backends=("cpu",))).run({"x": x})["y"]
    for dev in (0, "0", name.split()[0].upper()):
        sess = vknn.Session(model, vknn.Config(device=dev, allow_cpu_fallback=False))
        np.testing.assert_allclose(sess.run({"x": x})["y"], want, rtol=1e-4, atol=1e-4)
        sess.close()


@pytest.mark.parametrize("dev", ["no-such-gpu", 99])
def test_unknown_device_lists_the_devices(session_device, dev) -> None:  # noqa: F811
    with pytest.raises(vknn.InvalidArgument) as e:
        vknn.Session(_model().SerializeToString(), vknn.Config(device=dev))
    assert physical_devices()[0][0] in str(e.value) and str(dev) in str(e.value)


def test_cli_run_device(session_device, tmp_path, capsys) -> None:  # noqa: F811
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    assert main(["run", str(path), "--device", "0"]) == 0
    assert "output   y" in capsys.readouterr().out
    assert main(["run", str(path), "--device", "no-such-gpu"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vknn: error: device 'no-such-gpu'") and "\n" not in err


def test_sessions_per_device_run_in_parallel_threads(session_device) -> None:  # noqa: F811
    """Two sessions (on lavapipe both are device 0) driven by two threads: every
    output right, and the runs of the two threads are in flight at once."""
    model = _model().SerializeToString()
    sessions = [vknn.Session(model, vknn.Config(device=0, allow_cpu_fallback=False))
                for _ in range(2)]  # fmt: skip
    rng = np.random.default_rng(2)
    feeds = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(8)]
    want = [sessions[0].run({"x": f})["y"] for f in feeds]
    spans: list[list[tuple[float, float]]] = [[], []]
    ok: list[bool] = []
    start = threading.Barrier(2)

    def work(k: int) -> None:
        start.wait()
        for i in range(20):
            t0 = time.perf_counter()
            y = sessions[k].run({"x": feeds[i % 8]})["y"]
            spans[k].append((t0, time.perf_counter()))
            ok.append(bool(np.array_equal(y, want[i % 8])))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 40 and all(ok)
    overlaps = sum(a0 < b1 and b0 < a1 for a0, a1 in spans[0] for b0, b1 in spans[1])
    assert overlaps > 0, "the two sessions' runs never overlapped"
    for s in sessions:
        s.close()
