/* SPDX-License-Identifier: MIT */
/*
 * shim.c - the lookup wrappers of librcuwalk.so (the stat, access, open,
 * readlink, realpath and opendir families), the warm-up, and the way into
 * the cache.  The wrappers that change files, guard the shim's fds and
 * follow the process (chdir, credentials, namespaces, wait, fork) are in
 * shim_process.c; what both use is in shim.h.
 *
 * Each lookup wrapper asks cache/ first and falls through to the real libc
 * function whenever the cache says DCACHE_PASS, the call has a form the
 * cache does not model (a real dirfd, AT_EMPTY_PATH, unknown flags, a
 * pointer the kernel would refuse), the shim is disabled or in its warm-up,
 * or the thread is already inside the shim (recursion through dlsym, or a
 * signal handler that interrupted us: preload_in_shim).
 *
 * Invariants:
 *  - preload_in_shim (initial-exec TLS) is non-zero while this thread runs
 *    cache or invalidate code; any wrapper entered then passes straight
 *    through.
 *  - errno is preserved on success and set exactly as the kernel would on an
 *    error answered from the cache.
 *  - The epochs bumped by shim_process.c (chdir, credentials, namespaces)
 *    are acted on by the next lookup (apply_epochs), inside the shim.
 *  - After the shim gave its inotify fd up (the program closed its number),
 *    lookups pass through until the cache has been emptied (try_cache).
 *  - Under fakeroot/pseudo (preload_attrs_faked) stat never answers from the
 *    cache and only name errors (ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG) are
 *    answered: ownership and modes are faked outside the kernel.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <urcu-bp.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <linux/nsfs.h>
#include <sys/vfs.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"
#include "shim.h"
#include "stats.h"


_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64 layout differs");

extern int preload_attrs_faked;
extern int preload_strict;
__thread int preload_in_shim __attribute__((tls_model("initial-exec")));
/* Bumped by wrappers that the warm-up runs too (chdir in a shell): on the
 * start-up data page. */
unsigned int preload_cwd_epoch DCACHE_START_DATA, preload_cred_epoch DCACHE_START_DATA,
	preload_ns_epoch DCACHE_START_DATA;
static unsigned int cwd_seen, cred_seen, ns_seen;
/* 1 if the real and effective ids are equal, 0 if not, -1 until a lookup
 * first needs to know (access_args_ok): read then, not at every start (4
 * system calls). */
static int ids_equal DCACHE_START_DATA = -1;

/* ---------------------------------------------------------------------- */
/* Real functions, resolved once with dlsym(RTLD_NEXT). */

