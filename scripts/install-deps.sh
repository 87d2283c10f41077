#!/usr/bin/env bash
# Installs vkgrad's build, test and benchmark dependencies from Debian 12 packages.
# Idempotent: packages already present are skipped; needs root (or sudo) only when something is missing.
# --peers also installs PyTorch and torchvision (python3-torch, python3-torchvision) for
# `make bench-peers`; nothing else needs them.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang clang-format
  libvulkan-dev libvulkan-volk-dev glslang-dev glslang-tools spirv-tools
  libfmt-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libsqlite3-dev libicu-dev python3
  libonnx-dev libprotobuf-dev python3-onnx python3-numpy
)
peer_packages=(python3-torch python3-torchvision)

for arg in "$@"; do
  case "$arg" in
    --peers) packages+=("${peer_packages[@]}") ;;
    *) echo "usage: $0 [--peers]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
