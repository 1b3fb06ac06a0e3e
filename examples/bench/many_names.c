/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk_many - time lookups of many distinct names, each a few times: what a
 * compiler does when it searches its -I directories for every header (most
 * of the names it asks for do not exist), not one hot path asked a million
 * times.  examples/many-names.sh makes such a list and runs this program raw,
 * under the shim and as a session's second process.
 *
 *   rcuwalk_many [-r] [-p PASSES] LISTFILE
 *
 * LISTFILE holds one absolute path per line.  Each of PASSES passes (default
 * 5) looks up every name once, in list order, with libc's stat() (which a
 * preloaded shim intercepts), or with -r with a raw
 * syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0), which nothing preloaded
 * can intercept: the floor.  Prints one line per pass:
 *   pass K: N lookups, X.X ns/lookup, P present, F faults, first Y.Y us
 * where Y is the pass's first lookup alone (included in X): in pass 1 of a
 * process under the shim, the cache's start (liburcu loaded, the session
 * attached) and the first name's fill; F counts the pass's minor faults.
 * Invariant checked: every pass gives each name the same answer as pass 1
 * (present, or absent with the same errno); otherwise it says which name
 * differed and exits 1.  The answers are stored during the timed loop (one
 * store per lookup, the same in every mode) and compared after it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: rcuwalk_many [-r] [-p PASSES] LISTFILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	char **name = NULL, *line = NULL;
	int *first, *now, passes = 5, raw = 0, o;
	size_t n = 0, cap = 0, lcap = 0;
	ssize_t len;
	FILE *f;

	while ((o = getopt(argc, argv, "rp:")) != -1) {
		if (o == 'r')
			raw = 1;
		else if (o == 'p' && (passes = atoi(optarg)) >= 1)
			continue;
		else
			usage();
	}
	if (optind != argc - 1)
		usage();
	f = fopen(argv[optind], "r");
	if (!f) {
		fprintf(stderr, "rcuwalk_many: %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (line[0] != '/') {
			fprintf(stderr, "rcuwalk_many: not an absolute path: %s\n", line);
			return 2;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			name = realloc(name, cap * sizeof(*name));
			if (!name)
				return 2;
		}
		if (!(name[n++] = strdup(line)))
			return 2;
	}
	free(line);
	fclose(f);
	if (n == 0) {
		fprintf(stderr, "rcuwalk_many: %s: no names\n", argv[optind]);
		return 2;
	}
	first = calloc(n, sizeof(*first));
	now = calloc(n, sizeof(*now));
	if (!first || !now)
		return 2;
	for (int k = 1; k <= passes; k++) {
		int *res = k == 1 ? first : now;
		size_t present = 0;
		long long t0, t1 = 0, t;
		struct rusage ru0, ru1;

		getrusage(RUSAGE_SELF, &ru0);
		t0 = now_ns();
		for (size_t i = 0; i < n; i++) {
			struct stat st;
			long r;

			if (raw)
				r = syscall(SYS_newfstatat, AT_FDCWD, name[i], &st, 0);
			else
				r = stat(name[i], &st);
			res[i] = r == 0 ? 0 : errno;
			if (i == 0)
				t1 = now_ns();
		}
		t = now_ns() - t0;
		getrusage(RUSAGE_SELF, &ru1);
		for (size_t i = 0; i < n; i++) {
			present += res[i] == 0;
			if (k > 1 && now[i] != first[i]) {
				fprintf(stderr,
					"rcuwalk_many: pass %d: %s: %s, pass 1 said %s\n", k,
					name[i], now[i] ? strerror(now[i]) : "present",
					first[i] ? strerror(first[i]) : "present");
				return 1;
			}
		}
		printf("pass %d: %zu lookups, %.1f ns/lookup, %zu present, %ld faults, first %.1f us\n",
		       k, n, (double)t / (double)n, present, ru1.ru_minflt - ru0.ru_minflt,
		       (double)(t1 - t0) / 1e3);
		fflush(stdout);
	}
	return 0;
}
