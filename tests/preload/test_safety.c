/* SPDX-License-Identifier: MIT */
/*
 * test_safety.c - the shim survives what programs do to their own process
 * (issue 3, "Safety" and "process state"):
 *
 *   - the program closes the shim's inotify fd or dup2/dup3s over it (close,
 *     close_range, closefrom, a loop over 3..N, from a signal handler): the
 *     call does to the number what the kernel does, the shim never reads a
 *     file of the program's that later holds that number, and its answers
 *     stay exact (it starts a new instance);
 *   - unshare(CLONE_NEWUSER) and setns() into a user namespace after cached
 *     lookups give the result they give without the shim (the shim's threads
 *     would make the kernel refuse);
 *   - chroot, mount, capset and every credential change (root -> nobody,
 *     seteuid and back) make the shim forget what it knew;
 *   - vfork()+exec and posix_spawn() children run, and the parent sees
 *     what they created right after waitpid;
 *   - under fakeroot, attributes are never answered from the cache;
 *   - a program that uses inotify itself (inotifywait) works.
 *
 * (fork from a multithreaded parent and lookups from a signal handler are
 * test_coherence's.)  Every answer is compared with the raw syscall(2)
 * answer at the same moment; st_atim is never compared.
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).  The
 * binary is also its own helper, chosen by argv[1] (see main()).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../unit/raw_listdir.h"
#include "coh_helpers.h"

extern char **environ;

#define FOREIGN_LIMIT_S 1.0 /* contract: "well under 1 s" */
#define HOST_DATA "host data: the shim must never read these bytes"

/* ------------------------------------------------------------------------ */
/* Watchdog: nothing may hang. */

static const char *volatile g_stage = "";

static void on_alarm(int sig)
{
	(void)sig;
	raw_puts(2, "test_safety: watchdog expired (deadlock or hang) in: ");
	raw_puts(2, (const char *)g_stage);
	raw_puts(2, "\n");
	_exit(1);
}

static void watchdog(unsigned secs, const char *stage)
{
	g_stage = stage;
	alarm(secs);
}

/* ------------------------------------------------------------------------ */
/* Paths and raw (shim-bypassing) helpers. */

static int raw_file(const char *p, mode_t mode)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return -1;
	syscall(SYS_write, fd, "x", 1);
	syscall(SYS_close, fd);
	return (int)syscall(SYS_fchmodat, AT_FDCWD, p, mode);
}

static void raw_unlink(const char *p)
{
	syscall(SYS_unlinkat, AT_FDCWD, p, 0);
}

/* ------------------------------------------------------------------------ */
/* Exactness: stat, lstat, access(F_OK), access(R_OK) and open(O_RDONLY) of
 * a path through libc (the shim) against the raw syscalls, right after. */

/* 0 if every call agrees with the kernel; else 1 and `why`. */
static int inexact(const char *p, char *why, size_t n)
{
	struct sres s, k;
	int a, ae, b, be, fd;

	errno = 0;
	s.rc = stat(p, &s.st);
	s.err = s.rc ? errno : 0;
	k.rc = (int)raw_stat(p, &k.st, 0);
	k.err = k.rc ? errno : 0;
	if (sres_diff("stat", &s, &k, why, n))
		return 1;
	errno = 0;
	s.rc = lstat(p, &s.st);
	s.err = s.rc ? errno : 0;
	k.rc = (int)raw_stat(p, &k.st, AT_SYMLINK_NOFOLLOW);
	k.err = k.rc ? errno : 0;
	if (sres_diff("lstat", &s, &k, why, n))
		return 1;
	for (int mode = F_OK; mode <= R_OK; mode += R_OK) {
		errno = 0;
		a = access(p, mode);
		ae = a ? errno : 0;
		b = (int)syscall(SYS_faccessat2, AT_FDCWD, p, mode, 0);
		be = b ? errno : 0;
		if (rc_diff(mode ? "access(R_OK)" : "access(F_OK)", a, ae, b, be, why, n))
			return 1;
	}
	errno = 0;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	a = fd >= 0 ? 0 : -1;
	ae = fd >= 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
	b = fd >= 0 ? 0 : -1;
	be = fd >= 0 ? 0 : errno;
	if (fd >= 0)
		syscall(SYS_close, fd);
	return rc_diff("open", a, ae, b, be, why, n);
}

static void assert_exact(const char *what, const char *p)
{
	char why[512];

	if (inexact(p, why, sizeof why))
		fail_msg("%s: %s: %s", what, p, why);
}

/* In a fork() child: report and exit with `code` on a wrong answer. */
static void child_exact(const char *p, int code)
{
	char why[512];

	if (inexact(p, why, sizeof why)) {
		dprintf(2, "child: %s: %s\n", p, why);
		_exit(code);
	}
}

/* ------------------------------------------------------------------------ */
/* The shim's fd, as the kernel shows it. */

static int is_inotify_fd(int fd)
{
	char p[64], l[64];
	long n;

	xfmt(p, sizeof p, "/proc/self/fd/%d", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, p, l, sizeof l - 1);
	if (n <= 0)
		return 0;
	l[n] = '\0';
	return strcmp(l, "anon_inode:inotify") == 0;
}

/* The one inotify fd of this process (the test makes none itself), or -1. */
static int add_inotify_fd(void *arg, const char *name, size_t len)
{
	int *found = arg, fd = atoi(name);

	(void)len;
	if (is_inotify_fd(fd)) {
		assert_int_equal(*found, -1); /* never two */
		*found = fd;
	}
	return 0;
}

/* Raw getdents64: readdir() through the shim leaves its fds out. */
static int shim_fd(void)
{
	int found = -1;
	long r = raw_listdir("/proc/self/fd", 4096, add_inotify_fd, &found);

	if (r < 0)
		print_message("listing /proc/self/fd: %s\n", strerror((int)-r));
	assert_true(r >= 0);
	return found;
}

/* Raw syscalls: opendir() goes through the shim (names), and a lookup made
 * here would let the shim start a fresh instance and reader in between. */
