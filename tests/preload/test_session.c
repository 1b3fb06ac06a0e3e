/* SPDX-License-Identifier: MIT */
/*
 * test_session.c - rcuwalk --session (doc/session.md, phase 1): the build's
 * processes share the watcher's inotify instance and stay exact.
 *
 * Each test runs the launcher (RCUWALK_LAUNCHER) with --session around this
 * binary in a helper mode (the "command"), which runs the scenario inside
 * the session and exits 0 if it held.  This binary exports its own
 * inotify_init1 (ENABLE_EXPORTS): the shim's call resolves to it, so a
 * process knows whether it ever created an instance of its own.
 *
 * Run with librcuwalk.so preloaded; without RCUWALK_TEST_SHIM or
 * RCUWALK_LAUNCHER it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <linux/fs.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"
#include "../cpu_lock.h"
#include "../unit/raw_listdir.h"
#include "inval.h"
#include "ring.h"

/* Paths here are short (below /tmp); a cut one would only fail a test. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define ROUNDS 200
#define TREE 20

static int n_init; /* calls of inotify_init1 in this process image */
static int n_init_ok; /* ... that returned an instance */

__attribute__((visibility("default"))) int inotify_init1(int flags);
int inotify_init1(int flags)
{
	int fd = (int)syscall(SYS_inotify_init1, flags);

	__atomic_fetch_add(&n_init, 1, __ATOMIC_RELAXED);
	if (fd >= 0)
		__atomic_fetch_add(&n_init_ok, 1, __ATOMIC_RELAXED);
	return fd;
}

/* A helper's exit status when the launcher started no session: its watcher
 * could not be made (an inotify instance: the user's max_user_instances is
 * shared with everything else the user runs, another test suite included).
 * The callers start the session again; only a lasting failure fails. */
#define NO_SESSION 75

static const char *self_exe(void)
{
	static char p[PLEN];
	ssize_t n = readlink("/proc/self/exe", p, sizeof(p) - 1);

	p[n > 0 ? n : 0] = '\0';
	return p;
}

/* A process that is not (or no longer) in the session where the test needs
 * it: retried by run_launcher (NO_SESSION), up to 10 times.  Not a pass: a
 * process that never attaches fails all ten.  Why retry: under load (CI
 * runs two suites at once on 2 CPUs) a watcher starved for 40 ms with
 * events queued is given up by design (liveness by progress, coherence.md
 * clause 4), and the process then has an instance of its own. */
#define LEFT_SESSION(...)                                                   \
	do {                                                                \
		fprintf(stderr, "[%d] ", (int)getpid());                    \
		fprintf(stderr, __VA_ARGS__);                               \
		fputs(" (retried)\n", stderr);                              \
		return NO_SESSION;                                          \
	} while (0)
#define FAIL(...)                                                           \
	do {                                                                \
		fprintf(stderr, "[%d] ", (int)getpid());                    \
		fprintf(stderr, __VA_ARGS__);                               \
		fputc('\n', stderr);                                        \
		return 1;                                                   \
	} while (0)

/* ---------------------------------------------------------------------- */
/* Helpers (run inside the session). */

struct fdscan {
	int fds[16], n;
};

static int add_inotify(void *arg, const char *name, size_t len)
{
	struct fdscan *s = arg;
	char p[64], t[64];
	long n;

	(void)len;
	snprintf(p, sizeof(p), "/proc/self/fd/%s", name);
	n = syscall(SYS_readlinkat, AT_FDCWD, p, t, sizeof(t) - 1);
	t[n > 0 ? n : 0] = '\0';
	if (!strcmp(t, "anon_inode:inotify") && s->n < 16)
		s->fds[s->n++] = atoi(name);
	return 0;
}

/* The inotify fds this process holds (a raw listing: the shim hides its own). */
static void scan_inotify(struct fdscan *s)
{
	memset(s, 0, sizeof(*s));
	raw_listdir("/proc/self/fd", 4096, add_inotify, s);
}