void *preload_real_sym(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!p, 0)) {
		preload_in_shim++; /* dlsym may allocate, and an allocator may stat */
		p = dlsym(RTLD_NEXT, name);
		preload_in_shim--;
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

/*
 * The warm-up's clock (RCUWALK_WARMUP=Tus, preload.h).  count_unusable()
 * arms it for a lookup it passes through during the warm-up; the next real
 * call of this thread (CALL_REAL: the lookup's own, in every wrapper that
 * asks the cache) is timed, and its time added to preload_warm->spent.  The
 * call whose time reaches preload_warmup_ns plus the fork debt (below) ends
 * the warm-up (WARMUP -> LOAD, compare-and-swap).  A wrapper that returns
 * without a real call leaves the clock armed for the next one: a budget, not
 * a measurement, can live with that.  Async-signal-safe: a thread-local flag, the
 * clock (the TSC where the launcher gave its rate, else the vDSO's clock_gettime:
 * shim.h, preload_warm_ns1) and atomics.  Disarmed: one thread-local load per call.
 */
__thread int preload_warm_armed __attribute__((tls_model("initial-exec")));

/* The time since t0 (preload_warm_ns1()) as the warm-up counts it: at most a
 * quarter of the budget.  The clock is wall time, and a call preempted by
 * the scheduler (a loaded machine, make -j) is not a slow filesystem, nor a
 * fork() a slow one.  A shell's 20 start-up lookups take ~100 us; one of
 * them preempted for milliseconds spent the whole budget (then 300 us) and
 * started a cache that then made each of the shell's forks take fork()'s
 * full path.  Four slow calls still end it (FUSE, NFS). */
static unsigned long long warm_clamped_since(unsigned long long t0)
{
	unsigned long long now = preload_warm_ns1(), d = now > t0 ? now - t0 : 0;

	return d > preload_warmup_ns / 4 + 1 ? preload_warmup_ns / 4 + 1 : d;
}

__attribute__((noinline, cold)) void preload_warm_spent(unsigned long long t0)
{
	int w = PRELOAD_WARMUP, saved = errno;
	unsigned long long d = warm_clamped_since(t0);

	errno = saved; /* the real call's */
	if (!d)
		return;
	unsigned long long spent = __atomic_add_fetch(&preload_warm->spent, d, __ATOMIC_RELAXED),
			   due = preload_warmup_ns + __atomic_load_n(&preload_warm->debt, __ATOMIC_RELAXED);

	if (spent < due)
		return;
	/* T spent: the learned warm-up may keep it going (warm_learn.c), up
	 * to PRELOAD_WARM_EXTRA_NS more or its count (count_unusable). */
	if (__atomic_load_n(&preload_warm->until, __ATOMIC_RELAXED) ? spent < due + PRELOAD_WARM_EXTRA_NS
								      : preload_warm_extend())
		return;
	__atomic_compare_exchange_n(&preload_enabled, &w, PRELOAD_LOAD, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_RELAXED); /* seq_cst: preload_warm_forks, below */
}

/* ---------------------------------------------------------------------- */
/* The cache side */

/* A path copied from the program's memory (path_in), with its length; on
 * the wrapper's stack.  s has room for preload_copy_path's PATH_MAX + 8. */
struct kpath {
	size_t len;
	char s[PATH_MAX + 8];
};

/* The kernel's ids, raw (preload_sys): no libc binding and no page of
 * libc's for them.  They are the ids that matter here: the kernel's
 * access() checks with them and the cache learned its permission facts
 * with them (a library that fakes getuid(), libfakeroot, changes neither;
 * under it the cache serves no permission answer anyway).  Read at the
 * first access() that asks, and again after a credential change (the
 * wrappers' preload_cred_epoch): ids changed by a raw system call before
 * that first access() are seen, where a read at start missed them. */
DCACHE_START_TEXT static int preload_refresh_ids(void)
{
	int v = preload_sys(SYS_getuid, 0, 0, 0, 0) == preload_sys(SYS_geteuid, 0, 0, 0, 0) &&
		preload_sys(SYS_getgid, 0, 0, 0, 0) == preload_sys(SYS_getegid, 0, 0, 0, 0);

	__atomic_store_n(&ids_equal, v, __ATOMIC_RELAXED);
	return v;
}

static inline int ids_are_equal(void)
{
	int v = __atomic_load_n(&ids_equal, __ATOMIC_RELAXED);

	return __builtin_expect(v >= 0, 1) ? v : preload_refresh_ids();
}

/* Apply chdir / credential changes noted by wrappers.  Inside the shim. */
static __attribute__((noinline, cold)) void apply_epochs_slow(void)
{
	unsigned int e = __atomic_load_n(&preload_cwd_epoch, __ATOMIC_ACQUIRE);

	if (__builtin_expect(e != __atomic_load_n(&cwd_seen, __ATOMIC_RELAXED), 0)) {
		__atomic_store_n(&cwd_seen, e, __ATOMIC_RELAXED);
		dcache_cwd_changed();
	}
	e = __atomic_load_n(&preload_ns_epoch, __ATOMIC_ACQUIRE);
	if (__builtin_expect(e != __atomic_load_n(&ns_seen, __ATOMIC_RELAXED), 0)) {
		/* chroot, a namespace, a mount: "/" and what lies below it may
		 * be other directories now. */
		__atomic_store_n(&ns_seen, e, __ATOMIC_RELAXED);
		dcache_reset();
	}
	e = __atomic_load_n(&preload_cred_epoch, __ATOMIC_ACQUIRE);
	if (__builtin_expect(e != __atomic_load_n(&cred_seen, __ATOMIC_RELAXED), 0)) {
		/* Nothing learned under one identity is served to another. */
		__atomic_store_n(&cred_seen, e, __ATOMIC_RELAXED);
		preload_refresh_ids();
		inval_shared_off(); /* before the cache empties: nothing refills it */
		dcache_invalidate_all();
	}
}

/* The lookup's check of the three epochs, inline; what changed is acted on
 * out of line (apply_epochs_slow re-reads each epoch with acquire). */
static inline void apply_epochs(void)
{
	unsigned int moved = (__atomic_load_n(&preload_cwd_epoch, __ATOMIC_RELAXED) ^
			      __atomic_load_n(&cwd_seen, __ATOMIC_RELAXED)) |
			     (__atomic_load_n(&preload_ns_epoch, __ATOMIC_RELAXED) ^
			      __atomic_load_n(&ns_seen, __ATOMIC_RELAXED)) |
			     (__atomic_load_n(&preload_cred_epoch, __ATOMIC_RELAXED) ^
			      __atomic_load_n(&cred_seen, __ATOMIC_RELAXED));

	if (__builtin_expect(moved != 0, 0))
		apply_epochs_slow();
}

int preload_load_urcu(void)
{
	int saved = errno, ok;

	preload_in_shim++;
	ok = dcache_urcu_load();
	preload_in_shim--;
	errno = saved;
	return ok;
}

/*
 * fork() during the warm-up (shim_process.c, fork): nothing of the cache
 * exists yet, so fork() takes none of its locks and the child fixes nothing
 * up.  What keeps that true while fork() runs: preload_warm_forks counts the
 * fork() calls between their check of PRELOAD_WARMUP and their return, and
 * the cache does not start while it is non-zero.  fork() adds, then loads
 * the state; the warm-up's end stores LOAD (compare-and-swap), and
 * start_cache() then loads preload_warm_forks: all seq_cst, so either
 * fork() sees LOAD (and takes the full path) or start_cache() sees the fork
 * in flight and passes that lookup through (never waits: it may run in a
 * signal handler of the forking thread).  A fork() child, single-threaded,
 * starts from 0.  liburcu loaded during the warm-up (unshare's or setns's
 * quiesce reaches it, in a process the kernel requires to be
 * single-threaded for a user namespace) sends fork() the full path too.
 */
struct preload_fork_gate preload_fork_gate DCACHE_COLD_BSS;

/*
 * Why a page of its own, wiped in children: a fork() during the warm-up
 * wrote the count after the system call in both processes, and each write
 * was a copy-on-write fault of the page it lay on (~2-4 us each on a small
 * VM), in every fork+exec of a shell loop: the child's reset, the parent's
 * decrement.  fork() copies nothing of a MADV_WIPEONFORK mapping (the child
 * maps zeros there), so it does not write-protect the parent's page either:
 * neither write faults.  The flag is inherited (on the start-up data page):
 * the child's mapping keeps MADV_WIPEONFORK.
 */
static int fork_gate_wiped DCACHE_START_DATA; /* 1 done, -1 refused */
static struct preload_warm_counters warm_start DCACHE_START_DATA;
struct preload_warm_counters *preload_warm DCACHE_START_DATA = &warm_start;

int preload_fork_gate_wiped(void)
{
	int w = __atomic_load_n(&fork_gate_wiped, __ATOMIC_RELAXED);

#ifdef MADV_WIPEONFORK /* Linux 4.14 */
	if (!w) {
		w = preload_sys(SYS_madvise, (long)&preload_fork_gate, sizeof(preload_fork_gate),
				MADV_WIPEONFORK, 0) == 0 ? 1 : -1;
		__atomic_store_n(&fork_gate_wiped, w, __ATOMIC_RELAXED);
	}
#endif
	if (w > 0 && preload_warm == &warm_start) {
		/* Before the fork: the counters go to the gate's page (a
		 * relaxed copy: a count lost to a racing thread only moves
		 * the warm-up's end). */
		preload_fork_gate.warm = warm_start;
		__atomic_store_n(&preload_warm, &preload_fork_gate.warm, __ATOMIC_RELAXED);
	}
	return w > 0;
}

/*
 * The fork debt.  A process whose cache runs pays for it at every fork():
 * fork() copies its larger address space (liburcu's mappings, the session's,
 * the cache's own) and the child resets the cache's state; with the warm-up
 * over, a fork+_exit costs +20 us in the parent and +20 us in the child on a
 * 2-vCPU VM (examples/fork-cost.sh: fork() 58 us against 43 us in the
 * warm-up, 38 us with an empty library).  A shell that looks up a few names
 * between forks (a configure script: ~3,350 forks of one shell) spends
 * more that way than the cache can save it.  So each fork() of the warm-up
 * adds its own duration in the parent (about the same again, and it scales
 * with the machine's cost of copying an address space), at most a quarter
 * of the budget (a preempted fork() is not a slow one), to the time that
 * the warm-up's real calls must spend before the cache starts
 * (warm_clamped_since(), above).  A process
 * that looks names up slowly enough (FUSE, NFS: tens of us a lookup) still
 * starts it; one that forks more than it looks up stays in its warm-up,
 * where its forks are plain.  Only the time budget has a debt: a count
 * (RCUWALK_WARMUP=N) is the user's own.  posix_spawn() and vfork() copy no
 * address space and add nothing.
 */
void preload_warm_fork_debt(unsigned long long t0)
{
	__atomic_add_fetch(&preload_warm->debt, warm_clamped_since(t0), __ATOMIC_RELAXED);
}

/*
 * A fork() child of a process past its warm-up starts with an empty cache
 * (dcache_fork_child, inval_fork_child): it would restart it at its first
 * lookup - a table, a root, the session attached again, every directory it
 * walks filled again - and a shell's child makes a few lookups (a PATH
 * search, a `test -f`) before its exec: ~21 page faults more than with an
 * empty library (perf record -e page-faults of GNU hello's ./configure:
 * ~80,000 over its 3,706 forks), for a few answers.  So it
 * warms up again as an exec'd process does: its lookups pass through until
 * the warm-up's count or time is spent, then the cache starts.  Called in
 * the child by fork()'s full path, single-threaded; the state is on the
 * start-up data page, written once here.  The counters are where
 * preload_warm points: on the gate's wiped page if the parent forked during
 * its own warm-up (then they are 0 here and not written), else on the
 * start-up data page.
 */
DCACHE_FORK_TEXT void preload_fork_child_rewarm(void)
{
	int s = __atomic_load_n(&preload_enabled, __ATOMIC_RELAXED);

	if ((s != PRELOAD_ON && s != PRELOAD_LOAD) || (!preload_warmup && !preload_warmup_ns))
		return; /* off for good, already warming up, or no warm-up asked */
	struct preload_warm_counters *c = preload_warm;

	if (c->seen || c->spent || c->debt || c->key || c->until)
		*c = (struct preload_warm_counters){ 0 };
	preload_warm_armed = 0;
	__atomic_store_n(&preload_enabled, PRELOAD_WARMUP, __ATOMIC_RELAXED);
}

/* PRELOAD_LOAD: load liburcu, then ON (or OFF, for good).  The lookup that
 * found LOAD then asks the cache, as if it had been ON. */
static __attribute__((noinline, cold)) int start_cache(void)
{
	int w = PRELOAD_LOAD;

	unsigned long long t0;

	if (__atomic_load_n(&preload_warm_forks, __ATOMIC_SEQ_CST) != 0)
		return 0; /* a fork() of the warm-up is in flight: later */
	t0 = preload_mono_ns1();
	__atomic_compare_exchange_n(&preload_enabled, &w,
				    preload_load_urcu() ? PRELOAD_ON : PRELOAD_OFF, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	preload_count_start_ns(preload_mono_ns1() - t0); /* the records' start_ns */
	return __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) == PRELOAD_ON;
}

static inline int cache_usable(void)
{
	int s = __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE);

	if (__builtin_expect(s == PRELOAD_ON, 1))
		return !preload_in_shim;
	return s == PRELOAD_LOAD && !preload_in_shim && start_cache();
}

