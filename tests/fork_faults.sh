#!/bin/sh
# SPDX-License-Identifier: MIT
# fork_faults.sh LIB FORK_COST CC - a fork() child of a process in its
# warm-up (the cache not started: a shell running `true` in a loop) takes no
# more page faults than with an empty preloaded library.  Each page a child
# first touches is a fault (~2-4 us on a small VM); the child's _exit() used
# to call libc's syscall() through the shim's PLT, which a process in its
# warm-up had not bound yet: ld.so's lazy binding in every child, 4-5 faults
# more than an empty library (preload/stats.c, do_exit).  Counted, not timed:
# FORK_COST (examples/bench/fork_cost.c) forks 300 children that _exit(0) at
# once and prints their faults per fork; the median of 3 runs each way,
# alternating; allowed: the empty library's + 2.  Then the same for children
# that are a shell's command substitution (FORK_COST -s: pipe, close, dup2,
# write, _exit): the real write() the child's wrapper calls was resolved
# with dlsym in every child, whose parent never wrote (7-8 faults more than
# an empty library; preload/shim_process.c, preload_resolve_for_children).
# Both with the shim in its warm-up and with RCUWALK_DISABLE=1.  Skipped (77)
# without a compiler, or where the library's path has a space or a colon.
set -eu
lib=$1
fc=$2
cc=${3:-cc}
limit=2
case $lib in
*[\ :]*)
	echo "fork_faults.sh: the library's path has a space or a colon: skipped"
	exit 77 ;;
esac
tmp=$(mktemp -d /tmp/rcuwalk-forkfaults.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo 'void rcuwalk_empty(void); void rcuwalk_empty(void) {}' >"$tmp/empty.c"
"$cc" -shared -fPIC -o "$tmp/empty.so" "$tmp/empty.c" || exit 77
# child_faults LIB [FORK_COST options]: the children's faults per fork of
# one run, rounded down
child_faults() {
	l=$1
	shift
	out=$(env -u RCUWALK_STATS LD_PRELOAD="$l" RCUWALK_WARMUP=1000000000 \
		RCUWALK_DISABLE="$disable" "$fc" -n 300 "$@") || {
		echo "fork_faults.sh: $fc $* failed with $l preloaded" >&2
		exit 1
	}
	echo "$out" | sed -n 's/.*child \([0-9]*\)\.[0-9]* faults.*/\1/p'
}
med() { printf '%s\n%s\n%s\n' "$1" "$2" "$3" | sort -n | sed -n 2p; }
fail=0
# compare WHAT [FORK_COST options]
compare() {
	what=$1
	shift
	e1=$(child_faults "$tmp/empty.so" "$@"); s1=$(child_faults "$lib" "$@")
	e2=$(child_faults "$tmp/empty.so" "$@"); s2=$(child_faults "$lib" "$@")
	e3=$(child_faults "$tmp/empty.so" "$@"); s3=$(child_faults "$lib" "$@")
	empty=$(med "$e1" "$e2" "$e3")
	shim=$(med "$s1" "$s2" "$s3")
	[ -n "$empty" ] && [ -n "$shim" ] || { echo "fork_faults.sh: no fault counts" >&2; exit 1; }
	echo "page faults of a fork child, $what (median of 3 runs of 300): empty library" \
		"$empty, librcuwalk.so $shim (at most $empty + $limit)"
	if [ "$shim" -gt $((empty + limit)) ]; then
		echo "fork_faults.sh: a fork child, $what, takes $((shim - empty)) page faults" \
		     "more than with an empty library (a lazy binding, a real function resolved" \
		     "in the child, a .bss page, code outside DCACHE_FORK_TEXT?)" >&2
		fail=1
	fi
}
disable=
compare "_exit at once, the shim in its warm-up"
compare "a command substitution's child, the shim in its warm-up" -s
disable=1
compare "a command substitution's child, RCUWALK_DISABLE=1" -s
exit $fail
