/* SPDX-License-Identifier: MIT */
/*
 * test_mounts.c - coherence clause 7: a mount or unmount over a cached path
 * changes what it resolves to without any inotify event; the shim watches
 * /proc/self/mountinfo and empties the cache when it changes.
 *
 * Each test runs in a child (this binary, fork+exec'd with the shim and
 * RCUWALK_STATS) that enters a private mount namespace first
 * (unshare(CLONE_NEWNS), then / made rprivate).  In it the child caches
 * A, A/x (10 bytes) and A/y (absent); then ANOTHER process - a helper
 * fork+exec'd from the child with the shim disabled, making the raw mount(2)
 * syscall, so that the child's own mount() wrapper plays no part -
 * bind-mounts B (B/x: 20 bytes, B/y present) over A, and later unmounts it.
 *   - after waitpid() of the helper, the child's very first stats must be
 *     the kernel's new answers (the sync point polls mountinfo);
 *   - with a helper that is not waited for (it acknowledges over a pipe and
 *     stays), the answers must become the kernel's within 1 s (the inotify
 *     thread's doorbell); the delays are printed.
 * Needs root and mount namespaces: skips (77), saying so, where the kernel
 * refuses them.
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

#define ROUNDS 25
#define ASYNC_LIMIT_S 1.0


/* ------------------------------------------------------------------------ */
/* Helpers (shim disabled; raw syscalls) */

static int helper_mount_main(int argc, char **argv)
{
	/* --mount SRC DST [ACKFD]: bind-mount; with ACKFD, acknowledge and stay */
	long r = syscall(SYS_mount, argv[2], argv[3], NULL, (unsigned long)MS_BIND, NULL);
	char c = r ? 'E' : 0;

	if (argc == 4)
		return r ? 1 : 0;
	if (syscall(SYS_write, atoi(argv[4]), &c, 1) != 1)
		return 1;
	for (;;)
		pause();
}

static int helper_umount_main(int argc, char **argv)
{
	/* --umount DST [ACKFD] */
	long r = syscall(SYS_umount2, argv[2], 0);
	char c = r ? 'E' : 0;

	if (argc == 3)
		return r ? 1 : 0;
	if (syscall(SYS_write, atoi(argv[3]), &c, 1) != 1)
		return 1;
	for (;;)
		pause();
}

/* ------------------------------------------------------------------------ */
/* The child in its own mount namespace */

static char **g_env_off;

/* Run a helper; with `ack`, wait for its acknowledgement only (it stays,
 * returned in *stay), else waitpid() it.  0 = the (un)mount succeeded. */
static int run_helper(const char *const *args, int ack, pid_t *stay)
{
	int p[2];
	char ackfd[16], c = 'E';
	const char *a[6];
	size_t n = 0;
	pid_t pid;
	int status;

	for (; args[n]; n++)
		a[n] = args[n];
	if (!ack) {
		a[n] = NULL;
		pid = spawn_self("test_mounts", a, g_env_off, -1, -1);
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return -1;
		return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
	}
	if (pipe2(p, O_CLOEXEC))
		return -1;
	snprintf(ackfd, sizeof(ackfd), "%d", p[1]);
	a[n++] = ackfd;
	a[n] = NULL;
	pid = spawn_self("test_mounts", a, g_env_off, p[1], -1);
	close(p[1]);
	if (pid < 0 || syscall(SYS_read, p[0], &c, 1) != 1)
		c = 'E';
	close(p[0]);
	*stay = pid;
	return c == 0 ? 0 : -1;
}

static void reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* Stat every path twice through the shim: the second answers come from the
 * cache. */
static void prime(const char *const *paths, size_t n)
{
	struct obs o;

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < n; i++)
			observe_shim(paths[i], &o);
}

/* --ns-test MODE DIR RESULT: MODE "wait" or "async".  Writes
 * "rounds=N stale=N late=N maxms=F" to RESULT; exit 77 if the kernel
 * refuses a private mount namespace, 5 if a helper's mount failed. */
