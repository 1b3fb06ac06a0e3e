/* SPDX-License-Identifier: MIT */
/*
 * test_bad_pointers.c - bad pointers get the kernel's answer through the
 * shim, never a SIGSEGV (preload/fault.c), and the program's own SIGSEGV and
 * SIGBUS handlers keep working.
 *
 * For every interposed lookup entry point, each pointer argument in turn is
 * made bad (NULL, an unmapped page, a PROT_NONE page, a read-only page for
 * output buffers, a path running into a PROT_NONE page without its NUL)
 * while the others stay good, on names the cache holds (a present file, an
 * absent name, a symlink, a directory); the return value and errno are
 * compared with the raw system call's with the same pointers, and a
 * read-only buffer must be left unchanged.  A path that ends with its NUL on
 * the last byte before a PROT_NONE page must be answered normally.
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

/* Pre-2.33 and fortified entry points: exported by glibc and by the shim,
 * no longer declared by glibc's headers. */
int __xstat(int ver, const char *path, struct stat *buf);
int __xstat64(int ver, const char *path, struct stat64 *buf);
int __lxstat(int ver, const char *path, struct stat *buf);
int __lxstat64(int ver, const char *path, struct stat64 *buf);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *buf, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *buf, int flags);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t buflen);
ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf, size_t len, size_t buflen);

static long pg;
static char *unmapped, *none, *ro, *edge; /* edge: a readable page, PROT_NONE after it */

/* ---------------------------------------------------------------------- */
/* The entry points: each called with a path and an output buffer (ignored
 * by those that take none), and the raw system call that answers the same. */

#define OUT_LEN 256 /* >= sizeof(struct stat), sizeof(struct statx) */

static long ret_fd(long fd)
{
	if (fd >= 0) {
		syscall(SYS_close, fd);
		return 0;
	}
	return fd;
}

static long s_stat(const char *p, void *b) { return stat(p, b); }
static long s_stat64(const char *p, void *b) { return stat64(p, b); }
static long s_lstat(const char *p, void *b) { return lstat(p, b); }
static long s_lstat64(const char *p, void *b) { return lstat64(p, b); }
static long s_fstatat(const char *p, void *b) { return fstatat(AT_FDCWD, p, b, 0); }
static long s_fstatat64(const char *p, void *b) { return fstatat64(AT_FDCWD, p, b, 0); }
static long s_fstatat_nf(const char *p, void *b) { return fstatat(AT_FDCWD, p, b, AT_SYMLINK_NOFOLLOW); }
static long s_xstat(const char *p, void *b) { return __xstat(1, p, b); }
static long s_xstat64(const char *p, void *b) { return __xstat64(1, p, b); }
static long s_lxstat(const char *p, void *b) { return __lxstat(1, p, b); }
static long s_lxstat64(const char *p, void *b) { return __lxstat64(1, p, b); }
static long s_fxstatat(const char *p, void *b) { return __fxstatat(1, AT_FDCWD, p, b, 0); }
static long s_fxstatat64(const char *p, void *b) { return __fxstatat64(1, AT_FDCWD, p, b, 0); }
static long r_stat(const char *p, void *b) { return syscall(SYS_newfstatat, AT_FDCWD, p, b, 0); }
static long r_lstat(const char *p, void *b)
{
	return syscall(SYS_newfstatat, AT_FDCWD, p, b, AT_SYMLINK_NOFOLLOW);
}

static long s_statx(const char *p, void *b) { return statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, b); }
static long r_statx(const char *p, void *b)
{
	return syscall(SYS_statx, AT_FDCWD, p, 0, STATX_BASIC_STATS, b);
}

static long s_access(const char *p, void *b) { (void)b; return access(p, R_OK); }
static long s_faccessat(const char *p, void *b) { (void)b; return faccessat(AT_FDCWD, p, R_OK, 0); }
static long s_faccessat_e(const char *p, void *b)
{
	(void)b;
	return faccessat(AT_FDCWD, p, R_OK, AT_EACCESS);
}
static long r_access(const char *p, void *b) { (void)b; return syscall(SYS_faccessat, AT_FDCWD, p, R_OK); }

