/* SPDX-License-Identifier: MIT */
/*
 * shim.h - what the two files of the shim's wrappers share (preload/ only):
 * shim.c, the lookup wrappers (stat, access, open, readlink, realpath,
 * opendir) with the warm-up and the way into the cache, and shim_process.c,
 * the wrappers that change files, guard the shim's own fds, and follow the
 * process (chdir, credentials, namespaces, reaping a child, fork).
 *
 * Invariants (shim.c's header has the rest):
 *  - preload_in_shim (initial-exec TLS) is non-zero while this thread runs
 *    cache or invalidate code; every wrapper entered then passes through.
 *  - CALL_REAL is the only way to the real function: it resolves it once
 *    (dlsym(RTLD_NEXT)) and times the call if the warm-up armed its clock.
 */
#ifndef RCUWALK_SHIM_H
#define RCUWALK_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "inval.h"
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))
/*
 * The wrappers most processes call during their warm-up (the stat, open,
 * access, readlink and realpath families, fopen, fclose, fflush, fstat,
 * lseek, pipe) and their pass-through helpers: in .text.hot, which the
 * linker places right after .text.startup, in the 64 KiB window of .text
 * that every process faults in for its constructor.  Spread over .text they
 * cost a process one window more (zlib's configure: 129 faults at their
 * first instructions: fstat 32, fopen 25, open 18, fopen64 17...).  The
 * cached paths (noinline, out of these functions) stay in .text.
 */
#define PRELOAD_WARM_TEXT __attribute__((section(".text.hot.rcuwalk_warm")))
#define WARM_EXPORT EXPORT PRELOAD_WARM_TEXT

/* Non-zero while this thread is inside the shim (shim.c). */
extern __thread int preload_in_shim __attribute__((tls_model("initial-exec")));

/* chdir, credential and namespace changes: bumped by the wrappers
 * (async-signal-safe), acted on by the next lookup (shim.c, apply_epochs). */
extern unsigned int preload_cwd_epoch, preload_cred_epoch, preload_ns_epoch;

/* The warm-up's counters (shim.c): seen, lookups seen in it, by every
 * thread (RCUWALK_WARMUP=N ends it by them); spent, ns spent in their real
 * calls (=Tus, the default); debt, ns that its fork() calls add to T (shim.c,
 * "fork debt"); the learned warm-up's (warm_learn.c): key, the program's, set
 * once the process came to its decision (0: not yet, or nothing to learn);
 * until, while it keeps warming up past T, the count of lookups at which its
 * cache starts at the latest (0: not extended).  Relaxed: they decide when,
 * never what. */
struct preload_warm_counters {
	unsigned long seen;
	unsigned long long spent, debt;
	unsigned long long key;
	unsigned long until;
};

/* The learned warm-up (warm_learn.c).  preload_warm_extend: the time budget
 * is spent; 1 if the process keeps warming up (preload_warm->until set), 0
 * if its cache starts now.  Async-signal-safe (a wrapper's warm-up path).
 * preload_warm_learn_exit: the destructor's; records the process's lookups
 * for its program if it came to the decision. */
int preload_warm_extend(void);
void preload_warm_learn_exit(void);
/* The extension's bound in time: an extended warm-up ends once its real
 * calls have taken this much more than T (warm_learn.c, W2). */
#define PRELOAD_WARM_EXTRA_NS 4000000ull
/* The warm-up's fork gate, alone on a page that the first warm-up fork()
 * marks MADV_WIPEONFORK (preload_fork_gate_wiped), so that a fork() child
 * finds it zero without writing it, and the parent writes it after a fork()
 * without a copy-on-write fault:
 *   forks  fork() calls of the warm-up in flight (shim.c, "warm_forks"): the
 *          cache does not start while non-zero.  seq_cst accesses only.
 *   warm   the counters, once the process has forked in its warm-up
 *          (preload_warm, below): a fork() child warms up from zero. */
struct preload_fork_gate {
	int forks;
	struct preload_warm_counters warm;
} __attribute__((aligned(4096)));
extern struct preload_fork_gate preload_fork_gate;
/* The counters in use: on the start-up data page, which the constructor has
 * written already (a process that never forks writes no page more for
 * them), until the first warm-up fork() moves them to the gate's page. */
