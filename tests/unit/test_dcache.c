/* SPDX-License-Identifier: MIT */
/*
 * test_dcache.c - unit tests of cache/ (with invalidate/'s inotify watches),
 * linked directly: no preloading.
 *
 * The test fills a struct dcache_ops with raw-syscall kernel ops (as
 * preload/config.c does) that count, per thread, how many times the cache
 * asked the kernel; inval_fill_ops() provides the watches.  Every answer the
 * cache gives is compared with the kernel's own answer (raw syscall(2)) for
 * the same question: return value, errno, and the struct stat fields of the
 * contract (never st_atim).
 *
 * The memory cap is process-wide (dcache_init is called once): this binary
 * runs with a 1 MiB cap so that the eviction test can reach it; every other
 * test stays far below it.
 *
 * Each test works in its own directory below mkdtemp("$RCUWALK_TEST_TMPDIR/
 * rcuwalk-XXXXXX") (default /tmp; see make_root), removed at the end.  Mutations are raw syscalls; like the shim, the helpers
 * note each change (inval_note_change) and every lookup helper first applies
 * the noted changes' events (inval_sync; the kernel queues the inotify event
 * inside the mutating syscall).  Tests of invalidation also inval_drain()
 * explicitly after the change they test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include "dcache.h"
#include "inval.h"
#include "raw_ops.h"
#include "raw_listdir.h"
#include "../kernel_again.h"

#ifndef AT_EACCESS
#define AT_EACCESS 0x200
#endif

#define CAP_BYTES ((size_t)1 << 20) /* the whole binary's memory cap */

/* ------------------------------------------------------------------------ */
/* Counting raw-syscall ops                                                 */

/* Calls of the kernel ops made by this thread (the populating slow path runs
 * in the thread that looks up; event handling runs in the inotify reader or
 * in whoever drains, so tests sample this around lookups only). */
static __thread unsigned long t_kernel_calls;
static __thread unsigned long t_watch_calls;

static char g_root[512]; /* mkdtemp() result */

/* The last paths this thread asked the kernel about, printed when a test's
 * count of kernel calls is not the one it expects (calls_equal). */
#define ASKED_RING 8
static __thread char t_asked[ASKED_RING][128];

/* Count a kernel call about `path` if it names g_root or a path below it
 * (or is relative): not one about an ancestor ("/", "/tmp"), whose
 * attributes other programs change at any time (creating a name in /tmp
 * drops /tmp's: one more lstat, seen beside another test run), nor about a
 * name another program made beside one (the event's lstat, "Names that
 * outlive their inode's other names", made in whichever thread applies the
 * event).  The counts the tests assert are about their own trees. */
static void count_call(const char *path)
{
	size_t n = strlen(g_root);

	if (path[0] == '/' && (strncmp(path, g_root, n) != 0 || (path[n] && path[n] != '/')))
		return;
	snprintf(t_asked[t_kernel_calls % ASKED_RING], sizeof(t_asked[0]), "%s", path);
	t_kernel_calls++;
}

/* A test may arm a hook that runs in this thread right after the kernel has
 * answered lstat(g_hook_path): a change made by someone else just then. */
static __thread const char *t_hook_path;
static __thread void (*t_hook)(void);

static int op_lstat(const char *path, struct stat *st)
{
	int r;

	count_call(path);
	r = syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
	if (t_hook && t_hook_path && strcmp(path, t_hook_path) == 0) {
		void (*hook)(void) = t_hook;

		t_hook = NULL;
		hook();
	}
	return r;
}

static long op_readlink(const char *path, char *buf, size_t size)
{
	long n;

	count_call(path);
	n = syscall(SYS_readlinkat, AT_FDCWD, path, buf, size);
	return n >= 0 ? n : -errno;
}

static int op_access(const char *path, int mode, int flags)
{
	count_call(path);
	return syscall(SYS_faccessat2, AT_FDCWD, path, mode, flags) == 0 ? 0 : -errno;
}

static int op_getcwd(char *buf, size_t size)
{
	snprintf(t_asked[t_kernel_calls % ASKED_RING], sizeof(t_asked[0]), "getcwd()");
	t_kernel_calls++;
	return syscall(SYS_getcwd, buf, size) > 0 ? 0 : -errno;
}

static int op_fs_cacheable(const char *path, dev_t dev)
{
	return 1;
}

/* Hook run right after the kernel listed directory t_list_hook_path. */
static __thread const char *t_list_hook_path;
static __thread void (*t_list_hook)(void);
static __thread unsigned long t_list_calls;

static long op_listdir(const char *path, size_t max,
		       int (*add)(void *arg, const char *name, size_t len), void *arg)
{
	long r;

	count_call(path);
	t_list_calls++;
	r = raw_listdir(path, max, add, arg);
	if (t_list_hook && t_list_hook_path && strcmp(path, t_list_hook_path) == 0) {
		void (*hook)(void) = t_list_hook;

		t_list_hook = NULL;
		hook();
	}
	return r;
}

/* The typed listing (the default here), same hook; t_untyped_name: a name
 * the op reports DT_UNKNOWN, as the shim's op does for a mount point. */
static __thread const char *t_untyped_name;

static __thread struct {
	int (*add)(void *arg, const char *name, size_t len, unsigned char type);
	void *arg;
} t_typed_add;

static int add_untyping(void *arg, const char *name, size_t len, unsigned char type)
{
	if (t_untyped_name && strlen(t_untyped_name) == len && !memcmp(name, t_untyped_name, len))
		type = 0; /* DT_UNKNOWN */
	return t_typed_add.add(t_typed_add.arg, name, len, type);
}

static long op_listdir_typed(const char *path, const struct dcache_listing *shared, size_t max,
			     int (*add)(void *arg, const char *name, size_t len, unsigned char type),
			     void *arg)
{
	long r;

	(void)shared; /* no session here: no listing_ticket op */
	count_call(path);
	t_list_calls++;
	t_typed_add.add = add;
	t_typed_add.arg = arg;
	r = raw_listdir_typed(path, max, add_untyping, NULL);
	if (t_list_hook && t_list_hook_path && strcmp(path, t_list_hook_path) == 0) {
		void (*hook)(void) = t_list_hook;

		t_list_hook = NULL;
		hook();
	}
	return r;
}

static int (*real_watch_dir)(const char *path, int names_only);

static int op_watch_dir(const char *path, int names_only)
{
	t_watch_calls++;
	return real_watch_dir(path, names_only);
}

/* This binary starts no thread of its own: the only other thread is
 * invalidate/'s reader, so the cache frees what it unhashes after a grace
 * period in the caller and never starts a call_rcu thread (dcache.c,
 * "Threads we do not start"): the sanitizer builds check that path. */
static int op_sole_thread(void)
{
	return 1;
}

static struct dcache_ops g_ops = {
	.sole_thread = op_sole_thread,
	.kernel_lstat = op_lstat,
	.kernel_readlink = op_readlink,
	.kernel_access = op_access,
	.kernel_getcwd = op_getcwd,
	.kernel_listdir = op_listdir,
	.fs_cacheable = op_fs_cacheable,
	.kernel_listdir_typed = op_listdir_typed,
};

/* ------------------------------------------------------------------------ */
/* Scratch directories and paths                                            */

static char g_dir[600];        /* this test's directory */
static char g_start_cwd[PATH_MAX];
static unsigned g_ntest;

#define RING 32
static char g_ring[RING][2 * PATH_MAX];
static unsigned g_ringi;

