/* SPDX-License-Identifier: MIT */
/*
 * test_watch_budget.c - coherence clause 8: the shim keeps to a budget of
 * inotify watches (RCUWALK_WATCH_BUDGET), so that editors and file watchers
 * of the same user are not starved; directories that would need a watch
 * beyond it pass through uncached, with exact answers, and are counted as
 * pass_watch_limit in the statistics; a watch whose directory goes away
 * gives its place back (IN_IGNORED), so the budget does not leak.
 *
 * Each test runs a child (this binary, fork+exec'd with the shim,
 * RCUWALK_STATS and a budget) that looks names up in a scratch tree through
 * the shim and compares every answer with the raw syscall.  The child splits
 * its statistics into phases with a failing execve() (the shim writes a
 * record before every exec call, and counts from there if it fails).
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

#define NDIRS 40


/* ------------------------------------------------------------------------ */
/* The child */

static int g_mismatches;

static void check_stat(const char *p, int nofollow)
{
	struct obs got, exp;
	char why[512];

	memset(&got, 0, sizeof(got));
	errno = 0;
	got.rc = nofollow ? lstat(p, &got.st) : stat(p, &got.st);
	got.err = got.rc ? errno : 0;
	memset(&exp, 0, sizeof(exp));
	errno = 0;
	exp.rc = (int)syscall(SYS_newfstatat, AT_FDCWD, p, &exp.st, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
	exp.err = exp.rc ? errno : 0;
	if (obs_diff(&got, &exp, why, sizeof(why))) {
		if (g_mismatches++ < 5)
			fprintf(stderr, "%sstat %s: %s\n", nofollow ? "l" : "", p, why);
	}
}

static void check_access(const char *p, int mode)
{
	int r, e, kr, ke;

	errno = 0;
	r = access(p, mode);
	e = r ? errno : 0;
	errno = 0;
	kr = (int)syscall(SYS_faccessat2, AT_FDCWD, p, mode, 0);
	ke = kr ? errno : 0;
	if (r != kr || e != ke) {
		if (g_mismatches++ < 5)
			fprintf(stderr, "access %s: shim %d (%s), kernel %d (%s)\n", p, r, strerror(e), kr,
				strerror(ke));
	}
}

/* An open that fails: the error must be the kernel's. */
static void check_open_fails(const char *p)
{
	int fd, e, kfd, ke;

	errno = 0;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	e = fd < 0 ? errno : 0;
	errno = 0;
	kfd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC, 0);
	ke = kfd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (kfd >= 0)
		syscall(SYS_close, kfd);
	if ((fd < 0) != (kfd < 0) || e != ke) {
		if (g_mismatches++ < 5)
			fprintf(stderr, "open %s: shim %s, kernel %s\n", p, strerror(e), strerror(ke));
	}
}

static void check_realpath(const char *p)
{
	char buf[PATH_MAX];

	if (!realpath(p, buf) || strcmp(buf, p) != 0) {
		if (g_mismatches++ < 5)
			fprintf(stderr, "realpath %s: %s\n", p, strerror(errno));
	}
}

/* Every kind of lookup in directory d, 3 times. */
static void walk_dir(const char *d)
{
	char f[PLEN], s[PLEN], g[PLEN], miss[PLEN], fx[PLEN];

	join(f, d, "f");
	join(s, d, "s");
	join(g, s, "g");
	join(miss, d, "missing");
	join(fx, f, "x");
	for (int k = 0; k < 3; k++) {
		check_stat(f, 0);
		check_stat(s, 1);
		check_stat(g, 0);
		check_stat(miss, 0);
		check_stat(fx, 0);
		check_access(f, R_OK);
		check_access(miss, F_OK);
		check_open_fails(miss);
		check_open_fails(fx);
		check_realpath(g);
	}
}

static void make_dir(const char *d)
{
	char f[PLEN], s[PLEN], g[PLEN];

	join(f, d, "f");
	join(s, d, "s");
	join(g, s, "g");
	if (raw_mkdir(d) || raw_write_file(f, 7, 0) || raw_mkdir(s) || raw_write_file(g, 3, 0))
		exit(6);
}

/* End a statistics phase: the shim writes a record before the exec call,
 * which fails. */
static void end_phase(void)
{
	char *const argv[] = { (char *)"none", NULL };

	execve("/nonexistent-rcuwalk-phase", argv, environ);
}

/* --walk DIR: phase 1 walks DIR/w (the first directory watched below DIR)
 * and then NDIRS more directories; phase 2 removes DIR/w and stats DIR/n/f
 * (a directory never seen) 10 times.  Exit 0 if every answer was the
 * kernel's, 3 if not. */
