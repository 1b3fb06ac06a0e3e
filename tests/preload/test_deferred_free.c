/* SPDX-License-Identifier: MIT */
/*
 * test_deferred_free.c - what the cache unhashes is freed after a grace
 * period without a call_rcu thread while the program has one thread
 * (cache/dcache.c, "Threads we do not start"), so that fork() never waits
 * for liburcu to pause and resume one; with a second program thread the
 * frees go through the call_rcu thread as before.  Answers stay exact
 * through the churn.
 *
 * Each check runs in a fresh process (fork + execve of this binary, the
 * shim preloaded), so that its cache starts empty and its reader thread is
 * not started yet (the first 100 ms: preload/config.c).  A run that took
 * longer than that cannot tell a reader thread from a call_rcu thread and is
 * made again, as is one whose shim got no inotify instance (the user's
 * limit, shared with whatever else runs): ten tries; all of them slow is a
 * failure, not a skip.
 *
 * Helpers, chosen by argv[1] (the scratch directory is argv[2]):
 *   --single DIR   caches DIR/f, unlinks it through the shim (the dentry is
 *                  unhashed and queued for freeing), looks it up again (the
 *                  lookup that frees), prints "threads elapsed_us".
 *   --threaded DIR the same with a second thread of its own started first;
 *                  prints "threads_before threads_after elapsed_us".
 *   --churn DIR    500 rounds of create/stat/unlink/stat through the shim,
 *                  a fork() child every 10 rounds that stats too; every
 *                  answer compared with the raw syscall's.  Exit 0 if all
 *                  agree, 1 if not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"
#include "../unit/raw_listdir.h"

/* Exit status of a helper whose shim held no inotify instance (the user's
 * max_user_instances is shared with everything the user runs, another test
 * suite included): nothing was cached, so nothing was freed.  Run again. */
#define NO_INSTANCE 75

static int inotify_seen;

static int note_inotify(void *arg, const char *name, size_t len)
{
	char p[64], t[64];
	long n;

	(void)arg;
	(void)len;
	snprintf(p, sizeof p, "/proc/self/fd/%s", name);
	n = syscall(SYS_readlinkat, AT_FDCWD, p, t, sizeof t - 1);
	if (n > 0) {
		t[n] = '\0';
		if (strcmp(t, "anon_inode:inotify") == 0)
			inotify_seen = 1;
	}
	return 0;
}

/* Whether the shim holds an inotify instance: raw getdents64, which shows
 * the fds the shim hides from readdir(). */
static int shim_has_instance(void)
{
	inotify_seen = 0;
	if (raw_listdir("/proc/self/fd", 4096, note_inotify, NULL) < 0)
		return 1; /* cannot tell: let the answers speak */
	return inotify_seen;
}

#define QUICK_US 80000 /* well inside the reader thread's 100 ms delay */

/* stat through the shim and raw: 1 if result, errno, inode and size agree. */
static int same_stat(const char *path)
{
	struct stat a, b;
	int ra, rb, ea, eb;

	errno = 0;
	ra = stat(path, &a);
	ea = ra ? errno : 0;
	rb = (int)syscall(SYS_newfstatat, AT_FDCWD, path, &b, 0);
	eb = rb ? errno : 0;
	if (ra != rb || ea != eb)
		return 0;
	return ra || (a.st_ino == b.st_ino && a.st_size == b.st_size && a.st_mode == b.st_mode);
}

/* Cache DIR/f, unlink it through the shim, look it up again. */
static int cycle(const char *dir)
{
	char f[PLEN + 8];
	struct stat st;
	int fd;

	snprintf(f, sizeof f, "%s/f", dir);
	fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	for (int i = 0; i < 3; i++)
		if (stat(f, &st) != 0)
			return -1;
	if (unlink(f) != 0)
		return -1;
	/* The dentry is queued; these lookups run the maintenance that frees. */
	for (int i = 0; i < 3; i++)
		if (stat(f, &st) == 0 || errno != ENOENT)
			return -1;
	return 0;
}

static int single_main(const char *dir)
{
	long t0 = now_us();

	if (cycle(dir) != 0)
		return 2;
	if (!shim_has_instance())
		return NO_INSTANCE;
	printf("%d %ld\n", threads_now(), now_us() - t0);
	return 0;
}

static pthread_mutex_t park_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int park_done;

static void *park(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&park_mutex);
	while (!park_done)
		pthread_cond_wait(&park_cond, &park_mutex);
	pthread_mutex_unlock(&park_mutex);
	return NULL;
}

