/*
 * shim.c - the exported libc-named wrappers of librcuwalk.so.
 *
 * Each lookup wrapper (open/stat/access families) asks cache/ first and falls
 * through to the real libc function whenever the cache says DCACHE_PASS, the
 * call has a form the cache does not model (a real dirfd, AT_EMPTY_PATH,
 * unknown flags, a pointer the kernel would refuse), the shim is disabled, or
 * the thread is already inside the shim (recursion through dlsym, or a signal
 * handler that interrupted us: the guard below).
 *
 * Mutating wrappers make the real call and then note the change; the next
 * lookup in any thread drains the inotify queue first (inval_sync), and since
 * the kernel queued the event inside the mutating syscall, the process sees
 * its own change as soon as the call has returned.  Reaping a child (wait*,
 * system, pclose) is noted the same way: the child's events are queued too.
 *
 * Invariants:
 *  - in_shim (initial-exec TLS) is non-zero while this thread runs cache or
 *    invalidate code; any wrapper entered then passes straight through.
 *  - errno is preserved on success and set exactly as the kernel would on an
 *    error answered from the cache.
 *  - chdir/credential/namespace changes only bump an epoch
 *    (async-signal-safe); the next lookup acts on it.
 *  - The shim's own fds: close, dup2, dup3, close_range and closefrom of the
 *    inotify fd's number first make invalidate/ give it up (inval.h), and
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
#include "stats.h"

#define EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat64 layout differs");

extern int preload_attrs_faked;
extern int preload_strict;
static __thread int in_shim __attribute__((tls_model("initial-exec")));
static unsigned int cwd_epoch, cwd_seen;
static unsigned int cred_epoch, cred_seen;
static unsigned int ns_epoch, ns_seen;
static int ids_equal;

/* ---------------------------------------------------------------------- */
/* Real functions, resolved once with dlsym(RTLD_NEXT). */

static void *real_sym(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!p, 0)) {
		in_shim++; /* dlsym may allocate, and an allocator may stat */
		p = dlsym(RTLD_NEXT, name);
		in_shim--;
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

/*
 * The warm-up's clock (RCUWALK_WARMUP=Tus, preload.h).  count_unusable()
 * arms it for a lookup it passes through during the warm-up; the next real
 * call of this thread (CALL_REAL: the lookup's own, in every wrapper that
 * asks the cache) is timed, and its time added to warmup_ns_spent.  The
 * call whose time reaches preload_warmup_ns ends the warm-up (WARMUP ->
 * LOAD, compare-and-swap).  A wrapper that returns without a real call
 * leaves the clock armed for the next one: a budget, not a measurement, can
 * live with that.  Async-signal-safe: a thread-local flag, the vDSO's
 * clock_gettime and atomics.  Disarmed: one thread-local load per call.
 */
static __thread int warm_armed __attribute__((tls_model("initial-exec")));
static unsigned long long warmup_ns_spent;

static inline unsigned long long warm_clock(void)
{
	struct timespec t;

	if (__builtin_expect(!warm_armed, 1))
		return 0;
	warm_armed = 0;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec + 1;
}

static __attribute__((noinline, cold)) void warm_spent(unsigned long long t0)
{
	struct timespec t;
	unsigned long long now;
	int w = PRELOAD_WARMUP, saved = errno;

	clock_gettime(CLOCK_MONOTONIC, &t);
	errno = saved;
	now = (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec + 1;
	if (now > t0 &&
	    __atomic_add_fetch(&warmup_ns_spent, now - t0, __ATOMIC_RELAXED) >= preload_warmup_ns)
		__atomic_compare_exchange_n(&preload_enabled, &w, PRELOAD_LOAD, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED); /* seq_cst: warm_forks, below */
}

#define REAL_DECL(name) static void *real_##name##_p
#define CALL_REAL(name, ...)                                                         \
	({                                                                            \
		__typeof__(&name) f_ = (__typeof__(&name))real_sym(&real_##name##_p, #name); \
		unsigned long long real_t0_ = warm_clock();                              \
		__typeof__(f_(__VA_ARGS__)) real_ret_ =                               \
			f_ ? f_(__VA_ARGS__) : (errno = ENOSYS, (__typeof__(f_(__VA_ARGS__)))-1); \
		if (__builtin_expect(real_t0_ != 0, 0))                                    \
			warm_spent(real_t0_);                                            \
		real_ret_;                                                                \
	})
/* The same for a function returning void (closefrom): never a lookup. */
#define CALL_REAL_VOID(name, ...)                                                    \
	({                                                                            \
		__typeof__(&name) f_ = (__typeof__(&name))real_sym(&real_##name##_p, #name); \
		if (f_)                                                               \
			f_(__VA_ARGS__);                                              \
	})

/* ---------------------------------------------------------------------- */
/* The cache side */

/* A path copied from the program's memory (path_in), with its length; on
 * the wrapper's stack.  s has room for preload_copy_path's PATH_MAX + 8. */
struct kpath {
	size_t len;
	char s[PATH_MAX + 8];
};

static inline int bad_ptr(const void *p)
{
	/* What the kernel would refuse with EFAULT; it answers those itself. */
	return (uintptr_t)p < 4096 || (uintptr_t)p >= 0x800000000000ULL;
}

static void refresh_ids(void)
{
	ids_equal = getuid() == geteuid() && getgid() == getegid();
}

/* Apply chdir / credential changes noted by wrappers.  Inside the shim. */
static void apply_epochs(void)
{
	unsigned int e = __atomic_load_n(&cwd_epoch, __ATOMIC_ACQUIRE);

	if (__builtin_expect(e != __atomic_load_n(&cwd_seen, __ATOMIC_RELAXED), 0)) {
		__atomic_store_n(&cwd_seen, e, __ATOMIC_RELAXED);
		dcache_cwd_changed();
	}
	e = __atomic_load_n(&ns_epoch, __ATOMIC_ACQUIRE);
	if (__builtin_expect(e != __atomic_load_n(&ns_seen, __ATOMIC_RELAXED), 0)) {
		/* chroot, a namespace, a mount: "/" and what lies below it may
		 * be other directories now. */
		__atomic_store_n(&ns_seen, e, __ATOMIC_RELAXED);
		dcache_reset();
	}
	e = __atomic_load_n(&cred_epoch, __ATOMIC_ACQUIRE);
	if (__builtin_expect(e != __atomic_load_n(&cred_seen, __ATOMIC_RELAXED), 0)) {
		/* Nothing learned under one identity is served to another. */
		__atomic_store_n(&cred_seen, e, __ATOMIC_RELAXED);
		refresh_ids();
		inval_shared_off(); /* before the cache empties: nothing refills it */
		dcache_invalidate_all();
	}
}

#ifndef RCUWALK_URCU_LAZY
/* liburcu linked into the shim (RCUWALK_URCU_STATIC): nothing to load. */
int preload_urcu_load(void) { return 1; }
int preload_urcu_fork_prepare(void) { return 1; }
void preload_urcu_fork_parent(void) {}
void preload_urcu_fork_child(void) {}
#endif

int preload_load_urcu(void)
{
	int saved = errno, ok;

	in_shim++;
	ok = preload_urcu_load();
	in_shim--;
	errno = saved;
	return ok;
}

/*
 * fork() during the warm-up (below, "fork"): nothing of the cache exists
 * yet, so fork() takes none of its locks and the child fixes nothing up.
 * What keeps that true while fork() runs: warm_forks counts the fork() calls
 * between their check of PRELOAD_WARMUP and their return, and the cache
 * does not start while it is non-zero.  fork() adds, then loads the state;
 * the warm-up's end stores LOAD (compare-and-swap), and start_cache() then
 * loads warm_forks: all seq_cst, so either fork() sees LOAD (and takes the
 * full path) or start_cache() sees the fork in flight and passes that
 * lookup through (never waits: it may run in a signal handler of the forking
 * thread).  A fork() child, single-threaded, starts from 0.
 */
static int warm_forks;

/* PRELOAD_LOAD: load liburcu, then ON (or OFF, for good).  The lookup that
 * found LOAD then asks the cache, as if it had been ON. */
static __attribute__((noinline, cold)) int start_cache(void)
{
	int w = PRELOAD_LOAD;

	if (__atomic_load_n(&warm_forks, __ATOMIC_SEQ_CST) != 0)
		return 0; /* a fork() of the warm-up is in flight: later */
	__atomic_compare_exchange_n(&preload_enabled, &w,
				    preload_load_urcu() ? PRELOAD_ON : PRELOAD_OFF, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	return __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) == PRELOAD_ON;
}

static inline int cache_usable(void)
{
	int s = __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE);

	if (__builtin_expect(s == PRELOAD_ON, 1))
		return !in_shim;
	return s == PRELOAD_LOAD && !in_shim && start_cache();
}

/* Lookups seen during the warm-up (preload.h), by every thread. */
static unsigned long warmup_seen;

/* A lookup that cache_usable() turned away: count why.  During the warm-up
 * it is one of the N, and the N-th ends it: the next lookup of any thread
 * uses the cache (a compare-and-swap, so that a give-up to PRELOAD_OFF in
 * between stays); with a time budget, it arms the warm-up's clock for its
 * real call (above).  Async-signal-safe: atomics only. */
static void count_unusable(void)
{
	int w = PRELOAD_WARMUP;

	if (in_shim)
		return; /* the shim's own calls (liburcu, dlsym) */
	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) != PRELOAD_WARMUP) {
		preload_count_pass(PRELOAD_PASS_EARLY);
		return;
	}
	preload_count_pass(PRELOAD_PASS_WARMUP);
	if (preload_warmup_ns)
		warm_armed = 1;
	if (preload_warmup &&
	    __atomic_add_fetch(&warmup_seen, 1, __ATOMIC_RELAXED) >= preload_warmup)
		__atomic_compare_exchange_n(&preload_enabled, &w, PRELOAD_LOAD, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED); /* seq_cst: warm_forks */
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
 * contract).  Inside in_shim; errno is `saved` on entry. */
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
	int saved = errno, r;
	struct stat cst;

	if (!cache_usable()) {
		count_unusable();
		return 0;
	}
	in_shim++;
	apply_epochs();
	inval_sync();
	if (__builtin_expect(preload_strict, 0))
		inval_drain(); /* events or mounts pending: applied first */
	if (__builtin_expect(inval_recovering(), 0))
		inval_recover(); /* the inotify fd was given up: start afresh */
	r = dcache_lookup_len(path, kp->len, q & ~Q_SHIM_OPEN, amode, preload_verify && st ? &cst : st);
	in_shim--;
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
		in_shim++;
		r = verify_lookup(path, q, amode, st, &cst, r, saved, ret);
		in_shim--;
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
	in_shim++;
	apply_epochs();
	inval_sync();
	if (__builtin_expect(preload_strict, 0))
		inval_drain();
	return 1;
}

