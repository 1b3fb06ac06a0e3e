/* SPDX-License-Identifier: MIT */
/*
 * test_names_race.c - dcache_realpath, dcache_readlink and dcache_statx
 * racing a writer, through cache/ + invalidate/ (no preloading).
 *
 * Three reader threads ask about a scratch tree while a writer replaces a
 * symlink (l -> A / l -> B, a new link renamed over the old one), renames a
 * directory back and forth (D <-> E) and chmods a file (s: 0644 <-> 0600).
 * Every answer a reader gets must be one the kernel gives before or after a
 * change, or DCACHE_PASS.  realpath is not atomic in glibc either: it
 * readlinks one component after the other, so with D renamed away between
 * readlink(D) and readlink(D/x) it fails with ENOENT at "D/x" (prefix in the
 * caller's buffer), not at "D"; that answer is legal too, and one reader runs
 * glibc's own realpath against the same rules to show they are glibc's.
 * Then, with the writer stopped and the event queue drained, every answer
 * must equal the kernel's (and glibc's realpath) exactly.
 *
 * Duration: RCUWALK_STRESS_SECONDS (default 2).
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
#include "raw_ops.h"

#define READERS 3
#define MAX_REPORTS 20
#define SX_MASK (STATX_BASIC_STATS | STATX_BTIME)

static struct dcache_ops g_ops = {
	RAW_KERNEL_OPS,
	.kernel_statx = raw_statx,
	.fs_cacheable = raw_fs_local,
};

static char g_root[64];
static ino_t ino_af, ino_bf, ino_s;

static void pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, size, "%s/", g_root);

	va_start(ap, fmt);
	vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
}

static int mk_file(const char *rel, size_t size, mode_t mode, ino_t *ino)
{
	char p[PATH_MAX], data[64];
	struct stat st;
	int fd;

	pathf(p, sizeof(p), "%s", rel);
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	memset(data, 'x', sizeof(data));
	if (write(fd, data, size) != (ssize_t)size || close(fd) != 0)
		return -1;
	if (syscall(SYS_newfstatat, AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	*ino = st.st_ino;
	return 0;
}

static int build_tree(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	ino_t dummy;

	pathf(p, sizeof(p), "A");
	if (mkdir(p, 0755) != 0)
		return -1;
	pathf(p, sizeof(p), "B");
	if (mkdir(p, 0755) != 0)
		return -1;
	pathf(p, sizeof(p), "D");
	if (mkdir(p, 0755) != 0)
		return -1;
	if (mk_file("A/f", 11, 0644, &ino_af) != 0 || mk_file("B/f", 22, 0644, &ino_bf) != 0 ||
	    mk_file("D/x", 3, 0644, &dummy) != 0 || mk_file("s", 5, 0644, &ino_s) != 0)
		return -1;
	pathf(q, sizeof(q), "l");
	return symlink("A", q);
}

/* ------------------------------------------------------------------------ */

static atomic_bool g_stop;
static atomic_ulong g_illegal, g_reports, g_answered, g_calls, g_writes;
static atomic_ulong g_glibc_calls, g_glibc_illegal, g_glibc_enoent_inner;

static void report(const char *what, const char *path, int r, const char *detail)
{
	if (atomic_fetch_add(&g_reports, 1) < MAX_REPORTS)
		fprintf(stderr, "ILLEGAL %s %s: r=%d %s\n", what, path, r, detail);
}

struct paths {
	char lf[PATH_MAX], lup[PATH_MAX], l[PATH_MAX], s[PATH_MAX], dx[PATH_MAX], ex[PATH_MAX];
	char af[PATH_MAX], bf[PATH_MAX], d[PATH_MAX], e[PATH_MAX];
};
static struct paths g_p;

/* realpath of `dir`/x while dir is renamed back and forth: success, ENOENT
 * at dir (absent), or ENOENT at dir/x (dir gone between two readlinks). */
static bool legal_dir_x(int r, const char *buf, const char *dir, const char *dirx)
{
	return (r == 0 && strcmp(buf, dirx) == 0) ||
	       (r == ENOENT && (strcmp(buf, dir) == 0 || strcmp(buf, dirx) == 0));
}

