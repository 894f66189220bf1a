#!/usr/bin/env bash
# Install what VKNN needs on a fresh Debian 12 machine, idempotently:
# system packages by name (Python, Mesa's lavapipe Vulkan driver and the
# Vulkan loader, the Khronos validation layer) and the Python packages into
# ./.venv. Safe to re-run: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(python3 python3-venv python3-pip mesa-vulkan-drivers libvulkan1 vulkan-validationlayers)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    # A python3 from elsewhere (pyenv) with a working venv module will do.
    if [[ $p == python3* ]] && python3 -c "import venv, ensurepip" 2>/dev/null; then
        continue
    fi
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing system packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=.venv/.vknn-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing Python packages into .venv"
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[test]"
    touch "$stamp"
fi
