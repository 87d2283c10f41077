#!/usr/bin/env bash
# Installs a configured+built vkgrad tree into a scratch prefix, then configures, builds and
# runs tests/install/consumer against it with find_package(vkgrad CONFIG REQUIRED).
# Usage: tests/install/run.sh <build-dir> <scratch-dir>
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <build-dir> <scratch-dir>" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cache_value() {  # cache_value NAME -> value of NAME in the build's CMakeCache.txt (may be empty)
  sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n 1
}
generator=$(cache_value CMAKE_GENERATOR)
cxx=$(cache_value CMAKE_CXX_COMPILER)
build_type=$(cache_value CMAKE_BUILD_TYPE)

rm -rf "$scratch"
mkdir -p "$scratch"
prefix="$scratch/prefix"

echo "== install $build_dir -> $prefix"
cmake --install "$build_dir" --prefix "$prefix"

echo "== configure consumer"
cmake -S "$here/consumer" -B "$scratch/build" \
  ${generator:+-G "$generator"} \
  ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} \
  -DCMAKE_BUILD_TYPE="${build_type:-Release}" \
  -DCMAKE_PREFIX_PATH="$prefix"

echo "== build consumer"
cmake --build "$scratch/build"

echo "== run consumer"
"$scratch/build/vkgrad_consumer"
