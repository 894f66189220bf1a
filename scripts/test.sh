#!/usr/bin/env bash
# All tests: set up, lint, then the lit/FileCheck suite and the pytest suite
# (slow model tests included). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
# Every Vulkan device the tests open runs under the Khronos validation layer;
# the Vulkan tests fail on any message it reports.
export VKNN_VALIDATION="${VKNN_VALIDATION:-1}"
echo "== ruff"
ruff check vknn tests benchmarks examples
echo "== lit"
lit -sv tests/lit
echo "== pytest"
pytest -q tests/unit
