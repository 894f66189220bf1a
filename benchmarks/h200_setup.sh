#!/usr/bin/env bash
# Environment for running the benchmarks on the lent NVIDIA H200 machine
# (no registry access there): unpack the Vulkan loader .debs and the carried
# wheels (see /work/.library/device/README.md), point the loader at NVIDIA's
# ICD, and put glslangValidator and pnnx on PATH. Source it:
#     . benchmarks/h200_setup.sh
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD
export PATH=/tmp/site/cmeel.prefix/bin:/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