static inline void cache_leave(void) { in_shim--; }

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

static inline int path_in(int dirfd, const char *path, struct kpath *kp)
{
	long n;

	if (__builtin_expect(!__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE), 0))
		return PATH_EARLY;
	if (bad_ptr(path))
		return PATH_FORM;
	n = preload_copy_path(kp->s, path);
	if (__builtin_expect(n < 0, 0))
		return PATH_FAULT;
	if (n >= PATH_MAX)
		return PATH_FORM;
	kp->len = (size_t)n;
	return dirfd == AT_FDCWD || kp->s[0] == '/' ? PATH_OK : PATH_DIRFD;
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

static inline void note_change(void)
{
	if (__atomic_load_n(&preload_enabled, __ATOMIC_RELAXED))
		inval_note_change();
}

/* fds this process opened for writing: a write through them changes a cached
 * file's size/mtime.  Bits are set/cleared racily by open/close of that fd
 * number, which the program itself serialises. */
#define FD_BITS 65536
static unsigned long writable_fds[FD_BITS / (8 * sizeof(unsigned long))] DCACHE_COLD_BSS;
#define FD_WORD(fd) writable_fds[(unsigned)(fd) / (8 * sizeof(unsigned long))]
#define FD_MASK(fd) (1UL << ((unsigned)(fd) % (8 * sizeof(unsigned long))))

static inline int fd_writable(int fd)
{
	return fd < 0 || fd >= FD_BITS || (__atomic_load_n(&FD_WORD(fd), __ATOMIC_RELAXED) & FD_MASK(fd));
}

static inline void fd_set_writable(int fd, int on)
{
	if (fd < 0 || fd >= FD_BITS)
		return;
	if (on)
		__atomic_fetch_or(&FD_WORD(fd), FD_MASK(fd), __ATOMIC_RELAXED);
	else if (__atomic_load_n(&FD_WORD(fd), __ATOMIC_RELAXED) & FD_MASK(fd))
		__atomic_fetch_and(&FD_WORD(fd), ~FD_MASK(fd), __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* stat family */

/*
 * A call the cache does not answer goes to the next definition of the SAME
 * entry point (stat to stat, __fxstatat to __fxstatat), never to another:
 * a library behind us in LD_PRELOAD may implement one with another (for
 * libfakeroot, fstatat calls __fxstatat through the PLT, which binds to ours
 * again: funnelling everything to the next fstatat looped forever).
 */
static int stat_cached(int dirfd, const char *path, struct stat *buf, int flags, int *ret)
{
	struct kpath kp;
	struct stat kst, *out = &kst;
	int why = path_in(dirfd, path, &kp);

	/* Under fakeroot/pseudo only errors come from the cache (NEGONLY).
	 * The answer is made in kst and copied out as the kernel's cp_new_stat
	 * does, after the lookup: an unwritable buf is the kernel's EFAULT to
	 * give, and only for a lookup that succeeds.  A buf in the live stack
	 * above this frame is filled directly (preload_in_live_stack). */
	if (why == PATH_OK && !(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) && !bad_ptr(buf)) {
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

REAL_DECL(stat);
REAL_DECL(stat64);
REAL_DECL(lstat);
REAL_DECL(lstat64);
REAL_DECL(fstatat);
REAL_DECL(fstatat64);
EXPORT int stat(const char *path, struct stat *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, buf, 0, &ret) ? ret : CALL_REAL(stat, path, buf);
}
EXPORT int stat64(const char *path, struct stat64 *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, (struct stat *)buf, 0, &ret) ? ret
									: CALL_REAL(stat64, path, buf);
}
EXPORT int lstat(const char *path, struct stat *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW, &ret) ? ret
									  : CALL_REAL(lstat, path, buf);
}
EXPORT int lstat64(const char *path, struct stat64 *buf)
{
	int ret;

	return stat_cached(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(lstat64, path, buf);
}
EXPORT int fstatat(int dirfd, const char *path, struct stat *buf, int flags)
{
	int ret;

	return stat_cached(dirfd, path, buf, flags, &ret) ? ret
							  : CALL_REAL(fstatat, dirfd, path, buf, flags);
}
EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *buf, int flags)
{
	int ret;

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
EXPORT int __xstat(int ver, const char *path, struct stat *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, buf, 0, &ret)
		       ? ret
		       : CALL_REAL(__xstat, ver, path, buf);
}
EXPORT int __xstat64(int ver, const char *path, struct stat64 *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, (struct stat *)buf, 0, &ret)
		       ? ret
		       : CALL_REAL(__xstat64, ver, path, buf);
}
EXPORT int __lxstat(int ver, const char *path, struct stat *buf)
{
	int ret;

	return ver == STAT_VER && stat_cached(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(__lxstat, ver, path, buf);
}
EXPORT int __lxstat64(int ver, const char *path, struct stat64 *buf)
{
	int ret;

	return ver == STAT_VER &&
			       stat_cached(AT_FDCWD, path, (struct stat *)buf, AT_SYMLINK_NOFOLLOW, &ret)
		       ? ret
		       : CALL_REAL(__lxstat64, ver, path, buf);
}
EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags)
{
	int ret;

	return ver == STAT_VER && stat_cached(dirfd, path, buf, flags, &ret)
		       ? ret
		       : CALL_REAL(__fxstatat, ver, dirfd, path, buf, flags);
}
EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags)
{
	int ret;

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
EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf)
{
	int saved = errno, r;
	struct kpath kp;

	/* As stat_cached(): the answer is made in kbuf, then copied out. */
	if (!(flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT)) && !(mask & ~STATX_CACHED_MASK) &&
	    path_in(dirfd, path, &kp) == PATH_OK && !bad_ptr(buf) && cache_enter()) {
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
			return 0;
		}
		if (r > 0) {
			errno = r;
			return -1;
		}
		errno = saved;
	}
	return CALL_REAL(statx, dirfd, path, flags, mask, buf);
}