int preload_cache_usable(void)
{
	return cache_usable();
}


/* A lookup that cache_usable() turned away: count why.  During the warm-up
 * it is one of the N, and the N-th ends it: the next lookup of any thread
 * uses the cache (a compare-and-swap, so that a give-up to PRELOAD_OFF in
 * between stays); with a time budget, it arms the warm-up's clock for its
 * real call (above).  Async-signal-safe: atomics only. */
static void count_unusable(void)
{
	int w = PRELOAD_WARMUP;

	if (preload_in_shim)
		return; /* the shim's own calls (liburcu, dlsym) */
	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) != PRELOAD_WARMUP) {
		preload_count_pass(PRELOAD_PASS_EARLY);
		return;
	}
	preload_count_pass(PRELOAD_PASS_WARMUP);
	if (preload_warmup_ns)
		preload_warm_armed = 1;
	unsigned long seen = __atomic_add_fetch(&preload_warm->seen, 1, __ATOMIC_RELAXED),
		      until = __atomic_load_n(&preload_warm->until, __ATOMIC_RELAXED);

	if (preload_warmup ? seen >= preload_warmup : until && seen >= until)
		__atomic_compare_exchange_n(&preload_enabled, &w, PRELOAD_LOAD, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED); /* seq_cst: preload_warm_forks */
}

/* ---------------------------------------------------------------------- */
/* Verify mode (verify.c): the cache's answer, then the kernel's. */

/* try_cache() flag of the open family (not the cache's): a cached error is
 * checked by making the real open (verify_open_result). */
#define Q_SHIM_OPEN 0x40000000u
/* The error the cache gave for this thread's open in verify mode, checked
 * against the real call's result right after it. */
static __thread int verify_open_err __attribute__((tls_model("initial-exec")));

static void q_call_name(char *buf, size_t size, unsigned int q, int amode)
{
	const char *nf = (q & DCACHE_Q_FOLLOW) ? "" : "AT_SYMLINK_NOFOLLOW";

	if (q & DCACHE_Q_STAT)
		snprintf(buf, size, "%s", (q & DCACHE_Q_FOLLOW) ? "stat" : "lstat");
	else if (q & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS))
		snprintf(buf, size, "faccessat(mode=%d%s%s%s)", amode,
			 (q & DCACHE_Q_EACCESS) ? ",AT_EACCESS" : "", *nf ? "," : "", nf);
	else
		snprintf(buf, size, "%s(errors only)", (q & DCACHE_Q_FOLLOW) ? "stat" : "lstat");
}

/* The cache answered r (0 or an errno; *cst for a stat): ask the kernel the
 * same question, log a difference, and answer the kernel's (try_cache's
 * contract).  Inside preload_in_shim; errno is `saved` on entry. */
static int verify_lookup(const char *path, unsigned int q, int amode, struct stat *st,
			 const struct stat *cst, int r, int saved, int *ret)
{
	struct stat kst;
	long kr;
	int kerr = 0, same;
	char call[64], a[512], b[512];

	if (q & Q_SHIM_OPEN) {
		verify_open_err = r; /* the real open answers; compared after it */
		errno = saved;
		return 0;
	}
	if (q & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS)) {
		int fl = ((q & DCACHE_Q_EACCESS) ? AT_EACCESS : 0) |
			 ((q & DCACHE_Q_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW);

		kr = syscall(SYS_faccessat2, AT_FDCWD, path, amode, fl);
		if (kr != 0 && errno == ENOSYS && fl == 0)
			kr = syscall(SYS_faccessat, AT_FDCWD, path, amode);
		kerr = kr != 0 ? errno : 0;
		same = (kr == 0) == (r == 0) && (kr == 0 || kerr == r);
		if (!same) {
			q_call_name(call, sizeof(call), q, amode);
			preload_fmt_ret(a, sizeof(a), r ? -1 : 0, r);
			preload_fmt_ret(b, sizeof(b), kr, kerr);
			preload_verify_mismatch(call, path, a, b);
		}
	} else {
		kr = syscall(SYS_newfstatat, AT_FDCWD, path, &kst,
			     (q & DCACHE_Q_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW);
		kerr = kr != 0 ? errno : 0;
		same = (kr == 0) == (r == 0) &&
		       (kr == 0 ? !(q & DCACHE_Q_STAT) || preload_stat_same(cst, &kst) : kerr == r);
		if (!same) {
			q_call_name(call, sizeof(call), q, amode);
			if (q & DCACHE_Q_STAT)
				preload_fmt_stat(a, sizeof(a), r ? -1 : 0, r, cst);
			else
				preload_fmt_ret(a, sizeof(a), r ? -1 : 0, r);
			preload_fmt_stat(b, sizeof(b), (int)kr, kerr, &kst);
			preload_verify_mismatch(call, path, a, b);
		}
		if (kr == 0 && !(q & DCACHE_Q_STAT)) {
			errno = saved;
			return 0; /* errors only (fakeroot): the next library answers */
		}
		if (kr == 0)
			*st = kst;
	}
	if (kr == 0) {
		errno = saved;
		*ret = 0;
	} else {
		errno = kerr;
		*ret = -1;
	}
	return 1;
}

/* After the real open/opendir of a path whose failure the cache answered in
 * verify mode: compare.  errno kept. */
static void verify_open_result(const char *call, const char *path, int ok)
{
	int r = verify_open_err, err = errno;
	char a[128], b[128];

	if (__builtin_expect(!r, 1))
		return;
	verify_open_err = 0;
	if (ok || err != r) {
		preload_fmt_ret(a, sizeof(a), -1, r);
		preload_fmt_ret(b, sizeof(b), ok ? 0 : -1, err);
		preload_verify_mismatch(call, path, a, b);
	}
	errno = err;
}

/* Test builds: corrupt the cache's answer (verify.c, RCUWALK_TEST_CORRUPT). */
static void test_corrupt(unsigned int q, int *r, struct stat *st)
{
	unsigned int k = preload_test_corrupt();

	if (__builtin_expect(!k, 1))
		return;
	if ((k & PRELOAD_CORRUPT_SIZE) && *r == 0 && (q & DCACHE_Q_STAT) && st)
		st->st_size += 1;
	if ((k & PRELOAD_CORRUPT_ERRNO) && (*r == ENOENT || *r == ENOTDIR))
		*r = *r == ENOENT ? ENOTDIR : ENOENT;
	if ((k & PRELOAD_CORRUPT_ACCESS) && *r == 0 && (q & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS)))
		*r = EACCES;
}