/* Whether instance fd holds a watch on inode ino ("inotify wd:.. ino:<hex>"). */
static int instance_watches(int fd, unsigned long ino)
{
	static char buf[1 << 18];
	char p[64], key[64];
	long f, n, len = 0;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	while (len < (long)sizeof(buf) - 1 &&
	       (n = syscall(SYS_read, f, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	syscall(SYS_close, f);
	buf[len] = '\0';
	snprintf(key, sizeof(key), " ino:%lx ", ino);
	return strstr(buf, key) != NULL;
}

static unsigned long n_checks; /* check_exact() calls in this process */

/* stat through the shim, and raw: identical?  0 or 1 (printed). */
static int check_exact(const char *p, const char *what, int round)
{
	struct obs a, b;
	char why[256];

	n_checks++;
	observe_shim(p, &a);
	observe_raw(p, &b);
	if (obs_diff(&a, &b, why, sizeof(why)))
		FAIL("%s round %d: %s: %s", what, round, p, why);
	return 0;
}

/* One change to p, by round: create, chmod, rename away and back, unlink. */
static void mutate(const char *p, int r)
{
	char q[PLEN];

	snprintf(q, sizeof(q), "%s.tmp", p);
	switch (r % 4) {
	case 0:
		close(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644));
		break;
	case 1:
		chmod(p, (r & 4) ? 0600 : 0640);
		break;
	case 2:
		if (write(open(p, O_WRONLY | O_APPEND | O_CLOEXEC), "x", 1) < 0)
			break;
		rename(p, q);
		break;
	default:
		rename(q, p);
		unlink(p);
		break;
	}
}

static pid_t spawn_helper(const char *mode, const char *a1, const char *a2)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(self_exe(), self_exe(), "--helper", mode, a1, a2, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* (a), one child: cached lookups below base/d<i>; the only inotify fd held
 * is the session's: none created here, and it holds child 0's watch. */
static int helper_tree_child(const char *base, int i)
{
	char d[PLEN], p[PLEN], d0[PLEN];
	struct fdscan s;
	struct stat st;

	snprintf(d, sizeof(d), "%s/d%d", base, i);
	snprintf(d0, sizeof(d0), "%s/d0", base);
	snprintf(p, sizeof(p), "%s/missing", d);
	for (int k = 0; k < 3; k++)
		if (stat(p, &st) == 0 || stat(d, &st) != 0)
			FAIL("child %d: lookups", i);
	if (n_init)
		FAIL("child %d called inotify_init1 %d times", i, n_init);
	scan_inotify(&s);
	if (s.n != 1)
		FAIL("child %d holds %d inotify fds", i, s.n);
	if (syscall(SYS_newfstatat, AT_FDCWD, d0, &st, 0) != 0 ||
	    !instance_watches(s.fds[0], (unsigned long)st.st_ino))
		FAIL("child %d: its instance has no watch on %s (not shared)", i, d0);
	return 0;
}

static int helper_tree(const char *base)
{
	char d[PLEN], n[16];

	for (int i = 0; i < TREE; i++) {
		snprintf(d, sizeof(d), "%s/d%d", base, i);
		mkdir(d, 0755);
	}
	for (int i = 0; i < TREE; i++) {
		snprintf(n, sizeof(n), "%d", i);
		if (reap(spawn_helper("tree-child", base, n)) != 0)
			FAIL("tree child %d failed", i);
	}
	return 0;
}

/* A child's change to p (round r), with lookups in p's directory before it
 * (the child's first: its listing may be the shared one its parent left)
 * and after it (its own change). */
static int helper_mutate(const char *p, int r)
{
	char q[PLEN], x[PLEN];

	snprintf(q, sizeof(q), "%s.tmp", p);
	snprintf(x, sizeof(x), "%s.none", p);
	if (check_exact(x, "child, first", r) || check_exact(p, "child, before", r) ||
	    check_exact(q, "child, before", r) || check_exact(x, "child, before", r))
		return 1;
	mutate(p, r);
	if (check_exact(p, "child, own change", r) || check_exact(q, "child, own change", r))
		return 1;
	return 0;
}

/* (b), and after the watcher's death (d): own changes exact right after the
 * call, a reaped child's right after waitpid. */
static int own_changes_only; /* kill-loop workers: see exact_rounds() */

static int exact_rounds(const char *base, int rounds, const char *tag)
{
	char p[PLEN], q[PLEN], rs[16];

	snprintf(p, sizeof(p), "%s/%s-f", base, tag);
	snprintf(q, sizeof(q), "%s.tmp", p);
	for (int r = 0; r < rounds; r++) {
		check_exact(p, "before", r); /* fills the cache */
		check_exact(q, "before", r);
		/* A kill-loop worker on an instance of its own makes its
		 * changes itself: exec'd children would each make an instance,
		 * whose teardown (deferred through io_uring) keeps it counted
		 * against the user's max_user_instances for a while, and a burst
		 * of them starved a test suite running beside this one. */
		if (r % 8 < 4 || (own_changes_only && n_init)) {
			mutate(p, r);
		} else {
			snprintf(rs, sizeof(rs), "%d", r);
			if (reap(spawn_helper("mutate", p, rs)) != 0)
				FAIL("mutate child failed");
		}
		if (check_exact(p, r % 8 < 4 ? "own change" : "child's change", r) ||
		    check_exact(q, r % 8 < 4 ? "own change" : "child's change", r) ||
		    check_exact(base, "dir", r))
			return 1;
	}
	return 0;
}

static int helper_exact(const char *base)
{
	struct fdscan s;
	pid_t pid;

	if (exact_rounds(base, ROUNDS, "b"))
		return 1;
	scan_inotify(&s);
	if (n_init || s.n != 1)
		LEFT_SESSION("not in the session: %d inotify_init1, %d inotify fds", n_init, s.n);
	/* A fork() child (no exec) attaches again, and is exact too. */
	pid = fork();
	if (pid == 0) {
		if (exact_rounds(base, 40, "fork"))
			_exit(1);
		scan_inotify(&s);
		if (n_init || s.n != 1) {
			fprintf(stderr, "fork child: %d inotify_init1, %d inotify fds\n", n_init, s.n);
			_exit(1);
		}
		_exit(0);
	}
	return reap(pid);
}

/* (g) A process more than a ring behind (no reader thread yet, blocked in
 * waitpid while a child makes > RING_RECORDS events) has lost events: it
 * forgets everything (IN_Q_OVERFLOW), and the child's first change, whose
 * record was overwritten, is seen. */
static int helper_flood_child(const char *base)
{
	char p[PLEN], y[PLEN], z[PLEN];
	int fy, fz;

	snprintf(p, sizeof(p), "%s/d/x", base);
	snprintf(y, sizeof(y), "%s/e/y", base);
	snprintf(z, sizeof(z), "%s/e/z", base);
	close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)); /* the change to see */
	fy = open(y, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	fz = open(z, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	/* Alternating files: the kernel merges an event identical to the last
	 * one queued, never these. */
	for (unsigned int i = 0; i < RING_RECORDS + RING_RECORDS / 4; i++)
		if (write(i & 1 ? fz : fy, "x", 1) != 1)
			return 1;
	close(fy);
	close(fz);
	return 0;
}

static int helper_flood(const char *base)
{
	char d[PLEN], e[PLEN], p[PLEN], q[PLEN];
	struct stat st;

	snprintf(d, sizeof(d), "%s/d", base);
	snprintf(e, sizeof(e), "%s/e", base);
	mkdir(d, 0755);
	mkdir(e, 0755);
	snprintf(p, sizeof(p), "%s/x", d);
	snprintf(q, sizeof(q), "%s/nothing", e);
	if (stat(p, &st) == 0 || stat(q, &st) == 0 || stat(p, &st) == 0) /* cached, both dirs watched */
		FAIL("flood: setup");
	if (reap(spawn_helper("flood-child", base, "")) != 0)
		FAIL("flood child failed");
	if (check_exact(p, "after the flood", 0))
		return 1;
	if (n_init)
		FAIL("flood: not in the session");
	return 0;
}

/* (f) The command closes its stdout and sleeps: a reader of the pipe sees
 * EOF at once, so the watcher holds no copy of it. */
static int helper_close_out(void)
{
	struct stat st;

	(void)stat("/", &st); /* attached */
	close(1);
	sleep(2);
	return 0;
}

static int sysctl_rw(const char *file, long *val, int write_it)
{
	char b[32];
	int f = (int)syscall(SYS_openat, AT_FDCWD, file, write_it ? O_WRONLY : O_RDONLY);
	long n;

	if (f < 0)
		return -1;
	if (write_it) {
		n = snprintf(b, sizeof(b), "%ld\n", *val);
		n = syscall(SYS_write, f, b, n) == n ? 0 : -1;
	} else {
		n = syscall(SYS_read, f, b, sizeof(b) - 1);
		b[n > 0 ? n : 0] = '\0';
		*val = strtol(b, NULL, 10);
		n = n > 0 ? 0 : -1;
	}
	syscall(SYS_close, f);
	return (int)n;
}

#define MAX_INST "/proc/sys/fs/inotify/max_user_instances"

/* (c) children answer from the cache with the per-user instance limit
 * exhausted (a raw inotify_init1 fails: the limit is real). */
static int helper_limit(const char *base, const char *stats)
{
	long one = 1, saved;
	int ok = 1, fd;
	char d[PLEN];
	struct fdscan sc;
	struct stat st;

	/* The command starts beside its watcher (the launcher does not wait
	 * for it): attach first, so that the watcher's instance exists
	 * before the limit is lowered (a watcher refused its instance leaves
	 * no session, and the children would have none to answer from:
	 * retried). */
	if (stat(base, &st) != 0)
		FAIL("limit: stat %s", base);
	scan_inotify(&sc);
	if (n_init || sc.n != 1)
		LEFT_SESSION("limit: not in the session: %d inotify_init1, %d inotify fds", n_init,
			     sc.n);
	if (sysctl_rw(MAX_INST, &saved, 0) != 0)
		FAIL("read " MAX_INST);
	if (sysctl_rw(MAX_INST, &one, 1) != 0)
		FAIL("write " MAX_INST);
	fd = (int)syscall(SYS_inotify_init1, IN_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		ok = 0;
		fprintf(stderr, "the limit does not bite: inotify_init1 succeeded\n");
	}
	setenv("RCUWALK_STATS", stats, 1);
	snprintf(d, sizeof(d), "%s/d", base);
	mkdir(d, 0755);
	for (int i = 0; ok && i < 10; i++)
		if (reap(spawn_helper("limit-child", d, "x")) != 0)
			ok = 0;
	sysctl_rw(MAX_INST, &saved, 1);
	return ok ? 0 : 1;
}

static int helper_limit_child(const char *d)
{
	char p[PLEN];
	struct stat st;

	snprintf(p, sizeof(p), "%s/missing", d);
	for (int k = 0; k < 20; k++)
		if (stat(p, &st) == 0 || stat(d, &st) != 0)
			FAIL("limit child: lookups");
	return 0;
}

/* This session's ring header, copied into *h.  0 or -1.  The ring is a
 * memfd of the watcher's (RCUWALK_SESSION_FDS: "PID:RING:ARENA"), opened
 * through /proc/PID/fd/RING and mapped at the first call, kept mapped (a
 * later call still reads it after the watcher's death). */
static int session_header(struct ring_hdr *h)
{
	static const struct ring_hdr *map;
	const char *fds = getenv("RCUWALK_SESSION_FDS");
	unsigned int pid;
	int rfd, afd, f;
	char p[PLEN];

	if (!map) {
		if (!fds || sscanf(fds, "%u:%d:%d", &pid, &rfd, &afd) != 3)
			return -1;
		snprintf(p, sizeof(p), "/proc/%u/fd/%d", pid, rfd);
		f = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
		if (f < 0)
			return -1;
		map = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, f, 0);
		close(f);
		if (map == MAP_FAILED) {
			map = NULL;
			return -1;
		}
	}
	/* The command starts beside the watcher (watcher_spawn.c,
	 * inval_watcher_spawn): the ring is published a few ms later. */
	for (int ms = 0; ms < 2000 && __atomic_load_n(&map->magic, __ATOMIC_ACQUIRE) != RING_MAGIC; ms++)
		usleep(1000);
	memcpy(h, map, sizeof(*h));
	return h->magic == RING_MAGIC ? 0 : -1;
}

/* The pid of this session's watcher.  0 or -1. */
static int session_pid(unsigned int *pid)
{
	struct ring_hdr h;

	if (session_header(&h) != 0)
		return -1;
	*pid = h.pid;
	return 0;
}

/* The ring's count of fds its answering thread sent (ring.h, answers). */
static long session_answers(void)
{
	struct ring_hdr h;

	return session_header(&h) == 0 ? (long)h.answers : -1;
}

/* Refuse pidfd_getfd with EPERM from now on (and in what we exec), as a
 * container's seccomp profile may.  0 or -1. */
static int refuse_pidfd_getfd(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* How a process gets the session's instance: with pidfd_getfd where the
 * kernel allows it (no answer from the watcher's thread), over the socket
 * where it refuses (a seccomp filter here); attached either way (no
 * inotify_init1 of its own, one inotify fd), every answer exact. */
static int helper_attach_way(const char *base, const char *how)
{
	char p[PLEN];
	unsigned int pid;
	long before, after;
	int seccomp = !strncmp(how, "seccomp:", 8), pfd, fd, direct;
	struct fdscan s;

	/* Would the kernel give us the watcher's fds?  (Its fd 0.) */
	if (session_pid(&pid) != 0 || (pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0)) < 0)
		FAIL("attach-way: no watcher pid");
	fd = (int)syscall(SYS_pidfd_getfd, pfd, 0, 0);
	direct = fd >= 0;
	if (fd >= 0)
		close(fd);
	close(pfd);
	if (seccomp && direct)
		FAIL("attach-way: the filter did not refuse pidfd_getfd");
	before = strtol(strchr(how, ':') ? strchr(how, ':') + 1 : "-1", NULL, 10);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", base, i % 2 ? "missing" : ".");
		if (check_exact(p, how, i))
			return 1;
	}
	after = session_answers();
	scan_inotify(&s);
	if (n_init || s.n != 1)
		FAIL("attach-way %s: %d inotify_init1, %d inotify fds (not attached)", how, n_init, s.n);
	print_message("%s: pidfd_getfd %s, socket answers %ld -> %ld\n", how,
		      direct ? "allowed" : "refused", before, after);
	if (before < 0 || (direct ? after != before : after <= before))
		FAIL("attach-way %s: %ld socket answers, %ld before", how, after, before);
	return 0;
}

/* The filter goes on before exec: the new image starts under it (a
 * sanitizer's start-up may look names up, and so attach, before main). */
static int helper_attach(const char *base)
{
	for (int k = 0; k < 2; k++) {
		char how[64];
		pid_t pid;
		int r;

		/* The count before: the new image may attach before main. */
		snprintf(how, sizeof(how), "%s:%ld", k ? "seccomp" : "plain", session_answers());
		pid = fork();
		if (pid == 0) {
			if (k && refuse_pidfd_getfd() != 0)
				_exit(77);
			execl(self_exe(), self_exe(), "--helper", "attach-way", base, how, (char *)NULL);
			_exit(127);
		}
		if ((r = reap(pid)) != 0)
			return r;
	}
	return 0;
}

/* A process that must attach over the socket (pidfd_getfd refused, as
 * under Yama's ptrace_scope 1, where the watcher is nobody's child) while
 * the watcher is stopped: it gives up once it sees the watcher stopped and
 * answers exactly from an instance of its own (an inotify_init1), not after
 * the whole 1 s wait for an answer, in the fork child and again in its
 * image (ATTACH_STOPPED_BOUND_S; 37-45 ms here, 3.2 s before the stop was
 * looked for).  77: no seccomp filter. */
#define ATTACH_STOPPED_BOUND_S 0.5

static int helper_attach_stopped_child(const char *base)
{
	char p[PLEN];

	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", base, i % 2 ? "missing" : ".");
		if (check_exact(p, "attach-stopped", i))
			return 1;
	}
	if (!n_init)
		FAIL("attach-stopped: no instance of its own (n_init 0)");
	return 0;
}

static int helper_attach_stopped(const char *base)
{
	unsigned int pid;
	double t0, took;
	pid_t c;
	int r, lock;

	/* Attached ourselves: the ring is published, the thread answers. */
	if (check_exact(base, "attach-stopped", 0))
		return 1;
	lock = cpu_lock(LOCK_SH); /* a bound under 1 s (cpu_lock.h) */
	if (session_pid(&pid) != 0 || kill((pid_t)pid, SIGSTOP) != 0)
		FAIL("attach-stopped: cannot stop the watcher");
	t0 = mono_now();
	c = fork();
	if (c == 0) {
		if (refuse_pidfd_getfd() != 0)
			_exit(77);
		execl(self_exe(), self_exe(), "--helper", "attach-stopped-child", base, (char *)NULL);
		_exit(127);
	}
	r = c < 0 ? 1 : reap(c);
	took = mono_now() - t0;
	kill((pid_t)pid, SIGCONT);
	cpu_unlock(lock);
	if (r)
		return r;
	fprintf(stderr, "attach-stopped: the process ran %.3f s (bound %.1f s)\n", took,
		ATTACH_STOPPED_BOUND_S);
	if (took > ATTACH_STOPPED_BOUND_S)
		FAIL("attach-stopped: the process ran %.3f s > %.1f s", took, ATTACH_STOPPED_BOUND_S);
	return 0;
}

static void sleep_ms(long ms);

/* A session whose watcher is held before its first instruction: the memory
 * and the directory made as the launcher makes them (watcher_spawn.c,
 * inval_watcher_spawn; no arena), the watcher's image (the launcher's
 * INVAL_WATCHER_ARG mode) exec'd under PTRACE_TRACEME and detached with
 * SIGSTOP at its exec stop, so that it has run nothing yet, whatever the
 * scheduler does.  Its pid and the session's variables set for the
 * children.  0 or -1. */
static int held_watcher(const char *base, pid_t *wp)
{
	char dir[PLEN], v[PLEN], nums[4][24];
	const char *l = getenv("RCUWALK_LAUNCHER");
	int rfd, dfd, cfd, st;
	pid_t w;

	snprintf(dir, sizeof(dir), "%s/held-session", base);
	if (!l || (raw_mkdir(dir) != 0 && errno != EEXIST) || chmod(dir, 0700) != 0)
		return -1;
	rfd = memfd_create("rcuwalk-ring", MFD_ALLOW_SEALING);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (rfd < 0 || dfd < 0 || ftruncate(rfd, (off_t)RING_SIZE) != 0 ||
	    fcntl(rfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    flock(dfd, LOCK_EX) != 0)
		return -1;
	cfd = (int)syscall(SYS_pidfd_open, getpid(), 0); /* the "command": this process */
	if (cfd < 0)
		return -1;
	snprintf(nums[0], sizeof(nums[0]), "%d", cfd);
	snprintf(nums[1], sizeof(nums[1]), "%d", dfd);
	snprintf(nums[2], sizeof(nums[2]), "%d", rfd);
	w = fork();
	if (w == 0) {
		fcntl(cfd, F_SETFD, 0); /* pidfds are made close-on-exec */
		unsetenv("LD_PRELOAD");
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(l, "rcuwalk-watcher", INVAL_WATCHER_ARG, nums[0], "0", nums[1], nums[2], "-1",
		      dir, (char *)NULL);
		_exit(127);
	}
	if (w < 0 || waitpid(w, &st, 0) != w || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP ||
	    ptrace(PTRACE_DETACH, w, NULL, (void *)(long)SIGSTOP) != 0)
		return -1;
	/* The lock stays with the watcher's copy of the description. */
	close(dfd);
	close(rfd);
	close(cfd);
	snprintf(v, sizeof(v), "%d:%s:-1", (int)w, nums[2]);
	setenv("RCUWALK_SESSION", dir, 1);
	setenv("RCUWALK_SESSION_FDS", v, 1);
	*wp = w;
	return 0;
}

/* The command starts beside its watcher, which publishes the ring a few ms
 * later (watcher_spawn.c, inval_watcher_spawn); a process that needs the session
 * before then waits for it, boundedly (session.c, wait_published).  With
 * the watcher held before its first instruction (held_watcher), by `how`:
 *  wait  a process that begins while it is held, the watcher let go 30 ms
 *        later, answers exactly from the session (no inotify_init1, one
 *        inotify fd: the session's);
 *  own   two processes, one after the other, look names up while it stays
 *        stopped: each answers exactly, within 2 s, from an instance of its
 *        own (one inotify_init1); their times are printed (the second waits
 *        for nothing: the session's start is past its bound). */
/* "wait": the child must attach if the watcher published its ring this soon
 * after the child started (its wait ends 100 ms after the session's
 * directory was made, just before); published later (a loaded machine, an
 * ASan build's watcher starting), the child keeps an instance of its own,
 * as the contract says, and answers exactly all the same. */
#define STARTING_ATTACH_BY_S 0.060

static int helper_starting(const char *base, const char *how)
{
	int own = !strcmp(how, "own");
	double t[3], ready = -1;
	struct ring_hdr h;
	pid_t w, c;
	int r;

	if (held_watcher(base, &w) != 0)
		FAIL("starting: cannot start a held watcher: %s", strerror(errno));
	t[0] = mono_now();
	for (int k = 0; k < (own ? 2 : 1); k++) {
		c = fork();
		if (c == 0) {
			execl(self_exe(), self_exe(), "--helper", "starting-child", base, how,
			      (char *)NULL);
			_exit(127);
		}
		if (!own) {
			sleep_ms(30);
			kill(w, SIGCONT);
			if (session_header(&h) == 0)
				ready = mono_now() - t[k];
		}
		r = c > 0 ? wait_bounded(c, 10) : -1;
		t[k + 1] = mono_now();
		if (!own && r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 3) {
			if (ready < 0) {
				kill(w, SIGKILL);
				FAIL("starting wait: the watcher never published its ring");
			}
			if (ready < STARTING_ATTACH_BY_S) {
				kill(w, SIGKILL);
				FAIL("starting wait: the ring was published %.3f s after the child "
				     "started, and it did not attach",
				     ready);
			}
			fprintf(stderr, "starting wait: the ring published after %.3f s, past the "
				"child's wait: it kept an instance of its own (allowed)\n", ready);
			r = 0;
		}
		if (r != 0 || t[k + 1] - t[k] > 2.0) {
			kill(w, SIGKILL);
			FAIL("starting %s: child %d: status %d after %.3f s", how, k, r, t[k + 1] - t[k]);
		}
	}
	kill(w, SIGCONT);
	kill(w, SIGTERM);
	if (wait_bounded(w, 10) < 0)
		FAIL("starting: the watcher did not end");
	if (own)
		print_message("starting own: the first child in %.3f s, the second in %.3f s\n",
			      t[1] - t[0], t[2] - t[1]);
	return 0;
}

static int helper_starting_child(const char *base, const char *how)
{
	char p[PLEN];
	struct fdscan s;

	for (int i = 0; i < 8; i++) {
		snprintf(p, sizeof(p), "%s/%s", base, i % 2 ? "missing" : ".");
		if (check_exact(p, how, i))
			return 1;
	}
	scan_inotify(&s);
	if (!strcmp(how, "own") && (n_init_ok != 1 || s.n != 1))
		FAIL("starting own: %d inotify_init1, %d inotify fds (not one of its own)", n_init, s.n);
	if (!strcmp(how, "wait") && (n_init || s.n != 1)) {
		/* The parent decides whether the watcher was ready in time. */
		fprintf(stderr, "[%d] starting wait: %d inotify_init1, %d inotify fds (not attached)\n",
			(int)getpid(), n_init, s.n);
		return 3;
	}
	return 0;
}

/* (j) SIGKILL the watcher, wait for the kernel's death notice in its ring
 * (ring.h, alive), leave its directory and write its name to base/dir. */
static int helper_kill_leave(const char *base)
{
	char p[PLEN];
	struct ring_hdr h;
	unsigned int pid;
	FILE *f;
	int i;

	if (session_pid(&pid) != 0)
		FAIL("kill-leave: cannot read the ring's header");
	if (kill((pid_t)pid, SIGKILL) != 0)
		FAIL("kill-leave: kill %u: %s", pid, strerror(errno));
	for (i = 0; i < 2000 && (session_header(&h) != 0 || !(h.alive & FUTEX_OWNER_DIED)); i++)
		sleep_ms(1);
	if (i == 2000)
		FAIL("kill-leave: no death notice in 2 s");
	snprintf(p, sizeof(p), "%s/dir", base);
	f = fopen(p, "w");
	if (!f || fputs(getenv("RCUWALK_SESSION"), f) < 0 || fclose(f) != 0)
		FAIL("kill-leave: cannot write %s", p);
	return 0;
}

/* A killed watcher leaves its directory (its sockets; its memory went with
 * it: memfds) behind until the next session's watcher removes it
 * (watcher.c, reap_dead_sessions): the kill loop's last one would stay, so
 * each is removed here.  (Before, the arena in /dev/shm was left, and with
 * it the directory: 1,892 of them after a 300 s loop.) */
static void remove_dead_session(void)
{
	static const char *const files[] = { RING_SOCKET, RING_HOLD };
	const char *dir = getenv("RCUWALK_SESSION");
	char p[PLEN];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* (d) SIGKILL the watcher; every later answer is the kernel's. */
static int helper_kill(const char *base)
{
	unsigned int pid;

	if (exact_rounds(base, 16, "pre"))
		return 1;
	if (session_pid(&pid) != 0)
		FAIL("cannot read the ring's header");
	if (n_init)
		LEFT_SESSION("not in the session before the kill");
	if (kill((pid_t)pid, SIGKILL) != 0)
		FAIL("kill watcher %u: %s", pid, strerror(errno));
	remove_dead_session();
	if (exact_rounds(base, ROUNDS, "post"))
		return 1;
	fprintf(stderr, "after the kill: %d inotify_init1\n", n_init);
	return 0;
}

/* SIGTERM to the watcher (a user's kill): it ends as at the command's end,
 * its directory removed (within 2 s), and every later answer is exact. */
static int helper_term(const char *base)
{
	const char *dir = getenv("RCUWALK_SESSION");
	unsigned int pid;
	struct stat st;
	double t0;

	if (exact_rounds(base, 16, "pre"))
		return 1;
	if (!dir || session_pid(&pid) != 0)
		FAIL("cannot read the ring's header");
	if (n_init)
		LEFT_SESSION("not in the session before the signal");
	if (kill((pid_t)pid, SIGTERM) != 0)
		FAIL("kill -TERM watcher %u: %s", pid, strerror(errno));
	for (t0 = mono_now(); syscall(SYS_newfstatat, AT_FDCWD, dir, &st, 0) == 0;)
		if (mono_now() - t0 > 2.0)
			FAIL("the session's directory %s is still there 2 s after SIGTERM", dir);
	if (exact_rounds(base, ROUNDS, "post"))
		return 1;
	return 0;
}

/* (h) The kill loop (issue 15, point 5): workers change their own files,
 * directly and through children, and compare every answer with the
 * kernel's, while the command SIGKILLs one worker at a random point and then
 * the watcher; the workers go on past the watcher's death (they fall back
 * to instances of their own) until base/stop appears.  A worker exits 0
 * if every answer was exact. */
static int helper_kill_worker(const char *base, const char *tag)
{
	char stop[PLEN], own[PLEN];
	struct stat st;

	/* A directory of its own: what the others change there is not ordered
	 * before this worker's lookups (clause 4, not 1-2). */
	snprintf(stop, sizeof(stop), "%s/stop", base);
	snprintf(own, sizeof(own), "%s/%s", base, tag);
	/* EEXIST: a try before this one (NO_SESSION, below) made it. */
	if (mkdir(own, 0755) != 0 && errno != EEXIST)
		FAIL("mkdir %s: %s", own, strerror(errno));
	own_changes_only = 1;
	for (int r = 0; syscall(SYS_newfstatat, AT_FDCWD, stop, &st, 0) != 0; r++) {
		if (exact_rounds(own, 8, "f"))
			return 1;
		/* The first workers are in the session (the loop kills the
		 * watcher once they say so: "ready"); a later one may start
		 * after its death.  One that left it before (a watcher starved
		 * for 40 ms with events queued is given up by design: two
		 * suites at once in CI) says ready, so that the loop does not
		 * wait for it, and asks for the session to be tried again. */
		if (r == 0 && !strchr(tag, '-')) {
			char ready[PLEN + 8];

			snprintf(ready, sizeof(ready), "%s/ready", own);
			if (raw_write_file(ready, 1, 0) != 0)
				FAIL("%s: cannot say ready", tag);
			if (n_init)
				LEFT_SESSION("%s: not in the session (%d inotify_init1)", tag, n_init);
		}
	}
	fprintf(stderr, "[%d] %s: %lu exact answers%s\n", (int)getpid(), tag, n_checks,
		n_init ? ", the last ones with an instance of its own" : "");
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

#define KILL_WORKERS 3

static int helper_kill_loop(const char *base, unsigned int seed)
{
	pid_t w[KILL_WORKERS];
	char tag[32], p[PLEN];
	unsigned int pid;
	int victim, st, bad = 0, left = 0;

	srand(seed);
	/* What a try before this one left (run_launcher retries NO_SESSION). */
	snprintf(p, sizeof(p), "%s/stop", base);
	unlink(p);
	for (int i = 0; i < KILL_WORKERS; i++) {
		snprintf(p, sizeof(p), "%s/w%d/ready", base, i);
		unlink(p);
	}
	for (int i = 0; i < KILL_WORKERS; i++) {
		snprintf(tag, sizeof(tag), "w%d", i);
		w[i] = spawn_helper("kill-worker", base, tag);
	}
	/* A worker killed at a random point: the others never notice. */
	sleep_ms(20 + rand() % 100);
	victim = rand() % KILL_WORKERS;
	kill(w[victim], SIGKILL);
	st = reap(w[victim]);
	if (st == NO_SESSION)
		left = 1;
	else if (st != 128 + SIGKILL && st != 0)
		FAIL("worker %d before its kill: status %d", victim, st);
	snprintf(tag, sizeof(tag), "w%d-again", victim);
	w[victim] = spawn_helper("kill-worker", base, tag);
	/* The watcher killed at a random point, once the first workers that
	 * still run have checked they are in the session (under ASan on a
	 * loaded machine their first rounds took longer than the sleeps
	 * below: CI failed once that way). */
	for (int i = 0, waited = 0; i < KILL_WORKERS && waited < 10000; i++) {
		struct stat rs;

		snprintf(p, sizeof(p), "%s/w%d/ready", base, i);
		while (i != victim && syscall(SYS_newfstatat, AT_FDCWD, p, &rs, 0) != 0 &&
		       waited++ < 10000)
			sleep_ms(1);
	}
	sleep_ms(20 + rand() % 100);
	if (session_pid(&pid) != 0)
		FAIL("cannot read the ring's header");
	if (kill((pid_t)pid, SIGKILL) != 0)
		FAIL("kill watcher %u: %s", pid, strerror(errno));
	/* On past the watcher's death, then stop. */
	sleep_ms(100 + rand() % 100);
	snprintf(p, sizeof(p), "%s/stop", base);
	close(open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	for (int i = 0; i < KILL_WORKERS; i++)
		if ((st = reap(w[i])) == NO_SESSION) {
			left = 1; /* every answer it gave was exact: it said so */
		} else if (st != 0) {
			fprintf(stderr, "[%d] worker %d: status %d\n", (int)getpid(), i, st);
			bad = 1;
		}
	remove_dead_session();
	return bad ? 1 : left ? NO_SESSION : 0;
}

/* (i) --keep: the first command notes its session (directory and watcher
 * pid) in base/first; the second finds the same one, attached, and exact. */
static int helper_keep(const char *base, const char *which)
{
	char p[PLEN], line[PLEN + 32], want[PLEN + 32];
	unsigned int pid;
	struct stat st;
	FILE *f;

	if (stat(base, &st) != 0 || n_init || session_pid(&pid) != 0)
		FAIL("keep %s: not in a session", which);
	snprintf(line, sizeof(line), "%s %u\n", getenv("RCUWALK_SESSION"), pid);
	snprintf(p, sizeof(p), "%s/first", base);
	if (!strcmp(which, "first")) {
		f = fopen(p, "w");
		if (!f || fputs(line, f) < 0 || fclose(f) != 0)
			FAIL("keep: cannot write %s", p);
		return exact_rounds(base, 20, "k1");
	}
	f = fopen(p, "r");
	if (!f || !fgets(want, sizeof(want), f))
		FAIL("keep: cannot read %s", p);
	fclose(f);
	if (!strcmp(which, "other")) /* after the kept one ended */
		return strcmp(line, want) ? 0 : 1;
	if (strcmp(line, want))
		FAIL("keep: second command in %s, the first was in %s", line, want);
	if (exact_rounds(base, 20, "k2") || n_init)
		FAIL("keep: second command not exact, or not attached (%d inotify_init1)", n_init);
	return 0;
}

/* (j) A mount by a process that is not waited for (a fork child that
 * bind-mounts base/src over base/m and stays) is seen within 1 s (clause 7):
 * in a session, through the watcher's count of mount changes (ring.h,
 * mounts) at the timed drains, or the reader thread.  Prints the delay. */
static int helper_unrelated_mount(const char *base)
{
	char m[PLEN], src[PLEN], y[PLEN], my[PLEN], c;
	struct stat st;
	int ack[2];
	double t0, seen = -1;
	pid_t pid;

	snprintf(m, sizeof(m), "%s/m", base);
	snprintf(src, sizeof(src), "%s/src", base);
	snprintf(y, sizeof(y), "%s/y", src);
	snprintf(my, sizeof(my), "%s/y", m);
	if (mkdir(m, 0755) != 0 || mkdir(src, 0755) != 0)
		FAIL("mkdir: %s", strerror(errno));
	close(open(y, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	for (int i = 0; i < 3; i++)
		if (stat(my, &st) == 0 || stat(m, &st) != 0 || n_init)
			LEFT_SESSION("unrelated mount: setup (in the session: %d inotify_init1)", n_init);
	if (pipe(ack) != 0)
		FAIL("pipe");
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_mount, src, m, NULL, (unsigned long)MS_BIND, NULL) != 0)
			_exit(1);
		(void)!write(ack[1], "m", 1);
		pause();
		_exit(0);
	}
	close(ack[1]);
	if (read(ack[0], &c, 1) != 1) {
		reap(pid);
		FAIL("the mounting child failed");
	}
	t0 = mono_now();
	while (mono_now() - t0 < 1.0) {
		if (stat(my, &st) == 0) {
			seen = mono_now() - t0;
			break;
		}
	}
	kill(pid, SIGKILL);
	reap(pid);
	if (seen < 0)
		FAIL("a mount by a process not waited for: unseen after 1 s");
	fprintf(stderr, "unrelated mount seen after %.3f ms\n", seen * 1e3);
	return check_exact(my, "after the mount", 0);
}

/* After 20 ms idle, SIGKILL the session's watcher; 20 ms later create f
 * behind the shim's back (a raw syscall: as by an unrelated writer); 5 ms
 * later f must be seen.  `what` names the helper in its messages. */
static int kill_watcher_then_create(const char *f, const char *what)
{
	unsigned int pid;

	sleep_ms(20);
	if (session_pid(&pid) != 0 || kill((pid_t)pid, SIGKILL) != 0)
		FAIL("%s: cannot kill the watcher", what);
	sleep_ms(20);
	if (syscall(SYS_openat, AT_FDCWD, f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0)
		FAIL("%s: create %s: %s", what, f, strerror(errno));
	sleep_ms(5);
	if (check_exact(f, "5 ms after an unrelated create, the watcher dead", 0))
		return 1;
	remove_dead_session();
	return 0;
}

/* Lookups for 150 ms, of absent name f and of directory base: base watched,
 * f cached absent, this process's reader thread started (after 100 ms).  0,
 * or NO_SESSION (said, "what how: setup") if f exists, base is gone or this
 * process made an inotify instance of its own (it is not in the session). */
static int settle_in(const char *f, const char *base, const char *what, const char *how)
{
	struct stat st;

	for (double t0 = mono_now(); mono_now() - t0 < 0.15;)
		if (stat(f, &st) == 0 || stat(base, &st) != 0 || n_init)
			LEFT_SESSION("%s%s%s: setup (in the session: %d inotify_init1)", what,
				     *how ? " " : "", how, n_init);
	return 0;
}

/* (k) The watcher SIGKILLed while this process is idle, its reader thread
 * asleep: a file made behind the shim's back (a raw syscall: as by an
 * unrelated writer) 5 ms later is seen by the next lookup.  The watcher's
 * death notice (ring.h, alive) woke the reader, and the session was given
 * up before that lookup.  Exit 77 where the kernel has no futex_waitv (the
 * notice cannot wake a sleeper: the 100 ms checks remain). */
static int helper_dead_idle(const char *base)
{
	char f[PLEN];

	if (syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0) < 0 && errno == ENOSYS)
		return 77;
	snprintf(f, sizeof(f), "%s/late", base);
	/* Lookups for 150 ms: the reader thread starts (after 100 ms). */
	if (settle_in(f, base, "dead idle", ""))
		return NO_SESSION;
	return kill_watcher_then_create(f, "dead idle"); /* idle: the reader asleep on the ring */
}

/* (k2) The same with no reader thread: this process forked (a shell does),
 * so it never starts one (invalidate/inval.c, `forked`), and nothing wakes
 * at the watcher's death.  The next lookup's drain, due once per tick,
 * finds the death notice and gives the session up before it answers. */
static int helper_dead_forked(const char *base)
{
	char f[PLEN];
	struct stat st;
	pid_t child;

	snprintf(f, sizeof(f), "%s/late", base);
	if (stat(f, &st) == 0 || stat(base, &st) != 0 || n_init)
		LEFT_SESSION("dead forked: setup (in the session: %d inotify_init1)", n_init);
	child = fork();
	if (child < 0)
		FAIL("dead forked: fork: %s", strerror(errno));
	if (child == 0)
		_exit(0);
	reap(child);
	/* Lookups for 150 ms: past the delay a reader would start after. */
	if (settle_in(f, base, "dead forked", ""))
		return NO_SESSION;
	if (threads_now() != 1)
		FAIL("dead forked: %d threads, not 1: a reader started", threads_now());
	return kill_watcher_then_create(f, "dead forked");
}

/* (m) Nothing the session maps can be cut short (issue 23, item 2): its
 * directory holds no regular file (sockets only: truncate(2) refuses
 * them), and the ring's and the arena's memfds, opened read-write through
 * the watcher's /proc/PID/fd/N as any process of the user's could, refuse
 * ftruncate to 0, to more, and O_TRUNC (sealed).  This process, which maps
 * both, goes on answering exactly, in the session.  (With the ring and the
 * arena as files in the directory, `truncate -s 0` of either killed the
 * build's processes: SIGBUS.) */
static int helper_sealed(const char *base)
{
	const char *dir = getenv("RCUWALK_SESSION"), *fds = getenv("RCUWALK_SESSION_FDS");
	unsigned int pid;
	int rfd, afd, n = 0;
	struct dirent *e;
	DIR *d;

	if (exact_rounds(base, 16, "pre"))
		return 1;
	if (n_init || !dir)
		FAIL("sealed: not in a session");
	if (!(d = opendir(dir)))
		FAIL("sealed: opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char p[PLEN + NAME_MAX];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) != 0 || !S_ISSOCK(st.st_mode))
			FAIL("sealed: %s is not a socket: a file the session uses", p);
		if (truncate(p, 0) == 0)
			FAIL("sealed: truncate %s succeeded", p);
	}
	closedir(d);
	if (!fds || sscanf(fds, "%u:%d:%d", &pid, &rfd, &afd) != 3 || afd < 0)
		FAIL("sealed: no arena (%s)", fds ? fds : "no RCUWALK_SESSION_FDS");
	for (int i = 0; i < 2; i++) {
		char p[64];
		int f;

		snprintf(p, sizeof(p), "/proc/%u/fd/%d", pid, i ? afd : rfd);
		f = open(p, O_RDWR | O_CLOEXEC);
		if (f < 0)
			FAIL("sealed: open %s: %s", p, strerror(errno));
		if (ftruncate(f, 0) == 0 || errno != EPERM)
			FAIL("sealed: ftruncate %s to 0: not refused (%s)", p, strerror(errno));
		if (ftruncate(f, (off_t)1 << 30) == 0 || errno != EPERM)
			FAIL("sealed: ftruncate %s to 1 GiB: not refused (%s)", p, strerror(errno));
		close(f);
		if ((f = open(p, O_RDWR | O_TRUNC | O_CLOEXEC)) >= 0 || errno != EPERM)
			FAIL("sealed: open %s O_TRUNC: not refused (%s)", p, strerror(errno));
		n++;
	}
	if (exact_rounds(base, ROUNDS, "post"))
		return 1;
	if (n_init)
		FAIL("sealed: left the session (%d inotify_init1)", n_init);
	return n == 2 ? 0 : 1;
}

/* (n) A new session's first answers are fresh whatever lies in the
 * directories every user can write (issue 23, item 4): a name this
 * process found absent, then made behind the shim's back (a raw syscall: as
 * by an unrelated writer), is seen within 50 ms.  The caller has filled
 * /dev/shm and /tmp with 100,000 entries named as sessions were. */
static int helper_fresh(const char *base)
{
	char f[PLEN];
	struct stat st;
	double t0, t;

	snprintf(f, sizeof(f), "%s/new", base);
	if (stat(f, &st) == 0 || stat(f, &st) == 0 || n_init)
		LEFT_SESSION("fresh: setup (in the session: %d inotify_init1)", n_init);
	if (syscall(SYS_openat, AT_FDCWD, f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0)
		FAIL("fresh: create %s: %s", f, strerror(errno));
	for (t0 = mono_now(); stat(f, &st) != 0;)
		if (mono_now() - t0 > 2.0)
			FAIL("fresh: %s still absent 2 s after its creation", f);
	t = mono_now() - t0;
	fprintf(stderr, "fresh: seen %.2f ms after its creation\n", t * 1000);
	if (t > 0.050)
		FAIL("fresh: seen %.1f ms after its creation (at most 50)", t * 1000);
	return 0;
}

/* (l) Records about another process's directories reach nothing of ours:
 * this process caches base/d/f, a child (b = "write") makes and removes a
 * file in base/e, a directory this process never looked at, and this
 * process's cached attributes of base/d/f stay (its RCUWALK_STATS record
 * counts its invalidations: the same as with a child that only looks, b =
 * "look").  The child writes no record of its own. */
static int helper_foreign(const char *base, const char *b)
{
	char d[PLEN], e[PLEN], f[PLEN];
	struct stat st;

	unsetenv("RCUWALK_STATS"); /* read at start already: the child's is off */
	snprintf(d, sizeof(d), "%s/d", base);
	snprintf(e, sizeof(e), "%s/e", base);
	snprintf(f, sizeof(f), "%s/f", d);
	if (mkdir(d, 0755) != 0 || mkdir(e, 0755) != 0)
		FAIL("foreign: mkdir");
	close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	for (int i = 0; i < 3; i++)
		if (stat(f, &st) != 0 || n_init)
			FAIL("foreign: setup (%d inotify_init1)", n_init);
	if (reap(spawn_helper("foreign-child", e, b)) != 0)
		FAIL("foreign: child failed");
	for (int i = 0; i < 3; i++)
		if (check_exact(f, "after the child", i))
			return 1;
	return 0;
}

static int helper_foreign_child(const char *e, const char *what)
{
	char x[PLEN], y[PLEN];
	struct stat st;
	int fd;

	snprintf(x, sizeof(x), "%s/x", e);
	snprintf(y, sizeof(y), "%s/y", e);
	if (stat(x, &st) == 0) /* e watched, by this process */
		FAIL("foreign child: %s exists", x);
	if (!strcmp(what, "write")) {
		fd = open(y, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, "y", 1) != 1)
			FAIL("foreign child: write %s", y);
		close(fd);
		unlink(y);
	}
	return 0;
}

/* (m) Shared listings (doc/session.md, phase 2): children complete base/d
 * one after another, each comparing every answer with the kernel's; between
 * them this process changes base/d with raw syscalls (nothing of the shim
 * sees it: the next child must, through the watcher), the last time by
 * renaming base/d away and making a new one in its place.  The stats
 * records count the listings the children took from the shared ones. */
static const char *const shared_names[] = { "x0", "x1", "x2", "x3", "f0", "f1", "f5", "f9",
					    "new1", "f1b", "z", "s", "s/x", "x4",
					    /* the shared path table's answers: ENOTDIR,
					     * a trailing slash, below an absent name,
					     * through a symlink */
					    "f2/x", "f3/", "x5/y/z", "s/deep/x", "l/x", "l/", "x6" };

static int helper_shared(const char *top)
{
	char d[PLEN], p[PLEN], q[PLEN], base[PLEN];
	int k = 0;

	/* A tree of this attempt's own (a retried run: LEFT_SESSION). */
	do
		snprintf(base, sizeof(base), "%s/t%d", top, k++);
	while (raw_mkdir(base) != 0 && k < 100);

	snprintf(d, sizeof(d), "%s/d", base);
	if (raw_mkdir(d) != 0)
		FAIL("shared: mkdir");
	for (int i = 0; i < 10; i++) {
		snprintf(p, sizeof(p), "%s/f%d", d, i);
		if (raw_write_file(p, 1, 0) != 0)
			FAIL("shared: create %s", p);
	}
	snprintf(p, sizeof(p), "%s/s", d);
	raw_mkdir(p);
	snprintf(p, sizeof(p), "%s/l", d);
	syscall(SYS_symlinkat, "f4", AT_FDCWD, p);
	for (int round = 0; round < 12; round++) {
		int c = reap(spawn_helper("shared-child", base, ""));

		if (c == NO_SESSION)
			LEFT_SESSION("shared: child %d left the session", round);
		if (c != 0)
			FAIL("shared: child %d failed", round);
		switch (round) {
		case 1:
			snprintf(p, sizeof(p), "%s/new1", d);
			if (raw_write_file(p, 1, 0) != 0)
				FAIL("shared: create new1");
			break;
		case 2:
			snprintf(p, sizeof(p), "%s/f0", d);
			syscall(SYS_unlinkat, AT_FDCWD, p, 0);
			break;
		case 3:
			snprintf(p, sizeof(p), "%s/f1", d);
			snprintf(q, sizeof(q), "%s/f1b", d);
			syscall(SYS_renameat, AT_FDCWD, p, AT_FDCWD, q);
			break;
		case 4:
			snprintf(p, sizeof(p), "%s/s/x", d);
			if (raw_write_file(p, 1, 0) != 0)
				FAIL("shared: create s/x");
			break;
		case 5:
			snprintf(q, sizeof(q), "%s/old", base);
			syscall(SYS_renameat, AT_FDCWD, d, AT_FDCWD, q);
			raw_mkdir(d);
			snprintf(p, sizeof(p), "%s/s", d);
			raw_mkdir(p); /* a new d/s: the old one's watch must not be taken */
			snprintf(p, sizeof(p), "%s/z", d);
			if (raw_write_file(p, 1, 0) != 0)
				FAIL("shared: create z");
			snprintf(p, sizeof(p), "%s/l", d);
			syscall(SYS_symlinkat, "f4", AT_FDCWD, p); /* dangling now: no f4 */
			break;
		case 6: /* x5/y/z: absent at x5, then at y */
			snprintf(p, sizeof(p), "%s/x5", d);
			raw_mkdir(p);
			break;
		case 7: /* f2 a directory: f2/x absent instead of ENOTDIR */
			snprintf(p, sizeof(p), "%s/f2", d);
			raw_mkdir(p);
			break;
		case 8: /* f2/x present, the symlink's target a directory */
			snprintf(p, sizeof(p), "%s/f2/x", d);
			if (raw_write_file(p, 1, 0) != 0)
				FAIL("shared: create f2/x");
			snprintf(p, sizeof(p), "%s/f4", d);
			raw_mkdir(p);
			break;
		case 9: /* the symlink retargeted, x6 made */
			snprintf(p, sizeof(p), "%s/l", d);
			syscall(SYS_unlinkat, AT_FDCWD, p, 0);
			syscall(SYS_symlinkat, "f5", AT_FDCWD, p);
			snprintf(p, sizeof(p), "%s/x6", d);
			if (raw_write_file(p, 1, 0) != 0)
				FAIL("shared: create x6");
			break;
		case 10: /* search permission on s taken away (and back below) */
			snprintf(p, sizeof(p), "%s/s", d);
			syscall(SYS_fchmodat, AT_FDCWD, p, 0600);
			break;
		case 11:
			snprintf(p, sizeof(p), "%s/s", d);
			syscall(SYS_fchmodat, AT_FDCWD, p, 0755);
			break;
		}
	}
	return 0;
}

static int helper_shared_child(const char *base)
{
	static const char *const dirs[] = { "d", "old" };
	char p[PLEN];
	pid_t pid;
	struct timespec ts = { 0, 20000000L };

	/* A first lookup sets this process's catch-up target (what was queued
	 * then); it is published within 20 ms.  Before it, the process may
	 * neither take nor offer shared entries: on a loaded machine a child
	 * that went straight on could end before the watcher caught up, and
	 * then ten children shared nothing (seen once: listings_shared 0). */
	snprintf(p, sizeof(p), "%s/d/x0", base);
	if (check_exact(p, "shared child, first lookup", 0))
		return 1;
	nanosleep(&ts, NULL);
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++)
			for (size_t i = 0; i < sizeof(shared_names) / sizeof(shared_names[0]); i++) {
				snprintf(p, sizeof(p), "%s/%s/%s", base, dirs[k], shared_names[i]);
				if (check_exact(p, "shared child", pass))
					return 1;
			}
	/* A change below d/s, whose watch may be the shared one: made by a
	 * child with raw syscalls, seen after wait() (clause 2: the records
	 * of an adopted watch are ours). */
	snprintf(p, sizeof(p), "%s/d/s/by-%d", base, (int)getpid());
	if (check_exact(p, "shared child, before its child", 0))
		return 1;
	pid = fork();
	if (pid == 0)
		_exit(raw_write_file(p, 1, 0) == 0 ? 0 : 1);
	if (reap(pid) != 0)
		FAIL("shared child: its child failed");
	if (check_exact(p, "shared child, after its child's create", 0))
		return 1;
	syscall(SYS_unlinkat, AT_FDCWD, p, 0);
	if (n_init)
		LEFT_SESSION("shared child: not in the session");
	return 0;
}

/* (n) A directory's attributes shared, then changed by an inode-flag ioctl
 * through the shim (no inotify event): children stat base/x and base/x/y
 * (the first child's answers are offered to the session, the next ones'
 * may come from there) before and after this process sets and clears
 * FS_NODUMP_FL on base/x, each comparing with the kernel.  Exit 77 if the
 * filesystem refuses the flag. */
static int helper_dir_attrs(const char *base)
{
	char x[PLEN], y[PLEN];
	unsigned int fl = 0;
	int fd;

	snprintf(x, sizeof(x), "%s/x", base);
	snprintf(y, sizeof(y), "%s/x/y", base);
	if (raw_mkdir(x) != 0 || raw_mkdir(y) != 0)
		FAIL("dir attrs: mkdir");
	for (int round = 0; round < 6; round++) {
		if (reap(spawn_helper("dir-attrs-child", base, "")) != 0)
			FAIL("dir attrs: child %d failed", round);
		if (round % 2 == 0)
			continue;
		fd = open(x, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &fl) != 0) {
			close(fd);
			return 77;
		}
		fl ^= FS_NODUMP_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &fl) != 0) {
			close(fd);
			return 77;
		}
		close(fd);
	}
	return 0;
}

