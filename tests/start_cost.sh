#!/bin/sh
# SPDX-License-Identifier: MIT
# start_cost.sh LIB CC - what loading the shim costs a process that looks
# nothing up (`true`, most processes of a configure script), against an empty
# preloaded library: the symbols ld.so looks up for it (LD_DEBUG=statistics,
# "final number of relocations": one a symbol look-up, relative ones apart).  Lazy binding binds
# only what the constructors call: 6 more than the empty library (among
# them dlsym and the sigaction it finds for the fault handler, environ,
# __libc_stack_end and fileno, bound at load: shim_process.c);
# each libc function a constructor calls adds one (~750 instructions of
# ld.so's).  With -z now every one of the ~75 functions the library imports
# was bound at load, ~45k instructions of look-ups in ld.so.  Skipped (77)
# where ld.so prints no statistics or no compiler is at hand, or where the
# library's path has a space or a colon.
# Then, where strace is installed, the system calls `true` makes: at most 5
# more than with the empty library: the SIGSEGV/SIGBUS handlers' install
# (preload/fault.c: 2 sigprocmask, 1 sigaction a signal, whose answer is the
# action it replaced: 3 a signal before stop 45, 9 calls in all) and ld.so's
# mmap of the zero-filled .bss and .lbss past the file's last page.  The ids
# and the stack limit are read at their first use, not at start (4 and 1
# calls more before: 14; each ~1-2 us on a small VM).
set -eu
lib=$1
cc=${2:-cc}
limit=10
case $lib in
*[\ :]*)
	# ld.so splits LD_PRELOAD at spaces and colons: nothing would be
	# measured (CI's second checkout: 84 calls more, ld.so's errors)
	echo "start_cost.sh: the library's path has a space or a colon: skipped"
	exit 77 ;;
esac
tmp=$(mktemp -d /tmp/rcuwalk-start.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo 'void rcuwalk_empty(void); void rcuwalk_empty(void) {}' >"$tmp/empty.c"
"$cc" -shared -fPIC -o "$tmp/empty.so" "$tmp/empty.c" || exit 77

# symbols looked up by the end of `true` with LD_PRELOAD=$1
bound() {
	LD_PRELOAD=$1 LD_DEBUG=statistics /bin/true 2>&1 |
		awk '/final number of relocations:/ { f = $NF } END { print f }'
}
empty=$(bound "$tmp/empty.so")
shim=$(bound "$lib")
if [ -z "$empty" ] || [ -z "$shim" ]; then
	echo "start_cost.sh: ld.so printed no relocation statistics: skipped"
	exit 77
fi
echo "symbols looked up by /bin/true: empty library $empty, librcuwalk.so $shim (at most $empty + $limit)"
if [ "$shim" -gt $((empty + limit)) ]; then
	echo "start_cost.sh: the shim binds $((shim - empty)) symbols more than an empty library" \
	     "for a process that looks nothing up (linked with -z now?)" >&2
	exit 1
fi

command -v strace >/dev/null 2>&1 || { echo "start_cost.sh: no strace: system calls not counted"; exit 0; }
# system calls of `true` itself (its exec included), with LD_PRELOAD=$1
calls() {
	strace -o "$tmp/strace.out" -e trace=all env LD_PRELOAD="$1" /bin/true >/dev/null 2>&1 || return 1
	awk '/execve\("\/bin\/true"/ { n = 0; on = 1 } on && !/^\+\+\+/ { n++ } END { print n }' "$tmp/strace.out"
}
e=$(calls "$tmp/empty.so") || { echo "start_cost.sh: strace failed: system calls not counted"; exit 0; }
s=$(calls "$lib") || { echo "start_cost.sh: strace failed: system calls not counted"; exit 0; }
echo "system calls of /bin/true: empty library $e, librcuwalk.so $s (at most $e + 5)"
if [ "$s" -gt $((e + 5)) ]; then
	echo "start_cost.sh: the shim's start makes $((s - e)) system calls more than an empty library" >&2
	exit 1
fi
