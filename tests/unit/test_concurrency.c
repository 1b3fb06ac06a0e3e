/* SPDX-License-Identifier: MIT */
/*
 * test_concurrency.c - readers racing a writer through cache/ + invalidate/.
 *
 * Four reader threads call dcache_lookup() on absolute paths of a scratch
 * tree, hot (a few paths, asked again and again) and cold (1024 files and
 * random missing names in 32 directories, which also keep the small memory
 * cap of this binary evicting), while a writer thread changes the tree with
 * raw syscalls: it renames a directory back and forth, deletes and re-creates
 * a file, exchanges two directories and chmods a file.  The inotify reader
 * thread invalidates meanwhile, readers drain the queue now and then, and the
 * writer empties the whole cache every 2048 rounds (as a queue overflow does).
 *
 * The tree is built so that every path has at most two legal answers - what
 * the kernel answered before a change and what it answers after - and every
 * answer a reader gets must be one of them (or DCACHE_PASS: the caller would
 * ask the kernel).  Every 256 changes the writer pauses, drains the queue and
 * checks that every answer now equals the kernel's (a stale answer that
 * outlives its event is a bug, not latency).  No crash, no hang (alarm
 * guard).  Then, with the writer stopped, the same exactness once more.
 *
 * Duration: RCUWALK_STRESS_SECONDS (default 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "dcache.h"
#include "inval.h"
#include "raw_listdir.h"
#include "raw_ops.h"

#define READERS 4
#define CAP_BYTES ((size_t)512 << 10) /* small: the cold paths keep evicting */
#define COLD_DIRS 32
#define COLD_FILES 32
#define MAX_REPORTS 20

/* ------------------------------------------------------------------------ */
/* Raw-syscall ops                                                          */

static long op_listdir_typed(const char *path, const struct dcache_listing *shared, size_t max,
			     int (*add)(void *arg, const char *name, size_t len, unsigned char type),
			     void *arg)
{
	(void)shared; /* no listing_ticket op: always NULL */
	return raw_listdir_typed(path, max, add, arg);
}

static struct dcache_ops g_ops = {
	RAW_KERNEL_OPS,
	.kernel_listdir = raw_listdir, /* complete directories under stress too */
	.kernel_listdir_typed = op_listdir_typed, /* ... with typed entries */
	.fs_cacheable = raw_fs_local,
};

/* ------------------------------------------------------------------------ */
/* The tree                                                                 */

static char g_root[64];

/* Inodes recorded at setup: what a legal positive answer must name. */
static ino_t ino_hot, ino_stay, ino_f, ino_g, ino_dirA, ino_m, ino_p1, ino_p2;
static ino_t ino_dir_r, ino_dir_t, ino_dir_x;
static ino_t ino_cold[COLD_DIRS][COLD_FILES];

#define SIZE_HOT 4242
#define SIZE_STAY 7
#define SIZE_TOGGLE 123
#define SIZE_F 77
#define SIZE_G 55
#define SIZE_P1 1
#define SIZE_P2 2
#define SIZE_M 9

static void pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t size, const char *fmt, ...)
{
	int n = snprintf(buf, size, "%s/", g_root);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
}

static int mk_dir(const char *rel)
{
	char p[PATH_MAX];

	pathf(p, sizeof(p), "%s", rel);
	return syscall(SYS_mkdirat, AT_FDCWD, p, 0755) == 0 ? 0 : -1;
}