static long s_open(const char *p, void *b) { (void)b; return ret_fd(open(p, O_RDONLY)); }
static long s_open64(const char *p, void *b) { (void)b; return ret_fd(open64(p, O_RDONLY)); }
static long s_openat(const char *p, void *b) { (void)b; return ret_fd(openat(AT_FDCWD, p, O_RDONLY)); }
static long s_openat64(const char *p, void *b)
{
	(void)b;
	return ret_fd(openat64(AT_FDCWD, p, O_RDONLY));
}
static long s_open_2(const char *p, void *b) { (void)b; return ret_fd(__open_2(p, O_RDONLY)); }
static long s_open64_2(const char *p, void *b) { (void)b; return ret_fd(__open64_2(p, O_RDONLY)); }
static long s_openat_2(const char *p, void *b)
{
	(void)b;
	return ret_fd(__openat_2(AT_FDCWD, p, O_RDONLY));
}
static long s_openat64_2(const char *p, void *b)
{
	(void)b;
	return ret_fd(__openat64_2(AT_FDCWD, p, O_RDONLY));
}
static long s_open_dir(const char *p, void *b)
{
	(void)b;
	return ret_fd(open(p, O_RDONLY | O_DIRECTORY));
}
static long r_open(const char *p, void *b)
{
	(void)b;
	return ret_fd(syscall(SYS_openat, AT_FDCWD, p, O_RDONLY));
}
static long r_open_dir(const char *p, void *b)
{
	(void)b;
	return ret_fd(syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_DIRECTORY));
}
static long s_opendir(const char *p, void *b)
{
	DIR *d = opendir(p);

	(void)b;
	if (!d)
		return -1;
	closedir(d);
	return 0;
}
static long s_fopen(const char *p, void *b)
{
	FILE *f = fopen(p, "r");

	(void)b;
	if (!f)
		return -1;
	fclose(f);
	return 0;
}

static long s_readlink(const char *p, void *b) { return readlink(p, b, OUT_LEN); }
static long s_readlinkat(const char *p, void *b) { return readlinkat(AT_FDCWD, p, b, OUT_LEN); }
static long s_readlink_chk(const char *p, void *b) { return __readlink_chk(p, b, OUT_LEN, OUT_LEN); }
static long s_readlinkat_chk(const char *p, void *b)
{
	return __readlinkat_chk(AT_FDCWD, p, b, OUT_LEN, OUT_LEN);
}
static long r_readlink(const char *p, void *b) { return syscall(SYS_readlinkat, AT_FDCWD, p, b, OUT_LEN); }

struct ep {
	const char *name; /* the symbol first, for who_defines() */
	long (*shim)(const char *, void *);
	long (*raw)(const char *, void *);
	int has_buf;
};

static const struct ep eps[] = {
	{ "stat", s_stat, r_stat, 1 },
	{ "stat64", s_stat64, r_stat, 1 },
	{ "lstat", s_lstat, r_lstat, 1 },
	{ "lstat64", s_lstat64, r_lstat, 1 },
	{ "fstatat", s_fstatat, r_stat, 1 },
	{ "fstatat64", s_fstatat64, r_stat, 1 },
	{ "fstatat(NOFOLLOW)", s_fstatat_nf, r_lstat, 1 },
	{ "__xstat", s_xstat, r_stat, 1 },
	{ "__xstat64", s_xstat64, r_stat, 1 },
	{ "__lxstat", s_lxstat, r_lstat, 1 },
	{ "__lxstat64", s_lxstat64, r_lstat, 1 },
	{ "__fxstatat", s_fxstatat, r_stat, 1 },
	{ "__fxstatat64", s_fxstatat64, r_stat, 1 },
	{ "statx", s_statx, r_statx, 1 },
	{ "access", s_access, r_access, 0 },
	{ "faccessat", s_faccessat, r_access, 0 },
	{ "faccessat(AT_EACCESS)", s_faccessat_e, r_access, 0 },
	{ "open", s_open, r_open, 0 },
	{ "open64", s_open64, r_open, 0 },
	{ "openat", s_openat, r_open, 0 },
	{ "openat64", s_openat64, r_open, 0 },
	{ "__open_2", s_open_2, r_open, 0 },
	{ "__open64_2", s_open64_2, r_open, 0 },
	{ "__openat_2", s_openat_2, r_open, 0 },
	{ "__openat64_2", s_openat64_2, r_open, 0 },
	{ "open(O_DIRECTORY)", s_open_dir, r_open_dir, 0 },
	{ "opendir", s_opendir, r_open_dir, 0 },
	{ "fopen", s_fopen, r_open, 0 },
	{ "readlink", s_readlink, r_readlink, 1 },
	{ "readlinkat", s_readlinkat, r_readlink, 1 },
	{ "__readlink_chk", s_readlink_chk, r_readlink, 1 },
	{ "__readlinkat_chk", s_readlinkat_chk, r_readlink, 1 },
};