/* One round of every question; returns the number of illegal answers. */
static unsigned long ask_all(void)
{
	const struct paths *p = &g_p;
	char buf[PATH_MAX];
	struct statx sx;
	unsigned long bad = 0, answered = 0;
	size_t len = 0;
	int r, einval;

	/* realpath through the symlink: A/f or B/f */
	r = dcache_realpath(p->lf, buf, sizeof(buf), &einval);
	if (r != DCACHE_PASS) {
		answered++;
		if (r != 0 || (strcmp(buf, p->af) != 0 && strcmp(buf, p->bf) != 0) || !einval) {
			report("realpath", p->lf, r, buf);
			bad++;
		}
	}
	/* l/../D/x: ".." of the target (the root), then D/x, present or not */
	r = dcache_realpath(p->lup, buf, sizeof(buf), &einval);
	if (r != DCACHE_PASS) {
		answered++;
		if (!legal_dir_x(r, buf, p->d, p->dx)) {
			report("realpath", p->lup, r, buf);
			bad++;
		}
	}
	r = dcache_realpath(p->ex, buf, sizeof(buf), &einval);
	if (r != DCACHE_PASS) {
		answered++;
		if (!legal_dir_x(r, buf, p->e, p->ex)) {
			report("realpath", p->ex, r, buf);
			bad++;
		}
	}
	r = dcache_readlink(p->l, buf, sizeof(buf), &len);
	if (r != DCACHE_PASS) {
		answered++;
		if (r != 0 || len != 1 || (buf[0] != 'A' && buf[0] != 'B')) {
			report("readlink", p->l, r, "");
			bad++;
		}
	}
	memset(&sx, 0, sizeof(sx));
	r = dcache_statx(p->lf, 1, SX_MASK, &sx);
	if (r != DCACHE_PASS) {
		answered++;
		if (r != 0 || !((sx.stx_ino == ino_af && sx.stx_size == 11) ||
				(sx.stx_ino == ino_bf && sx.stx_size == 22)) ||
		    (sx.stx_mask & SX_MASK) != SX_MASK) {
			report("statx", p->lf, r, "");
			bad++;
		}
	}
	memset(&sx, 0, sizeof(sx));
	r = dcache_statx(p->s, 0, SX_MASK, &sx);
	if (r != DCACHE_PASS) {
		answered++;
		if (r != 0 || sx.stx_ino != ino_s ||
		    (sx.stx_mode != (S_IFREG | 0644) && sx.stx_mode != (S_IFREG | 0600))) {
			report("statx", p->s, r, "");
			bad++;
		}
	}
	atomic_fetch_add(&g_answered, answered);
	atomic_fetch_add(&g_calls, 6);
	return bad;
}

/* glibc's own realpath (no shim in this binary) under the same rules. */
static void *glibc_reader_main(void *arg)
{
	unsigned long n = 0, bad = 0, inner = 0;
	const char *const q[] = { g_p.ex, g_p.lup };
	const char *const dir[] = { g_p.e, g_p.d };
	const char *const dirx[] = { g_p.ex, g_p.dx };
	char buf[PATH_MAX];

	(void)arg;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		int k = (int)(n++ & 1), r;

		memset(buf, 0, sizeof(buf));
		errno = 0;
		r = realpath(q[k], buf) ? 0 : errno;
		if (!legal_dir_x(r, buf, dir[k], dirx[k])) {
			report("glibc realpath", q[k], r, buf);
			bad++;
		}
		if (r == ENOENT && strcmp(buf, dirx[k]) == 0)
			inner++;
	}
	atomic_fetch_add(&g_glibc_calls, n);
	atomic_fetch_add(&g_glibc_illegal, bad);
	atomic_fetch_add(&g_glibc_enoent_inner, inner);
	return NULL;
}

static void *reader_main(void *arg)
{
	unsigned long n = 0, bad = 0;

	(void)arg;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		bad += ask_all();
		if (++n % 64 == 0)
			inval_drain();
	}
	atomic_fetch_add(&g_illegal, bad);
	return NULL;
}

static bool writer_failed;

static void *writer_main(void *arg)
{
	char tmp[PATH_MAX];
	unsigned long round = 0;
	bool toB = false, renamed = false, locked = false;

	(void)arg;
	pathf(tmp, sizeof(tmp), "l.tmp");
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		long r = 0;

		switch (round++ % 3) {
		case 0:
			toB = !toB;
			r = syscall(SYS_symlinkat, toB ? "B" : "A", AT_FDCWD, tmp);
			if (r == 0)
				r = syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, g_p.l, 0);
			break;
		case 1:
			r = syscall(SYS_renameat2, AT_FDCWD, renamed ? g_p.e : g_p.d, AT_FDCWD,
				    renamed ? g_p.d : g_p.e, RENAME_NOREPLACE);
			renamed = !renamed;
			break;
		case 2:
			locked = !locked;
			r = syscall(SYS_fchmodat, AT_FDCWD, g_p.s, locked ? 0600 : 0644);
			break;
		}
		if (r != 0) {
			fprintf(stderr, "writer: round %lu: %s\n", round, strerror(errno));
			writer_failed = true;
			break;
		}
		atomic_fetch_add(&g_writes, 1);
	}
	return NULL;
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_names_race: hung (alarm)\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(2);
}

