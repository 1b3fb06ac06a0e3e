/* SPDX-License-Identifier: MIT */
/*
 * preload.h - rcuwalk's shim: the only module that knows glibc's entry points.
 *
 * preload/ defines the exported libc-named wrappers (shim.c), fills the
 * cache's ops with raw syscalls and the inotify ops (preload_init), and holds
 * the launcher (rcuwalk.c).  Nothing here is exported but the libc names.
 */
#ifndef RCUWALK_PRELOAD_H
#define RCUWALK_PRELOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * A system call made without libc: x86-64's syscall instruction inline,
 * elsewhere syscall(2).  -errno on failure; errno is never touched.  For the
 * start-up code, so that a process that looks nothing up binds no libc
 * function for it (each lazy binding is ~750 instructions of ld.so's, and
 * the first call into a page of libc's text that the program itself never
 * runs is a page fault): the credentials, RLIMIT_STACK, the signal mask
 * around the fault handler's installation.  Only calls that libc makes
 * the same way (no wrapper of its own semantics: getuid, prlimit64,
 * rt_sigprocmask).
 */
#if defined(__x86_64__)
__attribute__((always_inline)) /* also at -O0: no call out of .text.startup */
static inline long preload_sys(long n, long a1, long a2, long a3, long a4)
{
	long ret;
	register long r10 __asm__("r10") = a4;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#include <errno.h>
#include <unistd.h>
static inline long preload_sys(long n, long a1, long a2, long a3, long a4)
{
	int saved = errno;
	long r = syscall(n, a1, a2, a3, a4);

	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
}
#endif

/*
 * The time stamp counter, for the warm-up's clock (shim.h, preload_warm_ns1)
 * on x86-64, where the launcher measured its rate (RCUWALK_TSC_KHZ).  One
 * instruction, ~11 ns on this project's VM, and no page touched: the vDSO's
 * clock_gettime is two page faults in a process that reads no clock of its
 * own (26-50 us of a ~2 ms process there; gcc --version 105 faults against
 * 103).  In the copy routines' range
 * (fault.c): where a thread has turned the TSC off (prctl PR_SET_TSC,
 * PR_TSC_SIGSEGV) the instruction faults, and the handler makes it return
 * UINT64_MAX instead.  Any thread, async-signal-safe; only once
 * preload_uaccess_ready is set.
 */
uint64_t preload_rdtsc_guarded(void);

/* Read the configuration (RCUWALK_DISABLE, RCUWALK_MAX_MB, RCUWALK_STATS) and
 * wire cache/ and invalidate/ together.  Called once from the constructor;
 * calls that arrive before it pass through. */
void preload_init(void);

/*
 * preload_enabled (config.c), read by every wrapper with one atomic load:
 *   PRELOAD_OFF     every call goes to libc (RCUWALK_DISABLE, before the
 *                   constructor, an unusable configuration, or given up:
 *                   threads that no longer share one fd table or root);
 *   PRELOAD_ON      lookups ask the cache;
 *   PRELOAD_WARMUP  the warm-up (RCUWALK_WARMUP=N or =Tus, by default
 *                   PRELOAD_WARMUP_DEFAULT_US): the process image's first
 *                   lookups pass through and start nothing (no table, no
 *                   inotify instance, no session); the N-th, or the one
 *                   whose real call brings their total time to T, moves it
 *                   to LOAD;
 *   PRELOAD_LOAD    the next lookup loads liburcu (cache/dcache_urcu.c) and moves
 *                   it to ON (OFF if liburcu cannot be loaded), then asks
 *                   the cache.  Builds that link liburcu go through it too.
 * Only preload_init() sets it from OFF; afterwards it moves WARMUP -> LOAD
 * -> ON (compare-and-swap) and anything -> OFF, never back - but in a fork()
 * child, whose cache fork() emptied: ON or LOAD -> WARMUP there, before the
 * child runs anything (shim.c, preload_fork_child_rewarm).
 */
enum { PRELOAD_OFF = 0, PRELOAD_ON = 1, PRELOAD_WARMUP = 2, PRELOAD_LOAD = 3 };
extern int preload_enabled;
/* The warm-up's length (RCUWALK_WARMUP), set by preload_init(): N lookups
 * (preload_warmup), or T ns spent in their real calls (preload_warmup_ns);
 * 0 = no such limit.  Read-only after preload_init(). */
extern unsigned long preload_warmup;
extern unsigned long long preload_warmup_ns;
/* 1 if RCUWALK_DIR_RENT (--dir-rent) was given: the rent is the user's own
 * and the learned warm-up (warm_learn.c) leaves it.  Set before the first
 * lookup, then only read. */
extern int preload_dir_rent_given;
/* RCUWALK_TSC_KHZ as ns per TSC tick, times 2^32 (0: the warm-up reads
 * CLOCK_MONOTONIC): set by preload_init() on x86-64 only, from a rate
 * within PRELOAD_TSC_KHZ_MIN..MAX (100 MHz to 100 GHz; the launcher passes
 * on nothing else); read-only after but for the guarded read's fallback. */
extern uint64_t preload_tsc_mult;
#define PRELOAD_TSC_KHZ_MIN 100000ULL
#define PRELOAD_TSC_KHZ_MAX 100000000ULL

/* shim.c: dcache_urcu_load() (cache/dcache_urcu.c) with in_shim raised and
 * errno kept (the loader's own opens pass through the wrappers); also the
 * loader that preload_init() gives dcache_urcu_set_loader(). */
int preload_load_urcu(void);

/* Mounts may have changed (mount, umount, a namespace, chroot): forget the
 * filesystem verdicts cached per device number.  Any thread; one atomic. */
void preload_mounts_changed(void);

/* ops->sole_thread (dcache.h): 1 if every thread but the caller is
 * invalidate/'s reader; reads /proc/self/status.  Any thread, no lock. */
int preload_sole_thread(void);

/* Append this process's counter line to $RCUWALK_STATS (one O_APPEND write).
 * Called from the destructor. */
void preload_write_stats(void);

/* Read a small file (a /proc one) whole into buf, NUL-terminated, with raw
 * syscalls: the bytes read, or -1.  Any thread, async-signal-safe; at most
 * size - 1 bytes. */
long preload_read_file_raw(const char *path, char *buf, size_t size);

/* Verify mode (verify.c): RCUWALK_VERIFY=1.  Set once by preload_init(),
 * from the values of RCUWALK_VERIFY, RCUWALK_VERIFY_LOG and (fault-injection
 * builds) RCUWALK_TEST_CORRUPT it read. */
extern int preload_verify;
void preload_verify_init(const char *verify, const char *log, const char *corrupt);
/* Log one mismatch (one O_APPEND write) and count it.  errno kept. */
void preload_verify_mismatch(const char *call, const char *path, const char *cached,
			     const char *kernel);
uint64_t preload_verify_mismatches(void);
void preload_verify_fork_child(void);
/* Answers as log text ("ret=0 dev=... " / "ret=-1 errno=ENOENT"). */
struct statx;
void preload_fmt_ret(char *buf, size_t size, long ret, int err);
void preload_fmt_stat(char *buf, size_t size, int ret, int err, const struct stat *st);
void preload_fmt_statx(char *buf, size_t size, int ret, int err, const struct statx *sx);
void preload_fmt_name(char *buf, size_t size, long ret, int err, const char *s, size_t len);
/* Equal in every field the coherence contract covers (never the atime). */
int preload_stat_same(const struct stat *a, const struct stat *b);
int preload_statx_same(const struct statx *a, const struct statx *b);
/* Test builds only (RCUWALK_FAULT_INJECTION): RCUWALK_TEST_CORRUPT kinds;
 * 0 in the real library. */
#define PRELOAD_CORRUPT_SIZE 0x1u
#define PRELOAD_CORRUPT_ERRNO 0x2u
#define PRELOAD_CORRUPT_ACCESS 0x4u
#define PRELOAD_CORRUPT_LINK 0x8u
unsigned int preload_test_corrupt(void);

/*
 * The name dlsym() looks a real function up by, beside the start-up code
 * (.text.startup, whose 64 KiB window of .text every process faults in for
 * its constructor): as a string literal in .rodata, read by ld.so's hash of
 * it at a name's first call, it was a page fault of .rodata's in every
 * process that made a call through the shim (103 of zlib's configure's 107
 * exec'd processes), for that alone.  Read-only data in an executable
 * section: ld.so only reads it.
 */
#define PRELOAD_NAME_TEXT __attribute__((section(".text.startup.rcuwalk_names"), unused))
/*
 * User memory (fault.c).  The only routines of the shim that touch memory the
 * program passed in; a fault inside them returns -1 instead of killing the
 * program (x86-64; elsewhere they are plain copies).  Usable once
 * preload_uaccess_ready is set (preload_fault_init(), from preload_init(),
 * before the cache is enabled); until then the wrappers read nothing of the
 * program's.  Callers pass the call through to libc on -1: the kernel gives
 * its own answer (EFAULT).  Any context, async-signal-safe.
 */
extern int preload_uaccess_ready;
void preload_fault_init(void);
/* Copy the NUL-terminated src into dst (PATH_MAX + 8 bytes): its length
 * (< PATH_MAX), PATH_MAX if it has no NUL in its first PATH_MAX bytes, or -1
 * if reading it faulted. */
long preload_copy_path(char *dst, const char *src);
/* Copy n bytes: 0, or -1 if reading src or writing dst faulted (dst may then
 * hold part of src, as after the kernel's copy_to_user). */
int preload_copy_bytes(void *dst, const void *src, size_t n);
/*
 * A buffer the program passed in that lies in the main thread's stack, above
 * the caller's frame `frame` (an address in the wrapper's own frame): frames
 * in use there are mapped and writable, so the cache may fill it directly,
 * with no copy (most programs stat() into a local struct).  The main stack is
 * one mapping from the stack pointer up to __libc_stack_end, and the kernel
 * maps nothing else within RLIMIT_STACK below its top; preload_live_stack_max
 * (min(RLIMIT_STACK, 8 MiB), read at the first call: fault.c) bounds the
 * distance.  Not proven: a program's own MAP_FIXED mapping inside its main
 * stack's growth area, or its own mprotect() of live stack frames.
 */
extern uintptr_t preload_live_stack_max;
extern void *__libc_stack_end;
uintptr_t preload_live_stack_max_slow(void);
static inline int preload_in_live_stack(const void *buf, size_t len, const void *frame)
{
	uintptr_t b = (uintptr_t)buf, f = (uintptr_t)frame, top = (uintptr_t)__libc_stack_end;
	uintptr_t max = __atomic_load_n(&preload_live_stack_max, __ATOMIC_RELAXED);

	if (__builtin_expect(!max, 0))
		max = preload_live_stack_max_slow();
	return f < b && b + len <= top && top - f <= max;
}
/* Around execve: a SIGSEGV/SIGBUS the program ignores is handed to the
 * kernel as ignored (it survives exec), and taken back if exec failed. */
void preload_fault_before_exec(void);
void preload_fault_exec_failed(void);

#endif
