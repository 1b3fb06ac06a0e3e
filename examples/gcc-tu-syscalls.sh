#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gcc-tu-syscalls.sh - path syscalls of one `gcc -O2 -c` with and without the shim.
#
# Usage: examples/gcc-tu-syscalls.sh [SHIM.so]   (default: build/preload/librcuwalk.so)
#
# The TU includes 15 system headers and one project header, compiled with 8
# extra -I directories (inc1..inc8, one header each): the case of README's
# "Measured figures".  Three runs under `strace -f`: no shim, the shim with
# complete directories off (RCUWALK_COMPLETE=0), the shim (defaults).  The
# traces live in a scratch directory that gcc never looks up, apart from the
# object files: strace writing its log into a directory the shim watches
# adds events, and the shim's syscalls about them, which strace logs again.
#
# Counted: openat, open, newfstatat, stat, lstat, access, faccessat,
# faccessat2, readlink, statx, getdents64.  fstat (newfstatat(fd, "",
# AT_EMPTY_PATH): no path lookup) is counted apart, on both sides.  Per
# process by the name it exec'd; the shim's own threads (the inotify
# reader) appear under their thread id.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
shim=${1:-$here/build/preload/librcuwalk.so}
[[ -f $shim ]] || { echo "$0: $shim not found (build first)" >&2; exit 1; }
work=$(mktemp -d /tmp/rcuwalk-tu-XXXXXX)
logs=$(mktemp -d /tmp/rcuwalk-tulog-XXXXXX)
out=$(mktemp -d /tmp/rcuwalk-tuout-XXXXXX)
trap 'rm -rf "$work" "$logs" "$out"' EXIT

for i in 1 2 3 4 5 6 7 8; do
	mkdir "$work/inc$i"
	echo "/* $i */" >"$work/inc$i/dummy$i.h"
done
{
	for h in stdio stdlib string stdint errno unistd fcntl sys/stat pthread math time \
		signal limits ctype assert; do
		echo "#include <$h.h>"
	done
	echo '#include "dummy8.h"'
	echo 'int main(void) { return 0; }'
} >"$work/tu.c"
sleep 2 # past the racy-timestamp window: attributes of the new files are kept

trace=openat,open,newfstatat,stat,lstat,access,faccessat,faccessat2,readlink,statx,getdents64,execve
run() { # tag [VAR=value...]
	local tag=$1 e=()
	shift
	for v in "$@"; do e+=(-E "$v"); done
	(cd "$work" && strace -f "${e[@]}" -e trace=$trace -o "$logs/$tag.tr" \
		gcc -O2 -Iinc1 -Iinc2 -Iinc3 -Iinc4 -Iinc5 -Iinc6 -Iinc7 -Iinc8 \
		-c tu.c -o "$out/$tag.o")
}
report() { # tag
	awk -v tag="$1" '
	match($0, /^[0-9]+ +[a-z0-9_]+\(/) {
		split($0, f, /[ (]+/); pid = f[1]; sc = f[2]
		if (sc == "execve") {
			if ($0 !~ /ENOENT/) { split($0, q, "\""); n = split(q[2], c, "/"); name[pid] = c[n] }
			next
		}
		if (sc == "newfstatat" && $0 ~ /AT_EMPTY_PATH/) { fstat++; next }
		calls[pid] = calls[pid] + 1; per[sc]++; total++
	}
	END {
		printf "%-10s %5d path syscalls (+%d fstat):", tag, total, fstat
		for (s in per) printf " %s %d", s, per[s]
		printf "\n           per process:"
		for (p in calls) printf " %s %d", (p in name) ? name[p] : "tid" p, calls[p]
		printf "\n"
	}' "$logs/$1.tr"
}
run none
run off LD_PRELOAD="$shim" RCUWALK_COMPLETE=0
run on LD_PRELOAD="$shim"
for t in off on; do
	cmp -s "$out/none.o" "$out/$t.o" || { echo "$0: object files differ ($t)" >&2; exit 1; }
done
for t in none off on; do report $t; done
