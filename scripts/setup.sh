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

# Mesa >= 25 (lavapipe with VK_KHR_shader_float_controls2, so the fastmath
# path runs on a real driver in CI) comes from the backports suite of the
# machine's own Debian release; its source line is derived from the system's
# apt sources rather than written here.
mesa_version() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo 0; }
if [ -r /etc/os-release ] && grep -q '^ID=debian' /etc/os-release \
    && dpkg --compare-versions "$(mesa_version)" lt 25; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    list=/etc/apt/sources.list.d/vknn-backports.sources
    if [ ! -f "$list" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
        # The stanza that carries the release suite, retargeted at <release>-backports.
        awk -v rel="$codename" 'BEGIN{RS="";ORS="\n\n"} $0 ~ "Suites: " rel "( |$|\n)"' \
            /etc/apt/sources.list.d/debian.sources \
            | sed "s/^Suites: .*/Suites: ${codename}-backports/" | $SUDO tee "$list" >/dev/null
    elif [ ! -f "$list" ] && [ -f /etc/apt/sources.list ]; then
        grep -E "^deb .* ${codename} " /etc/apt/sources.list | head -1 \
            | sed "s/ ${codename} / ${codename}-backports /" \
            | $SUDO tee /etc/apt/sources.list.d/vknn-backports.list >/dev/null
    fi
    echo "setup: installing mesa-vulkan-drivers from ${codename}-backports (Mesa >= 25)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        -t "${codename}-backports" mesa-vulkan-drivers >/dev/null \
        || echo "setup: Mesa from backports unavailable; keeping $(mesa_version)"
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
