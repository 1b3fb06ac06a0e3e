/* SPDX-License-Identifier: MIT */
/*
 * fault.c - user memory the shim touches, and the SIGSEGV/SIGBUS handler
 * that turns a fault there into "pass through" (the kernel's EFAULT).
 *
 * The kernel reads a path and writes a struct stat with copy routines listed
 * in its exception table: a fault inside one of them returns -EFAULT instead
 * of oopsing.  The shim does the same in userspace:
 *
 *  - preload_copy_path() and preload_copy_bytes() are the only routines of
 *    the shim that touch memory the program passed in (a path, a struct stat
 *    or statx, a readlink or realpath buffer, a struct sigaction).  They are
 *    leaf functions in assembly between uaccess_begin and uaccess_end: no
 *    stack frame, no callee-saved register, so a fault anywhere in them can
 *    resume at uaccess_fault, which returns -1 to their caller.
 *  - fault_handler() is installed for SIGSEGV and SIGBUS by preload_init()
 *    before the cache is enabled.  A kernel-generated fault (si_code > 0)
 *    whose instruction pointer lies in [uaccess_begin, uaccess_end) is the
 *    shim's: the handler moves the instruction pointer to uaccess_fault and
 *    returns.  Every other signal is the program's (chain()).
 *  - Callers that get -1 pass the call through to libc with the program's own
 *    pointers: the kernel then gives its exact answer (EFAULT, or ENOENT when
 *    a lookup fails before a struct would have been written).
 *
 * The program keeps its own SIGSEGV/SIGBUS disposition: sigaction(), signal(),
 * bsd_signal() and sysv_signal() are interposed for these two signals.  What
 * the program set is kept in prog[] and reported back as the old action; the
 * kernel holds fault_handler with the program's sa_mask and flags (SA_ONSTACK,
 * SA_NODEFER, SA_RESTART...), so that it runs where and with the mask the
 * program's handler expects, and chain() calls the program's handler with the
 * same siginfo and ucontext (a JVM's or a sanitizer's handler that edits the
 * context works unchanged).  SA_RESETHAND is emulated (kernel-side it would
 * remove fault_handler).  SIG_DFL and SIG_IGN are emulated: for a fault the
 * disposition is set to SIG_DFL and the handler returns, so the instruction
 * faults again and the kernel kills the process as it would have (core dump
 * included); an asynchronous SIGSEGV (kill, sigqueue) is ignored or re-sent.
 *
 * Invariants:
 *  - prog[i] is written under act_lock with all signals blocked, inside a
 *    seqcount (prog_seq[i] odd while writing); fault_handler reads it without
 *    the lock and retries while the count is odd or moved.  The lock holder
 *    never faults and cannot be interrupted by a signal in its own thread.
 *  - preload_uaccess_ready is set once both handlers are installed (on
 *    architectures without the assembly copies: at once, and the copies are
 *    plain, faulting as the program's own access would) and never cleared.
 *    While it is 0 (before the constructor, RCUWALK_DISABLE) the wrappers
 *    read none of the program's memory: they pass through.
 *  - A fault while the program blocks SIGSEGV (its own SIGSEGV handler
 *    without SA_NODEFER calling stat() with a bad pointer) cannot be caught:
 *    the kernel kills the process, as it does for any fault in that state.
 *  - A program that replaces the handler with the raw rt_sigaction syscall
 *    (Go's runtime) gets the faults itself; Go forwards signals from non-Go
 *    code to the handler it found installed, which is fault_handler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "dcache.h" /* DCACHE_START_TEXT */
#include "preload.h"

#define EXPORT __attribute__((visibility("default")))

/* Written by the installation at start, read by every wrapper: on the
 * start-up data page (DCACHE_START_DATA), as the program's dispositions
 * below and the slots of the real functions. */
int preload_uaccess_ready DCACHE_START_DATA;
uintptr_t preload_live_stack_max DCACHE_START_DATA;