/* Ask the cache.  Returns 1 with *ret (and errno) set if it answered. */
static int try_cache(const struct kpath *kp, unsigned int q, int amode, struct stat *st, int *ret)
{
	const char *path = kp->s;
	int saved = errno, r, sample;
	unsigned long long t0 = 0;
	struct stat cst;

	if (!cache_usable()) {
		count_unusable();
		return 0;
	}
	if (dcache_idle_pass())
		return 0; /* the cache finds next to nothing cached: the kernel */
	/* Here, once the cache is in use: the warm-up pays nothing for it. */
	if ((q & DCACHE_Q_ACCESS) && !preload_access_as_lookup()) {
		preload_count_pass(PRELOAD_PASS_FORM);
		return 0;
	}
	/* --stats: one lookup in many is timed and its name kept (stats.h,
	 * "Samples"); the others pay one thread-local increment. */
	sample = preload_sample_due();
	if (__builtin_expect(sample, 0))
		t0 = preload_mono_ns1();
	preload_in_shim++;
	apply_epochs();
	inval_sync();
	if (__builtin_expect(preload_strict, 0))
		inval_drain(); /* events or mounts pending: applied first */
	if (__builtin_expect(inval_recovering(), 0))
		inval_recover(); /* the inotify fd was given up: start afresh */
	if (__builtin_expect(inval_behind(), 0)) {
		/* Events queued 20 ms ago are still being applied: the
		 * kernel answers (inval.c, "Behind"). */
		dcache_stat_inc(DCACHE_STAT_PASS);
		preload_in_shim--;
		errno = saved;
		return 0;
	}
	r = dcache_lookup_len(path, kp->len, q & ~Q_SHIM_OPEN, amode, preload_verify && st ? &cst : st);
	/* A lookup that filled the cache first is sampled with ns 0: its
	 * time is mostly the fill's, counted in fill_ns. */
	if (__builtin_expect(sample, 0) && r != DCACHE_PASS && !preload_verify)
		preload_sample_answer(path, kp->len, !!(q & DCACHE_Q_FOLLOW),
				      dcache_last_lookup_filled() ? 0 : preload_mono_ns1() - t0);
	preload_in_shim--;
	errno = saved;
	if (r == DCACHE_PASS) {
		/* An open the cache passed for a reason of its own (watch
		 * limit, uncached filesystem...) is counted there, not here. */
		if ((q & DCACHE_Q_NEGONLY) && !dcache_last_pass_classified())
			preload_count_pass(PRELOAD_PASS_OPEN);
		return 0;
	}
	if (__builtin_expect(preload_attrs_faked, 0) && r > 0 && r != ENOENT && r != ENOTDIR &&
	    r != ELOOP && r != ENAMETOOLONG)
		return 0; /* permission answers may be faked too: the next library's */
	test_corrupt(q, &r, preload_verify && st ? &cst : st);
	if (__builtin_expect(preload_verify, 0)) {
		preload_in_shim++;
		r = verify_lookup(path, q, amode, st, &cst, r, saved, ret);
		preload_in_shim--;
		return r;
	}
	if (r == 0) {
		*ret = 0;
	} else {
		errno = r;
		*ret = -1;
	}
	return 1;
}

/* Enter the cache for one call: 1 if usable (then leave with cache_leave()). */
static inline int cache_enter(void)
{
	if (!cache_usable()) {
		count_unusable();
		return 0;
	}
	preload_in_shim++;
	apply_epochs();
	inval_sync();
	if (__builtin_expect(preload_strict, 0))
		inval_drain();
	return 1;
}

static inline void cache_leave(void) { preload_in_shim--; }

/*
 * The program's path, copied for the cache (fault.c): the cache and every
 * check here read the copy, never the program's memory, so an unreadable
 * path is the kernel's to refuse (EFAULT) and a path another thread changes
 * meanwhile is read once, as the kernel's getname() reads it.
 *   PATH_OK     copied; AT_FDCWD-relative or absolute: the cache models it;
 *   PATH_DIRFD  relative to a real dirfd: passes through;
 *   PATH_FORM   NULL, PATH_MAX or longer: passes through (the kernel's
 *               EFAULT or ENAMETOOLONG);
 *   PATH_FAULT  reading it faulted: passes through (the kernel's EFAULT);
 *   PATH_EARLY  before preload_init() (or RCUWALK_DISABLE): nothing read.
 * The copy goes to a struct kpath on the wrapper's stack, with its length.
 */
enum { PATH_OK, PATH_DIRFD, PATH_FORM, PATH_FAULT, PATH_EARLY };

/* Shared by path_in() and path_class(): PATH_EARLY or PATH_FORM for a path
 * of which nothing may be read, else -1; then the verdict on what reading
 * it gave (n: preload_copy_path()'s answer; first: its first byte). */
static inline int path_unread(const char *path)
{
	if (__builtin_expect(!__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE), 0))
		return PATH_EARLY;
	return bad_ptr(path) ? PATH_FORM : -1;
}

static inline int path_verdict(int dirfd, long n, char first)
{
	if (__builtin_expect(n < 0, 0))
		return PATH_FAULT;
	if (n >= PATH_MAX)
		return PATH_FORM;
	return dirfd == AT_FDCWD || first == '/' ? PATH_OK : PATH_DIRFD;
}

static inline int path_in(int dirfd, const char *path, struct kpath *kp)
{
	int why = path_unread(path);
	long n;

	if (why >= 0)
		return why;
	n = preload_copy_path(kp->s, path);
	why = path_verdict(dirfd, n, n > 0 ? kp->s[0] : '\0');
	kp->len = why <= PATH_DIRFD ? (size_t)n : 0;
	return why;
}

/*
 * Whether the program's path can be read up to its NUL, without a copy of
 * it: its length, PATH_MAX if it has none in its first PATH_MAX bytes, -1 if
 * reading it faulted, as preload_copy_path() answers; *first (if not NULL)
 * gets its first byte.  Read through a small buffer, a 4 KiB page at most at
 * a time: a read never reaches a page past the one holding the NUL, where
 * the kernel's own read would not fault.
 */
static long path_probe(const char *path, char *first)
{
	char chunk[256];
	size_t off = 0, n;
	const char *z;

	while (off < PATH_MAX) {
		n = 4096 - (((uintptr_t)path + off) & 4095);
		if (n > sizeof(chunk))
			n = sizeof(chunk);
		if (n > PATH_MAX - off)
			n = PATH_MAX - off;
		if (preload_copy_bytes(chunk, path + off, n) != 0)
			return -1;
		if (first && !off)
			*first = chunk[0];
		z = memchr(chunk, 0, n);
		if (z)
			return (long)(off + (size_t)(z - chunk));
		off += n;
	}
	return PATH_MAX;
}

/* path_in()'s answer, without the copy. */
PRELOAD_WARM_TEXT static __attribute__((noinline)) int path_class(int dirfd, const char *path)
{
	int why = path_unread(path);
	char first = 0;
	long n;

	if (why >= 0)
		return why;
	n = path_probe(path, &first);
	return path_verdict(dirfd, n, first);
}

/* Whether the cache may answer this thread's lookup now, or start to:
 * path_passes() and realpath(), which takes its own light path. */
static inline int cache_may_answer(void)
{
	int s = __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE);

	return (s == PRELOAD_ON || s == PRELOAD_LOAD) && !preload_in_shim;
}

/*
 * A lookup while the cache cannot answer: the warm-up (most processes end
 * in it), the cache off, the shim's own calls.  -1 if the cache is on or due
 * to start: the caller takes its cached path (a noinline function with the
 * struct kpath).  Else path_in()'s answer without the copy, and the caller
 * counts the pass as its cached path would have and makes the real call
 * from its own small frame.  Each wrapper's cached path holds 4-16 KiB of
 * stack (the path's copy, the answer's, verify mode's buffers), and every
 * call made from it writes below them: a warm-up's stat() wrote 6 KiB below
 * its caller, readlink() 16 KiB, open() 9 KiB at its first call (dlsym):
 * pages of stack the program itself never reaches are page faults.
 */
