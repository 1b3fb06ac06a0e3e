/* SPDX-License-Identifier: MIT */
/*
 * exit_cost.c - what an inotify instance costs a short process at exit.
 *
 * Closing the last reference to an inotify instance that holds marks makes
 * the kernel wait for an RCU grace period (fsnotify_destroy_group); the
 * parent's waitpid() waits with it.  This forks N children that each
 *   mode 0: do nothing (the baseline);
 *   mode 1: create their own instance and add W watches (what every process
 *           under the shim did before a session existed);
 *   mode 2: add the same W watches to an instance the parent created and
 *           keeps (a shared instance: the child's close is not the last);
 * and prints the median and p90 of fork..waitpid.  By default the modes run
 * one after the other, N children each, as a build's processes follow each
 * other; -a alternates them child by child (then the own instance's grace
 * period overlaps the next children's work and looks much cheaper; see
 * doc/session.md).
 *
 *   rcuwalk_exit_cost [-a] [-n N] [-w W]     (defaults 200, 50)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *names[3] = { "no inotify", "own instance", "shared instance" };
	int n = 200, w = 50, opt, shared, alternate = 0;
	char dir[] = "/tmp/rcuwalk-exitcost-XXXXXX", d[64];
	double *t[3];

	while ((opt = getopt(argc, argv, "an:w:")) != -1) {
		if (opt == 'a')
			alternate = 1;
		else if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'w')
			w = atoi(optarg);
		else
			return 2;
	}
	if (n < 1 || w < 1 || !mkdtemp(dir))
		return 2;
	for (int i = 0; i < w; i++) {
		snprintf(d, sizeof(d), "%s/%d", dir, i);
		mkdir(d, 0755);
	}
	shared = inotify_init1(IN_CLOEXEC);
	for (int m = 0; m < 3; m++)
		t[m] = calloc((size_t)n, sizeof(double));
	for (int j = 0; j < 3 * n; j++) {
		int k = alternate ? j / 3 : j % n, m = alternate ? j % 3 : j / n;
		double t0 = now_ms();
		pid_t p = fork();

		if (p == 0) {
			int fd = m == 1 ? inotify_init1(IN_CLOEXEC) : shared;

			for (int i = 0; m && i < w; i++) {
				snprintf(d, sizeof(d), "%s/%d", dir, i);
				inotify_add_watch(fd, d, IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MODIFY);
			}
			_exit(0);
		}
		waitpid(p, NULL, 0);
		t[m][k] = now_ms() - t0;
	}
	printf("%d children per mode (%s), %d watches each, fork..waitpid in ms\n", n,
	       alternate ? "modes alternating" : "modes one after the other", w);
	for (int m = 0; m < 3; m++) {
		qsort(t[m], (size_t)n, sizeof(double), cmp);
		printf("%-16s median %7.3f  p90 %7.3f  ratio to no inotify %6.1fx\n", names[m],
		       t[m][n / 2], t[m][n * 9 / 10], t[m][n / 2] / t[0][n / 2]);
	}
	for (int i = 0; i < w; i++) {
		snprintf(d, sizeof(d), "%s/%d", dir, i);
		rmdir(d);
	}
	rmdir(dir);
	return 0;
}
