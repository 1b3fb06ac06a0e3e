#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# readme.sh - README is for users: at most 350 lines; its first 30 lines say
# what it does, when to use it and not, how to install and uninstall; no
# commit hashes, issue numbers or "this VM" (figures with those live in
# doc/benchmarks.md).  Lists each breach and fails.
# Usage: tests/readme.sh [SRCDIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
f=README.md
bad=0
say() { echo "readme.sh: $*"; bad=1; }
n=$(wc -l <"$f")
[ "$n" -le 350 ] || say "$f has $n lines (at most 350)"
head=$(head -n 30 "$f")
for w in 'When to use' 'When not' 'Install' 'Uninstall'; do
  grep -q -- "$w" <<<"$head" || say "the first 30 lines do not say '$w'"
done
grep -n -E '\bissue [0-9]+|\bissues? #[0-9]+' "$f" && say "issue numbers in $f"
grep -n -E '(^|[^0-9a-zA-Z/._-])[0-9a-f]{7,40}([^0-9a-zA-Z_-]|$)' "$f" | grep -v -E '[0-9]{7}' &&
  say "commit hashes in $f"
grep -n -i 'this VM' "$f" && say "'this VM' in $f"
[ "$bad" = 0 ] && echo "readme.sh: $f: $n lines, for users"
[ "$bad" = 0 ]
