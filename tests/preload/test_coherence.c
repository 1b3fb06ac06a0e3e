/* SPDX-License-Identifier: MIT */
/*
 * test_coherence.c - answers given through the shim follow the filesystem:
 *
 *   - changes made by an unrelated process become visible asynchronously
 *     (inotify) within 1 s; the observed delays are printed;
 *   - changes made by a child are exact as soon as waitpid() returns;
 *   - this process's own mutations are exact as soon as the call returns;
 *   - fork() with busy threads neither deadlocks nor corrupts either cache;
 *   - lookups from a signal handler neither deadlock nor lie;
 *   - RCUWALK_DISABLE=1 turns the shim into a pass-through.
 *
 * Every check compares what libc returns through the shim with the raw
 * syscall(2) answer at the same moment (st_atim is never compared: the
 * contract lets it lag).
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 *
 * The binary is also its own helper process, chosen by argv[1]; helpers are
 * started with fork + execve("/proc/self/exe") and RCUWALK_DISABLE=1, and
 * touch the filesystem with raw syscalls only, so they are outside the
 * shim's bookkeeping:
 *   --mutator CMDFD ACKFD      applies the mutations it reads from CMDFD, one
 *                              at a time, and acknowledges each on ACKFD with
 *                              its CLOCK_MONOTONIC completion time; keeps
 *                              running (then sleeps) until killed.
 *   --mutate-once OP ARG A [B] applies one mutation and exits.
 *   --lookups DIR              stat/access/open on DIR/f and DIR/missing,
 *                              each checked against the raw syscall; exit(0)
 *                              so that RCUWALK_STATS is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

extern char **environ;

#define FOREIGN_LIMIT_S 1.0      /* contract: "well under 1 s" */
#define CYCLES 200               /* create/delete cycles for the delay distribution */
#define SYNC_REPS 1000           /* fork+exec children checked at waitpid() (the issue: 1000) */
#define FORKS 50
#define FORK_THREADS 3
#define SIGNALS 2000

/* ------------------------------------------------------------------------ */
/* Watchdog: nothing may hang.  A "soft" alarm first only interrupts (EINTR,
 * no SA_RESTART) so that a guarded waitpid() can return and the test fail
 * cleanly; if nothing returns within 5 more seconds, or for a hard alarm,
 * the process reports the stage, kills its helpers and exits 1. */

static volatile sig_atomic_t g_alarm_fired;
static volatile sig_atomic_t g_alarm_soft;
static const char *volatile g_stage = "";
static volatile pid_t g_mutator_pid;
static volatile pid_t g_child_pid;

static void on_alarm(int sig)
{
	(void)sig;
	g_alarm_fired = 1;
	if (g_alarm_soft) {
		g_alarm_soft = 0;
		alarm(5);
		return;
	}
	raw_puts(2, "test_coherence: watchdog expired (deadlock or hang) in: ");
	raw_puts(2, (const char *)g_stage);
	raw_puts(2, "\n");
	if (g_child_pid > 0)
		kill(g_child_pid, SIGKILL);
	if (g_mutator_pid > 0)
		kill(g_mutator_pid, SIGKILL);
	/* remove the scratch dir: raw fork (no atfork handlers, no shim) + exec */
	if (g_scratch[0] && syscall(SYS_fork) == 0) {
		char *const rm[] = {(char *)"rm", (char *)"-rf", g_scratch, NULL};
		char *const noenv[] = {NULL};
		execve("/bin/rm", rm, noenv);
		_exit(127);
	}
	_exit(1);
}

static void watchdog(unsigned secs, const char *stage, int soft)
{
	g_stage = stage;
	g_alarm_fired = 0;
	g_alarm_soft = soft;
	alarm(secs);
}

static void watchdog_off(void)
{
	alarm(0);
	g_alarm_soft = 0;
	g_stage = "";
}

/* Before a hung child is killed: what each of its threads waits in, for
 * the log (a hang seen once in CI's ASan run, never reproduced): its
 * /proc/PID/task/TID/{comm,wchan,syscall,stack} (stack needs root), then
 * `gdb -batch` with every thread's backtrace where gdb is installed. */
static void dump_hung(pid_t pid)
{
	static const char *const what[] = { "comm", "wchan", "syscall", "stack" };
	char cmd[256];

	print_error("hung child %d, its threads:\n", (int)pid);
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		snprintf(cmd, sizeof cmd,
			 "for t in /proc/%d/task/*; do echo \"== $t %s\"; cat $t/%s; echo; done 1>&2",
			 (int)pid, what[i], what[i]);
		if (system(cmd) != 0)
			print_error("(%s: not read)\n", what[i]);
	}
	snprintf(cmd, sizeof cmd,
		 "command -v gdb >/dev/null && timeout 60 gdb -p %d -batch -nx "
		 "-ex 'thread apply all bt' 1>&2 </dev/null", (int)pid);
	if (system(cmd) != 0)
		print_error("(no gdb backtrace)\n");
}

/* ------------------------------------------------------------------------ */
/* Paths and raw (shim-bypassing) helpers. */

__attribute__((format(printf, 2, 3)))
static void sp(char *out, const char *fmt, ...)
{
	char rel[PLEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(rel, sizeof rel, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && n < (int)sizeof rel);
	n = snprintf(out, PLEN, "%s/%s", g_scratch, rel);
	assert_true(n > 0 && n < PLEN);
}

/* dir + "/" + rel, or dir itself for rel "". */
static void jp(char *out, const char *dir, const char *rel)
{
	int n = rel[0] ? snprintf(out, PLEN, "%s/%s", dir, rel) : snprintf(out, PLEN, "%s", dir);
	assert_true(n > 0 && n < PLEN);
}

struct pset {
	char buf[24][PLEN];
	const char *p[25];
	size_t n;
};

static void pset_add(struct pset *ps, const char *dir, const char *rel)
{
	assert_true(ps->n < 24);
	jp(ps->buf[ps->n], dir, rel);
	ps->p[ps->n] = ps->buf[ps->n];
	ps->n++;
	ps->p[ps->n] = NULL;
}

static void mkdir_or_fail(const char *p)
{
	if (raw_mkdir(p) != 0)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

static void raw_file(const char *p, const char *content, mode_t mode)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		fail_msg("create %s: %s", p, strerror(errno));
	if (content[0])
		assert_int_equal(syscall(SYS_write, fd, content, strlen(content)), (long)strlen(content));
	syscall(SYS_close, fd);
	assert_int_equal(syscall(SYS_fchmodat, AT_FDCWD, p, mode), 0);
}

/* ------------------------------------------------------------------------ */
/* One observation of a path: stat, lstat, access(F_OK), access(X_OK) and
 * open(O_RDONLY), either through libc (the shim) or with raw syscalls. */

struct pathobs {
	struct sres st;
	struct sres lst;
	int acc, acc_err;
	int accx, accx_err;
	int opn, opn_err;
};

static void pathobs_shim(const char *p, struct pathobs *o)
{
	int fd;

	memset(o, 0, sizeof *o);
	errno = 0;
	o->st.rc = stat(p, &o->st.st);
	o->st.err = o->st.rc ? errno : 0;
	errno = 0;
	o->lst.rc = lstat(p, &o->lst.st);
	o->lst.err = o->lst.rc ? errno : 0;
	errno = 0;
	o->acc = access(p, F_OK);
	o->acc_err = o->acc ? errno : 0;
	errno = 0;
	o->accx = access(p, X_OK);
	o->accx_err = o->accx ? errno : 0;
	errno = 0;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	o->opn = fd >= 0 ? 0 : -1;
	o->opn_err = fd >= 0 ? 0 : errno;
	if (fd >= 0)
		close(fd);
}

static void pathobs_raw(const char *p, struct pathobs *o)
{
	long fd;

	memset(o, 0, sizeof *o);
	o->st.rc = (int)raw_stat(p, &o->st.st, 0);
	o->st.err = o->st.rc ? errno : 0;
	o->lst.rc = (int)raw_stat(p, &o->lst.st, AT_SYMLINK_NOFOLLOW);
	o->lst.err = o->lst.rc ? errno : 0;
	o->acc = (int)syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, 0);
	o->acc_err = o->acc ? errno : 0;
	o->accx = (int)syscall(SYS_faccessat2, AT_FDCWD, p, X_OK, 0);
	o->accx_err = o->accx ? errno : 0;
	fd = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
	o->opn = fd >= 0 ? 0 : -1;
	o->opn_err = fd >= 0 ? 0 : errno;
	if (fd >= 0)
		syscall(SYS_close, fd);
}

