#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Clause 4 (unrelated writers) and strict mode, as a markdown table:
#   examples/staleness.sh [rcuwalk_staleness options, e.g. --changes 5000]
# Builds build/ (or $BUILD_DIR) first if the tool or the shim is missing, then
# runs the tool under the launcher.  See examples/bench/staleness.c.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
tool=$build/examples/rcuwalk_staleness
launcher=$build/preload/rcuwalk
if [ ! -x "$tool" ] || [ ! -x "$launcher" ]; then
  cmake -S "$root" -B "$build" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target rcuwalk_staleness rcuwalk_preload rcuwalk_launcher >/dev/null
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "Command: \`examples/staleness.sh${*:+ $*}\` (\`rcuwalk -- rcuwalk_staleness --markdown${*:+ $*}\`), CPU: ${cpu:-unknown}."
echo
exec "$launcher" -- "$tool" --markdown "$@"
