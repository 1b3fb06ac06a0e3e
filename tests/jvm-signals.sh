#!/bin/sh
# SPDX-License-Identifier: MIT
# jvm-signals.sh SHIM - a JVM, whose HotSpot takes SIGSEGV on purpose
# (implicit null checks, safepoint polls), runs under the shim exactly as
# without it: the shim's SIGSEGV handler (preload/fault.c) hands every fault
# that is not its own to the JVM's.  Skips (77) without java and javac.
set -eu
shim=$1
src=$(cd "$(dirname "$0")" && pwd)/programs/NullChecks.java
command -v java >/dev/null && command -v javac >/dev/null || { echo "jvm-signals: no java/javac: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/rcuwalk-jvm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# ld.so splits LD_PRELOAD at spaces: preload a copy from a path without any.
cp "$shim" "$tmp/librcuwalk.so"
shim=$tmp/librcuwalk.so
cp "$src" "$tmp/" && javac -d "$tmp" "$tmp/NullChecks.java"
want="npe=100000 found=1000"
for opts in "" "-Xcomp" "-Xcheck:jni"; do
  # shellcheck disable=SC2086
  off=$(java $opts -cp "$tmp" NullChecks "$tmp/NullChecks.class")
  # shellcheck disable=SC2086
  on=$(LD_PRELOAD=$shim java $opts -cp "$tmp" NullChecks "$tmp/NullChecks.class")
  echo "java $opts: without the shim '$off', with it '$on'"
  [ "$off" = "$want" ] && [ "$on" = "$want" ] || { echo "jvm-signals: FAIL"; exit 1; }
done
echo "jvm-signals: 3 passed, 0 failed"