/* At the first use, not at start: one system call fewer for the processes
 * that never fill a buffer in place (most end in their warm-up).  The limit
 * read later than the exec is as safe: the kernel keeps at least 128 MiB
 * free below the stack (mmap_base's MIN_GAP) whatever RLIMIT_STACK says,
 * and the distance allowed is at most 8 MiB; a limit lowered since only
 * allows less.  A failed read allows nothing (1: no buffer is that close). */
uintptr_t preload_live_stack_max_slow(void)
{
	struct rlimit rl;
	uintptr_t max = 1;

	/* getrlimit() as glibc makes it, raw (preload_sys) */
	if (preload_sys(SYS_prlimit64, 0, RLIMIT_STACK, 0, (long)&rl) == 0 && rl.rlim_cur > 1)
		max = rl.rlim_cur < ((rlim_t)8 << 20) ? (uintptr_t)rl.rlim_cur : (uintptr_t)8 << 20;
	__atomic_store_n(&preload_live_stack_max, max, __ATOMIC_RELAXED);
	return max;
}

#if defined(__x86_64__)
/*
 * long preload_copy_path(char *dst, const char *src)
 *   rdi = dst (PATH_MAX + 8 bytes), rsi = src.  Word at a time, every load
 *   8-aligned: an aligned word never crosses a page, so a load faults only
 *   where the kernel's strncpy_from_user would have faulted on a byte it
 *   needs.  The first word is the aligned one holding src[0], shifted right
 *   past the bytes before src, the vacated top bytes set to 0xff (not NUL).
 *   Each word is stored whole (the next store overwrites what lies past its
 *   NUL or past the valid head); a word with a zero byte ends the copy:
 *   (v - 0x01..01) & ~v & 0x80..80 has its lowest set bit in the first one.
 * int preload_copy_bytes(void *dst, const void *src, size_t n)
 *   rdi, rsi, rdx: 32 bytes at a time through xmm0/xmm1, then 8, then 1.
 * uint64_t preload_rdtsc_guarded(void)
 *   the TSC (preload.h), or -1 (UINT64_MAX) where rdtsc faults: a thread
 *   that turned it off (prctl PR_SET_TSC, PR_TSC_SIGSEGV) gets a SIGSEGV
 *   with si_code SI_KERNEL, which fixup() sends to the fault exit.
 * All three leave rsp alone and use only caller-saved registers.
 */
/* In DCACHE_FORK_TEXT's section (cache/dcache.h): every lookup copies its
 * path with them, and a fork child's sigaction() and open() too. */
