"""Shared fixtures: the light models shipped in the onnx wheel, small model builders."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

# Sessions must not write model caches next to shared model files (the onnx
# wheel's light models, tests/models); the cache tests name their files.
os.environ.setdefault("VKNN_MODEL_CACHE", "0")

LIGHT_DIR = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(p.name for p in LIGHT_DIR.glob("light_*.onnx"))


@pytest.fixture(scope="session")
def light_dir() -> Path:
    return LIGHT_DIR