static int helper_dir_attrs_child(const char *base)
{
	char x[PLEN], y[PLEN];

	snprintf(x, sizeof(x), "%s/x", base);
	snprintf(y, sizeof(y), "%s/x/y", base);
	for (int i = 0; i < 3; i++)
		if (check_exact(x, "dir attrs child", i) || check_exact(y, "dir attrs child", i))
			return 1;
	if (n_init)
		FAIL("dir attrs child: not in the session");
	return 0;
}

/* (e) a child whose euid differs from its uid does not attach, and is exact. */
static int helper_euid(const char *base)
{
	struct stat st;
	pid_t pid;

	if (stat(base, &st) != 0 || n_init)
		LEFT_SESSION("not in the session");
	pid = fork();
	if (pid == 0) {
		if (setresuid(65534, 0, 0) != 0)
			_exit(2);
		if (exact_rounds(base, 50, "e"))
			_exit(1);
		/* Its own instance: one that succeeded (a call refused at the
		 * user's instance limit is asked again later). */
		if (n_init_ok != 1) {
			fprintf(stderr, "euid child: %d inotify_init1, %d succeeded (attached?)\n",
				n_init, n_init_ok);
			_exit(1);
		}
		_exit(0);
	}
	return reap(pid);
}

/* Spawn helper `child` (base, the wait in ms) in rounds until field of the
 * RCUWALK_STATS records (each child's is written when it exits) exceeds
 * `above`, at least `min` rounds, at most `max`: the rounds run, or -1 (a
 * child failed).  Which child takes a shared entry is a timing (a record
 * published during its lookups keeps it from offering), so the wait for the
 * watcher's publishing doubles every 4 rounds (20 ms on), for a loaded
 * machine where 20 ms is not enough. */
