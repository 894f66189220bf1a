"""The own test corpus (issue 15): each architecture of `tests/models/corpus.py`
(built from a config with seeded random weights, nothing downloaded) is
exported here by the TorchScript exporter (dynamic axes) and, for some, the
dynamo exporter (opset 18, static shapes), compiled by vknn at `high` on the
test device (lavapipe, validation layer on: any message fails) and compared
with onnxruntime; every node must run on Vulkan (0 CPU nodes, no fallback
reason). A model that does not meet that yet is an xfail(strict=True) naming
the exact reason, so the list of what is missing is kept honest."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")

import onnxruntime as ort  # noqa: E402

import vknn  # noqa: E402
from tests.models.corpus import BY_NAME, CORPUS, export  # noqa: E402

pytestmark = pytest.mark.slow

# (model, exporter) -> why it does not run wholly on Vulkan, or not correctly, yet.
KNOWN: dict[tuple[str, str], str] = {}


def _cases() -> list[object]:
    cases = []
    for e in CORPUS:
        for exporter in ("torchscript", "dynamo") if e.dynamo else ("torchscript",):
            why = KNOWN.get((e.name, exporter))
            marks = (
                [pytest.mark.xfail(strict=True, raises=AssertionError, reason=why)] if why else []
            )
            cases.append(pytest.param(e.name, exporter, marks=marks, id=f"{e.name}-{exporter}"))
    return cases


@pytest.fixture(scope="module")
def device() -> object:
    os.environ.setdefault("VKNN_VALIDATION", "1")
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    return dev


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))


def _smaller(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`feeds` cut along the model's dynamic axes: the second (padded) batch
    row alone, sequences a step or a tenth shorter: the second bucket of a
    dynamic export."""
    out = {}
    for k, v in feeds.items():
        idx = [slice(None)] * v.ndim
        for axis, dim in BY_NAME[name].dynamic.get(k, {}).items():
            n = v.shape[axis]
            idx[axis] = slice(1, 2) if dim == "batch" else slice(0, n - max(1, n // 10))
        out[k] = np.ascontiguousarray(v[tuple(idx)])
    return out


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return sess.run(["out"], feeds)[0]


def _compare(got: np.ndarray, want: np.ndarray, precision: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    assert np.isfinite(got).all()
    scale = max(1.0, float(np.abs(want).max()))
    if precision == "high":  # fp32 throughout: a few ulps of the output's scale
        assert _cosine(got, want) >= 0.99999
        assert np.abs(got - want).max() <= 1e-4 * scale
    else:  # fp16 storage and arithmetic where the kernels choose it
        assert _cosine(got, want) >= 0.999
        assert np.abs(got - want).max() <= 5e-2 * scale


def _on_vulkan(path: Path, feeds: dict[str, np.ndarray], precision: str) -> Any:
    """A session of `path` at `precision` with every node on Vulkan (or folded
    / eliminated), none on the CPU, and no validation message."""
    shapes = {k: v.shape for k, v in feeds.items()}
    sess = vknn.Session(path, vknn.Config(precision=precision, cache_file="off", shapes=shapes))
    reasons = sess.fallback_reasons()
    assert reasons == {}, reasons
    backends = sess.node_backends()
    assert backends and set(backends.values()) == {"vulkan"}, backends
    return sess


def _no_messages(device: Any, start: int) -> None:
    new = device.messages[start:]
    assert not new, "validation messages:\n" + "\n".join(map(str, new))


@pytest.mark.parametrize(("name", "exporter"), _cases())
def test_corpus_model(device: Any, tmp_path: Path, name: str, exporter: str) -> None:
    entry = BY_NAME[name]
    path = export(entry, tmp_path / f"{name}.onnx", exporter)
    feeds = entry.inputs()
    start = len(device.messages)
    sess = _on_vulkan(path, feeds, "high")
    _compare(sess.run(feeds)["out"], _ort(path, feeds), "high")
    if exporter == "torchscript":  # dynamic axes: a second bucket of other shapes
        small = _smaller(name, feeds)
        sess.prepare_shapes({k: v.shape for k, v in small.items()})
        _compare(sess.run(small)["out"], _ort(path, small), "high")
    _no_messages(device, start)


# A few at `low` (fp16 storage): the transformer blocks and both CNN kinds.
LOW = ["bert", "llama", "vit", "resnet", "mobile_cnn"]


@pytest.mark.parametrize("name", LOW)
def test_corpus_model_low(device: Any, tmp_path: Path, name: str) -> None:
    entry = BY_NAME[name]
    path = export(entry, tmp_path / f"{name}.onnx", "torchscript")
    feeds = entry.inputs()
    start = len(device.messages)
    sess = _on_vulkan(path, feeds, "low")
    _compare(sess.run(feeds)["out"], _ort(path, feeds), "low")
    _no_messages(device, start)