static int walk_main(char **argv)
{
	const char *dir = argv[2];
	char d[PLEN], name[16];

	join(d, dir, "w");
	make_dir(d);
	for (int i = 0; i < NDIRS; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		join(d, dir, name);
		make_dir(d);
	}
	join(d, dir, "n");
	make_dir(d);

	/* phase 1 */
	join(d, dir, "w");
	walk_dir(d);
	for (int i = 0; i < NDIRS; i++) {
		snprintf(name, sizeof(name), "d%02d", i);
		join(d, dir, name);
		walk_dir(d);
	}
	end_phase();

	/* phase 2: w's watch goes with w (the shim's own rmdir: its event is
	 * drained at the next lookup), and a new directory may be watched */
	{
		char wf[PLEN], ws[PLEN], wg[PLEN], nf[PLEN];

		join(d, dir, "w");
		join(wf, d, "f");
		join(ws, d, "s");
		join(wg, ws, "g");
		if (unlink(wf) || unlink(wg) || rmdir(ws) || rmdir(d))
			return 7;
		join(d, dir, "n");
		join(nf, d, "f");
		for (int k = 0; k < 10; k++)
			check_stat(nf, 0);
	}
	return g_mismatches ? 3 : 0;
}

/* --userns LIMIT DIR: in a new user namespace (this process's ids mapped
 * to themselves) whose own inotify watch limit (user.max_inotify_watches) is
 * LIMIT, exec --walk DIR.  Raw system calls: the shim writes no statistics
 * record for this exec, and sees none of it.  Exit 77 where user namespaces
 * are refused (a container's seccomp profile, user.max_user_namespaces 0). */
static int write_raw(const char *path, const char *s)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0);
	long n = (long)strlen(s), w;

	if (fd < 0)
		return -1;
	w = syscall(SYS_write, fd, s, n);
	syscall(SYS_close, fd);
	return w == n ? 0 : -1;
}

static int userns_main(char **argv)
{
	char map[64];
	char *const args[] = { argv[0], (char *)"--walk", argv[3], NULL };
	long uid = syscall(SYS_geteuid), gid = syscall(SYS_getegid);

	if (syscall(SYS_unshare, CLONE_NEWUSER) != 0)
		return 77;
	snprintf(map, sizeof(map), "%ld %ld 1", uid, uid);
	if (write_raw("/proc/self/uid_map", map))
		return 8;
	if (write_raw("/proc/self/setgroups", "deny"))
		return 8;
	snprintf(map, sizeof(map), "%ld %ld 1", gid, gid);
	if (write_raw("/proc/self/gid_map", map) ||
	    write_raw("/proc/sys/user/max_inotify_watches", argv[2]))
		return 8;
	syscall(SYS_execve, "/proc/self/exe", args, environ);
	return 9;
}

/* ------------------------------------------------------------------------ */
/* The tests */

#define FIELDS(X)                                                                          \
	X(hits) X(neg_hits) X(passthrough) X(pass_open) X(pass_cache) X(pass_dirfd)         \
	X(pass_form) X(pass_write) X(pass_early) X(pass_watch_limit) X(watches) X(watch_fail)  \
	X(pass_warmup)
enum {
#define X(n) F_##n,
	FIELDS(X)
#undef X
	NF
};
static const char *const fnames[] = {
#define X(n) #n,
	FIELDS(X)
#undef X
};

struct phase {
	long long v[NF];
};

/* The records of `file`, in order (at most max); returns how many. */
static int read_phases(const char *file, struct phase *out, int max)
{
	static char buf[1 << 16];
	long fd = syscall(SYS_openat, AT_FDCWD, file, O_RDONLY | O_CLOEXEC, 0), n;
	int k = 0;

	if (fd < 0)
		return 0;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *l = buf; l && *l && k < max;) {
		char *nl = strchr(l, '\n');

		if (nl)
			*nl = '\0';
		for (int i = 0; i < NF; i++) {
			char key[40], *f;

			snprintf(key, sizeof(key), " %s=", fnames[i]);
			f = strstr(l, key);
			out[k].v[i] = f ? strtoll(f + strlen(key), NULL, 10) : -1;
		}
		k++;
		l = nl ? nl + 1 : NULL;
	}
	return k;
}

static void print_phase(const char *what, const struct phase *p)
{
	char line[512];
	int n = 0;

	for (int i = 0; i < NF; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s=%lld", fnames[i], p->v[i]);
	print_message("%s:%s\n", what, line);
}

/* Run --walk in DIR with RCUWALK_WATCH_BUDGET=budget (NULL: the default),
 * in a user namespace of watch limit ns_limit if not NULL (-1 where user
 * namespaces are refused); returns the number of records read into ph. */
static int run_walk_ns(const char *name, const char *budget, const char *ns_limit,
		       struct phase *ph, int max)
{
	char dir[PLEN], stats[PLEN], se[PLEN + 16], be[64];
	const char *extra[] = { se, "RCUWALK_RACY_MS=0", budget ? be : NULL, NULL };
	const char *walk[] = { "--walk", dir, NULL }, *ns[] = { "--userns", ns_limit, dir, NULL };
	int status, n;

	assert_int_equal(helper_paths(name, dir, NULL, stats, se, sizeof(se)), 0);
	if (budget)
		snprintf(be, sizeof(be), "RCUWALK_WATCH_BUDGET=%s", budget);
	status = spawn_self_wait("test_watch_budget", ns_limit ? ns : walk, env_with(extra), 120);
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return -1;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 3)
		fail_msg("answers through the shim differ from the kernel's (see above)");
	assert_int_equal(status, 0);
	n = read_phases(stats, ph, max);
	for (int i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "budget %s, record %d", budget ? budget : "default", i + 1);
		print_phase(what, &ph[i]);
		/* each record is consistent: passthrough is the sum of its reasons */
		assert_int_equal(ph[i].v[F_passthrough],
				 ph[i].v[F_pass_open] + ph[i].v[F_pass_cache] + ph[i].v[F_pass_dirfd] +
					 ph[i].v[F_pass_form] + ph[i].v[F_pass_write] +
					 ph[i].v[F_pass_early] + ph[i].v[F_pass_watch_limit] +
					 ph[i].v[F_pass_warmup]);
	}
	return n;
}