static int rounds_until(const char *child, const char *base, const char *field, long long above,
			int min, int max)
{
	const char *stats = getenv("RCUWALK_STATS");
	char n[16];
	int round;

	for (round = 0; round < max; round++) {
		if (round >= min && stats && stats_field(stats, field) > above)
			break;
		snprintf(n, sizeof(n), "%d", 20 << (round / 4));
		if (reap(spawn_helper(child, base, n)) != 0)
			return -1;
	}
	return round;
}

/* A file whose name a child took from the shared entries (typed, never
 * lstat'ed: D_LISTED), then access()ed: the access needs its lstat, which
 * must come from the kernel once, not be answered from the shared entries
 * again (that rehashed the same entry and walked again, 256 times, then
 * passed through: ~255 invalidations a call). */
#define RELIST_ROUNDS 16

static int helper_relist(const char *base)
{
	char d[PLEN], p[PLEN];
	FILE *out;
	int round;

	snprintf(d, sizeof(d), "%s/d", base);
	if (raw_mkdir(d) != 0)
		FAIL("relist: mkdir");
	snprintf(p, sizeof(p), "%s/f", d);
	if (raw_write_file(p, 1, 0) != 0)
		FAIL("relist: create");
	/* Rounds until a child has taken d/f's name: at least 4, at most
	 * RELIST_ROUNDS (the wait 20 to 160 ms). */
	round = rounds_until("relist-child", base, "names_shared", 0, 4, RELIST_ROUNDS);
	if (round < 0)
		FAIL("relist: a child failed");
	snprintf(p, sizeof(p), "%s/rounds", base);
	out = fopen(p, "w");
	if (!out || fprintf(out, "%d\n", round) < 0 || fclose(out) != 0)
		FAIL("relist: write %s", p);
	return 0;
}