/* g_dir + "/" + the formatted relative path (ring of static buffers). */
static const char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *P(const char *fmt, ...)
{
	char *b = g_ring[g_ringi++ % RING];
	int n = snprintf(b, sizeof(g_ring[0]), "%s/", g_dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, sizeof(g_ring[0]) - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static char *repeat(char c, size_t n)
{
	char *b = g_ring[g_ringi++ % RING];

	if (n >= sizeof(g_ring[0]))
		n = sizeof(g_ring[0]) - 1;
	memset(b, c, n);
	b[n] = '\0';
	return b;
}

/* Raw-syscall mutations; each asserts success and, as the shim does after a
 * mutation, notes the change so that the next lookup (inval_sync()) applies
 * its events first: a test's own changes are visible to its next lookup. */
static void x_mkdir(const char *p)
{
	if (syscall(SYS_mkdirat, AT_FDCWD, p, 0755) != 0)
		fail_msg("mkdir %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_file(const char *p, size_t size)
{
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("create %s: %s", p, strerror(errno));
	memset(buf, 'x', sizeof(buf));
	while (size) {
		size_t n = size < sizeof(buf) ? size : sizeof(buf);

		if (syscall(SYS_write, fd, buf, n) != (long)n)
			fail_msg("write %s: %s", p, strerror(errno));
		size -= n;
	}
	syscall(SYS_close, fd);
	inval_note_change();
}

static void x_append(const char *p, size_t size)
{
	char buf[64] = { 0 };
	int fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0 || size > sizeof(buf) || syscall(SYS_write, fd, buf, size) != (long)size)
		fail_msg("append %s: %s", p, strerror(errno));
	syscall(SYS_close, fd);
	inval_note_change();
}

static void x_symlink(const char *target, const char *p)
{
	if (syscall(SYS_symlinkat, target, AT_FDCWD, p) != 0)
		fail_msg("symlink %s -> %s: %s", p, target, strerror(errno));
	inval_note_change();
}

static void x_unlink(const char *p)
{
	if (syscall(SYS_unlinkat, AT_FDCWD, p, 0) != 0)
		fail_msg("unlink %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_rmdir(const char *p)
{
	if (syscall(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR) != 0)
		fail_msg("rmdir %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_rename(const char *a, const char *b)
{
	if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 0) != 0)
		fail_msg("rename %s %s: %s", a, b, strerror(errno));
	inval_note_change();
}

static void x_link(const char *a, const char *b)
{
	if (syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0) != 0)
		fail_msg("link %s %s: %s", a, b, strerror(errno));
	inval_note_change();
}

static void x_chmod(const char *p, mode_t mode)
{
	if (syscall(SYS_fchmodat, AT_FDCWD, p, mode) != 0)
		fail_msg("chmod %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_truncate(const char *p, off_t size)
{
	if (syscall(SYS_truncate, p, size) != 0)
		fail_msg("truncate %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_utimes(const char *p, time_t sec)
{
	struct timespec ts[2] = { { sec, 0 }, { sec, 0 } };

	if (syscall(SYS_utimensat, AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) != 0)
		fail_msg("utimensat %s: %s", p, strerror(errno));
	inval_note_change();
}

static void x_chdir(const char *p)
{
	if (syscall(SYS_chdir, p) != 0)
		fail_msg("chdir %s: %s", p, strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* The kernel's answer, and comparisons                                     */

/* What the kernel answers for the question dcache_lookup() is asked. */
static int kernel_query(const char *path, unsigned flags, int amode, struct stat *st)
{
	int fl = (flags & DCACHE_Q_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW;

	if (flags & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS)) {
		if (flags & DCACHE_Q_EACCESS)
			fl |= AT_EACCESS;
		return syscall(SYS_faccessat2, AT_FDCWD, path, amode, fl) == 0 ? 0 : errno;
	}
	if (flags & DCACHE_Q_DIRECTORY) {
		int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
				      O_PATH | O_DIRECTORY | O_CLOEXEC |
				      ((flags & DCACHE_Q_FOLLOW) ? 0 : O_NOFOLLOW), 0);

		if (fd < 0)
			return errno;
		syscall(SYS_close, fd);
	}
	return syscall(SYS_newfstatat, AT_FDCWD, path, st, fl) == 0 ? 0 : errno;
}

static void assert_stat_same_(const struct stat *c, const struct stat *k, const char *path,
			      const char *file, int line)
{
	if (c->st_ino != k->st_ino || c->st_size != k->st_size || c->st_mode != k->st_mode ||
	    c->st_nlink != k->st_nlink || c->st_mtim.tv_nsec != k->st_mtim.tv_nsec ||
	    c->st_ctim.tv_nsec != k->st_ctim.tv_nsec)
		print_message("stat mismatch for %s\n", path);
	_assert_int_equal(c->st_dev, k->st_dev, file, line);
	_assert_int_equal(c->st_ino, k->st_ino, file, line);
	_assert_int_equal(c->st_mode, k->st_mode, file, line);
	_assert_int_equal(c->st_nlink, k->st_nlink, file, line);
	_assert_int_equal(c->st_uid, k->st_uid, file, line);
	_assert_int_equal(c->st_gid, k->st_gid, file, line);
	_assert_int_equal(c->st_rdev, k->st_rdev, file, line);
	_assert_int_equal(c->st_size, k->st_size, file, line);
	_assert_int_equal(c->st_blksize, k->st_blksize, file, line);
	_assert_int_equal(c->st_blocks, k->st_blocks, file, line);
	_assert_int_equal(c->st_mtim.tv_sec, k->st_mtim.tv_sec, file, line);
	_assert_int_equal(c->st_mtim.tv_nsec, k->st_mtim.tv_nsec, file, line);
	_assert_int_equal(c->st_ctim.tv_sec, k->st_ctim.tv_sec, file, line);
	_assert_int_equal(c->st_ctim.tv_nsec, k->st_ctim.tv_nsec, file, line);
}

/* The cache must answer (not DCACHE_PASS) exactly as the kernel does; a
 * different answer is asked again before it counts (kernel_again.h).  With
 * eacces_passes, a DCACHE_PASS where the kernel says EACCES is the answer
 * too: the cache hands every EACCES to the kernel (a test that runs as
 * root and as another user); with eacces_passes 2, any DCACHE_PASS is (and
 * is returned).  Returns the answer (the kernel's, for such an EACCES
 * pass); *out (if given) receives the cache's struct stat. */
static int same_(const char *path, unsigned flags, int amode, int eacces_passes, struct stat *out,
		 const char *file, int line)
{
	struct stat cs, ks;
	int c, k;

	memset(&cs, 0, sizeof(cs));
	memset(&ks, 0, sizeof(ks));
	inval_sync();
	c = dcache_lookup(path, flags, amode, &cs);
	k = kernel_query(path, flags, amode, &ks);
	if (eacces_passes == 2 && c == DCACHE_PASS)
		return c;
	if (c != k) {
		int c0 = c, k0 = k;

		if (KERNEL_AGAIN(c == k, c == ELOOP, c = dcache_lookup(path, flags, amode, &cs),
				 k = kernel_query(path, flags, amode, &ks)))
			print_message("%s (flags %#x amode %d): cache %d, kernel %d; asked again, then "
				      "the same (kernel_again.h)\n", path, flags, amode, c0, k0);
	}
	if (eacces_passes && c == DCACHE_PASS && k == EACCES)
		return k;
	if (c != k)
		print_message("%s (flags %#x amode %d): cache %d (%s), kernel %d (%s)\n", path, flags,
			      amode, c, c > 0 ? strerror(c) : c == 0 ? "ok" : "PASS", k,
			      k ? strerror(k) : "ok");
	_assert_true(c != DCACHE_PASS, "cache answered (not DCACHE_PASS)", file, line);
	_assert_int_equal(c, k, file, line);
	if (c == 0 && (flags & DCACHE_Q_STAT))
		assert_stat_same_(&cs, &ks, path, file, line);
	if (out)
		*out = cs;
	return c;
}

#define SAME(path, flags) same_((path), (flags), 0, 0, NULL, __FILE__, __LINE__)
#define SAME_ST(path, flags, st) same_((path), (flags), 0, 0, (st), __FILE__, __LINE__)
#define SAME_ACCESS(path, flags, amode) same_((path), (flags), (amode), 0, NULL, __FILE__, __LINE__)
/* The same, or an EACCES passed to the kernel (not root: see same_). */
#define SAME_OR_EACCES_PASSED(path, flags) same_((path), (flags), 0, 1, NULL, __FILE__, __LINE__)
#define SAME_ACCESS_OR_EACCES_PASSED(path, flags, amode)                            \
	same_((path), (flags), (amode), 1, NULL, __FILE__, __LINE__)

#define Q_STAT (DCACHE_Q_FOLLOW | DCACHE_Q_STAT) /* stat(2) */
#define Q_LSTAT DCACHE_Q_STAT                    /* lstat(2) */
#define Q_OPEN (DCACHE_Q_FOLLOW | DCACHE_Q_NEGONLY) /* open(2) without O_CREAT */

static int lookup(const char *path, unsigned flags, struct stat *st)
{
	inval_sync();
	return dcache_lookup(path, flags, 0, st);
}

/* Kernel calls made by this thread since `since`. */
static unsigned long calls_since(unsigned long since)
{
	return t_kernel_calls - since;
}

/* Assert that this thread asked the kernel `want` times since `since`; if
 * not, print what it asked (the last ASKED_RING paths) before failing. */
static void print_asked(unsigned long since, const char *file, int line)
{
	unsigned long got = t_kernel_calls - since;

	for (unsigned long i = got > ASKED_RING ? got - ASKED_RING : 0; i < got; i++)
		print_message("%s:%d: kernel asked about %s\n", file, line,
			      t_asked[(since + i) % ASKED_RING]);
}

static void calls_equal_(unsigned long since, unsigned long want, const char *file, int line)
{
	if (t_kernel_calls - since != want)
		print_asked(since, file, line);
	_assert_int_equal(t_kernel_calls - since, want, file, line);
}
#define calls_equal(since, want) calls_equal_((since), (want), __FILE__, __LINE__)

/* ------------------------------------------------------------------------ */
/* Setup                                                                    */

/* The scratch root: RCUWALK_TEST_TMPDIR (CMake sets the build tree's tests
 * directory) or /tmp.  Not below /tmp when it can be helped: compilers and
 * other test runs create and remove short-lived files there, and every such
 * name in a watched ancestor rightly drops every cached file attribute on
 * its device ("Names that outlive their inode's other names", rule 3) -
 * kernel calls that tests asserting "asked nothing" would count. */
static int make_root(void)
{
	const char *dir = getenv("RCUWALK_TEST_TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(g_root, sizeof(g_root), "%s/rcuwalk-XXXXXX", dir) >= sizeof(g_root))
		return -1;
	return mkdtemp(g_root) ? 0 : -1;
}

static int group_setup(void **state)
{
	if (make_root() != 0)
		return -1;
	if (!getcwd(g_start_cwd, sizeof(g_start_cwd)))
		strcpy(g_start_cwd, "/");
	umask(022);
	inval_fill_ops(&g_ops);
	real_watch_dir = g_ops.watch_dir;
	g_ops.watch_dir = op_watch_dir;
	/* Files here are all fresh: the racy-timestamp rule would keep no
	 * attributes.  Its own tests turn it on. */
	if (dcache_set_policy(0, 0, NULL, 0) != 0)
		return -1;
	dcache_set_index(0); /* the path index from the first walk: its tests */
	return dcache_init(&g_ops, CAP_BYTES);
}

static int group_teardown(void **state)
{
	x_chdir(g_start_cwd);
	inval_shutdown();
	raw_rm_tree(g_root);
	return 0;
}

/* A fresh directory for each test; nothing pending from the last one.  The
 * path to it is cached first: /tmp changes all the time (other programs), and
 * a name looked up in /tmp while an event arrives there is answered
 * DCACHE_PASS - correct, but the tests assert that the cache answers. */
static void warm_test_dir(void)
{
	struct stat st;

	for (int i = 0; i < 1000 && dcache_lookup(g_dir, Q_LSTAT, 0, &st) != 0; i++)
		usleep(1000);
}

static int test_setup(void **state)
{
	snprintf(g_dir, sizeof(g_dir), "%s/t%u", g_root, ++g_ntest);
	dcache_set_dir_rent(0); /* a rent test that failed leaves none behind */
	if (syscall(SYS_mkdirat, AT_FDCWD, g_dir, 0755) != 0)
		return -1;
	inval_drain();
	warm_test_dir();
	dcache_set_index(0); /* a test that changed it failed before restoring it */
	dcache_set_index_names(1); /* likewise */
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk                                                                 */

static void test_dcache_walk_trailing_slash_on_file_is_enotdir(void **state)
{
	x_file(P("f"), 3);
	x_symlink("f", P("lf"));
	assert_int_equal(SAME(P("f/"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("f/"), Q_LSTAT), ENOTDIR);
	assert_int_equal(SAME(P("f//"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("lf/"), Q_LSTAT), ENOTDIR); /* the slash follows the link */
	assert_int_equal(SAME(P("f/"), Q_OPEN), ENOTDIR);
	/* Without the slash the same names succeed. */
	assert_int_equal(SAME(P("f"), Q_STAT), 0);
	assert_int_equal(SAME(P("lf"), Q_STAT), 0);
}

static void test_dcache_walk_trailing_slash_on_symlink_to_dir_follows(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_symlink("d", P("ld"));
	assert_int_equal(SAME_ST(P("ld/"), Q_LSTAT, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(SAME_ST(P("ld"), Q_LSTAT, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

static void test_dcache_walk_missing_middle_component_is_enoent(void **state)
{
	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	assert_int_equal(SAME(P("a/missing/b"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("a/missing/b/c/"), Q_LSTAT), ENOENT);
	assert_int_equal(SAME(P("a/b/missing/c"), Q_OPEN), ENOENT);
	assert_int_equal(SAME(P("a/b"), Q_STAT), 0);
}

static void test_dcache_walk_file_in_middle_is_enotdir(void **state)
{
	x_file(P("f"), 1);
	assert_int_equal(SAME(P("f/x"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("f/x/y"), Q_OPEN), ENOTDIR);
	assert_int_equal(SAME(P("f/."), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("f/.."), Q_STAT), ENOTDIR);
}

static void test_dcache_walk_dot_and_double_slash_equal_kernel(void **state)
{
	x_mkdir(P("d"));
	x_file(P("d/f"), 9);
	assert_int_equal(SAME(P("d/./f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d//f"), Q_LSTAT), 0);
	assert_int_equal(SAME(P("./d/.//f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/../d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/."), Q_STAT), 0);
	assert_int_equal(SAME(P("d/.."), Q_LSTAT), 0);
}

static void test_dcache_walk_dotdot_after_symlink_uses_target_parent(void **state)
{
	struct stat st, k;

	x_mkdir(P("x"));
	x_mkdir(P("x/y"));
	x_file(P("x/marker"), 11); /* what `..` of the link's target reaches */
	x_file(P("marker"), 22);   /* what a textual `..` would reach */
	x_symlink("x/y", P("l"));
	assert_int_equal(SAME_ST(P("l/../marker"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, P("x/marker"), &k, 0), 0);
	assert_int_equal(st.st_ino, k.st_ino);
	/* Absolute link body, and a link inside a nested body. */
	x_symlink(P("x/y"), P("abs"));
	x_symlink("l", P("ll"));
	assert_int_equal(SAME_ST(P("abs/../marker"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(SAME_ST(P("ll/../marker"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 11);
	/* `..` of x/y/ (no link) where the textual parent has no marker. */
	assert_int_equal(SAME(P("l/../y/../../marker"), Q_STAT), 0);
}

/* g_dir "/../.." (as many `..` as g_dir has components, and two more) g_dir
 * "/" name, in the ring of P(). */
static const char *climb_past_root(const char *name)
{
	char *b = g_ring[g_ringi++ % RING];
	size_t n = (size_t)snprintf(b, sizeof(g_ring[0]), "%s", g_dir);

	for (const char *p = g_dir; *p; p++)
		if (*p == '/')
			n += (size_t)snprintf(b + n, sizeof(g_ring[0]) - n, "/..");
	snprintf(b + n, sizeof(g_ring[0]) - n, "/../..%s/%s", g_dir, name);
	return b;
}

static void test_dcache_walk_dotdot_at_root_stays_at_root(void **state)
{
	char path[PATH_MAX];
	struct stat st;

	x_file(P("f"), 13);
	snprintf(path, sizeof(path), "/../../..%s/f", g_dir);
	assert_int_equal(SAME_ST(path, Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 13);
	/* One `..` per component of g_dir, and two more, climb past the root. */
	assert_int_equal(SAME(climb_past_root("missing"), Q_STAT), ENOENT);
	assert_int_equal(SAME(climb_past_root("f"), Q_LSTAT), 0);
}

static void test_dcache_walk_symlink_nofollow_reports_link_itself(void **state)
{
	struct stat st;

	x_file(P("target"), 5);
	x_symlink("target", P("l"));
	assert_int_equal(SAME_ST(P("l"), Q_LSTAT, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(st.st_size, strlen("target"));
	assert_int_equal(SAME_ST(P("l"), Q_STAT, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 5);
}

static void test_dcache_walk_dangling_symlink_follow_is_enoent(void **state)
{
	x_symlink("nowhere", P("l"));
	x_symlink("nowhere/deeper", P("l2"));
	assert_int_equal(SAME(P("l"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("l"), Q_LSTAT), 0);
	assert_int_equal(SAME(P("l/"), Q_LSTAT), ENOENT);
	assert_int_equal(SAME(P("l2"), Q_OPEN), ENOENT);
}

static void test_dcache_walk_40_symlinks_resolve_41_are_eloop(void **state)
{
	struct stat st;

	x_file(P("t"), 40);
	x_symlink("t", P("s1"));
	for (int i = 2; i <= 41; i++) {
		char target[16];

		snprintf(target, sizeof(target), "s%d", i - 1);
		x_symlink(target, P("s%d", i));
	}
	assert_int_equal(SAME_ST(P("s40"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 40);
	assert_int_equal(SAME(P("s41"), Q_STAT), ELOOP);
	assert_int_equal(SAME(P("s41"), Q_OPEN), ELOOP);
	assert_int_equal(SAME(P("s41"), Q_LSTAT), 0); /* not followed */
}

static void test_dcache_walk_40_nested_symlink_frames_resolve_41_are_eloop(void **state)
{
	/* d_k -> "d_{k-1}/." : every link is followed with more path after it
	 * in its own body, so each level keeps a frame to come back to. */
	x_mkdir(P("dir"));
	x_file(P("dir/f"), 1);
	x_symlink("dir/.", P("d1"));
	for (int i = 2; i <= 41; i++) {
		char target[32];

		snprintf(target, sizeof(target), "d%d/.", i - 1);
		x_symlink(target, P("d%d", i));
	}
	assert_int_equal(SAME(P("d40/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d39/f"), Q_LSTAT), 0);
	assert_int_equal(SAME(P("d41/f"), Q_STAT), ELOOP);
	assert_int_equal(SAME(P("d40/missing"), Q_STAT), ENOENT);
}

static void test_dcache_walk_symlink_loop_is_eloop(void **state)
{
	x_symlink("b", P("a"));
	x_symlink("a", P("b"));
	x_symlink(".", P("self"));
	assert_int_equal(SAME(P("a"), Q_STAT), ELOOP);
	assert_int_equal(SAME(P("a/x"), Q_LSTAT), ELOOP);
	assert_int_equal(SAME(P("a"), Q_LSTAT), 0);
	/* "self/self/.../f": 40 follows are fine, 41 are not. */
	x_file(P("f"), 2);
	{
		char rel[41 * 5 + 2] = "";

		for (int i = 0; i < 40; i++)
			strcat(rel, "self/");
		assert_int_equal(SAME(P("%sf", rel), Q_STAT), 0);
		strcat(rel, "self/");
		assert_int_equal(SAME(P("%sf", rel), Q_STAT), ELOOP);
	}
}

static void test_dcache_walk_component_over_name_max_passes_through(void **state)
{
	const char *n300 = repeat('n', 300);
	const char *n255 = repeat('m', NAME_MAX);
	const char *n256 = repeat('k', NAME_MAX + 1);
	struct stat st;

	x_mkdir(P("d"));
	x_file(P("f"), 1);
	/* The kernel says ENAMETOOLONG there: the cache must not answer. */
	assert_int_equal(lookup(P("d/%s", n300), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(kernel_query(P("d/%s", n300), Q_STAT, 0, &st), ENAMETOOLONG);
	assert_int_equal(lookup(P("d/%s", n256), Q_STAT, &st), DCACHE_PASS);
	/* Where the kernel never reaches the long name, the cache answers. */
	assert_int_equal(SAME(P("missing/%s", n300), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("f/%s", n300), Q_STAT), ENOTDIR);
	/* NAME_MAX itself is a legal name. */
	assert_int_equal(SAME(P("d/%s", n255), Q_STAT), ENOENT);
	x_file(P("d/%s", n255), 4);
	inval_drain();
	assert_int_equal(SAME(P("d/%s", n255), Q_STAT), 0);
}

static void test_dcache_walk_path_max_is_enametoolong(void **state)
{
	char path[PATH_MAX + 8];
	struct stat st;
	size_t n;

	x_file(P("f"), 1);
	/* g_dir "/missing/x/x/.../x": PATH_MAX characters, no room for the NUL. */
	n = (size_t)snprintf(path, sizeof(path), "%s/missing", g_dir);
	while (n < PATH_MAX) {
		path[n] = '/';
		path[n + 1] = 'x';
		n += 2;
	}
	path[PATH_MAX] = '\0';
	assert_int_equal(strlen(path), PATH_MAX);
	assert_int_equal(lookup(path, Q_STAT, &st), ENAMETOOLONG);
	assert_int_equal(kernel_query(path, Q_STAT, 0, &st), ENAMETOOLONG);
	/* One character shorter fits: the missing component answers. */
	path[PATH_MAX - 1] = '\0';
	assert_int_equal(SAME(path, Q_STAT), ENOENT);
}

static void test_dcache_walk_empty_path_is_enoent(void **state)
{
	unsigned long c0 = t_kernel_calls;

	assert_int_equal(SAME("", Q_STAT), ENOENT);
	assert_int_equal(SAME("", Q_LSTAT), ENOENT);
	assert_int_equal(SAME("", Q_OPEN), ENOENT);
	calls_equal(c0, 0);
}

static void test_dcache_walk_directory_flag_on_file_is_enotdir(void **state)
{
	x_file(P("f"), 1);
	x_mkdir(P("d"));
	assert_int_equal(SAME(P("f"), DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY), ENOTDIR);
	assert_int_equal(SAME(P("f"), Q_OPEN | DCACHE_Q_DIRECTORY), ENOTDIR);
	assert_int_equal(SAME(P("d"), DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY), 0);
}

static void test_dcache_negonly_success_passes_through(void **state)
{
	struct stat st;

	x_file(P("f"), 1);
	assert_int_equal(lookup(P("f"), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("f"), Q_OPEN, &st), DCACHE_PASS); /* cached: still PASS */
	assert_int_equal(SAME(P("nope"), Q_OPEN), ENOENT);
}

static void test_dcache_access_x_on_plain_file_is_eacces(void **state)
{
	x_file(P("f"), 1);
	x_file(P("x"), 1);
	x_chmod(P("x"), 0755);
	assert_int_equal(SAME_ACCESS(P("f"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK), EACCES);
	assert_int_equal(SAME_ACCESS(P("x"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK), 0);
	assert_int_equal(SAME_ACCESS(P("x"), DCACHE_Q_FOLLOW | DCACHE_Q_EACCESS, X_OK), 0);
	assert_int_equal(SAME_ACCESS(P("f"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, F_OK), 0);
	assert_int_equal(SAME_ACCESS(P("nope"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, R_OK), ENOENT);
}

/* ------------------------------------------------------------------------ */
/* Caching                                                                  */

static void test_dcache_second_lookup_asks_kernel_nothing(void **state)
{
	static const unsigned qs[] = { Q_STAT, Q_LSTAT };
	unsigned long c0;
	struct stat st;

	x_mkdir(P("d"));
	x_file(P("d/f"), 10);
	x_symlink("d/f", P("l"));
	for (int pass = 0; pass < 2; pass++) {
		c0 = t_kernel_calls;
		for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
			assert_int_equal(SAME(P("d/f"), qs[i]), 0);
			assert_int_equal(SAME(P("l"), qs[i]), 0);
			assert_int_equal(SAME(P("d"), qs[i]), 0);
			assert_int_equal(SAME(P("d/none"), qs[i]), ENOENT);
		}
		/* open(2): success needs the kernel, failure does not. */
		assert_int_equal(lookup(P("l"), Q_OPEN, &st), DCACHE_PASS);
		assert_int_equal(SAME(P("d/none"), Q_OPEN), ENOENT);
		if (pass == 0)
			assert_true(calls_since(c0) > 0);
		else
			calls_equal(c0, 0);
	}
}

static void test_dcache_first_lookup_asks_kernel(void **state)
{
	unsigned long c0;

	x_file(P("f"), 1);
	c0 = t_kernel_calls;
	SAME(P("f"), Q_STAT);
	assert_true(calls_since(c0) >= 1);
}

/* A stat whose final object is the gap is answered by the kernel's reply
 * that fills it: one lstat, no second walk asking again (a fresh file under
 * the racy rule, a directory, an absent name). */
static void test_dcache_stat_miss_of_final_object_asks_kernel_once(void **state)
{
	unsigned long c0;
	struct stat st;

	x_mkdir(P("d"));
	x_mkdir(P("d/sub"));
	x_file(P("d/f"), 6);
	assert_int_equal(SAME(P("d"), Q_STAT), 0); /* d known, watched */
	c0 = t_kernel_calls;
	assert_int_equal(SAME_ST(P("d/sub"), Q_STAT, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	calls_equal(c0, 1);
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("d/none"), Q_LSTAT), ENOENT);
	calls_equal(c0, 1);
	assert_int_equal(dcache_set_policy(2000000000LL, 0, NULL, 0), 0);
	c0 = t_kernel_calls;
	assert_int_equal(SAME_ST(P("d/f"), Q_STAT, &st), 0); /* fresh: answered, not kept */
	assert_int_equal(st.st_size, 6);
	calls_equal(c0, 1);
	assert_int_equal(dcache_set_policy(0, 0, NULL, 0), 0);
	/* Each kernel reply was the answer: the second lookups agree. */
	assert_int_equal(SAME(P("d/sub"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/none"), Q_LSTAT), ENOENT);
}

static void test_dcache_negative_dentry_answers_paths_below_without_kernel(void **state)
{
	unsigned long c0;

	x_mkdir(P("d"));
	assert_int_equal(SAME(P("d/gone"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("nodir"), Q_LSTAT), ENOENT);
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("d/gone/x"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/gone/x/y/z"), Q_LSTAT), ENOENT);
	assert_int_equal(SAME(P("d/gone/"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/gone/.."), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/gone/x"), Q_OPEN), ENOENT);
	assert_int_equal(SAME(P("nodir/child"), Q_OPEN), ENOENT);
	assert_int_equal(SAME(P("nodir/child/grandchild"), Q_STAT), ENOENT);
	/* SAME() asked the kernel itself, with raw syscalls: not through the ops. */
	calls_equal(c0, 0);
}

static void test_dcache_stats_count_hits_misses_and_negative_hits(void **state)
{
	struct dcache_stats a, b, c;
	struct stat st;

	x_file(P("f"), 1);
	dcache_stats_sum(&a);
	assert_int_equal(lookup(P("f"), Q_STAT, &st), 0);
	dcache_stats_sum(&b);
	assert_true(b.misses > a.misses);
	assert_int_equal(b.hits, a.hits + 1);
	assert_int_equal(lookup(P("f"), Q_STAT, &st), 0);
	assert_int_equal(lookup(P("g"), Q_STAT, &st), ENOENT);
	assert_int_equal(lookup(P("g"), Q_STAT, &st), ENOENT);
	dcache_stats_sum(&c);
	assert_int_equal(c.hits, b.hits + 1);
	assert_int_equal(c.neg_hits, b.neg_hits + 2);
	assert_int_equal(c.misses, b.misses + 1); /* only the first "g" */
}

static void *one_hit(void *arg)
{
	struct stat st;

	*(int *)arg = lookup(P("f"), Q_STAT, &st);
	return NULL;
}

/* Each thread counts in a block of its own, the 257th and later in one
 * shared block: the sum has every thread's counts, from blocks handed out
 * only (dcache_stats_sum does not read the pool's untouched pages). */
static void test_dcache_stats_sum_counts_every_thread_past_the_blocks(void **state)
{
	struct dcache_stats a, b;
	struct stat st;

	x_file(P("f"), 1);
	assert_int_equal(lookup(P("f"), Q_STAT, &st), 0);
	dcache_stats_sum(&a);
	for (int i = 0; i < 300; i++) {
		pthread_t t;
		int r = -1;

		assert_int_equal(pthread_create(&t, NULL, one_hit, &r), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(r, 0);
	}
	dcache_stats_sum(&b);
	assert_int_equal(b.hits, a.hits + 300);
}

/* Directory rent (dcache_populate.c): a directory not watched yet is
 * watched only at the fourth lookup of a name in it with a rent of 3; the
 * first three pass through (counted as pass_rent), asking the kernel
 * nothing and caching nothing below it; from the fourth on, the cache
 * answers, the kernel's answers.  With a rent of 0 (this binary's default),
 * the first lookup watches it. */
static void test_dcache_dir_rent_first_lookups_pass_through_then_it_is_watched(void **state)
{
	struct dcache_stats a, b, c;
	unsigned long w0, c0;
	struct stat st;

	x_mkdir(P("d"));
	x_mkdir(P("e"));
	x_file(P("d/f"), 3);
	assert_int_equal(SAME(P("d"), Q_STAT), 0); /* its parent watched, d known */
	assert_int_equal(SAME(P("e"), Q_STAT), 0);
	dcache_set_dir_rent(3);
	dcache_stats_sum(&a);
	w0 = t_watch_calls;
	c0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/x"), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/f"), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/x"), Q_LSTAT, &st), DCACHE_PASS);
	dcache_stats_sum(&b);
	assert_int_equal(b.pass_rent, a.pass_rent + 3);
	assert_int_equal(b.passthrough, a.passthrough + 3);
	assert_int_equal(t_watch_calls, w0); /* rented: no watch */
	calls_equal(c0, 0);                  /* and no kernel call of the cache's */
	/* The fourth buys it: watched, then answered as the kernel answers. */
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_int_equal(t_watch_calls, w0 + 1);
	assert_int_equal(SAME(P("d/x"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/f/"), Q_STAT), ENOTDIR);
	dcache_stats_sum(&c);
	assert_int_equal(c.pass_rent, b.pass_rent);
	/* Each directory pays its own rent; 0 rents none. */
	assert_int_equal(lookup(P("e/x"), Q_STAT, &st), DCACHE_PASS);
	dcache_set_dir_rent(0);
	assert_int_equal(SAME(P("e/x"), Q_STAT), ENOENT);
	assert_int_equal(t_watch_calls, w0 + 2);
	/* Renting changed no answer: the kernel's, before and after a change. */
	x_file(P("d/x"), 5);
	inval_drain();
	assert_int_equal(SAME_ST(P("d/x"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 5);
}

/* The rent adapts (dcache_populate.c, "Directory rent"): a thread whose
 * window of 512 rent decisions (lookups in directories not watched yet)
 * brought fewer than twice as many answers from the cache as misses and
 * rented lookups doubles the rent; one with more than eight times as many
 * halves it back.  With a rent of 1: fresh directories asked one name until
 * the cache answers (a rented lookup, then a miss: ~2 decisions and one
 * answer each) double it within 300 directories, so that a fresh one passes
 * twice; then windows with 40 cached answers for each decision bring it back
 * to one pass.  Every answer is the kernel's. */
static int passes_until_answered(const char *dir)
{
	struct stat st;
	char p[PATH_MAX];
	int n = 0;

	snprintf(p, sizeof(p), "%s/x", dir);
	while (lookup(p, Q_STAT, &st) == DCACHE_PASS && n < 100)
		n++;
	return SAME(p, Q_STAT) == ENOENT ? n : -1;
}

static void test_dcache_dir_rent_doubles_while_buying_earns_nothing_then_comes_back(void **state)
{
	struct stat st;
	char name[64];
	int first = -1, doubled_at = -1, back_at = -1, k = 0;

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "a%03d", i);
		x_mkdir(P("%s", name));
	}
	assert_int_equal(SAME(P("a000"), Q_STAT), 0); /* the test dir bought */
	dcache_set_dir_rent(1);
	for (int i = 0; i < 300 && doubled_at < 0; i++) {
		int n = passes_until_answered(P("a%03d", i));

		if (i == 0)
			first = n;
		if (n == 2)
			doubled_at = i;
	}
	for (int w = 0; w < 12 && doubled_at >= 0 && back_at < 0; w++) {
		for (int i = 0; i < 300; i++, k++) {
			snprintf(name, sizeof(name), "c%05d", k);
			x_mkdir(P("%s", name));
			while (lookup(P("%s/x", name), Q_STAT, &st) == DCACHE_PASS)
				for (int j = 0; j < 40; j++)
					(void)lookup(P("a%03d/x", j), Q_STAT, &st);
		}
		x_mkdir(P("d%d", w));
		if (passes_until_answered(P("d%d", w)) == 1)
			back_at = w;
	}
	dcache_set_dir_rent(0); /* before any assertion: the next tests rent nothing */
	print_message("rent 1: first directory %d pass(es); doubled at directory %d; back after "
		      "window %d\n", first, doubled_at, back_at);
	assert_int_equal(first, 1);
	assert_true(doubled_at > 0);
	assert_true(back_at >= 0);
}

/* Idle spells (dcache_populate.c): once the rent has doubled to its most
 * (8 windows of 512 rent decisions, each with under one cached answer in 16
 * misses and rented lookups), the thread goes into a spell of 4,096 lookups
 * (IDLE_MIN) that pass through before the walk, even a name the cache holds,
 * counted as rented and asking the kernel nothing of the cache's own; the
 * spell's end sets the rent back to the one given; the next spell, after
 * another 8 bad windows, is twice as long; a window with more than two
 * answers a miss starts the next at 4,096 again.  A fresh directory asked
 * one name is one rent decision (and one miss). */
static int g_fresh;

static void rent_decisions(int n, int answers_each)
{
	struct stat st;

	for (int i = 0; i < n; i++, g_fresh++) {
		x_mkdir(P("s%05d", g_fresh));
		assert_int_equal(lookup(P("s%05d/x", g_fresh), Q_STAT, &st), DCACHE_PASS);
		for (int j = 0; j < answers_each; j++)
			assert_int_equal(lookup(P("known"), Q_STAT, &st), 0);
		x_rmdir(P("s%05d", g_fresh)); /* its dentry goes: this binary's 1 MiB */
	}
	inval_drain();
}

static int spell_length(void)
{
	struct stat st;
	struct dcache_stats a, b;
	unsigned long c0 = t_kernel_calls;
	int n = 0;

	dcache_stats_sum(&a);
	while (lookup(P("known"), Q_STAT, &st) == DCACHE_PASS && n < 100000)
		n++;
	dcache_stats_sum(&b);
	calls_equal(c0, 0); /* the caller asks the kernel, not the cache */
	assert_int_equal(b.pass_rent - a.pass_rent, n);
	assert_int_equal(b.hits - a.hits, 1); /* the lookup after the spell */
	return n;
}

static void test_dcache_idle_spell_passes_through_before_the_walk_and_doubles(void **state)
{
	struct stat st;
	int spell[4];

	(void)state;
	g_fresh = 0;
	x_file(P("known"), 3);
	assert_int_equal(SAME(P("known"), Q_STAT), 0);
	assert_int_equal(lookup(P("known"), Q_STAT, &st), 0); /* cached */
	dcache_set_dir_rent(1);
	rent_decisions(7 * 512, 0); /* the rent doubles 7 times: no spell yet */
	assert_int_equal(lookup(P("known"), Q_STAT, &st), 0);
	rent_decisions(512, 0); /* the 8th: at its most, nothing answered */
	spell[0] = spell_length();
	rent_decisions(8 * 512, 0); /* from the rent given again: twice as long */
	spell[1] = spell_length();
	rent_decisions(512, 8); /* 8 answers a decision (2 misses): no spell; reset */
	assert_int_equal(lookup(P("known"), Q_STAT, &st), 0);
	rent_decisions(8 * 512, 0);
	spell[2] = spell_length();
	rent_decisions(7 * 512, 0); /* fewer than 8 bad windows: no spell */
	spell[3] = 0;
	while (lookup(P("known"), Q_STAT, &st) == DCACHE_PASS && spell[3] < 100000)
		spell[3]++;
	dcache_set_dir_rent(0); /* before any assertion: the next tests rent nothing */
	print_message("spells: %d, %d; after a good window %d; after 7 bad windows %d\n", spell[0],
		      spell[1], spell[2], spell[3]);
	assert_int_equal(spell[0], 4096);
	assert_int_equal(spell[1], 8192);
	assert_int_equal(spell[2], 4096);
	assert_int_equal(spell[3], 0);
	/* Renting and spells changed no answer. */
	assert_int_equal(SAME(P("known"), Q_STAT), 0);
	x_mkdir(P("s00000"));
	assert_int_equal(SAME(P("s00000"), Q_STAT), 0);
	x_rmdir(P("s00000"));
	assert_int_equal(SAME(P("s00000/x"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("s00000"), Q_STAT), ENOENT);
}

/* ------------------------------------------------------------------------ */
/* Invalidation                                                             */

static void test_dcache_event_child_entry_kills_negative(void **state)
{
	unsigned long c0;
	struct stat st;

	assert_int_equal(SAME(P("n"), Q_STAT), ENOENT);
	c0 = t_kernel_calls;
	assert_int_equal(lookup(P("n"), Q_STAT, &st), ENOENT); /* cached */
	calls_equal(c0, 0);
	x_file(P("n"), 6);
	inval_drain();
	assert_int_equal(SAME_ST(P("n"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 6);
	/* And the negatives below it are gone with it. */
	assert_int_equal(SAME(P("n/x"), Q_STAT), ENOTDIR);
}

/* "A write event again" (dcache_events.c): an append raises IN_MODIFY and
 * IN_CLOSE_WRITE about a name the cache does not hold, each of which asked
 * the kernel what the name is now.  Within one batch the second asks
 * nothing; in another batch, after another event, or as an attribute event,
 * it asks again.  The events are applied here, in this thread, whose kernel
 * calls are counted; invalidate/'s reader may apply an event of another
 * directory between the two (then the second asks too): retried. */
static void test_dcache_write_event_again_in_one_batch_asks_once(void **state)
{
	unsigned long c0;
	int wd, tries;

	(void)state;
	x_file(P("w"), 1);
	x_file(P("v"), 1);
	assert_int_equal(SAME(P("absent"), Q_STAT), ENOENT); /* watched; w, v not cached */
	inval_drain();
	wd = real_watch_dir(g_dir, 0); /* the cache's watch of it */
	assert_true(wd >= 0);
	for (tries = 0; tries < 20; tries++) {
		dcache_events_batch_begin();
		c0 = t_kernel_calls;
		dcache_event_child(wd, "w", DCACHE_EV_DATA);
		dcache_event_child(wd, "w", DCACHE_EV_DATA);
		if (t_kernel_calls - c0 == 1)
			break;
	}
	assert_true(tries < 20);
	dcache_events_batch_begin(); /* another batch: it may have come later */
	c0 = t_kernel_calls;
	dcache_event_child(wd, "w", DCACHE_EV_DATA);
	calls_equal(c0, 1);
	c0 = t_kernel_calls; /* another event between */
	dcache_event_child(wd, "v", DCACHE_EV_DATA);
	dcache_event_child(wd, "w", DCACHE_EV_DATA);
	calls_equal(c0, 2);
	c0 = t_kernel_calls; /* an attribute event, then a write event */
	dcache_event_child(wd, "w", DCACHE_EV_ATTR);
	dcache_event_child(wd, "w", DCACHE_EV_DATA);
	calls_equal(c0, 2);
	c0 = t_kernel_calls; /* attributes forgotten by inode between */
	dcache_forget_inode(0, 1);
	dcache_event_child(wd, "w", DCACHE_EV_DATA);
	calls_equal(c0, 1);
	/* And the answers stay the kernel's. */
	assert_int_equal(SAME(P("w"), Q_STAT), 0);
	assert_int_equal(SAME(P("v"), Q_LSTAT), 0);
}

static void test_dcache_mkdir_replaces_negative_and_children_resolve(void **state)
{
	assert_int_equal(SAME(P("d/f"), Q_STAT), ENOENT);
	x_mkdir(P("d"));
	x_file(P("d/f"), 2);
	inval_drain();
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d"), Q_LSTAT), 0);
}

static void test_dcache_unlink_event_makes_file_enoent(void **state)
{
	x_file(P("f"), 3);
	assert_int_equal(SAME(P("f"), Q_STAT), 0);
	x_unlink(P("f"));
	inval_drain();
	assert_int_equal(SAME(P("f"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("f"), Q_OPEN), ENOENT);
}

static void test_dcache_rename_directory_kills_subtree(void **state)
{
	struct stat before, after;

	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	x_file(P("a/b/f"), 5);
	assert_int_equal(SAME_ST(P("a/b/f"), Q_STAT, &before), 0);
	assert_int_equal(SAME(P("a/b/none"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("c/b/f"), Q_STAT), ENOENT);
	x_rename(P("a"), P("c"));
	inval_drain();
	assert_int_equal(SAME(P("a/b/f"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("a"), Q_LSTAT), ENOENT);
	assert_int_equal(SAME_ST(P("c/b/f"), Q_STAT, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	/* And back: the old names resolve again, the new ones do not. */
	x_rename(P("c"), P("a"));
	inval_drain();
	assert_int_equal(SAME(P("a/b/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("c/b/f"), Q_STAT), ENOENT);
}

static void test_dcache_rename_directory_into_other_directory_kills_subtree(void **state)
{
	x_mkdir(P("p"));
	x_mkdir(P("q"));
	x_mkdir(P("p/d"));
	x_file(P("p/d/f"), 5);
	assert_int_equal(SAME(P("p/d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("q/d/f"), Q_STAT), ENOENT);
	x_rename(P("p/d"), P("q/d"));
	inval_drain();
	assert_int_equal(SAME(P("p/d/f"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("q/d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("q/d/../../p"), Q_STAT), 0);
}

static void test_dcache_rename_file_over_existing_updates_inode(void **state)
{
	struct stat a, b;

	x_file(P("a"), 1);
	x_file(P("b"), 2);
	assert_int_equal(SAME_ST(P("a"), Q_STAT, &a), 0);
	assert_int_equal(SAME_ST(P("b"), Q_STAT, &b), 0);
	x_rename(P("a"), P("b"));
	inval_drain();
	assert_int_equal(SAME_ST(P("b"), Q_STAT, &b), 0);
	assert_int_equal(b.st_ino, a.st_ino);
	assert_int_equal(b.st_size, 1);
	assert_int_equal(SAME(P("a"), Q_STAT), ENOENT);
}

static void test_dcache_exchange_directories_swaps_children(void **state)
{
	struct stat st;

	x_mkdir(P("p"));
	x_mkdir(P("q"));
	x_file(P("p/f"), 1);
	x_file(P("q/f"), 2);
	assert_int_equal(SAME_ST(P("p/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(SAME(P("q/f"), Q_STAT), 0);
	if (syscall(SYS_renameat2, AT_FDCWD, P("p"), AT_FDCWD, P("q"), RENAME_EXCHANGE) != 0)
		skip();
	inval_drain();
	assert_int_equal(SAME_ST(P("p/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
	assert_int_equal(SAME_ST(P("q/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
}

static void test_dcache_rmdir_and_recreate_directory_is_exact(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_file(P("d/f"), 3);
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/none"), Q_STAT), ENOENT);
	x_unlink(P("d/f"));
	x_rmdir(P("d"));
	inval_drain();
	assert_int_equal(SAME(P("d/f"), Q_STAT), ENOENT);
	x_mkdir(P("d"));
	x_file(P("d/f"), 4);
	x_file(P("d/none"), 5);
	inval_drain();
	assert_int_equal(SAME_ST(P("d/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(SAME(P("d/none"), Q_STAT), 0);
}

static void test_dcache_symlink_replaced_is_followed_to_new_target(void **state)
{
	struct stat st;

	x_file(P("x"), 1);
	x_file(P("y"), 2);
	x_symlink("x", P("l"));
	assert_int_equal(SAME_ST(P("l"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	x_unlink(P("l"));
	x_symlink("y", P("l"));
	inval_drain();
	assert_int_equal(SAME_ST(P("l"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
}

static void test_dcache_chmod_event_drops_attributes(void **state)
{
	struct stat st;

	x_file(P("f"), 1);
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	x_chmod(P("f"), 0600);
	inval_drain();
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

static void test_dcache_chmod_event_drops_access_answers(void **state)
{
	const unsigned q = DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS;
	unsigned long c0;

	x_file(P("f"), 1);
	x_chmod(P("f"), 0755);
	assert_int_equal(SAME_ACCESS(P("f"), q, X_OK), 0);
	c0 = t_kernel_calls;
	assert_int_equal(SAME_ACCESS(P("f"), q, X_OK), 0); /* cached */
	calls_equal(c0, 0);
	x_chmod(P("f"), 0644);
	inval_drain();
	assert_int_equal(SAME_ACCESS(P("f"), q, X_OK), EACCES);
}

static void test_dcache_chmod_directory_kills_its_children(void **state)
{
	unsigned long c0;

	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/none"), Q_STAT), ENOENT);
	x_chmod(P("d"), 0700);
	inval_drain();
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_true(calls_since(c0) >= 1); /* re-learned through the new permissions */
	assert_int_equal(SAME(P("d/none"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d"), Q_STAT), 0);
}

static void test_dcache_write_event_drops_size(void **state)
{
	struct stat st;

	x_file(P("f"), 10);
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 10);
	x_append(P("f"), 5);
	inval_drain();
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 15);
}

static void test_dcache_truncate_event_drops_size(void **state)
{
	struct stat st;

	x_file(P("f"), 100);
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 100);
	x_truncate(P("f"), 3);
	inval_drain();
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
}

static void test_dcache_utimes_event_drops_mtime(void **state)
{
	struct stat st;

	x_file(P("f"), 1);
	x_symlink("f", P("l"));
	assert_int_equal(SAME(P("f"), Q_STAT), 0);
	assert_int_equal(SAME(P("l"), Q_LSTAT), 0);
	x_utimes(P("f"), 1000000000);
	x_utimes(P("l"), 1200000000); /* the link itself */
	inval_drain();
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(SAME_ST(P("l"), Q_LSTAT, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_int_equal(SAME_ST(P("l"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
}

static void test_dcache_hard_linked_file_attributes_pass_through(void **state)
{
	struct stat st;

	x_file(P("a"), 1);
	x_link(P("a"), P("b"));
	/* Another name can change st_nlink/st_ctime without an event here:
	 * the first lookup answers with the kernel's reply to its own miss,
	 * keeping no attributes; later ones pass through. */
	assert_int_equal(SAME_ST(P("a"), Q_STAT, &st), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(lookup(P("a"), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("a"), Q_STAT, &st), DCACHE_PASS);
	/* Its name is still known: what lies below it is answered. */
	assert_int_equal(SAME(P("a/x"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("a/"), Q_LSTAT), ENOTDIR);
}

static void test_dcache_create_in_directory_drops_directory_attributes(void **state)
{
	struct stat before, after;

	x_mkdir(P("d"));
	assert_int_equal(SAME_ST(P("d"), Q_STAT, &before), 0);
	x_mkdir(P("d/sub"));
	inval_drain();
	assert_int_equal(SAME_ST(P("d"), Q_STAT, &after), 0);
	assert_int_equal(after.st_nlink, before.st_nlink + 1);
}

static void test_dcache_hard_link_in_same_directory_drops_sibling_attributes(void **state)
{
	struct stat st;
	int r;

	x_file(P("a"), 1);
	assert_int_equal(SAME_ST(P("a"), Q_STAT, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	x_link(P("a"), P("b"));
	inval_drain();
	r = lookup(P("a"), Q_STAT, &st);
	assert_true(r == 0 || r == DCACHE_PASS);
	if (r == 0)
		assert_int_equal(st.st_nlink, 2);
	/* A file with several names is never answered with stale attributes. */
	r = lookup(P("b"), Q_STAT, &st);
	assert_true(r == 0 || r == DCACHE_PASS);
	if (r == 0)
		assert_int_equal(st.st_nlink, 2);
}

/* A hard link made into an unwatched directory produces no event we see:
 * the shim's link() wrapper calls dcache_forget_inode() for the new name. */
static void test_dcache_forget_inode_drops_cached_attributes(void **state)
{
	struct stat st, k;
	int r;

	x_mkdir(P("d1"));
	x_mkdir(P("d2"));
	x_file(P("d1/a"), 1);
	assert_int_equal(SAME_ST(P("d1/a"), Q_STAT, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	x_link(P("d1/a"), P("d2/b"));
	inval_drain();
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, P("d2/b"), &k, AT_SYMLINK_NOFOLLOW), 0);
	dcache_forget_inode(k.st_dev, k.st_ino);
	r = lookup(P("d1/a"), Q_STAT, &st);
	assert_true(r == 0 || r == DCACHE_PASS);
	if (r == 0)
		assert_int_equal(st.st_nlink, 2);
}

/* Another process links a cached file into a directory this process
 * watches (it has looked something up there): the IN_CREATE there makes the
 * event thread drop the attributes of every cached name of that inode, in
 * whichever directory it is cached. */
static void test_dcache_link_into_watched_directory_drops_source_attributes(void **state)
{
	struct stat st;
	int r, stale = 0;

	x_mkdir(P("d1"));
	x_mkdir(P("d2"));
	for (int i = 0; i < 3; i++) {
		x_file(P("d1/a"), 1);
		inval_drain();
		assert_int_equal(SAME_ST(P("d1/a"), Q_STAT, &st), 0);
		assert_int_equal(st.st_nlink, 1);
		assert_int_equal(SAME(P("d2/none"), Q_STAT), ENOENT); /* d2 is watched now */
		x_link(P("d1/a"), P("d2/b"));
		inval_drain();
		r = lookup(P("d1/a"), Q_STAT, &st);
		assert_true(r == 0 || r == DCACHE_PASS);
		if (r == 0 && st.st_nlink != 2) {
			print_message("round %d: nlink %lu cached (kernel: 2)\n", i,
				      (unsigned long)st.st_nlink);
			stale++;
		}
		x_unlink(P("d2/b"));
		x_unlink(P("d1/a"));
	}
	assert_int_equal(stale, 0);
}

/* Hooks run from the kernel_lstat op: make a change, then wait until the
 * inotify reader thread has applied its event (the cache's writer mutex is
 * free while the slow path waits for the kernel).  No dcache_* call here. */
static void wait_for_event_since(const struct inval_stats *before)
{
	struct inval_stats now;

	for (int i = 0; i < 2000; i++) {
		inval_stats_get(&now);
		if (now.events > before->events)
			break;
		usleep(1000);
	}
	usleep(20000); /* the reader thread has read the event: let it apply it */
}

static void hook_mkdir_in_d_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	x_mkdir(P("d/sub"));
	wait_for_event_since(&before);
}

static void hook_create_n_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	x_file(P("n"), 5);
	wait_for_event_since(&before);
}

static void hook_chmod_f_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	x_chmod(P("f"), 0600);
	wait_for_event_since(&before);
}

/* The kernel said ENOENT, then the name appeared and its event was applied
 * before the slow path could insert the negative: it must not be inserted. */
static void test_dcache_negative_fetched_during_creation_is_not_kept(void **state)
{
	struct stat st;
	int r;

	assert_int_equal(SAME(P("other"), Q_STAT), ENOENT); /* the directory is watched */
	t_hook_path = P("n");
	t_hook = hook_create_n_and_wait_for_event;
	r = lookup(P("n"), Q_STAT, &st);
	t_hook_path = NULL;
	assert_null(t_hook); /* the race happened */
	assert_true(r == ENOENT || r == 0 || r == DCACHE_PASS);
	inval_drain();
	assert_int_equal(SAME_ST(P("n"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 5);
}

/* The same for a file's attributes fetched while it is chmod-ed. */
static void test_dcache_file_attributes_fetched_during_chmod_are_not_kept(void **state)
{
	struct stat st;

	x_file(P("f"), 1);
	assert_int_equal(SAME(P("other"), Q_STAT), ENOENT); /* the directory is watched */
	t_hook_path = P("f");
	t_hook = hook_chmod_f_and_wait_for_event;
	(void)lookup(P("f"), Q_STAT, &st);
	t_hook_path = NULL;
	assert_null(t_hook);
	inval_drain();
	assert_int_equal(SAME_ST(P("f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

/* A directory's own attributes (nlink, mtime, size) change when an entry is
 * created in it; that event reaches only the directory's own watch.  If it is
 * applied while the slow path is fetching the directory's attributes, the
 * answer the slow path got is already stale and must not be cached. */
static void test_dcache_directory_attributes_fetched_during_entry_creation_are_not_kept(void **state)
{
	struct stat st, k;
	int r;

	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	/* d's dentry, without its attributes; its watch, through a child. */
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	t_hook_path = P("d");
	t_hook = hook_mkdir_in_d_and_wait_for_event;
	r = lookup(P("d"), Q_LSTAT, &st); /* the slow path fetches d's attributes */
	t_hook_path = NULL;
	assert_null(t_hook); /* the hook ran: the race happened */
	assert_true(r == 0 || r == DCACHE_PASS);
	inval_drain();
	/* Nothing changes any more: the answer must be the kernel's. */
	r = lookup(P("d"), Q_LSTAT, &st);
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, P("d"), &k, AT_SYMLINK_NOFOLLOW), 0);
	if (r == 0 && st.st_nlink != k.st_nlink)
		print_message("%s: cache nlink %lu, kernel nlink %lu\n", P("d"),
			      (unsigned long)st.st_nlink, (unsigned long)k.st_nlink);
	assert_true(r == 0 || r == DCACHE_PASS);
	if (r == 0) {
		assert_int_equal(st.st_nlink, k.st_nlink);
		assert_int_equal(st.st_mtim.tv_nsec, k.st_mtim.tv_nsec);
	}
}


/* ------------------------------------------------------------------------ */
/* Complete directories (policy of this binary: list after 2 absent names)  */

/* Probe fresh absent names in P(dir) until the cache lists it: 2 the first
 * time, twice as many each time it was complete before. */
static void complete_dir(const char *dir)
{
	static unsigned serial;
	unsigned long l0 = t_list_calls;

	for (int i = 0; i < 64 && t_list_calls == l0; i++)
		assert_int_equal(SAME(P("%s/absent-%u", dir, ++serial), Q_STAT), ENOENT);
	assert_int_equal(t_list_calls - l0, 1);
}

/* An open (NEGONLY) of a name a complete directory lists goes to the kernel
 * without a dentry for the name (dcache_walk.c): nothing asked, nothing
 * hashed, whatever the name is (a file, a directory, with a trailing
 * slash); its first stat hashes it as before, and an absent name is still
 * ENOENT from the listing. */
static void test_dcache_open_of_a_listed_name_passes_without_hashing_it(void **state)
{
	struct stat st;
	unsigned long k0;
	size_t n1;

	(void)state;
	x_mkdir(P("d"));
	for (int i = 0; i < 20; i++)
		x_file(P("d/f%03d", i), (size_t)i);
	x_mkdir(P("d/sub"));
	inval_drain();
	complete_dir("d");
	n1 = dcache_count();
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/f007"), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/f007/"), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/sub"), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/absent"), Q_OPEN, &st), ENOENT);
	calls_equal(k0, 0);
	assert_int_equal(dcache_count(), n1);
	assert_int_equal(SAME_ST(P("d/f007"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(dcache_count(), n1 + 1);
	assert_int_equal(SAME(P("d/f007/"), Q_OPEN), ENOTDIR);
}

/* A complete directory keeps its listing and hashes a listed name only at
 * its first lookup (dcache_populate.c, listed_hash_locked()): listing 201
 * names makes no dentry for them; an absent name is ENOENT from the listing
 * with no kernel call; a listed file, then a listed directory on the way to
 * an absent name, each hash one dentry and answer as the kernel does; a
 * name removed takes the listing with the directory's completeness. */
static void test_dcache_complete_directory_hashes_listed_names_at_first_lookup(void **state)
{
	struct stat st;
	unsigned long k0;
	size_t n0, n1;

	(void)state;
	x_mkdir(P("d"));
	for (int i = 0; i < 200; i++)
		x_file(P("d/f%03d", i), (size_t)i);
	x_mkdir(P("d/sub"));
	inval_drain();
	n0 = dcache_count();
	complete_dir("d");
	n1 = dcache_count();
	print_message("dentries: %zu before the listing, %zu after\n", n0, n1);
	assert_true(n1 - n0 < 64); /* the probes' negatives, not 201 names */
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/never"), Q_STAT, &st), ENOENT);
	assert_int_equal(lookup(P("d/never/below"), Q_LSTAT, &st), ENOENT);
	calls_equal(k0, 0);
	assert_int_equal(dcache_count(), n1);
	assert_int_equal(SAME_ST(P("d/f007"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(dcache_count(), n1 + 1);
	assert_int_equal(SAME(P("d/f007/"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("d/sub/absent"), Q_STAT), ENOENT);
	assert_true(dcache_count() >= n1 + 2);
	assert_int_equal(SAME(P("d/sub"), Q_STAT), 0);
	/* A listed name removed: ENOENT, as the kernel says; the others stay. */
	x_unlink(P("d/f010"));
	inval_drain();
	assert_int_equal(SAME(P("d/f010"), Q_STAT), ENOENT);
	assert_int_equal(SAME_ST(P("d/f011"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 11);
	assert_int_equal(SAME(P("d/never"), Q_STAT), ENOENT);
}

static void test_dcache_complete_directory_answers_unseen_absent_name_without_kernel(void **state)
{
	struct stat st;
	unsigned long k0;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	x_file(P("d/b"), 2);
	complete_dir("d");
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/never-probed"), Q_STAT, &st), ENOENT);
	assert_int_equal(lookup(P("d/never-probed/below"), Q_OPEN, &st), ENOENT);
	assert_int_equal(lookup(P("d/x/"), Q_LSTAT, &st), ENOENT);
	calls_equal(k0, 0);
	/* Names in the listing still answer what the kernel says. */
	assert_int_equal(SAME_ST(P("d/a"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(SAME(P("d/b/"), Q_STAT), ENOTDIR);
}

static void test_dcache_complete_directory_placeholders_resolve_links_and_dirs(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_mkdir(P("d/sub"));
	x_file(P("d/sub/f"), 7);
	x_symlink("sub", P("d/l"));
	x_symlink("nowhere", P("d/dangling"));
	complete_dir("d");
	assert_int_equal(SAME_ST(P("d/l/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(SAME(P("d/l"), Q_LSTAT), 0);
	assert_int_equal(SAME(P("d/dangling"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/dangling"), Q_LSTAT), 0);
	assert_int_equal(SAME(P("d/sub/../l/./f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/sub/nothing"), Q_STAT), ENOENT);
}

static void test_dcache_complete_directory_sees_create_unlink_and_renames(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_mkdir(P("e"));
	x_file(P("d/a"), 1);
	x_file(P("e/m"), 4);
	complete_dir("d");
	x_file(P("d/new"), 3); /* another writer (raw syscalls) */
	inval_drain();
	assert_int_equal(SAME_ST(P("d/new"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
	complete_dir("d");
	x_unlink(P("d/a"));
	inval_drain();
	assert_int_equal(SAME(P("d/a"), Q_STAT), ENOENT);
	complete_dir("d");
	x_rename(P("e/m"), P("d/moved-in"));
	inval_drain();
	assert_int_equal(SAME_ST(P("d/moved-in"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 4);
	complete_dir("d");
	x_rename(P("d/moved-in"), P("e/moved-out"));
	inval_drain();
	assert_int_equal(SAME(P("d/moved-in"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("e/moved-out"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/new"), Q_STAT), 0);
}

static void hook_create_late_in_d_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	x_file(P("d/late"), 6);
	wait_for_event_since(&before);
}

/* A name created after the kernel listed the directory, its event applied
 * before the listing is inserted: the listing must not make it absent. */
static void test_dcache_listing_fetched_during_creation_is_not_kept(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	assert_int_equal(SAME(P("d/absent-1"), Q_STAT), ENOENT);
	t_list_hook_path = P("d");
	t_list_hook = hook_create_late_in_d_and_wait_for_event;
	assert_int_equal(lookup(P("d/absent-2"), Q_STAT, &st), ENOENT);
	t_list_hook_path = NULL;
	assert_null(t_list_hook); /* the race happened */
	inval_drain();
	assert_int_equal(SAME_ST(P("d/late"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 6);
}

static void test_dcache_directory_over_entry_limit_is_not_completed(void **state)
{
	struct stat st;
	unsigned long k0;

	x_mkdir(P("d"));
	for (int i = 0; i < 5; i++)
		x_file(P("d/f%d", i), 1);
	dcache_set_completion(2, 4);
	assert_int_equal(SAME(P("d/absent-1"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/absent-2"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/absent-3"), Q_STAT), ENOENT);
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/absent-4"), Q_STAT, &st), ENOENT);
	dcache_set_completion(2, 10000);
	assert_true(calls_since(k0) > 0); /* asked: not complete */
}

static void test_dcache_chmod_of_complete_directory_rechecks_search_permission(void **state)
{
	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	x_chmod(P("d"), 0);
	inval_drain();
	/* As root the kernel still searches it; as another user EACCES, which
	 * the cache passes to the kernel: either way the answer must be the
	 * kernel's. */
	SAME_OR_EACCES_PASSED(P("d/zzz"), Q_STAT);
	SAME_OR_EACCES_PASSED(P("d/a"), Q_STAT);
	x_chmod(P("d"), 0755);
}


/* Typed listings: a directory or regular file named by a complete listing
 * is known as such without an lstat of its own. */
static void test_dcache_typed_listing_answers_type_questions_without_kernel(void **state)
{
	char want[PATH_MAX], got[PATH_MAX];
	struct stat st;
	unsigned long k0;
	int einval;

	x_mkdir(P("d"));
	x_mkdir(P("d/sub"));
	x_file(P("d/a"), 1);
	x_symlink("sub", P("d/l"));
	complete_dir("d");
	k0 = t_kernel_calls;
	/* realpath needs "not a symlink" only; open(O_DIRECTORY) of a file,
	 * a file as a directory and a trailing slash need the type only. */
	assert_int_equal(dcache_realpath(P("d/a"), got, sizeof(got), &einval), 0);
	assert_non_null(realpath(P("d/a"), want));
	assert_string_equal(got, want);
	assert_int_equal(dcache_realpath(P("d/sub"), got, sizeof(got), &einval), 0);
	assert_non_null(realpath(P("d/sub"), want));
	assert_string_equal(got, want);
	assert_int_equal(lookup(P("d/a"), Q_OPEN | DCACHE_Q_DIRECTORY, &st), ENOTDIR);
	assert_int_equal(lookup(P("d/a/x"), Q_OPEN, &st), ENOTDIR);
	assert_int_equal(lookup(P("d/a/"), Q_STAT, &st), ENOTDIR);
	assert_int_equal(lookup(P("d/a"), Q_OPEN, &st), DCACHE_PASS); /* success needs the fd */
	calls_equal(k0, 0);
	/* The kernel agrees, and attributes still come from it. */
	assert_int_equal(SAME(P("d/a"), Q_OPEN | DCACHE_Q_DIRECTORY), ENOTDIR);
	assert_int_equal(SAME(P("d/a/x"), Q_OPEN), ENOTDIR);
	assert_int_equal(SAME_ST(P("d/a"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(SAME_ST(P("d/sub"), Q_LSTAT, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(SAME(P("d/sub/none"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/l"), Q_LSTAT), 0); /* a symlink: a placeholder */
	assert_int_equal(SAME(P("d/l/"), Q_STAT), 0);
}

/* What the op does not vouch for (the shim's op: a mount point, whose
 * d_type is the covered entry's) is asked about as before. */
static void test_dcache_typed_listing_asks_kernel_about_untyped_name(void **state)
{
	char got[PATH_MAX];
	unsigned long k0;
	int einval;

	x_mkdir(P("d"));
	x_mkdir(P("d/mnt"));
	t_untyped_name = "mnt";
	complete_dir("d");
	t_untyped_name = NULL;
	k0 = t_kernel_calls;
	assert_int_equal(dcache_realpath(P("d/mnt"), got, sizeof(got), &einval), 0);
	assert_true(calls_since(k0) > 0);
	assert_int_equal(SAME(P("d/mnt/"), Q_STAT), 0);
}

/* A listed file may be hard-linked (st_nlink unknown): an access answer is
 * kept only once its lstat said it is not, as for any other name.  The link
 * here sits in a directory nothing watches: its chmod sends no event to d. */
static void test_dcache_listed_hard_linked_file_access_is_not_kept(void **state)
{
	x_mkdir(P("d"));
	x_mkdir(P("e"));
	x_file(P("d/a"), 1);
	x_chmod(P("d/a"), 0755);
	x_link(P("d/a"), P("e/b"));
	complete_dir("d");
	inval_drain();
	assert_int_equal(dcache_lookup(P("d/a"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK, NULL),
			 DCACHE_PASS);
	assert_int_equal(kernel_query(P("d/a"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK, NULL), 0);
	assert_int_equal(syscall(SYS_fchmodat, AT_FDCWD, P("e/b"), 0644), 0);
	inval_drain();
	assert_int_equal(kernel_query(P("d/a"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK, NULL),
			 EACCES);
	assert_int_equal(dcache_lookup(P("d/a"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, X_OK, NULL),
			 DCACHE_PASS); /* hard-linked: the kernel's to answer */
}

static __thread const char *t_write_path; /* the file hook_write_and_wait writes */

static void hook_write_and_wait_for_event(void)
{
	struct inval_stats before;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, t_write_path, O_WRONLY | O_CLOEXEC);

	inval_stats_get(&before);
	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_write, fd, "yy", 2), 2);
	syscall(SYS_close, fd);
	wait_for_event_since(&before);
}

/* One run of the test below in directory `d`.  Returns false, without
 * asserting, if the counts came out otherwise while more events arrived than
 * the write's own two (IN_MODIFY, IN_CLOSE_WRITE): other programs' events,
 * such as a directory made in /tmp, which the cache watches as an ancestor,
 * may rightly cost an answer in flight, and the run proves nothing. */
static bool dir_attrs_kept_across_writes(const char *d)
{
	char f[PATH_MAX + 8], g[PATH_MAX + 8];
	struct inval_stats e0, e1;
	unsigned long k0, first, again;
	struct stat st;

	snprintf(f, sizeof(f), "%s/f", d);
	snprintf(g, sizeof(g), "%s/g", d);
	x_mkdir(d);
	x_file(f, 1);
	assert_int_equal(lookup(f, Q_OPEN, &st), DCACHE_PASS); /* d known and watched */
	t_hook_path = d;
	t_write_path = f;
	t_hook = hook_write_and_wait_for_event;
	inval_stats_get(&e0);
	k0 = t_kernel_calls;
	assert_int_equal(lookup(d, Q_STAT, &st), 0);
	first = calls_since(k0);
	t_hook_path = NULL;
	assert_null(t_hook); /* the write happened during the lstat */
	k0 = t_kernel_calls;
	assert_int_equal(SAME(d, Q_STAT), 0);
	again = calls_since(k0);
	inval_stats_get(&e1);
	if ((first != 1 || again != 0) && e1.events - e0.events > 2) {
		print_message("%s: %lu and %lu kernel calls, %lu events (other programs'): again\n", d,
			      first, again, e1.events - e0.events);
		print_asked(k0 - first, __FILE__, __LINE__);
		return false;
	}
	assert_int_equal(first, 1);
	assert_int_equal(again, 0);
	/* A name created in it does move them. */
	x_file(g, 1);
	inval_drain();
	assert_int_equal(SAME(d, Q_STAT), 0);
	return true;
}

/* Writing a file does not move its directory's attributes: an event about a
 * file that lands while the directory's own lstat is in flight does not
 * throw that answer away (a busy /tmp was asked about 25 times in a row).
 * Run again in a new directory while other programs' events disturb it. */
static void test_dcache_directory_attributes_kept_across_writes_to_its_files(void **state)
{
	char d[PATH_MAX];
	int attempt = 0;

	do {
		assert_true(attempt < 10);
		snprintf(d, sizeof(d), "%s", P("d%d", attempt++));
	} while (!dir_attrs_kept_across_writes(d));
}

static void hook_create_d_g_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	x_file(P("d/g"), 1);
	wait_for_event_since(&before);
}

/* ... but a name created in it while its lstat is in flight does: that
 * answer (older than the create) is not kept. */
static void test_dcache_directory_attributes_fetched_during_create_are_not_kept(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	assert_int_equal(lookup(P("d/f"), Q_OPEN, &st), DCACHE_PASS); /* d known and watched */
	t_hook_path = P("d");
	t_hook = hook_create_d_g_and_wait_for_event;
	(void)lookup(P("d"), Q_STAT, &st);
	t_hook_path = NULL;
	assert_null(t_hook); /* the create happened during the lstat */
	assert_int_equal(SAME(P("d"), Q_STAT), 0);
}

/* An escalation ("Names that outlive their inode's other names", rule 2: a
 * write through a removed name) made while an lstat is in flight: the hook
 * writes through t_escalate_fd, whose name other/w was removed while
 * watched, and waits for the event. */
static __thread int t_escalate_fd = -1;

static void hook_escalate_and_wait_for_event(void)
{
	struct inval_stats before;

	inval_stats_get(&before);
	assert_int_equal(syscall(SYS_write, t_escalate_fd, "z", 1), 1);
	wait_for_event_since(&before);
}

/* other/ watched, other/w open for writing in t_escalate_fd and removed;
 * d/ watched (a lookup of d/none) and d/f made, neither looked up. */
static void arm_escalation(void)
{
	struct stat st;

	x_mkdir(P("other"));
	x_file(P("other/w"), 1);
	assert_int_equal(lookup(P("other/w"), Q_LSTAT, &st), 0); /* other/ watched */
	t_escalate_fd = (int)syscall(SYS_openat, AT_FDCWD, P("other/w"), O_WRONLY | O_CLOEXEC);
	assert_true(t_escalate_fd >= 0);
	x_unlink(P("other/w"));
	inval_drain();
	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	assert_int_equal(lookup(P("d/none"), Q_OPEN, &st), ENOENT); /* d known and watched */
}

/* An escalation drops every file's attributes on the device, so a file's
 * answer in flight is not kept (the lookup asks again)... */
static void test_dcache_file_attributes_fetched_during_escalation_are_not_kept(void **state)
{
	unsigned long k0;
	struct stat st;

	arm_escalation();
	t_hook_path = P("d/f");
	t_hook = hook_escalate_and_wait_for_event;
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/f"), Q_STAT, &st), 0);
	t_hook_path = NULL;
	assert_null(t_hook); /* the write happened during the lstat */
	/* Not kept: the lookup asked again, after the escalation. */
	calls_equal(k0, 2);
	syscall(SYS_close, t_escalate_fd);
}

/* ... but a directory's is: an escalation drops no directory's attributes
 * (dc_attr_gen_for), and other programs' short-lived files escalate often. */
static void test_dcache_directory_attributes_fetched_during_escalation_are_kept(void **state)
{
	unsigned long k0;
	struct stat st;

	arm_escalation();
	t_hook_path = P("d");
	t_hook = hook_escalate_and_wait_for_event;
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d"), Q_STAT, &st), 0);
	t_hook_path = NULL;
	assert_null(t_hook); /* the write happened during the lstat */
	calls_equal(k0, 1);
	k0 = t_kernel_calls;
	assert_int_equal(SAME(P("d"), Q_STAT), 0);
	calls_equal(k0, 0);
	syscall(SYS_close, t_escalate_fd);
}

/* A directory whose names are looked up one by one, all present, is listed
 * after 4 x probes of them (policy 2: 8); the rest is answered from it. */
static void test_dcache_directory_listed_after_many_present_names(void **state)
{
	struct stat st;
	unsigned long l0 = t_list_calls, k0;

	x_mkdir(P("d"));
	for (int i = 0; i < 12; i++)
		x_file(P("d/f%d", i), 1);
	for (int i = 0; i < 8; i++)
		assert_int_equal(lookup(P("d/f%d", i), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(t_list_calls - l0, 1);
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("d/f11"), Q_OPEN, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("d/f12"), Q_OPEN, &st), ENOENT);
	calls_equal(k0, 0);
	assert_int_equal(SAME(P("d/f12"), Q_OPEN), ENOENT);
}

/* ------------------------------------------------------------------------ */
/* Scratch directories: sticky and writable by all, watched for names only  */

/* The mask of this process's inotify watch of `path`'s inode, from
 * /proc/self/fdinfo of every inotify instance it holds; 0 if none. */
static unsigned long watch_mask_of(const char *path)
{
	struct stat st;
	char link[64], target[64], fdinfo[64], line[512];
	unsigned long mask = 0;

	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	for (int fd = 0; fd < 4096 && !mask; fd++) {
		long n;
		FILE *f;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "anon_inode:inotify") != 0)
			continue;
		snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", fd);
		f = fopen(fdinfo, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned long ino, m;
			const char *pi = strstr(line, " ino:"), *pm = strstr(line, " mask:");

			if (strncmp(line, "inotify wd:", 11) != 0 || !pi || !pm)
				continue;
			ino = strtoul(pi + 5, NULL, 16);
			m = strtoul(pm + 6, NULL, 16);
			if (ino == (unsigned long)st.st_ino)
				mask = m;
		}
		fclose(f);
	}
	return mask;
}

/* The cache may pass (DCACHE_PASS) but never answer other than the kernel. */
#define PASS_OR_SAME(path, flags, amode) same_((path), (flags), (amode), 2, NULL, __FILE__, __LINE__)

static void x_scratch(const char *p)
{
	x_mkdir(p);
	x_chmod(p, 01777);
}

static void test_dcache_scratch_dir_is_watched_for_names_only(void **state)
{
	unsigned long c0, m;

	x_scratch(P("s"));
	assert_int_equal(SAME(P("s/none"), Q_STAT), ENOENT);
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("s/none"), Q_OPEN), ENOENT); /* names are cached */
	calls_equal(c0, 0);
	m = watch_mask_of(P("s"));
	assert_true(m & IN_CREATE);
	assert_true(m & IN_DELETE);
	assert_true(m & IN_MOVED_TO);
	assert_false(m & (IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE)); /* no walk of its children */
	assert_true(watch_mask_of(g_dir) & IN_ATTRIB); /* an ordinary directory: in full */
	x_file(P("s/none"), 3); /* names events still arrive */
	inval_drain();
	assert_int_equal(PASS_OR_SAME(P("s/none"), Q_OPEN, 0), DCACHE_PASS); /* not ENOENT */
	assert_int_equal(SAME(P("s/none/"), Q_STAT), ENOTDIR);
}

static void test_dcache_scratch_watch_never_narrows_a_full_one(void **state)
{
	int wd;

	x_mkdir(P("d"));
	assert_int_equal(SAME(P("d/none"), Q_STAT), ENOENT); /* d watched in full */
	assert_true(watch_mask_of(P("d")) & IN_ATTRIB);
	wd = real_watch_dir(P("d"), 1); /* another name of it asks for names only */
	assert_true(wd >= 0);
	assert_true(watch_mask_of(P("d")) & IN_ATTRIB);
	assert_true(watch_mask_of(P("d")) & IN_MODIFY);
}

static void test_dcache_scratch_dir_files_keep_no_attributes(void **state)
{
	const unsigned q = DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS;
	struct stat st;

	x_scratch(P("s"));
	x_file(P("s/f"), 10);
	x_chmod(P("s/f"), 0755);
	PASS_OR_SAME(P("s/f"), Q_STAT, 0); /* the first: a miss, the kernel's answer */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(PASS_OR_SAME(P("s/f"), Q_STAT, 0), DCACHE_PASS);
		assert_int_equal(PASS_OR_SAME(P("s/f"), q, X_OK), DCACHE_PASS);
	}
	/* No event says so: a cached size or mode would now be stale. */
	x_append(P("s/f"), 5);
	x_chmod(P("s/f"), 0644);
	inval_drain();
	assert_int_equal(PASS_OR_SAME(P("s/f"), Q_STAT, 0), DCACHE_PASS);
	assert_int_equal(PASS_OR_SAME(P("s/f"), q, X_OK), DCACHE_PASS);
	assert_int_equal(kernel_query(P("s/f"), Q_STAT, 0, &st), 0);
	assert_int_equal(st.st_size, 15);
	/* Its name, and absent ones beside it, are still answered. */
	assert_int_equal(SAME(P("s/f/"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("s/g"), Q_STAT), ENOENT);
}

static void test_dcache_scratch_subdir_attributes_follow_its_own_watch(void **state)
{
	struct stat st;
	unsigned long c0;

	x_scratch(P("s"));
	x_mkdir(P("s/d"));
	x_file(P("s/d/f"), 4);
	assert_int_equal(SAME(P("s/d/f"), Q_STAT), 0);
	assert_int_equal(SAME_ST(P("s/d"), Q_STAT, &st), 0);
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("s/d/f"), Q_STAT), 0); /* below it, all cached */
	assert_int_equal(SAME_ST(P("s/d"), Q_STAT, &st), 0);
	calls_equal(c0, 0);
	assert_true(watch_mask_of(P("s/d")) & IN_ATTRIB);
	/* Its own watch, not its parent's, tells of the chmod. */
	x_chmod(P("s/d"), 0700);
	inval_drain();
	assert_int_equal(SAME_ST(P("s/d"), Q_STAT, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(SAME(P("s/d/f"), Q_STAT), 0);
}

static void test_dcache_scratch_dir_in_scratch_dir_keeps_no_attributes(void **state)
{
	x_scratch(P("s"));
	x_scratch(P("s/n"));
	x_file(P("s/n/f"), 1);
	for (int i = 0; i < 3; i++) { /* misses answered, then passed through */
		PASS_OR_SAME(P("s/n"), Q_STAT, 0);
		PASS_OR_SAME(P("s/n/f"), Q_STAT, 0);
	}
	assert_int_equal(PASS_OR_SAME(P("s/n"), Q_STAT, 0), DCACHE_PASS);
	/* No watch sees this chmod: neither s's nor s/n's own (names only). */
	x_chmod(P("s/n"), 0755);
	inval_drain();
	assert_int_equal(PASS_OR_SAME(P("s/n"), Q_STAT, 0), DCACHE_PASS);
	assert_int_equal(PASS_OR_SAME(P("s/n/f"), Q_STAT, 0), DCACHE_PASS);
	assert_int_equal(SAME(P("s/n/none"), Q_STAT), ENOENT);
}

/* ------------------------------------------------------------------------ */
/* Policy: racy timestamps, no negative entries, excluded directories       */

static void test_dcache_racy_fresh_file_attributes_are_answered_not_kept(void **state)
{
	struct timespec old[2] = { { time(NULL) - 10, 0 }, { time(NULL) - 10, 0 } };
	struct stat st;
	unsigned long k0;

	x_file(P("fresh"), 3);
	x_file(P("old"), 4);
	assert_int_equal(syscall(SYS_utimensat, AT_FDCWD, P("old"), old, 0), 0);
	inval_drain();
	assert_int_equal(dcache_set_policy(2000000000LL, 0, NULL, 0), 0);
	assert_int_equal(SAME_ST(P("fresh"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
	k0 = t_kernel_calls;
	assert_int_equal(SAME_ST(P("fresh"), Q_STAT, &st), 0); /* answered by the kernel */
	assert_true(calls_since(k0) > 0);
	assert_int_equal(SAME(P("old"), Q_STAT), 0);
	k0 = t_kernel_calls;
	assert_int_equal(SAME(P("old"), Q_STAT), 0); /* ctime is fresh too (utimensat) */
	assert_true(calls_since(k0) > 0);
	assert_int_equal(dcache_set_policy(0, 0, NULL, 0), 0);
	k0 = t_kernel_calls;
	assert_int_equal(SAME(P("fresh"), Q_STAT), 0);
	assert_int_equal(SAME(P("fresh"), Q_STAT), 0);
	assert_true(calls_since(k0) <= 1); /* kept once the rule is off */
}

static void test_dcache_no_negative_asks_kernel_for_every_absent_name(void **state)
{
	struct stat st;
	unsigned long k0;

	assert_int_equal(dcache_set_policy(0, 1, NULL, 0), 0);
	assert_int_equal(SAME(P("nn"), Q_STAT), ENOENT);
	k0 = t_kernel_calls;
	assert_int_equal(lookup(P("nn"), Q_STAT, &st), ENOENT);
	assert_int_equal(lookup(P("nn/below"), Q_STAT, &st), ENOENT);
	assert_true(calls_since(k0) >= 2);
	assert_int_equal(dcache_set_policy(0, 0, NULL, 0), 0);
	dcache_set_completion(2, 10000);
}

static void test_dcache_excluded_directory_passes_through(void **state)
{
	const char *ex[1];
	struct stat st;

	x_mkdir(P("ex"));
	x_mkdir(P("ex/sub"));
	x_file(P("ex/sub/f"), 1);
	x_mkdir(P("exnot"));
	x_file(P("exnot/f"), 2);
	ex[0] = P("ex");
	assert_int_equal(dcache_set_policy(0, 0, ex, 1), 0);
	assert_int_equal(lookup(P("ex/sub/f"), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(lookup(P("ex/none"), Q_STAT, &st), DCACHE_PASS);
	assert_int_equal(SAME(P("exnot/f"), Q_STAT), 0); /* a prefix of the name only */
	/* The directory's own name is not inside it (its attributes would need
	 * its own watch, which exclusion forbids: those pass through). */
	assert_int_equal(SAME_ACCESS(P("ex"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, F_OK), 0);
	assert_int_equal(dcache_set_policy(0, 0, NULL, 0), 0);
}

static void test_dcache_invalidate_all_forgets_everything(void **state)
{
	unsigned long c0;

	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	SAME(P("d/f"), Q_STAT);
	SAME(P("d/none"), Q_STAT);
	assert_true(dcache_count() > 0);
	dcache_invalidate_all();
	assert_int_equal(dcache_count(), 0);
	warm_test_dir(); /* /tmp and the scratch root again (see test_setup) */
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_true(calls_since(c0) >= 1);
	c0 = t_kernel_calls;
	assert_int_equal(SAME(P("d/none"), Q_STAT), ENOENT);
	assert_true(calls_since(c0) >= 1);
	assert_true(dcache_count() > 0);
}

/* ------------------------------------------------------------------------ */
/* The path index (whole names straight to their final dentry)              */

static uint64_t index_hits(void)
{
	struct dcache_stats st;

	dcache_stats_sum(&st);
	return st.index_hits;
}

static void test_dcache_index_repeated_long_name_resolves_in_one_step(void **state)
{
	const char *f = P("a/b/c/d/e/f/g/h/i/file");
	struct stat st;
	unsigned long c0;
	uint64_t h0;

	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	x_mkdir(P("a/b/c"));
	x_mkdir(P("a/b/c/d"));
	x_mkdir(P("a/b/c/d/e"));
	x_mkdir(P("a/b/c/d/e/f"));
	x_mkdir(P("a/b/c/d/e/f/g"));
	x_mkdir(P("a/b/c/d/e/f/g/h"));
	x_mkdir(P("a/b/c/d/e/f/g/h/i"));
	x_file(f, 9);
	assert_int_equal(SAME(f, Q_STAT), 0);
	assert_int_equal(SAME(P("a/b/c/d/e/f/g/h/i/none"), Q_STAT), ENOENT);
	for (int attempt = 0;; attempt++) {
		struct inval_stats e0, e1;

		inval_stats_get(&e0);
		c0 = t_kernel_calls;
		h0 = index_hits();
		for (int i = 0; i < 3; i++) {
			assert_int_equal(SAME_ST(f, Q_STAT, &st), 0);
			assert_int_equal(st.st_size, 9);
			assert_int_equal(SAME(P("a/b/c/d/e/f/g/h/i/none"), Q_STAT), ENOENT);
			assert_int_equal(SAME(P("a/b/c/d/e/f/g/h/i/none/x"), Q_STAT), ENOENT);
		}
		inval_stats_get(&e1);
		/* The rounds change nothing: an event is another program's (a
		 * name made in a watched ancestor), and may rightly make every
		 * index entry stale.  Such a run proves nothing: again. */
		if (e1.events != e0.events && attempt < 10) {
			print_message("%lu events (other programs'): again\n", e1.events - e0.events);
			continue;
		}
		break;
	}
	calls_equal(c0, 0);
	/* A lookup that asked the kernel fills no slot; the first plain walk
	 * of a name (round 1) does; rounds 2 and 3 of the 3 names are the
	 * index's. */
	assert_true(index_hits() - h0 >= 6);
}

static void test_dcache_index_renamed_middle_directory_resolves_to_new_tree(void **state)
{
	struct stat st;

	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	x_mkdir(P("a/b/c"));
	x_file(P("a/b/c/f"), 1);
	x_mkdir(P("x"));
	x_mkdir(P("x/b"));
	x_mkdir(P("x/b/c"));
	x_file(P("x/b/c/f"), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME_ST(P("a/b/c/f"), Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 1);
		assert_int_equal(SAME(P("a/b/c/g"), Q_STAT), ENOENT);
	}
	x_rename(P("a"), P("old"));
	x_rename(P("x"), P("a"));
	x_file(P("a/b/c/g"), 3);
	inval_drain();
	assert_int_equal(SAME_ST(P("a/b/c/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
	assert_int_equal(SAME_ST(P("a/b/c/g"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(SAME(P("x/b/c/f"), Q_STAT), ENOENT);
}

static void test_dcache_index_retargeted_middle_symlink_is_followed_to_new_directory(void **state)
{
	struct stat st;

	x_mkdir(P("d1"));
	x_mkdir(P("d2"));
	x_file(P("d1/f"), 1);
	x_file(P("d2/f"), 2);
	x_symlink("d1", P("l"));
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME_ST(P("l/f"), Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 1);
	}
	x_unlink(P("l"));
	x_symlink("d2", P("l"));
	inval_drain();
	assert_int_equal(SAME_ST(P("l/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
}

static void test_dcache_index_stat_and_lstat_of_one_name_are_kept_apart(void **state)
{
	struct stat st;

	x_file(P("f"), 4);
	x_symlink("f", P("l"));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(SAME_ST(P("l"), Q_STAT, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(SAME_ST(P("l"), Q_LSTAT, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
		assert_int_equal(SAME(P("l/"), Q_STAT), ENOTDIR);
		assert_int_equal(SAME(P("f/"), Q_LSTAT), ENOTDIR);
	}
}

static void test_dcache_index_same_relative_name_under_new_cwd_is_the_new_dirs(void **state)
{
	struct stat st;

	x_mkdir(P("c1"));
	x_mkdir(P("c2"));
	x_mkdir(P("c1/s"));
	x_mkdir(P("c2/s"));
	x_file(P("c1/s/f"), 1);
	x_file(P("c2/s/f"), 2);
	x_chdir(P("c1"));
	dcache_cwd_changed();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME_ST("s/f", Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 1);
		assert_int_equal(SAME("s/g", Q_STAT), ENOENT);
	}
	x_file(P("c2/s/g"), 5);
	x_chdir(P("c2"));
	dcache_cwd_changed();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME_ST("s/f", Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 2);
		assert_int_equal(SAME_ST("s/g", Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 5);
	}
	x_chdir(g_start_cwd);
	dcache_cwd_changed();
}

static void test_dcache_index_directory_chmod_is_seen_below_it(void **state)
{
	const unsigned q = DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS;

	x_mkdir(P("d"));
	x_mkdir(P("d/e"));
	x_file(P("d/e/f"), 1);
	x_chmod(P("d/e/f"), 0755);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME_ACCESS(P("d/e/f"), q, X_OK), 0);
		assert_int_equal(SAME(P("d/e/f"), Q_STAT), 0);
	}
	/* Root bypasses search permission, so the answers stay 0 as root; what
	 * is checked is that they are still the kernel's after the change. */
	x_chmod(P("d/e"), 0600);
	inval_drain();
	assert_int_equal(SAME_ACCESS_OR_EACCES_PASSED(P("d/e/f"), q, X_OK), geteuid() == 0 ? 0 : EACCES);
	assert_int_equal(SAME_OR_EACCES_PASSED(P("d/e/f"), Q_STAT), geteuid() == 0 ? 0 : EACCES);
	x_chmod(P("d/e"), 0755);
}

/* Look `path` up (ENOENT, a name its complete directory's listing lacks)
 * until the path index answers it: the first plain walk fills a slot, the
 * next lookup is the index's and asks the kernel nothing.  An event of
 * another program (a name made in a watched ancestor) may rightly make the
 * entry stale: again then. */
static void absent_answered_by_index_(const char *path, const char *file, int line)
{
	for (int attempt = 0;; attempt++) {
		struct inval_stats e0, e1;
		struct stat st;
		unsigned long c0;
		uint64_t h0;

		inval_stats_get(&e0);
		_assert_int_equal(lookup(path, Q_STAT, &st), ENOENT, file, line);
		c0 = t_kernel_calls;
		h0 = index_hits();
		_assert_int_equal(lookup(path, Q_STAT, &st), ENOENT, file, line);
		inval_stats_get(&e1);
		if (e1.events != e0.events && attempt < 10)
			continue;
		calls_equal_(c0, 0, file, line);
		_assert_int_equal(index_hits() - h0, 1, file, line);
		return;
	}
}
#define absent_answered_by_index(path) absent_answered_by_index_((path), __FILE__, __LINE__)

/* A name a complete listing lacks is the index's (PIDX_ABSENT, its
 * directory's d_seq); another process creates it, and once its event is in,
 * the next lookup says it exists. */
static void test_dcache_index_absent_name_in_complete_dir_then_created_is_seen(void **state)
{
	struct stat st;
	int status;
	pid_t pid;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	absent_answered_by_index(P("d/n"));
	absent_answered_by_index(P("d/m/below")); /* ENOENT at a middle component */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Another process: raw calls, no note to this one's cache. */
		int fd = (int)syscall(SYS_openat, AT_FDCWD, P("d/n"),
				      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		_exit(fd >= 0 && syscall(SYS_write, fd, "xyz", 3) == 3 &&
			      syscall(SYS_mkdirat, AT_FDCWD, P("d/m"), 0755) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	x_file(P("d/m/below"), 2); /* in a directory the cache never saw */
	inval_drain();
	assert_int_equal(SAME_ST(P("d/n"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(SAME(P("d/n/"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME_ST(P("d/m/below"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
}

/* The same through this process's own creation: as the shim's mutator
 * wrappers do, the helpers make the real call and note the change, and the
 * next lookup applies the queued event first (no inval_drain() here). */
static void test_dcache_index_absent_name_created_by_this_process_is_seen(void **state)
{
	struct stat st;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	absent_answered_by_index(P("d/n"));
	absent_answered_by_index(P("d/sub/f"));
	x_file(P("d/n"), 4);
	assert_int_equal(SAME_ST(P("d/n"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 4);
	x_mkdir(P("d/sub"));
	x_file(P("d/sub/f"), 5);
	assert_int_equal(SAME_ST(P("d/sub/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 5);
	/* Complete again: absent names are the index's again. */
	complete_dir("d");
	absent_answered_by_index(P("d/n2"));
}

/* A directory that stops being complete (a name came: its listing is
 * incomplete) stops answering its absent names from the index: the kernel is
 * asked again. */
static void test_dcache_index_absent_name_of_directory_made_incomplete_asks_kernel(void **state)
{
	struct stat st;
	unsigned long c0;
	uint64_t h0;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	absent_answered_by_index(P("d/n"));
	x_file(P("d/other"), 1);
	inval_drain();
	c0 = t_kernel_calls;
	h0 = index_hits();
	assert_int_equal(lookup(P("d/n"), Q_STAT, &st), ENOENT);
	assert_true(calls_since(c0) >= 1);
	assert_int_equal(index_hits() - h0, 0);
	assert_int_equal(SAME(P("d/n"), Q_STAT), ENOENT);
}

/* More names than the index had slots (4,096, direct-mapped: they evicted
 * each other), all absent from complete listings as most names a compiler's
 * header search asks for are: the second pass is the index's.  Sets of 8
 * slots place 6,000 names with almost never one left out (a set of 4,096
 * holding more than 8 of them: ~0.1 name per run); 1% may be. */
static void test_dcache_index_many_distinct_names_are_answered_on_second_pass(void **state)
{
	enum { DIRS = 3, NAMES = 2000, ALL = DIRS * NAMES };
	struct stat st;

	for (int d = 0; d < DIRS; d++) {
		char rel[16];

		snprintf(rel, sizeof(rel), "d%d", d);
		x_mkdir(P("%s", rel));
		x_file(P("%s/present", rel), 1);
		complete_dir(rel);
	}
	for (int attempt = 0;; attempt++) {
		struct inval_stats e0, e1;
		uint64_t hits[2];
		unsigned long c0 = 0;

		inval_stats_get(&e0);
		for (int pass = 0; pass < 2; pass++) {
			uint64_t h0 = index_hits();

			c0 = t_kernel_calls;
			for (int i = 0; i < NAMES; i++)
				for (int d = 0; d < DIRS; d++)
					assert_int_equal(lookup(P("d%d/n%05d.h", d, i), Q_STAT, &st),
							 ENOENT);
			hits[pass] = index_hits() - h0;
		}
		inval_stats_get(&e1);
		if (e1.events != e0.events && attempt < 10) {
			print_message("%lu events (other programs'): again\n", e1.events - e0.events);
			continue;
		}
		calls_equal(c0, 0);
		print_message("index answers: pass 1 %lu, pass 2 %lu of %d\n", (unsigned long)hits[0],
			      (unsigned long)hits[1], ALL);
		assert_true(hits[1] >= ALL - ALL / 100);
		break;
	}
}

static uint64_t prefix_hits(void)
{
	struct dcache_stats st;

	dcache_stats_sum(&st);
	return st.prefix_hits;
}

/* A name the index lacks, in a directory whose prefix it has: the walk
 * starts at that directory (dcache_walk.c, "Prefix"), exactly. */
static void test_dcache_index_prefix_new_names_of_known_directory_start_there(void **state)
{
	struct stat st;
	uint64_t p0;

	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	x_mkdir(P("a/b/c"));
	x_file(P("a/b/c/f"), 1);
	x_file(P("a/b/c/g"), 2);
	assert_int_equal(SAME(P("a/b/c/f"), Q_STAT), 0); /* fills the prefix "a/b/c" */
	assert_int_equal(SAME(P("a/b/c/f"), Q_STAT), 0);
	p0 = prefix_hits();
	assert_int_equal(SAME_ST(P("a/b/c/g"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
	assert_int_equal(SAME(P("a/b/c/none"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("a/b/c/g/"), Q_STAT), ENOTDIR); /* walked whole */
	assert_int_equal(SAME(P("a/b/c/.."), Q_STAT), 0);     /* walked whole */
	assert_true(prefix_hits() - p0 >= 2);
}

/* The prefix's tree replaced by another: a name new to both (never indexed)
 * resolves in the new tree, not from the old directory's entry. */
static void test_dcache_index_prefix_of_renamed_directory_leads_to_new_tree(void **state)
{
	struct stat st;

	x_mkdir(P("a"));
	x_mkdir(P("a/b"));
	x_file(P("a/b/f"), 1);
	x_mkdir(P("x"));
	x_mkdir(P("x/b"));
	x_file(P("x/b/f"), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(SAME(P("a/b/f"), Q_STAT), 0);
		assert_int_equal(SAME(P("a/b/h"), Q_STAT), ENOENT);
	}
	x_file(P("x/b/n"), 7);
	x_rename(P("a"), P("old"));
	x_rename(P("x"), P("a"));
	inval_drain();
	assert_int_equal(SAME_ST(P("a/b/n"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(SAME_ST(P("a/b/f"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
	assert_int_equal(SAME(P("old/b/n"), Q_STAT), ENOENT);
}

/* A prefix through a symlink: the walk that starts at its entry counts that
 * link toward the limit of 40, as the kernel does (41 links: ELOOP). */
static void test_dcache_index_prefix_through_symlink_counts_it_toward_eloop(void **state)
{
	struct stat st;
	uint64_t p0;

	x_mkdir(P("d"));
	x_file(P("d/y40"), 3);
	for (int i = 0; i < 40; i++) {
		char t[16];

		snprintf(t, sizeof(t), "y%d", i + 1);
		x_symlink(t, P("d/y%d", i));
	}
	x_symlink("d", P("s"));
	assert_int_equal(SAME(P("d/y0"), Q_STAT), 0); /* 40 links; d's names learnt */
	for (int i = 1; i < 6; i++) {
		/* 1 + (40 - i) links; the first fills the prefix "s" */
		assert_int_equal(SAME_ST(P("s/y%d", i), Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 3);
	}
	p0 = prefix_hits();
	assert_int_equal(SAME(P("s/y0"), Q_STAT), ELOOP); /* 41 */
	assert_true(prefix_hits() - p0 >= 1);             /* begun at "s" */
}

/* Absent prefixes (dcache_walk.c): "d/m/x" found "m" absent from d's complete
 * listing, so "d/m/y", never walked, is ENOENT from the prefix entry "d/m",
 * without the kernel; another process then makes d/m and d/m/y, and once its
 * events are in, both are seen. */
static void test_dcache_index_absent_prefix_answers_names_below_it_until_made(void **state)
{
	struct stat st;
	unsigned long c0;
	uint64_t p0;
	int status;
	pid_t pid;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	assert_int_equal(SAME(P("d/m/x"), Q_STAT), ENOENT); /* fills the prefix "d/m" */
	c0 = t_kernel_calls;
	p0 = prefix_hits();
	assert_int_equal(lookup(P("d/m/y"), Q_STAT, &st), ENOENT);
	assert_int_equal(lookup(P("d/m/z"), Q_OPEN, &st), ENOENT);
	calls_equal(c0, 0);
	assert_int_equal(prefix_hits() - p0, 2);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd;

		if (syscall(SYS_mkdirat, AT_FDCWD, P("d/m"), 0755) != 0)
			_exit(1);
		fd = (int)syscall(SYS_openat, AT_FDCWD, P("d/m/y"),
				  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		_exit(fd >= 0 && syscall(SYS_write, fd, "xyz", 3) == 3 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	inval_drain();
	assert_int_equal(SAME_ST(P("d/m/y"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(SAME(P("d/m/x"), Q_STAT), ENOENT);
}

/* The absent component made a file by another process: a name below it is
 * ENOTDIR, not the entry's ENOENT. */
static void test_dcache_index_absent_prefix_made_a_file_is_enotdir_below(void **state)
{
	int status;
	pid_t pid;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	assert_int_equal(SAME(P("d/m/x"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/m/y"), Q_STAT), ENOENT);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = (int)syscall(SYS_openat, AT_FDCWD, P("d/m"),
				      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

		_exit(fd >= 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	inval_drain();
	assert_int_equal(SAME(P("d/m/y"), Q_STAT), ENOTDIR);
	assert_int_equal(SAME(P("d/m/x"), Q_LSTAT), ENOTDIR);
}

/* A directory not listed: the absent component is a negative dentry, which
 * the prefix entry names; through a symlink, retargeted by this process to
 * a directory that has it, the names below are found. */
static void test_dcache_index_absent_prefix_of_negative_dentry_through_retargeted_symlink(void **state)
{
	struct stat st;
	unsigned long c0;
	uint64_t p0;

	x_mkdir(P("d1"));
	x_mkdir(P("d2"));
	x_mkdir(P("d2/m"));
	x_file(P("d2/m/x"), 4);
	x_symlink("d1", P("s"));
	assert_int_equal(SAME(P("s/m/x"), Q_STAT), ENOENT); /* the kernel: m negative */
	assert_int_equal(SAME(P("s/m/y"), Q_STAT), ENOENT); /* walked: fills "s/m" */
	c0 = t_kernel_calls;
	p0 = prefix_hits();
	assert_int_equal(lookup(P("s/m/z"), Q_STAT, &st), ENOENT);
	calls_equal(c0, 0);
	assert_int_equal(prefix_hits() - p0, 1);
	x_unlink(P("s"));
	x_symlink("d2", P("s"));
	assert_int_equal(SAME_ST(P("s/m/x"), Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(SAME(P("s/m/z"), Q_STAT), ENOENT);
}

/* One change, made by a child with raw calls (another process: nothing noted
 * here), then its events applied: 0 mkdir, 1 create a file, 2 unlink,
 * 3 rmdir.  The kernel's refusals (EEXIST, ENOTEMPTY...) are changes too. */
static void foreign_change(int op, const char *p)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		long fd;

		if (op == 0)
			syscall(SYS_mkdirat, AT_FDCWD, p, 0755);
		else if (op == 1 && (fd = syscall(SYS_openat, AT_FDCWD, p,
						  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) >= 0)
			syscall(SYS_close, fd);
		else if (op == 2)
			syscall(SYS_unlinkat, AT_FDCWD, p, 0);
		else if (op == 3)
			syscall(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	inval_drain();
}

/* Absent prefixes under random changes: d/p0..d/p3 made and removed, made
 * files, their children made and removed, by this process (noted, as the
 * shim's wrappers do) or by another, between lookups of names below them,
 * each compared with the kernel (SAME); the absent prefixes answer many. */
static void absent_prefixes_under_random_changes(void)
{
	uint64_t x = 88172645463325252ULL, p0;

	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	complete_dir("d");
	p0 = prefix_hits();
	for (int i = 0; i < 4000; i++) {
		unsigned r, k, c;
		const char *dir, *kid;
		struct stat st;
		bool isdir, exists;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (unsigned)(x % 100);
		k = (unsigned)(x >> 8) % 4;
		c = (unsigned)(x >> 16) % 3;
		dir = P("d/p%u", k);
		kid = P("d/p%u/%c", k, "xyz"[c]);
		exists = syscall(SYS_newfstatat, AT_FDCWD, dir, &st, AT_SYMLINK_NOFOLLOW) == 0;
		isdir = exists && S_ISDIR(st.st_mode);
		if (r < 6) {
			/* the directory (or file) appears or goes, emptied first */
			bool mine = (x >> 24) & 1;

			if (isdir) {
				for (int j = 0; j < 3; j++)
					syscall(SYS_unlinkat, AT_FDCWD, P("d/p%u/%c", k, "xyz"[j]), 0);
				inval_note_change();
			}
			if (mine) {
				if (isdir)
					x_rmdir(dir);
				else if (exists)
					x_unlink(dir);
				else if ((x >> 25) & 1)
					x_mkdir(dir);
				else
					x_file(dir, 1);
			} else {
				foreign_change(isdir ? 3 : exists ? 2 : ((x >> 25) & 1) ? 0 : 1, dir);
			}
			/* at once: an entry the change made stale would answer now */
			(void)same_(kid, Q_STAT, 0, 2, NULL, __FILE__, __LINE__);
		} else if (r < 10 && isdir) {
			foreign_change(((x >> 24) & 1) ? 1 : 2, kid);
			(void)same_(kid, Q_STAT, 0, 2, NULL, __FILE__, __LINE__);
		} else if (r < 14) {
			/* fresh absent names: the policy lists d again after a change */
			for (int j = 0; j < 4; j++)
				assert_int_equal(SAME(P("d/q%d-%u", i, j), Q_STAT), ENOENT);
		} else {
			/* the kernel's answer, or a pass (an open of a name that
			 * exists needs the kernel's fd) */
			(void)same_(kid, (x >> 30) & 1 ? Q_OPEN : Q_STAT, 0, 2, NULL, __FILE__,
				    __LINE__);
		}
	}
	print_message("absent prefixes under random changes: %llu prefix answers\n",
		      (unsigned long long)(prefix_hits() - p0));
	assert_true(prefix_hits() - p0 >= 100);
}

static void test_dcache_index_absent_prefixes_under_random_changes_stay_exact(void **state)
{
	(void)state;
	absent_prefixes_under_random_changes();
}

/* Without name entries, a complete directory's absent names are answered
 * before the walk (walk_absent_fast); its present names, and names made or
 * removed since by another process, get the kernel's answer, in the
 * directory and below a name made there; open as stat. */
static void test_dcache_absent_fast_path_answers_only_absent_names(void **state)
{
	uint64_t p0;

	(void)state;
	x_mkdir(P("d"));
	x_file(P("d/a"), 1);
	x_file(P("d/b"), 2);
	complete_dir("d");
	dcache_set_index_names(0);
	assert_int_equal(SAME(P("d/zz"), Q_STAT), ENOENT); /* fills d's prefix entry */
	p0 = prefix_hits();
	for (int i = 0; i < 3; i++) {
		assert_int_equal(SAME(P("d/zz"), Q_STAT), ENOENT);
		assert_int_equal(SAME(P("d/zz"), Q_OPEN), ENOENT);
		assert_int_equal(SAME(P("d/a"), Q_STAT), 0);
		assert_int_equal(SAME(P("d/b"), Q_LSTAT), 0);
	}
	assert_true(prefix_hits() - p0 >= 6);
	foreign_change(1, P("d/zz"));
	assert_int_equal(SAME(P("d/zz"), Q_STAT), 0);
	foreign_change(2, P("d/a"));
	assert_int_equal(SAME(P("d/a"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/a"), Q_OPEN), ENOENT);
	foreign_change(0, P("d/sub"));
	assert_int_equal(SAME(P("d/sub/x"), Q_STAT), ENOENT);
	assert_int_equal(SAME(P("d/sub/x"), Q_STAT), ENOENT);
	foreign_change(1, P("d/sub/x"));
	assert_int_equal(SAME(P("d/sub/x"), Q_STAT), 0);
	foreign_change(2, P("d/sub/x"));
	foreign_change(3, P("d/sub"));
	assert_int_equal(SAME(P("d/sub/x"), Q_STAT), ENOENT);
	dcache_set_index_names(1);
}

/* The same without name entries (the shim's default): then most of these
 * absent answers come from the fast path before the walk
 * (dcache_walk.c, walk_absent_fast), which must see every change the walk
 * sees: a directory or file appearing under an absent prefix, a name
 * created in a complete directory, by this process or another. */
static void test_dcache_absent_fast_path_under_random_changes_stays_exact(void **state)
{
	(void)state;
	dcache_set_index_names(0);
	absent_prefixes_under_random_changes();
	dcache_set_index_names(1);
}

/* The default policy: a name gets its own entry at its second walk (a name
 * asked once, as a compiler asks its headers, never costs a slot). */
static void test_dcache_index_name_gets_entry_at_its_second_walk(void **state)
{
	uint64_t h[4];

	x_mkdir(P("d"));
	x_file(P("d/f"), 1);
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	assert_int_equal(SAME(P("d/f"), Q_STAT), 0);
	dcache_set_index(1); /* the default's rule, from the first answer */
	for (int i = 0; i < 4; i++) {
		h[i] = index_hits();
		assert_int_equal(SAME(P("d/other"), Q_STAT), ENOENT);
	}
	dcache_set_index(0);
	/* walk 1 notes the name, walk 2 fills its entry, walks 3-4 hit it */
	assert_int_equal(h[1] - h[0], 0);
	assert_int_equal(h[2] - h[1], 0);
	assert_int_equal(h[3] - h[2], 1);
}

/* The shim's default (dcache_set_index_names(0)): no name gets an entry of
 * its own, however often it is walked; a walk starts from its directory
 * prefix's entry instead, and answers as the kernel does, present, absent
 * and below an absent name. */
static void test_dcache_index_without_name_entries_walks_from_prefix_exactly(void **state)
{
	struct stat st;
	uint64_t h0, p0;

	(void)state;
	x_mkdir(P("d"));
	x_mkdir(P("d/e"));
	x_file(P("d/e/f"), 3);
	assert_int_equal(SAME(P("d/e/f"), Q_STAT), 0);
	dcache_set_index_names(0);
	h0 = index_hits();
	p0 = prefix_hits();
	for (int i = 0; i < 4; i++) {
		assert_int_equal(SAME_ST(P("d/e/f"), Q_STAT, &st), 0);
		assert_int_equal(st.st_size, 3);
		assert_int_equal(SAME(P("d/e/none"), Q_STAT), ENOENT);
		assert_int_equal(SAME(P("d/e/f/x"), Q_STAT), ENOTDIR);
	}
	dcache_set_index_names(1);
	assert_int_equal(index_hits() - h0, 0);
	assert_true(prefix_hits() - p0 >= 6); /* rounds 2-4 of d/e/f and d/e/none at least */
}

/* ------------------------------------------------------------------------ */
/* The working directory                                                    */

static void test_dcache_cwd_relative_lookup_follows_chdir(void **state)
{
	struct stat st;

	x_mkdir(P("c1"));
	x_mkdir(P("c2"));
	x_file(P("c1/f"), 1);
	x_file(P("c2/f"), 2);
	x_chdir(P("c1"));
	dcache_cwd_changed();
	assert_int_equal(SAME_ST("f", Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(SAME("only2", Q_STAT), ENOENT);
	x_chdir(P("c2"));
	dcache_cwd_changed();
	assert_int_equal(SAME_ST("f", Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 2);
	assert_int_equal(SAME_ST("../c1/f", Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 1);
	assert_int_equal(SAME_ST(".", Q_LSTAT, &st), 0);
	x_chdir(g_start_cwd);
	dcache_cwd_changed();
}

static void test_dcache_cwd_relative_lookup_survives_rename_of_cwd(void **state)
{
	struct stat st;

	x_mkdir(P("old"));
	x_file(P("old/f"), 7);
	x_chdir(P("old"));
	dcache_cwd_changed();
	assert_int_equal(SAME("f", Q_STAT), 0);
	x_rename(P("old"), P("new"));
	inval_drain();
	/* The process is still in the same directory, under its new name. */
	assert_int_equal(SAME_ST("f", Q_STAT, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(SAME("../old", Q_STAT), ENOENT);
	assert_int_equal(SAME("../new/f", Q_STAT), 0);
	x_chdir(g_start_cwd);
	dcache_cwd_changed();
}

static void test_dcache_cwd_lookup_asks_getcwd_once(void **state)
{
	unsigned long c0;

	x_file(P("f"), 1);
	x_chdir(g_dir);
	dcache_cwd_changed();
	assert_int_equal(SAME("f", Q_STAT), 0);
	c0 = t_kernel_calls;
	assert_int_equal(SAME("f", Q_STAT), 0);
	assert_int_equal(SAME("./f", Q_LSTAT), 0);
	calls_equal(c0, 0);
	x_chdir(g_start_cwd);
	dcache_cwd_changed();
}

static void test_dcache_cwd_removed_relative_lookup_is_never_wrong(void **state)
{
	static const char *const rels[] = { "f", ".", "..", "./x/y" };
	struct stat cs, ks;

	x_mkdir(P("gone"));
	x_file(P("gone/f"), 1);
	x_chdir(P("gone"));
	dcache_cwd_changed();
	assert_int_equal(SAME("f", Q_STAT), 0);
	x_unlink(P("gone/f"));
	x_rmdir(P("gone"));
	inval_drain();
	for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		int c = lookup(rels[i], Q_STAT, &cs);
		int k = kernel_query(rels[i], Q_STAT, 0, &ks);

		if (c != DCACHE_PASS && c != k)
			print_message("\"%s\" in a removed cwd: cache %d, kernel %d\n", rels[i], c, k);
		assert_true(c == DCACHE_PASS || c == k);
	}
	x_chdir(g_start_cwd);
	dcache_cwd_changed();
}

static void test_dcache_access_invalid_mode_passes_through(void **state)
{
	struct stat st;

	x_file(P("f"), 1);
	assert_int_equal(dcache_lookup(P("f"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, 8, &st),
			 DCACHE_PASS);
	assert_int_equal(kernel_query(P("f"), DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS, 8, &st), EINVAL);
}

/* ------------------------------------------------------------------------ */
/* Memory cap (runs last: it fills the cache up to the cap)                 */

static void test_dcache_memory_cap_evicts(void **state)
{
	const unsigned n = 50000;
	size_t peak = 0;
	struct stat st;

	x_mkdir(P("m"));
	for (unsigned i = 0; i < n; i++) {
		int r = lookup(P("m/n%05u", i), Q_STAT, &st);

		if (r != ENOENT)
			fail_msg("m/n%05u: %d", i, r);
		if (dcache_memory_bytes() > peak)
			peak = dcache_memory_bytes();
	}
	print_message("memory cap %zu: peak %zu bytes, now %zu bytes, %zu dentries\n", CAP_BYTES,
		      peak, dcache_memory_bytes(), dcache_count());
	assert_true(peak <= CAP_BYTES);
	assert_true(dcache_count() < n);
	assert_true(dcache_count() > 0);
	/* Answers stay exact: evicted names are asked again, and changes to
	 * names cached or not are seen. */
	for (unsigned i = 0; i < n; i += 997)
		assert_int_equal(SAME(P("m/n%05u", i), Q_STAT), ENOENT);
	x_file(P("m/n00007"), 7);
	x_file(P("m/n%05u", n - 1), 8);
	inval_drain();
	assert_int_equal(SAME(P("m/n00007"), Q_STAT), 0);
	assert_int_equal(SAME(P("m/n%05u", n - 1), Q_STAT), 0);
	assert_true(dcache_memory_bytes() <= CAP_BYTES);
	dcache_invalidate_all();
}

#define T(f) cmocka_unit_test_setup(f, test_setup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dcache_walk_trailing_slash_on_file_is_enotdir),
		T(test_dcache_walk_trailing_slash_on_symlink_to_dir_follows),
		T(test_dcache_walk_missing_middle_component_is_enoent),
		T(test_dcache_walk_file_in_middle_is_enotdir),
		T(test_dcache_walk_dot_and_double_slash_equal_kernel),
		T(test_dcache_walk_dotdot_after_symlink_uses_target_parent),
		T(test_dcache_walk_dotdot_at_root_stays_at_root),
		T(test_dcache_walk_symlink_nofollow_reports_link_itself),
		T(test_dcache_walk_dangling_symlink_follow_is_enoent),
		T(test_dcache_walk_40_symlinks_resolve_41_are_eloop),
		T(test_dcache_walk_40_nested_symlink_frames_resolve_41_are_eloop),
		T(test_dcache_walk_symlink_loop_is_eloop),
		T(test_dcache_walk_component_over_name_max_passes_through),
		T(test_dcache_walk_path_max_is_enametoolong),
		T(test_dcache_walk_empty_path_is_enoent),
		T(test_dcache_walk_directory_flag_on_file_is_enotdir),
		T(test_dcache_negonly_success_passes_through),
		T(test_dcache_access_x_on_plain_file_is_eacces),
		T(test_dcache_second_lookup_asks_kernel_nothing),
		T(test_dcache_first_lookup_asks_kernel),
		T(test_dcache_stat_miss_of_final_object_asks_kernel_once),
		T(test_dcache_negative_dentry_answers_paths_below_without_kernel),
		T(test_dcache_stats_count_hits_misses_and_negative_hits),
		T(test_dcache_stats_sum_counts_every_thread_past_the_blocks),
		T(test_dcache_dir_rent_first_lookups_pass_through_then_it_is_watched),
		T(test_dcache_dir_rent_doubles_while_buying_earns_nothing_then_comes_back),
		T(test_dcache_idle_spell_passes_through_before_the_walk_and_doubles),
		T(test_dcache_event_child_entry_kills_negative),
		T(test_dcache_write_event_again_in_one_batch_asks_once),
		T(test_dcache_mkdir_replaces_negative_and_children_resolve),
		T(test_dcache_unlink_event_makes_file_enoent),
		T(test_dcache_rename_directory_kills_subtree),
		T(test_dcache_rename_directory_into_other_directory_kills_subtree),
		T(test_dcache_rename_file_over_existing_updates_inode),
		T(test_dcache_exchange_directories_swaps_children),
		T(test_dcache_rmdir_and_recreate_directory_is_exact),
		T(test_dcache_symlink_replaced_is_followed_to_new_target),
		T(test_dcache_chmod_event_drops_attributes),
		T(test_dcache_chmod_event_drops_access_answers),
		T(test_dcache_chmod_directory_kills_its_children),
		T(test_dcache_write_event_drops_size),
		T(test_dcache_truncate_event_drops_size),
		T(test_dcache_utimes_event_drops_mtime),
		T(test_dcache_hard_linked_file_attributes_pass_through),
		T(test_dcache_create_in_directory_drops_directory_attributes),
		T(test_dcache_hard_link_in_same_directory_drops_sibling_attributes),
		T(test_dcache_forget_inode_drops_cached_attributes),
		T(test_dcache_scratch_dir_is_watched_for_names_only),
		T(test_dcache_scratch_watch_never_narrows_a_full_one),
		T(test_dcache_scratch_dir_files_keep_no_attributes),
		T(test_dcache_scratch_subdir_attributes_follow_its_own_watch),
		T(test_dcache_scratch_dir_in_scratch_dir_keeps_no_attributes),
		T(test_dcache_racy_fresh_file_attributes_are_answered_not_kept),
		T(test_dcache_no_negative_asks_kernel_for_every_absent_name),
		T(test_dcache_excluded_directory_passes_through),
		T(test_dcache_complete_directory_hashes_listed_names_at_first_lookup),
		T(test_dcache_open_of_a_listed_name_passes_without_hashing_it),
		T(test_dcache_complete_directory_answers_unseen_absent_name_without_kernel),
		T(test_dcache_complete_directory_placeholders_resolve_links_and_dirs),
		T(test_dcache_complete_directory_sees_create_unlink_and_renames),
		T(test_dcache_listing_fetched_during_creation_is_not_kept),
		T(test_dcache_directory_over_entry_limit_is_not_completed),
		T(test_dcache_chmod_of_complete_directory_rechecks_search_permission),
		T(test_dcache_typed_listing_answers_type_questions_without_kernel),
		T(test_dcache_typed_listing_asks_kernel_about_untyped_name),
		T(test_dcache_listed_hard_linked_file_access_is_not_kept),
		T(test_dcache_directory_attributes_kept_across_writes_to_its_files),
		T(test_dcache_directory_attributes_fetched_during_create_are_not_kept),
		T(test_dcache_file_attributes_fetched_during_escalation_are_not_kept),
		T(test_dcache_directory_attributes_fetched_during_escalation_are_kept),
		T(test_dcache_directory_listed_after_many_present_names),
		T(test_dcache_link_into_watched_directory_drops_source_attributes),
		T(test_dcache_index_repeated_long_name_resolves_in_one_step),
		T(test_dcache_index_renamed_middle_directory_resolves_to_new_tree),
		T(test_dcache_index_retargeted_middle_symlink_is_followed_to_new_directory),
		T(test_dcache_index_stat_and_lstat_of_one_name_are_kept_apart),
		T(test_dcache_index_same_relative_name_under_new_cwd_is_the_new_dirs),
		T(test_dcache_index_directory_chmod_is_seen_below_it),
		T(test_dcache_index_absent_name_in_complete_dir_then_created_is_seen),
		T(test_dcache_index_absent_name_created_by_this_process_is_seen),
		T(test_dcache_index_absent_name_of_directory_made_incomplete_asks_kernel),
		T(test_dcache_index_many_distinct_names_are_answered_on_second_pass),
		T(test_dcache_index_prefix_new_names_of_known_directory_start_there),
		T(test_dcache_index_prefix_of_renamed_directory_leads_to_new_tree),
		T(test_dcache_index_prefix_through_symlink_counts_it_toward_eloop),
		T(test_dcache_index_absent_prefix_answers_names_below_it_until_made),
		T(test_dcache_index_absent_prefix_made_a_file_is_enotdir_below),
		T(test_dcache_index_absent_prefix_of_negative_dentry_through_retargeted_symlink),
		T(test_dcache_index_absent_prefixes_under_random_changes_stay_exact),
		T(test_dcache_absent_fast_path_under_random_changes_stays_exact),
		T(test_dcache_absent_fast_path_answers_only_absent_names),
		T(test_dcache_index_name_gets_entry_at_its_second_walk),
		T(test_dcache_index_without_name_entries_walks_from_prefix_exactly),
		T(test_dcache_cwd_relative_lookup_follows_chdir),
		T(test_dcache_cwd_relative_lookup_survives_rename_of_cwd),
		T(test_dcache_cwd_lookup_asks_getcwd_once),
		T(test_dcache_cwd_removed_relative_lookup_is_never_wrong),
		T(test_dcache_access_invalid_mode_passes_through),
		T(test_dcache_negative_fetched_during_creation_is_not_kept),
		T(test_dcache_file_attributes_fetched_during_chmod_are_not_kept),
		T(test_dcache_directory_attributes_fetched_during_entry_creation_are_not_kept),
		T(test_dcache_invalidate_all_forgets_everything),
		T(test_dcache_memory_cap_evicts),
	};

	return cmocka_run_group_tests_name("dcache", tests, group_setup, group_teardown);
}