/* ---------------------------------------------------------------------- */

static char names[4][PLEN]; /* file, absent, symlink, directory */

static int setup(void **state)
{
	char *p;

	if (scratch_setup(state) != 0)
		return -1;
	pg = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, (size_t)pg * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* A page nothing maps (below any program's text; mmap allocates top
	 * down): a page unmapped here could be reused by the next mmap. */
	unmapped = (char *)0x20000;
	if (mincore(unmapped, (size_t)pg, (unsigned char[1]){ 0 }) == 0 || errno != ENOMEM)
		return -1;
	none = p;
	ro = p + pg;
	edge = p + 2 * pg;
	memset(ro, 0x5a, (size_t)pg);
	if (mprotect(none, (size_t)pg, PROT_NONE) ||
	    mprotect(ro, (size_t)pg, PROT_READ) || mprotect(edge + pg, (size_t)pg, PROT_NONE))
		return -1;
	join(names[0], g_scratch, "file");
	join(names[1], g_scratch, "absent");
	join(names[2], g_scratch, "link");
	join(names[3], g_scratch, "dir");
	if (raw_write_file(names[0], 10, 0) || symlink("file", names[2]) || raw_mkdir(names[3]))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	munmap(none, (size_t)pg * 4);
	return scratch_teardown(state);
}

/* Does the shim define the entry point the program binds to?  A sanitizer's
 * interceptor before it (libasan's stat, realpath...) reads the path itself
 * and faults there, with or without the shim: bad paths are not probed
 * through those, and the count of such probes is printed. */
static int shim_defines(const char *name)
{
	char sym[64];
	Dl_info info;
	void *f;

	snprintf(sym, sizeof(sym), "%.*s", (int)strcspn(name, "("), name);
	f = dlsym(RTLD_DEFAULT, sym);
	return f && dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "librcuwalk");
}

static int skipped_paths;

/* Call both with these pointers: 1 (and why) if they answer differently. */
static int differs(const struct ep *e, const char *path, void *buf, const char *what)
{
	long s, r;
	int serr, rerr;
	char before[OUT_LEN];

	memcpy(before, ro, OUT_LEN);
	errno = 0;
	s = e->shim(path, buf);
	serr = s < 0 ? errno : 0;
	errno = 0;
	r = e->raw(path, buf);
	rerr = r < 0 ? errno : 0;
	if ((s < 0) != (r < 0) || serr != rerr || (s >= 0 && s != r)) {
		print_error("%s %s: shim %ld (%s), kernel %ld (%s)\n", e->name, what, s,
			    strerror(serr), r, strerror(rerr));
		return 1;
	}
	if (memcmp(before, ro, OUT_LEN) != 0) {
		print_error("%s %s: a read-only buffer changed\n", e->name, what);
		return 1;
	}
	return 0;
}

/* Warm the cache for this name with good pointers (twice: a miss, then a
 * hit), then try each bad pointer. */