static int threaded_main(const char *dir)
{
	long t0 = now_us();
	pthread_t th;
	int before, after;

	if (pthread_create(&th, NULL, park, NULL) != 0)
		return 2;
	before = threads_now();
	if (cycle(dir) != 0)
		return 2;
	if (!shim_has_instance())
		return NO_INSTANCE;
	after = threads_now();
	printf("%d %d %ld\n", before, after, now_us() - t0);
	fflush(stdout);
	pthread_mutex_lock(&park_mutex);
	park_done = 1;
	pthread_cond_signal(&park_cond);
	pthread_mutex_unlock(&park_mutex);
	pthread_join(th, NULL);
	return 0;
}

static int churn_main(const char *dir)
{
	char f[PLEN + 8], g[PLEN + 8];
	int bad = 0;

	snprintf(f, sizeof f, "%s/c", dir);
	snprintf(g, sizeof g, "%s/absent", dir);
	for (int i = 0; i < 500 && !bad; i++) {
		int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		if (fd < 0)
			return 2;
		if (i & 1)
			(void)!write(fd, "x", 1);
		close(fd);
		bad |= !same_stat(f) || !same_stat(f) || !same_stat(g);
		if (i % 10 == 0) {
			pid_t pid = fork();
			int status;

			if (pid == 0)
				_exit(same_stat(f) && same_stat(g) ? 0 : 1);
			if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0)
				bad = 1;
		}
		if (unlink(f) != 0)
			return 2;
		bad |= !same_stat(f) || !same_stat(f);
	}
	return bad;
}

/* Run this binary with args; its stdout into out.  Returns the exit status. */
static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int run_self(const char *mode, char *out, size_t outsz)
{
	int o[2], status;
	pid_t pid;

	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		dup2(o[1], 1);
		execl("/proc/self/exe", "test_deferred_free", mode, g_scratch, (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	close(o[1]);
	read_to_eof(o[0], out, outsz);
	close(o[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_single_threaded_process_frees_without_a_call_rcu_thread(void **state)
{
	char out[128];
	int threads = -1, tries = 0;
	long us = -1;

	(void)state;
	setenv("RCUWALK_RACY_MS", "0", 1);
	do {
		int st = run_self("--single", out, sizeof out);

		if (st == NO_INSTANCE) {
			print_message("single: no inotify instance (the user's limit); again\n");
			us = QUICK_US;
			sleep_ms(100 * (tries + 1));
			continue;
		}
		assert_int_equal(st, 0);
		assert_int_equal(sscanf(out, "%d %ld", &threads, &us), 2);
		print_message("single: %d thread(s), %ld us\n", threads, us);
	} while (us >= QUICK_US && ++tries < 10);
	unsetenv("RCUWALK_RACY_MS");
	assert_true(us < QUICK_US);
	/* Before this change: 2 (liburcu's call_rcu thread). */
	assert_int_equal(threads, 1);
}

static void test_second_program_thread_frees_through_call_rcu_thread(void **state)
{
	char out[128];
	int before = -1, after = -1, tries = 0;
	long us = -1;

	(void)state;
	setenv("RCUWALK_RACY_MS", "0", 1);
	do {
		int st = run_self("--threaded", out, sizeof out);

		if (st == NO_INSTANCE) {
			print_message("threaded: no inotify instance (the user's limit); again\n");
			us = QUICK_US;
			sleep_ms(100 * (tries + 1));
			continue;
		}
		assert_int_equal(st, 0);
		assert_int_equal(sscanf(out, "%d %d %ld", &before, &after, &us), 3);
		print_message("threaded: %d thread(s) before, %d after, %ld us\n", before, after, us);
	} while (us >= QUICK_US && ++tries < 10);
	unsetenv("RCUWALK_RACY_MS");
	assert_true(us < QUICK_US);
	assert_int_equal(before, 2);
	assert_int_equal(after, 3);
}

static void test_churn_with_forks_answers_equal_raw_syscalls(void **state)
{
	char out[16];

	(void)state;
	setenv("RCUWALK_RACY_MS", "0", 1);
	assert_int_equal(run_self("--churn", out, sizeof out), 0);
	unsetenv("RCUWALK_RACY_MS");
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--single") == 0)
		return single_main(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--threaded") == 0)
		return threaded_main(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--churn") == 0)
		return churn_main(argv[2]);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_threaded_process_frees_without_a_call_rcu_thread),
		cmocka_unit_test(test_second_program_thread_frees_through_call_rcu_thread),
		cmocka_unit_test(test_churn_with_forks_answers_equal_raw_syscalls),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