static inline int path_passes(int dirfd, const char *path)
{
	return __builtin_expect(cache_may_answer(), 1) ? -1 : path_class(dirfd, path);
}

/* Statistics: why a lookup the cache never saw passes through (`why` from
 * path_in(); PATH_OK here means another argument had a form the cache does
 * not model). */
static void count_form_pass(int why)
{
	if (why == PATH_EARLY)
		count_unusable();
	else
		preload_count_pass(why == PATH_DIRFD ? PRELOAD_PASS_DIRFD : PRELOAD_PASS_FORM);
}

/* The fds opened for writing (shim.h). */
unsigned long preload_writable_low[FD_LOW / (8 * sizeof(unsigned long))] DCACHE_START_DATA;
unsigned long preload_writable_fds[FD_BITS / (8 * sizeof(unsigned long))] DCACHE_COLD_BSS;

/* ---------------------------------------------------------------------- */
/* stat family */

/*
 * A call the cache does not answer goes to the next definition of the SAME
 * entry point (stat to stat, __fxstatat to __fxstatat), never to another:
 * a library behind us in LD_PRELOAD may implement one with another (for
 * libfakeroot, fstatat calls __fxstatat through the PLT, which binds to ours
 * again: funnelling everything to the next fstatat looped forever).
 */
static inline int stat_args_ok(int flags, const struct stat *buf)
{
	return !(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) && !bad_ptr(buf);
}

static __attribute__((noinline)) int stat_cached_on(int dirfd, const char *path,
						    struct stat *buf, int flags, int *ret)
{
	struct kpath kp;
	struct stat kst, *out = &kst;
	int why = path_in(dirfd, path, &kp);

	/* Under fakeroot/pseudo only errors come from the cache (NEGONLY).
	 * The answer is made in kst and copied out as the kernel's cp_new_stat
	 * does, after the lookup: an unwritable buf is the kernel's EFAULT to
	 * give, and only for a lookup that succeeds.  A buf in the live stack
	 * above this frame is filled directly (preload_in_live_stack). */
	if (why == PATH_OK && stat_args_ok(flags, buf)) {
		if (!preload_verify && preload_in_live_stack(buf, sizeof(*buf), &kp))
			out = buf;
		if (!try_cache(&kp,
			       (preload_attrs_faked ? DCACHE_Q_NEGONLY : DCACHE_Q_STAT) |
				       ((flags & AT_SYMLINK_NOFOLLOW) ? 0 : DCACHE_Q_FOLLOW),
			       0, out, ret))
			return 0;
		return *ret != 0 || out == buf || preload_copy_bytes(buf, &kst, sizeof(kst)) == 0;
	}
	count_form_pass(why);
	return 0;
}

/* 1 with *ret if the cache answered; 0: the real call, the caller's. */
static inline int stat_cached(int dirfd, const char *path, struct stat *buf, int flags, int *ret)
{
	int why = path_passes(dirfd, path);

	if (why < 0)
		return stat_cached_on(dirfd, path, buf, flags, ret);
	if (why == PATH_OK && stat_args_ok(flags, buf))
		count_unusable();
	else
		count_form_pass(why);
	return 0;
}

REAL_DECL(stat);
REAL_DECL(stat64);
REAL_DECL(lstat);
REAL_DECL(lstat64);
REAL_DECL(fstatat);
REAL_DECL(fstatat64);
WARM_EXPORT int stat(const char *path, struct stat *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, buf, 0, &ret) ? ret : CALL_REAL(stat, path, buf);
}
WARM_EXPORT int stat64(const char *path, struct stat64 *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, (struct stat *)buf, 0, &ret) ? ret
									: CALL_REAL(stat64, path, buf);
}
WARM_EXPORT int lstat(const char *path, struct stat *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW, &ret) ? ret
									  : CALL_REAL(lstat, path, buf);
}
WARM_EXPORT int lstat64(const char *path, struct stat64 *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(lstat64, path, buf);
}
WARM_EXPORT int fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
	int ret;

	dirfd = preload_hide_fd(dirfd);
	return stat_cached(dirfd, path, buf, flags, &ret) ? ret
							  : CALL_REAL(fstatat, dirfd, path, buf, flags);
}
WARM_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *buf, int flags)
{
	int ret;

	dirfd = preload_hide_fd(dirfd);
	return stat_cached(dirfd, path, (struct stat *)buf, flags, &ret)
		       ? ret
		       : CALL_REAL(fstatat64, dirfd, path, buf, flags);
}

/* Pre-2.33 binaries (Debian's make) call these.  _STAT_VER_LINUX is 1 on
 * x86_64, where struct stat is the kernel's: other versions are the next
 * definition's to answer (EINVAL from glibc). */
#define STAT_VER 1
int __xstat(int ver, const char *path, struct stat *buf);
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags);
REAL_DECL(__xstat);
REAL_DECL(__xstat64);
REAL_DECL(__lxstat);
REAL_DECL(__lxstat64);
REAL_DECL(__fxstatat);
REAL_DECL(__fxstatat64);
WARM_EXPORT int __xstat(int ver, const char *path, struct stat *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, buf, 0, &ret)
		       ? ret
		       : CALL_REAL(__xstat, ver, path, buf);
}
WARM_EXPORT int __xstat64(int ver, const char *path, struct stat64 *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, (struct stat *)buf, 0, &ret)
		       ? ret
		       : CALL_REAL(__xstat64, ver, path, buf);
}
WARM_EXPORT int __lxstat(int ver, const char *path, struct stat *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(__lxstat, ver, path, buf);
}
WARM_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *buf)
{
	int ret;

	return ver == STAT_VER &&
			       stat_cached(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(__lxstat64, ver, path, buf);
}
WARM_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags)
{
	int ret;

	dirfd = preload_hide_fd(dirfd);
	return ver == STAT_VER && stat_cached(dirfd, path, buf, flags, &ret)
		       ? ret
		       : CALL_REAL(__fxstatat, ver, dirfd, path, buf, flags);
}
WARM_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags)
{
	int ret;

	dirfd = preload_hide_fd(dirfd);
	return ver == STAT_VER && stat_cached(dirfd, path, (struct stat *)buf, flags, &ret)
		       ? ret
		       : CALL_REAL(__fxstatat64, ver, dirfd, path, buf, flags);
}

/*
 * statx: answered from the kernel's own statx answer for the same object and
 * the same request mask (its stx_mask, btime and mount id depend on the
 * request), cached beside the lstat attributes.  Requests for anything but
 * the basic stats, btime and the mount ids (DIOALIGN and later fields whose
 * changes send no inotify event), other flags (AT_STATX_FORCE_SYNC/DONT_SYNC,
 * AT_EMPTY_PATH) and a real dirfd pass through.
 */
