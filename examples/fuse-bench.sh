#!/bin/bash
# SPDX-License-Identifier: MIT
# FUSE build benchmark: the generated project (examples/gen-include-project.sh, defaults:
# 40 TUs, 24 -I dirs, 400 headers) served by bindfs in a private mount namespace;
# make -s -j2 after make clean, 5 alternating rounds of: no shim, shim with complete
# directories off (RCUWALK_COMPLETE=0), shim with them on (default); then one
# `strace -f -c` of each (path syscalls, fstat included) and a checksum of the
# outputs.  Needs root, bindfs and /dev/fuse.  Run as:
#   unshare -m bash examples/fuse-bench.sh [SHIM.so] [DIR]
# (DIR, default /tmp/rcuwalk-fuse-bench, is emptied and reused.)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
S=$(realpath "${1:-$here/build/preload/librcuwalk.so}")
B=${2:-/tmp/rcuwalk-fuse-bench}
mount --make-rprivate /
rm -rf "$B"; mkdir -p $B/mnt
bash "$here/examples/gen-include-project.sh" $B/src >/dev/null
RCUWALK_DISABLE=1 bindfs $B/src $B/mnt
trap 'cd /; umount $B/mnt' EXIT
cd $B/mnt
run() { # variant -> seconds
	make -s clean >/dev/null
	local t0 t1
	t0=$(date +%s.%N)
	case $1 in
	none) make -s -j2 >/dev/null ;;
	off) LD_PRELOAD=$S RCUWALK_COMPLETE=0 make -s -j2 >/dev/null ;;
	on) LD_PRELOAD=$S make -s -j2 >/dev/null ;;
	esac
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
run none >/dev/null # warm the page cache
declare -A T
for i in 1 2 3 4 5; do
	for v in none off on; do
		T[$v]+="$(run $v) "
	done
done
for v in none off on; do
	echo "$v: ${T[$v]} median $(printf '%s\n' ${T[$v]} | sort -n | sed -n 3p)"
done
TR="openat,open,newfstatat,stat,lstat,access,faccessat,faccessat2,readlink,statx,getdents64"
for v in none off on; do
	make -s clean >/dev/null
	case $v in
	none) strace -f -c -o $B/strace-$v.txt -e trace=$TR make -s -j2 >/dev/null ;;
	off) strace -f -c -o $B/strace-$v.txt -E LD_PRELOAD=$S -E RCUWALK_COMPLETE=0 -e trace=$TR make -s -j2 >/dev/null ;;
	on) strace -f -c -o $B/strace-$v.txt -E LD_PRELOAD=$S -e trace=$TR make -s -j2 >/dev/null ;;
	esac
	echo "$v: path syscalls $(tail -1 $B/strace-$v.txt)"
	md5sum app obj/*.o | md5sum
done
