/* SPDX-License-Identifier: MIT */
/*
 * bench_stat.c - ns per call of glibc's path calls vs. the raw syscalls.
 *
 * Run it twice, without and with the shim:
 *     build/examples/rcuwalk_bench
 *     LD_PRELOAD=build/preload/librcuwalk.so build/examples/rcuwalk_bench
 *
 * For every case the same lookup is made (a) with syscall(2), which nothing can
 * interpose, and (b) through libc (stat, lstat, access, open, readlink, statx,
 * realpath), which the shim answers from its cache when it is preloaded.  For
 * realpath, (a) is glibc's own realpath (taken from libc.so.6 with dlvsym, so
 * the shim cannot answer it): one readlink(2) per component, and getcwd(2)
 * for a relative name.  Each case is warmed up, then
 * timed for K rounds of N calls each, raw and libc interleaved per round; the
 * table shows the median over the rounds of ns/call, the ratio libc/raw and
 * the min-max over the rounds.  The 'first lookup' case stats M files that
 * were created just before and were never looked up, each once (cache misses).
 *
 * Thread scaling: stat hits on one 5-component name from T = 1 .. -t threads
 * (default: the online CPUs), against a pure-compute loop run with the same
 * thread counts in the same rounds (alternating); both as aggregate Mops/s.
 *
 * Memory: M2 (-M) files are created, and, after 2.1 s (the shim keeps no
 * attributes of files younger than 2 s), each is stat()ed once: mallinfo2()'s
 * in-use bytes (all arenas, plus mmapped chunks) before and after, divided by
 * M2, are the allocator's bytes per cached dentry with its attributes
 * (everything the shim allocated meanwhile, and in the 0.5 s after, when
 * liburcu grows the hash table in its own thread).
 *
 * Options: -n N (calls per round, default 200000), -k K (rounds, default 11),
 *          -m M (files per round for the first-lookup case, default 5000),
 *          -t T (max threads, default online CPUs), -N ops per thread for
 *          the scaling case (default: N), -M M2 (files for the
 *          memory case, default 20000), -c FILE (also write the figures as
 *          '|'-separated lines to FILE, for examples/bench.sh).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_faccessat2
#ifdef __NR_faccessat2
#define SYS_faccessat2 __NR_faccessat2
#endif
#endif

enum op {
	OP_STAT,
	OP_LSTAT,
	OP_ACCESS,
	OP_OPEN,
	OP_READLINK,
	OP_STATX,
	OP_REALPATH,
};

struct bcase {
	const char *name;
	enum op op;
	const char *path;
};

struct result {
	double raw_med, raw_min, raw_max;
	double libc_med, libc_min, libc_max;
};

static volatile uint64_t sink;
static FILE *csv; /* -c FILE */
static int have_faccessat2;
static char *(*glibc_realpath)(const char *, char *); /* glibc's own, not the shim's */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One lookup.  Returns the call's return value (a successful open's fd is
 * closed); *err receives errno on failure. */
static long do_raw(enum op op, const char *path, int *err)
{
	struct stat st;
	long r;

	errno = 0;
	switch (op) {
	case OP_STAT:
		r = syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0);
		if (r == 0)
			sink += (uint64_t)st.st_ino;
		break;
	case OP_LSTAT:
		r = syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
		if (r == 0)
			sink += (uint64_t)st.st_ino;
		break;
	case OP_ACCESS:
#ifdef SYS_faccessat2
		if (have_faccessat2)
			r = syscall(SYS_faccessat2, AT_FDCWD, path, F_OK, 0);
		else
#endif
			r = syscall(SYS_faccessat, AT_FDCWD, path, F_OK);
		break;
	case OP_READLINK: {
		char buf[PATH_MAX];

		r = syscall(SYS_readlinkat, AT_FDCWD, path, buf, sizeof(buf));
		if (r > 0)
			sink += (uint64_t)buf[0];
		break;
	}
	case OP_STATX: {
		struct statx sx;

		r = syscall(SYS_statx, AT_FDCWD, path, 0, STATX_BASIC_STATS, &sx);
		if (r == 0)
			sink += (uint64_t)sx.stx_ino;
		break;
	}
	case OP_REALPATH: {
		char buf[PATH_MAX];

		r = glibc_realpath && glibc_realpath(path, buf) ? 0 : -1;
		if (r == 0)
			sink += (uint64_t)buf[1];
		break;
	}
	case OP_OPEN:
	default:
		r = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY, 0);
		if (r >= 0)
			close((int)r);
		break;
	}
	*err = r < 0 ? errno : 0;
	return r;
}

