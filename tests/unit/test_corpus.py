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
KNOWN: dict[tuple[str, str], str] = {
    # RoBERTa's position ids: cumsum of the padding mask.
    ("roberta", "torchscript"): "/model/embeddings/CumSum: no Vulkan kernel for onnx.CumSum yet",
}


def _cases() -> list[object]:
    cases = []
    for e in CORPUS:
        for exporter in ("torchscript", "dynamo") if e.dynamo else ("torchscript",):
            why = KNOWN.get((e.name, exporter))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
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


@pytest.mark.parametrize(("name", "exporter"), _cases())
def test_corpus_model(device, tmp_path: Path, name: str, exporter: str) -> None:
    entry = BY_NAME[name]
    path = export(entry, tmp_path / f"{name}.onnx", exporter)
    feeds = entry.inputs()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    (want,) = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(
        ["out"], feeds
    )

    start = len(device.messages)
    shapes = {k: v.shape for k, v in feeds.items()}
    sess = vknn.Session(path, vknn.Config(precision="high", cache_file="off", shapes=shapes))
    # Every node on Vulkan (or folded / eliminated), none on the CPU.
    assert sess.fallback_reasons() == {}
    backends = sess.node_backends()
    assert backends and set(backends.values()) == {"vulkan"}, backends
    got = sess.run(feeds)["out"]
    assert not device.messages[start:], "validation messages:\n" + "\n".join(
        map(str, device.messages[start:])
    )

    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    assert np.isfinite(got).all()
    assert _cosine(got, want) >= 0.99999
    # fp32 throughout at `high`: a few ulps of the output's scale.
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))