__asm__(".pushsection .text.hot.rcuwalk_fork,\"ax\",@progbits\n"
	".p2align 4\n"
	".globl preload_uaccess_begin\n"
	".hidden preload_uaccess_begin\n"
	"preload_uaccess_begin:\n"
	".globl preload_copy_path\n"
	".hidden preload_copy_path\n"
	".type preload_copy_path,@function\n"
	"preload_copy_path:\n"
	"	movabsq $0x0101010101010101, %r8\n"
	"	movabsq $0x8080808080808080, %r9\n"
	"	movq %rsi, %rcx\n"
	"	andl $7, %ecx\n"
	"	movq %rsi, %rdx\n"
	"	andq $-8, %rdx\n"
	"	movq (%rdx), %rdx\n" /* may fault: src[0]'s page */
	"	shll $3, %ecx\n"
	"	shrq %cl, %rdx\n"
	"	movq $-1, %r10\n"
	"	shrq %cl, %r10\n"
	"	notq %r10\n"
	"	orq %r10, %rdx\n"
	"	shrl $3, %ecx\n"
	"	movl $8, %eax\n"
	"	subl %ecx, %eax\n" /* rax: bytes of src taken so far */
	"	xorl %ecx, %ecx\n" /* rcx: where this word goes in dst */
	"1:	movq %rdx, (%rdi,%rcx)\n"
	"	movq %rdx, %r11\n"
	"	subq %r8, %r11\n"
	"	notq %rdx\n"
	"	andq %rdx, %r11\n"
	"	andq %r9, %r11\n"
	"	jnz 2f\n"
	"	cmpq $4096, %rax\n"
	"	jae 3f\n"
	"	movq %rax, %rcx\n"
	"	movq (%rsi,%rax), %rdx\n" /* may fault; 8-aligned */
	"	addq $8, %rax\n"
	"	jmp 1b\n"
	"2:	bsfq %r11, %r11\n"
	"	shrq $3, %r11\n"
	"	leaq (%rcx,%r11), %rax\n"
	"	ret\n"
	"3:	movl $4096, %eax\n"
	"	ret\n"
	".size preload_copy_path, .-preload_copy_path\n"
	".globl preload_copy_bytes\n"
	".hidden preload_copy_bytes\n"
	".type preload_copy_bytes,@function\n"
	"preload_copy_bytes:\n"
	"1:	cmpq $32, %rdx\n"
	"	jb 2f\n"
	"	movdqu (%rsi), %xmm0\n"
	"	movdqu 16(%rsi), %xmm1\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	movdqu %xmm1, 16(%rdi)\n"
	"	addq $32, %rsi\n"
	"	addq $32, %rdi\n"
	"	subq $32, %rdx\n"
	"	jmp 1b\n"
	"2:	cmpq $8, %rdx\n"
	"	jb 3f\n"
	"	movq (%rsi), %rcx\n"
	"	movq %rcx, (%rdi)\n"
	"	addq $8, %rsi\n"
	"	addq $8, %rdi\n"
	"	subq $8, %rdx\n"
	"	jmp 2b\n"
	"3:	testq %rdx, %rdx\n"
	"	jz 4f\n"
	"	movzbl (%rsi), %ecx\n"
	"	movb %cl, (%rdi)\n"
	"	incq %rsi\n"
	"	incq %rdi\n"
	"	decq %rdx\n"
	"	jmp 3b\n"
	"4:	xorl %eax, %eax\n"
	"	ret\n"
	".size preload_copy_bytes, .-preload_copy_bytes\n"
	".globl preload_rdtsc_guarded\n"
	".hidden preload_rdtsc_guarded\n"
	".type preload_rdtsc_guarded,@function\n"
	"preload_rdtsc_guarded:\n"
	"	rdtsc\n" /* faults where the thread turned the TSC off */
	"	shlq $32, %rdx\n"
	"	orq %rdx, %rax\n"
	"	ret\n"
	".size preload_rdtsc_guarded, .-preload_rdtsc_guarded\n"
	".globl preload_uaccess_end\n"
	".hidden preload_uaccess_end\n"
	"preload_uaccess_end:\n"
	".globl preload_uaccess_fault\n"
	".hidden preload_uaccess_fault\n"
	"preload_uaccess_fault:\n"
	"	movq $-1, %rax\n"
	"	ret\n"
	".popsection\n");
_Static_assert(PATH_MAX == 4096, "preload_copy_path's limit is PATH_MAX");

extern const char preload_uaccess_begin[], preload_uaccess_end[], preload_uaccess_fault[];

/* Was this fault in a copy routine?  Then resume at its fault exit. */
static int fixup(const siginfo_t *si, ucontext_t *uc)
{
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	if (si->si_code <= 0 || ip < (uintptr_t)preload_uaccess_begin ||
	    ip >= (uintptr_t)preload_uaccess_end)
		return 0;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)preload_uaccess_fault;
	return 1;
}
#define FAULT_GUARD_SUPPORTED 1
#else
/* Elsewhere the copies are plain (a bad pointer faults as it did without
 * them) and no handler is installed. */
