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
/* faults TRUE LIB1 LIB2: the median minor faults of 51 runs of TRUE with
 * LD_PRELOAD=LIB1 and with LIB2, alternating: "F1 F2". */
int main(int argc, char **argv)
{
	enum { N = 51 };
	long f[2][N];
	char *args[] = { argv[1], NULL }, *env[2][64];
	int n = 0;

	if (argc != 4)
		return 2;
	for (char **e = environ; *e && n < 62; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "RCUWALK_", 8))
			env[0][n] = env[1][n] = *e, n++;
	for (int k = 0; k < 2; k++) {
		env[k][n] = malloc(strlen(argv[2 + k]) + 12);
		sprintf(env[k][n], "LD_PRELOAD=%s", argv[2 + k]);
		env[k][n + 1] = NULL;
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