/* ---------------------------------------------------------------------- */
/* access family */

REAL_DECL(faccessat);

static int do_faccessat(int dirfd, const char *path, int mode, int flags)
{
	int ret;

	/* access() checks with the real ids; the cache's permission facts were
	 * learned with the effective ones: only equal ids make them the same. */
	struct kpath kp;
	int why = path_in(dirfd, path, &kp);

	if (!(mode & ~7) && !(flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW)) &&
	    ((flags & AT_EACCESS) || ids_equal) && why == PATH_OK) {
		if (try_cache(&kp,
			      ((flags & AT_EACCESS) ? DCACHE_Q_EACCESS : DCACHE_Q_ACCESS) |
				      ((flags & AT_SYMLINK_NOFOLLOW) ? 0 : DCACHE_Q_FOLLOW),
			      mode, NULL, &ret))
			return ret;
	} else {
		count_form_pass(why);
	}
	return CALL_REAL(faccessat, dirfd, path, mode, flags);
}

EXPORT int access(const char *path, int mode) { return do_faccessat(AT_FDCWD, path, mode, 0); }
EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	return do_faccessat(dirfd, path, mode, flags);
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

static inline int open_needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

static int open_writes(int flags)
{
	return open_needs_mode(flags) || (flags & O_TRUNC) || (flags & O_ACCMODE) != O_RDONLY;
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int ret, fd, why = PATH_FORM;
	struct kpath kp;

	if (!open_writes(flags) && (why = path_in(dirfd, path, &kp)) == PATH_OK) {
		if (try_cache(&kp,
			      Q_SHIM_OPEN | DCACHE_Q_NEGONLY | ((flags & O_NOFOLLOW) ? 0 : DCACHE_Q_FOLLOW) |
				      ((flags & O_DIRECTORY) ? DCACHE_Q_DIRECTORY : 0),
			      0, NULL, &ret))
			return ret;
	} else if (open_writes(flags)) {
		preload_count_pass(PRELOAD_PASS_WRITE);
	} else {
		count_form_pass(why);
	}
	fd = CALL_REAL(openat, dirfd, path, flags, mode);
	if (__builtin_expect(verify_open_err != 0, 0))
		verify_open_result("open", kp.s, fd >= 0);
	if (open_writes(flags)) {
		int saved = errno;

		note_change();
		if (fd >= 0)
			fd_set_writable(fd, (flags & O_ACCMODE) != O_RDONLY);
		errno = saved;
	} else if (fd >= 0) {
		fd_set_writable(fd, 0);
	}
	return fd;
}

static mode_t va_mode(int flags, va_list ap)
{
	return open_needs_mode(flags) ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags, mode);
}
EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, mode);
}
EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	return do_openat(dirfd, path, flags, mode);
}
EXPORT int openat64(int dirfd, const char *path, int flags, ...)
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
		return CALL_REAL(__open_2, path, flags);
	return do_openat(AT_FDCWD, path, flags, 0);
}
EXPORT int __open64_2(const char *path, int flags)
{
	if (open_needs_mode(flags))
		return CALL_REAL(__open_2, path, flags | O_LARGEFILE);
	return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0);
}
EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	if (open_needs_mode(flags))
		return CALL_REAL(__openat_2, dirfd, path, flags);
	return do_openat(dirfd, path, flags, 0);
}
EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	if (open_needs_mode(flags))
		return CALL_REAL(__openat_2, dirfd, path, flags | O_LARGEFILE);
	return do_openat(dirfd, path, flags | O_LARGEFILE, 0);
}
EXPORT int creat(const char *path, mode_t mode)
{
	return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
EXPORT int creat64(const char *path, mode_t mode)
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

/* The kernel takes bufsiz as an int: <= 0 there is its EINVAL (passed on). */
static ssize_t do_readlinkat(int dirfd, const char *path, char *buf, size_t bufsiz)
{
	int size = (int)bufsiz, saved = errno, r;
	size_t len = 0;
	struct kpath kp;

	/* The target is made in cbuf and copied out (len bytes, as the kernel
	 * writes): an unwritable buf is the kernel's EFAULT to give. */
	if (size > 0 && path_in(dirfd, path, &kp) == PATH_OK && !bad_ptr(buf) && cache_enter()) {
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
			return (ssize_t)kr;
		}
		if (r == 0 && preload_copy_bytes(buf, cbuf, len) == 0) {
			errno = saved;
			return (ssize_t)len;
		}
		if (r > 0) {
			errno = r;
			return -1;
		}
		errno = saved;
	}
	return CALL_REAL(readlinkat, dirfd, path, buf, bufsiz);
}

EXPORT ssize_t readlink(const char *path, char *buf, size_t bufsiz)
{
	return do_readlinkat(AT_FDCWD, path, buf, bufsiz);
}
EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t bufsiz)
{
	return do_readlinkat(dirfd, path, buf, bufsiz);
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
	if (len > buflen)
		return CALL_REAL(__readlinkat_chk, dirfd, path, buf, len, buflen);
	return do_readlinkat(dirfd, path, buf, len);
}

char *__realpath_chk(const char *path, char *resolved, size_t resolvedlen);
REAL_DECL(realpath);
REAL_DECL(__realpath_chk);

/*
 * glibc's realpath for a call the cache does not answer.  Once the copy
 * routines are usable, a caller's buffer is written through them: glibc
 * works in tmp and what it wrote there (the result, or the prefix it leaves
 * on ENOENT and EACCES) is copied out; an unwritable buffer gives EFAULT
 * where glibc would have crashed, as when the cache answers.
 */