static int run_walk(const char *name, const char *budget, struct phase *ph, int max)
{
	return run_walk_ns(name, budget, NULL, ph, max);
}

/* Budget 3: "/", "/tmp" and the scratch directory are watched, nothing
 * below: every lookup there passes through, exactly, and is counted. */
static void test_watch_budget_3_passes_through_exactly_and_counts(void **state)
{
	struct phase ph[4];
	int n;

	(void)state;
	n = run_walk("b3", "3", ph, 4);
	assert_int_equal(n, 2); /* phase 1 (exec), phase 2 (exit) */
	assert_true(ph[0].v[F_watches] <= 3);
	assert_true(ph[0].v[F_watches] + ph[1].v[F_watches] <= 3);
	/* 41 directories x 3 passes x 10 lookups, all below unwatched ones */
	assert_true(ph[0].v[F_pass_watch_limit] >= (NDIRS + 1) * 3 * 10);
	assert_true(ph[0].v[F_watch_fail] > 0);
	assert_int_equal(ph[0].v[F_hits], 0);
	assert_int_equal(ph[0].v[F_neg_hits], 0);
}

/* The default budget (a quarter of max_user_watches) does not get in the
 * way of this walk: the same lookups are answered by the cache. */
static void test_watch_budget_default_caches_the_same_walk(void **state)
{
	struct phase ph[4];
	int n;

	(void)state;
	n = run_walk("bdef", NULL, ph, 4);
	assert_int_equal(n, 2);
	assert_int_equal(ph[0].v[F_pass_watch_limit], 0);
	assert_true(ph[0].v[F_hits] + ph[0].v[F_neg_hits] >= (NDIRS + 1) * 2 * 8);
	assert_true(ph[0].v[F_watches] >= NDIRS);
}

/* A budget just big enough for the ancestors and DIR/w: once w is removed,
 * its watch's IN_IGNORED gives its place back, and DIR/n gets it: n/f is
 * then answered from the cache. */
static void test_watch_budget_is_given_back_when_a_watched_directory_goes(void **state)
{
	struct phase ph[4];
	char budget[16];
	int n, depth = 0;

	(void)state;
	/* "/", each component of <scratch>/give, and w */
	for (const char *p = g_scratch; *p; p++)
		depth += *p == '/';
	snprintf(budget, sizeof(budget), "%d", 1 + depth + 1 + 1);
	n = run_walk("give", budget, ph, 4);
	assert_int_equal(n, 2);
	/* phase 1: the budget filled up, the other directories passed through */
	assert_int_equal(ph[0].v[F_watches], atoi(budget));
	assert_true(ph[0].v[F_pass_watch_limit] >= NDIRS * 3 * 10);
	/* phase 2: n/f stat 10 times: 1 miss, then 9 hits, none refused */
	assert_int_equal(ph[1].v[F_pass_watch_limit], 0);
	assert_true(ph[1].v[F_hits] >= 9);
}

/* A sandbox: a user namespace whose own watch limit (40) is below the
 * initial namespace's max_user_watches.  The kernel refuses the user's 41st
 * watch there, so the default budget must be a quarter of 40: a quarter of
 * max_user_watches let the walk take 39 (and the kernel refuse 24 more),
 * leaving the user's other programs in the sandbox none. */
static void test_watch_budget_default_is_a_quarter_of_the_user_namespace_limit(void **state)
{
	struct phase ph[4];
	int n;

	(void)state;
	n = run_walk_ns("uns", NULL, "40", ph, 4);
	if (n < 0)
		skip(); /* user namespaces refused here: reported as skipped */
	assert_int_equal(n, 2);
	assert_int_equal(ph[0].v[F_watches], 10);
	assert_true(ph[0].v[F_pass_watch_limit] >= NDIRS * 3 * 10 / 2);
	assert_true(ph[0].v[F_hits] + ph[0].v[F_neg_hits] > 0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--walk"))
		return walk_main(argv);
	if (argc == 4 && !strcmp(argv[1], "--userns"))
		return userns_main(argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch_budget_3_passes_through_exactly_and_counts),
		cmocka_unit_test(test_watch_budget_default_caches_the_same_walk),
		cmocka_unit_test(test_watch_budget_is_given_back_when_a_watched_directory_goes),
		cmocka_unit_test(test_watch_budget_default_is_a_quarter_of_the_user_namespace_limit),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
