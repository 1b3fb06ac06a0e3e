/* SPDX-License-Identifier: MIT */
/*
 * test_lazy_reader.c - a process's first 100 ms run without the inotify
 * reader thread (inval_set_reader_delay, set by preload/config.c): other
 * processes' changes must still reach its answers, applied by the lookups
 * themselves once per 200 us; and a process that lives longer gets its
 * reader thread after all.
 *
 * Each test starts a fresh observer process (fork + execve of this binary,
 * the shim preloaded, so its cache and its clock start from zero).  The
 * mutations are made by this process with raw syscalls, which the
 * observer's shim cannot see but through inotify.
 *
 * Helpers, chosen by argv[1]:
 *   --observe DIR RFD WFD   caches DIR/f (present), DIR/n (absent) and
 *                           DIR/s (size 1), writes "r" on WFD, waits for a
 *                           byte on RFD (the changes are made), then looks
 *                           them up until all three show the change or 1 s
 *                           passed; exit status 0 if every answer then equals
 *                           the raw syscall's, 1 if not, 2 on usage errors.
 *                           Prints "threads-before threads-after usecs".
 *   --outlive DIR [fork]    looks up DIR, prints its thread count, (with
 *                           "fork": forks a child that exits at once and
 *                           reaps it,) sleeps 150 ms, looks up again, prints
 *                           the count again.
 *   --observe DIR RFD WFD fork
 *                           as --observe, but forks and reaps a child after
 *                           caching, then outlives the delay (150 ms and a
 *                           lookup) before it says "r": its answers then come
 *                           from a process past its delay that has forked,
 *                           and so has no reader thread (inval.c, `forked`).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
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

/* stat through the shim and with the raw syscall; 1 if both agree on the
 * result, errno and the contract's fields (never atime). */
static int agrees(const char *path, struct stat *shim)
{
	struct stat raw;
	int e1, e2, r1, r2;

	memset(shim, 0, sizeof *shim);
	memset(&raw, 0, sizeof raw);
	errno = 0;
	r1 = stat(path, shim);
	e1 = r1 ? errno : 0;
	r2 = (int)syscall(SYS_newfstatat, AT_FDCWD, path, &raw, 0);
	e2 = r2 ? errno : 0;
	if (r1 != r2 || e1 != e2)
		return 0;
	if (r1)
		return 1;
	return shim->st_dev == raw.st_dev && shim->st_ino == raw.st_ino &&
	       shim->st_mode == raw.st_mode && shim->st_nlink == raw.st_nlink &&
	       shim->st_size == raw.st_size && shim->st_blocks == raw.st_blocks &&
	       shim->st_mtim.tv_sec == raw.st_mtim.tv_sec &&
	       shim->st_mtim.tv_nsec == raw.st_mtim.tv_nsec &&
	       shim->st_ctim.tv_sec == raw.st_ctim.tv_sec &&
	       shim->st_ctim.tv_nsec == raw.st_ctim.tv_nsec;
}

/* Fork a child that exits at once, reap it, then outlive the reader delay
 * (100 ms) and look path up, which would start the reader of a process that
 * has not forked (test_reader_thread_starts_once_process_outlives_delay). */
static int fork_and_outlive(const char *path)
{
	struct timespec ts = { 0, 150 * 1000000L };
	struct stat st;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return stat(path, &st) == 0 ? 0 : -1;
}

