#!/usr/bin/env bash
# The main job: set up, then compile a real model (SqueezeNet from the onnx
# wheel by default) through the full VKNN pipeline, write its support report,
# and run it on the Vulkan device found (lavapipe when there is no GPU),
# compared with onnxruntime. `./scripts/demo.sh path/to/model.onnx` for another.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
MODEL="${1:-}"
if [ -z "$MODEL" ]; then
    # A copy of the onnx wheel's SqueezeNet in a work folder: the model cache
    # (<model>.vkcache, written next to the model) then lives there, and a
    # second demo run starts warm.
    WORK="${TMPDIR:-/tmp}/vknn-demo"
    mkdir -p "$WORK"
    MODEL="$WORK/squeezenet.onnx"
    [ -f "$MODEL" ] || cp "$(.venv/bin/python -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light/light_squeezenet.onnx"))')" "$MODEL"
fi
REPORT="${TMPDIR:-/tmp}/vknn-support-report.json"
.venv/bin/vknn compile "$MODEL" --support-report "$REPORT" | grep -v "^    "
exec .venv/bin/vknn run "$MODEL" --compare-ort --profile --profile-top 10