static int pathobs_diff(const struct pathobs *s, const struct pathobs *k, char *buf, size_t n)
{
	return sres_diff("stat", &s->st, &k->st, buf, n) ||
	       sres_diff("lstat", &s->lst, &k->lst, buf, n) ||
	       rc_diff("access(F_OK)", s->acc, s->acc_err, k->acc, k->acc_err, buf, n) ||
	       rc_diff("access(X_OK)", s->accx, s->accx_err, k->accx, k->accx_err, buf, n) ||
	       rc_diff("open(O_RDONLY)", s->opn, s->opn_err, k->opn, k->opn_err, buf, n);
}

/* Shim answers for `p` now, compared with the kernel's right after. */
static int check_now(const char *p, char *buf, size_t n)
{
	struct pathobs s, k;
	char d[600];

	pathobs_shim(p, &s);
	pathobs_raw(p, &k);
	if (!pathobs_diff(&s, &k, d, sizeof d))
		return 0;
	if (snprintf(buf, n, "%s: %s", p, d) >= (int)n && n > 4)
		memcpy(buf + n - 4, "...", 4); /* cut: say so */
	return 1;
}

/* Look every path up through the shim (twice: populate, then hit). */
static void prime(const char *const *paths)
{
	struct pathobs o;

	for (size_t i = 0; paths[i]; i++) {
		pathobs_shim(paths[i], &o);
		pathobs_shim(paths[i], &o);
	}
}

/* Own-mutation check: every path answers exactly now.  Returns mismatches,
 * each printed with `what`. */
static int own_check(const char *what, const char *const *paths)
{
	char buf[1024];
	int bad = 0;

	for (size_t i = 0; paths[i]; i++) {
		if (check_now(paths[i], buf, sizeof buf)) {
			print_error("STALE after %s: %s\n", what, buf);
			bad++;
		}
	}
	return bad;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_delays(const char *what, const double *v, size_t n)
{
	double *c;

	if (n == 0) {
		print_message("delay %-34s n=0\n", what);
		return;
	}
	c = malloc(n * sizeof *c);
	assert_non_null(c);
	memcpy(c, v, n * sizeof *c);
	qsort(c, n, sizeof *c, cmp_double);
	print_message("delay %-34s n=%-4zu min=%8.3f ms  median=%8.3f ms  max=%8.3f ms\n",
		      what, n, c[0] * 1e3, c[n / 2] * 1e3, c[n - 1] * 1e3);
	free(c);
}

/* ------------------------------------------------------------------------ */
/* Mutations applied by helper processes, with raw syscalls only. */

enum mop {
	MOP_RENAME = 1,
	MOP_UNLINK,
	MOP_RMDIR,
	MOP_CREATE, /* O_EXCL create, then write `arg` bytes */
	MOP_MKDIR,
	MOP_CHMOD,  /* mode `arg` */
	MOP_APPEND, /* append `arg` bytes */
	MOP_LINK,
};

struct mmsg {
	int32_t op;
	int32_t arg;
	char a[PLEN];
	char b[PLEN];
};

struct mack {
	int32_t err;
	int32_t pad;
	int64_t sec;
	int64_t nsec;
};

static const char g_fill[8192];

static int mop_run(int op, int arg, const char *a, const char *b)
{
	long r = -1, fd;
	int e = 0;

	errno = 0;
	switch (op) {
	case MOP_RENAME:
		r = syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 0);
		break;
	case MOP_UNLINK:
		r = syscall(SYS_unlinkat, AT_FDCWD, a, 0);
		break;
	case MOP_RMDIR:
		r = syscall(SYS_unlinkat, AT_FDCWD, a, AT_REMOVEDIR);
		break;
	case MOP_MKDIR:
		r = syscall(SYS_mkdirat, AT_FDCWD, a, 0755);
		break;
	case MOP_CHMOD:
		r = syscall(SYS_fchmodat, AT_FDCWD, a, (mode_t)arg);
		break;
	case MOP_LINK:
		r = syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0);
		break;
	case MOP_CREATE:
	case MOP_APPEND:
		fd = syscall(SYS_openat, AT_FDCWD, a,
			     op == MOP_CREATE ? O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
					      : O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			break;
		r = 0;
		if (arg > 0 && syscall(SYS_write, fd, g_fill, (size_t)arg) != arg) {
			e = errno ? errno : EIO;
			r = -1;
		}
		syscall(SYS_close, fd);
		if (e)
			errno = e;
		break;
	default:
		errno = EINVAL;
		break;
	}
	return r < 0 ? (errno ? errno : EIO) : 0;
}

static int raw_io_full(long nr, int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		long r = syscall(nr, fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int mutator_main(int argc, char **argv)
{
	struct mmsg m;
	struct mack k;
	struct timespec t;
	int cmd, ack;

	if (argc != 4)
		return 2;
	cmd = atoi(argv[2]);
	ack = atoi(argv[3]);
	for (;;) {
		if (raw_io_full(SYS_read, cmd, &m, sizeof m) != 0)
			break;
		m.a[PLEN - 1] = m.b[PLEN - 1] = '\0';
		memset(&k, 0, sizeof k);
		k.err = mop_run(m.op, m.arg, m.a, m.b);
		clock_gettime(CLOCK_MONOTONIC, &t);
		k.sec = t.tv_sec;
		k.nsec = t.tv_nsec;
		if (raw_io_full(SYS_write, ack, &k, sizeof k) != 0)
			break;
	}
	for (;;)
		pause(); /* keep running until killed */
}

static int mutate_once_main(int argc, char **argv)
{
	if (argc != 5 && argc != 6)
		return 2;
	return mop_run(atoi(argv[2]), atoi(argv[3]), argv[4], argc == 6 ? argv[5] : "") ? 1 : 0;
}

/* Environment for a helper: ours minus RCUWALK_DISABLE/RCUWALK_STATS, plus
 * RCUWALK_DISABLE=1 if `disable`, plus `extra` (may be NULL). */
static char **make_env(int disable, const char *extra)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof *env);
	assert_non_null(env);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(environ[i], "RCUWALK_DISABLE=", 16) == 0 ||
		    strncmp(environ[i], "RCUWALK_STATS=", 14) == 0)
			continue;
		env[j++] = environ[i];
	}
	if (disable)
		env[j++] = (char *)"RCUWALK_DISABLE=1";
	if (extra)
		env[j++] = (char *)extra;
	env[j] = NULL;
	return env;
}

/* spawn_self("test_coherence", ...): the fds keep1/keep2 (or -1) survive the
 * exec; the helper dies with us.  A failed fork fails the test. */
static pid_t spawn_helper(const char *const *args, char **envp, int keep1, int keep2)
{
	pid_t pid = spawn_self("test_coherence", args, envp, keep1, keep2);

	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	return pid;
}

struct mutator {
	pid_t pid;
	int cmd; /* our write end */
	int ack; /* our read end */
	char **env;
};

static void mutator_start(struct mutator *mu)
{
	int c[2], a[2];
	char cs[16], as[16];
	const char *args[4];

	assert_int_equal(pipe2(c, O_CLOEXEC), 0);
	assert_int_equal(pipe2(a, O_CLOEXEC), 0);
	snprintf(cs, sizeof cs, "%d", c[0]);
	snprintf(as, sizeof as, "%d", a[1]);
	args[0] = "--mutator";
	args[1] = cs;
	args[2] = as;
	args[3] = NULL;
	mu->env = make_env(1, NULL);
	mu->pid = spawn_helper(args, mu->env, c[0], a[1]);
	g_mutator_pid = mu->pid;
	close(c[0]);
	close(a[1]);
	mu->cmd = c[1];
	mu->ack = a[0];
}

static void mutator_stop(struct mutator *mu)
{
	if (mu->pid > 0) {
		close(mu->cmd);
		close(mu->ack);
		kill(mu->pid, SIGKILL);
		waitpid(mu->pid, NULL, 0);
		mu->pid = 0;
		g_mutator_pid = 0;
	}
	free(mu->env);
	mu->env = NULL;
}

/* Ask the mutator for one change; returns its errno (0 = done) and, in
 * *done, when the change was complete (the child's CLOCK_MONOTONIC). */
static int mutator_do(struct mutator *mu, int op, int arg, const char *a, const char *b,
		      struct timespec *done)
{
	struct mmsg m;
	struct mack k;

	memset(&m, 0, sizeof m);
	m.op = op;
	m.arg = arg;
	snprintf(m.a, sizeof m.a, "%s", a);
	snprintf(m.b, sizeof m.b, "%s", b ? b : "");
	watchdog(10, "waiting for the mutator's acknowledgement", 0);
	if (raw_io_full(SYS_write, mu->cmd, &m, sizeof m) != 0 ||
	    raw_io_full(SYS_read, mu->ack, &k, sizeof k) != 0) {
		watchdog_off();
		fail_msg("mutator process died (pipe: %s)", strerror(errno));
	}
	watchdog_off();
	done->tv_sec = (time_t)k.sec;
	done->tv_nsec = (long)k.nsec;
	return k.err;
}