static char *realpath_pass(const char *path, char *resolved)
{
	char tmp[PATH_MAX];
	char *out;
	int err;

	if (!resolved || !__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE))
		return CALL_REAL(realpath, path, resolved);
	tmp[0] = '\0'; /* glibc writes an absolute name, or nothing */
	out = CALL_REAL(realpath, path, tmp);
	err = errno;
	if (tmp[0] && preload_copy_bytes(resolved, tmp, strlen(tmp) + 1) != 0) {
		errno = EFAULT;
		return NULL;
	}
	errno = err;
	return out ? resolved : NULL;
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
EXPORT char *realpath(const char *path, char *resolved)
{
	char buf[PATH_MAX];
	struct kpath kp;
	int saved = errno, einval = 0, r, why;
	size_t len;
	char *out;

	/* NULL and "" are glibc's to refuse (EINVAL, ENOENT) without a syscall. */
	if (!path || bad_ptr(path) || (resolved && bad_ptr(resolved)))
		return CALL_REAL(realpath, path, resolved);
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
	if (__builtin_expect(preload_verify, 0)) {
		/* glibc's own realpath is the kernel's answer here. */
		int kerr, cerr = r ? r : einval ? EINVAL : saved;
		char a[PATH_MAX + 64], b[PATH_MAX + 64];

		errno = saved;
		in_shim++; /* its own lookups pass straight through */
		out = realpath_pass(kp.s, resolved); /* the buffer written as above */
		in_shim--;
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
			preload_verify_mismatch("realpath", kp.s, a, b);
		}
		errno = kerr;
		return out;
	}
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
EXPORT DIR *opendir(const char *path)
{
	DIR *dir;
	int ret;
	struct kpath kp;

	int why = path_in(AT_FDCWD, path, &kp);

	if (why == PATH_OK &&
	    try_cache(&kp, Q_SHIM_OPEN | DCACHE_Q_NEGONLY | DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY, 0,
		      NULL, &ret))
		return NULL;
	/* glibc's opendir reads the name before any system call (and crashes
	 * there): the kernel's openat answer instead. */
	if (why == PATH_FAULT || (why != PATH_EARLY && bad_ptr(path))) {
		errno = EFAULT;
		return NULL;
	}
	dir = CALL_REAL(opendir, path);
	if (__builtin_expect(verify_open_err != 0, 0))
		verify_open_result("opendir", kp.s, dir != NULL);
	if (dir)
		fd_set_writable(dirfd(dir), 0);
	return dir;
}

/* ---------------------------------------------------------------------- */
/* Mutators: the real call, then note the change (errno untouched). */

#define MUTATOR(ret, name, params, ...)          \
	REAL_DECL(name);                          \
	EXPORT ret name params                    \
	{                                         \
		ret r_ = CALL_REAL(name, __VA_ARGS__); \
		note_change();                    \
		return r_;                        \
	}

MUTATOR(int, unlink, (const char *p), p)
MUTATOR(int, unlinkat, (int fd, const char *p, int fl), fd, p, fl)
MUTATOR(int, rename, (const char *a, const char *b), a, b)
MUTATOR(int, renameat, (int fa, const char *a, int fb, const char *b), fa, a, fb, b)
MUTATOR(int, renameat2, (int fa, const char *a, int fb, const char *b, unsigned int fl), fa, a, fb, b, fl)
MUTATOR(int, mkdir, (const char *p, mode_t m), p, m)
MUTATOR(int, mkdirat, (int fd, const char *p, mode_t m), fd, p, m)
MUTATOR(int, rmdir, (const char *p), p)
MUTATOR(int, symlink, (const char *t, const char *p), t, p)
MUTATOR(int, symlinkat, (const char *t, int fd, const char *p), t, fd, p)
/* A new name for an inode changes st_nlink/st_ctime of its other names, but
 * the event reaches only the new name's directory: after a successful link,
 * ask the kernel which inode the new name is and forget every cached name of
 * it.  (Another process linking into a directory this process does not watch
 * is a documented limit of the contract.) */
