#!/usr/bin/env bash
# The main job: set up, then compile a real model (ResNet-50 from the onnx
# wheel) through the full VKNN pipeline and print what came out.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
MODEL="${1:-$(.venv/bin/python -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light/light_resnet50.onnx"))')}"
exec .venv/bin/vknn compile "$MODEL"