long preload_copy_path(char *dst, const char *src)
{
	size_t n = strnlen(src, PATH_MAX);

	memcpy(dst, src, n < PATH_MAX ? n + 1 : n);
	return (long)n;
}
int preload_copy_bytes(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}
static int fixup(const siginfo_t *si, ucontext_t *uc)
{
	(void)si;
	(void)uc;
	return 0;
}
#define FAULT_GUARD_SUPPORTED 0
#endif

/* ---------------------------------------------------------------------- */
/* The program's disposition of SIGSEGV (0) and SIGBUS (1). */

static struct sigaction prog[2] DCACHE_START_DATA;
static unsigned int prog_seq[2] DCACHE_START_DATA;
static int act_lock DCACHE_START_DATA;
static int (*real_sigaction_p)(int, const struct sigaction *, struct sigaction *) DCACHE_START_DATA;

__attribute__((always_inline)) static inline int slot(int sig)
{
	return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : -1;
}

/*
 * The installation at start (preload_fault_init) runs its own copies of
 * real_sigaction, mirror, prog_write and the lock, in .text.startup
 * (DCACHE_START_TEXT: no page of .text or .rodata touched for them alone at
 * start); the program's sigaction() calls run those in .text, beside the
 * wrappers (a fork() child that resets its handlers before exec, as bash's
 * do, touches one page of ours for the wrapper, not a second one).  Their
 * bodies are FAULT_INLINE, written once.
 */
#define FAULT_INLINE __attribute__((always_inline)) static inline
static const char sigaction_name[] DCACHE_START_RODATA = "sigaction";
typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);

FAULT_INLINE int real_sigaction_body(int sig, const struct sigaction *act, struct sigaction *old)
{
	int (*f)(int, const struct sigaction *, struct sigaction *) =
		__atomic_load_n(&real_sigaction_p, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT,
										  sigaction_name);
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real_sigaction_p, f, __ATOMIC_RELEASE);
	}
	return f(sig, act, old);
}

/* The program's sigaction() calls run in DCACHE_FORK_TEXT (cache/dcache.h):
 * a shell's child resets its handlers, SIGSEGV's among them, before its
 * exec; with the fork() and exec wrappers, one window of text. */
DCACHE_FORK_TEXT static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return real_sigaction_body(sig, act, old);
}

DCACHE_START_TEXT static int start_real_sigaction(int sig, const struct sigaction *act,
						  struct sigaction *old)
{
	return real_sigaction_body(sig, act, old);
}

/* prog[]'s seqcount fences.  ThreadSanitizer does not model fences (GCC
 * rejects them under -Werror with -fsanitize=thread); the preloaded library
 * is not tested under it: a compiler barrier there (x86-64 reorders neither
 * loads with loads nor stores with stores). */
#if defined(__SANITIZE_THREAD__)
#define SEQ_FENCE(order) __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define SEQ_FENCE(order) __atomic_thread_fence(order)
#endif

/* The program's action for slot i, read without the lock (any context).  In
 * DCACHE_FORK_TEXT beside its caller own_sigaction(). */
DCACHE_FORK_TEXT static void prog_read(int i, struct sigaction *out)
{
	unsigned int s;

	for (;;) {
		s = __atomic_load_n(&prog_seq[i], __ATOMIC_ACQUIRE);
		if (s & 1) {
			syscall(SYS_sched_yield);
			continue;
		}
		memcpy(out, &prog[i], sizeof(*out));
		SEQ_FENCE(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&prog_seq[i], __ATOMIC_RELAXED) == s)
			return;
	}
}

/* Under act_lock. */
FAULT_INLINE void prog_write(int i, const struct sigaction *in)
{
	__atomic_store_n(&prog_seq[i], prog_seq[i] + 1, __ATOMIC_RELAXED);
	SEQ_FENCE(__ATOMIC_RELEASE);
	memcpy(&prog[i], in, sizeof(*in));
	__atomic_store_n(&prog_seq[i], prog_seq[i] + 1, __ATOMIC_RELEASE);
}

