#!/usr/bin/env bash
# Regenerates the golden files in tests/codegen/golden/: the C and GLSL of the canonical kernels
# from the current renderers, and opts/, the heuristics' Opt lists of the bench kernels.
# Usage: tools/regen_golden.sh [build-dir]   (default build/dev; the test binary must be built)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/dev}"
mkdir -p "$root/tests/codegen/golden/opts"
for name in test_codegen test_opt_golden; do
  bin="$build/tests/codegen/$name"
  [ -x "$bin" ] || { echo "regen_golden: $bin not built (cmake --build $build --target $name)" >&2; exit 1; }
  VKGRAD_REGEN_GOLDEN=1 "$bin" --gtest_filter='*Golden.*' >/dev/null
done
git -C "$root" status --short tests/codegen/golden