static int try_name(const struct ep *e, const char *name)
{
	char good[OUT_LEN];
	size_t len = strlen(name);
	char *cross = edge + pg - (long)len; /* the name's bytes, no NUL, then PROT_NONE */
	char *fits = cross - 1;              /* the name and its NUL, then PROT_NONE */
	int bad = 0;

	e->shim(name, good);
	e->shim(name, good);
	if (shim_defines(e->name)) {
		bad += differs(e, NULL, good, "NULL path");
		bad += differs(e, unmapped, good, "unmapped path");
		bad += differs(e, none, good, "PROT_NONE path");
		memcpy(cross, name, len);
		bad += differs(e, cross, good, "name running into PROT_NONE");
	} else {
		skipped_paths++;
	}
	memcpy(fits, name, len + 1);
	bad += differs(e, fits, good, "name ending on a page's last byte");
	if (e->has_buf) {
		bad += differs(e, name, NULL, "NULL buffer");
		bad += differs(e, name, unmapped, "unmapped buffer");
		bad += differs(e, name, none, "PROT_NONE buffer");
		bad += differs(e, name, ro, "read-only buffer");
		bad += differs(e, name, edge + pg - 8, "buffer running into PROT_NONE");
	}
	return bad;
}

static void test_bad_pointers_every_entry_point_answers_as_the_kernel(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(eps) / sizeof(eps[0]); i++)
		for (int n = 0; n < 4; n++)
			bad += try_name(&eps[i], names[n]);
	if (skipped_paths)
		print_message("%d entry point x name pairs: bad paths not probed (an interceptor "
			      "before the shim reads them)\n", skipped_paths);
	/* Without a sanitizer, every entry point is the shim's. */
	if (!getenv("RCUWALK_TEST_INTERCEPTED"))
		assert_int_equal(skipped_paths, 0);
	assert_int_equal(bad, 0);
}

/* A path of PATH_MAX bytes without a NUL, the byte after it unreadable: the
 * kernel stops at PATH_MAX (ENAMETOOLONG) before it would fault. */
static void test_bad_pointers_path_max_without_nul_before_prot_none_is_enametoolong(void **state)
{
	char *p = mmap(NULL, PATH_MAX + (size_t)pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stat st;
	int r, err;

	(void)state;
	assert_true(p != MAP_FAILED);
	memset(p, 'a', PATH_MAX);
	assert_int_equal(mprotect(p + PATH_MAX, (size_t)pg, PROT_NONE), 0);
	errno = 0;
	r = stat(p, &st);
	err = errno;
	assert_int_equal(r, -1);
	assert_int_equal(err, (int)(syscall(SYS_newfstatat, AT_FDCWD, p, &st, 0) < 0 ? errno : 0));
	assert_int_equal(err, ENAMETOOLONG);
	munmap(p, PATH_MAX + (size_t)pg);
}

/* realpath has no system call: glibc's crashes on an unreadable path; the
 * shim answers NULL with EFAULT, and leaves a read-only buffer alone. */
static void test_bad_pointers_realpath_unreadable_path_or_buffer_is_efault(void **state)
{
	char *r, before[OUT_LEN];

	(void)state;
	free(realpath(names[0], NULL));
	if (shim_defines("realpath")) {
		errno = 0;
		r = realpath(none, NULL);
		assert_null(r);
		assert_int_equal(errno, EFAULT);
	}
	memcpy(before, ro, sizeof(before));
	errno = 0;
	r = realpath(names[0], ro);
	assert_null(r);
	assert_int_equal(errno, EFAULT);
	assert_memory_equal(before, ro, sizeof(before));
	if (shim_defines("canonicalize_file_name")) {
		errno = 0;
		r = canonicalize_file_name(unmapped);
		assert_null(r);
		assert_int_equal(errno, EFAULT);
	}
}

/* ---------------------------------------------------------------------- */
/* The program's own SIGSEGV/SIGBUS handlers */

static volatile sig_atomic_t handled;
static void *volatile fault_addr;

/* A JIT's or a GC's handler: the fault was expected; make the page usable
 * and let the instruction run again. */
static void fixing_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	handled++;
	fault_addr = si->si_addr;
	mprotect((void *)((uintptr_t)si->si_addr & ~(uintptr_t)(pg - 1)), (size_t)pg,
		 PROT_READ | PROT_WRITE);
}

