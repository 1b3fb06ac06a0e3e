#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/package.sh - build the Debian package the way a release would
# (prefix /usr), check its declared dependencies against what its binaries
# need, install it, and run it.
#   ./tests/package.sh            as root: dpkg -i, checks, dpkg -P at the end
#   PKG_KEEP=1 ./tests/package.sh leave the package installed
#   not root: the package is extracted into a scratch root instead of installed
# Environment: BUILD_DIR (default build-pkg).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
BUILD_DIR=${BUILD_DIR:-build-pkg}

for p in dpkg-dev; do # dpkg-shlibdeps computes Depends
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p"
    else
      echo "package.sh: $p missing: Depends will be the hand-written list" >&2
    fi
  fi
done

cmake -S . -B "$BUILD_DIR" -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF -DRCUWALK_WERROR=ON
cmake --build "$BUILD_DIR" -j"$(nproc)"
rm -f "$BUILD_DIR"/rcuwalk_*.deb
(cd "$BUILD_DIR" && cpack -G DEB)
deb=$(ls "$BUILD_DIR"/rcuwalk_*.deb)
echo "== $deb"
dpkg-deb -c "$deb"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The license travels with the package: Debian's machine-readable copyright
# file, and a maintainer that is not a placeholder address.
dpkg-deb -c "$deb" | grep ' \./usr/share/doc/rcuwalk/copyright$' >/dev/null ||
  { echo "package.sh: no /usr/share/doc/rcuwalk/copyright in the package" >&2; exit 1; }
maint=$(dpkg-deb -f "$deb" Maintainer)
case "$maint" in
  *example.invalid* | "") echo "package.sh: Maintainer is '$maint'" >&2; exit 1 ;;
esac
echo "Maintainer: $maint"

tmp=$(mktemp -d /tmp/rcuwalk-pkg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp/root"
grep -q '^License: MIT$' "$tmp/root/usr/share/doc/rcuwalk/copyright" ||
  { echo "package.sh: copyright names no MIT license" >&2; exit 1; }
# No dead links in the installed documentation: every relative link of
# README.md and doc/*.md resolves beside it.
dead=0
for md in "$tmp"/root/usr/share/doc/rcuwalk/README.md "$tmp"/root/usr/share/doc/rcuwalk/doc/*.md; do
  for l in $(grep -o '](\([^)#]*\)' "$md" | sed 's/^](//' | grep -v -E '^[a-z]+:' | sort -u); do
    [ -e "$(dirname "$md")/$l" ] || { echo "package.sh: ${md#"$tmp"/root}: dead link $l" >&2; dead=1; }
  done
done
[ "$dead" = 0 ]

# Every shared library the packaged binaries need belongs to a declared
# dependency (or is the loader/libc itself, from libc6).
for f in "$tmp"/root/usr/bin/rcuwalk "$tmp"/root/usr/lib/*/librcuwalk.so "$tmp"/root/usr/lib/librcuwalk.so; do
  [ -e "$f" ] || continue
  objdump -f "$f" | grep 'elf64-x86-64' >/dev/null || continue
  for lib in $(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }'); do
    # awk reads to the end (no `exit`): an early exit could kill ldconfig
    # with SIGPIPE, which pipefail + set -e turn into this script's exit 141.
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !p { print $NF; p = 1 }')
    [ -n "$path" ] || { echo "package.sh: $lib not found" >&2; exit 1; }
    owner=$( (dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path") |
      awk -F: 'NR == 1 { print $1 }')
    echo "$(basename "$f") needs $lib from $owner"
    case ",$depends" in
      *", $owner "* | *",$owner "* | *", $owner" | *",$owner") ;;
      *) echo "package.sh: $owner (for $lib) is not in Depends: $depends" >&2; exit 1 ;;
    esac
  done
done

if [ "$(id -u)" -eq 0 ]; then
  dpkg -i "$deb"
  rcuwalk_bin=/usr/bin/rcuwalk
  [ -n "${PKG_KEEP:-}" ] || trap 'dpkg -P rcuwalk >/dev/null; rm -rf "$tmp"' EXIT
  if command -v man >/dev/null; then man -w rcuwalk; else test -e /usr/share/man/man1/rcuwalk.1.gz; fi
  pkg-config --variable=preloadlib rcuwalk
  test -e "$(pkg-config --variable=preloadlib rcuwalk)"
else
  rcuwalk_bin=$tmp/root/usr/bin/rcuwalk
fi

echo "== rcuwalk -- true"
out=$("$rcuwalk_bin" -- true 2>&1)
[ -z "$out" ] || { echo "package.sh: rcuwalk -- true printed: $out" >&2; exit 1; }
"$rcuwalk_bin" --version
"$rcuwalk_bin" -- sh -c 'echo "LD_PRELOAD=$LD_PRELOAD"'

echo "== rcuwalk --stats -- make -j2 on the example project"
"$src"/examples/gen-include-project.sh "$tmp/proj" 8 8 60 >/dev/null
"$rcuwalk_bin" --stats="$tmp/summary" -- make -s -j2 -C "$tmp/proj" >/dev/null
cat "$tmp/summary"
grep -q '^rcuwalk summary: ' "$tmp/summary"
echo "package.sh: OK"