static void forget_linked_inode(int r, int newdirfd, const char *newpath)
{
	struct stat st;

	if (r != 0 || !cache_usable())
		return;
	if (syscall(SYS_newfstatat, newdirfd, newpath, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return;
	in_shim++;
	dcache_forget_inode(st.st_dev, st.st_ino);
	in_shim--;
}
REAL_DECL(link);
EXPORT int link(const char *a, const char *b)
{
	int r = CALL_REAL(link, a, b), saved = errno;

	note_change();
	forget_linked_inode(r, AT_FDCWD, b);
	errno = saved;
	return r;
}
REAL_DECL(linkat);
EXPORT int linkat(int fa, const char *a, int fb, const char *b, int fl)
{
	int r = CALL_REAL(linkat, fa, a, fb, b, fl), saved = errno;

	note_change();
	forget_linked_inode(r, fb, b);
	errno = saved;
	return r;
}
MUTATOR(int, mknod, (const char *p, mode_t m, dev_t d), p, m, d)
MUTATOR(int, mknodat, (int fd, const char *p, mode_t m, dev_t d), fd, p, m, d)
MUTATOR(int, chmod, (const char *p, mode_t m), p, m)
MUTATOR(int, fchmodat, (int fd, const char *p, mode_t m, int fl), fd, p, m, fl)
MUTATOR(int, fchmod, (int fd, mode_t m), fd, m)
MUTATOR(int, chown, (const char *p, uid_t u, gid_t g), p, u, g)
MUTATOR(int, lchown, (const char *p, uid_t u, gid_t g), p, u, g)
MUTATOR(int, fchownat, (int fd, const char *p, uid_t u, gid_t g, int fl), fd, p, u, g, fl)
MUTATOR(int, fchown, (int fd, uid_t u, gid_t g), fd, u, g)
MUTATOR(int, truncate, (const char *p, off_t l), p, l)
MUTATOR(int, truncate64, (const char *p, off64_t l), p, l)
MUTATOR(int, ftruncate, (int fd, off_t l), fd, l)
MUTATOR(int, ftruncate64, (int fd, off64_t l), fd, l)
MUTATOR(int, utime, (const char *p, const struct utimbuf *t), p, t)
/* Extended attributes: the kernel changes st_ctime and sends IN_ATTRIB. */
MUTATOR(int, setxattr, (const char *p, const char *n, const void *v, size_t z, int f), p, n, v, z, f)
MUTATOR(int, lsetxattr, (const char *p, const char *n, const void *v, size_t z, int f), p, n, v, z, f)
MUTATOR(int, fsetxattr, (int fd, const char *n, const void *v, size_t z, int f), fd, n, v, z, f)
MUTATOR(int, removexattr, (const char *p, const char *n), p, n)
MUTATOR(int, lremovexattr, (const char *p, const char *n), p, n)
MUTATOR(int, fremovexattr, (int fd, const char *n), fd, n)
MUTATOR(int, utimes, (const char *p, const struct timeval t[2]), p, t)
MUTATOR(int, lutimes, (const char *p, const struct timeval t[2]), p, t)
MUTATOR(int, futimesat, (int fd, const char *p, const struct timeval t[2]), fd, p, t)
MUTATOR(int, utimensat, (int fd, const char *p, const struct timespec t[2], int fl), fd, p, t, fl)
MUTATOR(int, futimens, (int fd, const struct timespec t[2]), fd, t)
MUTATOR(int, fallocate, (int fd, int mode, off_t o, off_t l), fd, mode, o, l)
MUTATOR(int, fallocate64, (int fd, int mode, off64_t o, off64_t l), fd, mode, o, l)
MUTATOR(int, posix_fallocate, (int fd, off_t o, off_t l), fd, o, l)
MUTATOR(int, posix_fallocate64, (int fd, off64_t o, off64_t l), fd, o, l)
MUTATOR(int, remove, (const char *p), p)
MUTATOR(int, mkfifo, (const char *p, mode_t m), p, m)
MUTATOR(int, mkfifoat, (int fd, const char *p, mode_t m), fd, p, m)
MUTATOR(int, mkstemp, (char *t), t)
MUTATOR(int, mkstemp64, (char *t), t)
MUTATOR(int, mkostemp, (char *t, int fl), t, fl)
MUTATOR(int, mkostemp64, (char *t, int fl), t, fl)
MUTATOR(int, mkstemps, (char *t, int n), t, n)
MUTATOR(int, mkostemps, (char *t, int n, int fl), t, n, fl)
MUTATOR(char *, mkdtemp, (char *t), t)
MUTATOR(int, system, (const char *cmd), cmd)
MUTATOR(int, pclose, (FILE *f), f)

/*
 * Inode-flag and attribute ioctls.  FS_IOC_SETFLAGS (chattr), FS_IOC_FSSETXATTR
 * (xfs_io chattr, project ids), FS_IOC_SETVERSION, fscrypt's policy and
 * fs-verity's enable change stx_attributes and st_ctime with no inotify
 * event; reflinks and dedupe change the destination's blocks and times.  After
 * a successful one this process forgets every cached name of the inode (as
 * after link(): dcache_forget_inode) and notes the change, so its next lookup
 * is the kernel's (coherence contract, clause 1).  The same ioctl made by
 * another process is not seen (doc/coherence.md, known limits).
 */
static int changes_inode(unsigned long req)
{
	switch (req) {
	case FS_IOC_SETFLAGS:
	case FS_IOC32_SETFLAGS:
	case FS_IOC_FSSETXATTR:
	case FS_IOC_SETVERSION:
	case FS_IOC32_SETVERSION:
	case FS_IOC_SET_ENCRYPTION_POLICY:
	case FS_IOC_ENABLE_VERITY:
	case FICLONE:
	case FICLONERANGE:
	case FIDEDUPERANGE:
		return 1;
	}
	return 0;
}

static void forget_fd_inode(int fd)
{
	struct stat st;
	int saved = errno;

	note_change();
	inval_shared_forget(); /* other processes' shared answers, a directory's included */
	if (cache_usable() && syscall(SYS_fstat, fd, &st) == 0) {
		in_shim++;
		dcache_forget_inode(st.st_dev, st.st_ino);
		in_shim--;
	}
	errno = saved;
}

/* glibc declares the request unsigned long and reads the third argument as a
 * pointer whether or not the caller passed one; so do we. */
REAL_DECL(ioctl);
EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	r = CALL_REAL(ioctl, fd, req, arg);
	if (__builtin_expect(changes_inode(req), 0) && r >= 0)
		forget_fd_inode(fd);
	return r;
}

/*
 * The shim's own fds (invalidate/'s inotify, io_uring and mountinfo numbers,
 * inval_owns_fd) are left out of a listing of this process's fd table
 * through readdir: /proc/self/fd, /dev/fd, /proc/<pid>/fd,
 * /proc/<pid>/task/<tid>/fd and their fdinfo twins.  A program that lists
 * them (to close "everything", to look for leaks) sees only its own.  Raw
 * getdents64, scandir() and fts (glibc-internal readdir) still show them;
 * so do stat and readlink of /proc/self/fd/N.
 */

/* Is `dfd` this process's fd or fdinfo directory?  Asked only for a listing
 * that holds one of our numbers; errno kept. */
static int own_fd_dir(int dfd)
{
	char link[64], target[PATH_MAX];
	struct statfs sfs;
	long n, num[2] = { -1, -1 };
	int saved = errno, k = 0, ok = 0;
	char *end, *p;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", dfd);
	n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof(target) - 1);
	if (n <= 0 || syscall(SYS_fstatfs, dfd, &sfs) != 0 || sfs.f_type != 0x9fa0 /* PROC_SUPER_MAGIC */)
		goto out;
	target[n] = '\0';
	end = strrchr(target, '/');
	if (!end || (strcmp(end, "/fd") != 0 && strcmp(end, "/fdinfo") != 0))
		goto out;
	/* .../<pid>/fd, .../<pid>/task/<tid>/fd or .../<tid>/fd */
	while (k < 2 && end > target) {
		*end = '\0';
		p = strrchr(target, '/');
		if (!p)
			goto out;
		if (k == 1 && strcmp(p, "/task") == 0) {
			*p = '\0';
			p = strrchr(target, '/');
			if (!p)
				goto out;
			num[1] = strtol(p + 1, NULL, 10);
			break;
		}
		if (p[1] < '0' || p[1] > '9')
			break;
		num[k++] = strtol(p + 1, NULL, 10);
		end = p;
	}
	if (num[1] >= 0) {
		ok = num[1] == getpid();
	} else if (num[0] >= 0) {
		snprintf(link, sizeof(link), "/proc/self/task/%ld", num[0]);
		ok = num[0] == getpid() || syscall(SYS_faccessat, AT_FDCWD, link, F_OK) == 0;
	}
out:
	errno = saved;
	return ok;
}

/* An entry of ours in this process's fd directory? */
static int hidden_entry(DIR *d, const char *name)
{
	int fd = 0;

	for (const char *c = name; *c; c++) {
		if (*c < '0' || *c > '9' || fd > 10000000)
			return 0;
		fd = fd * 10 + (*c - '0');
	}
	return inval_owns_fd(fd) && own_fd_dir(dirfd(d));
}

#define DIGIT(c) ((unsigned char)((c) - '0') <= 9)
REAL_DECL(readdir);
REAL_DECL(readdir64);
EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *e;

	do
		e = CALL_REAL(readdir, d);
	while (e && __builtin_expect(DIGIT(e->d_name[0]), 0) && hidden_entry(d, e->d_name));
	return e;
}
EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *e;

	do
		e = CALL_REAL(readdir64, d);
	while (e && __builtin_expect(DIGIT(e->d_name[0]), 0) && hidden_entry(d, e->d_name));
	return e;
}
REAL_DECL(readdir_r);
REAL_DECL(readdir64_r);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
EXPORT int readdir_r(DIR *d, struct dirent *entry, struct dirent **result)
{
	int r;

	do
		r = CALL_REAL(readdir_r, d, entry, result);
	while (r == 0 && *result && DIGIT((*result)->d_name[0]) && hidden_entry(d, (*result)->d_name));
	return r;
}
EXPORT int readdir64_r(DIR *d, struct dirent64 *entry, struct dirent64 **result)
{
	int r;

	do
		r = CALL_REAL(readdir64_r, d, entry, result);
	while (r == 0 && *result && DIGIT((*result)->d_name[0]) && hidden_entry(d, (*result)->d_name));
	return r;
}
#pragma GCC diagnostic pop