extern struct preload_warm_counters *preload_warm;
#define preload_warm_forks (preload_fork_gate.forks)
/* 1 if preload_fork_gate's page is MADV_WIPEONFORK in this process (and so
 * in its fork() children): a child finds the gate 0 without writing it.
 * Marks it first if need be (one madvise() per exec'd image), and moves the
 * warm-up's counters onto it (preload_warm); 0 where that fails (the child
 * then resets `forks` itself, and keeps the parent's counters).  Any thread;
 * called by fork() during the warm-up only. */
int preload_fork_gate_wiped(void);
/* In a fork() child, from fork()'s full path (single-threaded): a process
 * past its warm-up (ON or LOAD) goes back to WARMUP with its counters at
 * zero, where a warm-up was asked for (shim.c). */
void preload_fork_child_rewarm(void);
/* In the parent, after a fork() of the warm-up that began at t0
 * (preload_mono_ns1()): adds the fork's time to the debt (shim.c, "fork
 * debt").  Async-signal-safe. */
void preload_warm_fork_debt(unsigned long long t0);

/* *slot, or the real function `name` (dlsym(RTLD_NEXT)) stored there.  Any
 * thread; the first call of a name is not async-signal-safe (dlsym). */
void *preload_real_sym(void **slot, const char *name);
/* The open wrappers' real openat, resolved (shim.c): for fork(). */
void preload_resolve_openat(void);

/* Whether a lookup may use the cache now (starting it if due): shim.c's
 * cache_usable() for shim_process.c.  Outside the shim. */
int preload_cache_usable(void);


/* Whether the cache may answer access(2) or faccessat() without AT_EACCESS:
 * 1 if the kernel would check it with the credentials the cache's lookups
 * use (no access_override_creds() change: creds.c), else 0 (pass through).
 * Any thread, outside or inside the shim; raw syscalls at the first call of
 * a credential epoch, then one load.  Preserves errno. */
int preload_access_as_lookup(void);

/* The warm-up's clock (shim.c): armed by a lookup passed through during a
 * warm-up by time; the next CALL_REAL of the thread is timed and its time
 * spent from the budget (preload_warm_spent). */
extern __thread int preload_warm_armed __attribute__((tls_model("initial-exec")));
void preload_warm_spent(unsigned long long t0);

/* CLOCK_MONOTONIC in ns, plus 1 (never 0: 0 means "not timed"); vDSO. */
static inline unsigned long long preload_mono_ns1(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec + 1;
}

/* The warm-up's clock, in ns plus 1 (never 0): the TSC at the rate the
 * launcher measured (preload_tsc_mult), else CLOCK_MONOTONIC.  The source
 * is chosen by preload_init(), before any call is timed, and changes only
 * if a thread turned the TSC off (prctl PR_SET_TSC): the read that faults
 * (preload_rdtsc_guarded) turns the TSC off for the whole process, and the
 * one call timed across the change counts as a slow one (at most a quarter
 * of the budget: warm_clamped_since) - a budget, not an answer.
 * Async-signal-safe. */
static inline unsigned long long preload_warm_ns1(void)
{
#if defined(__x86_64__)
	uint64_t m = __atomic_load_n(&preload_tsc_mult, __ATOMIC_RELAXED);

	if (m) {
		uint64_t t = preload_rdtsc_guarded();

		if (__builtin_expect(t != UINT64_MAX, 1))
			return (unsigned long long)(((unsigned __int128)t * m) >> 32) + 1;
		__atomic_store_n(&preload_tsc_mult, 0, __ATOMIC_RELAXED);
	}
#endif
	return preload_mono_ns1();
}

/* The start of a timed real call, or 0 if the clock is not armed. */
static inline unsigned long long preload_warm_clock(void)
{
	if (__builtin_expect(!preload_warm_armed, 1))
		return 0;
	preload_warm_armed = 0;
	return preload_warm_ns1();
}

/* A real function's slot, on the start-up data page (DCACHE_START_DATA,
 * dcache.h): a process's first calls of the wrappers, during its warm-up,
 * resolve and write them; on a page of .bss they were a page fault of the
 * shim's in every process that makes a call through it (gcc --version). */
