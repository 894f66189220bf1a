"""Progress bars (issue 16 item 5): compile, autotune and the conformance
runner draw one on a terminal (tqdm, or one line without it) and write
nothing when stderr is not a terminal or VKNN_PROGRESS=0."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import vknn
from tests.unit.vulkan.harness import graph, node
from vknn.tools.conformance import run_suite


class Terminal(io.StringIO):
    """A stderr that says it is a terminal (what a person's shell gives)."""

    def isatty(self) -> bool:
        return True


def _model() -> bytes:
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    m = graph([node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
              {"x": ((1, 3, 8, 8), "float32")}, ["y"], {"w": w})  # fmt: skip
    return m.SerializeToString()


def _compile(monkeypatch, stream, config: vknn.Config | None = None) -> str:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "stderr", stream)
    vknn.Session(_model(), config or vknn.Config(backends=("cpu",))).close()
    monkeypatch.undo()
    return stream.getvalue()


def test_compile_bar_on_a_terminal_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("tqdm")
    text = _compile(monkeypatch, Terminal())
    assert "vknn compile (graph)" in text and "vknn compile (lower)" in text
    assert _compile(monkeypatch, io.StringIO()) == ""  # a log or a pipe: nothing
    monkeypatch.setenv("VKNN_PROGRESS", "0")
    assert _compile(monkeypatch, Terminal()) == ""


def test_without_tqdm_one_line(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "tqdm", None)
    text = _compile(monkeypatch, Terminal())
    assert "\rvknn compile (graph) [" in text and "#" in text


def test_autotune_bar(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """(Not under the validation check: the tuner's timing runs report a
    read-after-write hazard on lavapipe, a tuning.py matter.)"""
    pytest.importorskip("tqdm")
    from vknn.runtime.vulkan.context import shared_device

    if shared_device()[0] is None:
        pytest.skip("no Vulkan device")
    cfg = vknn.Config(autotune="fast", cache_file="off", allow_cpu_fallback=False)
    text = _compile(monkeypatch, Terminal(), cfg)
    assert "vknn autotune" in text


def test_conformance_bar(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("tqdm")
    stream = Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    results = run_suite("CPU", "test_relu")
    monkeypatch.undo()
    assert results and "vknn conformance" in stream.getvalue()
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    run_suite("CPU", "test_relu")
    assert sys.stderr.getvalue() == ""
