/* SPDX-License-Identifier: MIT */
/*
 * stats.c - RCUWALK_STATS records (format: stats.h) and the per-thread
 * pass-through reasons.
 *
 * Counting: the cache's counters are per thread (cache/dcache.c); the
 * wrappers' pass-through reasons are too (below), in a static pool of blocks
 * like the cache's, so no lookup writes memory another thread writes.
 *
 * Records: one fixed-size O_APPEND write(2) per record, made with raw
 * syscalls and formatted by hand, so a record can be written from _exit() in
 * a signal handler or in a vfork() child.  Each record holds the counts since
 * this image's previous record (`base`), which is what makes exec and _exit
 * records add up with the final one:
 *   - exec*(): the record is written before the exec is made (if anything
 *     was counted); a vfork() child shares the parent's memory, counters and
 *     `base`, so the parent's later record does not count those again;
 *   - _exit()/_Exit(): the record is written, then the real call is made;
 *   - exit()/return from main: the library destructor (shim.c) writes it;
 *   - fork(): the child's counters start from zero (pthread_atfork below,
 *     dcache_fork_child()), the parent keeps its own.
 * Lost: death by a signal, raw exit_group/execve syscalls.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------- */
/* Per-thread pass-through reasons */

#define PASS_BLOCKS 256
struct pass_block {
	uint64_t c[PRELOAD_PASS_N_];
} __attribute__((aligned(128))); /* a thread's own lines: no false sharing */
static struct pass_block pass_pool[PASS_BLOCKS + 1] DCACHE_COLD_BSS; /* the last one is shared */
/* The first thread's block (pass_pool[0] unused) and the count on the
 * start-up data page: a process's first pass-through, in its warm-up, wrote
 * a page of .bss and read then wrote one of .lbss, three page faults. */
static struct pass_block pass_first DCACHE_START_DATA;
static unsigned int pass_used DCACHE_START_DATA;
static __thread struct pass_block *tls_pass __attribute__((tls_model("initial-exec")));

static int stats_on DCACHE_START_DATA; /* stats_path is set: read at every exit */

/* Counted only with stats on: nothing else reads the counts (snapshot(),
 * for a record), and a write here was the one write of a fork() child's
 * redirection open to the start-up data page (a copy-on-write fault). */