static int helper_relist_child(const char *base, int wait_ms)
{
	char p[PLEN], log[PLEN];
	int modes[] = { F_OK, R_OK, W_OK, X_OK };
	struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };

	/* A file written in base, which the session watches, behind the
	 * shim: an event is queued when we first ask (as a build's processes
	 * start while others' outputs are written). */
	snprintf(log, sizeof(log), "%s/log", base);
	if (raw_write_file(log, 1, 1) != 0)
		FAIL("relist child: write log");
	/* A miss in d: the kernel lets us search it, so names in it may come
	 * from the shared entries. */
	snprintf(p, sizeof(p), "%s/d/absent", base);
	if (check_exact(p, "relist child", 0))
		return 1;
	/* What was queued then is published within wait_ms; the write just
	 * before the lookups below is still queued when they ask (the watcher
	 * waits up to 2 ms for more): they need only the first. */
	nanosleep(&ts, NULL);
	if (raw_write_file(log, 1, 1) != 0)
		FAIL("relist child: write log");
	snprintf(p, sizeof(p), "%s/d/f", base);
	for (int i = 0; i < 4; i++) {
		int a = access(p, modes[i]) == 0 ? 0 : errno;
		int b = syscall(SYS_faccessat, AT_FDCWD, p, modes[i]) == 0 ? 0 : errno;

		if (a != b)
			FAIL("relist: access(%s, %d): %d, the kernel %d", p, modes[i], a, b);
	}
	return check_exact(p, "relist child", 1);
}

/* (early) "From the session's listing" (cache/dcache_populate.c): base/d
 * holds `files` names (made behind the shim); this process completes it with
 * five absent names through the shim (its listing read from the kernel and
 * offered to the session); then children, each asking two names of d, one
 * present and one absent (too few to complete d by the probes: 2 absent or 8
 * present), until one has taken the session's listing (listings_shared) or
 * 8 have run; then d/late is made behind the shim and a last child must find
 * it (the listing taken early is checked as any other). */
static int helper_early(const char *base, const char *files)
{
	char d[PLEN], p[PLEN];
	struct stat st;
	int n = atoi(files);

	snprintf(d, sizeof(d), "%s/d", base);
	if (raw_mkdir(d) != 0)
		FAIL("early: mkdir");
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/f%d", d, i);
		if (raw_write_file(p, 1, 0) != 0)
			FAIL("early: create %s", p);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/x%d", d, i);
		if (stat(p, &st) == 0 || errno != ENOENT)
			FAIL("early: %s not absent", p);
	}
	if (rounds_until("early-child", base, "listings_shared", 0, 1, 8) < 0)
		FAIL("early: a child failed");
	snprintf(p, sizeof(p), "%s/late", d);
	if (raw_write_file(p, 1, 0) != 0)
		FAIL("early: create %s", p);
	if (reap(spawn_helper("early-child", base, "late")) != 0)
		FAIL("early: the last child failed");
	return 0;
}

/* wait: the ms to wait first (rounds_until), or "late": look d/late up. */
static int helper_early_child(const char *base, const char *wait)
{
	char p[PLEN];
	int ms = atoi(wait);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (!strcmp(wait, "late")) {
		snprintf(p, sizeof(p), "%s/d/late", base);
		return check_exact(p, "early child, after d/late was made", 0);
	}
	nanosleep(&ts, NULL);
	snprintf(p, sizeof(p), "%s/d/f0", base);
	if (check_exact(p, "early child", 0))
		return 1;
	snprintf(p, sizeof(p), "%s/d/y%d", base, (int)getpid());
	if (check_exact(p, "early child", 1))
		return 1;
	return check_exact(p, "early child", 2);
}

/* A regular file's attributes shared by the session (ENT_FILE: the file's
 * own watch vouches for them) stay exact after changes that its
 * directory's watch sees under its name without a new name (a write, a
 * chmod, a truncation, new times) or not at all (a hard link made in a
 * directory no process of the session looks at; one made and removed).  Before
 * each change, children look inc/f.h up until one has taken its
 * attributes from the shared entries (files_shared grows: the first offers
 * the name, the second the attributes, the third takes them); then a
 * child makes the change behind the shim and is waited for; then a new
 * child's stat must be the kernel's. */
#define FILE_ATTR_STEPS 6
#define FILE_ATTR_TRIES 24 /* the wait 20 ms to 640 ms: CI's two suites at once */

static int file_attrs_change(const char *base, int step)
{
	char f[PLEN], g[PLEN];
	struct timespec t[2] = { { 1000000000L + step, 0 }, { 1000000000L + step, 0 } };

	snprintf(f, sizeof(f), "%s/inc/f.h", base);
	snprintf(g, sizeof(g), "%s/hide/g", base);
	switch (step) {
	case 0: /* a write: the size */
		return raw_write_file(f, 3, 1);
	case 1: /* a chmod: the mode */
		return (int)syscall(SYS_fchmodat, AT_FDCWD, f, 0600);
	case 2: /* a truncation */
		return (int)syscall(SYS_truncate, f, 1);
	case 3: /* new times */
		return (int)syscall(SYS_utimensat, AT_FDCWD, f, t, 0);
	case 4: /* a hard link where nobody looks, removed again: st_nlink
		 * 1 as before, a new ctime (step 3 set it a tick earlier) */
		if (syscall(SYS_linkat, AT_FDCWD, f, AT_FDCWD, g, 0) != 0)
			return -1;
		return (int)syscall(SYS_unlinkat, AT_FDCWD, g, 0);
	default: /* a hard link where nobody looks: st_nlink 2 */
		return (int)syscall(SYS_linkat, AT_FDCWD, f, AT_FDCWD, g, 0);
	}
}

static int helper_file_attrs(const char *base)
{
	char p[PLEN], s[4];
	const char *stats = getenv("RCUWALK_STATS");
	long long before = 0, now;

	snprintf(p, sizeof(p), "%s/inc", base);
	if (raw_mkdir(p) != 0)
		FAIL("file attrs: mkdir inc");
	snprintf(p, sizeof(p), "%s/hide", base);
	if (raw_mkdir(p) != 0)
		FAIL("file attrs: mkdir hide");
	snprintf(p, sizeof(p), "%s/inc/f.h", base);
	if (raw_write_file(p, 10, 0) != 0)
		FAIL("file attrs: create");
	if (!stats)
		FAIL("file attrs: no RCUWALK_STATS");
	for (int step = 0; step < FILE_ATTR_STEPS; step++) {
		int k = rounds_until("file-attrs-child", base, "files_shared", before, 1,
				     FILE_ATTR_TRIES + 1);

		if (k < 0)
			FAIL("file attrs: a child failed before step %d", step);
		now = stats_field(stats, "files_shared");
		if (now <= before)
			FAIL("file attrs: no child took f.h's attributes before step %d", step);
		before = now;
		snprintf(s, sizeof(s), "%d", step);
		if (reap(spawn_helper("file-attrs-change", base, s)) != 0)
			FAIL("file attrs: change %d failed", step);
		if (reap(spawn_helper("file-attrs-child", base, "0")) != 0)
			FAIL("file attrs: not exact after change %d", step);
		now = stats_field(stats, "files_shared");
		if (now > before) /* the stale entry would have answered */
			FAIL("file attrs: attributes taken from the shared entries right after change %d",
			     step);
	}
	return 0;
}

static int helper_file_attrs_child(const char *base, int wait_ms)
{
	char p[PLEN];
	struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };

	/* A miss in inc first: the kernel lets us search it. */
	snprintf(p, sizeof(p), "%s/inc/absent", base);
	if (check_exact(p, "file attrs child", 0))
		return 1;
	nanosleep(&ts, NULL);
	snprintf(p, sizeof(p), "%s/inc/f.h", base);
	for (int i = 0; i < 3; i++)
		if (check_exact(p, "file attrs child", 1 + i))
			return 1;
	if (n_init)
		FAIL("file attrs child: not in the session");
	return 0;
}

/* Search answers (ENT_SEARCH) are keyed by credentials.  priv is 0700 and
 * belongs to nobody: root may search it with CAP_DAC_OVERRIDE, a root
 * without it and CAP_DAC_READ_SEARCH (dropped from the bounding set before
 * exec, so it still attaches: same uid) gets EACCES.  Two full children
 * (the second takes the first's answers), then one without the
 * capabilities, then a full one again; each compares every answer with the
 * kernel's.  Exit 77 where that cannot be set up (not root). */
static int helper_search(const char *base)
{
	char d[PLEN], p[PLEN];

	if (geteuid() != 0)
		return 77;
	snprintf(d, sizeof(d), "%s/priv", base);
	if (raw_mkdir(d) != 0)
		FAIL("search: mkdir");
	snprintf(p, sizeof(p), "%s/f", d);
	if (raw_write_file(p, 1, 0) != 0)
		FAIL("search: create");
	if (syscall(SYS_fchownat, AT_FDCWD, d, 65534, 65534, 0) != 0 ||
	    syscall(SYS_fchmodat, AT_FDCWD, d, 0700) != 0)
		FAIL("search: chown/chmod");
	for (int round = 0; round < 4; round++) {
		pid_t pid = fork();

		if (pid == 0) {
			if (round == 2 && (syscall(SYS_prctl, PR_CAPBSET_DROP, 1 /* CAP_DAC_OVERRIDE */, 0, 0, 0) != 0 ||
					   syscall(SYS_prctl, PR_CAPBSET_DROP, 2 /* CAP_DAC_READ_SEARCH */, 0, 0, 0) != 0))
				_exit(77);
			execl(self_exe(), self_exe(), "--helper", "search-child", base,
			      round == 2 ? "dropped" : "full", (char *)NULL);
			_exit(127);
		}
		int r = reap(pid);

		if (r == 77)
			return 77;
		if (r != 0)
			FAIL("search: child %d failed", round);
	}
	return 0;
}

static int helper_search_child(const char *base, const char *how)
{
	static const char *const names[] = { "f", "absent", "f", "absent2" };
	char p[PLEN];
	struct stat st;

	snprintf(p, sizeof(p), "%s/priv/f", base);
	errno = 0;
	if (!strcmp(how, "dropped") && (syscall(SYS_newfstatat, AT_FDCWD, p, &st, 0) == 0 || errno != EACCES))
		FAIL("search child: the kernel lets us search priv without the capabilities");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/priv/%s", base, names[i]);
		if (check_exact(p, how, (int)i))
			return 1;
	}
	return 0;
}

/* (s) Liveness by progress (doc/coherence.md, clause 4 in a session): the
 * watcher stopped (how = "stop": SIGSTOP for 3 s), killed ("kill") or
 * starved ("starve": SCHED_IDLE beside a SCHED_FIFO busy loop on its one
 * CPU, for as long as the check takes); a file made
 * behind the shim's back (a raw syscall: as by an unrelated writer) must be
 * seen by this process's lookups within STALL_BOUND_MS.  "stop-sync": the
 * watcher stopped, this process's own mkdir (a sync point) must not hold
 * its next lookup longer than that.  Prints the staleness in ms. */
#define STALL_BOUND_MS 100.0

/* Every thread of this process on the CPUs in set (sched_setaffinity takes
 * one thread); threads started later inherit it.  0, or -1 with errno. */
static int pin_own_threads(const cpu_set_t *set)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int r = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (e->d_name[0] == '.' || *end != '\0')
			continue;
		if (sched_setaffinity((pid_t)tid, sizeof(*set), set) != 0 && errno != ESRCH)
			r = -1;
	}
	closedir(d);
	return r;
}

