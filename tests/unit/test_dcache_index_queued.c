/* SPDX-License-Identifier: MIT */
/*
 * test_dcache_index_queued.c - the path index's "absent from a complete
 * listing" entries (cache/dcache_pidx.c, PIDX_ABSENT) while the event of a
 * name's creation is still queued.
 *
 * Until an inotify event is applied, the cache may answer as it did before
 * the change (coherence: the event is applied at the next sync point), but
 * whatever the cache itself has learned since must be answered: a name the
 * miss path hashed into a directory, or a directory that stopped being
 * complete, must no longer be answered ENOENT from an index entry.  Those two
 * orders are made here deterministically: this binary has no event reader
 * thread (inval_set_reader_delay, never reached: nothing calls inval_sync()),
 * so an event is applied only where a test calls inval_drain().  A hook in
 * the kernel_lstat op runs just before the kernel is asked about one path.
 *
 * Invariant checked: every answer is the kernel's at the time it is given.
 * Scratch tree: mkdtemp("$RCUWALK_TEST_TMPDIR/rcuwalk-index-XXXXXX"), removed
 * at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "dcache.h"
#include "inval.h"
#include "raw_ops.h"
#include "raw_listdir.h"

#define Q_STAT (DCACHE_Q_FOLLOW | DCACHE_Q_STAT)

static char g_root[512];
static char g_dir[600];
static unsigned g_ntest;
static unsigned long g_list_calls;

/* Run once, just before the kernel is asked lstat(g_hook_path). */
static const char *g_hook_path;
static void (*g_hook)(void);

static int op_lstat(const char *path, struct stat *st)
{
	if (g_hook && g_hook_path && strcmp(path, g_hook_path) == 0) {
		void (*hook)(void) = g_hook;

		g_hook = NULL;
		hook();
	}
	return raw_lstat(path, st);
}

static long op_listdir_typed(const char *path, const struct dcache_listing *shared, size_t max,
			     int (*add)(void *arg, const char *name, size_t len, unsigned char type),
			     void *arg)
{
	(void)shared;
	g_list_calls++;
	return raw_listdir_typed(path, max, add, arg);
}

static struct dcache_ops g_ops = {
	.kernel_lstat = op_lstat,
	.kernel_readlink = raw_readlink,
	.kernel_access = raw_access,
	.kernel_getcwd = raw_getcwd,
	.kernel_listdir_typed = op_listdir_typed,
	.fs_cacheable = raw_fs_local,
};

