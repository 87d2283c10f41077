#!/usr/bin/env bash
# Packs the release CLI and the Vulkan test programs, with the shared libraries they load beyond
# the C and C++ runtimes, the Vulkan loader and the Khronos validation layer, into one archive
# that runs on another x86-64 Linux machine with a Vulkan driver and none of the build's
# packages (a GPU machine): there, `tar xf vkgrad-bundle.tar.xz && vkgrad-bundle/run.sh OUT`
# runs the Vulkan tests under the validation layer, the bench and a BEAM tune (scripts/bundle/run.sh).
#
# Usage: scripts/bundle.sh [archive]   (default build/vkgrad-bundle.tar.xz)
# Builds the release CLI and the ci preset's test_tensor and test_vk first (both configured).
set -euo pipefail

cd "$(dirname "$0")/.."
archive=$(realpath -m "${1:-build/vkgrad-bundle.tar.xz}")
cmake --build --preset release --target vkgrad_cli
cmake --build --preset ci --target test_tensor test_vk

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/vkgrad-bundle
mkdir -p "$b/lib" "$b/layers"
strip -o "$b/vkgrad" build/release/tools/cli/vkgrad
strip -o "$b/test_tensor" build/ci/tests/tensor/test_tensor
strip -o "$b/test_vk" build/ci/tests/vk/test_vk
cp scripts/bundle/run.sh "$b/run.sh"

# Every library the programs link but glibc, libstdc++, libgcc and zlib, which any machine has
# (in a version at least as new as Debian 12's where it runs newer programs).
for exe in "$b/vkgrad" "$b/test_tensor" "$b/test_vk"; do
  ldd "$exe" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | libz.so* | ld-linux*) ;;
    *) cp -L "$lib" "$b/lib/" ;;
  esac
done
# volk opens libvulkan.so.1 at run time: the loader travels too (drivers are the machine's).
loader=$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ && !found {print $NF; found = 1}')
[ -n "$loader" ] || { echo "bundle: no libvulkan.so.1 here" >&2; exit 1; }
cp -L "$loader" "$b/lib/libvulkan.so.1"
layer=$(ldconfig -p | awk '/libVkLayer_khronos_validation.so / && !found {print $NF; found = 1}')
manifest=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
if [ -n "$layer" ] && [ -f "$manifest" ]; then
  strip -o "$b/lib/libVkLayer_khronos_validation.so" "$layer"
  cp "$manifest" "$b/layers/"
else
  echo "bundle: no Khronos validation layer here; the tests will run without it" >&2
fi
mkdir -p "$(dirname "$archive")"
tar -C "$stage" -cf - vkgrad-bundle | xz -T0 -6 > "$archive"
echo "bundle: $archive ($(du -h "$archive" | cut -f1))"