/* act_lock with every signal blocked (raw: nothing of ours, nothing of libc's
 * that a wrapper could see).  "Every signal" as glibc's sigfillset() means
 * it: all but its internal SIGCANCEL (32) and SIGSETXID (33), whose
 * handlers a thread must be able to run (a setuid() in another thread waits
 * for them); the kernel's first _NSIG bits. */
FAULT_INLINE void lock_acts_body(sigset_t *old)
{
	unsigned long all = ~((1UL << (32 - 1)) | (1UL << (33 - 1)));

	_Static_assert(_NSIG / 8 == sizeof(all), "the kernel's sigset is one word");
	preload_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)old, _NSIG / 8);
	while (__atomic_exchange_n(&act_lock, 1, __ATOMIC_ACQUIRE))
		preload_sys(SYS_sched_yield, 0, 0, 0, 0);
}

FAULT_INLINE void unlock_acts_body(const sigset_t *old)
{
	__atomic_store_n(&act_lock, 0, __ATOMIC_RELEASE);
	preload_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, _NSIG / 8);
}

DCACHE_FORK_TEXT static void lock_acts(sigset_t *old)
{
	lock_acts_body(old);
}

DCACHE_FORK_TEXT static void unlock_acts(const sigset_t *old)
{
	unlock_acts_body(old);
}

static void fault_handler(int sig, siginfo_t *si, void *ucv);

/* Make the kernel hold fault_handler with the program's mask and flags, and
 * record what the program will be told (the kernel's own view of mask and
 * flags, as glibc reports them, with the program's handler).  Under act_lock. */
FAULT_INLINE int mirror_body(int sig, const struct sigaction *want, sigaction_fn *rs)
{
	struct sigaction k = *want, cur;

	k.sa_sigaction = fault_handler;
	k.sa_flags = (want->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
	if (rs(sig, &k, NULL) != 0)
		return -1;
	if (rs(sig, NULL, &cur) == 0) {
		k = *want;
		k.sa_mask = cur.sa_mask;
		k.sa_flags = (cur.sa_flags & ~(SA_SIGINFO | SA_RESETHAND)) |
			     (want->sa_flags & (SA_SIGINFO | SA_RESETHAND));
		k.sa_restorer = cur.sa_restorer;
		prog_write(slot(sig), &k);
	} else {
		prog_write(slot(sig), want);
	}
	return 0;
}

DCACHE_FORK_TEXT static int mirror(int sig, const struct sigaction *want)
{
	return mirror_body(sig, want, real_sigaction);
}

/* A signal that is not the shim's: what the program's disposition does. */
static void chain(int sig, siginfo_t *si, void *ucv)
{
	int i = slot(sig), sync = si->si_code > 0;
	struct sigaction a;

	prog_read(i, &a);
	if (a.sa_handler == SIG_IGN && !sync)
		return;
	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN) {
		/* The kernel ignores no fault: it kills.  Back to SIG_DFL, then
		 * the faulting instruction runs again (or the signal is sent
		 * again, pending until this handler returns). */
		struct sigaction d;

		memset(&d, 0, sizeof(d));
		d.sa_handler = SIG_DFL;
		real_sigaction(sig, &d, NULL);
		if (!sync)
			syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
		return;
	}
	if (a.sa_flags & SA_RESETHAND) {
		struct sigaction d;
		sigset_t old;

		memset(&d, 0, sizeof(d));
		d.sa_handler = SIG_DFL;
		lock_acts(&old);
		prog_write(i, &d);
		unlock_acts(&old);
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, ucv);
	else
		a.sa_handler(sig);
}

static void fault_handler(int sig, siginfo_t *si, void *ucv)
{
	if (fixup(si, (ucontext_t *)ucv))
		return;
	chain(sig, si, ucv);
}

