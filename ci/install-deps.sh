#!/usr/bin/env bash
# ci/install-deps.sh — install the Debian 12 packages vkgrad needs, only those missing.
# Runs apt-get as root (or through sudo). Nothing else is downloaded, ever.
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev glslang-tools libvulkan-dev mesa-vulkan-drivers vulkan-tools
      libopenblas-dev libcmocka-dev libjson-c-dev gnuplot-nox python3 python3-numpy
      fortunes
      clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
as_root=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq "${missing[@]}"
