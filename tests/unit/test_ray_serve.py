"""examples/ray_serve_vknn.py under a real local Ray: two replicas on a .vxm
(compiled here with batch buckets 1, 2, 4) and one on the .onnx, on lavapipe
under the validation layer; concurrent HTTP requests of 1-3 samples, as
nested lists and as base64 .npy, each answer against onnxruntime; a bad
request is a 400 with a one-line error."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper, save

from vknn.tools.cli import main as cli_main

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason="ray[serve] is in the test extra")
serve = pytest.importorskip("ray.serve")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def tiny_mlp(path: Path) -> None:
    """x[N, 4] -> MatMul, Add, Relu -> y[N, 3]; and Softmax(x) -> p[N, 4]."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
            helper.make_node("Add", ["m", "b"], ["a"], name="add"),
            helper.make_node("Relu", ["a"], ["y"], name="relu"),
            helper.make_node("Softmax", ["x"], ["p"], name="softmax", axis=1),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 4]),
        ],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, str(path))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def npy_b64(a: np.ndarray) -> dict[str, str]:
    buf = io.BytesIO()
    np.save(buf, a)
    return {"npy_b64": base64.b64encode(buf.getvalue()).decode()}


@pytest.fixture(autouse=True)
def vulkan_device() -> None:
    import vknn

    if not vknn.list_devices():
        pytest.skip("no Vulkan device (the replicas run on lavapipe in CI)")


@pytest.fixture
def local_ray(monkeypatch):  # type: ignore[no-untyped-def]
    # The replicas are worker processes: they import the example from
    # PYTHONPATH and open lavapipe under the validation layer, as the tests do.
    path = os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("VKNN_VALIDATION", os.environ.get("VKNN_VALIDATION", "1"))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as e:  # a sandbox without the sockets/shm Ray needs
        pytest.skip(f"ray cannot start here: {type(e).__name__}: {e}")
    try:
        yield
    finally:
        serve.shutdown()
        ray.shutdown()
        sys.modules.pop("ray_serve_vknn", None)


def test_serve_batches_over_http(tmp_path: Path, local_ray) -> None:  # type: ignore[no-untyped-def]
    import ray_serve_vknn as ex

    onnx_path, vxm_path = tmp_path / "tiny.onnx", tmp_path / "tiny.vxm"
    tiny_mlp(onnx_path)
    buckets = ["--bucket", "x=1x4", "--bucket", "x=2x4", "--bucket", "x=4x4"]
    assert not cli_main(["compile", str(onnx_path), "-o", str(vxm_path), *buckets])
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    vxm_app = ex.app(str(vxm_path), replicas=2)
    serve.run(vxm_app, name="vxm", route_prefix="/vxm")
    onnx_handle = serve.run(
        ex.app(str(onnx_path), buckets=(1, 4)), name="onnx", route_prefix="/onnx"
    )

    ref = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    # 14 requests of 1-3 samples: batches of up to 8 requests, chunked and padded to 1/2/4.
    cases = []  # (app, as base64 .npy, x)
    for k in range(14):
        x = rng.standard_normal((1 + k % 3, 4)).astype(np.float32)
        cases.append(("vxm" if k % 3 else "onnx", k % 2 == 0, x))

    def ask(case):  # type: ignore[no-untyped-def]
        app, as_npy, x = case
        body = {"inputs": {"x": npy_b64(x) if as_npy else x.tolist()}}
        if as_npy:
            body["encoding"] = "npy_b64"
        return post(f"http://127.0.0.1:{port}/{app}", body)

    with ThreadPoolExecutor(len(cases)) as pool:
        answers = list(pool.map(ask, cases))
    for (_, as_npy, x), (code, got) in zip(cases, answers, strict=True):
        assert code == 200, got
        y, p = ref.run(None, {"x": x})
        outs = got["outputs"]
        if as_npy:
            outs = {k: np.load(io.BytesIO(base64.b64decode(v["npy_b64"]))) for k, v in outs.items()}
        np.testing.assert_allclose(np.asarray(outs["y"], np.float32), y, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(outs["p"], np.float32), p, rtol=1e-4, atol=1e-5)

    code, got = post(f"http://127.0.0.1:{port}/vxm", {"inputs": {"x": [[1.0, 2.0]]}})
    assert code == 400 and "input 'x'" in got["error"] and "\n" not in got["error"]
    code, got = post(f"http://127.0.0.1:{port}/vxm", {"inputs": {"z": [[1.0] * 4]}})
    assert code == 400 and "the model's inputs are ['x']" in got["error"]

    status = onnx_handle.status.remote().result()
    assert status["batch_sizes"] == [1, 4] and status["backends"] == ["vulkan"], status
    assert not status["validation_messages"], status
    vxm_handle = serve.get_app_handle("vxm")
    for _ in range(4):  # either replica; every one must be clean
        status = vxm_handle.status.remote().result()
        assert status["batch_sizes"] == [1, 2, 4] and status["backends"] == ["vulkan"], status
        assert not status["validation_messages"], status


def test_batch_is_stacked_chunked_padded_and_split(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The replica's batch step without Ray: requests of 3, 3 and 2 samples
    make 8 rows, run as two chunks of the largest bucket (4), and split back
    in order; 1 sample pads to bucket 2 of (2, 4). All on Vulkan."""
    monkeypatch.setenv("VKNN_VALIDATION", os.environ.get("VKNN_VALIDATION", "1"))
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import ray_serve_vknn as ex

    onnx_path = tmp_path / "tiny.onnx"
    tiny_mlp(onnx_path)
    replica = ex.VknnDeployment.func_or_class(str(onnx_path), buckets=(2, 4), device=0)
    assert sorted(replica.plans) == [2, 4]
    assert set(replica.session.node_backends().values()) == {"vulkan"}
    ref = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for sizes in ([3, 3, 2], [1]):
        reqs = [{"x": rng.standard_normal((n, 4)).astype(np.float32)} for n in sizes]
        for req, got in zip(reqs, replica.run_samples(reqs), strict=True):
            y, p = ref.run(None, req)
            assert got["y"].shape == y.shape and got["p"].shape == p.shape
            np.testing.assert_allclose(got["y"], y, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(got["p"], p, rtol=1e-4, atol=1e-5)
    assert not replica.status()["validation_messages"]