/*
 * The first install, from preload_init(): one rt_sigaction call a signal
 * where the kernel's action is SIG_DFL with no flags and an empty mask, as
 * exec leaves every caught signal (flush_signal_handlers()): the usual case.
 * Setting fault_handler with an empty mask and SA_SIGINFO is then what
 * mirror_body() would set, and the call's answer, the kernel's action before
 * it, is recorded as the program's: exactly what sigaction(sig, NULL, &o)
 * tells the program without the shim (flags 0, no restorer), where the
 * read-back reported glibc's SA_RESTORER.  Anything else (an earlier
 * constructor's handler, a signal ignored across exec) is mirrored as a
 * program's call is, two calls more.  Only the kernel's word of sa_mask is
 * compared: glibc's sigaction() writes no more of it.  Under act_lock.
 */
#if defined(__x86_64__)
#define FAULT_SA_RESTORER 0x04000000 /* the kernel's (asm/signal.h): glibc sets it */
#else
#define FAULT_SA_RESTORER 0
#endif

DCACHE_START_TEXT static int install_first(int sig)
{
	struct sigaction k, prev;

	memset(&k, 0, sizeof(k));
	memset(&prev, 0, sizeof(prev));
	k.sa_sigaction = fault_handler;
	k.sa_flags = SA_SIGINFO;
	if (start_real_sigaction(sig, &k, &prev) != 0)
		return -1;
	if (prev.sa_handler == SIG_DFL && !(prev.sa_flags & ~FAULT_SA_RESTORER) &&
	    !*(const unsigned long *)(const void *)&prev.sa_mask) {
		prog_write(slot(sig), &prev);
		return 0;
	}
	return mirror_body(sig, &prev, start_real_sigaction);
}

DCACHE_START_TEXT void preload_fault_init(void)
{
	sigset_t old;
	int ok = 1;

	if (!FAULT_GUARD_SUPPORTED) {
		__atomic_store_n(&preload_uaccess_ready, 1, __ATOMIC_RELEASE);
		return;
	}
	lock_acts_body(&old);
	for (int i = 0; i < 2; i++)
		if (install_first(i ? SIGBUS : SIGSEGV) != 0)
			ok = 0;
	if (ok)
		__atomic_store_n(&preload_uaccess_ready, 1, __ATOMIC_RELEASE);
	unlock_acts_body(&old);
}

/* ---------------------------------------------------------------------- */
/* The program's calls */

/* sigaction for SIGSEGV/SIGBUS once guarded: the kernel's answers (EFAULT for
 * an unreadable act or unwritable oldact, the new action kept even then, as
 * rt_sigaction does). */
DCACHE_FORK_TEXT static int own_sigaction(int sig, const struct sigaction *act,
					   struct sigaction *oldact)
{
	struct sigaction nact, old;
	sigset_t mask;
	int r = 0, err = 0;

	if (act && preload_copy_bytes(&nact, act, sizeof(nact)) != 0) {
		errno = EFAULT;
		return -1;
	}
	/* A question only (what a program asks before it chains a handler of
	 * its own): the seqcount's read, as the handler makes it.  No lock:
	 * taking it costs two rt_sigprocmask calls and a write to act_lock's
	 * page (after fork(), a copy-on-write fault). */
	if (!act) {
		prog_read(slot(sig), &old);
	} else {
		lock_acts(&mask);
		memcpy(&old, &prog[slot(sig)], sizeof(old));
		if (mirror(sig, &nact) != 0) {
			r = -1;
			err = errno;
		}
		unlock_acts(&mask);
		if (r != 0) {
			errno = err;
			return -1;
		}
	}
	if (oldact && preload_copy_bytes(oldact, &old, sizeof(old)) != 0) {
		errno = EFAULT;
		return -1;
	}
	return 0;
}

static inline int owned(int sig)
{
	return FAULT_GUARD_SUPPORTED && slot(sig) >= 0 &&
	       __atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE);
}