/*
 * Poll the shim until every path answers as the kernel does now (the kernel's
 * answer is taken once: nothing changes any more).  Returns the delay in
 * seconds from t0 to the end of the first fully matching pass, or -1 when no
 * pass matched within `limit` seconds (why: the last difference seen).
 */
static double poll_exact(const char *const *paths, const struct timespec *t0, double limit,
			 char *why, size_t whylen)
{
	struct pathobs exp[24], got;
	struct timespec t;
	char d[600];
	size_t n;

	for (n = 0; paths[n]; n++) {
		assert_true(n < 24);
		pathobs_raw(paths[n], &exp[n]);
	}
	for (;;) {
		size_t i;

		for (i = 0; i < n; i++) {
			pathobs_shim(paths[i], &got);
			if (pathobs_diff(&got, &exp[i], d, sizeof d))
				break;
		}
		now(&t);
		if (i == n)
			return ts_diff(t0, &t);
		if (ts_diff(t0, &t) > limit) {
			snprintf(why, whylen, "%s: %s", paths[i], d);
			return -1;
		}
		sched_yield();
	}
}

/* Every path must answer exactly before a change is made (sanity). */
static void assert_exact(const char *when, const char *const *paths)
{
	char buf[1024];

	for (size_t i = 0; paths[i]; i++)
		if (check_now(paths[i], buf, sizeof buf))
			fail_msg("wrong answer %s: %s", when, buf);
}

static int kill_helpers_teardown(void **state)
{
	(void)state;
	watchdog_off();
	if (g_mutator_pid > 0) {
		kill(g_mutator_pid, SIGKILL);
		waitpid(g_mutator_pid, NULL, 0);
		g_mutator_pid = 0;
	}
	if (g_child_pid > 0) {
		kill(g_child_pid, SIGKILL);
		waitpid(g_child_pid, NULL, 0);
		g_child_pid = 0;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* 1. Changes made by an unrelated process: asynchronous path. */

struct fstep {
	const char *name;
	int op;
	int arg;
	const char *a, *b;       /* relative to the test directory */
	const char *check[12];   /* relative; "" = the test directory itself */
};

static const struct fstep g_fsteps[] = {
	{"rename file", MOP_RENAME, 0, "ren_src", "ren_dst", {"", "ren_src", "ren_dst"}},
	{"rename file over existing", MOP_RENAME, 0, "rep_src", "rep_dst", {"", "rep_src", "rep_dst"}},
	{"delete file", MOP_UNLINK, 0, "del", NULL, {"", "del", "del/x"}},
	{"create file over cached negative", MOP_CREATE, 10, "new", NULL, {"", "new", "new/deeper"}},
	{"rename directory (whole subtree)", MOP_RENAME, 0, "dir", "dir2",
	 {"", "dir", "dir/sub", "dir/sub/x", "dir/sub/missing", "dir/sub/deep/e", "dir/z",
	  "dir2", "dir2/sub", "dir2/sub/x", "dir2/sub/missing", "dir2/sub/deep/e"}},
	{"mkdir over cached negative", MOP_MKDIR, 0, "newdir", NULL, {"", "newdir", "newdir/x"}},
	{"rmdir", MOP_RMDIR, 0, "emptydir", NULL, {"", "emptydir", "emptydir/x"}},
	{"chmod file 0644->0755", MOP_CHMOD, 0755, "chm", NULL, {"chm"}},
	{"chmod directory 0755->0700", MOP_CHMOD, 0700, "cdir", NULL, {"cdir", "cdir/f"}},
	{"append 100 bytes (size, mtime)", MOP_APPEND, 100, "app", NULL, {"app"}},
};
#define NFSTEPS (sizeof g_fsteps / sizeof g_fsteps[0])

static void t1_setup_tree(const char *d)
{
	char p[PLEN];

	mkdir_or_fail(d);
	jp(p, d, "ren_src"); raw_file(p, "rename me", 0644);
	jp(p, d, "rep_src"); raw_file(p, "src", 0644);
	jp(p, d, "rep_dst"); raw_file(p, "destination", 0644);
	jp(p, d, "del"); raw_file(p, "delete me", 0644);
	jp(p, d, "dir"); mkdir_or_fail(p);
	jp(p, d, "dir/sub"); mkdir_or_fail(p);
	jp(p, d, "dir/sub/deep"); mkdir_or_fail(p);
	jp(p, d, "dir/sub/x"); raw_file(p, "x", 0644);
	jp(p, d, "dir/sub/deep/e"); raw_file(p, "e", 0644);
	jp(p, d, "dir/z"); raw_file(p, "zz", 0644);
	jp(p, d, "emptydir"); mkdir_or_fail(p);
	jp(p, d, "chm"); raw_file(p, "chmod me", 0644);
	jp(p, d, "cdir"); mkdir_or_fail(p);
	jp(p, d, "cdir/f"); raw_file(p, "f", 0644);
	jp(p, d, "app"); raw_file(p, "hello", 0644);
}

static void test_foreign_process_mutations_visible_within_1s(void **state)
{
	char d[PLEN], a[PLEN], b[PLEN], why[1024];
	static char fails[16][1200];
	int nfail = 0;
	double step_delay[NFSTEPS];
	static double cyc_create[CYCLES], cyc_delete[CYCLES], all[2 * CYCLES + NFSTEPS];
	size_t nc = 0, nd = 0, nall = 0;
	struct mutator mu = {0};
	struct timespec done;
	struct pset ps;

	(void)state;
	sp(d, "t1");
	t1_setup_tree(d);
	mutator_start(&mu);

	for (size_t s = 0; s < NFSTEPS; s++) {
		const struct fstep *st = &g_fsteps[s];
		double dl;
		int err;

		memset(&ps, 0, sizeof ps);
		for (size_t j = 0; j < 12 && st->check[j]; j++)
			pset_add(&ps, d, st->check[j]);
		prime(ps.p);
		for (size_t j = 0; j < ps.n; j++) {
			if (check_now(ps.p[j], why, sizeof why)) {
				/* e.g. left over from an earlier step that never became visible */
				if (nfail < 16)
					snprintf(fails[nfail], sizeof fails[0],
						 "wrong answer before foreign '%s' (cache primed): %s",
						 st->name, why);
				nfail++;
				break;
			}
		}
		jp(a, d, st->a);
		if (st->b)
			jp(b, d, st->b);
		err = mutator_do(&mu, st->op, st->arg, a, st->b ? b : NULL, &done);
		if (err)
			fail_msg("mutator: %s failed: %s", st->name, strerror(err));
		dl = poll_exact(ps.p, &done, FOREIGN_LIMIT_S, why, sizeof why);
		step_delay[s] = dl;
		if (dl < 0) {
			if (nfail < 16)
				snprintf(fails[nfail], sizeof fails[0],
					 "foreign '%s' not visible within %.1f s; still: %s",
					 st->name, FOREIGN_LIMIT_S, why);
			nfail++;
		} else {
			all[nall++] = dl;
		}
	}

	/* create/delete cycles for the delay distribution */
	jp(a, d, "cyc");
	memset(&ps, 0, sizeof ps);
	pset_add(&ps, d, "");
	pset_add(&ps, d, "cyc");
	pset_add(&ps, d, "cyc/x");
	for (int i = 0; i < CYCLES && nfail < 5; i++) {
		for (int phase = 0; phase < 2; phase++) {
			double dl;
			int err;

			prime(ps.p);
			err = mutator_do(&mu, phase == 0 ? MOP_CREATE : MOP_UNLINK, i % 64, a, NULL, &done);
			if (err)
				fail_msg("mutator: cycle %d %s failed: %s", i,
					 phase == 0 ? "create" : "delete", strerror(err));
			dl = poll_exact(ps.p, &done, FOREIGN_LIMIT_S, why, sizeof why);
			if (dl < 0) {
				if (nfail < 16)
					snprintf(fails[nfail], sizeof fails[0],
						 "foreign %s (cycle %d) not visible within %.1f s; still: %s",
						 phase == 0 ? "create" : "delete", i, FOREIGN_LIMIT_S, why);
				nfail++;
				continue;
			}
			if (phase == 0)
				cyc_create[nc++] = dl;
			else
				cyc_delete[nd++] = dl;
			all[nall++] = dl;
		}
	}
	mutator_stop(&mu);

	for (size_t s = 0; s < NFSTEPS; s++) {
		if (step_delay[s] >= 0)
			print_message("delay %-34s %8.3f ms\n", g_fsteps[s].name, step_delay[s] * 1e3);
		else
			print_message("delay %-34s NOT VISIBLE within %.1f s\n", g_fsteps[s].name,
				      FOREIGN_LIMIT_S);
	}
	print_delays("create (cycles)", cyc_create, nc);
	print_delays("delete (cycles)", cyc_delete, nd);
	print_delays("all foreign changes", all, nall);
	for (int i = 0; i < nfail && i < 16; i++)
		print_error("%s\n", fails[i]);
	assert_int_equal(nfail, 0);
}

/* Hard links: the kernel reports a link-count change only to watches on the
 * inode itself, never to the parent directory; the contract still says the
 * answer must follow within the inotify latency. */
static void test_foreign_link_in_same_dir_updates_nlink_within_1s(void **state)
{
	char d[PLEN], a[PLEN], b[PLEN], why[1024];
	struct mutator mu = {0};
	struct timespec done;
	struct pset ps = {0};
	double dl;

	(void)state;
	sp(d, "tlink");
	mkdir_or_fail(d);
	jp(a, d, "a");
	jp(b, d, "a2");
	raw_file(a, "linked", 0644);
	pset_add(&ps, d, "");
	pset_add(&ps, d, "a");
	pset_add(&ps, d, "a2");
	prime(ps.p);
	assert_exact("before the foreign link", ps.p);
	mutator_start(&mu);
	assert_int_equal(mutator_do(&mu, MOP_LINK, 0, a, b, &done), 0);
	dl = poll_exact(ps.p, &done, FOREIGN_LIMIT_S, why, sizeof why);
	if (dl >= 0)
		print_message("delay %-34s %8.3f ms\n", "link a -> a2 (same dir)", dl * 1e3);
	/* and the unlink of the second name drops the count again */
	if (dl >= 0) {
		prime(ps.p);
		assert_int_equal(mutator_do(&mu, MOP_UNLINK, 0, b, NULL, &done), 0);
		dl = poll_exact(ps.p, &done, FOREIGN_LIMIT_S, why, sizeof why);
		if (dl >= 0)
			print_message("delay %-34s %8.3f ms\n", "unlink a2 (a's nlink 2->1)", dl * 1e3);
	}
	mutator_stop(&mu);
	if (dl < 0)
		fail_msg("foreign hard-link change not visible within %.1f s: %s", FOREIGN_LIMIT_S, why);
}

static void test_foreign_write_through_hardlink_in_other_dir_visible_within_1s(void **state)
{
	char d[PLEN], da[PLEN], db[PLEN], a[PLEN], b[PLEN], why[1024];
	struct mutator mu = {0};
	struct timespec done;
	struct pset ps = {0};
	double dl;

	(void)state;
	sp(d, "thl");
	mkdir_or_fail(d);
	jp(da, d, "A");
	jp(db, d, "B");
	mkdir_or_fail(da);
	mkdir_or_fail(db);
	jp(a, da, "a");
	jp(b, db, "b");
	raw_file(a, "shared inode", 0644);
	assert_int_equal(syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0), 0);
	pset_add(&ps, da, "a");
	prime(ps.p);
	assert_exact("before the foreign write", ps.p);
	mutator_start(&mu);
	assert_int_equal(mutator_do(&mu, MOP_APPEND, 100, b, NULL, &done), 0);
	dl = poll_exact(ps.p, &done, FOREIGN_LIMIT_S, why, sizeof why);
	mutator_stop(&mu);
	if (dl < 0)
		fail_msg("append through %s not visible through %s within %.1f s: %s", b, a,
			 FOREIGN_LIMIT_S, why);
	print_message("delay %-34s %8.3f ms\n", "append via other hard link", dl * 1e3);
}

/* ------------------------------------------------------------------------ */
/* 2. A child's changes are exact as soon as waitpid() returns. */

static void test_child_changes_exact_right_after_waitpid(void **state)
{
	char d[PLEN], f[PLEN], ops[16], args[16], why[1024], first[1200] = "";
	struct pset ps = {0};
	char **env;
	int stale_iters = 0, stale_answers = 0;

	(void)state;
	sp(d, "t2");
	mkdir_or_fail(d);
	jp(f, d, "f");
	pset_add(&ps, d, "");
	pset_add(&ps, d, "f");
	pset_add(&ps, d, "f/x");
	env = make_env(1, NULL);

	for (int i = 0; i < SYNC_REPS; i++) {
		int op = i % 3 == 0 ? MOP_CREATE : i % 3 == 1 ? MOP_APPEND : MOP_UNLINK;
		const char *argv[6] = {"--mutate-once", ops, args, f, NULL, NULL};
		struct pathobs got[3], exp[3];
		int status = 0, r, e, bad = 0;
		pid_t pid;

		snprintf(ops, sizeof ops, "%d", op);
		snprintf(args, sizeof args, "%d", 1 + i % 200);
		prime(ps.p);
		pid = spawn_helper(argv, env, -1, -1);
		g_child_pid = pid;
		watchdog(10, "waitpid() on a fork+exec child", 1);
		r = waitpid(pid, &status, 0);
		e = errno;
		/* no polling: the very first answers after waitpid() */
		for (size_t j = 0; j < ps.n; j++)
			pathobs_shim(ps.p[j], &got[j]);
		watchdog_off();
		if (r != pid) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			g_child_pid = 0;
			free(env);
			fail_msg("waitpid(%d) = %d (%s)%s", (int)pid, r, strerror(e),
				 g_alarm_fired ? ": child did not exit within 10 s" : "");
		}
		g_child_pid = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			free(env);
			fail_msg("child op %d on %s: status 0x%x", op, f, status);
		}
		for (size_t j = 0; j < ps.n; j++) {
			pathobs_raw(ps.p[j], &exp[j]);
			if (pathobs_diff(&got[j], &exp[j], why, sizeof why)) {
				stale_answers++;
				bad = 1;
				if (!first[0])
					snprintf(first, sizeof first, "iteration %d (op %s): %s: %s", i,
						 op == MOP_CREATE ? "create" : op == MOP_APPEND ? "append" : "delete",
						 ps.p[j], why);
			}
		}
		stale_iters += bad;
	}
	free(env);
	print_message("sync point: %d children, %d stale iterations, %d stale path answers\n",
		      SYNC_REPS, stale_iters, stale_answers);
	if (first[0])
		print_error("first stale answer: %s\n", first);
	assert_int_equal(stale_answers, 0);
}