#define STATX_CACHED_MASK (STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID | 0x4000U /* MNT_ID_UNIQUE */)
REAL_DECL(statx);
/* The cache's answer: 1 with *ret (and errno) set, 0 to pass through. */
static __attribute__((noinline)) int statx_cached(int dirfd, const char *path, int flags,
						  unsigned int mask, struct statx *buf, int *ret)
{
	int saved = errno, r;
	struct kpath kp;

	/* As stat_cached(): the answer is made in kbuf, then copied out. */
	if (path_in(dirfd, path, &kp) == PATH_OK && !bad_ptr(buf) && cache_enter()) {
		struct statx cbuf, kbuf, *out = &kbuf;

		if (!preload_verify && preload_in_live_stack(buf, sizeof(*buf), &kp))
			out = buf;
		r = dcache_statx(kp.s, !(flags & AT_SYMLINK_NOFOLLOW), mask,
				 preload_verify ? &cbuf : out);
		cache_leave();
		if (r == 0 && (preload_test_corrupt() & PRELOAD_CORRUPT_SIZE))
			(preload_verify ? &cbuf : out)->stx_size += 1;
		if (r >= 0 && preload_verify) {
			long kr = syscall(SYS_statx, dirfd, kp.s, flags, mask, &kbuf);
			int kerr = kr != 0 ? errno : 0;
			char a[512], b[512], call[48];

			if ((kr == 0) != (r == 0) || (kr == 0 ? !preload_statx_same(&cbuf, &kbuf) : kerr != r)) {
				snprintf(call, sizeof(call), "statx(mask=0x%x,flags=0x%x)", mask,
					 (unsigned int)flags);
				preload_fmt_statx(a, sizeof(a), r ? -1 : 0, r, &cbuf);
				preload_fmt_statx(b, sizeof(b), (int)kr, kerr, &kbuf);
				preload_verify_mismatch(call, kp.s, a, b);
			}
			r = kr == 0 ? 0 : kerr;
		}
		if (r == 0 && (out == buf || preload_copy_bytes(buf, &kbuf, sizeof(kbuf)) == 0)) {
			errno = saved;
			*ret = 0;
			return 1;
		}
		if (r > 0) {
			errno = r;
			*ret = -1;
			return 1;
		}
		errno = saved;
	}
	return 0;
}

WARM_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
	int why, ret;

	dirfd = preload_hide_fd(dirfd); /* AT_EMPTY_PATH on one of ours: EBADF */
	if (!(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) && !(mask & ~STATX_CACHED_MASK)) {
		why = path_passes(dirfd, path);
		if (why < 0) {
			if (statx_cached(dirfd, path, flags, mask, buf, &ret))
				return ret;
		} else if (why == PATH_OK && !bad_ptr(buf)) {
			count_unusable();
		}
	}
	return CALL_REAL(statx, dirfd, path, flags, mask, buf);
}

/* ---------------------------------------------------------------------- */
/* access family */

REAL_DECL(faccessat);

/* access() checks with the real ids and, for a non-root user, no
 * capabilities; the cache's permission facts were learned with the
 * process's own credentials: only where those are the same (ids here,
 * capabilities in try_cache: creds.c). */
static inline int access_args_ok(int mode, int flags)
{
	return !(mode & ~7) && !(flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW)) &&
	       ((flags & AT_EACCESS) || ids_are_equal());
}

static __attribute__((noinline)) int faccessat_cached(int dirfd, const char *path, int mode,
						      int flags, int *ret)
{
	struct kpath kp;
	int why = path_in(dirfd, path, &kp);

	if (why == PATH_OK && access_args_ok(mode, flags))
		return try_cache(&kp,
				 ((flags & AT_EACCESS) ? DCACHE_Q_EACCESS : DCACHE_Q_ACCESS) |
					 ((flags & AT_SYMLINK_NOFOLLOW) ? 0 : DCACHE_Q_FOLLOW),
				 mode, NULL, ret);
	count_form_pass(why);
	return 0;
}

static int do_faccessat(int dirfd, const char *path, int mode, int flags)
{
	int ret, why = path_passes(dirfd, path);

	if (why < 0) {
		if (faccessat_cached(dirfd, path, mode, flags, &ret))
			return ret;
	} else if (why == PATH_OK && access_args_ok(mode, flags)) {
		count_unusable();
	} else {
		count_form_pass(why);
	}
	return CALL_REAL(faccessat, dirfd, path, mode, flags);
}

WARM_EXPORT int access(const char *path, int mode) { return do_faccessat(AT_FDCWD, path, mode, 0); }
WARM_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return do_faccessat(preload_hide_fd(dirfd), path, mode, flags);
}
/* glibc's euidaccess is no plain system call (io/euidaccess.c in 2.36): it
 * stats the file, drops bits of `mode` other than R_OK|W_OK|X_OK, answers
 * F_OK from the stat, asks access(2) while real and effective ids are equal,
 * and otherwise decides from the mode bits alone (root may execute only what
 * has some x bit; no ACLs, no read-only mounts).  faccessat(AT_EACCESS)
 * answers differently (EINVAL for bogus bits, the kernel's view when ids
 * differ): do what glibc does, from (cached) lookups. */
static int do_euidaccess(const char *path, int mode)
{
	struct stat st;
	unsigned int granted, want;
	uid_t euid;
	gid_t egid;

	if (stat(path, &st) != 0) /* through the cache, like glibc's own stat call */
		return -1;
	want = (unsigned int)mode & (X_OK | W_OK | R_OK);
	if (want == F_OK)
		return 0;
	euid = geteuid();
	egid = getegid();
	if (getuid() == euid && getgid() == egid)
		return do_faccessat(AT_FDCWD, path, (int)want, 0);
	if (euid == 0 && (!(want & X_OK) || (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))))
		return 0;
	if (euid == st.st_uid)
		granted = (st.st_mode & (want << 6)) >> 6;
	else if (egid == st.st_gid || group_member(st.st_gid))
		granted = (st.st_mode & (want << 3)) >> 3;
	else
		granted = st.st_mode & want;
	if (granted == want)
		return 0;
	errno = EACCES;
	return -1;
}
EXPORT int euidaccess(const char *path, int mode) { return do_euidaccess(path, mode); }
EXPORT int eaccess(const char *path, int mode) { return do_euidaccess(path, mode); }

/* ---------------------------------------------------------------------- */
/* open family */

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
REAL_DECL(openat);
REAL_DECL(__open_2);
REAL_DECL(__openat_2);

/* For fork() (shim_process.c, preload_resolve_for_children). */
void preload_resolve_openat(void)
{
	preload_real_sym(&real_openat_p, real_openat_n);
}

static inline int open_needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static int open_writes(int flags)
{
	return open_needs_mode(flags) || (flags & O_TRUNC) || (flags & O_ACCMODE) != O_RDONLY;
}

/*
 * An open that may write (create, truncate, write access): always the real
 * call, then the change noted.  Apart from the lookups' do_open_read() and
 * in DCACHE_FORK_TEXT (cache/dcache.h): a shell's child opens its
 * redirections so before its exec, and do_open_read()'s frame (a struct
 * kpath, PATH_MAX and more) reached a page of the child's stack that
 * nothing else of it touches, a page fault in every such child.
 */
DCACHE_FORK_TEXT __attribute__((noinline)) static int open_write(int dirfd, const char *path,
								 int flags, mode_t mode)
{
	int fd, saved;

	dirfd = preload_hide_fd(dirfd);
	preload_count_pass(PRELOAD_PASS_WRITE);
	fd = PRELOAD_FD_ALLOC(CALL_REAL(openat, dirfd, path, flags, mode), 0);
	saved = errno;
	note_change();
	if (fd >= 0)
		fd_set_writable(fd, (flags & O_ACCMODE) != O_RDONLY);
	errno = saved;
	return fd;
}

/* An open that only reads: the cache may answer its failure. */
__attribute__((noinline)) static int open_read_cached(int dirfd, const char *path, int flags,
						      mode_t mode)
{
	int ret, fd, why;
	struct kpath kp;

	if ((why = path_in(dirfd, path, &kp)) == PATH_OK) {
		if (try_cache(&kp,
			      Q_SHIM_OPEN | DCACHE_Q_NEGONLY | ((flags & O_NOFOLLOW) ? 0 : DCACHE_Q_FOLLOW) |
				      ((flags & O_DIRECTORY) ? DCACHE_Q_DIRECTORY : 0),
			      0, NULL, &ret))
			return ret;
	} else {
		count_form_pass(why);
	}
	fd = PRELOAD_FD_ALLOC(CALL_REAL(openat, dirfd, path, flags, mode), 0);
	if (__builtin_expect(verify_open_err != 0, 0))
		verify_open_result("open", kp.s, fd >= 0);
	if (fd >= 0)
		fd_set_writable(fd, 0);
	return fd;
}