static int count_tasks(void)
{
	static char buf[8192];
	long r;
	int n = 0, fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
				     O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < r;) {
			unsigned short reclen;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			n += buf[off + 19] != '.';
			off += reclen;
		}
	syscall(SYS_close, fd);
	return n;
}

/* Make cached answers exist in dir (and so the shim's instance and reader):
 * returns the shim's fd number. */
static int warm(const char *dir)
{
	char f[PLEN], m[PLEN];
	struct stat st;
	int fd;

	xfmt(f, sizeof f, "%s/f", dir);
	xfmt(m, sizeof m, "%s/missing", dir);
	for (int i = 0; i < 3; i++) {
		(void)stat(f, &st);
		(void)stat(m, &st);
		(void)access(f, R_OK);
		fd = open(m, O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	assert_exact("warm", f);
	assert_exact("warm", m);
	fd = shim_fd();
	if (fd < 0)
		fail_msg("no inotify fd after cached lookups in %s", dir);
	assert_true(fd >= 3);
	return fd;
}

static void make_dir(char *out, const char *name)
{
	char f[PLEN];

	xfmt(out, PLEN, "%s/%s", g_scratch, name);
	assert_int_equal(raw_mkdir(out), 0);
	xfmt(f, sizeof f, "%s/f", out);
	assert_int_equal(raw_file(f, 0644), 0);
}

/* ------------------------------------------------------------------------ */
/* After the shim's fd was taken from it: every kind of change is still seen. */

/* A process of its own (a fork() child that only makes raw syscalls and is
 * not waited for before the check) creates `p`: the shim must see it within
 * FOREIGN_LIMIT_S through its (new) inotify reader. */
static void foreign_create_seen(const char *p)
{
	int go[2];
	char c;
	pid_t pid;
	struct timespec t0, t;
	char why[512];
	int st;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		raw_file(p, 0644);
		syscall(SYS_write, go[1], "1", 1);
		pause();
		_exit(0);
	}
	close(go[1]);
	assert_int_equal(read(go[0], &c, 1), 1);
	close(go[0]);
	now(&t0);
	for (;;) {
		int bad = inexact(p, why, sizeof why);

		now(&t);
		if (!bad)
			break;
		if (ts_diff(&t0, &t) > FOREIGN_LIMIT_S) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("foreign create of %s not seen after %.3f s: %s", p, ts_diff(&t0, &t), why);
		}
		usleep(1000);
	}
	print_message("foreign create seen after %.6f s\n", ts_diff(&t0, &t));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
}

