#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spdx.sh - every source file of the tree names its license in an SPDX line
# within its first 5 lines: C sources and headers, shell scripts, CMake files,
# templates, the linker version script, the man page.  Prose (*.md), test
# data and generated results are not source files.  Lists each file without
# one and fails.
# Usage: tests/spdx.sh [SRCDIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -path ./build\* -prune -o -type f -print | sed 's|^\./||')
fi
missing=0 n=0
for f in "${files[@]}"; do
  case "$f" in
    packaging/copyright.in) continue ;; # Debian copyright format: its License field says MIT
    *.c | *.h | *.sh | *.in | *.cmake | CMakeLists.txt | */CMakeLists.txt | .ci/run | doc/*.1) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  n=$((n + 1))
  if ! head -n 5 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
    echo "spdx.sh: no 'SPDX-License-Identifier: MIT' in the first 5 lines of $f"
    missing=$((missing + 1))
  fi
done
echo "spdx.sh: $n source files, $missing without an SPDX line"
[ "$missing" -eq 0 ]