/* The warm-up's open (path_passes): the real call from this small frame. */
PRELOAD_WARM_TEXT __attribute__((noinline)) static int do_open_read(int dirfd, const char *path, int flags,
						  mode_t mode)
{
	int fd, why;

	dirfd = preload_hide_fd(dirfd);
	why = path_passes(dirfd, path);
	if (why < 0)
		return open_read_cached(dirfd, path, flags, mode);
	if (why == PATH_OK)
		count_unusable();
	else
		count_form_pass(why);
	fd = PRELOAD_FD_ALLOC(CALL_REAL(openat, dirfd, path, flags, mode), 0);
	if (fd >= 0)
		fd_set_writable(fd, 0);
	return fd;
}

__attribute__((always_inline)) static inline int do_openat(int dirfd, const char *path, int flags,
							   mode_t mode)
{
	return open_writes(flags) ? open_write(dirfd, path, flags, mode)
				  : do_open_read(dirfd, path, flags, mode);
}

static mode_t va_mode(int flags, va_list ap)
{
	return open_needs_mode(flags) ? (mode_t)va_arg(ap, int) : 0;
}

WARM_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}
WARM_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}
WARM_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}
WARM_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags | O_LARGEFILE, mode);
}
/* Fortified callers: O_CREAT without a mode is glibc's to abort on. */
EXPORT int __open_2(const char *path, int flags)
{
	if (open_needs_mode(flags))
		return PRELOAD_FD_ALLOC(CALL_REAL(__open_2, path, flags), 0);
	return do_openat(AT_FDCWD, path, flags, 0);
}
EXPORT int __open64_2(const char *path, int flags)
{
	if (open_needs_mode(flags))
		return PRELOAD_FD_ALLOC(CALL_REAL(__open_2, path, flags | O_LARGEFILE), 0);
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}
EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	if (open_needs_mode(flags))
		return PRELOAD_FD_ALLOC(CALL_REAL(__openat_2, preload_hide_fd(dirfd), path, flags), 0);
	return do_openat(dirfd, path, flags, 0);
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	if (open_needs_mode(flags))
		return PRELOAD_FD_ALLOC(CALL_REAL(__openat_2, preload_hide_fd(dirfd), path, flags | O_LARGEFILE), 0);
	return do_openat(dirfd, path, flags | O_LARGEFILE, 0);
}
WARM_EXPORT int creat(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
WARM_EXPORT int creat64(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE, mode);
}

/* ---------------------------------------------------------------------- */
/* names: readlink, realpath */

ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);
REAL_DECL(readlinkat);
REAL_DECL(__readlink_chk);
REAL_DECL(__readlinkat_chk);

/* The cache's answer: 1 with *ret (and errno) set, 0 to pass through. */
static __attribute__((noinline)) int readlink_cached(int dirfd, const char *path, char *buf,
						     size_t bufsiz, ssize_t *ret)
{
	int size = (int)bufsiz, saved = errno, r;
	size_t len = 0;
	struct kpath kp;

	/* The target is made in cbuf and copied out (len bytes, as the kernel
	 * writes): an unwritable buf is the kernel's EFAULT to give. */
	if (path_in(dirfd, path, &kp) == PATH_OK && !bad_ptr(buf) && cache_enter()) {
		char cbuf[PATH_MAX];

		/* A target is shorter than PATH_MAX: the same answer as for size. */
		r = dcache_readlink(kp.s, cbuf, (size_t)size > sizeof(cbuf) ? sizeof(cbuf) : (size_t)size,
				    &len);
		cache_leave();
		if (r == 0 && len > 0 && (preload_test_corrupt() & PRELOAD_CORRUPT_LINK))
			cbuf[0] ^= 1;
		if (r >= 0 && preload_verify) {
			long kr = syscall(SYS_readlinkat, dirfd, kp.s, buf, bufsiz);
			int kerr = kr < 0 ? errno : 0;
			char a[PATH_MAX + 64], b[PATH_MAX + 64];

			if ((kr >= 0) != (r == 0) ||
			    (kr >= 0 ? (size_t)kr != len || memcmp(cbuf, buf, len) != 0 : kerr != r)) {
				preload_fmt_name(a, sizeof(a), r ? -1 : (long)len, r, cbuf, len);
				preload_fmt_name(b, sizeof(b), kr, kerr, buf, kr > 0 ? (size_t)kr : 0);
				preload_verify_mismatch("readlink", kp.s, a, b);
			}
			errno = kr >= 0 ? saved : kerr;
			*ret = (ssize_t)kr;
			return 1;
		}
		if (r == 0 && preload_copy_bytes(buf, cbuf, len) == 0) {
			errno = saved;
			*ret = (ssize_t)len;
			return 1;
		}
		if (r > 0) {
			errno = r;
			*ret = -1;
			return 1;
		}
		errno = saved;
	}
	return 0;
}

/* The kernel takes bufsiz as an int: <= 0 there is its EINVAL (passed on). */
static ssize_t do_readlinkat(int dirfd, const char *path, char *buf, size_t bufsiz)
{
	ssize_t ret;
	int why;

	if ((int)bufsiz > 0) {
		why = path_passes(dirfd, path);
		if (why < 0) {
			if (readlink_cached(dirfd, path, buf, bufsiz, &ret))
				return ret;
		} else if (why == PATH_OK && !bad_ptr(buf)) {
			count_unusable();
		}
	}
	return CALL_REAL(readlinkat, dirfd, path, buf, bufsiz);
}

WARM_EXPORT ssize_t readlink(const char *path, char *buf, size_t bufsiz)
{
	return do_readlinkat(AT_FDCWD, path, buf, bufsiz);
}
WARM_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t bufsiz)
{
	return do_readlinkat(preload_hide_fd(dirfd), path, buf, bufsiz);
}
/* Fortified callers: a len larger than the buffer is glibc's to abort on. */
EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		return CALL_REAL(__readlink_chk, path, buf, len, buflen);
	return do_readlinkat(AT_FDCWD, path, buf, len);
}
EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen)
{
	dirfd = preload_hide_fd(dirfd);
	if (len > buflen)
		return CALL_REAL(__readlinkat_chk, dirfd, path, buf, len, buflen);
	return do_readlinkat(dirfd, path, buf, len);
}

char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);
REAL_DECL(realpath);
REAL_DECL(__realpath_chk);

/*
 * glibc's realpath for a call the cache does not answer.  Once the copy
 * routines are usable, a caller's buffer that glibc could not write without
 * crashing is refused with EFAULT, as when the cache answers.  A buffer in
 * the live stack above this frame (gcc's lrealpath() has one) is writable:
 * glibc writes it itself.  Any other goes through tmp, PATH_MAX bytes of
 * this frame: what glibc wrote there (the result, or the prefix it leaves on
 * ENOENT and EACCES) is copied out.  Out of line, the buffer with it: every
 * page of stack below what the program reaches itself is a page fault, and
 * glibc's realpath (3 KiB of scratch) runs below this.
 */
static __attribute__((noinline)) char *realpath_through(const char *path, char *resolved)
{
	char tmp[PATH_MAX];
	char *out;
	int err;

	/* glibc writes an absolute name, an empty one (its getcwd failed: the
	 * cwd was removed), or nothing; '\1' tells the last from the others. */
	tmp[0] = '\1';
	tmp[1] = '\0';
	out = CALL_REAL(realpath, path, tmp);
	err = errno;
	if (tmp[0] != '\1' && preload_copy_bytes(resolved, tmp, strlen(tmp) + 1) != 0) {
		errno = EFAULT;
		return NULL;
	}
	errno = err;
	return out ? resolved : NULL;
}

