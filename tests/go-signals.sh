#!/bin/sh
# SPDX-License-Identifier: MIT
# go-signals.sh SHIM - a cgo program (Go's runtime installs its SIGSEGV
# handler over the shim's with raw syscalls) recovers its own nil
# dereference and gets EFAULT for a bad path from C code, with and without
# the shim.  Skips (77) without the go toolchain.
set -eu
shim=$1
src=$(cd "$(dirname "$0")" && pwd)/programs/cgo_segv
command -v go >/dev/null || { echo "go-signals: no go toolchain: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/rcuwalk-go.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# ld.so splits LD_PRELOAD at spaces: preload a copy from a path without any.
cp "$shim" "$tmp/librcuwalk.so"
shim=$tmp/librcuwalk.so
cp "$src"/main.go "$src"/go.mod "$tmp/"
(cd "$tmp" && GOCACHE="$tmp/cache" GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1 go build -o prog .)
want="recovered nil deref: true cgo stat bad ptr errno: 14"
off=$("$tmp/prog")
on=$(LD_PRELOAD=$shim "$tmp/prog")
echo "without the shim: '$off'"
echo "with the shim:    '$on'"
[ "$off" = "$want" ] && [ "$on" = "$want" ] || { echo "go-signals: FAIL"; exit 1; }
echo "go-signals: 1 passed, 0 failed"
