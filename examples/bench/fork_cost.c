/* SPDX-License-Identifier: MIT */
/*
 * fork_cost.c - what a fork() costs a process, as a shell pays it: the
 * parent looks up L distinct names first (so that a shim preloaded with
 * --warmup=0 has started its cache), then forks N children that _exit(0) at
 * once and reaps each.  Prints one line:
 *
 *   fork U us, wait V us, parent P faults, child C faults
 *
 * U: the median time fork() took in the parent; V: the median from fork()'s
 * return to waitpid()'s (the child's run and exit); P, C: minor page faults
 * per fork in the parent and in each child (getrusage).  examples/fork-cost.sh
 * runs it without a library, with an empty one, with the shim in warm-up and
 * with its cache started, alternating.
 *
 * -s: each child is a shell's command substitution, `x=$(echo a)` as dash
 * runs it: the parent makes a pipe; the child closes its read end, moves the
 * write end to stdout (dup2, close), writes "a\n" and _exits; the parent
 * closes the write end, reads to the end and closes the read end.  The
 * child's calls are ones the parent makes too, except write().
 *
 *   rcuwalk_fork_cost [-n N] [-l L] [-s]     (defaults 1000, 200)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = 1000, l = 200, o, subst = 0;
	struct rusage a, b, c;
	struct stat st;
	long *f, *w;
	char p[64];

	while ((o = getopt(argc, argv, "n:l:s")) != -1) {
		if (o == 's')
			subst = 1;
		else if (o == 'n')
			n = atoi(optarg);
		else if (o == 'l')
			l = atoi(optarg);
		else
			return 2;
	}
	if (n < 1 || l < 0)
		return 2;
	f = malloc(sizeof(long) * (size_t)n);
	w = malloc(sizeof(long) * (size_t)n);
	if (!f || !w)
		return 1;
	for (int i = 0; i < l; i++) {
		snprintf(p, sizeof p, "/usr/include/rcuwalk-absent-%d.h", i);
		(void)stat(p, &st);
		(void)stat("/usr/include", &st);
	}
	getrusage(RUSAGE_SELF, &a);
	for (int i = 0; i < n; i++) {
		int fds[2] = { -1, -1 };
		long t0, t1;
		pid_t pid;

		if (subst && pipe(fds) != 0)
			return 1;
		t0 = now_ns();
		pid = fork();
		if (pid == 0) {
			if (subst) {
				close(fds[0]);
				if (fds[1] != 1) {
					dup2(fds[1], 1);
					close(fds[1]);
				}
				_exit(write(1, "a\n", 2) == 2 ? 0 : 1);
			}
			_exit(0);
		}
		t1 = now_ns();
		if (subst) {
			char buf[16];

			close(fds[1]);
			while (read(fds[0], buf, sizeof(buf)) > 0)
				;
			close(fds[0]);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
		f[i] = t1 - t0;
		w[i] = now_ns() - t1;
	}
	getrusage(RUSAGE_SELF, &b);
	getrusage(RUSAGE_CHILDREN, &c);
	qsort(f, (size_t)n, sizeof(long), cmp_long);
	qsort(w, (size_t)n, sizeof(long), cmp_long);
	printf("fork %.1f us, wait %.1f us, parent %.2f faults, child %.2f faults\n",
	       (double)f[n / 2] / 1e3, (double)w[n / 2] / 1e3,
	       (double)(b.ru_minflt - a.ru_minflt) / n, (double)c.ru_minflt / n);
	free(f);
	free(w);
	return 0;
}
