/* SPDX-License-Identifier: MIT */
/*
 * test_fork_order.c - the fork path's lock order against a thread's first
 * read-side section.
 *
 * shim.c's fork() runs liburcu's before-fork hooks first (urcu-bp holds its
 * registry mutex until the fork is done) and then takes invalidate/'s
 * read_mutex (inval_fork_prepare).  A thread that took read_mutex and then
 * applied an event in its first read-side section registered with urcu-bp
 * under read_mutex: each of the two waited for the other for ever (seen
 * once in ncurses' configure, the reader thread against the forking
 * shell).  Here a drainer thread that has never entered a read-side section
 * drains a queued event while the main thread holds urcu-bp's fork locks;
 * then the main thread takes the fork path's read_mutex.  The scenario runs
 * in a child process that the test waits for with a deadline: a deadlock is
 * a failure, not a hang.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <urcu-bp.h>

#include "dcache.h"
#include "inval.h"
#include "raw_ops.h"

static char g_dir[64];

static struct dcache_ops g_ops = {
	RAW_KERNEL_OPS,
	.fs_cacheable = raw_fs_local,
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *drainer(void *arg)
{
	(void)arg;
	inval_drain(); /* the first read-side section of this thread */
	return NULL;
}

/* In the child: 0 if every step completed and the answer is exact. */
static int scenario(void)
{
	char x[128], y[128];
	struct stat st;
	pthread_t th;
	int fd;

	snprintf(x, sizeof x, "%s/x", g_dir);
	snprintf(y, sizeof y, "%s/y", g_dir);
	inval_set_reader_delay(3600 * 1000); /* no reader thread: the drainer drains */
	inval_fill_ops(&g_ops);
	if (dcache_init(&g_ops, 0) != 0)
		return 10;
	/* Cache "y absent" (and watch the directory). */
	(void)dcache_lookup(y, 0, 0, &st);
	if (dcache_lookup(y, 0, 0, &st) != ENOENT)
		return 11;
	(void)dcache_lookup(x, 0, 0, &st);
	/* An event for the drainer to apply. */
	fd = (int)syscall(SYS_openat, AT_FDCWD, y, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return 12;
	syscall(SYS_close, fd);
	/* The fork path, as shim.c's fork() runs it. */
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
	if (pthread_create(&th, NULL, drainer, NULL) != 0)
		return 13;
	sleep_ms(100); /* the drainer reaches its first read-side section */
	inval_fork_prepare();
	dcache_fork_prepare();
	dcache_fork_parent();
	inval_fork_parent();
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
	pthread_join(th, NULL);
	/* The event was applied: y exists now. */
	inval_drain();
	if (dcache_lookup(y, 0, 0, &st) == ENOENT)
		return 14;
	return 0;
}

static void test_fork_path_and_first_read_side_section_in_drainer_do_not_deadlock(void **state)
{
	pid_t pid;
	int status = -1, waited = 0;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(scenario());
	for (; waited < 200; waited++) { /* 20 s */
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		sleep_ms(100);
	}
	if (waited == 200) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the fork path and the drainer deadlocked (child killed after 20 s)");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/rcuwalk-fork-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	raw_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_path_and_first_read_side_section_in_drainer_do_not_deadlock),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