static long do_libc(enum op op, const char *path, int *err)
{
	struct stat st;
	long r;

	errno = 0;
	switch (op) {
	case OP_STAT:
		r = stat(path, &st);
		if (r == 0)
			sink += (uint64_t)st.st_ino;
		break;
	case OP_LSTAT:
		r = lstat(path, &st);
		if (r == 0)
			sink += (uint64_t)st.st_ino;
		break;
	case OP_ACCESS:
		r = access(path, F_OK);
		break;
	case OP_READLINK: {
		char buf[PATH_MAX];

		r = readlink(path, buf, sizeof(buf));
		if (r > 0)
			sink += (uint64_t)buf[0];
		break;
	}
	case OP_STATX: {
		struct statx sx;

		r = statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &sx);
		if (r == 0)
			sink += (uint64_t)sx.stx_ino;
		break;
	}
	case OP_REALPATH: {
		char buf[PATH_MAX];

		r = realpath(path, buf) ? 0 : -1;
		if (r == 0)
			sink += (uint64_t)buf[1];
		break;
	}
	case OP_OPEN:
	default:
		r = open(path, O_RDONLY);
		if (r >= 0)
			close((int)r);
		break;
	}
	*err = r < 0 ? errno : 0;
	return r;
}

static double time_loop(int libc, enum op op, const char *path, long n)
{
	int err;
	double t0 = now_ns();

	if (libc)
		for (long i = 0; i < n; i++)
			do_libc(op, path, &err);
	else
		for (long i = 0; i < n; i++)
			do_raw(op, path, &err);
	return (now_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void summarize(double *v, int k, double *med, double *mn, double *mx)
{
	qsort(v, (size_t)k, sizeof(*v), cmp_double);
	*mn = v[0];
	*mx = v[k - 1];
	*med = (k % 2) ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2.0;
}

/* Returns 0 if raw and libc agree on the result, -1 (with a message) if not. */
static int check_case(const struct bcase *c)
{
	int e_raw, e_libc;
	long r_raw = do_raw(c->op, c->path, &e_raw);
	long r_libc = do_libc(c->op, c->path, &e_libc);

	if ((r_raw < 0) != (r_libc < 0) || e_raw != e_libc) {
		fprintf(stderr, "rcuwalk_bench: %s: raw=%ld (%s) libc=%ld (%s): results differ\n",
			c->name, r_raw, strerror(e_raw), r_libc, strerror(e_libc));
		return -1;
	}
	return 0;
}

static void run_case(const struct bcase *c, long n, int k, struct result *res)
{
	double *raw = calloc((size_t)k, sizeof(double));
	double *lib = calloc((size_t)k, sizeof(double));
	long warm = n / 10 > 1000 ? n / 10 : 1000;

	if (!raw || !lib) {
		perror("calloc");
		exit(1);
	}
	time_loop(0, c->op, c->path, warm);
	time_loop(1, c->op, c->path, warm);
	for (int r = 0; r < k; r++) {
		/* Alternate which side goes first so drift hits both alike. */
		if (r % 2) {
			lib[r] = time_loop(1, c->op, c->path, n);
			raw[r] = time_loop(0, c->op, c->path, n);
		} else {
			raw[r] = time_loop(0, c->op, c->path, n);
			lib[r] = time_loop(1, c->op, c->path, n);
		}
	}
	summarize(raw, k, &res->raw_med, &res->raw_min, &res->raw_max);
	summarize(lib, k, &res->libc_med, &res->libc_min, &res->libc_max);
	free(raw);
	free(lib);
}

static void print_row(const char *name, const struct result *r)
{
	printf("%-34s %9.1f %9.1f %8.3f   %7.1f-%-8.1f %7.1f-%-8.1f\n", name,
	       r->raw_med, r->libc_med, r->libc_med / r->raw_med,
	       r->raw_min, r->raw_max, r->libc_min, r->libc_max);
	if (csv)
		fprintf(csv, "case|%s|%.2f|%.2f|%.2f|%.2f|%.2f|%.2f\n", name, r->raw_med, r->raw_min,
			r->raw_max, r->libc_med, r->libc_min, r->libc_max);
}

/* Create `m` empty files dir/f<i> with raw syscalls (the shim never sees
 * them); dir is created first. */
static void make_files(const char *dir, long m)
{
	char p[PATH_MAX];

	if (syscall(SYS_mkdirat, AT_FDCWD, dir, 0755) != 0) {
		fprintf(stderr, "mkdir %s: %s\n", dir, strerror(errno));
		exit(1);
	}
	for (long i = 0; i < m; i++) {
		snprintf(p, sizeof(p), "%s/f%06ld", dir, i);
		long fd = syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			fprintf(stderr, "create %s: %s\n", p, strerror(errno));
			exit(1);
		}
		close((int)fd);
	}
}

static double stat_each_once(int libc, const char *dir, long m)
{
	char p[PATH_MAX];
	int err;
	double total = 0;

	for (long i = 0; i < m; i++) {
		snprintf(p, sizeof(p), "%s/f%06ld", dir, i);
		double t0 = now_ns();
		long r = libc ? do_libc(OP_STAT, p, &err) : do_raw(OP_STAT, p, &err);
		total += now_ns() - t0;
		if (r != 0) {
			fprintf(stderr, "stat %s: %s\n", p, strerror(err));
			exit(1);
		}
	}
	return total / (double)m;
}

static void first_lookup_case(long m, int k, struct result *res)
{
	double *raw = calloc((size_t)k, sizeof(double));
	double *lib = calloc((size_t)k, sizeof(double));
	char d_raw[64], d_lib[64];

	if (!raw || !lib) {
		perror("calloc");
		exit(1);
	}
	for (int r = 0; r < k; r++) {
		snprintf(d_raw, sizeof(d_raw), "miss-raw-%02d", r);
		snprintf(d_lib, sizeof(d_lib), "miss-libc-%02d", r);
		make_files(d_raw, m);
		make_files(d_lib, m);
		if (r % 2) {
			lib[r] = stat_each_once(1, d_lib, m);
			raw[r] = stat_each_once(0, d_raw, m);
		} else {
			raw[r] = stat_each_once(0, d_raw, m);
			lib[r] = stat_each_once(1, d_lib, m);
		}
	}
	summarize(raw, k, &res->raw_med, &res->raw_min, &res->raw_max);
	summarize(lib, k, &res->libc_med, &res->libc_min, &res->libc_max);
	free(raw);
	free(lib);
}

static void mkdir_p_file(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "mkdir %s: %s\n", buf, strerror(errno));
			exit(1);
		}
		*s = '/';
	}
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	close(fd);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path) != 0 ? -1 : 0;
}

