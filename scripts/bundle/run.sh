#!/usr/bin/env bash
# Runs in an unpacked vkgrad bundle (scripts/bundle.sh) on a machine with a Vulkan driver: the
# Vulkan tests under the Khronos validation layer (test_tensor sharded over the cores, test_vk,
# BEAM=2, and the runs with a quirk or feature forced as CTest registers them), the bench on
# the device, a BEAM tune of ResNet-50 and the encoder into a fresh cache, and paired benches of
# the heuristics and the tuned lists. Each step's time comes out of what is left of SECONDS, so
# the whole ends within it. Logs go to OUT; a summary is printed.
#
# Usage: run.sh OUT [SECONDS]   (default 560)
# Environment: STEPS (default "tests bench tune pairs": the steps to run, in that order),
# TUNE_ONLY (default resnet50,bert_encoder: the cases tuned and benched in pairs), DEBUG (passed
# on: at 2 the tune logs each schedule's choice and the paired benches each forward's kernels).
set -u
steps=${STEPS:-tests bench tune pairs}
cases=${TUNE_ONLY:-resnet50,bert_encoder}
step() { [[ " $steps " == *" $1 "* ]]; }
out=${1:?usage: run.sh OUT [SECONDS]}
budget=${2:-560}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_LAYER_PATH=$here/layers
start=$(date +%s)
say() { echo "[$(($(date +%s) - start))s] $*"; }
# Seconds for a step: what is left of the budget less `reserve`, at most `cap`, at least 5.
left() {
  local cap=$1 reserve=$2 l
  l=$((budget - ($(date +%s) - start) - reserve))
  [ "$l" -gt "$cap" ] && l=$cap
  [ "$l" -lt 5 ] && l=5
  echo "$l"
}

"$here/vkgrad" info > "$out/info.txt" 2>&1
grep -E '^(VULKAN|CPU|default)' "$out/info.txt"
grep -q '^VULKAN' "$out/info.txt" || { say "no Vulkan device"; cat "$out/info.txt"; exit 1; }

if step tests; then
say "tests"
jobs=$(nproc)
shards=$((jobs > 2 ? jobs / 2 : 1))
filter='*VULKAN*:CrossDevice.*:DeviceNames.*:VulkanMath.*:VulkanNoFloat64.*:-*BeamEnv*'
t=$(left 180 380)
(
  export VKGRAD_VALIDATION=1
  unset DEBUG
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$t" "$here/test_tensor" \
      --gtest_filter="$filter" > "$out/tensor_vk_$i.log" 2>&1 &
  done
  timeout "$t" "$here/test_vk" > "$out/vk.log" 2>&1 &
  BEAM=2 timeout "$t" "$here/test_tensor" --gtest_filter='*BeamEnv.*' > "$out/beam.log" 2>&1 &
  VKGRAD_VK_DISABLE=float64 timeout "$t" "$here/test_tensor" \
    --gtest_filter='VulkanMath.*:VulkanNoFloat64.*' > "$out/no_fp64.log" 2>&1 &
  VKGRAD_VK_QUIRKS=narrowing_cast,inexact_division timeout "$t" "$here/test_tensor" \
    --gtest_filter='*CoreTest*VULKAN*:*MathTest*VULKAN*' > "$out/forced_quirks.log" 2>&1 &
  VKGRAD_VK_DISABLE=texel_loads timeout "$t" "$here/test_tensor" \
    --gtest_filter='*CoreTest*VULKAN*:*NnTest*VULKAN*:*ReduceTest*VULKAN*:*JitTest*VULKAN*' \
    > "$out/storage_loads.log" 2>&1 &
  NOOPT=1 timeout "$t" "$here/test_tensor" \
    --gtest_filter='*FusionTest*VULKAN*:*ViewsTest*VULKAN*:*NnTest*VULKAN*:*ReduceTest*VULKAN*:*MovementTest*VULKAN*' \
    > "$out/noopt.log" 2>&1 &
  wait
)
for f in "$out"/*.log; do
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$f" | tr '\n' ' ')
  grep -q '^\[  PASSED  \] [0-9]' "$f" || summary="$summary NO PASS LINE; last: $(tail -n 1 "$f" | cut -c1-160)"
  echo "$(basename "$f"): $summary"
done
grep -h '^\[  FAILED  \] [A-Za-z]' "$out"/*.log | sort -u | head -40
fi

if step bench; then
say "bench"
timeout "$(left 150 260)" "$here/vkgrad" bench --device VULKAN --json "$out/bench.json" \
  > "$out/bench.txt" 2>&1
echo "bench exit status $?"
grep -E '^[a-z_0-9]+ +[0-9.-]' "$out/bench.txt"
fi

export VKGRAD_CACHE_DIR=$out/cache
if step tune; then
say "tune"
if step pairs; then reserve=100; else reserve=0; fi
t=$(left "$budget" "$reserve")
# The searches end at four fifths of it (--seconds), leaving the schedules' choice, the cases'
# runs and the table the rest; the timeout only backs that up.
timeout "$t" "$here/vkgrad" tune --device VULKAN --only "$cases" --beam 4 \
  --seconds "$((t * 4 / 5))" > "$out/tune.txt" 2>&1
echo "tune exit status $? (124: cut short by the budget; what it tuned stays cached)"
grep -E 'tuned |kernels searched \(BEAM|slowest kernels by|search budget' "$out/tune.txt" | tail -32
fi

step pairs || { say "done"; exit 0; }
say "paired benches: heuristics (h) and the tuned lists (t)"
for round in 1 2 3; do
  for side in h t; do
    [ "$(left 30 0)" -gt 20 ] || break 2
    if [ $side = h ]; then ignore=1; else ignore=0; fi
    VKGRAD_IGNORE_BEAM_CACHE=$ignore timeout "$(left 30 0)" "$here/vkgrad" bench --device VULKAN \
      --only "$cases,${cases//,/_jit,}_jit" > "$out/pair_${side}_$round.txt" 2>&1
    echo "$side$round: $(grep -E "^(${cases//,/|})" "$out/pair_${side}_$round.txt" |
      awk '{printf "%s %s %s (kernels %s) | ", $1, $2, $3, $4}')"
  done
done
say "done"
