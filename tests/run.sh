#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh - set up, build and test rcuwalk from a clean clone.
#   ./tests/run.sh              install missing packages (apt-get, as root or via sudo),
#                               configure, build (-Werror), run ctest
#   ./tests/run.sh --build-only  same without running the tests
# Environment: BUILD_DIR (default build), CMAKE_ARGS (extra cmake arguments),
#              CTEST_ARGS (extra ctest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(cmake make gcc pkg-config liburcu-dev libinotifytools0-dev libcmocka-dev inotify-tools fakeroot)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "run.sh: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DRCUWALK_WERROR=ON ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)"
[ "${1:-}" = "--build-only" ] && exit 0
cd "$BUILD_DIR"
# shellcheck disable=SC2086
ctest --output-on-failure ${CTEST_ARGS:-}
