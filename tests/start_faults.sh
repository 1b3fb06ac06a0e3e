#!/bin/sh
# SPDX-License-Identifier: MIT
# start_faults.sh LIB CC - a process that looks nothing up (`true`) takes no
# more page faults with the shim preloaded than with an empty preloaded
# library: the constructors' code, data and names lie on pages ld.so has
# touched already (DCACHE_START_TEXT/_DATA/_RODATA, cache/dcache.h), they
# bind no libc function but dlsym and sigaction, and exit touches nothing
# new.  Each page first touched is a fault (~2-4 us on a small VM); a
# getenv() or sscanf() in a constructor, a start-up variable left in .bss or
# a function the constructors call outside .text.startup adds one or more.
# Then a process whose lookups pass through its warm-up by time, timed by the
# TSC (RCUWALK_TSC_KHZ): no page of the vDSO (below).
# Counted, not timed: the median ru_minflt of 51 posix_spawn()s of `true`
# each way, alternating; allowed: the empty library's + 2 (where ASLR puts
# the start-up code across a 64 KiB fault-around window, one more fault;
# libc's pages that dlsym and sigaction touch).  Skipped (77) without a
# compiler, or where the library's path has a space (CI's second checkout:
# LD_PRELOAD would name something else).
set -eu
lib=$1
cc=${2:-cc}
limit=2
case $lib in
*[\ :]*)
	# ld.so splits LD_PRELOAD at spaces and colons: nothing would be measured
	echo "start_faults.sh: the library's path has a space or a colon: skipped"
	exit 77 ;;
esac
tmp=$(mktemp -d /tmp/rcuwalk-faults.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo 'void rcuwalk_empty(void); void rcuwalk_empty(void) {}' >"$tmp/empty.c"
"$cc" -shared -fPIC -o "$tmp/empty.so" "$tmp/empty.c" || exit 77
cat >"$tmp/faults.c" <<'EOF'
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
extern char **environ;
static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}
/* faults PROG LIB1 LIB2 [ENV1 ENV2]: the median minor faults of 51 runs of
 * PROG with LD_PRELOAD=LIB1 (and the NAME=VALUE entries ENV1, comma-separated)
 * and with LIB2 (and ENV2), alternating: "F1 F2". */
int main(int argc, char **argv)
{
	enum { N = 51 };
	long f[2][N];
	char *args[] = { argv[1], NULL }, *env[2][72];
	int n = 0;

	if (argc != 4 && argc != 6)
		return 2;
	for (char **e = environ; *e && n < 62; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "RCUWALK_", 8))
			env[0][n] = env[1][n] = *e, n++;
	for (int k = 0; k < 2; k++) {
		int m = n;

		env[k][m] = malloc(strlen(argv[2 + k]) + 12);
		sprintf(env[k][m++], "LD_PRELOAD=%s", argv[2 + k]);
		for (char *v = argc == 6 ? strtok(argv[4 + k], ",") : NULL; v && m < 70;
		     v = strtok(NULL, ","))
			env[k][m++] = v;
		env[k][m] = NULL;
	}
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 2; k++) {
			struct rusage ru;
			pid_t pid;
			int st;

			if (posix_spawn(&pid, argv[1], NULL, NULL, args, env[k]) != 0 ||
			    wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
				return 2;
			f[k][i] = ru.ru_minflt;
		}
	qsort(f[0], N, sizeof(long), cmp);
	qsort(f[1], N, sizeof(long), cmp);
	printf("%ld %ld\n", f[0][N / 2], f[1][N / 2]);
	return 0;
}
EOF
"$cc" -O1 -o "$tmp/faults" "$tmp/faults.c" || exit 77
true=$(command -v true)
case $true in /*) ;; *) true=/bin/true ;; esac
out=$("$tmp/faults" "$true" "$tmp/empty.so" "$lib") || {
	echo "start_faults.sh: could not run $true with each library preloaded" >&2
	exit 1
}
empty=${out% *}
shim=${out#* }
echo "page faults of $true (median of 51): empty library $empty, librcuwalk.so $shim (at most $empty + $limit)"
if [ "$shim" -gt $((empty + limit)) ]; then
	echo "start_faults.sh: the shim costs a process that looks nothing up $((shim - empty)) page" \
	     "faults more than an empty library (a libc call, a variable or a function of the" \
	     "start-up code outside DCACHE_START_*?)" >&2
	exit 1
fi

# The warm-up's clock (preload/shim.h, preload_warm_ns1).  A process whose 20
# lookups all pass through its warm-up by time (the default 1 ms: ~20-50 us
# of absent names; no RCUWALK_WARMUP to parse, as under the launcher), and
# which reads no clock itself: with the TSC's rate in RCUWALK_TSC_KHZ
# (the launcher's) the warm-up times them by the TSC and touches no page of
# the vDSO, which CLOCK_MONOTONIC's reads fault in (its code and its data:
# two faults here).  x86-64 only: elsewhere the rate is ignored.
[ "$(uname -m)" = x86_64 ] || exit 0
cat >"$tmp/lookups.c" <<'EOF'
#include <sys/stat.h>
int main(void)
{
	struct stat st;
	int absent = 0;

	for (int i = 0; i < 20; i++)
		absent += stat("/nonexistent-rcuwalk-faults/x", &st) != 0;
	return absent == 20 ? 0 : 1;
}
EOF
"$cc" -O1 -o "$tmp/lookups" "$tmp/lookups.c" || exit 77
out=$("$tmp/faults" "$tmp/lookups" "$lib" "$lib" "" RCUWALK_TSC_KHZ=2000000) || {
	echo "start_faults.sh: could not run the lookups with the shim preloaded" >&2
	exit 1
}
mono=${out% *}
tsc=${out#* }
out=$("$tmp/faults" "$tmp/lookups" "$tmp/empty.so" "$lib" "" RCUWALK_TSC_KHZ=2000000) || exit 1
empty=${out% *}
echo "page faults of 20 lookups in the warm-up (median of 51): empty library $empty;" \
     "librcuwalk.so timing them by CLOCK_MONOTONIC $mono, by the TSC $tsc" \
     "(at most $((mono - 1)) and $empty + $limit)"
if [ "$tsc" -ge "$mono" ] || [ "$tsc" -gt $((empty + limit)) ]; then
	echo "start_faults.sh: with RCUWALK_TSC_KHZ the warm-up still costs $((tsc - empty))" \
	     "page faults over an empty library ($((mono - empty)) without it): does it read" \
	     "the vDSO's clock?" >&2
	exit 1
fi
