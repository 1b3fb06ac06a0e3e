/* SPDX-License-Identifier: MIT */
/*
 * preload_run.c - the command every preloaded ctest entry runs through:
 *
 *   rcuwalk_preload_run TEST [ARGS...]
 *
 * ctest gives each preloaded test LD_PRELOAD=[<sanitizer runtime>:]<build>/
 * preload/librcuwalk.so and RCUWALK_TEST_SHIM=<build>/preload/librcuwalk.so
 * (tests/CMakeLists.txt).  From a checkout whose path has a ' ' ("/tmp/two
 * with space/rw") ld.so would split those paths and load nothing.  This
 * program reads LD_PRELOAD as CMake joined it (entries separated by ':'
 * only), replaces each entry that has a ' ' by the name the launcher would
 * use (a link in /tmp/rcuwalk-links.<euid>/, preload/ldlink.h), gives
 * RCUWALK_TEST_SHIM the same treatment (a test that looks for the shim in
 * LD_PRELOAD still finds it there), and execs TEST.
 *
 * Invariant: entries without a ' ' are kept byte for byte, and nothing else
 * in the environment changes: from a checkout without a space, TEST sees
 * exactly what ctest gave it.  A path with ':' is not supported here (CMake
 * joins the list with ':'); the launcher itself handles both.
 *
 * Linked statically where the toolchain can (tests/CMakeLists.txt): ld.so
 * then does not act on the LD_PRELOAD meant for TEST in this process (no
 * shim running here, no ld.so error about a path it split).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldlink.h"

#define PROG "rcuwalk_preload_run"

/* `entry` (length n) as LD_PRELOAD can carry it, appended to out[*len]. */
static int append_entry(char *out, size_t *len, size_t cap, const char *entry, size_t n)
{
	char in[PATH_MAX], name[PATH_MAX], why[PATH_MAX + 128];
	int w;

	if (n >= sizeof(in)) {
		fprintf(stderr, PROG ": an LD_PRELOAD entry of %zu bytes\n", n);
		return -1;
	}
	memcpy(in, entry, n);
	in[n] = '\0';
	if (!memchr(in, ' ', n)) {
		snprintf(name, sizeof(name), "%s", in);
	} else if (ldlink_entry(in, 1, name, sizeof(name), why, sizeof(why)) != 0) {
		fprintf(stderr, PROG ": %s\n", why);
		return -1;
	}
	w = snprintf(out + *len, cap - *len, "%s%s", *len ? ":" : "", name);
	if (w < 0 || (size_t)w >= cap - *len) {
		fprintf(stderr, PROG ": LD_PRELOAD too long\n");
		return -1;
	}
	*len += (size_t)w;
	return 0;
}

/* Replace the value of `var`, a ':'-separated list, entry by entry. */
static int relink(const char *var)
{
	const char *val = getenv(var);
	char out[4 * PATH_MAX];
	size_t len = 0;

	if (!val || !strchr(val, ' '))
		return 0;
	out[0] = '\0';
	for (const char *p = val; *p;) {
		size_t n = strcspn(p, ":");

		if (n && append_entry(out, &len, sizeof(out), p, n) != 0)
			return -1;
		p += n;
		p += *p == ':';
	}
	return setenv(var, out, 1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: " PROG " TEST [ARGS...]\n");
		return 2;
	}
	if (relink("LD_PRELOAD") != 0 || relink("RCUWALK_TEST_SHIM") != 0)
		return 1;
	execv(argv[1], argv + 1);
	fprintf(stderr, PROG ": %s: %s\n", argv[1], strerror(errno));
	return 127;
}
