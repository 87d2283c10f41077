#!/usr/bin/env bash
# Fetches Mesa 25's lavapipe (mesa-vulkan-drivers from bookworm-backports) into <dest> without
# touching the system: apt-get works from a private sources list, lists and cache under <dest>,
# and the package is unpacked with dpkg -x, not installed. Writes <dest>/lvp_icd.json, a Vulkan
# ICD manifest whose library_path is the unpacked libvulkan_lvp.so; point VK_ICD_FILENAMES (and
# VK_DRIVER_FILES) at it to run on that driver.
#
# The driver runs with the system's libraries: it links the system's libLLVM-15, and of libdrm
# (the package asks for 2.4.121; bookworm has 2.4.114) lavapipe uses only functions 2.4.114 has.
#
# Usage: scripts/fetch-mesa25.sh <dest>
# Exit status: 0 when <dest>/lvp_icd.json is there (at once if an earlier run fetched it);
# 3 when the package cannot be downloaded (no network, no backports), with the reason on stderr
# and in <dest>/unavailable.txt; 1 on any other error.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 <dest>" >&2
  exit 2
fi
mkdir -p "$1"
dest=$(cd "$1" && pwd)
icd=$dest/lvp_icd.json

# Already fetched (the manifest and the library it names): nothing to do, no network needed.
fetched() {
  [ -f "$icd" ] && [ -f "$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$icd")" ]
}
if fetched; then
  echo "fetch-mesa25: $icd (mesa-vulkan-drivers $(cat "$dest/version.txt" 2>/dev/null || echo '?'))"
  exit 0
fi

# One fetch at a time per <dest>; a fetch that finished while this one waited is enough.
exec 9>"$dest/.lock"
flock 9
if fetched; then
  echo "fetch-mesa25: $icd"
  exit 0
fi
rm -f "$icd"

work=$dest/apt
rm -rf "$work" "$dest/root" "$dest/unavailable.txt"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/etc"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian" \
  "bookworm-backports main" >"$work/etc/sources.list"
apt_opts=(
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::Etc::SourceList=$work/etc/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::Cache=$work/cache"
  -o "Acquire::Retries=1"
  -o "Acquire::http::Timeout=20"
)
# As root, apt hands downloads to the _apt user, who cannot write into a private directory.
if [ "$(id -u)" -eq 0 ]; then
  apt_opts+=(-o "APT::Sandbox::User=root")
fi

unavailable() {
  {
    echo "fetch-mesa25: cannot download Mesa 25's lavapipe from bookworm-backports: $1"
    echo "(no network or no package; tests on that driver are skipped)"
  } | tee "$dest/unavailable.txt" >&2
  rm -rf "$work"
  exit 3
}

# apt-get update exits 0 when an index fails to download; what counts is whether one came.
out=$(apt-get "${apt_opts[@]}" -q update 2>&1) || true
if ! compgen -G "$work/lists/*bookworm-backports*Packages*" >/dev/null; then
  unavailable "apt-get update: $(grep -m1 '^\(W\|E\): ' <<<"$out" || tail -n1 <<<"$out")"
fi
if ! out=$(cd "$work/cache" && apt-get "${apt_opts[@]}" -q download \
  mesa-vulkan-drivers/bookworm-backports 2>&1); then
  unavailable "apt-get download: $(grep -m1 '^E: ' <<<"$out" || tail -n1 <<<"$out")"
fi

deb=$(find "$work/cache" -maxdepth 1 -name 'mesa-vulkan-drivers_*.deb' | head -n1)
[ -n "$deb" ] || unavailable "apt-get download left no .deb"
dpkg-deb -x "$deb" "$dest/root"
dpkg-deb -f "$deb" Version >"$dest/version.txt"

lib=$(find "$dest/root/usr/lib" -name libvulkan_lvp.so | head -n1)
manifest=$dest/root/usr/share/vulkan/icd.d/lvp_icd.json
if [ -z "$lib" ] || [ ! -f "$manifest" ]; then
  echo "fetch-mesa25: $deb holds no libvulkan_lvp.so or lvp_icd.json" >&2
  exit 1
fi
if missing=$(ldd -r "$lib" 2>&1 | grep 'not found\|undefined symbol'); then
  echo "fetch-mesa25: $lib needs libraries this system lacks:" >&2
  echo "$missing" >&2
  exit 1
fi
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$lib\"#" "$manifest" >"$icd.tmp"
mv "$icd.tmp" "$icd"
rm -rf "$work"
echo "fetch-mesa25: $icd (mesa-vulkan-drivers $(cat "$dest/version.txt"))"