static int mk_file(const char *rel, size_t size, ino_t *ino)
{
	char p[PATH_MAX], buf[SIZE_HOT];
	struct stat st;
	int fd;

	pathf(p, sizeof(p), "%s", rel);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	memset(buf, 'c', sizeof(buf));
	if (size > sizeof(buf) || syscall(SYS_write, fd, buf, size) != (long)size) {
		syscall(SYS_close, fd);
		return -1;
	}
	syscall(SYS_close, fd);
	if (syscall(SYS_newfstatat, AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	if (ino)
		*ino = st.st_ino;
	return 0;
}

static int ino_of(const char *rel, ino_t *ino)
{
	char p[PATH_MAX];
	struct stat st;

	pathf(p, sizeof(p), "%s", rel);
	if (syscall(SYS_newfstatat, AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	*ino = st.st_ino;
	return 0;
}

static int build_tree(void)
{
	char p[PATH_MAX], t[PATH_MAX];
	int r = 0;

	r |= mk_dir("hot");
	r |= mk_file("hot/h", SIZE_HOT, &ino_hot);
	r |= mk_dir("t");
	r |= mk_file("t/stay", SIZE_STAY, &ino_stay);
	r |= mk_file("t/f", SIZE_TOGGLE, NULL);
	r |= mk_dir("r");
	r |= ino_of("r", &ino_dir_r);
	r |= ino_of("t", &ino_dir_t);
	r |= mk_dir("r/A");
	r |= ino_of("r/A", &ino_dirA);
	r |= mk_file("r/A/f", SIZE_F, &ino_f);
	r |= mk_dir("r/A/sub");
	r |= mk_file("r/A/sub/g", SIZE_G, &ino_g);
	pathf(p, sizeof(p), "lA");
	r |= (int)syscall(SYS_symlinkat, "r/A", AT_FDCWD, p);
	r |= mk_dir("x");
	r |= ino_of("x", &ino_dir_x);
	r |= mk_dir("x/P");
	r |= mk_dir("x/Q");
	r |= mk_file("x/P/f", SIZE_P1, &ino_p1);
	r |= mk_file("x/Q/f", SIZE_P2, &ino_p2);
	r |= mk_dir("c");
	r |= mk_file("c/m", SIZE_M, &ino_m);
	r |= mk_dir("cold");
	for (int i = 0; i < COLD_DIRS; i++) {
		snprintf(t, sizeof(t), "cold/d%02d", i);
		r |= mk_dir(t);
		for (int j = 0; j < COLD_FILES; j++) {
			snprintf(t, sizeof(t), "cold/d%02d/f%02d", i, j);
			r |= mk_file(t, (size_t)(i + j), &ino_cold[i][j]);
		}
	}
	return r;
}

/* ------------------------------------------------------------------------ */
/* Paths and their legal answers                                            */

#define Q_STAT (DCACHE_Q_FOLLOW | DCACHE_Q_STAT)
#define Q_LSTAT DCACHE_Q_STAT
#define Q_OPEN (DCACHE_Q_FOLLOW | DCACHE_Q_NEGONLY)
#define Q_XOK (DCACHE_Q_FOLLOW | DCACHE_Q_ACCESS)

enum answer { ANS_OK, ANS_ENOENT, ANS_ENOTDIR, ANS_EACCES, ANS_PASS, ANS_OTHER, ANS_N };
static const char *const answer_names[ANS_N] = { "ok", "ENOENT", "ENOTDIR", "EACCES", "PASS",
						  "other" };

static enum answer answer_of(int r)
{
	switch (r) {
	case 0: return ANS_OK;
	case ENOENT: return ANS_ENOENT;
	case ENOTDIR: return ANS_ENOTDIR;
	case EACCES: return ANS_EACCES;
	case DCACHE_PASS: return ANS_PASS;
	default: return ANS_OTHER;
	}
}

static bool is_file(const struct stat *st, ino_t ino, off_t size)
{
	return S_ISREG(st->st_mode) && st->st_ino == ino && st->st_size == size;
}

/* Each checker: is (r, st) the kernel's answer before or after a change? */
static bool ok_hot(int r, const struct stat *st) { return r == 0 && is_file(st, ino_hot, SIZE_HOT); }
static bool ok_stay(int r, const struct stat *st) { return r == 0 && is_file(st, ino_stay, SIZE_STAY); }
/* The toggled file: missing, or complete.  st_nlink may be 0: lstat(2) that
 * resolved the name just before a concurrent unlink returns the unlinked
 * inode's attributes (the kernel's own answer at that instant; the cache
 * keeps it until the IN_DELETE that follows is applied). */
static bool ok_toggle(int r, const struct stat *st)
{
	return r == ENOENT || (r == 0 && S_ISREG(st->st_mode) && st->st_size == SIZE_TOGGLE &&
			       (st->st_mode & 07777) == 0644 && st->st_nlink <= 1);
}
static bool ok_toggle_open(int r, const struct stat *st) { return r == ENOENT; } /* or PASS */
static bool ok_toggle_below(int r, const struct stat *st) { return r == ENOENT || r == ENOTDIR; }
static bool ok_f(int r, const struct stat *st) { return r == ENOENT || (r == 0 && is_file(st, ino_f, SIZE_F)); }
static bool ok_g(int r, const struct stat *st) { return r == ENOENT || (r == 0 && is_file(st, ino_g, SIZE_G)); }
static bool ok_never(int r, const struct stat *st) { return r == ENOENT; }
static bool ok_dirA(int r, const struct stat *st)
{
	return r == ENOENT || (r == 0 && S_ISDIR(st->st_mode) && st->st_ino == ino_dirA);
}
static bool ok_pq(int r, const struct stat *st)
{
	return r == 0 && (is_file(st, ino_p1, SIZE_P1) || is_file(st, ino_p2, SIZE_P2));
}
static bool ok_pq_slash(int r, const struct stat *st) { return r == ENOTDIR; }
static bool ok_m(int r, const struct stat *st)
{
	return r == 0 && is_file(st, ino_m, SIZE_M) &&
	       ((st->st_mode & 07777) == 0644 || (st->st_mode & 07777) == 0755);
}
static bool ok_m_xok(int r, const struct stat *st) { return r == 0 || r == EACCES; }
/* Directories whose entries change: their own mtime/nlink move all the time. */
static bool ok_dir_r(int r, const struct stat *st) { return r == 0 && S_ISDIR(st->st_mode) && st->st_ino == ino_dir_r; }
static bool ok_dir_t(int r, const struct stat *st) { return r == 0 && S_ISDIR(st->st_mode) && st->st_ino == ino_dir_t; }
static bool ok_dir_x(int r, const struct stat *st) { return r == 0 && S_ISDIR(st->st_mode) && st->st_ino == ino_dir_x; }

struct hot_path {
	const char *rel;
	unsigned flags;
	int amode;
	bool (*ok)(int r, const struct stat *st);
	char abs[PATH_MAX];
};

static struct hot_path g_paths[] = {
	{ "hot/h", Q_STAT, 0, ok_hot, "" },
	{ "hot/./h", Q_LSTAT, 0, ok_hot, "" },
	{ "t/stay", Q_STAT, 0, ok_stay, "" },
	{ "t/f", Q_STAT, 0, ok_toggle, "" },
	{ "t/f", Q_OPEN, 0, ok_toggle_open, "" },
	{ "t/f/x", Q_STAT, 0, ok_toggle_below, "" },
	{ "r/A/f", Q_STAT, 0, ok_f, "" },
	{ "r/B/f", Q_STAT, 0, ok_f, "" },
	{ "r/A/sub/g", Q_LSTAT, 0, ok_g, "" },
	{ "r/B/sub/g", Q_STAT, 0, ok_g, "" },
	{ "r/B/sub/../f", Q_STAT, 0, ok_f, "" },
	{ "r/A/sub/../sub/g", Q_STAT, 0, ok_g, "" },
	{ "lA/f", Q_STAT, 0, ok_f, "" },
	{ "lA/sub/../f", Q_LSTAT, 0, ok_f, "" },
	{ "r/A/nothere", Q_STAT, 0, ok_never, "" },
	{ "r/B/nothere/deeper", Q_OPEN, 0, ok_never, "" },
	{ "r/A", Q_STAT, 0, ok_dirA, "" },
	{ "x/P/f", Q_STAT, 0, ok_pq, "" },
	{ "x/Q/f", Q_LSTAT, 0, ok_pq, "" },
	{ "x/P/../Q/f", Q_STAT, 0, ok_pq, "" },
	{ "x/P/f/", Q_STAT, 0, ok_pq_slash, "" },
	{ "c/m", Q_STAT, 0, ok_m, "" },
	{ "c/m", Q_XOK, X_OK, ok_m_xok, "" },
	{ "r", Q_STAT, 0, ok_dir_r, "" },
	{ "t/", Q_LSTAT, 0, ok_dir_t, "" },
	{ "x/.", Q_STAT, 0, ok_dir_x, "" },
};
#define NPATHS (sizeof(g_paths) / sizeof(g_paths[0]))

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */

static atomic_bool g_stop;
static atomic_ulong g_illegal, g_reports;
static atomic_ulong g_counts[ANS_N];
static atomic_ulong g_lookups, g_cold_lookups;
static atomic_ulong g_writer_ops[5];
static atomic_ulong g_stale, g_checkpoints;

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void report(const char *path, unsigned flags, int r, const struct stat *st)
{
	if (atomic_fetch_add(&g_reports, 1) >= MAX_REPORTS)
		return;
	fprintf(stderr,
		"ILLEGAL: %s flags %#x -> %d (%s) mode %o ino %lu size %lld nlink %lu\n", path,
		flags, r, r > 0 ? strerror(r) : r == 0 ? "ok" : "PASS",
		r == 0 ? (unsigned)st->st_mode : 0u, r == 0 ? (unsigned long)st->st_ino : 0ul,
		r == 0 ? (long long)st->st_size : 0ll, r == 0 ? (unsigned long)st->st_nlink : 0ul);
}

static void *reader_main(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)((uintptr_t)arg + 1);
	unsigned long counts[ANS_N] = { 0 }, n = 0, cold = 0, illegal = 0;
	char p[PATH_MAX];

	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		uint64_t x = xorshift(&seed);
		struct stat st;
		int r;
		bool ok;

		memset(&st, 0, sizeof(st));
		if (x % 8 == 0) {
			/* cold: a constant file, or a name that never exists */
			unsigned i = (unsigned)(x >> 8) % COLD_DIRS, j = (unsigned)(x >> 16) % COLD_FILES;

			if (x & 0x10) {
				pathf(p, sizeof(p), "cold/d%02u/f%02u", i, j);
				r = dcache_lookup(p, Q_STAT, 0, &st);
				ok = r == 0 && is_file(&st, ino_cold[i][j], (off_t)(i + j));
			} else {
				pathf(p, sizeof(p), "cold/d%02u/z%llu", i,
				      (unsigned long long)(x >> 24) % 1000000);
				r = dcache_lookup(p, Q_STAT, 0, &st);
				ok = r == ENOENT;
			}
			ok = ok || r == DCACHE_PASS;
			if (!ok)
				report(p, Q_STAT, r, &st);
			cold++;
		} else {
			struct hot_path *hp = &g_paths[(x >> 8) % NPATHS];

			r = dcache_lookup(hp->abs, hp->flags, hp->amode, &st);
			ok = r == DCACHE_PASS || hp->ok(r, &st);
			if (!ok)
				report(hp->abs, hp->flags, r, &st);
		}
		counts[answer_of(r)]++;
		if (!ok)
			illegal++;
		if (++n % 256 == 0)
			inval_drain();
	}
	for (int k = 0; k < ANS_N; k++)
		atomic_fetch_add(&g_counts[k], counts[k]);
	atomic_fetch_add(&g_lookups, n);
	atomic_fetch_add(&g_cold_lookups, cold);
	atomic_fetch_add(&g_illegal, illegal);
	return NULL;
}

/* Every path, asked of the cache and of the kernel: the number of answers
 * that differ (DCACHE_PASS is no answer).  Only meaningful while nothing
 * changes and after inval_drain(). */
static unsigned long compare_all_with_kernel(unsigned long *answered)
{
	unsigned long mismatches = 0;

	for (size_t i = 0; i < NPATHS; i++) {
		struct hot_path *hp = &g_paths[i];
		struct stat cs, ks;
		int c, k, fl = (hp->flags & DCACHE_Q_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW;

		memset(&cs, 0, sizeof(cs));
		memset(&ks, 0, sizeof(ks));
		c = dcache_lookup(hp->abs, hp->flags, hp->amode, &cs);
		if (hp->flags & DCACHE_Q_ACCESS)
			k = syscall(SYS_faccessat2, AT_FDCWD, hp->abs, hp->amode, fl) ? errno : 0;
		else
			k = syscall(SYS_newfstatat, AT_FDCWD, hp->abs, &ks, fl) ? errno : 0;
		if (c == DCACHE_PASS)
			continue;
		(*answered)++;
		if (c == 0 && k == 0 && (hp->flags & DCACHE_Q_NEGONLY))
			continue;
		if (c != k || (c == 0 && (hp->flags & DCACHE_Q_STAT) &&
			       (cs.st_ino != ks.st_ino || cs.st_size != ks.st_size ||
				cs.st_mode != ks.st_mode || cs.st_nlink != ks.st_nlink ||
				cs.st_mtim.tv_sec != ks.st_mtim.tv_sec ||
				cs.st_mtim.tv_nsec != ks.st_mtim.tv_nsec ||
				cs.st_ctim.tv_sec != ks.st_ctim.tv_sec ||
				cs.st_ctim.tv_nsec != ks.st_ctim.tv_nsec))) {
			if (atomic_fetch_add(&g_reports, 1) < MAX_REPORTS)
				fprintf(stderr,
					"STALE after drain: %s flags %#x: cache %d ino %lu size %lld "
					"mode %o nlink %lu mtime %ld.%09ld, kernel %d ino %lu size %lld "
					"mode %o nlink %lu mtime %ld.%09ld\n",
					hp->abs, hp->flags, c, (unsigned long)cs.st_ino,
					(long long)cs.st_size, (unsigned)cs.st_mode,
					(unsigned long)cs.st_nlink, (long)cs.st_mtim.tv_sec,
					cs.st_mtim.tv_nsec, k, (unsigned long)ks.st_ino,
					(long long)ks.st_size, (unsigned)ks.st_mode,
					(unsigned long)ks.st_nlink, (long)ks.st_mtim.tv_sec,
					ks.st_mtim.tv_nsec);
			mismatches++;
		}
	}
	return mismatches;
}

static bool writer_failed;

static void *writer_main(void *arg)
{
	char a[PATH_MAX], b[PATH_MAX], stage[PATH_MAX], f[PATH_MAX], m[PATH_MAX];
	char rA[PATH_MAX], rB[PATH_MAX], xP[PATH_MAX], xQ[PATH_MAX];
	bool renamed = false, present = true, exec = false;
	char buf[SIZE_TOGGLE];
	unsigned long round = 0;

	memset(buf, 't', sizeof(buf));
	pathf(rA, sizeof(rA), "r/A");
	pathf(rB, sizeof(rB), "r/B");
	pathf(xP, sizeof(xP), "x/P");
	pathf(xQ, sizeof(xQ), "x/Q");
	pathf(stage, sizeof(stage), "t/stage");
	pathf(f, sizeof(f), "t/f");
	pathf(m, sizeof(m), "c/m");
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		long r = 0;

		switch (round % 4) {
		case 0: /* rename a directory back and forth */
			strcpy(a, renamed ? rB : rA);
			strcpy(b, renamed ? rA : rB);
			r = syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE);
			renamed = !renamed;
			break;
		case 1: /* delete, or re-create atomically (complete before it has the name) */
			if (present) {
				r = syscall(SYS_unlinkat, AT_FDCWD, f, 0);
			} else {
				int fd = (int)syscall(SYS_openat, AT_FDCWD, stage,
						      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

				r = fd < 0 || syscall(SYS_write, fd, buf, sizeof(buf)) != (long)sizeof(buf);
				if (fd >= 0)
					syscall(SYS_close, fd);
				if (r == 0)
					r = syscall(SYS_renameat2, AT_FDCWD, stage, AT_FDCWD, f,
						    RENAME_NOREPLACE);
			}
			present = !present;
			break;
		case 2: /* swap two directories */
			r = syscall(SYS_renameat2, AT_FDCWD, xP, AT_FDCWD, xQ, RENAME_EXCHANGE);
			break;
		case 3: /* chmod */
			exec = !exec;
			r = syscall(SYS_fchmodat, AT_FDCWD, m, exec ? 0755 : 0644);
			break;
		}
		if (r != 0) {
			fprintf(stderr, "writer: round %lu op %lu failed: %s\n", round, round % 4,
				strerror(errno));
			writer_failed = true;
			break;
		}
		atomic_fetch_add_explicit(&g_writer_ops[round % 4], 1, memory_order_relaxed);
		if (++round % 2048 == 0) {
			dcache_invalidate_all(); /* as after a queue overflow */
			atomic_fetch_add_explicit(&g_writer_ops[4], 1, memory_order_relaxed);
		}
		if (round % 256 == 0) {
			/* Checkpoint: nothing changes now; once the queue is
			 * drained, no answer may be stale (readers keep going). */
			unsigned long answered = 0;

			inval_drain();
			atomic_fetch_add(&g_stale, compare_all_with_kernel(&answered));
			atomic_fetch_add(&g_checkpoints, 1);
		}
	}
	return NULL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_concurrency: hung (alarm)\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(2);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                    */

static int group_setup(void **state)
{
	strcpy(g_root, "/tmp/rcuwalk-XXXXXX");
	if (!mkdtemp(g_root))
		return -1;
	umask(022);
	if (build_tree() != 0)
		return -1;
	for (size_t i = 0; i < NPATHS; i++)
		pathf(g_paths[i].abs, sizeof(g_paths[i].abs), "%s", g_paths[i].rel);
	inval_fill_ops(&g_ops);
	dcache_set_index(0); /* the path index from the first walk */
	return dcache_init(&g_ops, CAP_BYTES);
}

static int group_teardown(void **state)
{
	inval_shutdown();
	raw_rm_tree(g_root);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */

static void test_concurrency_readers_see_only_before_or_after_answers(void **state)
{
	const char *env = getenv("RCUWALK_STRESS_SECONDS");
	double seconds = env && *env ? atof(env) : 3.0;
	pthread_t readers[READERS], writer;
	struct timespec ts;
	struct dcache_stats ds;
	struct inval_stats is;
	unsigned long ops = 0;
	size_t peak_bytes = 0, peak_count = 0;

	if (seconds <= 0)
		seconds = 3.0;
	signal(SIGALRM, on_alarm);
	alarm((unsigned)seconds + 120);
	for (long i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&readers[i], NULL, reader_main, (void *)i), 0);
	assert_int_equal(pthread_create(&writer, NULL, writer_main, NULL), 0);
	/* Sample the cache's size while the threads run. */
	for (long ms = 0; ms < (long)(seconds * 1000); ms += 10) {
		ts.tv_sec = 0;
		ts.tv_nsec = 10 * 1000 * 1000;
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		if (dcache_memory_bytes() > peak_bytes)
			peak_bytes = dcache_memory_bytes();
		if (dcache_count() > peak_count)
			peak_count = dcache_count();
	}
	atomic_store(&g_stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(readers[i], NULL);
	pthread_join(writer, NULL);
	alarm(0);

	dcache_stats_sum(&ds);
	inval_stats_get(&is);
	for (int k = 0; k < 4; k++)
		ops += atomic_load(&g_writer_ops[k]);
	print_message("%.1f s: %lu lookups (%lu cold) by %d readers; writer: %lu changes "
		      "(renames %lu, delete/create %lu, exchanges %lu, chmods %lu), "
		      "%lu invalidate_all\n",
		      seconds, atomic_load(&g_lookups), atomic_load(&g_cold_lookups), READERS, ops,
		      atomic_load(&g_writer_ops[0]), atomic_load(&g_writer_ops[1]),
		      atomic_load(&g_writer_ops[2]), atomic_load(&g_writer_ops[3]),
		      atomic_load(&g_writer_ops[4]));
	print_message("answers:");
	for (int k = 0; k < ANS_N; k++)
		print_message(" %s=%lu", answer_names[k], atomic_load(&g_counts[k]));
	print_message(" illegal=%lu; %lu checkpoints, %lu stale answers after drain\n",
		      atomic_load(&g_illegal), atomic_load(&g_checkpoints), atomic_load(&g_stale));
	print_message("dcache: hits=%llu neg_hits=%llu misses=%llu passthrough=%llu "
		      "invalidations=%llu; peak %zu dentries, %zu bytes (cap %zu); inotify: %lu events, "
		      "%lu watches, %lu watch failures, %lu overflows\n",
		      (unsigned long long)ds.hits, (unsigned long long)ds.neg_hits,
		      (unsigned long long)ds.misses, (unsigned long long)ds.passthrough,
		      (unsigned long long)ds.invalidations, peak_count, peak_bytes,
		      CAP_BYTES, is.events, is.watches, is.watch_failures, is.overflows);

	assert_false(writer_failed);
	assert_true(atomic_load(&g_lookups) > 0);
	assert_true(ops > 0);
	/* Something was answered from the cache (not all DCACHE_PASS). */
	assert_true(atomic_load(&g_counts[ANS_OK]) + atomic_load(&g_counts[ANS_ENOENT]) > 0);
	assert_int_equal(atomic_load(&g_illegal), 0);
	assert_int_equal(atomic_load(&g_stale), 0);
	assert_int_equal(atomic_load(&g_counts[ANS_OTHER]), 0);
	/* The cap holds (attributes published after an insertion may top it
	 * up by a few blocks until the next insertion evicts). */
	assert_true(peak_bytes <= CAP_BYTES + 4096);
}

/* With nothing changing and the queue drained, the cache answers every path
 * exactly as the kernel does (whatever state the stress left). */
static void test_concurrency_answers_exact_once_queue_drained(void **state)
{
	unsigned long answered = 0;

	inval_drain();
	assert_int_equal(compare_all_with_kernel(&answered), 0);
	assert_int_equal(compare_all_with_kernel(&answered), 0); /* cached now */
	assert_true(answered > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrency_readers_see_only_before_or_after_answers),
		cmocka_unit_test(test_concurrency_answers_exact_once_queue_drained),
	};

	return cmocka_run_group_tests_name("concurrency", tests, group_setup, group_teardown);
}
