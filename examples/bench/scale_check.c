/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk_scale - a monorepo-sized tree looked up from many processes, every
 * answer compared with the kernel's (issue 25, item 4; examples/scale.sh
 * drives it).  Four modes:
 *
 *   rcuwalk_scale gen   -r ROOT -d DIRS -f FILES
 *   rcuwalk_scale check -r ROOT -d DIRS -f FILES -n LOOKUPS -s SEED
 *                       [-m CHANGES -M EVERY -B BOUND_MS] [-A]
 *   rcuwalk_scale write -r ROOT -d DIRS -f FILES -m CHANGES -M EVERY -s SEED
 *                       [-w CHANGES_PER_S]
 *   rcuwalk_scale arena
 *
 * The tree: DIRS leaf directories in three levels, leaf i at
 * ROOT/pkgT/modM/subS with T = i / 1000, M = i / 10 % 100, S = i % 10 (100
 * packages of 100 modules of 10 leaves for 100,000), each leaf holding
 * FILES files fileJJ.c (J < FILES, empty but for a sparse size).  The
 * absent names asked are fileJJ.h in the same leaves.  `gen` makes it in
 * ROOT.tmp.PID with *at() calls (no process per file), writes ROOT.tmp/shape
 * last and renames it to ROOT; a ROOT whose shape file says the same DIRS
 * and FILES is kept as it is.
 *
 * `check` (run under the shim) makes LOOKUPS stat() calls of names drawn
 * with its own SEED: half present (.c), half absent (.h); 80% of them in
 * the first fifth of the leaves (the hot ones, shared by every process, as a
 * build's common headers), the rest in the others.  Right after each, the
 * raw syscall(SYS_newfstatat) of the same name, which nothing preloaded can
 * intercept.  Compared: the return value, errno and st_dev, st_ino,
 * st_mode, st_nlink, st_uid, st_gid, st_size, st_mtim, st_ctim.  A
 * mismatch is a failure (exit 1) unless, with -m, the name is one that
 * `write` may change (a leaf i with i % EVERY == 0) and its last change is
 * in progress or ended at most BOUND_MS before the raw answer (the
 * coherence contract's clause 4: in a session, 100 ms whatever the
 * watcher's state; doc/coherence.md): then it is counted as a stale answer
 * within the bound, with its lag (the time from the change's end to the raw
 * answer; stale_1ms, stale_10ms: how many lagged more).  A mismatch the kernel does not repeat
 * when asked again (tests/kernel_again.h) is counted apart, not failed.
 * Prints one line:
 *   rcuwalk-scale pid=.. seed=.. lookups=.. present=.. mismatches=..
 *   stale_ok=.. stale_1ms=.. stale_10ms=.. stale_max_us=.. kernel_again=..
 *   shim_ns=.. raw_ns=..
 *   wall_ms=.. maxrss_kb=.. arena_rss_kb=..
 * (shim_ns, raw_ns: mean ns per call, the clock's own cost taken off;
 * maxrss_kb: getrusage's peak, the arena's pages this process touched
 * included; arena_rss_kb: those pages, from /proc/self/smaps) and with -A
 * the arena's census after it (below).
 *
 * `write` (run without the shim) changes names of the leaves i with
 * i % EVERY == 0, with raw syscalls, CHANGES_PER_S a second (default
 * 1000) until SIGTERM or SIGINT: creates an absent name, removes a present
 * one, or renames it over to an absent name of another such leaf.  Before
 * each change it marks the names it touches as changing (~0) in CHANGES, a
 * file of one 64-bit CLOCK_MONOTONIC stamp per (leaf, name) that `check`
 * maps, and after it stores the time it returned.  CHANGES is made under
 * a temporary name and renamed into place once whole.  At the end it puts
 * those leaves back as `gen` made them (the tree is reused) and prints its
 * counts.
 *
 * `arena` (run inside a session: RCUWALK_SESSION_FDS names the watcher and
 * the arena's fd) takes the arena's memfd with pidfd_getfd, maps it
 * read-only and prints dcache_arena_census (cache/dcache.h): bytes taken
 * and refused, entries by kind (live, and those too deep in their bucket's
 * chain for a reader to see), the shared path table's slots, answers and
 * chains.  It writes nothing there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dcache.h"

#define CHANGING UINT64_MAX /* a change in progress, in CHANGES */

struct opts {
	const char *root, *changes;
	unsigned long dirs, files, lookups, every, rate, seed;
	double bound_ms;
	bool census;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void die(const char *what)
{
	fprintf(stderr, "rcuwalk_scale: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* The leaf's directory below ROOT: "pkgT/modM/subS". */
static int leaf_dir(char *buf, size_t cap, unsigned long i)
{
	return snprintf(buf, cap, "pkg%03lu/mod%02lu/sub%lu", i / 1000, i / 10 % 100, i % 10);
}

/* A name of the leaf's: k < 2 * files, even k present (.c), odd absent (.h). */
static int leaf_name(char *buf, size_t cap, unsigned long k)
{
	return snprintf(buf, cap, "file%02lu.%c", k / 2, k % 2 ? 'h' : 'c');
}

/* The size gen gives file j of leaf i (sparse: no blocks). */
static off_t file_size(unsigned long i, unsigned long j)
{
	return (off_t)((i * 31 + j * 7) % 4096);
}

/* ------------------------------------------------------------------ gen */

static int shape_ok(const char *root, const struct opts *o)
{
	char p[4096], buf[128], want[128];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/shape", root);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	snprintf(want, sizeof(want), "rcuwalk-scale v1 dirs=%lu files=%lu\n", o->dirs, o->files);
	return strcmp(buf, want) == 0;
}

static int mkdir_at(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0755) != 0 && errno != EEXIST)
		die(name);
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die(name);
	return fd;
}

static int gen(const struct opts *o)
{
	char tmp[4096], name[64];
	int rfd, pfd = -1, mfd = -1, fd;
	unsigned long t = ~0ul, m = ~0ul;
	uint64_t t0 = now_ns();

	if (shape_ok(o->root, o)) {
		printf("tree %s: kept (dirs=%lu files=%lu)\n", o->root, o->dirs, o->files);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", o->root, (int)getpid());
	if (mkdir(tmp, 0755) != 0)
		die(tmp);
	rfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		die(tmp);
	for (unsigned long i = 0; i < o->dirs; i++) {
		int lfd;

		if (i / 1000 != t) {
			if (pfd >= 0)
				close(pfd);
			t = i / 1000;
			snprintf(name, sizeof(name), "pkg%03lu", t);
			pfd = mkdir_at(rfd, name);
			m = ~0ul;
		}
		if (i / 10 % 100 != m) {
			if (mfd >= 0)
				close(mfd);
			m = i / 10 % 100;
			snprintf(name, sizeof(name), "mod%02lu", m);
			mfd = mkdir_at(pfd, name);
		}
		snprintf(name, sizeof(name), "sub%lu", i % 10);
		lfd = mkdir_at(mfd, name);
		for (unsigned long j = 0; j < o->files; j++) {
			leaf_name(name, sizeof(name), 2 * j);
			fd = openat(lfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0 || ftruncate(fd, file_size(i, j)) != 0)
				die(name);
			close(fd);
		}
		close(lfd);
	}
	if (mfd >= 0)
		close(mfd);
	if (pfd >= 0)
		close(pfd);
	fd = openat(rfd, "shape", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || dprintf(fd, "rcuwalk-scale v1 dirs=%lu files=%lu\n", o->dirs, o->files) < 0 ||
	    fsync(rfd) != 0)
		die("shape");
	close(fd);
	close(rfd);
	/* A stale tree of another shape goes first (its shape file last). */
	if (access(o->root, F_OK) == 0) {
		char old[4200];

		snprintf(old, sizeof(old), "%s.old.%d", o->root, (int)getpid());
		if (rename(o->root, old) != 0)
			die(o->root);
		printf("tree %s: another shape, moved to %s (remove it)\n", o->root, old);
	}
	if (rename(tmp, o->root) != 0)
		die(o->root);
	printf("tree %s: made, %lu leaves, %lu files, %.1f s\n", o->root, o->dirs, o->dirs * o->files,
	       (double)(now_ns() - t0) / 1e9);
	return 0;
}

/* ---------------------------------------------------------------- check */

static bool same(long r1, int e1, const struct stat *a, long r2, int e2, const struct stat *b)
{
	if (r1 != r2)
		return false;
	if (r1 != 0)
		return e1 == e2;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
	       a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void describe(char *buf, size_t cap, long r, int e, const struct stat *s)
{
	if (r != 0)
		snprintf(buf, cap, "ret %ld errno %d (%s)", r, e, strerror(e));
	else
		snprintf(buf, cap, "ino %lu mode %o nlink %lu size %ld mtime %ld.%09ld ctime %ld.%09ld",
			 (unsigned long)s->st_ino, s->st_mode, (unsigned long)s->st_nlink,
			 (long)s->st_size, (long)s->st_mtim.tv_sec, s->st_mtim.tv_nsec,
			 (long)s->st_ctim.tv_sec, s->st_ctim.tv_nsec);
}

/* The arena's mapping's resident KiB in this process (/proc/self/smaps). */
static long arena_rss_kb(void)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	long kb = 0, v;
	bool in = false;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') && line[0] != ' ' &&
		    (line[0] >= '0' && line[0] <= '9' ? true : (line[0] >= 'a' && line[0] <= 'f')))
			in = strstr(line, "rcuwalk-arena") != NULL;
		else if (in && sscanf(line, "Rss: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

static void print_census(const struct dcache_arena_census *c, const char *who)
{
	const struct dcache_arena_kind *k[6] = { &c->listing, &c->watch, &c->name, &c->attr,
						  &c->search, &c->file };
	const char *kn[6] = { "listing", "watch", "name", "attr", "search", "file" };

	printf("arena %s size=%llu limit=%llu bump=%llu refused=%llu resets=%llu longest_chain=%llu\n",
	       who, (unsigned long long)c->size, (unsigned long long)c->limit,
	       (unsigned long long)c->bump, (unsigned long long)c->refused,
	       (unsigned long long)c->resets, (unsigned long long)c->longest);
	for (int i = 0; i < 6; i++)
		printf("arena %s kind=%s n=%llu live=%llu bytes=%llu deep=%llu\n", who, kn[i],
		       (unsigned long long)k[i]->n, (unsigned long long)k[i]->live,
		       (unsigned long long)k[i]->bytes, (unsigned long long)k[i]->deep);
	printf("arena %s spath slots=%llu used=%llu valid=%llu evicted=%llu chains=%llu "
	       "chain_bytes=%llu table_bytes=%llu gens_bytes=%llu\n",
	       who, (unsigned long long)c->sp_slots, (unsigned long long)c->sp_used,
	       (unsigned long long)c->sp_valid, (unsigned long long)c->sp_evicted,
	       (unsigned long long)c->sp_chains, (unsigned long long)c->sp_chain_bytes,
	       (unsigned long long)c->sp_table_bytes, (unsigned long long)c->sp_gens_bytes);
}

/* The session's arena, mapped read-only, or NULL (with why on stderr). */
static const void *map_session_arena(void)
{
	const char *v = getenv("RCUWALK_SESSION_FDS");
	int pid, rfd, afd, pidfd, fd;
	struct stat st;
	void *m;

	if (!v || sscanf(v, "%d:%d:%d", &pid, &rfd, &afd) != 3 || afd < 0) {
		fprintf(stderr, "rcuwalk_scale: no session arena (RCUWALK_SESSION_FDS=%s)\n",
			v ? v : "");
		return NULL;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		perror("rcuwalk_scale: pidfd_open of the watcher");
		return NULL;
	}
	fd = (int)syscall(SYS_pidfd_getfd, pidfd, afd, 0);
	close(pidfd);
	if (fd < 0) {
		perror("rcuwalk_scale: pidfd_getfd of the arena");
		return NULL;
	}
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != DCACHE_ARENA_SIZE) {
		fprintf(stderr, "rcuwalk_scale: fd %d of the watcher is not an arena\n", afd);
		close(fd);
		return NULL;
	}
	m = mmap(NULL, DCACHE_ARENA_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	/* The watcher formats it beside the command's start (watcher_spawn.c,
	 * inval_watcher_spawn): a few ms after the launcher execs. */
	for (int ms = 0; m != MAP_FAILED && ms < 2000 && dcache_arena_check(m, DCACHE_ARENA_SIZE) != 0; ms++)
		usleep(1000);
	if (m == MAP_FAILED || dcache_arena_check(m, DCACHE_ARENA_SIZE) != 0) {
		fprintf(stderr, "rcuwalk_scale: the arena does not check\n");
		return NULL;
	}
	return m;
}

static int arena(void)
{
	const void *m = map_session_arena();
	struct dcache_arena_census c;

	if (!m)
		return 2;
	dcache_arena_census(m, &c);
	print_census(&c, "end");
	return 0;
}

static const uint64_t *map_changes(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *m;

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0)
		die(path);
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		die(path);
	*n = (size_t)st.st_size / 8;
	return m;
}

static int check(const struct opts *o)
{
	char path[4096], a_s[256], b_s[320];
	size_t rlen = strlen(o->root), nchanges = 0;
	const uint64_t *changes = o->changes ? map_changes(o->changes, &nchanges) : NULL;
	unsigned long hot = o->dirs / 5 ? o->dirs / 5 : 1, present = 0, bad = 0, stale = 0,
		      again = 0, stale_1ms = 0, stale_10ms = 0;
	uint64_t s = 0x9e3779b97f4a7c15ull ^ (o->seed * 0xbf58476d1ce4e5b9ull), shim = 0, raw = 0,
		 clk, t0, lag_max = 0;
	struct rusage ru;

	if (rlen + 64 >= sizeof(path))
		return 2;
	memcpy(path, o->root, rlen);
	path[rlen++] = '/';
	for (int i = 0; i < 8; i++)
		(void)rnd(&s);
	/* The clock's own cost, taken off each timed call. */
	t0 = now_ns();
	for (int i = 0; i < 1000; i++)
		(void)now_ns();
	clk = (now_ns() - t0) / 1000;
	t0 = now_ns();
	for (unsigned long n = 0; n < o->lookups; n++) {
		uint64_t r = rnd(&s), x, y, z;
		unsigned long i, k;
		struct stat a, b;
		long r1, r2;
		int e1, e2, l;

		if (r % 10 < 8 || hot == o->dirs)
			i = (r >> 8) % hot;
		else
			i = hot + (r >> 8) % (o->dirs - hot);
		k = (r >> 40) % (2 * o->files);
		l = leaf_dir(path + rlen, sizeof(path) - rlen, i);
		path[rlen + (size_t)l] = '/';
		leaf_name(path + rlen + (size_t)l + 1, sizeof(path) - rlen - (size_t)l - 1, k);
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		x = now_ns();
		errno = 0;
		r1 = stat(path, &a);
		e1 = errno;
		y = now_ns();
		errno = 0;
		r2 = syscall(SYS_newfstatat, AT_FDCWD, path, &b, 0);
		e2 = errno;
		z = now_ns();
		shim += y - x;
		raw += z - y;
		present += r2 == 0;
		if (same(r1, e1, &a, r2, e2, &b))
			continue;
		if (changes && i % o->every == 0) {
			size_t slot = (i / o->every) * 2 * o->files + k;
			uint64_t t = slot < nchanges ? __atomic_load_n(&changes[slot], __ATOMIC_ACQUIRE) : 0;

			/* Changing now, changed since the raw answer (t > z), or
			 * at most the bound before it. */
			if (t == CHANGING || (t && (t >= z || (double)(z - t) <= o->bound_ms * 1e6))) {
				stale++;
				if (t != CHANGING && t < z && z - t > 1000000)
					stale_1ms++;
				if (t != CHANGING && t < z && z - t > 10000000)
					stale_10ms++;
				if (t != CHANGING && t < z && z - t > lag_max)
					lag_max = z - t;
				continue;
			}
		}
		describe(a_s, sizeof(a_s), r1, e1, &a);
		describe(b_s, sizeof(b_s), r2, e2, &b);
		if (changes && i % o->every == 0) {
			size_t slot = (i / o->every) * 2 * o->files + k;
			uint64_t t = slot < nchanges ? __atomic_load_n(&changes[slot], __ATOMIC_ACQUIRE) : 0;

			if (t)
				snprintf(b_s + strlen(b_s), sizeof(b_s) - strlen(b_s),
					 "; its last change ended %.3f ms before", (double)(z - t) / 1e6);
			else
				snprintf(b_s + strlen(b_s), sizeof(b_s) - strlen(b_s),
					 "; never changed in this run");
		}
		errno = 0;
		r2 = syscall(SYS_newfstatat, AT_FDCWD, path, &b, 0);
		e2 = errno;
		if (same(r1, e1, &a, r2, e2, &b)) {
			again++;
			fprintf(stderr, "rcuwalk_scale: %s: the kernel said %s, then %s (taken back)\n",
				path, b_s, a_s);
			continue;
		}
		if (++bad <= 20)
			fprintf(stderr, "rcuwalk_scale: MISMATCH %s (lookup %lu, seed %lu): shim %s, kernel %s\n",
				path, n, o->seed, a_s, b_s);
	}
	t0 = now_ns() - t0;
	getrusage(RUSAGE_SELF, &ru);
	printf("rcuwalk-scale pid=%d seed=%lu lookups=%lu present=%lu mismatches=%lu stale_ok=%lu "
	       "stale_1ms=%lu stale_10ms=%lu stale_max_us=%.1f kernel_again=%lu shim_ns=%.0f raw_ns=%.0f wall_ms=%.0f "
	       "maxrss_kb=%ld arena_rss_kb=%ld\n",
	       (int)getpid(), o->seed, o->lookups, present, bad, stale, stale_1ms, stale_10ms,
	       (double)lag_max / 1e3, again,
	       o->lookups ? (double)shim / (double)o->lookups - (double)clk : 0,
	       o->lookups ? (double)raw / (double)o->lookups - (double)clk : 0, (double)t0 / 1e6,
	       ru.ru_maxrss, arena_rss_kb());
	if (o->census) {
		const void *m = map_session_arena();
		struct dcache_arena_census c;
		char who[32];

		if (m) {
			dcache_arena_census(m, &c);
			snprintf(who, sizeof(who), "after=%lu", o->seed);
			print_census(&c, who);
		}
	}
	fflush(stdout);
	return bad ? 1 : 0;
}

/* ---------------------------------------------------------------- write */

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void leaf_path(char *buf, size_t cap, const char *root, unsigned long i, unsigned long k)
{
	char d[64], n[64];

	leaf_dir(d, sizeof(d), i);
	leaf_name(n, sizeof(n), k);
	snprintf(buf, cap, "%s/%s/%s", root, d, n);
}

static bool exists(const char *p)
{
	struct stat st;

	return syscall(SYS_newfstatat, AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static long raw_create(const char *p, off_t size)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	if (size)
		(void)syscall(SYS_ftruncate, fd, size);
	syscall(SYS_close, fd);
	return 0;
}

static int write_mode(const struct opts *o)
{
	unsigned long nmut = (o->dirs + o->every - 1) / o->every, slots = nmut * 2 * o->files;
	unsigned long creates = 0, unlinks = 0, renames = 0, fails = 0, restored = 0;
	uint64_t s = 0x7f4a7c159e3779b9ull ^ (o->seed * 0x94d049bb133111ebull), next;
	uint64_t period = o->rate ? 1000000000ull / o->rate : 0;
	char tmp[4200], p[4200], q[4200];
	struct sigaction sa = { .sa_handler = on_stop };
	uint64_t *ch;
	int fd;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	snprintf(tmp, sizeof(tmp), "%s.tmp", o->changes);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)(slots * 8)) != 0)
		die(tmp);
	ch = mmap(NULL, slots * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (ch == MAP_FAILED)
		die(tmp);
	if (rename(tmp, o->changes) != 0)
		die(o->changes);
	next = now_ns();
	while (!stop) {
		uint64_t r = rnd(&s);
		unsigned long m = (r >> 4) % nmut, k = (r >> 24) % (2 * o->files);
		unsigned long i = m * o->every, i2, k2, slot = m * 2 * o->files + k, slot2;
		uint64_t next_t;
		long ret;

		if (i >= o->dirs)
			continue;
		leaf_path(p, sizeof(p), o->root, i, k);
		if (!exists(p)) {
			__atomic_store_n(&ch[slot], CHANGING, __ATOMIC_SEQ_CST);
			ret = raw_create(p, 0);
			__atomic_store_n(&ch[slot], now_ns(), __ATOMIC_RELEASE);
			ret == 0 ? creates++ : fails++;
		} else if ((r >> 60) & 1) {
			__atomic_store_n(&ch[slot], CHANGING, __ATOMIC_SEQ_CST);
			ret = syscall(SYS_unlinkat, AT_FDCWD, p, 0);
			__atomic_store_n(&ch[slot], now_ns(), __ATOMIC_RELEASE);
			ret == 0 ? unlinks++ : fails++;
		} else {
			uint64_t r2 = rnd(&s);
			unsigned long m2 = (r2 >> 4) % nmut;

			i2 = m2 * o->every;
			k2 = (r2 >> 24) % (2 * o->files);
			slot2 = m2 * 2 * o->files + k2;
			if (i2 >= o->dirs || slot2 == slot)
				continue;
			leaf_path(q, sizeof(q), o->root, i2, k2);
			__atomic_store_n(&ch[slot], CHANGING, __ATOMIC_SEQ_CST);
			__atomic_store_n(&ch[slot2], CHANGING, __ATOMIC_SEQ_CST);
			ret = syscall(SYS_renameat2, AT_FDCWD, p, AT_FDCWD, q, RENAME_NOREPLACE);
			next_t = now_ns();
			__atomic_store_n(&ch[slot], next_t, __ATOMIC_RELEASE);
			__atomic_store_n(&ch[slot2], next_t, __ATOMIC_RELEASE);
			ret == 0 ? renames++ : fails++;
		}
		if (period) {
			struct timespec ts;

			next += period;
			ts.tv_sec = (time_t)(next / 1000000000ull);
			ts.tv_nsec = (long)(next % 1000000000ull);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	/* The tree as gen made it: every .c, no .h, in the leaves changed. */
	for (unsigned long m = 0; m < nmut; m++) {
		unsigned long i = m * o->every;

		if (i >= o->dirs)
			break;
		for (unsigned long j = 0; j < o->files; j++) {
			leaf_path(p, sizeof(p), o->root, i, 2 * j);
			if (!exists(p))
				restored += raw_create(p, file_size(i, j)) == 0;
			leaf_path(p, sizeof(p), o->root, i, 2 * j + 1);
			restored += syscall(SYS_unlinkat, AT_FDCWD, p, 0) == 0;
		}
	}
	printf("writer: creates=%lu unlinks=%lu renames=%lu failed=%lu restored=%lu leaves=%lu\n",
	       creates, unlinks, renames, fails, restored, nmut);
	return 0;
}

/* ----------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: rcuwalk_scale gen|check|write|arena -r ROOT -d DIRS -f FILES [-n LOOKUPS]\n"
		"       [-s SEED] [-m CHANGES] [-M EVERY] [-B BOUND_MS] [-w CHANGES_PER_S] [-A]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .dirs = 100000, .files = 10, .lookups = 100000, .every = 50,
			  .rate = 1000, .seed = 1, .bound_ms = 100 };
	const char *mode;
	int c;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "r:d:f:n:s:m:M:B:w:A")) != -1) {
		switch (c) {
		case 'r': o.root = optarg; break;
		case 'd': o.dirs = strtoul(optarg, NULL, 10); break;
		case 'f': o.files = strtoul(optarg, NULL, 10); break;
		case 'n': o.lookups = strtoul(optarg, NULL, 10); break;
		case 's': o.seed = strtoul(optarg, NULL, 10); break;
		case 'm': o.changes = optarg; break;
		case 'M': o.every = strtoul(optarg, NULL, 10); break;
		case 'B': o.bound_ms = strtod(optarg, NULL); break;
		case 'w': o.rate = strtoul(optarg, NULL, 10); break;
		case 'A': o.census = true; break;
		default: usage();
		}
	}
	if (!strcmp(mode, "arena"))
		return arena();
	if (!o.root || o.root[0] != '/' || !o.dirs || !o.files || o.files > 100 || !o.every)
		usage();
	if (!strcmp(mode, "gen"))
		return gen(&o);
	if (!strcmp(mode, "check"))
		return check(&o);
	if (!strcmp(mode, "write") && o.changes)
		return write_mode(&o);
	usage();
	return 2;
}