static int observe_main(int argc, char **argv)
{
	char f[256], n[256], s[256], c;
	struct stat st;
	int rfd, wfd, before, after, done = 0;
	long t0;

	if (argc != 5 && (argc != 6 || strcmp(argv[5], "fork")))
		return 2;
	snprintf(f, sizeof f, "%s/f", argv[2]);
	snprintf(n, sizeof n, "%s/n", argv[2]);
	snprintf(s, sizeof s, "%s/s", argv[2]);
	rfd = atoi(argv[3]);
	wfd = atoi(argv[4]);
	/* Cache all three (twice: the second answer is a hit). */
	for (int i = 0; i < 2; i++) {
		if (stat(f, &st) != 0 || stat(n, &st) == 0 || stat(s, &st) != 0 || st.st_size != 1)
			return 2;
	}
	if (argc == 6 && fork_and_outlive(f) != 0)
		return 2;
	before = threads_now();
	if (write(wfd, "r", 1) != 1 || read(rfd, &c, 1) != 1)
		return 2;
	t0 = now_us();
	while (!done && now_us() - t0 < 1000000) {
		done = stat(f, &st) != 0 && errno == ENOENT && stat(n, &st) == 0 &&
		       stat(s, &st) == 0 && st.st_size == 3;
	}
	after = threads_now();
	printf("%d %d %ld\n", before, after, now_us() - t0);
	fflush(stdout);
	if (!done)
		return 1;
	return agrees(f, &st) && agrees(n, &st) && agrees(s, &st) ? 0 : 1;
}

static int outlive_main(int argc, char **argv)
{
	struct stat st;
	struct timespec ts = { 0, 150 * 1000000L };
	int before;

	if ((argc != 3 && (argc != 4 || strcmp(argv[3], "fork"))) || stat(argv[2], &st) != 0)
		return 2;
	before = threads_now();
	if (argc == 4) {
		if (fork_and_outlive(argv[2]) != 0)
			return 2;
	} else {
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (stat(argv[2], &st) != 0)
		return 2;
	printf("%d %d\n", before, threads_now());
	fflush(stdout);
	return 0;
}

/* Run this binary with args; its stdout into out (NUL-terminated).  The fds
 * keep1/keep2 survive the exec.  Returns the exit status (-1: not exited). */
static int run_self(const char *const *args, int keep1, int keep2, void (*mid)(void *), void *arg,
		    char *out, size_t outsz)
{
	int o[2], status;
	char *argv[8];
	size_t i;
	pid_t pid;

	argv[0] = (char *)"test_lazy_reader";
	for (i = 0; args[i] && i + 2 < sizeof argv / sizeof argv[0]; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		dup2(o[1], 1);
		if (keep1 >= 0)
			fcntl(keep1, F_SETFD, 0);
		if (keep2 >= 0)
			fcntl(keep2, F_SETFD, 0);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	assert_true(pid > 0);
	close(o[1]);
	if (mid)
		mid(arg);
	read_to_eof(o[0], out, outsz);
	close(o[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct handshake {
	int ready; /* we read "r" here */
	int go;    /* we write one byte here once the changes are made */
};

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", g_scratch, name);
}

/* The changes, as another process would make them: raw syscalls, so that
 * nothing in the observer's shim hears of them but its inotify queue. */
static void mutate_after_ready(void *arg)
{
	struct handshake *h = arg;
	char p[PLEN + 16], c;
	int fd;

	assert_int_equal(read(h->ready, &c, 1), 1);
	path_in(p, sizeof p, "f");
	assert_int_equal(syscall(SYS_unlinkat, AT_FDCWD, p, 0), 0);
	path_in(p, sizeof p, "n");
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	syscall(SYS_close, fd);
	path_in(p, sizeof p, "s");
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_write, fd, "xy", 2), 2);
	syscall(SYS_close, fd);
	assert_int_equal(write(h->go, "g", 1), 1);
}

static void make_file(const char *name, const char *data)
{
	char p[PLEN + 16];
	int fd;

	path_in(p, sizeof p, name);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_write, fd, data, strlen(data)), (long)strlen(data));
	syscall(SYS_close, fd);
}

/* The observer's run: if forked, it has forked and outlived its delay
 * before the changes (fork_and_outlive) and must have no reader thread. */
