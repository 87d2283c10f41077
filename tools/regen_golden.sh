#!/usr/bin/env bash
# Regenerates the golden C and GLSL files in tests/codegen/golden/ from the current renderers.
# Usage: tools/regen_golden.sh [build-dir]   (default build/dev; the test binary must be built)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/dev}"
bin="$build/tests/codegen/test_codegen"
[ -x "$bin" ] || { echo "regen_golden: $bin not built (cmake --build $build --target test_codegen)" >&2; exit 1; }
VKGRAD_REGEN_GOLDEN=1 "$bin" --gtest_filter='*Golden.*' >/dev/null
git -C "$root" status --short tests/codegen/golden