static void rm_rf(const char *dir)
{
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "rcuwalk_bench: could not remove %s: %s\n", dir, strerror(errno));
}

/* ---------------------------------------------------------------- threads */

struct worker {
	pthread_t tid;
	pthread_barrier_t *start;
	const char *path; /* NULL: the pure-compute loop */
	long n;
	uint64_t acc;
	double t0, t1; /* this thread's own start and end */
	char pad[64];
};

/* One unit of pure computation: comparable in length to a cached stat. */
static uint64_t compute_unit(uint64_t x)
{
	for (int i = 0; i < 48; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t acc = (uint64_t)(uintptr_t)w | 1;
	struct stat st;

	pthread_barrier_wait(w->start);
	w->t0 = now_ns();
	if (w->path) {
		for (long i = 0; i < w->n; i++)
			if (stat(w->path, &st) == 0)
				acc += (uint64_t)st.st_ino;
	} else {
		for (long i = 0; i < w->n; i++)
			acc = compute_unit(acc);
	}
	w->t1 = now_ns();
	w->acc = acc;
	return NULL;
}

/* Aggregate Mops/s of `t` threads doing `n` operations each: all the
 * operations over the span from the first thread's start to the last one's end. */
static double run_threads(int t, const char *path, long n)
{
	struct worker *w = calloc((size_t)t, sizeof(*w));
	pthread_barrier_t start;
	double t0 = 0, t1 = 0;

	if (!w || pthread_barrier_init(&start, NULL, (unsigned)t + 1) != 0) {
		perror("threads");
		exit(1);
	}
	for (int i = 0; i < t; i++) {
		w[i].start = &start;
		w[i].path = path;
		w[i].n = n;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < t; i++) {
		pthread_join(w[i].tid, NULL);
		sink += w[i].acc;
		if (i == 0 || w[i].t0 < t0)
			t0 = w[i].t0;
		if (i == 0 || w[i].t1 > t1)
			t1 = w[i].t1;
	}
	pthread_barrier_destroy(&start);
	free(w);
	return (double)t * (double)n / (t1 - t0) * 1e3;
}

static void thread_scaling(int maxt, const char *path, long n, int k)
{
	double *hit = calloc((size_t)k, sizeof(double));
	double *cpu = calloc((size_t)k, sizeof(double));
	double hit1 = 0, cpu1 = 0;

	if (!hit || !cpu) {
		perror("calloc");
		exit(1);
	}
	printf("\nthread scaling: stat(\"%s\") hits vs a pure-compute loop, %ld ops per thread,\n"
	       "%d rounds, aggregate Mops/s (median, min-max); scaling = Mops(T) / Mops(1)\n",
	       path, n, k);
	printf("%-8s %10s %-17s %10s %-17s %8s %8s %10s\n", "threads", "hit Mops", "hit min-max",
	       "cpu Mops", "cpu min-max", "hit x", "cpu x", "hit/cpu x");
	run_threads(1, path, n / 4 + 1); /* warm-up */
	for (int t = 1; t <= maxt; t++) {
		double hm, hmin, hmax, cm, cmin, cmax;

		for (int r = 0; r < k; r++) {
			if (r % 2) {
				cpu[r] = run_threads(t, NULL, n);
				hit[r] = run_threads(t, path, n);
			} else {
				hit[r] = run_threads(t, path, n);
				cpu[r] = run_threads(t, NULL, n);
			}
		}
		summarize(hit, k, &hm, &hmin, &hmax);
		summarize(cpu, k, &cm, &cmin, &cmax);
		if (t == 1) {
			hit1 = hm;
			cpu1 = cm;
		}
		printf("%-8d %10.2f %7.2f-%-9.2f %10.2f %7.2f-%-9.2f %8.3f %8.3f %10.3f\n", t, hm, hmin,
		       hmax, cm, cmin, cmax, hm / hit1, cm / cpu1, (hm / hit1) / (cm / cpu1));
		if (csv)
			fprintf(csv, "threads|%d|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f\n", t, hm, hmin, hmax, cm,
				cmin, cmax);
		fflush(stdout);
	}
	free(hit);
	free(cpu);
}

/* ---------------------------------------------------------------- memory */

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void memory_case(long m)
{
	char p[PATH_MAX];
	struct stat st;
	size_t before, after;
	double per;

	make_files("mem", m);
	/* The shim keeps no attributes of a file changed less than 2 s ago. */
	struct timespec ts = { 2, 100000000 };
	nanosleep(&ts, NULL);
	if (stat("mem", &st) != 0) {
		perror("stat mem");
		exit(1);
	}
	before = heap_in_use();
	for (long i = 0; i < m; i++) {
		snprintf(p, sizeof(p), "mem/f%06ld", i);
		if (stat(p, &st) != 0) {
			fprintf(stderr, "stat %s: %s\n", p, strerror(errno));
			exit(1);
		}
	}
	/* liburcu grows the hash table in its worker thread, after the inserts:
	 * give it time, so that the growth is counted too. */
	ts.tv_sec = 0;
	ts.tv_nsec = 500000000;
	nanosleep(&ts, NULL);
	after = heap_in_use();
	per = after > before ? (double)(after - before) / (double)m : 0.0;
	printf("\nmemory: %ld files (names f000000..: 7 bytes) stat()ed once each: heap in use "
	       "%zu -> %zu bytes (mallinfo2),\n%.1f bytes per cached dentry (with its attributes)\n",
	       m, before, after, per);
	if (csv)
		fprintf(csv, "memory|%ld|%zu|%zu|%.2f\n", m, before, after, per);
}

static long parse_long(const char *s, const char *opt)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v <= 0) {
		fprintf(stderr, "rcuwalk_bench: bad value for %s: %s\n", opt, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long n = 200000, m = 5000, m2 = 20000, tn = 0;
	int k = 11, opt;
	long maxt = sysconf(_SC_NPROCESSORS_ONLN);
	const char *csv_path = NULL;
	char scratch[] = "/tmp/rcuwalk-bench-XXXXXX";
	char oldcwd[PATH_MAX];
	const char *pre = getenv("LD_PRELOAD");
	const char *dis = getenv("RCUWALK_DISABLE");
	int shim = pre && strstr(pre, "librcuwalk") != NULL;
	int failed = 0;

	while ((opt = getopt(argc, argv, "n:k:m:t:N:M:c:h")) != -1) {
		switch (opt) {
		case 'n':
			n = parse_long(optarg, "-n");
			break;
		case 'k':
			k = (int)parse_long(optarg, "-k");
			break;
		case 'm':
			m = parse_long(optarg, "-m");
			break;
		case 't':
			maxt = parse_long(optarg, "-t");
			break;
		case 'N':
			tn = parse_long(optarg, "-N");
			break;
		case 'M':
			m2 = parse_long(optarg, "-M");
			break;
		case 'c':
			csv_path = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-n calls_per_round] [-k rounds] [-m first_lookup_files]\n"
				"          [-t max_threads] [-N ops_per_thread] [-M memory_files] [-c csv_file]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}

	if (maxt < 1)
		maxt = 1;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		fprintf(stderr, "rcuwalk_bench: %s: %s\n", csv_path, strerror(errno));
		return 2;
	}

#ifdef SYS_faccessat2
	{
		long r = syscall(SYS_faccessat2, AT_FDCWD, "/", F_OK, 0);
		have_faccessat2 = !(r < 0 && errno == ENOSYS);
	}
#endif

	{
		void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

		if (libc)
			glibc_realpath = (char *(*)(const char *, char *))dlvsym(libc, "realpath",
										"GLIBC_2.3");
	}

	if (!getcwd(oldcwd, sizeof(oldcwd)))
		snprintf(oldcwd, sizeof(oldcwd), "/");
	if (!mkdtemp(scratch)) {
		perror("mkdtemp");
		return 1;
	}
	if (chdir(scratch) != 0) {
		perror("chdir");
		rm_rf(scratch);
		return 1;
	}

	/* Relative paths from the scratch dir: the component counts are exact. */
	static const char p2[] = "a/f";
	static const char p5[] = "a/b/c/d/f";
	static const char p10[] = "a/b/c/d/e/f/g/h/i/f";
	mkdir_p_file(p2);
	mkdir_p_file(p5);
	mkdir_p_file(p10);
	if (symlink("f", "a/b/c/d/link") != 0) {
		perror("symlink");
		rm_rf(scratch);
		return 1;
	}
	/* The shim keeps no attributes of a file changed less than 2 s ago
	 * (racy timestamps): let the files age, or every stat passes through. */
	{
		struct timespec ts = { 2, 100000000 };

		nanosleep(&ts, NULL);
	}

	struct bcase cases[] = {
		{ "stat hit, 2 components", OP_STAT, p2 },
		{ "stat hit, 5 components", OP_STAT, p5 },
		{ "stat hit, 10 components", OP_STAT, p10 },
		{ "lstat hit (symlink, 5 comp)", OP_LSTAT, "a/b/c/d/link" },
		{ "access(F_OK) hit (5 comp)", OP_ACCESS, p5 },
		{ "open absent leaf (neg hit)", OP_OPEN, "a/b/c/d/absent.h" },
		{ "open under missing dir", OP_OPEN, "missing/x/y" },
		{ "readlink hit (5 comp)", OP_READLINK, "a/b/c/d/link" },
		{ "statx hit, 5 components", OP_STATX, p5 },
		{ "realpath, 5 components", OP_REALPATH, p5 },
		{ "realpath via symlink (5 comp)", OP_REALPATH, "a/b/c/d/link" },
		{ "realpath, 10 components", OP_REALPATH, p10 },
		{ "stat /usr/include/stdio.h", OP_STAT, "/usr/include/stdio.h" },
	};
	size_t ncases = sizeof(cases) / sizeof(cases[0]);

	printf("rcuwalk_bench: shim %s (LD_PRELOAD=%s%s)\n",
	       shim ? "LOADED" : "not loaded", pre ? pre : "",
	       dis && *dis && strcmp(dis, "0") ? ", RCUWALK_DISABLE set" : "");
	printf("scratch %s; %d rounds x %ld calls per case, median of per-round ns/call\n",
	       scratch, k, n);
	printf("raw = syscall(SYS_newfstatat/SYS_faccessat%s/SYS_openat/SYS_readlinkat/SYS_statx) "
	       "and glibc's own realpath;\nlibc = stat/lstat/access/open/readlink/statx/realpath\n\n",
	       have_faccessat2 ? "2" : "");
	printf("%-34s %9s %9s %8s   %-16s %-16s\n", "case", "raw ns", "libc ns", "libc/raw",
	       "raw min-max", "libc min-max");

	for (size_t i = 0; i < ncases; i++) {
		struct result res;
		struct stat st;

		if (cases[i].path[0] == '/' && lstat(cases[i].path, &st) != 0) {
			printf("%-34s (skipped: %s absent)\n", cases[i].name, cases[i].path);
			continue;
		}
		if (check_case(&cases[i]) != 0)
			failed = 1;
		run_case(&cases[i], n, k, &res);
		print_row(cases[i].name, &res);
		fflush(stdout);
	}

	{
		struct result res;
		char name[64];

		first_lookup_case(m, k, &res);
		snprintf(name, sizeof(name), "first lookup (miss), %ld files", m);
		print_row(name, &res);
	}

	thread_scaling((int)maxt, p5, tn ? tn : n, k);
	memory_case(m2);

	if (chdir(oldcwd) != 0 && chdir("/") != 0)
		perror("chdir /");
	rm_rf(scratch);
	if (csv)
		fclose(csv);
	if (failed)
		fprintf(stderr, "rcuwalk_bench: WARNING: libc and raw results differed (see above)\n");
	return failed;
}