static char *realpath_pass(const char *path, char *resolved)
{
	if (!resolved || !__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE) ||
	    preload_in_live_stack(resolved, PATH_MAX, &resolved))
		return CALL_REAL(realpath, path, resolved);
	return realpath_through(path, resolved);
}

/*
 * realpath(3): glibc's own algorithm, answered by the cache (dcache_realpath);
 * NULL path, a name of PATH_MAX or more, and everything the cache cannot
 * decide exactly (search permission it has not seen granted, a filesystem it
 * does not cache) go to glibc.  As glibc: a caller's buffer gets the resolved
 * prefix on ENOENT and EACCES too, and errno is left at EINVAL by a success
 * whose walk met a component that is not a symlink.  Unlike glibc, which
 * crashes there, an unreadable path or an unwritable buffer gives NULL with
 * errno EFAULT, what a system call would answer.
 */
/* Verify mode: the cache answered r (0 or an errno) with buf and einval;
 * glibc's own realpath is the kernel's answer, and the one returned.  Out
 * of line, with its buffers: realpath()'s frame stays small. */
static __attribute__((noinline, cold)) char *realpath_verify(const char *path, char *resolved,
							      const char *buf, int r, int einval,
							      int saved)
{
	int kerr, cerr = r ? r : einval ? EINVAL : saved;
	char a[PATH_MAX + 64], b[PATH_MAX + 64];
	char *out;

	errno = saved;
	preload_in_shim++; /* its own lookups pass straight through */
	out = realpath_pass(path, resolved); /* the buffer written as realpath() does */
	preload_in_shim--;
	kerr = errno;
	if ((out != NULL) != (r == 0) || kerr != cerr || (out && strcmp(out, buf) != 0)) {
		preload_fmt_name(a, sizeof(a), r ? -1 : 0, cerr, buf, r ? 0 : strlen(buf));
		preload_fmt_name(b, sizeof(b), out ? 0 : -1, kerr, out ? out : "",
				 out ? strlen(out) : 0);
		if (out || r == 0) { /* errno after a success: part of the answer */
			size_t n = strlen(a), m = strlen(b);

			snprintf(a + n, sizeof(a) - n, " errno=%d", cerr);
			snprintf(b + m, sizeof(b) - m, " errno=%d", kerr);
		}
		preload_verify_mismatch("realpath", path, a, b);
	}
	errno = kerr;
	return out;
}

/* realpath() once the cache is in use or may start: kp and buf in a frame
 * of their own, which the warm-up does not pay for. */
static __attribute__((noinline)) char *realpath_cached(const char *path, char *resolved, int saved)
{
	char buf[PATH_MAX];
	struct kpath kp;
	int einval = 0, r, why;
	size_t len;
	char *out;

	why = path_in(AT_FDCWD, path, &kp);
	if (why == PATH_FAULT) {
		errno = EFAULT;
		return NULL;
	}
	if (why != PATH_OK || !kp.s[0] || !cache_enter())
		return realpath_pass(why == PATH_OK ? kp.s : path, resolved);
	r = dcache_realpath(kp.s, buf, sizeof(buf), &einval);
	cache_leave();
	if (r == DCACHE_PASS) {
		errno = saved;
		return realpath_pass(kp.s, resolved);
	}
	if (r == 0 && buf[0] && (preload_test_corrupt() & PRELOAD_CORRUPT_LINK))
		buf[0] ^= 1;
	if (__builtin_expect(preload_verify, 0))
		return realpath_verify(kp.s, resolved, buf, r, einval, saved);
	len = strlen(buf);
	if (r > 0) {
		/* as glibc since 2.35 */
		if (resolved && (r == ENOENT || r == EACCES) &&
		    preload_copy_bytes(resolved, buf, len + 1) != 0)
			r = EFAULT;
		errno = r;
		return NULL;
	}
	if (resolved) {
		if (preload_copy_bytes(resolved, buf, len + 1) != 0) {
			errno = EFAULT;
			return NULL;
		}
		out = resolved;
	} else {
		out = malloc(len + 1);
		if (!out)
			return NULL; /* ENOMEM from malloc */
		memcpy(out, buf, len + 1);
	}
	errno = einval ? EINVAL : saved;
	return out;
}

WARM_EXPORT char *realpath(const char *path, char *resolved)
{
	long n;

	/* NULL and "" are glibc's to refuse (EINVAL, ENOENT) without a syscall. */
	if (!path || bad_ptr(path) || (resolved && bad_ptr(resolved)))
		return CALL_REAL(realpath, path, resolved);
	if (cache_may_answer())
		return realpath_cached(path, resolved, errno);
	/* The warm-up, the shim's own calls, a cache given up: glibc answers,
	 * with no copy of the path, only a check that it can be read.  The
	 * real function is found here, not below tmp (dlsym's first call runs
	 * deep). */
	if (!__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE) ||
	    !preload_real_sym(&real_realpath_p, real_realpath_n))
		return CALL_REAL(realpath, path, resolved);
	n = path_probe(path, NULL);
	if (n < 0) {
		errno = EFAULT;
		return NULL;
	}
	if (n > 0 && n < PATH_MAX)
		count_unusable(); /* a lookup the cache could have answered */
	return realpath_pass(path, resolved);
}

EXPORT char *canonicalize_file_name(const char *path) { return realpath(path, NULL); }

/* Fortified callers: a buffer shorter than PATH_MAX is glibc's to abort on. */
EXPORT char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolvedlen < PATH_MAX)
		return CALL_REAL(__realpath_chk, path, resolved, resolvedlen);
	return realpath(path, resolved);
}

/* opendir: a missing or non-directory path is answered from the cache; an
 * existing directory needs the kernel's fd (glibc opens it internally).  An
 * unreadable or NULL name: EFAULT, openat's answer (glibc's own opendir
 * crashes on it). */
REAL_DECL(opendir);
static DIR *opendir_real(const char *path)
{
	DIR *dir = CALL_REAL(opendir, path);

	if (__builtin_expect(preload_fd_met_shim(dir ? dirfd(dir) : -1), 0) &&
	    preload_fds_in_the_way(dir ? dirfd(dir) : -1, 0))
		dir = CALL_REAL(opendir, path);
	if (dir)
		fd_set_writable(dirfd(dir), 0);
	return dir;
}

/* glibc's opendir reads the name before any system call (and crashes
 * there): the kernel's openat answer instead. */
static inline int opendir_faults(int why, const char *path)
{
	return why == PATH_FAULT || (why != PATH_EARLY && bad_ptr(path));
}

static __attribute__((noinline)) DIR *opendir_cached(const char *path)
{
	DIR *dir;
	int ret;
	struct kpath kp;

	int why = path_in(AT_FDCWD, path, &kp);

	if (why == PATH_OK &&
	    try_cache(&kp, Q_SHIM_OPEN | DCACHE_Q_NEGONLY | DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY, 0,
		      NULL, &ret))
		return NULL;
	if (opendir_faults(why, path)) {
		errno = EFAULT;
		return NULL;
	}
	dir = opendir_real(path);
	if (__builtin_expect(verify_open_err != 0, 0))
		verify_open_result("opendir", kp.s, dir != NULL);
	return dir;
}

WARM_EXPORT DIR *opendir(const char *path)
{
	int why = path_passes(AT_FDCWD, path);

	if (why < 0)
		return opendir_cached(path);
	if (why == PATH_OK)
		count_unusable();
	if (opendir_faults(why, path)) {
		errno = EFAULT;
		return NULL;
	}
	return opendir_real(path);
}