/* Writes through an fd this process opened for writing change a file's
 * size and mtime: note them (IN_MODIFY is queued inside write()). */
#define FD_WRITER(ret, name, params, fdarg, ...) \
	REAL_DECL(name);                          \
	EXPORT ret name params                    \
	{                                         \
		ret r_ = CALL_REAL(name, __VA_ARGS__); \
		if (r_ > 0 && fd_writable(fdarg)) \
			note_change();            \
		return r_;                        \
	}

FD_WRITER(ssize_t, write, (int fd, const void *b, size_t n), fd, fd, b, n)
FD_WRITER(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), fd, fd, b, n, o)
FD_WRITER(ssize_t, pwrite64, (int fd, const void *b, size_t n, off64_t o), fd, fd, b, n, o)
FD_WRITER(ssize_t, writev, (int fd, const struct iovec *v, int n), fd, fd, v, n)
FD_WRITER(ssize_t, pwritev, (int fd, const struct iovec *v, int n, off_t o), fd, fd, v, n, o)

/* stdio reaches the kernel through glibc-internal open/write/close: a stream
 * opened for writing notes a change when opened, flushed and closed (data
 * still in the stdio buffer has not reached the kernel, so the kernel's
 * answer is the cache's).  Writes that stdio flushes by itself when its
 * buffer fills are seen within the inotify thread's latency. */
static int stdio_mode_writes(const char *mode)
{
	return !bad_ptr(mode) && strpbrk(mode, "wa+") != NULL;
}
#define STDIO_OPEN(name, params, mode, ...)                  \
	REAL_DECL(name);                                      \
	EXPORT FILE *name params                              \
	{                                                     \
		FILE *file_ = CALL_REAL(name, __VA_ARGS__);     \
		if (stdio_mode_writes(mode)) {                \
			int saved_ = errno;                   \
			note_change();                        \
			if (file_)                            \
				fd_set_writable(fileno(file_), 1); \
			errno = saved_;                       \
		}                                             \
		return file_;                                 \
	}
STDIO_OPEN(fopen, (const char *p, const char *m), m, p, m)
STDIO_OPEN(fopen64, (const char *p, const char *m), m, p, m)
STDIO_OPEN(freopen, (const char *p, const char *m, FILE *f), m, p, m, f)
STDIO_OPEN(freopen64, (const char *p, const char *m, FILE *f), m, p, m, f)

REAL_DECL(fflush);
EXPORT int fflush(FILE *f)
{
	int r = CALL_REAL(fflush, f);

	if (!f || fd_writable(fileno(f)))
		note_change();
	return r;
}
REAL_DECL(fclose);
EXPORT int fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1, w = fd >= 0 && fd_writable(fd);
	int r = CALL_REAL(fclose, f);

	if (w) {
		note_change();
		fd_set_writable(fd, 0);
	}
	return r;
}

/*
 * The host closing (or dup2-ing over) the shim's inotify fd: invalidate/
 * gives the number up first (inval.h), then the host's call proceeds and
 * does to the number exactly what the kernel does.  From a signal handler
 * that interrupted this thread inside the shim nothing may wait (nowait).
 */
static void give_fd_up(int fd)
{
	int nowait = in_shim != 0;

	in_shim++; /* a handler that interrupts the give-up must not wait either */
	inval_fd_closing(fd, nowait);
	in_shim--;
}

static inline void fd_closing(int fd)
{
	if (__builtin_expect(inval_owns_fd(fd), 0))
		give_fd_up(fd);
}

static void range_closing(unsigned int lo, unsigned int hi)
{
	int fd = inval_fd_in_range(lo, hi);

	if (__builtin_expect(fd >= 0, 0))
		give_fd_up(fd);
	for (unsigned int i = lo; i <= hi && i < FD_BITS; i++) {
		if (i % (8 * sizeof(unsigned long)) == 0 && hi - i >= 8 * sizeof(unsigned long) - 1) {
			__atomic_store_n(&FD_WORD(i), 0, __ATOMIC_RELAXED);
			i += 8 * sizeof(unsigned long) - 1;
			continue;
		}
		fd_set_writable((int)i, 0);
	}
}

static void fd_table_unshared(void);

/* dup2/dup3 close `fd2` only if the call can succeed: `fd` must be open. */
static inline int dup_would_close(int fd, int fd2)
{
	return fd != fd2 && inval_owns_fd(fd2) && fcntl(fd, F_GETFD) >= 0;
}

REAL_DECL(close);
EXPORT int close(int fd)
{
	fd_closing(fd);
	fd_set_writable(fd, 0);
	return CALL_REAL(close, fd);
}

#if __GLIBC_PREREQ(2, 34) /* close_range and closefrom appeared in 2.34 */
REAL_DECL(close_range);
EXPORT int close_range(unsigned int fd, unsigned int max_fd, int flags)
{
	/* CLOSE_RANGE_CLOEXEC only marks; bad arguments close nothing. */
	if (!(flags & ~(int)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) &&
	    !(flags & (int)CLOSE_RANGE_CLOEXEC) && fd <= max_fd)
		range_closing(fd, max_fd);
	if ((flags & (int)CLOSE_RANGE_UNSHARE) && !(flags & ~(int)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)))
		fd_table_unshared();
	return CALL_REAL(close_range, fd, max_fd, flags);
}

REAL_DECL(closefrom);
EXPORT void closefrom(int lowfd)
{
	if (lowfd >= 0)
		range_closing((unsigned int)lowfd, ~0U);
	CALL_REAL_VOID(closefrom, lowfd);
}
#endif

REAL_DECL(dup);
EXPORT int dup(int fd)
{
	int r = CALL_REAL(dup, fd);

	if (r >= 0)
		fd_set_writable(r, fd_writable(fd));
	return r;
}
REAL_DECL(dup2);
EXPORT int dup2(int fd, int fd2)
{
	int r;

	if (__builtin_expect(dup_would_close(fd, fd2), 0))
		give_fd_up(fd2);
	r = CALL_REAL(dup2, fd, fd2);

	if (r >= 0 && r != fd)
		fd_set_writable(r, fd_writable(fd));
	return r;
}
REAL_DECL(dup3);
EXPORT int dup3(int fd, int fd2, int fl)
{
	int r;

	if (__builtin_expect(!(fl & ~O_CLOEXEC) && dup_would_close(fd, fd2), 0))
		give_fd_up(fd2);
	r = CALL_REAL(dup3, fd, fd2, fl);

	if (r >= 0)
		fd_set_writable(r, fd_writable(fd));
	return r;
}

/* ---------------------------------------------------------------------- */
/* Process state */

REAL_DECL(chdir);
EXPORT int chdir(const char *p)
{
	int r = CALL_REAL(chdir, p);

	__atomic_fetch_add(&cwd_epoch, 1, __ATOMIC_RELEASE);
	return r;
}
REAL_DECL(fchdir);
EXPORT int fchdir(int fd)
{
	int r = CALL_REAL(fchdir, fd);

	__atomic_fetch_add(&cwd_epoch, 1, __ATOMIC_RELEASE);
	return r;
}

#define CRED(name, params, ...)                    \
	REAL_DECL(name);                            \
	EXPORT int name params                      \
	{                                           \
		int r_ = CALL_REAL(name, __VA_ARGS__); \
		__atomic_fetch_add(&cred_epoch, 1, __ATOMIC_RELEASE); \
		return r_;                          \
	}