DCACHE_FORK_TEXT void preload_count_pass(enum preload_pass why)
{
	struct pass_block *b = tls_pass;

	if (!stats_on)
		return;

	if (__builtin_expect(!b, 0)) {
		unsigned int i = __atomic_fetch_add(&pass_used, 1, __ATOMIC_RELAXED);

		b = !i ? &pass_first : &pass_pool[i < PASS_BLOCKS ? i : PASS_BLOCKS];
		tls_pass = b;
	}
	if (__builtin_expect(b != &pass_pool[PASS_BLOCKS], 1))
		__atomic_store_n(&b->c[why], __atomic_load_n(&b->c[why], __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED); /* owner-only writer */
	else
		__atomic_fetch_add(&b->c[why], 1, __ATOMIC_RELAXED);
}

/* The blocks of pass_pool handed out (as cache/dcache.c's stat_pool):
 * pass_pool[1..n) and, if *shared, pass_pool[PASS_BLOCKS]; the pool's
 * untouched pages are neither read nor cleared. */
static unsigned int pass_blocks_used(bool *shared)
{
	unsigned int used = __atomic_load_n(&pass_used, __ATOMIC_ACQUIRE);

	*shared = used > PASS_BLOCKS;
	return used < PASS_BLOCKS ? used : PASS_BLOCKS;
}

static void pass_block_add(uint64_t out[PRELOAD_PASS_N_], const struct pass_block *b)
{
	for (int k = 0; k < PRELOAD_PASS_N_; k++)
		out[k] += __atomic_load_n(&b->c[k], __ATOMIC_ACQUIRE);
}

static void pass_sum(uint64_t out[PRELOAD_PASS_N_])
{
	bool shared;
	unsigned int n = pass_blocks_used(&shared);

	memset(out, 0, sizeof(uint64_t) * PRELOAD_PASS_N_);
	pass_block_add(out, &pass_first);
	for (unsigned int i = 1; i < n; i++)
		pass_block_add(out, &pass_pool[i]);
	if (shared)
		pass_block_add(out, &pass_pool[PASS_BLOCKS]);
}

/* ---------------------------------------------------------------------- */
/* Samples of the cache's answers (stats.h, "Samples")
 *
 * A systematic sample: each thread counts the lookups that reach the cache
 * (tls_sample_n) and samples those at multiples of the process's interval
 * (sample_mask + 1, a power of two).  When the RCUWALK_SAMPLES slots are
 * full, every other sample is dropped (those at odd multiples) and the
 * interval doubles, so that the kept ones stay every interval-th lookup:
 * each stands for `interval` lookups.  A record writes and clears them.
 * sample_lock: one writer of the slots at a time (a try-lock: a sample is
 * skipped, never waited for: signal handlers and vfork children get here).
 */
struct sample {
	uint64_t ns;
	unsigned short len;
	unsigned char follow;
	char path[RCUWALK_SAMPLE_PATH];
};
static struct sample samples[RCUWALK_SAMPLES] DCACHE_COLD_BSS;
static unsigned int nsamples;
static unsigned long sample_mask; /* interval - 1 */
static int sample_lock;
static __thread unsigned long tls_sample_n __attribute__((tls_model("initial-exec")));
static uint64_t start_ns_total; /* preload_count_start_ns() */

int preload_sample_due(void)
{
	if (!stats_on)
		return 0;
	return (++tls_sample_n & __atomic_load_n(&sample_mask, __ATOMIC_RELAXED)) == 0;
}

void preload_sample_answer(const char *path, size_t len, int follow, uint64_t ns)
{
	struct sample *sp;
	size_t pre = 0;

	if (memchr(path, '\n', len) || len >= RCUWALK_SAMPLE_PATH)
		return;
	if (__atomic_exchange_n(&sample_lock, 1, __ATOMIC_ACQUIRE))
		return;
	if (nsamples == RCUWALK_SAMPLES) {
		/* Keep the even multiples of the interval, double it. */
		for (unsigned int i = 1, j = 0; i < RCUWALK_SAMPLES; i += 2, j++)
			samples[j] = samples[i];
		nsamples = RCUWALK_SAMPLES / 2;
		sample_mask = sample_mask * 2 + 1;
		if (tls_sample_n & sample_mask)
			goto out; /* an odd multiple of the new interval */
	}
	sp = &samples[nsamples];
	if (path[0] != '/') {
		long n = syscall(SYS_getcwd, sp->path, sizeof(sp->path));

		/* n counts the NUL; "(unreachable)" names are not absolute */
		if (n <= 1 || sp->path[0] != '/' || (size_t)n + len + 1 >= sizeof(sp->path))
			goto out;
		pre = (size_t)n - 1;
		if (pre > 1)
			sp->path[pre++] = '/';
		else
			pre = 1; /* the cwd is "/" */
	}
	memcpy(sp->path + pre, path, len);
	sp->len = (unsigned short)(pre + len);
	sp->follow = (unsigned char)!!follow;
	sp->ns = ns;
	nsamples++;
out:
	__atomic_store_n(&sample_lock, 0, __ATOMIC_RELEASE);
}

void preload_count_start_ns(uint64_t ns)
{
	__atomic_fetch_add(&start_ns_total, ns, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* Snapshots and records */

/* Monotonic counters, summed over threads.  The pass reasons are read
 * before the cache's counters: a wrapper counts PRELOAD_PASS_OPEN after the
 * cache counted the same call, so pass_open never exceeds passthrough. */
struct counters {
	uint64_t pass[PRELOAD_PASS_N_];
	struct dcache_stats dc;
	uint64_t events, watch_fail, overflows, mismatches, pass_watch, pass_fs, pass_attr, pass_racy;
	uint64_t pass_rent;
	uint64_t listings_shared, watches_shared, names_shared, files_shared, searches_shared, paths_shared;
	uint64_t fs_shared;
	uint64_t start_ns;
	uint64_t watches; /* a level: watches held now */
};

static void snapshot(struct counters *c)
{
	struct inval_stats is;

	pass_sum(c->pass); /* acquire loads: ordered before the cache's */
	dcache_stats_sum(&c->dc);
	c->pass_watch = c->dc.pass_watch;
	c->pass_fs = c->dc.pass_fs;
	c->pass_attr = c->dc.pass_attr;
	c->pass_racy = c->dc.pass_racy;
	c->pass_rent = c->dc.pass_rent;
	inval_stats_get(&is);
	c->events = is.events;
	c->listings_shared = is.listings_shared;
	c->watches_shared = is.watches_shared;
	c->names_shared = is.names_shared;
	c->files_shared = is.files_shared;
	c->searches_shared = is.searches_shared;
	c->paths_shared = is.paths_shared;
	c->fs_shared = is.fs_shared;
	c->watch_fail = is.watch_failures;
	c->overflows = is.overflows;
	c->watches = is.watches;
	c->mismatches = preload_verify_mismatches();
	c->start_ns = __atomic_load_n(&start_ns_total, __ATOMIC_RELAXED);
}

static char stats_path[PATH_MAX] DCACHE_COLD_BSS;
static struct counters base; /* what this image's earlier records counted */
static int record_lock;      /* one record at a time (exec racing _exit) */

static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static char *put_num(char *p, uint64_t v, int digits)
{
	for (int i = digits - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + digits;
}

static uint64_t delta(uint64_t now, uint64_t before)
{
	return now > before ? now - before : 0;
}

/* Append this image's samples to stats_path + ".samples" and clear them.
 * Called with record_lock held; async-signal-safe. */
static void write_samples(void)
{
	static char buf[RCUWALK_SAMPLES * (RCUWALK_SAMPLE_PATH + 128)] DCACHE_COLD_BSS;
	static char path[PATH_MAX + sizeof(RCUWALK_SAMPLES_SUFFIX)] DCACHE_COLD_BSS;
	char *p = buf, *q;
	unsigned long weight;
	int fd;

	if (__atomic_exchange_n(&sample_lock, 1, __ATOMIC_ACQUIRE))
		return; /* a signal handler's _exit() inside a sample: next time */
	weight = sample_mask + 1;
	for (unsigned int i = 0; i < nsamples; i++) {
		p = put_str(p, RCUWALK_SAMPLE_TAG " pid=");
		p = put_num(p, (uint64_t)syscall(SYS_getpid), RCUWALK_RECORD_PID_DIGITS);
		p = put_str(p, " weight=");
		p = put_num(p, weight, RCUWALK_RECORD_NUM_DIGITS);
		p = put_str(p, " ns=");
		p = put_num(p, samples[i].ns, RCUWALK_RECORD_NUM_DIGITS);
		p = put_str(p, samples[i].follow ? " follow=1 path=" : " follow=0 path=");
		memcpy(p, samples[i].path, samples[i].len);
		p += samples[i].len;
		*p++ = '\n';
	}
	if (p > buf) {
		q = put_str(path, stats_path);
		q = put_str(q, RCUWALK_SAMPLES_SUFFIX);
		*q = '\0';
		fd = preload_open_append(path, 0);
		if (fd >= 0) {
			(void)!syscall(SYS_write, fd, buf, (size_t)(p - buf));
			syscall(SYS_close, fd);
		}
	}
	nsamples = 0;
	sample_mask = 0;
	__atomic_store_n(&sample_lock, 0, __ATOMIC_RELEASE);
}

/* The record's field count, from its list (stats.h). */
#define RCUWALK_COUNT_(name) +1
enum { RECORD_FIELDS = 0 RCUWALK_RECORD_FIELDS(RCUWALK_COUNT_) };
#undef RCUWALK_COUNT_

void preload_write_record(const char *end)
{
	struct counters now;
	uint64_t v[RECORD_FIELDS];
	char rec[RCUWALK_RECORD_LEN + 1], *p = rec;
	int saved_errno = errno, n = 0, fd;
	uint64_t hits, neg, pass_cache_all, shim_pass, any = 0;

	if (!stats_on)
		return;
	/* Bounded: a signal handler calling _exit() may have interrupted this
	 * very thread inside a record.  Then counts may be reported twice;
	 * never a deadlock. */
	for (int spins = 0; spins < 100 && __atomic_exchange_n(&record_lock, 1, __ATOMIC_ACQUIRE);
	     spins++)
		(void)syscall(SYS_sched_yield);
	snapshot(&now);

	hits = delta(now.dc.hits, base.dc.hits);
	neg = delta(now.dc.neg_hits, base.dc.neg_hits);
	pass_cache_all = delta(now.dc.passthrough, base.dc.passthrough);
	{
		uint64_t open = delta(now.pass[PRELOAD_PASS_OPEN], base.pass[PRELOAD_PASS_OPEN]);
		uint64_t dirfd = delta(now.pass[PRELOAD_PASS_DIRFD], base.pass[PRELOAD_PASS_DIRFD]);
		uint64_t form = delta(now.pass[PRELOAD_PASS_FORM], base.pass[PRELOAD_PASS_FORM]);
		uint64_t wr = delta(now.pass[PRELOAD_PASS_WRITE], base.pass[PRELOAD_PASS_WRITE]);
		uint64_t early = delta(now.pass[PRELOAD_PASS_EARLY], base.pass[PRELOAD_PASS_EARLY]);
		uint64_t warmup = delta(now.pass[PRELOAD_PASS_WARMUP], base.pass[PRELOAD_PASS_WARMUP]);

		/* Of the cache's passes: watch-limited ones (counted by the
		 * cache), opens (by the wrappers, never watch-limited ones). */
		/* The cache's own reasons, in field order: watch limit, fs,
		 * attr, racy, then rent (the record's last field).  It counts
		 * a reason after the pass itself, so a concurrent snapshot may
		 * see a reason behind, never ahead; clamping each to what is
		 * left keeps the sum exact. */
		uint64_t why[5] = { delta(now.pass_watch, base.pass_watch),
				    delta(now.pass_fs, base.pass_fs),
				    delta(now.pass_attr, base.pass_attr),
				    delta(now.pass_racy, base.pass_racy),
				    delta(now.pass_rent, base.pass_rent) };
		uint64_t classified = 0;

		for (int k = 0; k < 5; k++) {
			if (why[k] > pass_cache_all - classified)
				why[k] = pass_cache_all - classified;
			classified += why[k];
		}
		if (open > pass_cache_all - classified)
			open = pass_cache_all - classified;
		shim_pass = dirfd + form + wr + early + warmup;
		/* Field order: RCUWALK_RECORD_FIELDS. */
		v[n++] = hits;
		v[n++] = neg;
		v[n++] = delta(now.dc.misses, base.dc.misses);
		v[n++] = pass_cache_all + shim_pass;
		v[n++] = delta(now.dc.invalidations, base.dc.invalidations);
		v[n++] = hits + neg;
		v[n++] = hits + neg + pass_cache_all + shim_pass;
		v[n++] = open;
		v[n++] = pass_cache_all - open - classified;
		v[n++] = dirfd;
		v[n++] = form;
		v[n++] = wr;
		v[n++] = early;
		/* Held now, less what an earlier record of this image (or of
		 * a vfork() child sharing it) reported: the records of an
		 * image add up to what it holds at its end. */
		v[n++] = delta(now.watches, base.watches);
		v[n++] = delta(now.watch_fail, base.watch_fail);
		v[n++] = delta(now.events, base.events);
		v[n++] = delta(now.overflows, base.overflows);
		v[n++] = delta(now.mismatches, base.mismatches);
		for (int k = 0; k < 4; k++)
			v[n++] = why[k];
		v[n++] = warmup;
		v[n++] = delta(now.listings_shared, base.listings_shared);
		v[n++] = delta(now.watches_shared, base.watches_shared);
		v[n++] = delta(now.names_shared, base.names_shared);
		v[n++] = delta(now.files_shared, base.files_shared);
		v[n++] = delta(now.searches_shared, base.searches_shared);
		v[n++] = delta(now.paths_shared, base.paths_shared);
		v[n++] = delta(now.dc.shared_path_hits, base.dc.shared_path_hits);
		v[n++] = delta(now.fs_shared, base.fs_shared);
		v[n++] = delta(now.dc.fill_ns, base.dc.fill_ns);
		v[n++] = delta(now.start_ns, base.start_ns);
		v[n++] = delta(now.dc.index_hits, base.dc.index_hits);
		v[n++] = delta(now.dc.prefix_hits, base.dc.prefix_hits);
		v[n++] = why[4];
	}
	/* An exec record only if this image's own calls counted something
	 * (lookups, misses); what the inotify thread counts meanwhile (events,
	 * invalidations) rides along with the next record. */
	any = v[2] | v[6];
	if (!strcmp(end, "exec") && !any)
		goto out;

	p = put_str(p, RCUWALK_RECORD_TAG " pid=");
	p = put_num(p, (uint64_t)syscall(SYS_getpid), RCUWALK_RECORD_PID_DIGITS);
	{
		static const char *const names[] = {
#define RCUWALK_NAME_(name) #name,
			RCUWALK_RECORD_FIELDS(RCUWALK_NAME_)
#undef RCUWALK_NAME_
		};
		/* n < RECORD_FIELDS (a value missing above) makes a record of
		 * another length: not written (below).  An extra value would
		 * have overrun v: the ASan build's tests, which write records,
		 * catch that. */
		for (int i = 0; i < n; i++) {
			*p++ = ' ';
			p = put_str(p, names[i]);
			*p++ = '=';
			p = put_num(p, v[i], RCUWALK_RECORD_NUM_DIGITS);
		}
	}
	p = put_str(p, " end=");
	for (int i = 0; i < RCUWALK_RECORD_END_LEN; i++)
		*p++ = end[i] ? end[i] : '_';
	*p++ = '\n';

	fd = preload_open_append(stats_path, 0);
	if (fd >= 0) {
		if ((size_t)(p - rec) == RCUWALK_RECORD_LEN)
			(void)!syscall(SYS_write, fd, rec, (size_t)(p - rec));
		syscall(SYS_close, fd);
	}
	write_samples();
	base = now;
out:
	__atomic_store_n(&record_lock, 0, __ATOMIC_RELEASE);
	errno = saved_errno;
}

/* The destructor's, in every process: with stats off it reads stats_on
 * (on the start-up data page) and returns, touching no other page. */
DCACHE_START_TEXT void preload_write_stats(void)
{
	if (stats_on)
		preload_write_record("dtor");
}

/* ---------------------------------------------------------------------- */
/* fork, exec, _exit */

/* In the child of fork(): counting starts again (the cache's own counters
 * are reset by dcache_fork_child(); inval's event counters are inherited,
 * so they become the base). */
static void stats_fork_child(void)
{
	struct inval_stats is;
	bool shared;
	unsigned int n = pass_blocks_used(&shared);

	if (n > 1)
		memset(&pass_pool[1], 0, (n - 1) * sizeof(pass_pool[0]));
	if (shared)
		memset(&pass_pool[PASS_BLOCKS], 0, sizeof(pass_pool[0]));
	memset(&pass_first, 0, sizeof(pass_first));
	memset(&base, 0, sizeof(base));
	nsamples = 0;
	sample_mask = 0;
	sample_lock = 0;
	start_ns_total = 0;
	preload_verify_fork_child();
	inval_stats_get(&is);
	base.events = is.events;
	base.watch_fail = is.watch_failures;
	base.overflows = is.overflows;
	base.listings_shared = is.listings_shared;
	base.watches_shared = is.watches_shared;
	base.names_shared = is.names_shared;
	base.files_shared = is.files_shared;
	base.searches_shared = is.searches_shared;
	base.paths_shared = is.paths_shared;
	base.fs_shared = is.fs_shared;
	base.watches = 0; /* inval_fork_child() drops the parent's watches */
	record_lock = 0;
}

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execvp_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);
typedef void exit_fn(int);
/* Resolved by the first fork() (preload_stats_resolve_exec), in the
 * warm-up of a shell: on the start-up data page, as REAL_DECL's (shim.h). */
static void *real_execve DCACHE_START_DATA, *real_execv DCACHE_START_DATA,
	*real_execvp DCACHE_START_DATA, *real_execvpe DCACHE_START_DATA,
	*real_fexecve DCACHE_START_DATA;
/* Resolved only with stats on (preload_stats_init); read by every _exit(),
 * a fork child's too: on the start-up data page, which every process has
 * touched, not on a .bss page a child would fault in to read a NULL. */
static void *real__exit DCACHE_START_DATA, *real__Exit DCACHE_START_DATA;

DCACHE_FORK_TEXT static void *resolve(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

void preload_stats_resolve_exec(void)
{
	static int done DCACHE_START_DATA;

	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return;
	static const char n_execve[] PRELOAD_NAME_TEXT = "execve", n_execv[] PRELOAD_NAME_TEXT = "execv",
			  n_execvp[] PRELOAD_NAME_TEXT = "execvp",
			  n_execvpe[] PRELOAD_NAME_TEXT = "execvpe",
			  n_fexecve[] PRELOAD_NAME_TEXT = "fexecve";

	resolve(&real_execve, n_execve);
	resolve(&real_execv, n_execv);
	resolve(&real_execvp, n_execvp);
	resolve(&real_execvpe, n_execvpe);
	resolve(&real_fexecve, n_fexecve);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

DCACHE_START_TEXT void preload_stats_init(const char *path)
{
	if (!path || !*path || strlen(path) >= sizeof(stats_path))
		return; /* (+ ".samples": write_samples() has room for both) */
	strcpy(stats_path, path);
	stats_on = 1;
	pthread_atfork(NULL, NULL, stats_fork_child);
	/* Resolved now, not in a vfork() child or a signal handler. */
	preload_stats_resolve_exec();
	resolve(&real__exit, "_exit");
	resolve(&real__Exit, "_Exit");
}

DCACHE_FORK_TEXT static void before_exec(void)
{
	if (stats_on)
		preload_write_record("exec");
	preload_fault_before_exec();
}

#define REAL_OR_ENOSYS(slot, name, type, ...)                         \
	({                                                            \
		type *f_ = (type *)resolve(&slot, name);              \
		f_ ? f_(__VA_ARGS__) : (errno = ENOSYS, -1);          \
	})

EXPORT DCACHE_FORK_TEXT int execve(const char *path, char *const argv[], char *const envp[])
{
	int r;

	before_exec();
	r = REAL_OR_ENOSYS(real_execve, "execve", execve_fn, path, argv, envp);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int execv(const char *path, char *const argv[])
{
	int r;

	before_exec();
	r = REAL_OR_ENOSYS(real_execv, "execv", execvp_fn, path, argv);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int execvp(const char *file, char *const argv[])
{
	int r;

	before_exec();
	r = REAL_OR_ENOSYS(real_execvp, "execvp", execvp_fn, file, argv);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	int r;

	before_exec();
	r = REAL_OR_ENOSYS(real_execvpe, "execvpe", execve_fn, file, argv, envp);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int fexecve(int fd, char *const argv[], char *const envp[])
{
	int r;

	before_exec();
	r = REAL_OR_ENOSYS(real_fexecve, "fexecve", fexecve_fn, fd, argv, envp);
	preload_fault_exec_failed();
	return r;
}

/* execl/execlp/execle: the argument list as an array, then the v form. */
/* glibc declares `arg` nonnull, yet execl(p, NULL) is a valid empty list:
 * launder it so that the test is kept. */
#define COLLECT_ARGS(arg, ap, argv)                                       \
	const char *first_ = arg;                                         \
	__asm__("" : "+r"(first_));                                       \
	size_t n_ = first_ ? 1 : 0;                                       \
	va_start(ap, arg);                                                \
	if (first_)                                                       \
		while (va_arg(ap, const char *))                          \
			n_++;                                             \
	va_end(ap);                                                       \
	const char *argv[n_ + 1];                                         \
	va_start(ap, arg);                                                \
	argv[0] = arg;                                                    \
	for (size_t i_ = 1; i_ <= n_; i_++)                               \
		argv[i_] = i_ < n_ ? va_arg(ap, const char *) : NULL;     \
	if (n_ == 0)                                                      \
		argv[0] = NULL

EXPORT DCACHE_FORK_TEXT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	before_exec();
	r = REAL_OR_ENOSYS(real_execv, "execv", execvp_fn, path, (char *const *)argv);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	before_exec();
	r = REAL_OR_ENOSYS(real_execvp, "execvp", execvp_fn, file, (char *const *)argv);
	preload_fault_exec_failed();
	return r;
}
EXPORT DCACHE_FORK_TEXT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;
	char *const *envp;

	COLLECT_ARGS(arg, ap, argv);
	if (n_ > 0)
		(void)va_arg(ap, const char *); /* the NULL that ends the list */
	envp = va_arg(ap, char *const *);
	va_end(ap);
	before_exec();
	r = REAL_OR_ENOSYS(real_execve, "execve", execve_fn, path, (char *const *)argv, envp);
	preload_fault_exec_failed();
	return r;
}

/* (DCACHE_FORK_TEXT, dcache.h: a fork child's exec or exit runs these.) */
/* _exit/_Exit: no dlsym here (signal handlers, vfork children call them):
 * the pointer resolved at init, else the system call itself, made inline
 * (preload_sys): libc's syscall() through our PLT was, in a fork child of a
 * process that had not called it yet (any process in its warm-up), a lazy
 * binding: ld.so's symbol lookup and a write to our GOT's page, ~5 page
 * faults in every such child. */
DCACHE_FORK_TEXT static __attribute__((noreturn)) void do_exit(void *real, int status)
{
	if (stats_on)
		preload_write_record("exit");
	if (real)
		((exit_fn *)real)(status);
	for (;;) {
		preload_sys(SYS_exit_group, status, 0, 0, 0);
		preload_sys(SYS_exit, status, 0, 0, 0);
	}
}
EXPORT DCACHE_FORK_TEXT void _exit(int status)
{
	do_exit(__atomic_load_n(&real__exit, __ATOMIC_ACQUIRE), status);
}
EXPORT DCACHE_FORK_TEXT void _Exit(int status)
{
	do_exit(__atomic_load_n(&real__Exit, __ATOMIC_ACQUIRE), status);
}
