#!/usr/bin/env bash
# Formats every C/C++ file in the repository with the checked-in .clang-format.
#   tools/format.sh          rewrite files in place
#   tools/format.sh --check  change nothing; list the files that differ and exit 1 if any do
# Files are those git knows: tracked plus untracked-but-not-ignored (so new files count too),
# except generated goldens (tests/codegen/golden/), which must stay byte-for-byte as rendered.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
command -v "$clang_format" >/dev/null || { echo "format.sh: $clang_format not found" >&2; exit 1; }

files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && files+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.c' \
  ':!:tests/codegen/golden/*' | sort -zu)

if [ ${#files[@]} -eq 0 ]; then
  echo "format.sh: no C/C++ files"
  exit 0
fi

if [ "$mode" = fix ]; then
  "$clang_format" -i -- "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

differ=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run -Werror -- "$f" >/dev/null 2>&1 || differ+=("$f")
done
if [ ${#differ[@]} -ne 0 ]; then
  echo "format.sh: ${#differ[@]} of ${#files[@]} files are not clang-formatted:"
  printf '  %s\n' "${differ[@]}"
  echo "run tools/format.sh (or make format) to fix them"
  exit 1
fi
echo "format.sh: ${#files[@]} files clang-formatted"