CRED(setuid, (uid_t u), u)
CRED(seteuid, (uid_t u), u)
CRED(setreuid, (uid_t a, uid_t b), a, b)
CRED(setresuid, (uid_t a, uid_t b, uid_t c), a, b, c)
CRED(setgid, (gid_t g), g)
CRED(setegid, (gid_t g), g)
CRED(setregid, (gid_t a, gid_t b), a, b)
CRED(setresgid, (gid_t a, gid_t b, gid_t c), a, b, c)
CRED(setgroups, (size_t n, const gid_t *l), n, l)
CRED(setfsuid, (uid_t u), u)
CRED(setfsgid, (gid_t g), g)
/* capset(2) has no glibc declaration (libcap's header has one). */
int capset(void *hdr, const void *data);
CRED(capset, (void *h, const void *d), h, d)

/*
 * Root directory, mounts and namespaces.  After any of these "/" and what
 * lies below it may be other directories (or other ids own them): the next
 * lookup empties the cache, the root's watch included (dcache_reset).
 * pivot_root has no glibc declaration but libc.so.6 exports it: interposed
 * for callers that use it; util-linux's pivot_root(8) and most others make
 * the raw syscall, which no LD_PRELOAD shim sees.
 */
static void ns_changed(void)
{
	__atomic_fetch_add(&ns_epoch, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cred_epoch, 1, __ATOMIC_RELEASE);
	preload_mounts_changed();
}
#define NS_CHANGE(name, params, ...)                 \
	REAL_DECL(name);                              \
	EXPORT int name params                        \
	{                                             \
		int r_ = CALL_REAL(name, __VA_ARGS__); \
		int saved_ = errno;                   \
		ns_changed();                         \
		errno = saved_;                       \
		return r_;                            \
	}
int pivot_root(const char *new_root, const char *put_old);
NS_CHANGE(chroot, (const char *p), p)
NS_CHANGE(pivot_root, (const char *n, const char *o), n, o)
NS_CHANGE(mount, (const char *s, const char *t, const char *f, unsigned long fl, const void *d),
	  s, t, f, fl, d)
NS_CHANGE(umount, (const char *t), t)
NS_CHANGE(umount2, (const char *t, int fl), t, fl)
#if __GLIBC_PREREQ(2, 36) /* the new mount API's wrappers */
NS_CHANGE(move_mount, (int fa, const char *a, int fb, const char *b, unsigned int fl), fa, a, fb, b, fl)
NS_CHANGE(mount_setattr, (int fd, const char *p, unsigned int fl, struct mount_attr *a, size_t n),
	  fd, p, fl, a, n)
#endif