static int group_setup(void **state)
{
	(void)state;
	strcpy(g_root, "/tmp/rcuwalk-names-race-XXXXXX");
	if (!mkdtemp(g_root))
		return -1;
	umask(022);
	if (build_tree() != 0)
		return -1;
	pathf(g_p.lf, PATH_MAX, "l/f");
	pathf(g_p.lup, PATH_MAX, "l/../D/x");
	pathf(g_p.l, PATH_MAX, "l");
	pathf(g_p.s, PATH_MAX, "s");
	pathf(g_p.dx, PATH_MAX, "D/x");
	pathf(g_p.ex, PATH_MAX, "E/x");
	pathf(g_p.af, PATH_MAX, "A/f");
	pathf(g_p.bf, PATH_MAX, "B/f");
	pathf(g_p.d, PATH_MAX, "D");
	pathf(g_p.e, PATH_MAX, "E");
	inval_fill_ops(&g_ops);
	/* Its files are all fresh: without this the racy-timestamp rule would
	 * keep no attributes, and statx would always pass through. */
	if (dcache_set_policy(0, 0, NULL, 0) != 0)
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

static void test_names_race_readers_see_only_before_or_after_answers(void **state)
{
	const char *env = getenv("RCUWALK_STRESS_SECONDS");
	double seconds = env && *env ? atof(env) : 2.0;
	pthread_t readers[READERS], writer, glibc_reader;
	struct timespec ts;

	(void)state;
	if (seconds <= 0)
		seconds = 2.0;
	signal(SIGALRM, on_alarm);
	alarm((unsigned)seconds + 120);
	for (long i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&readers[i], NULL, reader_main, (void *)i), 0);
	assert_int_equal(pthread_create(&glibc_reader, NULL, glibc_reader_main, NULL), 0);
	assert_int_equal(pthread_create(&writer, NULL, writer_main, NULL), 0);
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	atomic_store(&g_stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(readers[i], NULL);
	pthread_join(glibc_reader, NULL);
	pthread_join(writer, NULL);
	alarm(0);
	print_message("%.1f s: %lu calls, %lu answered from the cache, %lu changes, %lu illegal; "
		      "glibc realpath: %lu calls, %lu ENOENT at dir/x, %lu illegal\n",
		      seconds, atomic_load(&g_calls), atomic_load(&g_answered),
		      atomic_load(&g_writes), atomic_load(&g_illegal), atomic_load(&g_glibc_calls),
		      atomic_load(&g_glibc_enoent_inner), atomic_load(&g_glibc_illegal));
	assert_int_equal(atomic_load(&g_glibc_illegal), 0);
	assert_false(writer_failed);
	assert_true(atomic_load(&g_writes) > 0);
	assert_true(atomic_load(&g_answered) > 0);
	assert_int_equal(atomic_load(&g_illegal), 0);
}

/* Writer stopped, queue drained: every answer is the kernel's / glibc's. */
static void test_names_race_answers_exact_once_queue_drained(void **state)
{
	const char *const rp[] = { g_p.lf, g_p.lup, g_p.dx, g_p.ex, g_p.l, g_p.s };
	char cbuf[PATH_MAX], gbuf[PATH_MAX], kbuf[PATH_MAX];
	struct statx cs, ks;
	size_t len = 0;
	long kn;
	int r, einval;

	(void)state;
	inval_drain();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(rp) / sizeof(rp[0]); i++) {
			char *g;
			int ge;

			memset(gbuf, 0, sizeof(gbuf));
			errno = 0;
			g = realpath(rp[i], gbuf); /* glibc's: no shim in this binary */
			ge = errno;
			r = dcache_realpath(rp[i], cbuf, sizeof(cbuf), &einval);
			assert_int_not_equal(r, DCACHE_PASS);
			if (g) {
				assert_int_equal(r, 0);
				assert_string_equal(cbuf, gbuf);
			} else {
				assert_int_equal(r, ge);
			}
		}
		r = dcache_readlink(g_p.l, cbuf, sizeof(cbuf), &len);
		kn = syscall(SYS_readlinkat, AT_FDCWD, g_p.l, kbuf, sizeof(kbuf));
		assert_int_equal(r, 0);
		assert_int_equal((long)len, kn);
		assert_memory_equal(cbuf, kbuf, len);
		for (int f = 0; f < 2; f++) {
			const char *p = f ? g_p.lf : g_p.s;

			memset(&cs, 0, sizeof(cs));
			memset(&ks, 0, sizeof(ks));
			r = dcache_statx(p, f, SX_MASK, &cs);
			assert_int_equal(syscall(SYS_statx, AT_FDCWD, p, f ? 0 : AT_SYMLINK_NOFOLLOW,
						 SX_MASK, &ks),
					 0);
			assert_int_equal(r, 0);
			memset(&cs.stx_atime, 0, sizeof(cs.stx_atime));
			memset(&ks.stx_atime, 0, sizeof(ks.stx_atime));
			assert_memory_equal(&cs, &ks, sizeof(cs));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_race_readers_see_only_before_or_after_answers),
		cmocka_unit_test(test_names_race_answers_exact_once_queue_drained),
	};

	return cmocka_run_group_tests_name("names_race", tests, group_setup, group_teardown);
}