static void foreign_changes_seen(int forked)
{
	int r[2], g[2], status, before = -1, after = -1;
	long usecs = -1;
	char rs[16], gs[16], out[256], statsfile[PLEN + 16], line[512];
	const char *args[] = { "--observe", g_scratch, gs, rs, forked ? "fork" : NULL, NULL };
	struct handshake h;
	unsigned long hits = 0;
	FILE *sf;

	{
		char n[PLEN + 16];

		path_in(n, sizeof n, "n"); /* created by an earlier run */
		(void)syscall(SYS_unlinkat, AT_FDCWD, n, 0);
	}
	snprintf(statsfile, sizeof statsfile, "%s/stats", g_scratch);
	(void)syscall(SYS_unlinkat, AT_FDCWD, statsfile, 0);
	make_file("f", "f");
	make_file("s", "s");
	assert_int_equal(pipe2(r, O_CLOEXEC), 0);
	assert_int_equal(pipe2(g, O_CLOEXEC), 0);
	snprintf(rs, sizeof rs, "%d", r[1]);
	snprintf(gs, sizeof gs, "%d", g[0]);
	snprintf(statsfile, sizeof statsfile, "%s/stats", g_scratch);
	setenv("RCUWALK_STATS", statsfile, 1);
	/* f and s were just written: without this their attributes would not
	 * be cached at all (RCUWALK_RACY_MS), and nothing could be stale. */
	setenv("RCUWALK_RACY_MS", "0", 1);
	h.ready = r[0];
	h.go = g[1];
	status = run_self(args, r[1], g[0], mutate_after_ready, &h, out, sizeof out);
	unsetenv("RCUWALK_STATS");
	unsetenv("RCUWALK_RACY_MS");
	close(r[0]);
	close(r[1]);
	close(g[0]);
	close(g[1]);
	sscanf(out, "%d %d %ld", &before, &after, &usecs);
	print_message("observer%s: threads %d before, %d after; changes seen after %ld us\n",
		      forked ? " (forked, past its delay)" : "", before, after, usecs);
	assert_int_equal(status, 0);
	if (forked) {
		/* Single-threaded: no reader, and so no call_rcu thread either. */
		assert_int_equal(before, 1);
		assert_int_equal(after, 1);
	}
	/* The observer's answers came from its cache (so a stale one was
	 * possible): its stats line counts hits. */
	sf = fopen(statsfile, "r");
	assert_non_null(sf);
	while (fgets(line, sizeof line, sf)) {
		char *p = strstr(line, " hits=");

		if (p)
			hits += strtoul(p + 6, NULL, 10);
	}
	fclose(sf);
	assert_true(hits > 0);
}

static void test_foreign_changes_visible_in_process_without_reader_thread(void **state)
{
	(void)state;
	foreign_changes_seen(0);
}

static void test_foreign_changes_visible_in_forked_process_past_its_delay(void **state)
{
	(void)state;
	foreign_changes_seen(1);
}

/* The --outlive helper's thread counts (with "fork" if forked): how many
 * threads the process had in its first 100 ms and 150 ms later; *after
 * minus *before is its reader thread, if it started one. */
static void outlive(int forked, int *before, int *after)
{
	const char *args[] = { "--outlive", g_scratch, forked ? "fork" : NULL, NULL };
	char out[64];

	*before = *after = -1;
	assert_int_equal(run_self(args, -1, -1, NULL, NULL, out, sizeof out), 0);
	assert_int_equal(sscanf(out, "%d %d", before, after), 2);
	print_message("threads: %d in the first 100 ms, %d after%s 150 ms\n", *before, *after,
		      forked ? " a fork and" : "");
}

static void test_reader_thread_starts_once_process_outlives_delay(void **state)
{
	int before, after;

	(void)state;
	outlive(0, &before, &after);
	assert_int_equal(after, before + 1);
}

static void test_process_that_forked_never_starts_reader_thread(void **state)
{
	int before, after;

	(void)state;
	outlive(1, &before, &after);
	assert_int_equal(after, before);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--observe") == 0)
		return observe_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--outlive") == 0)
		return outlive_main(argc, argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_foreign_changes_visible_in_process_without_reader_thread),
		cmocka_unit_test(test_reader_thread_starts_once_process_outlives_delay),
		cmocka_unit_test(test_foreign_changes_visible_in_forked_process_past_its_delay),
		cmocka_unit_test(test_process_that_forked_never_starts_reader_thread),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
