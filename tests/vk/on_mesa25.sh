#!/usr/bin/env bash
# Runs a test program on Mesa 25's lavapipe, as fetched by scripts/fetch-mesa25.sh into <dir>:
# the loader sees that driver only (VK_ICD_FILENAMES and VK_DRIVER_FILES name its manifest),
# and the tensor harness must open it (VKGRAD_TEST_DEVICES), so nothing passes by not running.
# Exits 77 (ctest: skipped) with the reason when the driver could not be fetched.
# Usage: tests/vk/on_mesa25.sh <dir> <program> [args...]
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 <dir> <program> [args...]" >&2
  exit 2
fi
dir=$1
shift
icd=$dir/lvp_icd.json
if [ ! -f "$icd" ]; then
  echo "SKIPPED: Mesa 25's lavapipe is not in $dir:"
  cat "$dir/unavailable.txt" 2>/dev/null || echo "scripts/fetch-mesa25.sh $dir has not fetched it"
  exit 77
fi
echo "on $icd (mesa-vulkan-drivers $(cat "$dir/version.txt" 2>/dev/null || echo '?'))"
export VK_ICD_FILENAMES=$icd VK_DRIVER_FILES=$icd
export VKGRAD_TEST_DEVICES=${VKGRAD_TEST_DEVICES:-CPU,VULKAN}
exec "$@"