EXPORT DCACHE_FORK_TEXT int sigaction(int sig, const struct sigaction *act, struct sigaction *oldact)
{
	return owned(sig) ? own_sigaction(sig, act, oldact) : real_sigaction(sig, act, oldact);
}

int __sigaction(int sig, const struct sigaction *act, struct sigaction *oldact);
sighandler_t bsd_signal(int sig, sighandler_t h);
EXPORT DCACHE_FORK_TEXT int __sigaction(int sig, const struct sigaction *act,
					struct sigaction *oldact)
{
	return sigaction(sig, act, oldact);
}

/* signal(): glibc's BSD semantics (the signal blocked in its handler,
 * SA_RESTART); sysv_signal(): one-shot, not blocked.  Other signals go to
 * the next definition.  In DCACHE_FORK_TEXT with sigaction(): a program
 * that sets its handlers at start (gcc) touches no other window for them. */
DCACHE_FORK_TEXT static sighandler_t own_signal(int sig, sighandler_t h, int flags,
					       int block_self)
{
	struct sigaction a, old;

	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	if (block_self)
		sigaddset(&a.sa_mask, sig);
	a.sa_flags = flags;
	if (own_sigaction(sig, &a, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}

#define SIGNAL_LIKE(name, flags, block_self)                                            \
	static void *real_##name##_p DCACHE_START_DATA;                               \
	static const char real_##name##_n[] PRELOAD_NAME_TEXT = #name;                \
	EXPORT DCACHE_FORK_TEXT sighandler_t name(int sig, sighandler_t h)            \
	{                                                                             \
		sighandler_t (*f_)(int, sighandler_t);                                \
		if (owned(sig))                                                       \
			return own_signal(sig, h, flags, block_self);                 \
		f_ = (sighandler_t(*)(int, sighandler_t))__atomic_load_n(&real_##name##_p, \
									 __ATOMIC_ACQUIRE); \
		if (!f_) {                                                            \
			f_ = (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, real_##name##_n); \
			if (!f_) {                                                    \
				errno = ENOSYS;                                       \
				return SIG_ERR;                                       \
			}                                                             \
			__atomic_store_n(&real_##name##_p, (void *)f_, __ATOMIC_RELEASE); \
		}                                                                     \
		return f_(sig, h);                                                    \
	}
SIGNAL_LIKE(signal, SA_RESTART, 1)
SIGNAL_LIKE(bsd_signal, SA_RESTART, 1)
SIGNAL_LIKE(sysv_signal, SA_RESETHAND | SA_NODEFER, 0)
SIGNAL_LIKE(__sysv_signal, SA_RESETHAND | SA_NODEFER, 0)

/* Before an exec: a SIGSEGV/SIGBUS the program ignores stays ignored in the
 * new image (the kernel resets only handlers).  After a failed exec the
 * handler comes back. */
static int some_ignored(void)
{
	return owned(SIGSEGV) &&
	       (prog[0].sa_handler == SIG_IGN || prog[1].sa_handler == SIG_IGN);
}

DCACHE_FORK_TEXT void preload_fault_before_exec(void)
{
	sigset_t mask;

	if (!some_ignored())
		return;
	lock_acts(&mask);
	for (int i = 0; i < 2; i++)
		if (prog[i].sa_handler == SIG_IGN)
			real_sigaction(i ? SIGBUS : SIGSEGV, &prog[i], NULL);
	unlock_acts(&mask);
}

DCACHE_FORK_TEXT void preload_fault_exec_failed(void)
{
	sigset_t mask;
	int saved = errno;

	if (!some_ignored())
		return;
	lock_acts(&mask);
	for (int i = 0; i < 2; i++)
		if (prog[i].sa_handler == SIG_IGN) {
			struct sigaction a = prog[i];

			mirror(i ? SIGBUS : SIGSEGV, &a);
		}
	unlock_acts(&mask);
	errno = saved;
}
