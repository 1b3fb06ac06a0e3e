/* SPDX-License-Identifier: MIT */
/*
 * spawn_bench.c - process start-up cost with and without the shim.
 *
 *     rcuwalk_spawn_bench -s build/preload/librcuwalk.so [-n N] [-b B] [-c FILE] [-l LABEL] -- CMD ARGS...
 *
 * Runs CMD N times without the shim and N times with LD_PRELOAD=SO (in the
 * environment of CMD only: this program is not preloaded), in 2*B alternating
 * blocks of N/B runs (none, shim, shim, none, none, shim, ...), each run a
 * posix_spawn() and waitpid(), CMD's stdout and stderr sent to /dev/null.
 * Prints the median over the blocks of the mean microseconds per run, the
 * min-max over the blocks, and the ratio shim/none of the medians.  With -c,
 * appends "spawn|LABEL|none_med|none_min|none_max|shim_med|shim_min|shim_max".
 * Exits non-zero if CMD fails or exits non-zero in any run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void summarize(double *v, int k, double *med, double *mn, double *mx)
{
	qsort(v, (size_t)k, sizeof(*v), cmp_double);
	*mn = v[0];
	*mx = v[k - 1];
	*med = (k % 2) ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2.0;
}

/* A copy of environ without LD_PRELOAD, plus `add` (may be NULL). */
static char **make_env(const char *add)
{
	size_t n = 0, j = 0;

	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof(char *));
	if (!env) {
		perror("calloc");
		exit(2);
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			env[j++] = environ[i];
	if (add)
		env[j++] = (char *)add;
	env[j] = NULL;
	return env;
}

/* Mean microseconds per run of `runs` spawns of argv with env. */
static double block(char **argv, char **env, long runs)
{
	posix_spawn_file_actions_t fa;
	double t0 = now_ns();

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	for (long i = 0; i < runs; i++) {
		pid_t pid;
		int st, e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);

		if (e != 0) {
			fprintf(stderr, "rcuwalk_spawn_bench: %s: %s\n", argv[0], strerror(e));
			exit(1);
		}
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR) {
				perror("waitpid");
				exit(1);
			}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "rcuwalk_spawn_bench: %s failed (status 0x%x)\n", argv[0], st);
			exit(1);
		}
	}
	posix_spawn_file_actions_destroy(&fa);
	return (now_ns() - t0) / (double)runs / 1e3;
}

int main(int argc, char **argv)
{
	long n = 1000, b = 10;
	const char *so = NULL, *csv_path = NULL, *label = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "+n:b:s:c:l:h")) != -1) {
		switch (opt) {
		case 'n':
			n = strtol(optarg, NULL, 10);
			break;
		case 'b':
			b = strtol(optarg, NULL, 10);
			break;
		case 's':
			so = optarg;
			break;
		case 'c':
			csv_path = optarg;
			break;
		case 'l':
			label = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (!so || optind >= argc || n < 1 || b < 1 || b > n)
		goto usage;
	if (access(so, R_OK) != 0) {
		fprintf(stderr, "rcuwalk_spawn_bench: %s: %s\n", so, strerror(errno));
		return 2;
	}

	char **cmd = argv + optind;
	char *pre = malloc(strlen(so) + 12);
	if (!pre)
		return 2;
	sprintf(pre, "LD_PRELOAD=%s", so);
	char **env_none = make_env(NULL), **env_shim = make_env(pre);
	double *none = calloc((size_t)b, sizeof(double));
	double *shim = calloc((size_t)b, sizeof(double));
	long per = n / b;
	if (!none || !shim)
		return 2;

	block(cmd, env_none, per / 10 + 1); /* warm-up: page cache, binaries */
	block(cmd, env_shim, per / 10 + 1);
	for (long i = 0; i < b; i++) {
		if (i % 2) {
			shim[i] = block(cmd, env_shim, per);
			none[i] = block(cmd, env_none, per);
		} else {
			none[i] = block(cmd, env_none, per);
			shim[i] = block(cmd, env_shim, per);
		}
	}

	double nm, nmin, nmax, sm, smin, smax;
	summarize(none, (int)b, &nm, &nmin, &nmax);
	summarize(shim, (int)b, &sm, &smin, &smax);
	printf("%-24s runs %ld each (%ld blocks): no shim %.1f us (%.1f-%.1f), shim %.1f us "
	       "(%.1f-%.1f), shim/none %.3f\n",
	       label ? label : cmd[0], per * b, b, nm, nmin, nmax, sm, smin, smax, sm / nm);
	if (csv_path) {
		FILE *f = fopen(csv_path, "a");

		if (!f) {
			fprintf(stderr, "rcuwalk_spawn_bench: %s: %s\n", csv_path, strerror(errno));
			return 2;
		}
		fprintf(f, "spawn|%s|%.2f|%.2f|%.2f|%.2f|%.2f|%.2f\n", label ? label : cmd[0], nm, nmin,
			nmax, sm, smin, smax);
		fclose(f);
	}
	return 0;

usage:
	fprintf(stderr, "usage: %s -s SHIM.so [-n runs] [-b blocks] [-c csv] [-l label] -- CMD ARGS...\n",
		argv[0]);
	return 2;
}
