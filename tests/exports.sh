#!/bin/sh
# SPDX-License-Identifier: MIT
# exports.sh LIB MAP - the shim exports exactly the names of its version
# script (the interposed libc names, and liburcu's fork hooks when liburcu is
# the shared one) and nothing else: no symbol of liburcu's copy linked into it
# (RCUWALK_URCU_STATIC), no internal function, could interpose a host's.
set -eu
lib=$1
map=$2
tmp=$(mktemp -d /tmp/rcuwalk-exports.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$tmp/exported"
sed -n '/global:/,/local:/p' "$map" | sed 's/global://; s/local:.*//' | tr ';' '\n' |
  tr -d ' \t' | grep . | sort -u >"$tmp/listed"
extra=$(comm -23 "$tmp/exported" "$tmp/listed")
if [ -n "$extra" ]; then
  echo "exports.sh: $lib exports names its version script does not list:" >&2
  echo "$extra" >&2
  exit 1
fi
for name in stat open fork execve; do
  grep -qx "$name" "$tmp/exported" || { echo "exports.sh: $name is not exported" >&2; exit 1; }
done
echo "$(wc -l <"$tmp/exported") names exported, all listed in $map"
if grep -q '^urcu_' "$tmp/exported"; then
  echo "liburcu's fork hooks among them (shared liburcu-bp):"
  grep '^urcu_' "$tmp/exported"
fi