static int ns_test_main(char **argv)
{
	int async = !strcmp(argv[2], "async");
	const char *dir = argv[3], *result = argv[4];
	char a[PLEN], b[PLEN], ax[PLEN], ay[PLEN], bx[PLEN], by[PLEN], out[160];
	const char *paths[] = { a, ax, ay };
	const char *off[] = { "RCUWALK_DISABLE=1", NULL };
	int rounds = 0, stale = 0, late = 0;
	double maxms = 0;

	if (unshare(CLONE_NEWNS) != 0) {
		fprintf(stderr, "unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return 77;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		fprintf(stderr, "mount --make-rprivate /: %s\n", strerror(errno));
		return 77;
	}
	g_env_off = env_with(off);
	join(a, dir, "A");
	join(b, dir, "B");
	join(ax, a, "x");
	join(ay, a, "y");
	join(bx, b, "x");
	join(by, b, "y");
	if (raw_mkdir(a) || raw_mkdir(b) || raw_write_file(ax, 10, 0) || raw_write_file(bx, 20, 0) ||
	    raw_write_file(by, 1, 0))
		return 6;
	for (int i = 0; i < ROUNDS; i++) {
		for (int phase = 0; phase < 2; phase++) {
			const char *mnt[] = { "--mount", b, a, NULL };
			const char *umnt[] = { "--umount", a, NULL };
			struct obs got[3], exp[3];
			char why[512];
			pid_t stay = 0;
			int bad = 0;
			double t0;

			prime(paths, 3);
			t0 = mono_now();
			if (run_helper(phase == 0 ? mnt : umnt, async, &stay) != 0) {
				reap(stay);
				return 5;
			}
			for (size_t j = 0; j < 3; j++)
				observe_shim(paths[j], &got[j]);
			for (size_t j = 0; j < 3; j++) {
				observe_raw(paths[j], &exp[j]);
				if (obs_diff(&got[j], &exp[j], why, sizeof(why))) {
					if (!bad && (!async || stale < 3))
						fprintf(stderr, "round %d (%s): %s: %s\n", i,
							phase ? "umount" : "mount", paths[j], why);
					bad = 1;
				}
			}
			/* the kernel's answer did change: x is B's (20 bytes) when mounted */
			if (exp[1].rc != 0 || exp[1].st.st_size != (phase == 0 ? 20 : 10) ||
			    (exp[2].rc == 0) != (phase == 0)) {
				reap(stay);
				return 5;
			}
			if (bad) {
				stale++;
				late += !obs_poll_exact(paths, 3, exp, t0 + ASYNC_LIMIT_S);
			}
			if ((mono_now() - t0) * 1e3 > maxms && bad)
				maxms = (mono_now() - t0) * 1e3;
			reap(stay);
			rounds++;
		}
	}
	free(g_env_off);
	snprintf(out, sizeof(out), "rounds=%d stale=%d late=%d maxms=%.3f\n", rounds, stale, late,
		 maxms);
	return write_result(result, out) == 0 ? 0 : 4;
}

/* ------------------------------------------------------------------------ */
/* The tests */

struct ns_result {
	int rounds, stale, late;
	double maxms;
	long long saved, mount_fail;
};

static void run_ns_test(const char *mode, struct ns_result *res)
{
	char dir[PLEN], result[PLEN], stats[PLEN], se[PLEN + 16], buf[160] = "";
	const char *extra[] = { se, "RCUWALK_RACY_MS=0", NULL };
	const char *args[] = { "--ns-test", mode, dir, result, NULL };
	int status;

	assert_int_equal(helper_paths(mode, dir, result, stats, se, sizeof(se)), 0);
	status = spawn_self_wait("test_mounts", args, env_with(extra), 120);
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 5)
		fail_msg("a helper's bind mount or unmount failed (or did not change the kernel's answer)");
	assert_int_equal(status, 0);
	assert_true(read_result(result, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "rounds=%d stale=%d late=%d maxms=%lf", &res->rounds,
				&res->stale, &res->late, &res->maxms),
			 4);
	res->saved = stats_field(stats, "saved");
	print_message("%s: %d mounts/unmounts by another process, %d stale right after, %d not "
		      "exact within %.0f s, slowest %.3f ms; %lld answers from the cache\n",
		      mode, res->rounds, res->stale, res->late, ASYNC_LIMIT_S, res->maxms, res->saved);
}

/* Clause 7 with clause 2: a mount made by a reaped child is seen at the sync
 * point, as its file changes are. */
static void test_mount_by_reaped_child_seen_right_after_waitpid(void **state)
{
	struct ns_result r;

	(void)state;
	run_ns_test("wait", &r);
	assert_int_equal(r.rounds, 2 * ROUNDS);
	assert_int_equal(r.stale, 0);
	assert_true(r.saved >= 2 * ROUNDS); /* the primed answers came from the cache */
}

/* Clause 7 with clause 4: a mount by a process nobody waits for is seen
 * within the inotify thread's delay. */
static void test_mount_by_unrelated_process_seen_within_1s(void **state)
{
	struct ns_result r;

	(void)state;
	run_ns_test("async", &r);
	assert_int_equal(r.rounds, 2 * ROUNDS);
	assert_int_equal(r.late, 0);
	assert_true(r.saved >= 2 * ROUNDS);
}

/* Whether the kernel lets a child enter a private mount namespace and bind
 * mount there (root, no seccomp filter against it). */
static int mount_ns_available(char *why, size_t n)
{
	pid_t pid = (pid_t)syscall(SYS_fork); /* raw: no shim bookkeeping */
	int status;

	if (pid == 0) {
		if (syscall(SYS_unshare, CLONE_NEWNS) != 0)
			_exit(1);
		if (syscall(SYS_mount, NULL, "/", NULL, (unsigned long)(MS_REC | MS_PRIVATE), NULL) != 0)
			_exit(2);
		if (syscall(SYS_mount, "/tmp", "/tmp", NULL, (unsigned long)MS_BIND, NULL) != 0)
			_exit(3);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		snprintf(why, n, "fork failed");
		return 0;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		return 1;
	case 1:
		snprintf(why, n, "unshare(CLONE_NEWNS) refused (not root, or no mount namespaces)");
		return 0;
	case 2:
		snprintf(why, n, "making / rprivate refused");
		return 0;
	default:
		snprintf(why, n, "bind mount refused in a private mount namespace");
		return 0;
	}
}

int main(int argc, char **argv)
{
	char why[128];

	if (argc >= 4 && argc <= 5 && !strcmp(argv[1], "--mount"))
		return helper_mount_main(argc, argv);
	if (argc >= 3 && argc <= 4 && !strcmp(argv[1], "--umount"))
		return helper_umount_main(argc, argv);
	if (argc == 5 && !strcmp(argv[1], "--ns-test"))
		return ns_test_main(argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;
	if (!mount_ns_available(why, sizeof(why))) {
		printf("test_mounts: skipped: %s\n", why);
		return 77;
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_by_reaped_child_seen_right_after_waitpid),
		cmocka_unit_test(test_mount_by_unrelated_process_seen_within_1s),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