/* ------------------------------------------------------------------------ */
/* 3. This process's own mutations through libc are exact on return. */

#define OWN(what, call, ...)                                                        \
	do {                                                                        \
		const char *const own_paths_[] = {__VA_ARGS__, NULL};               \
		int own_r_;                                                         \
		prime(own_paths_);                                                  \
		errno = 0;                                                          \
		own_r_ = (call);                                                    \
		if (own_r_ < 0)                                                     \
			fail_msg("%s failed: %s", what, strerror(errno));           \
		bad += own_check(what, own_paths_);                                 \
	} while (0)

static void test_own_mutations_exact_on_return(void **state)
{
	char d[PLEN], cwd[PLEN];
	char f_unl[PLEN], f_unl_x[PLEN], f_ren[PLEN], f_ren2[PLEN], f_rs[PLEN], f_rd[PLEN];
	char f_xc[PLEN], f_xc_x[PLEN], xdir[PLEN], xdir_x[PLEN], nd[PLEN], nd_x[PLEN], nd_in[PLEN];
	char ed[PLEN], ed_x[PLEN], of[PLEN], cf[PLEN], sl[PLEN], dang[PLEN], nowhere[PLEN];
	char f_chm[PLEN], f_tr[PLEN], f_wr[PLEN], f_ut[PLEN], f_ln[PLEN], f_ln2[PLEN], rel[PLEN];
	char rd[PLEN], rd_x[PLEN], rd2[PLEN], rd2_x[PLEN], symt[PLEN];
	struct timespec ts[2] = {{1000000000, 5}, {1234567890, 123456789}};
	int bad = 0, fd, cwdfd;

	(void)state;
	sp(d, "t3");
	mkdir_or_fail(d);
	jp(f_unl, d, "unl"); raw_file(f_unl, "u", 0644);
	jp(f_unl_x, d, "unl/x");
	jp(f_ren, d, "ren"); raw_file(f_ren, "r", 0644);
	jp(f_ren2, d, "ren2");
	jp(f_rs, d, "rep_src"); raw_file(f_rs, "src", 0644);
	jp(f_rd, d, "rep_dst"); raw_file(f_rd, "dst-longer", 0644);
	jp(f_xc, d, "xchg"); raw_file(f_xc, "xc", 0644);
	jp(f_xc_x, d, "xchg/x");
	jp(xdir, d, "xdir"); mkdir_or_fail(xdir);
	jp(xdir_x, d, "xdir/x"); raw_file(xdir_x, "in xdir", 0644);
	jp(nd, d, "nd");
	jp(nd_x, d, "nd/x");
	jp(nd_in, d, "nd/inner");
	jp(ed, d, "ed"); mkdir_or_fail(ed);
	jp(ed_x, d, "ed/x");
	jp(of, d, "of");
	jp(cf, d, "cf");
	jp(symt, d, "symtarget"); raw_file(symt, "target", 0644);
	jp(sl, d, "sl");
	jp(dang, d, "dang");
	jp(nowhere, d, "nowhere");
	jp(f_chm, d, "chm"); raw_file(f_chm, "c", 0644);
	jp(f_tr, d, "tr"); raw_file(f_tr, "0123456789012345678901234567890123456789", 0644);
	jp(f_wr, d, "wr"); raw_file(f_wr, "", 0644);
	jp(f_ut, d, "ut"); raw_file(f_ut, "t", 0644);
	jp(f_ln, d, "ln"); raw_file(f_ln, "l", 0644);
	jp(f_ln2, d, "ln2");
	jp(rel, d, "rel"); raw_file(rel, "relative", 0644);
	jp(rd, d, "rd"); mkdir_or_fail(rd);
	sp(rd_x, "t3/rd/sub"); mkdir_or_fail(rd_x);
	jp(rd_x, d, "rd/sub/x"); raw_file(rd_x, "deep", 0644);
	jp(rd2, d, "rd2");
	jp(rd2_x, d, "rd2/sub/x");

	OWN("unlink", unlink(f_unl), d, f_unl, f_unl_x);
	OWN("rename", rename(f_ren, f_ren2), d, f_ren, f_ren2);
	OWN("rename over existing", rename(f_rs, f_rd), d, f_rs, f_rd);
	OWN("renameat2(RENAME_EXCHANGE) file<->dir",
	    renameat2(AT_FDCWD, f_xc, AT_FDCWD, xdir, RENAME_EXCHANGE), d, f_xc, f_xc_x, xdir, xdir_x);
	OWN("rename directory", rename(rd, rd2), d, rd, rd_x, rd2, rd2_x);
	OWN("mkdir", mkdir(nd, 0755), d, nd, nd_x);
	OWN("open(O_CREAT) inside new dir", (fd = open(nd_in, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)),
	    nd, nd_in);
	close(fd);
	OWN("rmdir", rmdir(ed), d, ed, ed_x);
	OWN("open(O_CREAT)", (fd = open(of, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), d, of);
	OWN("write() 10 bytes on the O_CREAT fd", (int)write(fd, "0123456789", 10), of);
	OWN("close() of the written fd", close(fd), of);
	OWN("creat", (fd = creat(cf, 0640)), d, cf);
	close(fd);
	OWN("symlink", symlink("symtarget", sl), d, sl, symt);
	OWN("symlink (dangling)", symlink("nowhere", dang), d, dang, nowhere);
	OWN("open(O_CREAT) of a dangling symlink's target",
	    (fd = open(nowhere, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), d, dang, nowhere);
	close(fd);
	OWN("chmod", chmod(f_chm, 0751), f_chm);
	if (geteuid() == 0)
		OWN("chown", chown(f_chm, 1, 2), f_chm);
	OWN("truncate (shrink)", truncate(f_tr, 7), f_tr);
	OWN("truncate (grow)", truncate(f_tr, 100000), f_tr);
	fd = open(f_wr, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	OWN("write() 100 bytes", (int)write(fd, g_fill, 100), f_wr);
	OWN("write() 5000 bytes", (int)write(fd, g_fill, 5000), f_wr);
	close(fd);
	OWN("utimensat(times)", utimensat(AT_FDCWD, f_ut, ts, 0), f_ut);
	OWN("utimensat(NULL = now)", utimensat(AT_FDCWD, f_ut, NULL, 0), f_ut);
	OWN("link", link(f_ln, f_ln2), d, f_ln, f_ln2);

	/* cwd-relative: the same checks through relative names */
	assert_non_null(getcwd(cwd, sizeof cwd));
	cwdfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(cwdfd >= 0);
	assert_int_equal(chdir(d), 0);
	OWN("unlink (cwd-relative)", unlink("rel"), "rel", rel, ".", d);
	OWN("mkdir (cwd-relative)", mkdir("reldir", 0700), "reldir", "reldir/x", ".");
	assert_int_equal(fchdir(cwdfd), 0);
	close(cwdfd);

	assert_int_equal(bad, 0);
}

/* Mutations through fds this process opened for writing. */
static void test_own_fd_mutations_exact_on_return(void **state)
{
	char d[PLEN], f[PLEN];
	struct timespec ts[2] = {{1000000000, 7}, {1300000000, 987654321}};
	struct iovec iov[2] = {{(void *)g_fill, 300}, {(void *)g_fill, 4000}};
	int bad = 0, fd;

	(void)state;
	sp(d, "t3fd");
	mkdir_or_fail(d);
	jp(f, d, "f");
	raw_file(f, "initial contents", 0644);
	fd = open(f, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	OWN("pwrite", (int)pwrite(fd, g_fill, 10, 100), f);
	OWN("writev", (int)writev(fd, iov, 2), f);
	OWN("pwritev", (int)pwritev(fd, iov, 2, 20000), f);
	OWN("ftruncate", ftruncate(fd, 5), f);
	OWN("fallocate", fallocate(fd, 0, 0, 65536), f);
	OWN("fchmod", fchmod(fd, 0700), f);
	if (geteuid() == 0)
		OWN("fchown", fchown(fd, 3, 4), f);
	OWN("futimens", futimens(fd, ts), f);
	close(fd);
	assert_int_equal(bad, 0);
}

/* Mutations made by libc functions that call the kernel internally (stdio,
 * remove, mkfifo, mkstemp, mkdtemp). */
static void test_own_mutations_through_other_libc_calls_exact_on_return(void **state)
{
	char d[PLEN], f[PLEN], nf[PLEN], rmf[PLEN], fifo[PLEN], tmpl[PLEN], tmpd[PLEN];
	FILE *fp = NULL;
	int bad = 0, fd = -1;

	(void)state;
	sp(d, "t3libc");
	mkdir_or_fail(d);
	jp(f, d, "f");
	raw_file(f, "one hundred bytes? no, but more than five", 0644);
	jp(nf, d, "nf");
	jp(rmf, d, "rmf");
	raw_file(rmf, "remove me", 0644);
	jp(fifo, d, "fifo");
	jp(tmpl, d, "tmpXXXXXX");
	jp(tmpd, d, "dtmpXXXXXX");

	OWN("fopen(\"w\") truncating a cached file", (fp = fopen(f, "w")) ? 0 : -1, f);
	fputs("hello", fp);
	OWN("fclose after fputs", fclose(fp), f);
	OWN("fopen(\"w\") over a cached negative", (fp = fopen(nf, "w")) ? 0 : -1, d, nf);
	fclose(fp);
	OWN("remove", remove(rmf), d, rmf);
	OWN("mkfifo", mkfifo(fifo, 0644), d, fifo);
	OWN("mkstemp", (fd = mkstemp(tmpl)), d, tmpl);
	close(fd);
	OWN("mkdtemp", mkdtemp(tmpd) ? 0 : -1, d, tmpd);
	assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* 4. fork() from a process with a populated cache and busy threads. */

#define NSTABLE 24

static char g_stable[NSTABLE][PLEN];
static struct sres g_stable_snap[NSTABLE];
static atomic_int g_fork_stop;

struct fthr {
	pthread_t th;
	char dir[PLEN];
	atomic_long iters;
	long mismatches;
	char first[1200];
};

static void fthr_fail(struct fthr *t, const char *what, const char *detail)
{
	if (t->mismatches++ == 0) {
		size_t l = strlen(what) < 400 ? strlen(what) : 400;
		memcpy(t->first, what, l);
		t->first[l] = '\0';
		strncat(t->first, ": ", sizeof t->first - strlen(t->first) - 1);
		strncat(t->first, detail, sizeof t->first - strlen(t->first) - 1);
	}
}

static void *fork_stat_thread(void *arg)
{
	struct fthr *t = arg;
	char buf[1000], miss[PLEN], f[PLEN];

	xfmt(f, sizeof f, "%s/f", t->dir);
	for (long k = 0; !atomic_load(&g_fork_stop); k++) {
		for (int i = 0; i < NSTABLE; i++) {
			struct sres s;

			errno = 0;
			s.rc = stat(g_stable[i], &s.st);
			s.err = s.rc ? errno : 0;
			if (sres_diff("stat", &s, &g_stable_snap[i], buf, sizeof buf))
				fthr_fail(t, g_stable[i], buf);
		}
		if (k % 4 == 0) {
			struct stat st;

			xfmt(miss, sizeof miss, "%s/miss%ld", t->dir, k);
			if (stat(miss, &st) != -1 || errno != ENOENT)
				fthr_fail(t, miss, "not ENOENT");
		}
		if (k % 8 == 0) {
			struct stat st;
			int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

			if (fd < 0) {
				fthr_fail(t, f, "create failed");
			} else {
				close(fd);
				if (stat(f, &st) != 0)
					fthr_fail(t, f, "stat after own create fails");
				if (unlink(f) != 0)
					fthr_fail(t, f, "unlink failed");
				if (stat(f, &st) != -1 || errno != ENOENT)
					fthr_fail(t, f, "stat after own unlink is not ENOENT");
			}
		}
		atomic_fetch_add(&t->iters, 1);
	}
	return NULL;
}

/* Runs in the forked child: exit code 0 = all good, else which check failed. */
static int fork_child_work(int i, const char *kid)
{
	char miss[PLEN], buf[1000];
	struct pathobs s, k;
	long fd;

	for (int j = 0; j < NSTABLE; j++) {
		pathobs_shim(g_stable[j], &s);
		pathobs_raw(g_stable[j], &k);
		if (pathobs_diff(&s, &k, buf, sizeof buf))
			return 10;
	}
	for (int j = 0; j < 5; j++) {
		xfmt(miss, sizeof miss, "%s/cmiss%d_%d", g_scratch, i, j);
		pathobs_shim(miss, &s);
		pathobs_raw(miss, &k);
		if (pathobs_diff(&s, &k, buf, sizeof buf))
			return 11;
	}
	pathobs_shim(kid, &s);
	pathobs_raw(kid, &k);
	if (pathobs_diff(&s, &k, buf, sizeof buf) || s.st.rc != -1)
		return 12;
	fd = open(kid, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return 13;
	if (write((int)fd, "kid", 3) != 3)
		return 14;
	close((int)fd);
	pathobs_shim(kid, &s);
	pathobs_raw(kid, &k);
	if (pathobs_diff(&s, &k, buf, sizeof buf) || s.st.rc != 0 || s.st.st.st_size != 3)
		return 15;
	return 0;
}

static void test_fork_with_busy_threads_keeps_both_caches_exact(void **state)
{
	static struct fthr thr[FORK_THREADS];
	char d[PLEN], kids[PLEN], kid[PLEN], buf[1200];
	struct pset ps;
	int bad = 0;

	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	/* GCC 12's libasan takes no lock of its allocator around fork (LLVM
	 * added that in 17): a fork taken while a busy thread is inside malloc
	 * leaves the child's allocator locked, and its first malloc waits for
	 * ever (CI, stop 45: the child in futex_wait inside ASan's allocator
	 * region; once in ~8 runs).  The same test runs in the plain build. */
	print_message("skipped: ASan's allocator is not fork-safe beside busy threads\n");
	skip();
#endif
	sp(d, "t4");
	mkdir_or_fail(d);
	sp(kids, "t4/kids");
	mkdir_or_fail(kids);
	{
		char st[PLEN];
		sp(st, "t4/stable");
		mkdir_or_fail(st);
		sp(st, "t4/stable/sub");
		mkdir_or_fail(st);
	}
	for (int i = 0; i < NSTABLE; i++) {
		if (i < 12) {
			sp(g_stable[i], "t4/stable/f%d", i);
			raw_file(g_stable[i], i % 2 ? "odd" : "even file", 0644);
		} else if (i < 16) {
			sp(g_stable[i], "t4/stable/sub/g%d", i);
			raw_file(g_stable[i], "g", 0600);
		} else if (i == 16) {
			sp(g_stable[i], "t4/stable/sub");
		} else if (i == 17) {
			sp(g_stable[i], "t4/stable");
		} else {
			sp(g_stable[i], "t4/stable/%s%d", i % 2 ? "neg" : "sub/neg", i);
		}
	}
	for (int i = 0; i < NSTABLE; i++) {
		g_stable_snap[i].rc = (int)raw_stat(g_stable[i], &g_stable_snap[i].st, 0);
		g_stable_snap[i].err = g_stable_snap[i].rc ? errno : 0;
	}
	{
		const char *pp[NSTABLE + 1];
		for (int i = 0; i < NSTABLE; i++)
			pp[i] = g_stable[i];
		pp[NSTABLE] = NULL;
		prime(pp);
		assert_exact("before the forks", pp);
	}

	atomic_store(&g_fork_stop, 0);
	for (int t = 0; t < FORK_THREADS; t++) {
		memset(&thr[t], 0, sizeof thr[t]);
		sp(thr[t].dir, "t4/thr%d", t);
		mkdir_or_fail(thr[t].dir);
		assert_int_equal(pthread_create(&thr[t].th, NULL, fork_stat_thread, &thr[t]), 0);
	}
	for (int t = 0; t < FORK_THREADS; t++)
		while (atomic_load(&thr[t].iters) == 0)
			sched_yield();

	for (int i = 0; i < FORKS; i++) {
		struct pathobs got, exp;
		int status = 0, r, e;
		pid_t pid;

		xfmt(kid, sizeof kid, "%s/c%d", kids, i);
		pathobs_shim(kid, &got); /* cache the negative in the parent */
		pathobs_shim(kid, &got);
		watchdog(10, "fork() with 3 busy threads", 0);
		pid = fork();
		if (pid == 0)
			_exit(fork_child_work(i, kid));
		if (pid < 0) {
			atomic_store(&g_fork_stop, 1);
			fail_msg("fork: %s", strerror(errno));
		}
		g_child_pid = pid;
		watchdog(10, "waitpid() on a fork child", 1);
		r = waitpid(pid, &status, 0);
		e = errno;
		pathobs_shim(kid, &got);
		watchdog_off();
		if (r != pid) {
			int hung = g_alarm_fired;

			if (hung) {
				watchdog(120, "dumping a hung fork child", 0);
				dump_hung(pid);
			}
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			g_child_pid = 0;
			atomic_store(&g_fork_stop, 1);
			fail_msg("fork child %d (pid %d): waitpid = %d (%s)%s", i, (int)pid, r, strerror(e),
				 hung ? ": DEADLOCK, the child did not exit within 10 s" : "");
		}
		g_child_pid = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			atomic_store(&g_fork_stop, 1);
			fail_msg("fork child %d: status 0x%x (exit %d: 10 stable path wrong, 11 miss wrong, "
				 "12 kid negative wrong, 13/14 create failed, 15 own create not visible, "
				 "else signal %d)",
				 i, status, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
				 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		}
		pathobs_raw(kid, &exp);
		if (pathobs_diff(&got, &exp, buf, sizeof buf)) {
			print_error("STALE after waitpid() on fork child %d: %s: %s\n", i, kid, buf);
			bad++;
		}
	}

	atomic_store(&g_fork_stop, 1);
	watchdog(10, "joining the stat threads", 0);
	for (int t = 0; t < FORK_THREADS; t++)
		pthread_join(thr[t].th, NULL);
	watchdog_off();
	for (int t = 0; t < FORK_THREADS; t++) {
		print_message("fork: thread %d did %ld iterations, %ld wrong answers\n", t,
			      (long)atomic_load(&thr[t].iters), thr[t].mismatches);
		if (thr[t].mismatches) {
			print_error("thread %d first wrong answer: %s\n", t, thr[t].first);
			bad++;
		}
	}

	/* the parent's cache still answers exactly */
	for (int i = 0; i < NSTABLE; i++)
		if (check_now(g_stable[i], buf, sizeof buf)) {
			print_error("parent after forks: %s\n", buf);
			bad++;
		}
	for (int i = 0; i < FORKS; i++) {
		xfmt(kid, sizeof kid, "%s/c%d", kids, i);
		if (check_now(kid, buf, sizeof buf)) {
			print_error("parent after forks: %s\n", buf);
			bad++;
		}
	}
	memset(&ps, 0, sizeof ps);
	pset_add(&ps, d, "");
	pset_add(&ps, kids, "");
	for (int t = 0; t < FORK_THREADS; t++)
		pset_add(&ps, thr[t].dir, "f");
	bad += own_check("the forks", ps.p);
	assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------------------ */
/* 5. Lookups from a signal handler. */

#define SIG_NPATH 16
#define SIG_NDIRS 64

static char g_sig_pos[SIG_NPATH][PLEN];
static char g_sig_neg[SIG_NPATH][PLEN];
static char g_sig_dir[PLEN];
static volatile sig_atomic_t g_sig_calls;
static volatile sig_atomic_t g_sig_bad;
static volatile sig_atomic_t g_sig_first_kind;
static volatile sig_atomic_t g_sig_first_call;
static atomic_int g_sig_done;

static const char *const g_sig_kind[] = {
	"", "stat(cached file)", "stat(cached negative)", "stat(uncached name)",
	"stat(name in an unwatched dir)", "open(cached file)", "open(cached negative)",
	"access(cached file)", "lstat(uncached dir)",
};

static void sig_fail(int kind, int call)
{
	if (g_sig_bad++ == 0) {
		g_sig_first_kind = kind;
		g_sig_first_call = call;
	}
}

static int sig_same(int rs, int es, const struct stat *a, int rk, int ek, const struct stat *b)
{
	if (rs != rk || (rs != 0 && es != ek))
		return 0;
	if (rs != 0)
		return 1;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_size == b->st_size &&
	       a->st_uid == b->st_uid && a->st_blocks == b->st_blocks &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* async-signal-safe: dst = base + "/" + prefix + decimal(n) + suffix */
static void sig_path(char *dst, const char *base, const char *prefix, unsigned n, const char *suffix)
{
	char num[16];
	size_t k = 0, o = 0;

	do {
		num[k++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	for (const char *s = base; *s && o < PLEN - 40; s++)
		dst[o++] = *s;
	dst[o++] = '/';
	for (const char *s = prefix; *s; s++)
		dst[o++] = *s;
	while (k)
		dst[o++] = num[--k];
	for (const char *s = suffix; *s; s++)
		dst[o++] = *s;
	dst[o] = '\0';
}

static void sig_cmp_stat(int kind, int call, const char *p, int follow)
{
	struct stat a, b;
	int rs, es, rk, ek;

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	errno = 0;
	rs = follow ? stat(p, &a) : lstat(p, &a);
	es = errno;
	rk = (int)raw_stat(p, &b, follow ? 0 : AT_SYMLINK_NOFOLLOW);
	ek = errno;
	if (!sig_same(rs, es, &a, rk, ek, &b))
		sig_fail(kind, call);
}

static void on_usr1(int sig)
{
	int saved = errno;
	int call = g_sig_calls++;
	unsigned i = (unsigned)call % SIG_NPATH;
	char p[PLEN];
	int fd, rs, es, rk, ek;

	(void)sig;
	sig_cmp_stat(1, call, g_sig_pos[i], 1);
	sig_cmp_stat(2, call, g_sig_neg[i], 1);
	sig_path(p, g_sig_dir, "u", (unsigned)call, "");
	sig_cmp_stat(3, call, p, 1);
	sig_path(p, g_sig_dir, "h", (unsigned)call % SIG_NDIRS, "/x");
	sig_cmp_stat(4, call, p, 1);
	sig_path(p, g_sig_dir, "h", (unsigned)call % SIG_NDIRS, "");
	sig_cmp_stat(8, call, p, 0);

	errno = 0;
	fd = open(g_sig_pos[i], O_RDONLY | O_CLOEXEC);
	es = errno;
	if (fd < 0)
		sig_fail(5, call);
	else
		close(fd);
	errno = 0;
	fd = open(g_sig_neg[i], O_RDONLY | O_CLOEXEC);
	es = errno;
	if (fd >= 0) {
		close(fd);
		sig_fail(6, call);
	} else if (es != ENOENT) {
		sig_fail(6, call);
	}
	errno = 0;
	rs = access(g_sig_pos[i], R_OK);
	es = errno;
	rk = (int)syscall(SYS_faccessat2, AT_FDCWD, g_sig_pos[i], R_OK, 0);
	ek = errno;
	if (rs != rk || (rs && es != ek))
		sig_fail(7, call);
	errno = saved;
}

static void *sig_sender(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	for (int i = 0; i < SIGNALS; i++) {
		struct timespec ts = {0, 10000 + (i % 7) * 15000};

		pthread_kill(target, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	atomic_store(&g_sig_done, 1);
	return NULL;
}

static void test_lookups_in_signal_handler_no_deadlock_and_exact(void **state)
{
	struct sigaction sa, old;
	struct sres snap_pos[SIG_NPATH];
	char miss[PLEN], buf[1000];
	pthread_t self = pthread_self(), sender;
	long loops = 0, main_bad = 0;
	char first[2048] = "";

	(void)state;
	sp(g_sig_dir, "t5");
	mkdir_or_fail(g_sig_dir);
	for (int i = 0; i < SIG_NPATH; i++) {
		sp(g_sig_pos[i], "t5/p%d", i);
		raw_file(g_sig_pos[i], i % 2 ? "p" : "pp", 0644);
		sp(g_sig_neg[i], "t5/n%d", i);
		snap_pos[i].rc = (int)raw_stat(g_sig_pos[i], &snap_pos[i].st, 0);
		snap_pos[i].err = 0;
		assert_int_equal(snap_pos[i].rc, 0);
	}
	for (int j = 0; j < SIG_NDIRS; j++) {
		char p[PLEN];
		sp(p, "t5/h%d", j);
		mkdir_or_fail(p);
		if (j % 2 == 0) {
			sp(p, "t5/h%d/x", j);
			raw_file(p, "x", 0644);
		}
	}
	{
		const char *pp[2 * SIG_NPATH + 1];
		for (int i = 0; i < SIG_NPATH; i++) {
			pp[2 * i] = g_sig_pos[i];
			pp[2 * i + 1] = g_sig_neg[i];
		}
		pp[2 * SIG_NPATH] = NULL;
		prime(pp);
		assert_exact("before the signals", pp);
	}

	g_sig_calls = 0;
	g_sig_bad = 0;
	atomic_store(&g_sig_done, 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);

	watchdog(60, "stat() loop while a thread sends SIGUSR1 whose handler does lookups", 0);
	assert_int_equal(pthread_create(&sender, NULL, sig_sender, &self), 0);
	while (!atomic_load(&g_sig_done)) {
		for (int i = 0; i < SIG_NPATH; i++) {
			struct sres s;
			struct stat st;

			errno = 0;
			s.rc = stat(g_sig_pos[i], &s.st);
			s.err = s.rc ? errno : 0;
			if (sres_diff("stat", &s, &snap_pos[i], buf, sizeof buf) && main_bad++ == 0)
				xfmt(first, sizeof first, "%s: %s", g_sig_pos[i], buf);
			if (stat(g_sig_neg[i], &st) != -1 || errno != ENOENT) {
				if (main_bad++ == 0)
					xfmt(first, sizeof first, "%s: not ENOENT", g_sig_neg[i]);
			}
		}
		/* a miss: the writer side populates while signals arrive */
		xfmt(miss, sizeof miss, "%s/m%ld", g_sig_dir, loops);
		{
			struct stat st;
			if (stat(miss, &st) != -1 || errno != ENOENT) {
				if (main_bad++ == 0)
					xfmt(first, sizeof first, "%s: not ENOENT", miss);
			}
		}
		if (loops % 8 == 0) {
			int fd = open(g_sig_pos[loops % SIG_NPATH], O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				if (main_bad++ == 0)
					xfmt(first, sizeof first, "open %s failed",
						 g_sig_pos[loops % SIG_NPATH]);
			} else {
				close(fd);
			}
		}
		loops++;
	}
	pthread_join(sender, NULL);
	watchdog_off();
	sigaction(SIGUSR1, &old, NULL);

	print_message("signals: %d handler runs (of %d sent), %ld main-loop passes\n",
		      (int)g_sig_calls, SIGNALS, loops);
	if (g_sig_bad)
		print_error("handler: %d wrong answers; first: %s in handler run %d\n", (int)g_sig_bad,
			    g_sig_kind[g_sig_first_kind], (int)g_sig_first_call);
	if (main_bad)
		print_error("main loop: %ld wrong answers; first: %s\n", main_bad, first);
	assert_true(g_sig_calls > 0);
	assert_int_equal(g_sig_bad, 0);
	assert_int_equal(main_bad, 0);
}

/* ------------------------------------------------------------------------ */
/* 6. RCUWALK_DISABLE=1: pure pass-through. */

static int lookups_main(int argc, char **argv)
{
	char f[PLEN], m[PLEN], buf[1000];
	struct pathobs s, k;
	int bad = 0;

	if (argc != 3)
		return 2;
	snprintf(f, sizeof f, "%s/f", argv[2]);
	snprintf(m, sizeof m, "%s/missing", argv[2]);
	for (int i = 0; i < 50; i++) {
		pathobs_shim(f, &s);
		pathobs_raw(f, &k);
		bad |= pathobs_diff(&s, &k, buf, sizeof buf);
		pathobs_shim(m, &s);
		pathobs_raw(m, &k);
		bad |= pathobs_diff(&s, &k, buf, sizeof buf);
	}
	return bad ? 1 : 0; /* exit(): the shim writes RCUWALK_STATS */
}

struct stats_rec {
	int pid;
	unsigned long long hits, neg_hits, misses, passthrough, invalidations, saved;
};

/* Parse every line of `file`; returns the number of lines (0 if absent). */
static int read_stats(const char *file, struct stats_rec *out, int max, char *raw, size_t rawlen)
{
	long fd = syscall(SYS_openat, AT_FDCWD, file, O_RDONLY | O_CLOEXEC, 0);
	long n;
	int lines = 0;
	char *save = NULL;

	raw[0] = '\0';
	if (fd < 0)
		return 0;
	n = syscall(SYS_read, fd, raw, rawlen - 1);
	syscall(SYS_close, fd);
	assert_true(n >= 0);
	raw[n] = '\0';
	{
		char copy[4096];
		snprintf(copy, sizeof copy, "%s", raw);
		for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			struct stats_rec s;
			if (sscanf(l, "rcuwalk-stats v1 pid=%d hits=%llu neg_hits=%llu misses=%llu "
				   "passthrough=%llu invalidations=%llu saved=%llu",
				   &s.pid, &s.hits, &s.neg_hits, &s.misses, &s.passthrough,
				   &s.invalidations, &s.saved) != 7)
				fail_msg("malformed stats line in %s: '%s'", file, l);
			if (lines < max)
				out[lines] = s;
			lines++;
		}
	}
	return lines;
}

static pid_t run_lookups_child(const char *dir, int disable, const char *stats_env)
{
	const char *args[] = {"--lookups", dir, NULL};
	char **env = make_env(disable, stats_env);
	int status = 0, r;
	pid_t pid = spawn_helper(args, env, -1, -1);

	free(env);
	g_child_pid = pid;
	watchdog(20, "waitpid() on the --lookups child", 1);
	r = waitpid(pid, &status, 0);
	watchdog_off();
	if (r != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		g_child_pid = 0;
		fail_msg("--lookups child did not exit");
	}
	g_child_pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("--lookups child (disable=%d) got wrong answers or crashed: status 0x%x",
			 disable, status);
	return pid;
}

static void test_disable_env_makes_shim_pass_through(void **state)
{
	char d[PLEN], f[PLEN], sf_on[PLEN], sf_off[PLEN], env_on[PLEN + 16], env_off[PLEN + 16];
	char raw[4096];
	struct stats_rec s[4];
	pid_t pid;
	int n;

	(void)state;
	sp(d, "t6");
	mkdir_or_fail(d);
	jp(f, d, "f");
	raw_file(f, "looked up", 0644);
	jp(sf_on, d, "stats-enabled");
	jp(sf_off, d, "stats-disabled");
	snprintf(env_on, sizeof env_on, "RCUWALK_STATS=%s", sf_on);
	snprintf(env_off, sizeof env_off, "RCUWALK_STATS=%s", sf_off);

	/* control: the same child with the shim enabled does hit the cache */
	pid = run_lookups_child(d, 0, env_on);
	n = read_stats(sf_on, s, 4, raw, sizeof raw);
	assert_int_equal(n, 1);
	assert_int_equal(s[0].pid, pid);
	print_message("enabled child: %s", raw);
	assert_true(s[0].hits > 0);
	assert_true(s[0].neg_hits > 0);
	assert_int_equal(s[0].saved, s[0].hits + s[0].neg_hits);

	/* RCUWALK_DISABLE=1: preload_init() (preload/config.c) returns before it
	 * reads RCUWALK_STATS, so a disabled process writes no line at all: the
	 * file is never created. */
	pid = run_lookups_child(d, 1, env_off);
	n = read_stats(sf_off, s, 4, raw, sizeof raw);
	print_message("disabled child (pid %d): %s\n", (int)pid, n ? raw : "(no stats line)");
	assert_int_equal(n, 0);
	assert_int_equal(raw_stat(sf_off, &(struct stat){0}, 0), -1);
	assert_int_equal(errno, ENOENT);
}

/* ------------------------------------------------------------------------ */

static int group_setup(void **state)
{
	return scratch_setup_alarm(state, on_alarm);
}

/*
 * This process traced, as `strace -f -o LOG` with LOG in a directory it
 * watches traces it: a child writes a line to DIR/trace.log at each
 * system-call stop of this thread (trace_with_log), so that each read() of the
 * inotify instance queues the next event.  A sync point (an own mkdir, then its stat) still returns, and
 * exactly: the drain reads what was queued when it began (inval.c,
 * read_all_locked); before, it read until the queue was empty, which never
 * came while the tracing lasted (the tracer's TRACE_S).
 */

static void test_traced_process_holds_no_sync_point(void **state)
{
	char d[PLEN], log[PLEN], own[PLEN], miss[PLEN], why[1024] = "";
	pid_t self = getpid(), tracer = -1;
	int r, bad = 0;
	struct stat st;
	double t0, took;

	(void)state;
	sp(d, "t7");
	mkdir_or_fail(d);
	jp(log, d, "trace.log");
	jp(own, d, "own");
	jp(miss, d, "missing");
	for (int i = 0; i < 100; i++) /* the directory watched, a name cached absent */
		assert_int_equal(stat(miss, &st), -1);
	(void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: a child may */
	r = tracer_start(self, log, 1, &tracer);
	assert_true(r >= 0);
	if (r == 77) {
		print_message("skipped: ptrace of this process refused here\n");
		skip();
	}
	/* The feedback runs: this thread's own system calls grow the log. */
	memset(&st, 0, sizeof(st));
	for (t0 = mono_now(); mono_now() - t0 < 2.0;)
		if (syscall(SYS_newfstatat, AT_FDCWD, log, &st, 0) == 0 && st.st_size > 26 * 200)
			break;
	if (st.st_size <= 26 * 200) {
		kill(tracer, SIGKILL);
		waitpid(tracer, NULL, 0);
		fail_msg("the tracer wrote %lld bytes in 2 s", (long long)st.st_size);
	}
	watchdog(30, "a sync point while traced", 0);
	t0 = mono_now();
	if (mkdir(own, 0755) != 0 || stat(own, &st) != 0)
		bad++;
	took = mono_now() - t0;
	/* Still traced: the answers, against the raw calls. */
	bad += check_now(own, why, sizeof why) + check_now(miss, why, sizeof why);
	watchdog_off();
	kill(tracer, SIGKILL);
	waitpid(tracer, NULL, 0);
	print_message("traced: a sync point took %.3f ms (bound %.0f ms)%s%s\n", took * 1000.0,
		      TRACED_SYNC_BOUND_S * 1000.0, bad ? "; wrong: " : "", bad ? why : "");
	assert_int_equal(bad, 0);
	assert_true(took <= TRACED_SYNC_BOUND_S);
}

static int group_teardown(void **state)
{
	kill_helpers_teardown(NULL);
	return scratch_teardown(state);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--mutator") == 0)
		return mutator_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--mutate-once") == 0)
		return mutate_once_main(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--lookups") == 0)
		return lookups_main(argc, argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_foreign_process_mutations_visible_within_1s,
					  kill_helpers_teardown),
		cmocka_unit_test_teardown(test_foreign_link_in_same_dir_updates_nlink_within_1s,
					  kill_helpers_teardown),
		cmocka_unit_test_teardown(test_foreign_write_through_hardlink_in_other_dir_visible_within_1s,
					  kill_helpers_teardown),
		cmocka_unit_test_teardown(test_child_changes_exact_right_after_waitpid,
					  kill_helpers_teardown),
		cmocka_unit_test(test_own_mutations_exact_on_return),
		cmocka_unit_test(test_own_fd_mutations_exact_on_return),
		cmocka_unit_test(test_own_mutations_through_other_libc_calls_exact_on_return),
		cmocka_unit_test_teardown(test_fork_with_busy_threads_keeps_both_caches_exact,
					  kill_helpers_teardown),
		cmocka_unit_test(test_lookups_in_signal_handler_no_deadlock_and_exact),
		cmocka_unit_test(test_traced_process_holds_no_sync_point),
		cmocka_unit_test_teardown(test_disable_env_makes_shim_pass_through,
					  kill_helpers_teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