static void everything_exact(const char *dir)
{
	char f[PLEN], m[PLEN], n[PLEN], c[PLEN], o[PLEN];
	struct stat st;
	pid_t pid;
	int fd, status;

	xfmt(f, sizeof f, "%s/f", dir);
	xfmt(m, sizeof m, "%s/missing", dir);
	xfmt(n, sizeof n, "%s/new", dir);
	xfmt(c, sizeof c, "%s/by-child", dir);
	xfmt(o, sizeof o, "%s/by-other", dir);
	for (int i = 0; i < 3; i++) {
		assert_exact("lookup", f);
		assert_exact("lookup", m);
	}
	/* this process's own mutations: exact as soon as the call returns */
	assert_exact("before own create", n);
	fd = open(n, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	assert_exact("after own create+write", n);
	close(fd);
	assert_int_equal(chmod(n, 0640), 0);
	assert_exact("after own chmod", n);
	assert_int_equal(unlink(n), 0);
	assert_exact("after own unlink", n);
	/* a child's: exact once waitpid() has returned */
	assert_exact("before child create", c);
	(void)stat(c, &st);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		raw_file(c, 0644);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_exact("after waitpid", c);
	/* an unrelated process's: within the inotify latency */
	assert_exact("before foreign create", o);
	foreign_create_seen(o);
	raw_unlink(c);
	raw_unlink(o);
	for (int i = 0; i < 2; i++) {
		assert_exact("after cleanup", c);
		assert_exact("after cleanup", o);
	}
	/* ...and not by passing everything through: the shim watches again */
	if (shim_fd() < 0)
		fail_msg("no inotify fd after lookups in %s: the shim did not start again", dir);
}

/* The program's own file now holds number `fd`: a pipe with HOST_DATA in it.
 * Returns the pipe's write end. */
static int host_takes_number(int fd, int use_dup3)
{
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(write(p[1], HOST_DATA, sizeof HOST_DATA), (long)sizeof HOST_DATA);
	if (use_dup3)
		assert_int_equal(dup3(p[0], fd, O_CLOEXEC), fd);
	else
		assert_int_equal(dup2(p[0], fd), fd);
	close(p[0]);
	return p[1];
}

/* Nobody read from the program's pipe at `fd`. */
static void host_data_intact(int fd, int wfd)
{
	char buf[sizeof HOST_DATA * 2];
	long n;

	assert_false(is_inotify_fd(fd));
	n = read(fd, buf, sizeof buf);
	assert_int_equal(n, (long)sizeof HOST_DATA);
	assert_memory_equal(buf, HOST_DATA, sizeof HOST_DATA);
	close(fd);
	close(wfd);
}

/* ------------------------------------------------------------------------ */
/* 1. The program takes the shim's fd. */

/* The program never opened the shim's number: closing it is the kernel's
 * EBADF for a closed fd, and the shim keeps it (doc/design.md). */
static void test_close_of_shim_fd_is_ebadf_and_keeps_it(void **state)
{
	char d[PLEN];
	int fd;

	(void)state;
	make_dir(d, "close");
	fd = warm(d);
	errno = 0;
	assert_int_equal(close(fd), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_true(is_inotify_fd(fd)); /* nothing closed */
	everything_exact(d);
	assert_int_equal(shim_fd(), fd); /* and the shim kept using it */
}

/* --reader-leaves DIR: a process that has not forked (one that forks while
 * its cache runs never starts its reader thread: invalidate/inval.c,
 * `forked`) caches DIR's names and outlives the reader's delay (100 ms,
 * inval_set_reader_delay), so that its reader runs; then the program takes
 * the shim's fd number with dup2(): the reader must leave, and answers stay
 * exact.  Prints "fd threads-before threads-after"; exits 0, or the step
 * that failed. */
static int reader_leaves_main(int argc, char **argv)
{
	struct timespec delay = { 0, 110 * 1000 * 1000 }, t0, t;
	char f[PLEN], m[PLEN], n[PLEN];
	int fd, before, after, nul;

	if (argc != 3)
		return 2;
	fd = warm(argv[2]);
	while (nanosleep(&delay, &delay) != 0 && errno == EINTR)
		;
	if (warm(argv[2]) != fd)
		return 3;
	before = count_tasks();
	nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nul < 0 || dup2(nul, fd) != fd) /* the program takes the number */
		return 4;
	close(nul);
	/* dup2() returned after the reader had left poll() for good; the
	 * kernel forgets the task a moment later. */
	now(&t0);
	do {
		after = count_tasks();
		now(&t);
	} while (after != before - 1 && ts_diff(&t0, &t) < 2.0);
	printf("%d %d %d\n", fd, before, after);
	fflush(stdout);
	close(fd);
	xfmt(f, sizeof f, "%s/f", argv[2]);
	xfmt(m, sizeof m, "%s/missing", argv[2]);
	xfmt(n, sizeof n, "%s/new", argv[2]);
	child_exact(f, 10);
	child_exact(m, 11);
	child_exact(n, 12);
	/* the process's own create, through the shim: exact at once */
	fd = open(n, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 5;
	close(fd);
	child_exact(n, 13);
	child_exact(m, 14);
	return 0;
}

static void test_dup2_over_shim_fd_never_reads_host_data(void **state)
{
	char d[PLEN];
	int fd, w;

	(void)state;
	make_dir(d, "dup2");
	fd = warm(d);
	w = host_takes_number(fd, 0);
	everything_exact(d);
	host_data_intact(fd, w);
}

static void test_dup3_over_shim_fd_never_reads_host_data(void **state)
{
	char d[PLEN];
	int fd, w;

	(void)state;
	make_dir(d, "dup3");
	fd = warm(d);
	w = host_takes_number(fd, 1);
	everything_exact(d);
	host_data_intact(fd, w);
}

static void test_dup2_with_bad_oldfd_leaves_shim_fd_open(void **state)
{
	char d[PLEN];
	int fd, closed;

	(void)state;
	make_dir(d, "dup2-ebadf");
	fd = warm(d);
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(closed >= 0);
	close(closed);
	errno = 0;
	assert_int_equal(dup2(closed, fd), -1);
	assert_int_equal(errno, EBADF);
	assert_true(is_inotify_fd(fd)); /* the kernel closed nothing */
	assert_int_equal(shim_fd(), fd);
	everything_exact(d);
	assert_int_equal(shim_fd(), fd); /* and the shim kept using it */
}

static void test_close_range_over_shim_fd_then_host_reuse_never_read(void **state)
{
	char d[PLEN];
	int fd, w;

	(void)state;
	make_dir(d, "close-range");
	fd = warm(d);
	assert_int_equal(close_range((unsigned)fd, (unsigned)fd + 16, 0), 0);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	w = host_takes_number(fd, 0);
	everything_exact(d);
	host_data_intact(fd, w);
}

static void test_close_range_cloexec_leaves_shim_fd_open(void **state)
{
	char d[PLEN];
	int fd;

	(void)state;
	make_dir(d, "close-range-cloexec");
	fd = warm(d);
	assert_int_equal(close_range(3, ~0U, CLOSE_RANGE_CLOEXEC), 0);
	assert_true(is_inotify_fd(fd));
	assert_int_equal(syscall(SYS_fcntl, fd, F_GETFD), FD_CLOEXEC); /* raw: fcntl() hides it */
	everything_exact(d);
	assert_int_equal(shim_fd(), fd);
}

static void test_closefrom_over_shim_fd_then_host_reuse_never_read(void **state)
{
	char d[PLEN];
	int fd, w;

	(void)state;
	make_dir(d, "closefrom");
	fd = warm(d);
	closefrom(fd);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	w = host_takes_number(fd, 0);
	everything_exact(d);
	host_data_intact(fd, w);
}

/* A daemon-style loop over every fd from 3 up (this test holds no other fd
 * at this point). */
static void test_close_loop_from_3_over_shim_fd_then_host_reuse_never_read(void **state)
{
	char d[PLEN];
	int fd, w;

	(void)state;
	make_dir(d, "close-loop");
	fd = warm(d);
	for (int i = 3; i <= fd + 64; i++)
		close(i);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	w = host_takes_number(fd, 0);
	everything_exact(d);
	host_data_intact(fd, w);
}

/* A handler that closes whatever inotify fd the process has, interrupting
 * lookups in the shim: no deadlock, and the answers stay exact. */
static atomic_int g_handler_runs, g_handler_closes;
static int g_scan_from; /* the shim's fds are made near this number */
static int g_handler_nul = -1; /* /dev/null, dup2()ed onto the shim's number */

/* "/proc/self/fd/<fd>" into p, async-signal-safe. */
static void fd_link_path(char *p, int fd)
{
	char digits[12];
	int nd = 0;

	memcpy(p, "/proc/self/fd/", 14);
	do
		digits[nd++] = (char)('0' + fd % 10);
	while ((fd /= 10) != 0);
	for (int k = 0; k < nd; k++)
		p[14 + k] = digits[nd - 1 - k];
	p[14 + nd] = '\0';
}

static void close_inotify_handler(int sig)
{
	int saved = errno;

	(void)sig;
	atomic_fetch_add(&g_handler_runs, 1);
	for (int fd = g_scan_from; fd < g_scan_from + 128; fd++) {
		char p[32], l[32];
		long n;

		fd_link_path(p, fd);
		n = syscall(SYS_readlinkat, AT_FDCWD, p, l, sizeof l - 1);
		if (n > 0) {
			l[n] = '\0';
			/* close() of it is EBADF now: take the number */
			if (strcmp(l, "anon_inode:inotify") == 0 && dup2(g_handler_nul, fd) == fd) {
				atomic_fetch_add(&g_handler_closes, 1);
				close(fd);
			}
		}
	}
	errno = saved;
}

struct sender {
	pthread_t target;
	atomic_int stop;
};

static void *signal_sender(void *arg)
{
	struct sender *s = arg;

	while (!atomic_load(&s->stop)) {
		pthread_kill(s->target, SIGUSR1);
		usleep(3000);
	}
	return NULL;
}

static void test_shim_fd_closed_from_signal_handler_no_deadlock(void **state)
{
	char d[PLEN], f[PLEN], m[PLEN], n[PLEN];
	struct sigaction sa, old;
	struct sender s = { .target = pthread_self() };
	pthread_t th;
	long loops = 0;

	(void)state;
	make_dir(d, "handler");
	xfmt(f, sizeof f, "%s/f", d);
	xfmt(m, sizeof m, "%s/missing", d);
	xfmt(n, sizeof n, "%s/churn", d);
	g_handler_nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(g_handler_nul >= 0);
	g_scan_from = warm(d) - 64;
	if (g_scan_from < 3)
		g_scan_from = 3;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = close_inotify_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	watchdog(120, "lookups while a signal handler closes the shim's fd");
	assert_int_equal(pthread_create(&th, NULL, signal_sender, &s), 0);
	for (loops = 0; loops < 2000; loops++) {
		int fd;

		assert_exact("handler loop", f);
		assert_exact("handler loop", m);
		fd = open(n, O_WRONLY | O_CREAT | O_CLOEXEC, 0600); /* drains (own change) */
		assert_true(fd >= 0);
		close(fd);
		assert_exact("handler loop", n);
		assert_int_equal(unlink(n), 0);
		assert_exact("handler loop", n);
		if (loops % 64 == 0) {
			/* the program closes it too, racing with its handler */
			int sfd = shim_fd();

			if (sfd >= 0 && dup2(g_handler_nul, sfd) == sfd)
				close(sfd);
		}
	}
	atomic_store(&s.stop, 1);
	pthread_join(th, NULL);
	alarm(0);
	sigaction(SIGUSR1, &old, NULL);
	print_message("handler: %d runs, %d closes of the shim's fd; %ld loops\n",
		      atomic_load(&g_handler_runs), atomic_load(&g_handler_closes), loops);
	assert_true(atomic_load(&g_handler_closes) > 0);
	everything_exact(d);
}

/* ------------------------------------------------------------------------ */
/* 2. Process state. */

/* Run this binary as `argv` (fresh process image) with `extra` added to the
 * environment; return its exit status and fill out[] with its stdout. */
static int run_self(char *const argv[], const char *extra, const char *drop, char *out, size_t outn)
{
	char *env[512];
	int n = 0, p[2], status;
	pid_t pid;
	size_t got = 0;

	for (char **e = environ; *e && n < 500; e++)
		if (!drop || strncmp(*e, drop, strlen(drop)) != 0)
			env[n++] = *e;
	if (extra)
		env[n++] = (char *)extra;
	env[n] = NULL;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execve(argv[0], argv, env);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		long r = read(p[0], out + got, outn - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* The shim starts its threads only when they are needed: the reader once
 * the process has used the cache for 100 ms, the call_rcu thread at the
 * first free.  Make it run both (a chmod to the same mode drops f's cached
 * attributes), so that there is something to stop before the namespace
 * change. */
static void start_shim_threads(const char *f)
{
	struct timespec t = { 0, 110 * 1000 * 1000 };
	struct stat st;

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
	if (stat(f, &st) == 0 && chmod(f, st.st_mode & 07777) == 0)
		(void)stat(f, &st);
}

/* --unshare-user DIR: cached lookups in DIR, then unshare(CLONE_NEWUSER);
 * prints "rc errno threads-before" and checks lookups afterwards. */
static int unshare_user_main(int argc, char **argv)
{
	char f[PLEN], m[PLEN];
	struct stat st;
	int r, e, threads = 0;
	DIR *d;
	struct dirent *de;

	if (argc < 3)
		return 2;
	xfmt(f, sizeof f, "%s/f", argv[2]);
	xfmt(m, sizeof m, "%s/missing", argv[2]);
	for (int i = 0; i < 3; i++) {
		(void)stat(f, &st);
		(void)stat(m, &st);
	}
	start_shim_threads(f);
	d = opendir("/proc/self/task");
	while (d && (de = readdir(d)))
		threads += de->d_name[0] != '.';
	if (d)
		closedir(d);
	errno = 0;
	r = unshare(CLONE_NEWUSER);
	e = r ? errno : 0;
	printf("%d %s %d\n", r, ename(e), threads);
	fflush(stdout);
	child_exact(f, 10);
	child_exact(m, 11);
	return 0;
}

/* --setns-user DIR NSTYPE: a child enters a new user namespace (raw
 * syscall), then this process makes cached lookups and setns()es into it. */
static int setns_user_main(int argc, char **argv)
{
	char f[PLEN], m[PLEN], nsp[64];
	struct stat st;
	int go[2], done[2], r, e, fd, threads = 0;
	pid_t pid;
	char c;
	DIR *d;
	struct dirent *de;

	if (argc < 4 || pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC))
		return 2;
	pid = fork(); /* before any lookup: the child has no cache */
	if (pid < 0)
		return 2;
	if (pid == 0) {
		c = syscall(SYS_unshare, CLONE_NEWUSER) == 0 ? 'y' : 'n';
		syscall(SYS_write, go[1], &c, 1);
		syscall(SYS_read, done[0], &c, 1);
		_exit(0);
	}
	if (read(go[0], &c, 1) != 1)
		return 3;
	xfmt(nsp, sizeof nsp, "/proc/%d/ns/user", (int)pid);
	fd = open(nsp, O_RDONLY | O_CLOEXEC);
	xfmt(f, sizeof f, "%s/f", argv[2]);
	xfmt(m, sizeof m, "%s/missing", argv[2]);
	for (int i = 0; i < 3; i++) {
		(void)stat(f, &st);
		(void)stat(m, &st);
	}
	start_shim_threads(f);
	d = opendir("/proc/self/task");
	while (d && (de = readdir(d)))
		threads += de->d_name[0] != '.';
	if (d)
		closedir(d);
	errno = 0;
	r = c == 'y' && fd >= 0 ? setns(fd, atoi(argv[3])) : -2;
	e = r == -1 ? errno : 0;
	printf("%d %s %d\n", r, ename(e), threads);
	fflush(stdout);
	(void)!write(done[1], "x", 1);
	waitpid(pid, NULL, 0);
	child_exact(f, 10);
	child_exact(m, 11);
	return 0;
}

static void self_path(char *out, size_t n)
{
	long r = readlink("/proc/self/exe", out, n - 1);

	assert_true(r > 0);
	out[r] = '\0';
}

static void test_shim_fd_closed_reader_thread_leaves(void **state)
{
	char d[PLEN], self[PATH_MAX], out[128];
	char *argv[] = { self, (char *)"--reader-leaves", d, NULL };
	int fd = -1, before = -1, after = -1, status;

	(void)state;
	make_dir(d, "reader");
	self_path(self, sizeof self);
	status = run_self(argv, NULL, NULL, out, sizeof out);
	assert_int_equal(sscanf(out, "%d %d %d", &fd, &before, &after), 3);
	print_message("threads: %d before dup2 onto fd %d, %d after (status 0x%x)\n", before, fd,
		      after, status);
	assert_int_equal(status, 0);
	assert_true(before >= 2); /* the reader ran */
	assert_int_equal(after, before - 1);
}

/* Run helper `mode` with and without the shim (RCUWALK_DISABLE=1): both must
 * exit 0 and print the same "rc errno"; with the shim, the helper must have
 * had threads of the shim's to stop (the check would be empty otherwise). */
static void compare_with_and_without_shim(const char *mode, const char *dir, const char *arg)
{
	char self[PATH_MAX], on[256], off[256], e_on[64], e_off[64];
	char *argv[] = { self, (char *)mode, (char *)dir, (char *)arg, NULL };
	int s_on, s_off, r_on, r_off, t_on, t_off;

	self_path(self, sizeof self);
	s_on = run_self(argv, NULL, NULL, on, sizeof on);
	s_off = run_self(argv, "RCUWALK_DISABLE=1", NULL, off, sizeof off);
	print_message("%s %s: with the shim \"%.*s\" status 0x%x; without \"%.*s\" status 0x%x\n",
		      mode, arg ? arg : "", (int)strcspn(on, "\n"), on, s_on,
		      (int)strcspn(off, "\n"), off, s_off);
	assert_int_equal(s_on, 0);
	assert_int_equal(s_off, 0);
	assert_int_equal(sscanf(on, "%d %63s %d", &r_on, e_on, &t_on), 3);
	assert_int_equal(sscanf(off, "%d %63s %d", &r_off, e_off, &t_off), 3);
	assert_int_equal(r_on, r_off);
	assert_string_equal(e_on, e_off);
	assert_true(t_on > 1);
}

static void test_unshare_newuser_after_cached_lookups_same_as_without_shim(void **state)
{
	char d[PLEN];

	(void)state;
	make_dir(d, "unshare");
	watchdog(60, "unshare(CLONE_NEWUSER) helper");
	compare_with_and_without_shim("--unshare-user", d, NULL);
	alarm(0);
}

static void test_setns_user_after_cached_lookups_same_as_without_shim(void **state)
{
	char d[PLEN], type[16];

	(void)state;
	make_dir(d, "setns");
	xfmt(type, sizeof type, "%d", CLONE_NEWUSER);
	watchdog(60, "setns(CLONE_NEWUSER) helper");
	compare_with_and_without_shim("--setns-user", d, type);
	compare_with_and_without_shim("--setns-user", d, "0"); /* "any": the shim asks the fd */
	alarm(0);
}

static void test_unshare_command_under_shim_same_as_without(void **state)
{
	char out[64];
	char *argv[] = { (char *)"/usr/bin/unshare", (char *)"-U", (char *)"/bin/sh", (char *)"-c",
			 (char *)"test -e /etc/passwd && ! test -e /nonexistent-rcuwalk", NULL };
	int s_on, s_off;

	(void)state;
	if (access(argv[0], X_OK) != 0)
		argv[0] = (char *)"/bin/unshare";
	s_on = run_self(argv, NULL, NULL, out, sizeof out);
	s_off = run_self(argv, NULL, "LD_PRELOAD=", out, sizeof out);
	print_message("unshare -U: status 0x%x with the shim, 0x%x without\n", s_on, s_off);
	assert_int_equal(s_on, s_off);
}

/* A fork() child runs fn(dir) and exits 0 if every answer was exact. */
static void in_child(void (*fn)(const char *), const char *dir)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn(dir);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child: status 0x%x (exit %d: see its message above)", status,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void chroot_child(const char *dir)
{
	char probe[64], inside[PLEN];
	struct stat st;

	/* "/<probe>" does not exist; after chroot(dir) it does. */
	xfmt(probe, sizeof probe, "/rcuwalk-chroot-probe-%d", (int)getpid());
	xfmt(inside, sizeof inside, "%s%s", dir, probe);
	if (raw_file(inside, 0644) != 0)
		_exit(20);
	raw_unlink(probe);
	for (int i = 0; i < 3; i++)
		(void)stat(probe, &st);
	child_exact(probe, 21);
	child_exact("/", 22);
	if (chroot(dir) != 0) {
		dprintf(2, "child: chroot: %s (compared without it)\n", strerror(errno));
		child_exact(probe, 23);
		return;
	}
	child_exact(probe, 24);
	child_exact("/", 25);
	child_exact("/f", 26);
	child_exact("/missing", 27);
}

static void test_chroot_forgets_cached_root(void **state)
{
	char d[PLEN];

	(void)state;
	make_dir(d, "chroot");
	in_child(chroot_child, d);
}

static void mount_child(const char *dir)
{
	char f[PLEN];
	struct stat st;

	xfmt(f, sizeof f, "%s/f", dir);
	/* A private mount namespace of our own (raw: the test is about mount()). */
	if (syscall(SYS_unshare, CLONE_NEWNS) != 0 ||
	    syscall(SYS_mount, "none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		dprintf(2, "child: no mount namespace: %s (compared without mounts)\n", strerror(errno));
		child_exact(f, 30);
		return;
	}
	for (int i = 0; i < 3; i++)
		(void)stat(f, &st);
	child_exact(f, 31);
	if (mount("rcuwalk-test", dir, "tmpfs", 0, "size=64k") != 0) {
		dprintf(2, "child: mount: %s\n", strerror(errno));
		_exit(32);
	}
	child_exact(f, 33); /* hidden by the tmpfs */
	child_exact(dir, 34);
	if (umount(dir) != 0)
		_exit(35);
	child_exact(f, 36); /* visible again */
	child_exact(dir, 37);
}

static void test_mount_and_umount_over_cached_dir_forget_it(void **state)
{
	char d[PLEN];

	(void)state;
	make_dir(d, "mount");
	in_child(mount_child, d);
}

/* capset(2): declared by libcap's header, not glibc's. */
extern int capset(cap_user_header_t hdr, const cap_user_data_t data);

static void capset_child(const char *dir)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct c[2];
	char f[PLEN];
	int drop = (1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH);

	xfmt(f, sizeof f, "%s/f000", dir);
	if (raw_file(f, 0) != 0)
		_exit(40);
	for (int i = 0; i < 3; i++)
		(void)access(f, R_OK); /* as root: 0, cached */
	child_exact(f, 41);
	if (syscall(SYS_capget, &h, c) != 0)
		_exit(42);
	/* access() as root uses the permitted set (the kernel's override
	 * creds), so drop the capabilities from both. */
	c[0].effective &= ~(unsigned)drop;
	c[0].permitted &= ~(unsigned)drop;
	if (capset(&h, c) != 0) {
		dprintf(2, "child: capset: %s\n", strerror(errno));
		_exit(43);
	}
	child_exact(f, 44); /* root without DAC_OVERRIDE: EACCES, as the kernel says */
	child_exact(dir, 45);
}

static void test_capset_dropping_dac_override_forgets_access_answers(void **state)
{
	char d[PLEN];

	(void)state;
	make_dir(d, "capset");
	in_child(capset_child, d);
}

/* Dropping from root to nobody: a path root could traverse (a 0700
 * directory) is EACCES for nobody, as the kernel says, though root's positive
 * answers for it were cached.  Each credential call empties the cache; the
 * child checks after setresgid/setgroups/setresuid (real drop) and, in a
 * second child, after seteuid/setegid only (and back to root with seteuid(0),
 * where the root answers must return). */
static void cred_paths(const char *dir, char *priv, char *f)
{
	xfmt(priv, PLEN, "%s/priv", dir);
	xfmt(f, PLEN, "%s/priv/f", dir);
}

static void creds_drop_child(const char *dir)
{
	char priv[PLEN], f[PLEN];
	struct stat st;
	struct sres k;

	cred_paths(dir, priv, f);
	for (int i = 0; i < 3; i++)
		(void)stat(f, &st), (void)access(f, R_OK);
	child_exact(f, 50);
	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		_exit(51);
	/* The kernel's own answer for nobody must be EACCES (else the test
	 * would not test anything). */
	k.rc = (int)raw_stat(f, &k.st, 0);
	if (k.rc != -1 || errno != EACCES) {
		dprintf(2, "child: raw stat as nobody: rc=%d errno=%s, expected EACCES\n", k.rc,
			ename(errno));
		_exit(52);
	}
	child_exact(f, 53);
	child_exact(priv, 54);
}

static void creds_euid_child(const char *dir)
{
	char priv[PLEN], f[PLEN];
	struct stat st;

	cred_paths(dir, priv, f);
	for (int i = 0; i < 3; i++)
		(void)stat(f, &st), (void)access(f, R_OK);
	if (setegid(65534) != 0 || seteuid(65534) != 0)
		_exit(55);
	child_exact(f, 56); /* EACCES for the effective nobody */
	errno = 0;
	if (stat(f, &st) != -1 || errno != EACCES) {
		dprintf(2, "child: stat as euid nobody: errno=%s, expected EACCES\n", ename(errno));
		_exit(57);
	}
	if (seteuid(0) != 0 || setegid(0) != 0)
		_exit(58);
	child_exact(f, 59); /* root again: found */
	if (stat(f, &st) != 0)
		_exit(60);
}

static void creds_setup(char *d, const char *name)
{
	char priv[PLEN], f[PLEN];

	make_dir(d, name);
	cred_paths(d, priv, f);
	/* nobody may traverse the scratch tree down to d, but not priv. */
	assert_int_equal(chmod(g_scratch, 0755), 0);
	assert_int_equal(chmod(d, 0755), 0);
	assert_int_equal(raw_mkdir(priv), 0);
	assert_int_equal(chmod(priv, 0700), 0);
	assert_int_equal(raw_file(f, 0644), 0);
}

static void test_credential_drop_to_nobody_makes_cached_path_eacces(void **state)
{
	char d[PLEN];

	(void)state;
	if (geteuid() != 0) {
		print_message("not root: cannot drop to nobody; skipped\n");
		skip();
	}
	creds_setup(d, "creds-drop");
	in_child(creds_drop_child, d);
}

static void test_seteuid_nobody_and_back_answers_follow_identity(void **state)
{
	char d[PLEN];

	(void)state;
	if (geteuid() != 0) {
		print_message("not root: cannot switch to nobody; skipped\n");
		skip();
	}
	creds_setup(d, "creds-euid");
	in_child(creds_euid_child, d);
}

/* vfork()+exec and posix_spawn() from a process whose cache holds answers:
 * the children run (under the shim too) and what they create is seen by the
 * parent right after waitpid, though it had cached the name as absent. */
static int spawn_touch(int use_vfork, const char *p)
{
	char *argv[] = { "touch", (char *)p, NULL };
	pid_t pid;
	int status;

	if (use_vfork) {
		pid = vfork();
		if (pid == 0) {
			execve("/usr/bin/touch", argv, environ);
			_exit(127);
		}
	} else if (posix_spawn(&pid, "/usr/bin/touch", NULL, NULL, argv, environ) != 0) {
		return -1;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void vfork_spawn_case(int use_vfork)
{
	char d[PLEN], p[PLEN];
	struct stat st;

	make_dir(d, use_vfork ? "vfork" : "spawn");
	for (int i = 0; i < 5; i++) {
		xfmt(p, sizeof p, "%s/new%d", d, i);
		for (int j = 0; j < 3; j++)
			(void)stat(p, &st); /* cached absent */
		assert_exact("before", p);
		assert_int_equal(spawn_touch(use_vfork, p), 0);
		assert_exact("after the child's create and waitpid", p);
		assert_int_equal(stat(p, &st), 0);
	}
}

static void test_vfork_exec_child_runs_and_its_create_is_seen(void **state)
{
	(void)state;
	vfork_spawn_case(1);
}

static void test_posix_spawn_child_runs_and_its_create_is_seen(void **state)
{
	(void)state;
	vfork_spawn_case(0);
}

/* ------------------------------------------------------------------------ */
/* 3. fakeroot. */

/* --stat-loop DIR: stat DIR/f and DIR/missing 10 times each, each answer
 * equal to the kernel's (stat only: the counters are the check). */
static int stat_loop_main(int argc, char **argv)
{
	char f[PLEN], m[PLEN], why[512];
	const char *p[2] = { f, m };

	if (argc < 3)
		return 2;
	xfmt(f, sizeof f, "%s/f", argv[2]);
	xfmt(m, sizeof m, "%s/missing", argv[2]);
	for (int i = 0; i < 20; i++) {
		struct sres s, k;

		errno = 0;
		s.rc = stat(p[i % 2], &s.st);
		s.err = s.rc ? errno : 0;
		k.rc = (int)raw_stat(p[i % 2], &k.st, 0);
		k.err = k.rc ? errno : 0;
		if (sres_diff("stat", &s, &k, why, sizeof why)) {
			dprintf(2, "stat-loop: %s: %s\n", p[i % 2], why);
			return 10;
		}
	}
	return 0;
}

static int read_stats(const char *path, unsigned long long *hits, unsigned long long *neg)
{
	FILE *fp = fopen(path, "r");
	char line[512];
	int n = 0;

	if (!fp)
		return 0;
	while (fgets(line, sizeof line, fp)) {
		const char *h = strstr(line, " hits="), *g = strstr(line, " neg_hits=");

		if (h && g) {
			*hits = strtoull(h + 6, NULL, 10);
			*neg = strtoull(g + 10, NULL, 10);
			n++;
		}
	}
	fclose(fp);
	return n;
}

static void test_fakeroot_env_stat_never_answered_from_cache(void **state)
{
	char d[PLEN], self[PATH_MAX], out[64], sf[PLEN], env[PLEN + 32];
	char *argv[] = { self, (char *)"--stat-loop", d, NULL };
	unsigned long long hits = 0, neg = 0;
	int n;

	(void)state;
	make_dir(d, "fakeroot-env");
	self_path(self, sizeof self);
	/* control: without fakeroot the same loop hits the cache */
	xfmt(sf, sizeof sf, "%s/stats-plain", d);
	xfmt(env, sizeof env, "RCUWALK_STATS=%s", sf);
	assert_int_equal(run_self(argv, env, NULL, out, sizeof out), 0);
	assert_int_equal(read_stats(sf, &hits, &neg), 1);
	print_message("plain: hits=%llu neg_hits=%llu\n", hits, neg);
	assert_true(hits >= 9);
	/* FAKEROOTKEY in the environment: stat passes through, names still cached */
	xfmt(sf, sizeof sf, "%s/stats-fakeroot", d);
	xfmt(env, sizeof env, "RCUWALK_STATS=%s", sf);
	setenv("FAKEROOTKEY", "12345", 1);
	n = run_self(argv, env, NULL, out, sizeof out);
	unsetenv("FAKEROOTKEY");
	assert_int_equal(n, 0);
	assert_int_equal(read_stats(sf, &hits, &neg), 1);
	print_message("FAKEROOTKEY set: hits=%llu neg_hits=%llu\n", hits, neg);
	assert_int_equal(hits, 0);
	assert_true(neg >= 9);
}

/* --fakeroot-mode FILE: chmod FILE 0 (faked by fakeroot: the kernel keeps
 * the owner's rw bits) and print the mode stat() reports, twice. */
static int fakeroot_mode_main(int argc, char **argv)
{
	struct stat st;
	unsigned int m[2];

	if (argc < 3)
		return 2;
	(void)stat(argv[2], &st);
	(void)stat(argv[2], &st);
	if (chmod(argv[2], 0) != 0)
		return 3;
	for (int i = 0; i < 2; i++) {
		if (stat(argv[2], &st) != 0)
			return 4;
		m[i] = st.st_mode & 07777;
	}
	printf("%o %o\n", m[0], m[1]);
	return 0;
}

static void test_fakeroot_before_shim_in_preload_sees_faked_mode(void **state)
{
	char d[PLEN], f[PLEN], self[PATH_MAX], on[64], off[64], pre[PATH_MAX + 64], base[PATH_MAX];
	char pre_off[PATH_MAX + 64];
	const char *shim = getenv("RCUWALK_TEST_SHIM");
	char *argv_on[] = { (char *)"/usr/bin/fakeroot", (char *)"--", (char *)"/usr/bin/env", pre, self,
			    (char *)"--fakeroot-mode", f, NULL };
	char *argv_off[] = { (char *)"/usr/bin/fakeroot", (char *)"--", (char *)"/usr/bin/env", pre_off,
			     self, (char *)"--fakeroot-mode", f, NULL };
	const char *cur = getenv("LD_PRELOAD");
	const char *at;
	int s_on, s_off;

	(void)state;
	if (access("/usr/bin/fakeroot", X_OK) != 0) {
		print_message("no /usr/bin/fakeroot: the environment test above covers detection\n");
		return;
	}
	assert_non_null(shim);
	assert_non_null(cur);
	assert_non_null(strstr(cur, shim));
	make_dir(d, "fakeroot");
	xfmt(f, sizeof f, "%s/f", d);
	self_path(self, sizeof self);
	/* The shim first (after a sanitizer runtime, if any), libfakeroot
	 * behind it: our stat() wrapper is called first and must hand the call
	 * on.  (fakeroot itself puts its library first, where the shim's
	 * answers reach the program through it.) */
	xfmt(pre, sizeof pre, "LD_PRELOAD=%s:libfakeroot-sysv.so", cur);
	/* Without the shim: the same list less the shim (a sanitizer runtime
	 * must stay first). */
	at = strstr(cur, shim);
	xfmt(base, sizeof base, "%.*s", (int)(at - cur), cur);
	xfmt(pre_off, sizeof pre_off, "LD_PRELOAD=%slibfakeroot-sysv.so", base);
	s_on = run_self(argv_on, NULL, "LD_PRELOAD=", on, sizeof on);
	assert_int_equal(raw_file(f, 0644), 0);
	s_off = run_self(argv_off, NULL, "LD_PRELOAD=", off, sizeof off);
	print_message("fakeroot chmod 0: with the shim \"%.*s\" (0x%x), without \"%.*s\" (0x%x)\n",
		      (int)strcspn(on, "\n"), on, s_on, (int)strcspn(off, "\n"), off, s_off);
	assert_int_equal(s_on, 0);
	assert_int_equal(s_off, 0);
	assert_string_equal(on, off);
	assert_string_equal(off, "0 0\n");
}

/* ------------------------------------------------------------------------ */
/* 4. A program that uses inotify itself. */

static void test_inotifywait_under_shim_sees_create_event(void **state)
{
	char d[PLEN], f[PLEN], buf[1024];
	int out[2], err[2], status;
	size_t got = 0;
	pid_t pid;

	(void)state;
	if (access("/usr/bin/inotifywait", X_OK) != 0)
		fail_msg("inotify-tools is a declared dependency of the tests: /usr/bin/inotifywait missing");
	make_dir(d, "inotifywait");
	xfmt(f, sizeof f, "%s/created-while-watched", d);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	watchdog(30, "inotifywait under the shim");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)"/usr/bin/inotifywait", (char *)"-e", (char *)"create",
				 (char *)"--format", (char *)"%e %f", d, NULL };

		dup2(out[1], 1);
		dup2(err[1], 2);
		execve(argv[0], argv, environ); /* LD_PRELOAD: the shim */
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	/* "Watches established." on stderr: the watch is in place */
	while (!strstr(buf, "Watches established")) {
		long r = read(err[0], buf + got, sizeof buf - 1 - got);

		assert_true(r > 0);
		got += (size_t)r;
		buf[got] = '\0';
	}
	assert_int_equal(raw_file(f, 0644), 0);
	got = 0;
	for (;;) {
		long r = read(out[0], buf + got, sizeof buf - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	alarm(0);
	close(out[0]);
	close(err[0]);
	print_message("inotifywait printed \"%.*s\", status 0x%x\n", (int)strcspn(buf, "\n"), buf, status);
	assert_int_equal(status, 0);
	assert_string_equal(buf, "CREATE created-while-watched\n");
}

/* ------------------------------------------------------------------------ */

static int group_setup(void **state)
{
	return scratch_setup_alarm(state, on_alarm);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--reader-leaves") == 0)
		return reader_leaves_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--unshare-user") == 0)
		return unshare_user_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--setns-user") == 0)
		return setns_user_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--stat-loop") == 0)
		return stat_loop_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--fakeroot-mode") == 0)
		return fakeroot_mode_main(argc, argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_of_shim_fd_is_ebadf_and_keeps_it),
		cmocka_unit_test(test_shim_fd_closed_reader_thread_leaves),
		cmocka_unit_test(test_dup2_over_shim_fd_never_reads_host_data),
		cmocka_unit_test(test_dup3_over_shim_fd_never_reads_host_data),
		cmocka_unit_test(test_dup2_with_bad_oldfd_leaves_shim_fd_open),
		cmocka_unit_test(test_close_range_over_shim_fd_then_host_reuse_never_read),
		cmocka_unit_test(test_close_range_cloexec_leaves_shim_fd_open),
		cmocka_unit_test(test_closefrom_over_shim_fd_then_host_reuse_never_read),
		cmocka_unit_test(test_close_loop_from_3_over_shim_fd_then_host_reuse_never_read),
		cmocka_unit_test(test_shim_fd_closed_from_signal_handler_no_deadlock),
		cmocka_unit_test(test_unshare_newuser_after_cached_lookups_same_as_without_shim),
		cmocka_unit_test(test_setns_user_after_cached_lookups_same_as_without_shim),
		cmocka_unit_test(test_unshare_command_under_shim_same_as_without),
		cmocka_unit_test(test_chroot_forgets_cached_root),
		cmocka_unit_test(test_mount_and_umount_over_cached_dir_forget_it),
		cmocka_unit_test(test_capset_dropping_dac_override_forgets_access_answers),
		cmocka_unit_test(test_credential_drop_to_nobody_makes_cached_path_eacces),
		cmocka_unit_test(test_seteuid_nobody_and_back_answers_follow_identity),
		cmocka_unit_test(test_vfork_exec_child_runs_and_its_create_is_seen),
		cmocka_unit_test(test_posix_spawn_child_runs_and_its_create_is_seen),
		cmocka_unit_test(test_fakeroot_env_stat_never_answered_from_cache),
		cmocka_unit_test(test_fakeroot_before_shim_in_preload_sees_faked_mode),
		cmocka_unit_test(test_inotifywait_under_shim_sees_create_event),
	};
	return cmocka_run_group_tests(tests, group_setup, scratch_teardown);
}
