/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk_replay - replay a command's path lookups as raw syscalls and time
 * them: the most that any cache of path lookups could save that command
 * (examples/path-bound.sh writes the input from `strace -xx`).
 *
 * Input, one lookup per line: OP FLAGS HEXPATH, OP one of
 *   o  openat(AT_FDCWD, path, FLAGS)  (only those that failed in the trace)
 *   s  newfstatat(AT_FDCWD, path, &st, FLAGS)
 *   r  readlink(path, buf, 4096)
 *   a  faccessat(AT_FDCWD, path, FLAGS>>16 (mode), FLAGS & 0xffff)
 *   x  statx(AT_FDCWD, path, FLAGS, STATX_BASIC_STATS, &stx)
 * Run in the traced command's working directory.  Usage:
 *   rcuwalk_replay FILE [ROUNDS]   prints: lookups, median ns per round.
 * An open that succeeds now (the tree changed since the trace) is closed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct rec {
	char op;
	unsigned int flags;
	char *path;
};

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	struct rec *r = NULL;
	size_t n = 0, cap = 0;
	char line[3 * 4096 + 64], op;
	unsigned int flags;
	int rounds = argc > 2 ? atoi(argv[2]) : 21;
	long long *t;
	FILE *f;

	if (argc < 2 || rounds < 1 || !(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: rcuwalk_replay FILE [ROUNDS]\n");
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char hex[2 * 4096 + 2];
		size_t hl;

		if (sscanf(line, " %c %u %8193s", &op, &flags, hex) != 3)
			continue;
		hl = strlen(hex);
		if (hl % 2 || hl / 2 >= 4096)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			r = realloc(r, cap * sizeof(*r));
			if (!r)
				return 1;
		}
		r[n].op = op;
		r[n].flags = flags;
		r[n].path = malloc(hl / 2 + 1);
		if (!r[n].path)
			return 1;
		for (size_t i = 0; i < hl / 2; i++) {
			unsigned int b;

			sscanf(hex + 2 * i, "%2x", &b);
			r[n].path[i] = (char)b;
		}
		r[n].path[hl / 2] = '\0';
		n++;
	}
	fclose(f);
	t = calloc((size_t)rounds, sizeof(*t));
	if (!t)
		return 1;
	for (int k = 0; k < rounds; k++) {
		long long t0 = now_ns();

		for (size_t i = 0; i < n; i++) {
			struct stat st;
			struct statx stx;
			char buf[4096];
			long fd;

			switch (r[i].op) {
			case 'o':
				fd = syscall(SYS_openat, AT_FDCWD, r[i].path, (int)r[i].flags);
				if (fd >= 0)
					syscall(SYS_close, fd);
				break;
			case 's':
				syscall(SYS_newfstatat, AT_FDCWD, r[i].path, &st, (int)r[i].flags);
				break;
			case 'r':
				syscall(SYS_readlink, r[i].path, buf, sizeof(buf));
				break;
			case 'a':
				syscall(SYS_faccessat2, AT_FDCWD, r[i].path, (int)(r[i].flags >> 16),
					(int)(r[i].flags & 0xffff));
				break;
			case 'x':
				syscall(SYS_statx, AT_FDCWD, r[i].path, (int)r[i].flags, STATX_BASIC_STATS,
					&stx);
				break;
			}
		}
		t[k] = now_ns() - t0;
	}
	qsort(t, (size_t)rounds, sizeof(*t), cmp_ll);
	printf("%zu %lld\n", n, t[rounds / 2]);
	return 0;
}