#define REAL_DECL(name)                                   \
	static void *real_##name##_p DCACHE_START_DATA;   \
	static const char real_##name##_n[] PRELOAD_NAME_TEXT = #name
#define CALL_REAL(name, ...)                                                         \
	({                                                                            \
		__typeof__(&name) f_ = (__typeof__(&name))preload_real_sym(&real_##name##_p, real_##name##_n); \
		unsigned long long real_t0_ = preload_warm_clock();                              \
		__typeof__(f_(__VA_ARGS__)) real_ret_ =                               \
			f_ ? f_(__VA_ARGS__) : (errno = ENOSYS, (__typeof__(f_(__VA_ARGS__)))-1); \
		if (__builtin_expect(real_t0_ != 0, 0))                                    \
			preload_warm_spent(real_t0_);                                            \
		real_ret_;                                                                \
	})
/* The same for a function returning void (closefrom): never a lookup. */
#define CALL_REAL_VOID(name, ...)                                                    \
	({                                                                            \
		__typeof__(&name) f_ = (__typeof__(&name))preload_real_sym(&real_##name##_p, real_##name##_n); \
		if (f_)                                                               \
			f_(__VA_ARGS__);                                              \
	})

/*
 * The shim's own fds (shim_process.c, "The shim's own fds"): a wrapper
 * passes an fd argument through preload_hide_fd(), which turns one of the
 * shim's numbers into -1, a number the kernel answers exactly as a closed
 * one (EBADF where it uses the fd, nothing where the path is absolute).
 * One relaxed load and a compare for the program's fds.  Async-signal-safe.
 */
static inline int preload_hide_fd(int fd)
{
	return inval_hides_fd(fd) ? -1 : fd;
}

/* After a call that allocates the lowest free fd >= lo returned r (errno
 * as it left it): 1 if the shim gave its fds back because the call met
 * them (EMFILE) and the call is to be made again; 0 otherwise, also when r
 * is a number above one of the shim's, which are then given back so that
 * the next call gets the kernel's number (shim_process.c).  errno kept. */
int preload_fds_in_the_way(int r, int lo);
static inline int preload_fd_met_shim(int r)
{
	return __builtin_expect(r < 0 ? errno == EMFILE
				      : r > __atomic_load_n(&inval_fd_floor, __ATOMIC_RELAXED), 0);
}
/* `call` (an expression allocating the lowest free fd >= lo), made again
 * once if the shim's fds were in its way. */
#define PRELOAD_FD_ALLOC(call, lo)                                                  \
	({                                                                          \
		int fdr_ = (call);                                                  \
		if (preload_fd_met_shim(fdr_) && preload_fds_in_the_way(fdr_, (lo))) \
			fdr_ = (call);                                              \
		fdr_;                                                               \
	})

static inline int bad_ptr(const void *p)
{
	/* What the kernel would refuse with EFAULT; it answers those itself. */
	return (uintptr_t)p < 4096 || (uintptr_t)p >= 0x800000000000ULL;
}

/* A change made through a wrapper: the next lookup drains first (inval.h). */
static inline void note_change(void)
{
	if (__atomic_load_n(&preload_enabled, __ATOMIC_RELAXED))
		inval_note_change();
}

/* fds this process opened for writing: a write through them changes a cached
 * file's size/mtime.  Bits are set/cleared racily by open/close of that fd
 * number, which the program itself serialises.  The first FD_LOW fds' bits
 * are on the start-up data page (cache/dcache.h, DCACHE_START_DATA), the
 * rest in .lbss: every open(), fopen() and close() reads or writes its fd's
 * bit, during the warm-up too, and a page of .lbss first touched for it was
 * a page fault in most processes (1.2 a process of zlib's configure). */
#define FD_BITS 65536
#define FD_LOW 256
extern unsigned long preload_writable_low[FD_LOW / (8 * sizeof(unsigned long))];
extern unsigned long preload_writable_fds[FD_BITS / (8 * sizeof(unsigned long))];
#define FD_WORD(fd)                                                                          \
	(*((unsigned)(fd) < FD_LOW ? &preload_writable_low[(unsigned)(fd) / (8 * sizeof(unsigned long))] \
				   : &preload_writable_fds[(unsigned)(fd) / (8 * sizeof(unsigned long))]))
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

#endif