static void test_bad_pointers_programs_handler_gets_its_faults_not_the_shims(void **state)
{
	struct sigaction sa, old;
	char *p = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stat st;

	(void)state;
	assert_true(p != MAP_FAILED);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fixing_handler;
	sa.sa_flags = SA_SIGINFO;
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	handled = 0;
	stat(names[0], &st);
	/* The shim's faults: EFAULT, the handler not called. */
	errno = 0;
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(stat(names[0], (struct stat *)p), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(handled, 0);
	/* The program's own fault: its handler, with the right address. */
	((volatile char *)p)[7] = 1;
	assert_int_equal(handled, 1);
	assert_ptr_equal(fault_addr, p + 7);
	assert_int_equal(p[7], 1);
	assert_int_equal(sigaction(SIGSEGV, &old, NULL), 0);
	munmap(p, (size_t)pg);
}

static void other_handler(int sig) { (void)sig; }

/* What sigaction() and signal() report back is the program's disposition,
 * exactly as without the shim: handler, flags it set, mask. */
static void test_bad_pointers_sigaction_reports_the_programs_own_handler(void **state)
{
	struct sigaction sa, got, saved;

	(void)state;
	assert_int_equal(sigaction(SIGBUS, NULL, &saved), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fixing_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	assert_int_equal(sigaction(SIGBUS, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGBUS, NULL, &got), 0);
	assert_ptr_equal((void *)got.sa_sigaction, (void *)fixing_handler);
	assert_true(got.sa_flags & SA_SIGINFO);
	assert_true(got.sa_flags & SA_ONSTACK);
	assert_true(got.sa_flags & SA_RESTART);
	assert_false(got.sa_flags & SA_RESETHAND);
	assert_true(sigismember(&got.sa_mask, SIGUSR1));
	assert_false(sigismember(&got.sa_mask, SIGUSR2));
	assert_ptr_equal((void *)signal(SIGBUS, other_handler), (void *)fixing_handler);
	assert_ptr_equal((void *)signal(SIGBUS, SIG_DFL), (void *)other_handler);
	assert_int_equal(sigaction(SIGBUS, NULL, &got), 0);
	assert_ptr_equal((void *)got.sa_handler, (void *)SIG_DFL);
	/* The kernel's EFAULT for an unreadable act or an unwritable oldact. */
	errno = 0;
	assert_int_equal(sigaction(SIGBUS, (struct sigaction *)none, NULL), -1);
	assert_int_equal(errno, EFAULT);
	errno = 0;
	assert_int_equal(sigaction(SIGBUS, NULL, (struct sigaction *)ro), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(sigaction(SIGBUS, &saved, NULL), 0);
}

/* SIGSEGV's and SIGBUS's actions as the program saw them when main() began,
 * after every constructor (the shim's included). */
static struct sigaction at_start[2];

/* exec leaves every caught signal at SIG_DFL with no flags and an empty mask
 * (ctest starts us so): sigaction() must say just that, as the kernel does
 * without the shim, although the kernel holds the shim's handler (its
 * first install records the kernel's answer; a read-back once reported
 * glibc's SA_RESTORER and restorer).  Skipped where another library's
 * constructor installed a handler first (ASan): the kernel's action before
 * the shim is then not known here. */
static void test_bad_pointers_dispositions_at_start_are_what_exec_left(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		const struct sigaction *a = &at_start[i];
		sigset_t empty;

		if (a->sa_handler != SIG_DFL)
			skip();
		sigemptyset(&empty);
		assert_int_equal(a->sa_flags, 0);
		assert_ptr_equal((void *)a->sa_restorer, NULL);
		for (int sig = 1; sig < 65; sig++)
			assert_int_equal(sigismember(&a->sa_mask, sig) == 1,
					 sigismember(&empty, sig) == 1);
	}
	/* And the kernel holds the shim's handler, not SIG_DFL: the guard is
	 * on (raw rt_sigaction: glibc's would go through the shim). */
	for (int i = 0; i < 2; i++) {
		struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } k;

		assert_int_equal(syscall(SYS_rt_sigaction, i ? SIGBUS : SIGSEGV, NULL, &k, 8), 0);
		assert_ptr_not_equal(k.handler, (void *)SIG_DFL);
	}
}

/* Run fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	return wait_bounded(pid, 30);
}

static void crash_with_default(void)
{
	signal(SIGSEGV, SIG_DFL);
	*(volatile int *)none = 1;
	_exit(3);
}

static void ignore_sent_segv(void)
{
	signal(SIGSEGV, SIG_IGN);
	kill(getpid(), SIGSEGV);
	_exit(7);
}

static void fault_with_ignored_segv(void)
{
	signal(SIGSEGV, SIG_IGN);
	*(volatile int *)none = 1;
	_exit(3);
}

static void resethand_twice(void)
{
	struct sigaction sa, got;
	char *p = mmap(NULL, (size_t)pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fixing_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	handled = 0;
	((volatile char *)p)[0] = 1;
	sigaction(SIGSEGV, NULL, &got);
	if (handled != 1 || got.sa_handler != SIG_DFL)
		_exit(4);
	mprotect(p, (size_t)pg, PROT_NONE);
	((volatile char *)p)[0] = 1;
	_exit(5);
}

static void stat_in_ignored_segv(void)
{
	struct stat st;

	signal(SIGSEGV, SIG_IGN);
	stat(names[0], &st);
	if (stat(none, &st) != -1 || errno != EFAULT)
		_exit(6);
	_exit(0);
}

/* Without a handler of the program's, its own faults still kill it with
 * SIGSEGV; an ignored SIGSEGV sent by kill() stays ignored, an ignored fault
 * still kills; SA_RESETHAND runs the handler once; and the shim's own faults
 * are caught whatever the program's disposition. */
static void test_bad_pointers_default_ignored_and_oneshot_dispositions_behave_as_the_kernels(void **state)
{
	int s;

	(void)state;
	s = in_child(crash_with_default);
	assert_true(WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV);
	s = in_child(ignore_sent_segv);
	print_message("ignored kill: status 0x%x\n", s);
	assert_true(WIFEXITED(s) && WEXITSTATUS(s) == 7);
	s = in_child(fault_with_ignored_segv);
	assert_true(WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV);
	s = in_child(resethand_twice);
	assert_true(WIFSIGNALED(s) && WTERMSIG(s) == SIGSEGV);
	s = in_child(stat_in_ignored_segv);
	assert_true(WIFEXITED(s) && WEXITSTATUS(s) == 0);
}

/* SIGBUS: a path in a shared mapping of a file truncated under it.  The
 * kernel's EFAULT; the shim's copy takes SIGBUS there, not SIGSEGV. */
static void test_bad_pointers_path_in_truncated_mapping_is_efault(void **state)
{
	char f[PLEN];
	struct stat st;
	char *m;
	int fd, r, err;

	(void)state;
	join(f, g_scratch, "mapped");
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, pg), 0);
	m = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	strcpy(m, names[0]);
	assert_int_equal(stat(m, &st), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	errno = 0;
	r = stat(m, &st);
	err = errno;
	assert_int_equal(r, -1);
	assert_int_equal(err, EFAULT);
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, m, &st, 0), -1);
	assert_int_equal(errno, EFAULT);
	munmap(m, (size_t)pg);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_pointers_dispositions_at_start_are_what_exec_left),
		cmocka_unit_test(test_bad_pointers_every_entry_point_answers_as_the_kernel),
		cmocka_unit_test(test_bad_pointers_path_max_without_nul_before_prot_none_is_enametoolong),
		cmocka_unit_test(test_bad_pointers_realpath_unreadable_path_or_buffer_is_efault),
		cmocka_unit_test(test_bad_pointers_programs_handler_gets_its_faults_not_the_shims),
		cmocka_unit_test(test_bad_pointers_sigaction_reports_the_programs_own_handler),
		cmocka_unit_test(test_bad_pointers_default_ignored_and_oneshot_dispositions_behave_as_the_kernels),
		cmocka_unit_test(test_bad_pointers_path_in_truncated_mapping_is_efault),
	};

	if (!getenv("RCUWALK_TEST_SHIM")) {
		fprintf(stderr, "test_bad_pointers: run with librcuwalk.so preloaded (ctest does)\n");
		return 77;
	}
	memset(at_start, 0, sizeof(at_start));
	if (sigaction(SIGSEGV, NULL, &at_start[0]) != 0 || sigaction(SIGBUS, NULL, &at_start[1]) != 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