static int helper_stall(const char *base, const char *how)
{
	char f[PLEN];
	pid_t busy[1];
	int nbusy = 0, lock, stop = !strcmp(how, "stop") || !strcmp(how, "stop-sync");
	unsigned int pid;
	struct stat st;
	double t0, t_stop, stale;

	snprintf(f, sizeof(f), "%s/new", base);
	/* Lookups for 150 ms: the directory watched, the name cached
	 * negative, the reader thread started (after 100 ms). */
	if (settle_in(f, base, "stall", how))
		return NO_SESSION;
	if (session_pid(&pid) != 0)
		FAIL("stall %s: cannot read the ring's header", how);
	/* The measured window under the machine's CPU lock (cpu_lock.h):
	 * exclusive where this test takes a CPU away, shared elsewhere. */
	lock = cpu_lock(strcmp(how, "starve") ? LOCK_SH : LOCK_EX);
	t_stop = mono_now();
	if (stop && kill((pid_t)pid, SIGSTOP) != 0)
		FAIL("stall %s: SIGSTOP %u: %s", how, pid, strerror(errno));
	if (!strcmp(how, "kill") && kill((pid_t)pid, SIGKILL) != 0)
		FAIL("stall %s: SIGKILL %u: %s", how, pid, strerror(errno));
	if (!strcmp(how, "starve")) {
		/* The watcher at SCHED_IDLE on one CPU, beside a busy loop at
		 * SCHED_FIFO (else nice -20) on that CPU; this process may run
		 * on the others. */
		struct sched_param sp = { 0 };
		cpu_set_t cpus, one;
		int k = 0;

		if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
			FAIL("stall starve: sched_getaffinity: %s", strerror(errno));
		if (CPU_COUNT(&cpus) < 2)
			return 77; /* this process would starve as well */
		while (k < CPU_SETSIZE && !CPU_ISSET(k, &cpus))
			k++;
		CPU_ZERO(&one);
		CPU_SET(k, &one);
		/* Every thread of this process (the shim's reader among them)
		 * off that CPU: what is measured is the shim's bound, not how
		 * long a thread of ours waits behind the loop. */
		CPU_CLR(k, &cpus);
		if (pin_own_threads(&cpus) != 0)
			FAIL("stall starve: this process's threads off CPU %d: %s", k,
			     strerror(errno));
		if (sched_setaffinity((pid_t)pid, sizeof(one), &one) != 0 ||
		    sched_setscheduler((pid_t)pid, SCHED_IDLE, &sp) != 0)
			FAIL("stall starve: the watcher on CPU %d at SCHED_IDLE: %s", k,
			     strerror(errno));
		busy[0] = fork();
		if (busy[0] == 0) {
			cpu_unlock(lock); /* the lock is the parent's to give back */
			alarm(30);
			struct sched_param fifo = { .sched_priority = 1 };

			(void)sched_setaffinity(0, sizeof(one), &one);
			/* SCHED_FIFO (root): the CPU is the watcher's only in
			 * the kernel's RT throttling gaps (50 ms a second). */
			if (sched_setscheduler(0, SCHED_FIFO, &fifo) != 0)
				(void)setpriority(PRIO_PROCESS, 0, -20);
			for (;;)
				__asm__ volatile("" ::: "memory");
		}
		nbusy = busy[0] > 0;
	}
	sleep_ms(50); /* the watcher stopped, or the busy loops running */
	t0 = mono_now();
	if (!strcmp(how, "stop-sync")) {
		snprintf(f, sizeof(f), "%s/own", base);
		if (mkdir(f, 0755) != 0 || stat(f, &st) != 0)
			FAIL("stall stop-sync: mkdir+stat %s: %s", f, strerror(errno));
	} else {
		long r = syscall(SYS_openat, AT_FDCWD, f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (r < 0)
			FAIL("stall %s: create %s: %s", how, f, strerror(errno));
		syscall(SYS_close, r);
		t0 = mono_now();
		while (stat(f, &st) != 0 && mono_now() - t0 < 3.0)
			;
	}
	stale = (mono_now() - t0) * 1000.0;
	if (stop) {
		/* The stop lasts 3 s, as in the issue; only then does the
		 * watcher go on (and the session end as usual). */
		while (!strcmp(how, "stop") && mono_now() - t_stop < 3.0)
			sleep_ms(10);
		kill((pid_t)pid, SIGCONT);
	}
	for (int i = 0; i < nbusy; i++) {
		kill(busy[i], SIGKILL);
		waitpid(busy[i], NULL, 0);
	}
	cpu_unlock(lock);
	fprintf(stderr, "stall %s: seen after %.3f ms (bound %.0f ms)\n", how, stale,
		STALL_BOUND_MS);
	if (stale > STALL_BOUND_MS)
		FAIL("stall %s: stale for %.3f ms > %.0f ms", how, stale, STALL_BOUND_MS);
	if (check_exact(f, "after the stall", 0))
		return 1;
	if (!strcmp(how, "kill"))
		remove_dead_session();
	return 0;
}

/* tracer_start() (coh_helpers.h), saying why it did not. */
static int start_tracer(pid_t w, const char *log, const char *what, pid_t *tracer)
{
	int r = tracer_start(w, log, 2, tracer);

	if (r < 0)
		FAIL("%s: pipe: %s", what, strerror(errno));
	if (r == 77)
		fprintf(stderr, "%s: ptrace of %d refused\n", what, (int)w);
	return r;
}

/* A sync point while traced: mkdir base/own, then its stat; *took: seconds.
 * 0, or 1 if either call failed. */
static int traced_sync_point(const char *base, const char *what, double *took)
{
	char f[PLEN];
	struct stat st;
	double t0 = mono_now();

	snprintf(f, sizeof(f), "%s/own", base);
	if (mkdir(f, 0755) != 0 || stat(f, &st) != 0)
		FAIL("%s: mkdir+stat %s: %s", what, f, strerror(errno));
	*took = mono_now() - t0;
	fprintf(stderr, "%s: a sync point took %.3f ms (bound %.0f ms)\n", what, *took * 1000.0,
		TRACED_SYNC_BOUND_S * 1000.0);
	return 0;
}

/* This process traced as above, as `strace -f -o LOG rcuwalk -- CMD` traces
 * the command: applying an event may lstat() its name, which writes a line,
 * which the watcher publishes as the next record.  A sync point (an own
 * mkdir, then its stat) returns within TRACED_SYNC_BOUND_S and answers
 * exactly.  77: ptrace refused. */
static int helper_traced_self(const char *base)
{
	char f[PLEN], log[PLEN];
	pid_t tracer;
	struct stat st;
	double t0, took;
	int r;

	snprintf(f, sizeof(f), "%s/new", base);
	snprintf(log, sizeof(log), "%s/trace.log", base);
	if (settle_in(f, base, "traced-self", ""))
		return NO_SESSION;
	(void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: a child may */
	if ((r = start_tracer(getpid(), log, "traced-self", &tracer)) != 0)
		return r;
	/* This thread's lookups of the logs (their sizes, cached) grow them. */
	snprintf(f, sizeof(f), "%s.2", log);
	memset(&st, 0, sizeof(st));
	for (t0 = mono_now(); mono_now() - t0 < 2.0;)
		if (stat(f, &st) == 0 && stat(log, &st) == 0 && st.st_size > 26 * 200)
			break;
	r = st.st_size <= 26 * 200 ? 2 : traced_sync_point(base, "traced-self", &took);
	snprintf(f, sizeof(f), "%s/own", base);
	if (!r)
		r = check_exact(f, "traced-self", 0);
	kill(tracer, SIGKILL);
	waitpid(tracer, NULL, 0);
	if (r == 2)
		FAIL("traced-self: the tracer wrote %lld bytes in 2 s", (long long)st.st_size);
	if (r)
		return 1;
	if (took > TRACED_SYNC_BOUND_S)
		FAIL("traced-self: a sync point took %.3f s > %.1f s", took, TRACED_SYNC_BOUND_S);
	return 0;
}

/* The watcher traced as above: a sync point (an own mkdir, then its stat)
 * returns within TRACED_SYNC_BOUND_S and answers exactly.  The tracer is left
 * running; base/pids gets the watcher's pid and the tracer's, for the test to
 * see the watcher leave while it is still traced.  77: ptrace refused. */
static int helper_traced(const char *base)
{
	char f[PLEN], log[PLEN];
	unsigned int pid;
	pid_t tracer;
	struct stat st;
	double t0, took;
	FILE *out;
	int r;

	snprintf(f, sizeof(f), "%s/new", base);
	snprintf(log, sizeof(log), "%s/trace.log", base);
	/* Lookups for 150 ms: the directory watched, the name cached negative. */
	if (settle_in(f, base, "traced", ""))
		return NO_SESSION;
	if (session_pid(&pid) != 0)
		FAIL("traced: cannot read the ring's header");
	if ((r = start_tracer((pid_t)pid, log, "traced", &tracer)) != 0)
		return r;
	/* The feedback runs: the log grows by itself. */
	memset(&st, 0, sizeof(st));
	for (t0 = mono_now(); mono_now() - t0 < 2.0; sleep_ms(5))
		if (syscall(SYS_newfstatat, AT_FDCWD, log, &st, 0) == 0 && st.st_size > 26 * 200)
			break;
	if (st.st_size <= 26 * 200)
		FAIL("traced: the tracer wrote %lld bytes in 2 s", (long long)st.st_size);
	if (traced_sync_point(base, "traced", &took))
		return 1;
	if (took > TRACED_SYNC_BOUND_S)
		FAIL("traced: a sync point took %.3f s > %.1f s", took, TRACED_SYNC_BOUND_S);
	snprintf(f, sizeof(f), "%s/own", base);
	if (check_exact(f, "traced", 0))
		return 1;
	snprintf(f, sizeof(f), "%s/pids", base);
	out = fopen(f, "w");
	if (!out || fprintf(out, "%u %d\n", pid, (int)tracer) < 0 || fclose(out) != 0)
		FAIL("traced: write %s", f);
	return 0;
}

static int helper(int argc, char **argv)
{
	const char *m = argv[2], *a = argc > 3 ? argv[3] : "", *b = argc > 4 ? argv[4] : "";

	/* "starting" makes a session of its own (held_watcher). */
	if (!getenv("RCUWALK_SESSION") && strcmp(m, "mutate") && strcmp(m, "starting")) {
		fprintf(stderr, "[%d] helper %s: no RCUWALK_SESSION (no watcher)\n", (int)getpid(), m);
		return NO_SESSION;
	}
	if (!strcmp(m, "tree"))
		return helper_tree(a);
	if (!strcmp(m, "tree-child"))
		return helper_tree_child(a, atoi(b));
	if (!strcmp(m, "mutate"))
		return helper_mutate(a, atoi(b));
	if (!strcmp(m, "exact"))
		return helper_exact(a);
	if (!strcmp(m, "limit"))
		return helper_limit(a, b);
	if (!strcmp(m, "limit-child"))
		return helper_limit_child(a);
	if (!strcmp(m, "kill"))
		return helper_kill(a);
	if (!strcmp(m, "term"))
		return helper_term(a);
	if (!strcmp(m, "euid"))
		return helper_euid(a);
	if (!strcmp(m, "flood"))
		return helper_flood(a);
	if (!strcmp(m, "flood-child"))
		return helper_flood_child(a);
	if (!strcmp(m, "close-out"))
		return helper_close_out();
	if (!strcmp(m, "traced"))
		return helper_traced(a);
	if (!strcmp(m, "traced-self"))
		return helper_traced_self(a);
	if (!strcmp(m, "foreign"))
		return helper_foreign(a, b);
	if (!strcmp(m, "shared"))
		return helper_shared(a);
	if (!strcmp(m, "shared-child"))
		return helper_shared_child(a);
	if (!strcmp(m, "dir-attrs"))
		return helper_dir_attrs(a);
	if (!strcmp(m, "relist"))
		return helper_relist(a);
	if (!strcmp(m, "file-attrs"))
		return helper_file_attrs(a);
	if (!strcmp(m, "file-attrs-child"))
		return helper_file_attrs_child(a, atoi(b));
	if (!strcmp(m, "file-attrs-change"))
		return file_attrs_change(a, atoi(b)) == 0 ? 0 : 1;
	if (!strcmp(m, "search"))
		return helper_search(a);
	if (!strcmp(m, "attach"))
		return helper_attach(a);
	if (!strcmp(m, "attach-stopped"))
		return helper_attach_stopped(a);
	if (!strcmp(m, "attach-stopped-child"))
		return helper_attach_stopped_child(a);
	if (!strcmp(m, "attach-way"))
		return helper_attach_way(a, b);
	if (!strcmp(m, "search-child"))
		return helper_search_child(a, b);
	if (!strcmp(m, "early"))
		return helper_early(a, b);
	if (!strcmp(m, "early-child"))
		return helper_early_child(a, b);
	if (!strcmp(m, "relist-child"))
		return helper_relist_child(a, atoi(b));
	if (!strcmp(m, "dir-attrs-child"))
		return helper_dir_attrs_child(a);
	if (!strcmp(m, "foreign-child"))
		return helper_foreign_child(a, b);
	if (!strcmp(m, "dead-idle"))
		return helper_dead_idle(a);
	if (!strcmp(m, "dead-forked"))
		return helper_dead_forked(a);
	if (!strcmp(m, "unrelated-mount"))
		return helper_unrelated_mount(a);
	if (!strcmp(m, "keep"))
		return helper_keep(a, b);
	if (!strcmp(m, "kill-leave"))
		return helper_kill_leave(a);
	if (!strcmp(m, "starting"))
		return helper_starting(a, b);
	if (!strcmp(m, "starting-child"))
		return helper_starting_child(a, b);
	if (!strcmp(m, "noop"))
		return 0;
	if (!strcmp(m, "sealed"))
		return helper_sealed(a);
	if (!strcmp(m, "fresh"))
		return helper_fresh(a);
	if (!strcmp(m, "kill-loop"))
		return helper_kill_loop(a, (unsigned int)strtoul(b, NULL, 10));
	if (!strcmp(m, "stall"))
		return helper_stall(a, b);
	if (!strcmp(m, "kill-worker"))
		return helper_kill_worker(a, b);
	FAIL("unknown helper %s", m);
}

/* ---------------------------------------------------------------------- */
/* The tests: the launcher with --session around a helper. */

/* Wait 100 ms times the try number: the instances another program holds
 * have had time to go. */
static void no_session_pause(int try)
{
	struct timespec ts = { 0, 100000000L };

	print_message("no session (try %d): the watcher found no inotify instance, or the "
		      "helper left the session (a starved watcher)\n", try + 1);
	for (int i = 0; i <= try; i++)
		nanosleep(&ts, NULL);
}

/* The launcher with `opt` (--session, --keep=N) around helper `mode`.  Its
 * XDG_RUNTIME_DIR is this run's scratch directory: sessions (and the links
 * of kept ones) live there, so that a kept session of the user's, or of
 * another suite running beside this one, is never reused here. */
/* Run the launcher without XDG_RUNTIME_DIR (as root in CI: sessions under
 * /tmp, and before issue 23 in /dev/shm). */
static int g_no_xdg;

static int run_launcher(const char *opt, const char *mode, const char *a1, const char *a2)
{
	int st = -1;

	for (int try = 0; try < 10; try++) {
		pid_t pid = fork();

		if (pid == 0) {
			const char *l = getenv("RCUWALK_LAUNCHER");

			unsetenv("RCUWALK_SESSION");
			unsetenv("RCUWALK_SESSION_FDS");
			setenv("RCUWALK_RACY_MS", "0", 1); /* attributes cached too */
			if (g_no_xdg)
				unsetenv("XDG_RUNTIME_DIR");
			else
				setenv("XDG_RUNTIME_DIR", g_scratch, 1);
			execl(l, l, opt, "--", self_exe(), "--helper", mode, a1, a2, (char *)NULL);
			_exit(127);
		}
		st = wait_bounded(pid, 120);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != NO_SESSION)
			break;
		no_session_pause(try);
	}
	return st;
}

static int run_session(const char *mode, const char *a1, const char *a2)
{
	return run_launcher("--session", mode, a1, a2);
}

/* run_session(mode, d, ""), asserting a clean exit; exit 77 (the helper
 * could not set its case up) skips the test, saying `why`. */
static void run_session_or_skip(const char *mode, const char *d, const char *why)
{
	int st = run_session(mode, d, "");

	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: %s\n", why);
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void subdir(char *out, const char *name)
{
	snprintf(out, PLEN, "%s/%s", g_scratch, name);
	assert_int_equal(raw_mkdir(out), 0);
}

/* run_session(mode, d, arg) in a new scratch directory d called `name`, its
 * processes' RCUWALK_STATS records in stats (`<name>.stats`, PLEN bytes). */
static int run_session_stats(const char *mode, const char *name, const char *arg, char *d,
			     char *stats)
{
	int st;

	subdir(d, name);
	snprintf(stats, PLEN, "%s/%s.stats", g_scratch, name);
	setenv("RCUWALK_STATS", stats, 1);
	st = run_session(mode, d, arg);
	unsetenv("RCUWALK_STATS");
	return st;
}

static void test_session_tree_shares_one_instance(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "tree");
	st = run_session("tree", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_exact_own_and_child_changes(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "exact");
	st = run_session("exact", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_instance_limit(void **state)
{
	char d[PLEN], stats[PLEN];
	long saved;
	int st;

	(void)state;
	/* The limit is the whole user's: lowering it fails every other
	 * process of root that creates an instance meanwhile (another test
	 * run beside this one).  Only where the runner says nothing else runs. */
	if (!getenv("RCUWALK_TEST_SYSCTL")) {
		print_message("skipped: lowers a system-wide limit; set RCUWALK_TEST_SYSCTL=1 "
			      "where nothing else runs (CI's first run does)\n");
		skip();
	}
	/* Writing the value it has changes nothing: can we write it at all
	 * (root, and /proc/sys not read-only as in many containers)? */
	if (geteuid() != 0 || sysctl_rw(MAX_INST, &saved, 0) != 0 ||
	    sysctl_rw(MAX_INST, &saved, 1) != 0) {
		print_message("skipped: cannot lower " MAX_INST " (not root, or read-only)\n");
		skip();
	}
	subdir(d, "limit");
	snprintf(stats, sizeof(stats), "%s/stats", g_scratch);
	st = run_session("limit", d, stats);
	sysctl_rw(MAX_INST, &saved, 1); /* restored, whatever the helper did */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	{
		/* Each child's record: hits > 0 (a per-process instance could
		 * not have been created under the limit). */
		static char buf[1 << 16];
		int f = (int)syscall(SYS_openat, AT_FDCWD, stats, O_RDONLY), recs = 0, good = 0;
		long n = f >= 0 ? syscall(SYS_read, f, buf, sizeof(buf) - 1) : 0;

		if (f >= 0)
			close(f);
		buf[n > 0 ? n : 0] = '\0';
		for (char *l = buf; (l = strstr(l, "rcuwalk-stats v1 ")); l++) {
			char *h = strstr(l, " hits=");
			char *nh = strstr(l, " neg_hits=");

			recs++;
			if (h && nh && (strtoll(h + 6, NULL, 10) + strtoll(nh + 10, NULL, 10)) >= 19)
				good++;
			else if (getenv("TEST_SESSION_DEBUG"))
				print_message("%.600s\n", l); /* the record of a child that did not */
		}
		print_message("limit: %d records, %d with cached answers\n", recs, good);
		assert_true(good >= 10);
	}
}

static void test_session_watcher_killed(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "kill");
	st = run_session("kill", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_watcher_terminated_removes_its_files_and_answers_stay_exact(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "term");
	st = run_session("term", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A process that needs the session while its watcher is still starting
 * (stopped here before it published its ring) waits for it, boundedly: it
 * attaches if the watcher goes on, and answers exactly from an instance of
 * its own if it does not. */
static void test_session_process_before_the_watcher_is_ready_waits_boundedly_then_attaches(void **state)
{
	static const char *const how[] = { "wait", "own" };
	char d[PLEN];

	(void)state;
	subdir(d, "starting");
	for (int i = 0; i < 2; i++) {
		int st = run_launcher("--no-session", "starting", d, how[i]);

		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/* A killed watcher's directory is removed by the next session's watcher
 * (watcher.c, reap_dead_sessions); a live session's is left alone. */
static void test_session_killed_watchers_directory_removed_by_the_next_session(void **state)
{
	char d[PLEN], p[PLEN], dead[PLEN];
	struct stat st;
	FILE *f;
	int st_, i;

	(void)state;
	subdir(d, "reap");
	st_ = run_session("kill-leave", d, "");
	assert_true(WIFEXITED(st_));
	assert_int_equal(WEXITSTATUS(st_), 0);
	snprintf(p, sizeof(p), "%s/dir", d);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(dead, sizeof(dead), f));
	fclose(f);
	assert_int_equal(lstat(dead, &st), 0); /* left behind */
	assert_true(S_ISDIR(st.st_mode));
	st_ = run_session("noop", d, "");
	assert_true(WIFEXITED(st_));
	assert_int_equal(WEXITSTATUS(st_), 0);
	for (i = 0; i < 200 && lstat(dead, &st) == 0; i++) /* the new watcher, meanwhile */
		usleep(10000);
	if (lstat(dead, &st) == 0)
		print_message("%s: still there 2 s after the next session\n", dead);
	assert_int_equal(lstat(dead, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* Issue 23, item 2: nothing the session maps can be truncated (helper_sealed). */
static void test_session_nothing_it_maps_can_be_truncated(void **state)
{
	char d[PLEN];

	(void)state;
	subdir(d, "sealed");
	run_session_or_skip("sealed", d, "no session");
}

/* Issue 23, item 4: 100,000 entries named rcuwalk-session.* in /dev/shm and
 * in /tmp (0700 directories, as a dead session's were; the reaper read
 * /dev/shm's before the watcher's first event: 0.4 s for 200,000 of
 * another user's) delay nothing: a new session sees a new file within
 * 50 ms (helper_fresh). */
static void test_session_foreign_names_in_shm_and_tmp_delay_nothing(void **state)
{
	static const char *const where[] = { "/dev/shm", "/tmp" };
	enum { N = 100000 };
	char d[PLEN], p[PLEN];
	int st, made = 0;

	(void)state;
	subdir(d, "fresh");
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < N; i++) {
			snprintf(p, sizeof(p), "%s/rcuwalk-session.t23-%d-%d", where[w], (int)getpid(), i);
			if (syscall(SYS_mkdirat, AT_FDCWD, p, 0700) != 0)
				break;
			made++;
		}
	g_no_xdg = 1;
	st = run_session("fresh", d, "");
	g_no_xdg = 0;
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < N; i++) {
			snprintf(p, sizeof(p), "%s/rcuwalk-session.t23-%d-%d", where[w], (int)getpid(), i);
			if (syscall(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR) != 0)
				break;
		}
	print_message("%d foreign-looking entries made\n", made);
	assert_int_equal(made, 2 * N);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The kill loop for RCUWALK_KILL_SECONDS (default 8): one session after
 * another, each with a worker and then the watcher SIGKILLed at random
 * points (helper_kill_loop); every answer of every worker exact. */
static void test_session_kill_loop_every_answer_exact(void **state)
{
	const char *e = getenv("RCUWALK_KILL_SECONDS");
	double secs = e && *e ? atof(e) : 8, t0 = mono_now();
	char d[PLEN], name[32], seed[16];
	int cycles = 0, st;

	(void)state;
	while (mono_now() - t0 < secs) {
		snprintf(name, sizeof(name), "killloop%d", cycles);
		subdir(d, name);
		snprintf(seed, sizeof(seed), "%d", cycles + 1);
		st = run_session("kill-loop", d, seed);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			print_message("kill loop %d (seed %s): status %#x\n", cycles, seed, st);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		cycles++;
	}
	print_message("kill loop: %d sessions in %.1f s, each with a worker and the watcher "
		      "SIGKILLed: every answer exact\n", cycles, mono_now() - t0);
	assert_true(cycles > 0);
}

/* --keep=2: a second command reuses the first one's session (same
 * directory, same watcher), attached and exact; the watcher ends about 2 s
 * after the second command, and removes its directory; a later --session
 * then starts a new one. */
static void test_session_keep_reused_then_gone_after_keep(void **state)
{
	char d[PLEN], p[PLEN], line[PLEN + 32], dir[PLEN];
	unsigned int pid = 0;
	double t0, gone;
	FILE *f;
	int st;

	(void)state;
	subdir(d, "keep");
	st = run_launcher("--keep=2", "keep", d, "first");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = run_launcher("--keep=2", "keep", d, "second");
	t0 = mono_now();
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	snprintf(p, sizeof(p), "%s/first", d);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(sscanf(line, "%s %u", dir, &pid), 2);
	/* Alive after the second command, for about its keep: the watcher
	 * removes its directory as it leaves (its pid may stay a zombie until
	 * whoever inherited it reaps it). */
	assert_int_equal(kill((pid_t)pid, 0), 0);
	assert_int_equal(access(dir, F_OK), 0);
	while (access(dir, F_OK) == 0 && mono_now() - t0 < 10)
		usleep(20000);
	gone = mono_now() - t0;
	print_message("kept session %s (watcher %u) gone %.2f s after the second command\n", dir,
		      pid, gone);
	assert_true(gone >= 1.5 && gone < 6.0); /* 2 s, and a loaded machine's slack */
	/* Nothing to reuse now: a new session. */
	st = run_launcher("--session", "keep", d, "other");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_unrelated_mount_seen_within_1s(void **state)
{
	char d[PLEN];
	pid_t pid;
	int st;

	(void)state;
	subdir(d, "mount");
	/* A private mount namespace for the launcher, its watcher and the
	 * helper (root only; else skipped). */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (syscall(SYS_unshare, CLONE_NEWNS) != 0 ||
		    syscall(SYS_mount, NULL, "/", NULL, (unsigned long)(MS_REC | MS_PRIVATE), NULL) != 0)
			_exit(77);
		st = run_session("unrelated-mount", d, "");
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	st = wait_bounded(pid, 120);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: no private mount namespace (not root?)\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_watcher_death_seen_by_idle_process(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "deadidle");
	st = run_session("dead-idle", d, "");
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: no futex_waitv (Linux < 5.16)\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_watcher_death_seen_by_process_without_reader_thread(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "deadforked");
	st = run_session("dead-forked", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* run_session_stats(mode, name, arg), asserting a clean exit: `field`
 * summed over the session's records. */
static long long session_stats_field(const char *mode, const char *name, const char *arg,
				     const char *field)
{
	char d[PLEN], stats[PLEN];
	long long v;
	int st;

	st = run_session_stats(mode, name, arg, d, stats);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	v = stats_field(stats, field);
	assert_true(v >= 0);
	return v;
}

/* One run of helper_foreign (child `what`): the process's invalidations. */
static long long foreign_invalidations(const char *what, int attempt)
{
	char name[48];

	snprintf(name, sizeof(name), "foreign-%s-%d", what, attempt);
	return session_stats_field("foreign", name, what, "invalidations");
}

/* A session process's cached file keeps its attributes while another
 * process of the session writes in a directory the first never looked at:
 * as many invalidations as when the other only looks (they escalated to
 * every file's attributes, once per foreign record).  Other programs'
 * changes in /tmp, an ancestor, can add some: five tries. */
static void test_session_foreign_directory_records_reach_nothing(void **state)
{
	long long look = -1, write_ = -1;

	(void)state;
	for (int attempt = 0; attempt < 5; attempt++) {
		look = foreign_invalidations("look", attempt);
		write_ = foreign_invalidations("write", attempt);
		print_message("invalidations: %lld with a child that looks, %lld with one that "
			      "writes\n", look, write_);
		if (write_ == look)
			break;
	}
	assert_int_equal(write_, look);
}

/* The "shared" scenario (below) in a session of its own (subdirectory
 * `name`), its processes' records in stats (PLEN bytes); every answer it
 * checks exact.  Without the path table (the default), which would answer
 * most of the absent names before any listing is needed (its own test). */
static void run_shared_scenario(const char *name, char *stats)
{
	char d[PLEN];
	int st;

	subdir(d, name);
	snprintf(stats, PLEN, "%s/%s.stats", g_scratch, name);
	setenv("RCUWALK_STATS", stats, 1);
	unsetenv("RCUWALK_SHARED_PATHS");
	st = run_session("shared", d, "");
	unsetenv("RCUWALK_STATS");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Children of a session take a directory's listing and a subdirectory's
 * watch from the shared entries (at least one of ten each; they are offered
 * only by a process that has applied every record), and each answer equals
 * the kernel's after every change made behind the shim between two
 * children: a create, a removal, a rename in the directory, a create in a
 * subdirectory, the directory renamed away and replaced; and after a
 * grandchild's create below a shared watch (seen after wait()). */
static void test_session_shared_listings_exact_across_processes(void **state)
{
	char stats[PLEN];
	long long shared, watches, names;

	(void)state;
	run_shared_scenario("shared", stats);
	shared = stats_field(stats, "listings_shared");
	watches = stats_field(stats, "watches_shared");
	names = stats_field(stats, "names_shared");
	print_message("listings taken from the shared ones: %lld, watches: %lld, names: %lld\n",
		      shared, watches, names);
	assert_true(shared >= 1);
	assert_true(watches >= 1);
	assert_true(names >= 1);
}

/* The listings the children of helper_early took from the session, for a
 * directory of `files` names; every answer they gave exact. */
static long long early_listings(const char *name, const char *files)
{
	unsetenv("RCUWALK_SHARED_PATHS");
	return session_stats_field("early", name, files, "listings_shared");
}

/* A later process's first name in a directory the session has listed, not
 * known to the session by itself, completes the directory from the
 * session's listing: no lstat of the name, nor of the next one (before,
 * two absent names were asked of the kernel in every directory first:
 * ~100 lstats a cc1 of the generated project).  Children asking one
 * present and one absent name take the listing (0 before). */
static void test_session_later_process_completes_a_directory_from_the_session_listing_at_once(
	void **state)
{
	long long n = early_listings("early-small", "20");

	(void)state;
	print_message("listings taken by children asking 2 names each: %lld\n", n);
	assert_true(n >= 1);
}

/* ... but not a listing of more than EARLY_MAX (128) names: a process that
 * asks one name of a large directory would copy all of them.  The probes
 * decide there, as without a session. */
static void test_session_large_directory_is_not_completed_at_its_first_name(void **state)
{
	long long n = early_listings("early-large", "200");

	(void)state;
	assert_int_equal(n, 0);
}

/* The shared path table (cache/dcache_spath.c): in the scenario above the
 * children's negative answers (ENOENT, ENOTDIR, through a symlink, below a
 * trailing slash) are offered and later children answer from them, exact
 * after every change the parent made between them. */
static void test_session_shared_path_answers_exact_across_processes(void **state)
{
	char d[PLEN], stats[PLEN];
	long long offered, hits;
	int st;

	(void)state;
	subdir(d, "spath");
	snprintf(stats, sizeof(stats), "%s/spath.stats", g_scratch);
	setenv("RCUWALK_STATS", stats, 1);
	setenv("RCUWALK_SHARED_PATHS", "1", 1); /* off by default */
	st = run_session("shared", d, "");
	unsetenv("RCUWALK_SHARED_PATHS");
	unsetenv("RCUWALK_STATS");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	offered = stats_field(stats, "paths_shared");
	hits = stats_field(stats, "path_hits_shared");
	print_message("negative answers offered to the shared path table: %lld, answered from it: %lld\n",
		      offered, hits);
	assert_true(offered >= 1);
	assert_true(hits >= 1);
}

/* Whether this kernel gives unique mount IDs (statx STATX_MNT_ID_UNIQUE,
 * 0x4000: Linux 6.8); struct statx's mask is its first 32 bits. */
static int kernel_has_unique_mount_ids(void)
{
	uint32_t sx[64];

	memset(sx, 0, sizeof(sx));
	return syscall(SYS_statx, AT_FDCWD, "/", AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, 0x4000u,
		       sx) == 0 &&
	       (sx[0] & 0x4000u);
}

/* A filesystem's class (preload/config.c, fs_cacheable) is learned once
 * per session: the children of the scenario above after the first take the
 * root's from the session by its unique mount ID (fs_shared >= 1), with
 * every answer exact as the scenario checks.  On a kernel without unique
 * mount IDs nothing is taken (fs_shared == 0): each process asks statfs. */
static void test_session_filesystem_class_taken_by_mount_id_where_the_kernel_has_them(void **state)
{
	char stats[PLEN];
	long long fs;
	int ids = kernel_has_unique_mount_ids();

	(void)state;
	run_shared_scenario("fsclass", stats);
	fs = stats_field(stats, "fs_shared");
	print_message("unique mount IDs: %s; filesystem classes taken from the session: %lld\n",
		      ids ? "yes" : "no (Linux < 6.8)", fs);
	if (ids)
		assert_true(fs >= 1);
	else
		assert_int_equal(fs, 0);
}

/* Attaching takes the instance with pidfd_getfd where the kernel allows
 * it, without the watcher's answering thread, and over the socket where a
 * seccomp filter refuses that call; both attached and exact. */
static void test_session_attach_direct_where_allowed_else_over_the_socket(void **state)
{
	char d[PLEN];

	(void)state;
	subdir(d, "attach");
	run_session_or_skip("attach", d, "no seccomp filter could be installed");
}

/* The watcher stopped, pidfd_getfd refused: a process falls back to an
 * instance of its own within ATTACH_STOPPED_BOUND_S, exactly
 * (helper_attach_stopped). */
static void test_session_stopped_watcher_socket_attach_falls_back_without_the_whole_wait(void **state)
{
	char d[PLEN];

	(void)state;
	subdir(d, "attach-stopped");
	run_session_or_skip("attach-stopped", d, "no seccomp filter could be installed");
}

/* Whether our credentials may search a directory comes from the session
 * only for processes with the same credentials (searches_shared >= 1);
 * one without CAP_DAC_OVERRIDE gets the kernel's EACCES, not the answers
 * root's search made possible (a shared ENOENT). */
static void test_session_search_answers_shared_only_with_the_same_credentials(void **state)
{
	char d[PLEN], stats[PLEN];
	long long searches;
	int st;

	(void)state;
	st = run_session_stats("search", "search", "", d, stats);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: needs root (CAP_DAC_OVERRIDE to drop)\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
	searches = stats_field(stats, "searches_shared");
	print_message("search permissions taken from the shared ones: %lld\n", searches);
	assert_true(searches >= 1);
}

/* access() of a file named by the shared entries asks the kernel for its
 * lstat once (D_LISTED), instead of replacing the entry with the same
 * shared answer until the lookup runs out of attempts (~255 invalidations
 * a call: fewer than 16 a child here); and a process uses shared entries
 * once the events queued when it first asked are published, though others
 * are queued by then (names_shared >= 1: with an empty queue required, no
 * child took d/f's name).  Which child takes it is a timing: a record
 * published during its lookups keeps it from offering what it learned, and
 * on a loaded machine the watcher may publish late; so the children run in
 * rounds, waiting longer, until one has taken it (within 4 rounds in every
 * run here, 15 names in 5 processes; CI's two concurrent suites once had 0
 * in 4 rounds of 20 ms). */
static void test_session_access_on_a_shared_file_name_asks_the_kernel_once(void **state)
{
	char d[PLEN], stats[PLEN], p[PLEN];
	long long inv, names;
	int st, rounds = -1;
	FILE *in;

	(void)state;
	st = run_session_stats("relist", "relist", "", d, stats);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	snprintf(p, sizeof(p), "%s/rounds", d);
	in = fopen(p, "r");
	assert_non_null(in);
	assert_int_equal(fscanf(in, "%d", &rounds), 1);
	fclose(in);
	inv = stats_field(stats, "invalidations");
	names = stats_field(stats, "names_shared");
	print_message("names taken from the shared ones: %lld, invalidations: %lld, children: %d\n",
		      names, inv, rounds);
	assert_true(names >= 1);
	assert_true(inv < 16LL * (rounds + 1));
}

static void test_session_shared_file_attributes_exact_after_changes_beside_their_name(void **state)
{
	char d[PLEN], stats[PLEN];
	int st;

	(void)state;
	st = run_session_stats("file-attrs", "fileattrs", "", d, stats);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	print_message("file attributes taken from the shared ones: %lld\n",
		      stats_field(stats, "files_shared"));
}

/* A directory's attributes taken from the shared ones stay exact when a
 * process of the session changes them with an inode-flag ioctl, which no
 * inotify event reports: the shim voids every shared entry before the
 * ioctl returns. */
static void test_session_shared_directory_attributes_exact_after_inode_flag_ioctl(void **state)
{
	char d[PLEN];

	(void)state;
	subdir(d, "dirattrs");
	run_session_or_skip("dir-attrs", d, "FS_NODUMP_FL refused here");
}

static void test_session_other_euid_does_not_attach(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: not root (setresuid)\n");
		skip();
	}
	subdir(d, "euid");
	chmod(d, 0777);
	st = run_session("euid", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_a_ring_behind_forgets_everything(void **state)
{
	char d[PLEN];
	int st;

	(void)state;
	subdir(d, "flood");
	st = run_session("flood", d, "");
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_watcher_keeps_no_fd_of_the_command(void **state)
{
	int p[2], st;
	pid_t pid;
	double t0, waited;
	char c;

	(void)state;
	for (int try = 0; try < 10; try++) {
		assert_int_equal(pipe(p), 0);
		pid = fork();
		if (pid == 0) {
			const char *l = getenv("RCUWALK_LAUNCHER");

			dup2(p[1], 1);
			close(p[0]);
			close(p[1]);
			execl(l, l, "--session", "--", self_exe(), "--helper", "close-out",
			      (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		t0 = mono_now();
		while (read(p[0], &c, 1) > 0)
			;
		waited = mono_now() - t0;
		close(p[0]);
		st = wait_bounded(pid, 30);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != NO_SESSION)
			break;
		no_session_pause(try);
	}
	print_message("EOF after %.3f s\n", waited);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(waited < 1.5); /* the command itself sleeps 2 s */
}

/* Liveness by progress: helper_stall(how); the staleness it prints goes to
 * the test's output. */
static void run_stall(const char *how)
{
	char d[PLEN], name[32];
	int st;

	snprintf(name, sizeof(name), "stall-%s", how);
	subdir(d, name);
	st = run_session("stall", d, how);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77) {
		print_message("skipped: one CPU (the check would starve too)\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_session_stopped_watcher_stale_at_most_100ms(void **state)
{
	(void)state;
	run_stall("stop");
}

static void test_session_stopped_watcher_holds_a_sync_point_at_most_100ms(void **state)
{
	(void)state;
	run_stall("stop-sync");
}

static void test_session_killed_watcher_stale_at_most_100ms(void **state)
{
	(void)state;
	run_stall("kill");
}

static void test_session_starved_watcher_stale_at_most_100ms(void **state)
{
	(void)state;
	run_stall("starve");
}

/* 1 if process pid exists and is not a zombie. */
static int proc_running(unsigned int pid)
{
	char p[64], buf[512], *rp;
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%u/stat", pid);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* The watcher traced, a line written into a watched directory at each of its
 * system calls (helper_traced): a sync point still returns (before: it waited
 * for as long as the tracing lasted), and the watcher leaves after the
 * command though the tracer still writes (before: never, while traced). */
static void test_session_traced_watcher_holds_no_sync_point(void **state)
{
	char d[PLEN], f[PLEN];
	unsigned int wpid = 0;
	int tpid = 0, running;
	FILE *in;
	double t0;

	(void)state;
	subdir(d, "traced");
	run_session_or_skip("traced", d, "ptrace of the watcher refused here");
	snprintf(f, sizeof(f), "%s/pids", d);
	in = fopen(f, "r");
	assert_non_null(in);
	assert_int_equal(fscanf(in, "%u %d", &wpid, &tpid), 2);
	fclose(in);
	for (t0 = mono_now(); (running = proc_running(wpid)) && mono_now() - t0 < 3.0;)
		sleep_ms(10);
	print_message("the traced watcher %s after %.3f s\n", running ? "still runs" : "left",
		      mono_now() - t0);
	kill((pid_t)tpid, SIGKILL);
	assert_false(running);
}

/* The session's process itself traced (helper_traced_self): a sync point
 * still returns, exactly. */
static void test_session_traced_process_holds_no_sync_point(void **state)
{
	char d[PLEN];

	(void)state;
	subdir(d, "traced-self");
	run_session_or_skip("traced-self", d, "ptrace of a process by its child refused here");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_tree_shares_one_instance),
		cmocka_unit_test(test_session_exact_own_and_child_changes),
		cmocka_unit_test(test_session_instance_limit),
		cmocka_unit_test(test_session_watcher_killed),
		cmocka_unit_test(test_session_watcher_terminated_removes_its_files_and_answers_stay_exact),
		cmocka_unit_test(test_session_killed_watchers_directory_removed_by_the_next_session),
		cmocka_unit_test(test_session_process_before_the_watcher_is_ready_waits_boundedly_then_attaches),
		cmocka_unit_test(test_session_nothing_it_maps_can_be_truncated),
		cmocka_unit_test(test_session_foreign_names_in_shm_and_tmp_delay_nothing),
		cmocka_unit_test(test_session_kill_loop_every_answer_exact),
		cmocka_unit_test(test_session_keep_reused_then_gone_after_keep),
		cmocka_unit_test(test_session_unrelated_mount_seen_within_1s),
		cmocka_unit_test(test_session_watcher_death_seen_by_idle_process),
		cmocka_unit_test(test_session_watcher_death_seen_by_process_without_reader_thread),
		cmocka_unit_test(test_session_foreign_directory_records_reach_nothing),
		cmocka_unit_test(test_session_shared_listings_exact_across_processes),
		cmocka_unit_test(
			test_session_later_process_completes_a_directory_from_the_session_listing_at_once),
		cmocka_unit_test(test_session_large_directory_is_not_completed_at_its_first_name),
		cmocka_unit_test(test_session_shared_path_answers_exact_across_processes),
		cmocka_unit_test(test_session_filesystem_class_taken_by_mount_id_where_the_kernel_has_them),
		cmocka_unit_test(test_session_shared_directory_attributes_exact_after_inode_flag_ioctl),
		cmocka_unit_test(test_session_access_on_a_shared_file_name_asks_the_kernel_once),
		cmocka_unit_test(test_session_shared_file_attributes_exact_after_changes_beside_their_name),
		cmocka_unit_test(test_session_search_answers_shared_only_with_the_same_credentials),
		cmocka_unit_test(test_session_attach_direct_where_allowed_else_over_the_socket),
		cmocka_unit_test(test_session_stopped_watcher_socket_attach_falls_back_without_the_whole_wait),
		cmocka_unit_test(test_session_other_euid_does_not_attach),
		cmocka_unit_test(test_session_a_ring_behind_forgets_everything),
		cmocka_unit_test(test_session_watcher_keeps_no_fd_of_the_command),
		cmocka_unit_test(test_session_stopped_watcher_stale_at_most_100ms),
		cmocka_unit_test(test_session_stopped_watcher_holds_a_sync_point_at_most_100ms),
		cmocka_unit_test(test_session_killed_watcher_stale_at_most_100ms),
		cmocka_unit_test(test_session_starved_watcher_stale_at_most_100ms),
		cmocka_unit_test(test_session_traced_watcher_holds_no_sync_point),
		cmocka_unit_test(test_session_traced_process_holds_no_sync_point),
	};

	if (argc > 2 && !strcmp(argv[1], "--helper"))
		return helper(argc, argv);
	if (!getenv("RCUWALK_TEST_SHIM") || !getenv("RCUWALK_LAUNCHER")) {
		fprintf(stderr, "test_session: needs the shim and RCUWALK_LAUNCHER; skipped\n");
		return 77;
	}
	/* TEST_SESSION_FILTER=pattern runs only the tests it matches (cmocka's
	 * filter: * and ? wildcards), for a rerun of one behaviour. */
	if (getenv("TEST_SESSION_FILTER"))
		cmocka_set_test_filter(getenv("TEST_SESSION_FILTER"));
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