/* Threads of this process as the kernel counts them, or -1 (no /proc). */
static int count_threads(void)
{
	char buf[4096];
	const char *p;
	long n = 0, r;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (n < (long)sizeof(buf) - 1 &&
	       (r = syscall(SYS_read, fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n] = '\0';
	p = strstr(buf, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

/* Whether every thread but the caller is the reader or one of the cache's
 * `cache_threads`.  Errs one way only: a thread starting or leaving is
 * counted by one side and not the other, and the answer is then 0. */
static int alone_besides(int cache_threads)
{
	int n = count_threads();

	return n > 0 && n == 1 + cache_threads + (inval_active() ? 1 : 0);
}

/* The cache asks only while it has no thread of its own (and holds the
 * mutex that dcache_threads() takes). */
int preload_sole_thread(void)
{
	return alone_besides(0);
}

/* Whether every thread but the caller is one of the shim's. */
static int alone_with_our_threads(void)
{
	return alone_besides(dcache_threads());
}

/*
 * unshare(CLONE_NEWUSER) and setns() into a user or mount namespace need a
 * single-threaded process (a mount namespace: nobody sharing our fs_struct).
 * Stop the reader thread (always), and if the program itself has no other
 * thread, tear the cache down with the liburcu threads it started, then let
 * the kernel decide.  Not possible in a fork() child of a process that had
 * used the cache: liburcu re-creates its call_rcu and hash-resize threads
 * there (its after-fork hooks), and those cannot be stopped.
 */
static void become_single_threaded(void)
{
	struct timespec step = { 0, 100 * 1000 };
	int n;

	inval_stop();
	n = count_threads();
	if (n <= 0 || n != 1 + dcache_threads())
		return; /* the program's own threads: the kernel refuses anyway */
	dcache_quiesce();
	for (int i = 0; i < 20000 && count_threads() > 1; i++)
		nanosleep(&step, NULL); /* a stopped thread is leaving */
}

/* Threads no longer share one fd table (or one cwd and root, or one mount
 * namespace): a process-wide cache and fd number would lie to some of them.
 * Unless the program has no other thread, give up for this process image. */
static void threads_diverge(void)
{
	if (!alone_with_our_threads()) {
		__atomic_store_n(&preload_enabled, 0, __ATOMIC_RELEASE);
		inval_disable();
	}
}

__attribute__((unused)) static void fd_table_unshared(void)
{
	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !in_shim) {
		in_shim++;
		threads_diverge();
		in_shim--;
	}
}

REAL_DECL(unshare);
EXPORT int unshare(int flags)
{
	int r, saved;

	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !in_shim) {
		in_shim++;
		if (flags & CLONE_NEWUSER)
			become_single_threaded();
		else if (flags & (CLONE_FILES | CLONE_FS | CLONE_NEWNS))
			threads_diverge();
		in_shim--;
	}
	r = CALL_REAL(unshare, flags);
	saved = errno;
	/* A new mount namespace: the instance's mountinfo fds still report
	 * the old one's changes.  Give the instance up; the next one opens
	 * them here (inval.c, "Mounts"). */
	if (r == 0 && (flags & CLONE_NEWNS) && !(flags & CLONE_NEWUSER) &&
	    __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !in_shim) {
		in_shim++;
		inval_stop();
		in_shim--;
	}
	ns_changed();
	errno = saved;
	return r;
}

REAL_DECL(setns);
EXPORT int setns(int fd, int nstype)
{
	int r, saved;

	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !in_shim) {
		int type = nstype;

		if (!type) { /* "any": ask the namespace fd what it is */
			type = ioctl(fd, NS_GET_NSTYPE);
			if (type <= 0)
				type = CLONE_NEWUSER;
		}
		in_shim++;
		if (type & (CLONE_NEWUSER | CLONE_NEWNS))
			become_single_threaded();
		in_shim--;
	}
	r = CALL_REAL(setns, fd, nstype);
	saved = errno;
	ns_changed();
	errno = saved;
	return r;
}

/* Reaping a child: its changes are in the inotify queue already. */
#define REAPER(ret, name, params, ...)                  \
	REAL_DECL(name);                                 \
	EXPORT ret name params                           \
	{                                                \
		ret r_ = CALL_REAL(name, __VA_ARGS__);    \
		note_change();                           \
		return r_;                               \
	}
REAPER(pid_t, wait, (int *s), s)
REAPER(pid_t, waitpid, (pid_t p, int *s, int o), p, s, o)
REAPER(pid_t, wait3, (int *s, int o, struct rusage *ru), s, o, ru)
REAPER(pid_t, wait4, (pid_t p, int *s, int o, struct rusage *ru), p, s, o, ru)
REAPER(int, waitid, (idtype_t t, id_t i, siginfo_t *si, int o), t, i, si, o)

/*
 * liburcu's fork hooks, as fork() below calls them.  With liburcu linked into
 * the library (RCUWALK_URCU_STATIC) they are the shim's own copy's, hidden
 * from the host.  With the shared liburcu-bp (RCUWALK_URCU_SHARED) the shim
 * and a host that uses liburcu-bp itself share one urcu-bp, and liburcu's
 * protocol has the host call the same hooks around its fork(): the
 * urcu_bp_before_fork() pair locks urcu-bp's grace-period and registry
 * mutexes, the call_rcu pair call_rcu_mutex.  Our fork() taking them again in
 * that thread would wait forever on mutexes the thread holds (seen: a host
 * doing urcu_bp_before_fork(); fork() hung in futex_wait).  So the shim
 * interposes the six hooks: each passes the call on and notes, per thread,
 * whether the host now holds that pair of locks, and fork() takes only what
 * this thread does not hold; the host releases its pair after fork() returns.
 * The real hooks are resolved on first use (not at start: every process
 * would pay the lookups), like fork's own real symbol (CALL_REAL).
 */
enum { BP_BEFORE, BP_PARENT, BP_CHILD, CR_BEFORE, CR_PARENT, CR_CHILD, URCU_HOOKS_N };
#ifdef RCUWALK_URCU_SHARED
static const char *const urcu_hook_names[URCU_HOOKS_N] = {
	"urcu_bp_before_fork",		"urcu_bp_after_fork_parent",
	"urcu_bp_after_fork_child",	"urcu_bp_call_rcu_before_fork",
	"urcu_bp_call_rcu_after_fork_parent", "urcu_bp_call_rcu_after_fork_child",
};
static void (*urcu_hooks[URCU_HOOKS_N])(void);
/* 1 while this thread's host code holds the urcu-bp / call_rcu fork locks. */
static __thread int host_holds_bp __attribute__((tls_model("initial-exec")));
static __thread int host_holds_call_rcu __attribute__((tls_model("initial-exec")));

static void resolve_urcu_hooks(void)
{
	if (__atomic_load_n(&urcu_hooks[URCU_HOOKS_N - 1], __ATOMIC_ACQUIRE))
		return;
	in_shim++; /* dlsym may allocate, and an allocator may stat */
	for (int i = 0; i < URCU_HOOKS_N; i++)
		__atomic_store_n(&urcu_hooks[i], (void (*)(void))dlsym(RTLD_NEXT, urcu_hook_names[i]),
				 __ATOMIC_RELEASE);
	in_shim--;
}

static inline void urcu_hook(int i)
{
	void (*f)(void) = __atomic_load_n(&urcu_hooks[i], __ATOMIC_ACQUIRE);

	if (f)
		f();
}

#define HOST_URCU_HOOK(name, i, holds, now)     \
	EXPORT void name(void)                 \
	{                                      \
		resolve_urcu_hooks();          \
		urcu_hook(i);                  \
		holds = now;                   \
	}
HOST_URCU_HOOK(urcu_bp_before_fork, BP_BEFORE, host_holds_bp, 1)
HOST_URCU_HOOK(urcu_bp_after_fork_parent, BP_PARENT, host_holds_bp, 0)
HOST_URCU_HOOK(urcu_bp_after_fork_child, BP_CHILD, host_holds_bp, 0)
HOST_URCU_HOOK(urcu_bp_call_rcu_before_fork, CR_BEFORE, host_holds_call_rcu, 1)
HOST_URCU_HOOK(urcu_bp_call_rcu_after_fork_parent, CR_PARENT, host_holds_call_rcu, 0)
HOST_URCU_HOOK(urcu_bp_call_rcu_after_fork_child, CR_CHILD, host_holds_call_rcu, 0)
#else
static void (*const urcu_hooks[URCU_HOOKS_N])(void) = {
	urcu_bp_before_fork,	      urcu_bp_after_fork_parent,
	urcu_bp_after_fork_child,     urcu_bp_call_rcu_before_fork,
	urcu_bp_call_rcu_after_fork_parent, urcu_bp_call_rcu_after_fork_child,
};
enum { host_holds_bp = 0, host_holds_call_rcu = 0 };

static inline void resolve_urcu_hooks(void) {}

static inline void urcu_hook(int i) { urcu_hooks[i](); }
#endif

/*
 * fork(): the child must not inherit our mutexes locked by another thread,
 * nor read the parent's inotify instance.  Following liburcu's advice (and
 * LTTng-UST), the urcu-bp and call_rcu fork hooks are called from here rather
 * than from pthread_atfork handlers (those the host holds already excepted,
 * above).  Order: liburcu's hooks first (they wait for the call_rcu and
 * resize threads, which wait for grace periods, which wait for readers,
 * which may be waiting for dcache_mutex), then our read mutex and dcache
 * mutex, which no holder keeps while waiting on liburcu.
 */
REAL_DECL(fork);
EXPORT pid_t fork(void)
{
	int on = __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !in_shim;
	int bp = !host_holds_bp, cr = !host_holds_call_rcu;
	pid_t pid;
	int saved;

	if (!on)
		return CALL_REAL(fork);
	/* The child's exec, if it makes one, finds its real function here. */
	in_shim++;
	preload_stats_resolve_exec();
	in_shim--;
	/* During the warm-up nothing of the cache exists (no fd, no table, no
	 * lock held: see warm_forks): a plain fork().  The full path below
	 * costs a shell ~18 page faults a fork (locks taken, the child's state
	 * reset), for nothing to protect. */
	if (__atomic_load_n(&preload_enabled, __ATOMIC_RELAXED) == PRELOAD_WARMUP) {
		__atomic_add_fetch(&warm_forks, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&preload_enabled, __ATOMIC_SEQ_CST) == PRELOAD_WARMUP) {
			pid = CALL_REAL(fork);
			if (pid == 0) {
				__atomic_store_n(&warm_forks, 0, __ATOMIC_RELAXED);
				return 0;
			}
			saved = errno;
			__atomic_sub_fetch(&warm_forks, 1, __ATOMIC_SEQ_CST);
			errno = saved;
			return pid;
		}
		__atomic_sub_fetch(&warm_forks, 1, __ATOMIC_SEQ_CST);
	}
	/* Before liburcu is loaded (urcu_lazy.c) the shim has no liburcu
	 * state to protect; the load waits for this fork to end. */
	if (!preload_urcu_fork_prepare())
		bp = cr = 0;
	if (bp || cr)
		resolve_urcu_hooks();
	in_shim++;
	if (cr)
		urcu_hook(CR_BEFORE);
	if (bp)
		urcu_hook(BP_BEFORE);
	inval_fork_prepare();
	dcache_fork_prepare();
	pid = CALL_REAL(fork);
	saved = errno;
	if (pid == 0) {
		if (bp)
			urcu_hook(BP_CHILD);
		if (cr)
			urcu_hook(CR_CHILD);
		inval_fork_child();
		dcache_fork_child();
		preload_urcu_fork_child();
	} else {
		if (bp)
			urcu_hook(BP_PARENT);
		if (cr)
			urcu_hook(CR_PARENT);
		dcache_fork_parent();
		inval_fork_parent();
		preload_urcu_fork_parent();
	}
	in_shim--;
	errno = saved;
	return pid;
}

/* ---------------------------------------------------------------------- */

__attribute__((constructor)) static void shim_init(void)
{
	refresh_ids();
	preload_init();
}

__attribute__((destructor)) static void shim_fini(void)
{
	in_shim++;
	preload_write_stats();
}