/* g_dir + "/" + the formatted name (a ring of buffers). */
static const char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *P(const char *fmt, ...)
{
	static char ring[16][1024];
	static unsigned i;
	char *b = ring[i++ % 16];
	int n = snprintf(b, sizeof(ring[0]), "%s/", g_dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, sizeof(ring[0]) - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static uint64_t index_hits(void)
{
	struct dcache_stats st;

	dcache_stats_sum(&st);
	return st.index_hits;
}

/* Raw creations: the event is queued, and stays so until inval_drain(). */
static void x_file(const char *p)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %s: %s", p, strerror(errno));
	syscall(SYS_close, fd);
}

static void x_mkdir(const char *p)
{
	if (syscall(SYS_mkdirat, AT_FDCWD, p, 0755) != 0)
		fail_msg("mkdir %s: %s", p, strerror(errno));
}

/* The cache's answer, which must be the kernel's (no DCACHE_PASS). */
static int same_(const char *path, const char *file, int line)
{
	struct stat cs, ks;
	int c = dcache_lookup(path, Q_STAT, 0, &cs);
	int k = syscall(SYS_newfstatat, AT_FDCWD, path, &ks, 0) == 0 ? 0 : errno;

	if (c != k)
		print_message("%s: cache %d, kernel %d\n", path, c, k);
	_assert_int_equal(c, k, file, line);
	if (c == 0)
		_assert_int_equal(cs.st_ino, ks.st_ino, file, line);
	return c;
}
#define SAME(path) same_((path), __FILE__, __LINE__)

/* Probe fresh absent names in `dir` until the cache lists it. */
static void complete_dir(const char *dir)
{
	static unsigned serial;
	unsigned long l0 = g_list_calls;

	for (int i = 0; i < 64 && g_list_calls == l0; i++)
		assert_int_equal(SAME(P("%s/absent-%u", dir, ++serial)), ENOENT);
	assert_int_equal(g_list_calls - l0, 1);
}

/* `path`, absent from its complete directory's listing, is answered by the
 * index: the first walk fills the slot, the second lookup is the index's. */
static void absent_answered_by_index(const char *path)
{
	struct stat st;
	uint64_t h0;

	assert_int_equal(dcache_lookup(path, Q_STAT, 0, &st), ENOENT);
	h0 = index_hits();
	assert_int_equal(dcache_lookup(path, Q_STAT, 0, &st), ENOENT);
	assert_int_equal(index_hits() - h0, 1);
}

/* ------------------------------------------------------------------------ */

static unsigned long g_hook_list0;

/* Just before the kernel is asked about d/n (a lookup begun while d was not
 * complete): d is listed (a second absent name), then d/n is created by
 * someone else (its event stays queued), and d/n, absent from the listing,
 * is answered by the index. */
static void hook_complete_d_then_create_n(void)
{
	g_hook_list0 = g_list_calls;
	assert_int_equal(SAME(P("d/absent-2")), ENOENT);
	assert_int_equal(g_list_calls - g_hook_list0, 1); /* d is complete now */
	x_file(P("d/n"));
	absent_answered_by_index(P("d/n"));
}

/* The kernel's answer to a lookup begun before the listing (d/n exists) is
 * hashed into d, complete by then, while n's creation event is still
 * queued: the index's entry "absent from d's listing" must go with it. */
static void test_dcache_index_name_hashed_into_complete_dir_by_a_miss_is_seen(void **state)
{
	struct stat st;

	(void)state;
	x_mkdir(P("d"));
	x_file(P("d/a"));
	assert_int_equal(SAME(P("d/absent-1")), ENOENT); /* one absent name: not listed yet */
	g_hook_path = P("d/n");
	g_hook = hook_complete_d_then_create_n;
	assert_int_equal(dcache_lookup(P("d/n"), Q_STAT, 0, &st), 0); /* the kernel's reply */
	assert_null(g_hook);
	g_hook_path = NULL;
	assert_int_equal(SAME(P("d/n")), 0); /* hashed: not the index's ENOENT */
	assert_int_equal(SAME(P("d/n/x")), ENOTDIR);
	inval_drain();
	assert_int_equal(SAME(P("d/n")), 0);
}

/* d stops being complete (another name's event applied); then d/n is
 * created, its event still queued: a lookup of d/n asks the kernel (d is
 * no longer complete) instead of trusting the index's ENOENT. */
static void test_dcache_index_absent_name_of_directory_made_incomplete_is_seen(void **state)
{
	(void)state;
	x_mkdir(P("d"));
	x_file(P("d/a"));
	complete_dir("d");
	absent_answered_by_index(P("d/n"));
	x_file(P("d/other"));
	inval_drain(); /* d is no longer complete */
	x_file(P("d/n")); /* its event stays queued */
	assert_int_equal(SAME(P("d/n")), 0);
	assert_int_equal(SAME(P("d/other")), 0);
}

static void hook_none(void)
{
}

/* d/n is cached as absent; then someone else creates it (its event stays
 * queued) and d is listed: the listing names n, which the cache holds as
 * absent, so d is not made complete (complete_dir_rcu, "create event is
 * still queued"), and its next absent name is asked of the kernel.  The
 * check skips the table for names whose bloom bits are clear: n's are set. */
static void test_dcache_listing_naming_a_name_cached_absent_leaves_dir_incomplete(void **state)
{
	struct stat st;
	unsigned long l0;

	(void)state;
	x_mkdir(P("d"));
	x_file(P("d/a"));
	assert_int_equal(SAME(P("d/n")), ENOENT); /* cached absent; one absent name */
	x_file(P("d/n"));                          /* its event stays queued */
	l0 = g_list_calls;
	assert_int_equal(dcache_lookup(P("d/absent-1"), Q_STAT, 0, &st), ENOENT);
	assert_int_equal(g_list_calls - l0, 1); /* the second absent name: d listed */
	g_hook_path = P("d/absent-2");
	g_hook = hook_none;
	assert_int_equal(SAME(P("d/absent-2")), ENOENT);
	assert_null(g_hook); /* the kernel was asked: d is not complete */
	g_hook_path = NULL;
	inval_drain();
	assert_int_equal(SAME(P("d/n")), 0);
	assert_int_equal(SAME(P("d/absent-3")), ENOENT);
}

/* ------------------------------------------------------------------------ */

static int test_setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s/t%u", g_root, ++g_ntest);
	if (mkdir(g_dir, 0755) != 0)
		return -1;
	inval_drain(); /* nothing of the last test's left queued */
	return 0;
}

static int group_setup(void **state)
{
	const char *dir = getenv("RCUWALK_TEST_TMPDIR");

	(void)state;
	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(g_root, sizeof(g_root), "%s/rcuwalk-index-XXXXXX", dir);
	if (!mkdtemp(g_root))
		return -1;
	inval_set_reader_delay(3600 * 1000); /* no reader thread: events wait for inval_drain() */
	inval_fill_ops(&g_ops);
	if (dcache_set_policy(0, 0, NULL, 0) != 0) /* fresh files: keep their attributes */
		return -1;
	dcache_set_index(0); /* the path index from the first walk */
	return dcache_init(&g_ops, 0);
}

static int group_teardown(void **state)
{
	(void)state;
	inval_shutdown();
	raw_rm_tree(g_root);
	return 0;
}

#define T(f) cmocka_unit_test_setup(f, test_setup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dcache_index_name_hashed_into_complete_dir_by_a_miss_is_seen),
		T(test_dcache_index_absent_name_of_directory_made_incomplete_is_seen),
		T(test_dcache_listing_naming_a_name_cached_absent_leaves_dir_incomplete),
	};

	return cmocka_run_group_tests_name("dcache_index_queued", tests, group_setup, group_teardown);
}
