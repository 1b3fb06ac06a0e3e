/* SPDX-License-Identifier: MIT */
/*
 * test_warmup.c - the warm-up (RCUWALK_WARMUP=N or =Tus, preload/preload.h):
 * a process image's first N lookups, or its first lookups until their real
 * calls took T, pass through to the kernel, are counted as pass_warmup, and
 * start nothing (no inotify instance); the lookups after them use the
 * cache.  Every answer, before and after the warm-up's end, equals the raw
 * syscall's.  The default is a time (1ms).
 *
 * Each test runs a --probe child (this binary, fork+execve'd with the shim,
 * RCUWALK_WARMUP and RCUWALK_STATS set), so that its count starts from zero:
 *
 *   --probe DIR A B OUT   A stat()s through the shim, alternating DIR/f
 *                         (present) and DIR/n (absent), each compared with
 *                         the raw syscall; then the number of inotify
 *                         instances it holds; then B more and the number
 *                         again.  Writes "mismatches=M before=I after=J" to
 *                         OUT (raw syscalls: no lookup of its own).
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"


/* Inotify instances among this process's fds, by raw readlinkat() of
 * /proc/self/fd/N (the shim's own fds are moved above 511). */
static int count_inotify_fds(void)
{
	char path[64], target[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		long len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = syscall(SYS_readlinkat, AT_FDCWD, path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (!strcmp(target, "anon_inode:inotify"))
			n++;
	}
	return n;
}

/* n lookups through the shim, each compared with the raw syscall: the
 * number that differed. */
static int lookups(const char *f, const char *absent, long n)
{
	struct obs shim, raw;
	char why[512];
	int bad = 0;

	for (long i = 0; i < n; i++) {
		const char *p = (i % 2) ? absent : f;

		observe_shim(p, &shim);
		observe_raw(p, &raw);
		if (obs_diff(&shim, &raw, why, sizeof(why))) {
			fprintf(stderr, "lookup %ld of %s: %s\n", i, p, why);
			bad++;
		}
	}
	return bad;
}

static int probe_main(char **argv)
{
	char f[PLEN], absent[PLEN], out[128];
	long a = strtol(argv[3], NULL, 10), b = strtol(argv[4], NULL, 10);
	int bad, before, after;

	join(f, argv[2], "f");
	join(absent, argv[2], "n");
	bad = lookups(f, absent, a);
	before = count_inotify_fds();
	bad += lookups(f, absent, b);
	after = count_inotify_fds();
	snprintf(out, sizeof(out), "mismatches=%d before=%d after=%d\n", bad, before, after);
	return write_result(argv[5], out) == 0 ? 0 : 2;
}

/* --fork-probe DIR A B OUT: A lookups (within the warm-up), fork(); the
 * child makes B lookups and writes "mismatches=M inst=I" to OUT.child; the
 * parent, after the child, B lookups and OUT.  Both must end their warm-up
 * and start a cache: the child too, though it was forked while the fork
 * gate (shim.c, warm_forks) counted its fork. */
static int fork_probe_main(char **argv)
{
	char f[PLEN], absent[PLEN], out[PLEN + 8], line[128];
	long a = strtol(argv[3], NULL, 10), b = strtol(argv[4], NULL, 10);
	int bad, st;
	pid_t pid;

	join(f, argv[2], "f");
	join(absent, argv[2], "n");
	bad = lookups(f, absent, a);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		bad += lookups(f, absent, b);
		snprintf(line, sizeof(line), "mismatches=%d inst=%d\n", bad, count_inotify_fds());
		snprintf(out, sizeof(out), "%s.child", argv[5]);
		_exit(write_result(out, line) == 0 ? 0 : 2);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 2;
	bad += lookups(f, absent, b);
	snprintf(line, sizeof(line), "mismatches=%d inst=%d\n", bad, count_inotify_fds());
	return write_result(argv[5], line) == 0 ? 0 : 2;
}

/* --fork-debt-probe DIR K L OUT: K rounds of L lookups then a fork() whose
 * child _exits at once; then 3 lookups; writes "mismatches=M inst=I" to
 * OUT.  With a time budget, each fork() of the warm-up owes its time (at
 * most a quarter of the budget) to it (preload/shim.c, "fork debt").  3,
 * not more: each lookup counts at most a quarter of the budget plus 1 ns,
 * so 3 after the last fork cannot spend it whatever they cost; 10 did,
 * where a loaded machine's lookups had used up the slack of the rounds
 * (2 of ~10 runs of the suite under ctest -j2 on a VM whose lookups take
 * 2 us: 1 instance where 0 were expected). */
static int fork_debt_probe_main(char **argv)
{
	char f[PLEN], absent[PLEN], line[128];
	long k = strtol(argv[3], NULL, 10), l = strtol(argv[4], NULL, 10);
	int bad = 0, st;

	join(f, argv[2], "f");
	join(absent, argv[2], "n");
	for (long i = 0; i < k; i++) {
		pid_t pid;

		bad += lookups(f, absent, l);
		pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, &st, 0) != pid)
			return 2;
	}
	bad += lookups(f, absent, 3);
	snprintf(line, sizeof(line), "mismatches=%d inst=%d\n", bad, count_inotify_fds());
	return write_result(argv[5], line) == 0 ? 0 : 2;
}

/* --slow-probe DIR K OUT: K opens of the FIFO DIR/p through the shim, each
 * held up ~20 ms in the kernel until a thread opens the other end (raw
 * syscall), then 10 lookups; writes "mismatches=M inst=I" to OUT.  A call
 * held up so counts at most a quarter of the warm-up's time budget
 * (preload/shim.c, preload_warm_spent): one does not end it, four do. */
struct fifo_arg {
	const char *p;
};

static void *fifo_writer(void *a)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	long fd;

	nanosleep(&ts, NULL);
	fd = syscall(SYS_openat, AT_FDCWD, ((struct fifo_arg *)a)->p, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		syscall(SYS_close, fd);
	return NULL;
}

static int slow_probe_main(char **argv)
{
	char f[PLEN], absent[PLEN], fifo[PLEN], line[128];
	long k = strtol(argv[3], NULL, 10);
	struct fifo_arg a = { fifo };
	int bad;

	join(f, argv[2], "f");
	join(absent, argv[2], "n");
	join(fifo, argv[2], "p");
	if (syscall(SYS_mknodat, AT_FDCWD, fifo, S_IFIFO | 0600, 0) != 0)
		return 2;
	for (long i = 0; i < k; i++) {
		pthread_t t;
		int fd;

		if (pthread_create(&t, NULL, fifo_writer, &a) != 0)
			return 2;
		fd = open(fifo, O_RDONLY | O_CLOEXEC); /* through the shim: a lookup */
		pthread_join(t, NULL);
		if (fd < 0)
			return 2;
		close(fd);
	}
	bad = lookups(f, absent, 10);
	snprintf(line, sizeof(line), "mismatches=%d inst=%d\n", bad, count_inotify_fds());
	return write_result(argv[4], line) == 0 ? 0 : 2;
}

/* --fork-race DIR OUT: a thread makes 3,000 lookups, crossing the warm-up's
 * end, while the main thread forks 300 children; the first 30 make one or
 * two lookups each and exit 1 if one differed from the kernel's.  Nothing may hang
 * (the test's bound), no answer may differ, and the cache must have started
 * (a lookup that found a fork in flight passes through; a later one starts
 * it). */
struct race_arg {
	const char *f, *absent;
	int bad;
};

static void *race_lookups(void *p)
{
	struct race_arg *r = p;

	r->bad = lookups(r->f, r->absent, 3000);
	return NULL;
}

static int fork_race_main(char **argv)
{
	char f[PLEN], absent[PLEN], line[128];
	struct race_arg r;
	pthread_t t;
	int childfail = 0, st;

	join(f, argv[2], "f");
	join(absent, argv[2], "n");
	r.f = f;
	r.absent = absent;
	r.bad = 0;
	if (pthread_create(&t, NULL, race_lookups, &r) != 0)
		return 2;
	for (int i = 0; i < 300; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		/* Only the first 30 children look up: the warm-up ends within
		 * them, and each child whose parent's cache runs makes an inotify
		 * instance of its own; 300 of them, torn down after exit, ran the
		 * user's 128 out for the next tests (CI's step 6, two suites at
		 * once: test_own_fds found the shim without an instance). */
		if (pid == 0)
			_exit(i < 30 && lookups(f, absent, 1 + (i & 1)) ? 1 : 0);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			childfail++;
	}
	pthread_join(t, NULL);
	r.bad += lookups(f, absent, 10); /* the cache, if it had not started yet */
	snprintf(line, sizeof(line), "mismatches=%d childfail=%d inst=%d\n", r.bad, childfail,
		 count_inotify_fds());
	return write_result(argv[3], line) == 0 ? 0 : 2;
}

/*
 * --realpath-probe DIR OUT, in a warm-up that never ends: realpath() passes
 * through to glibc's (preload/shim.c, realpath_pass), and its answers are
 * glibc's own, called here by its libc.so.6 definition: the result, errno
 * (after a success too) and what a caller's buffer holds, on the heap or the
 * stack, with the prefix glibc leaves there on ENOENT.  What glibc would
 * crash on is EFAULT: an unreadable path, one running into a PROT_NONE page
 * without its NUL, a read-only buffer (left unchanged); a path whose NUL is
 * the last byte before a PROT_NONE page is answered.  And the depth of stack
 * below the caller that realpath() wrote, beside glibc's own: every page
 * below what a program reaches itself is a page fault (gcc --version's
 * lrealpath(): 3 of them, where the shim's copies of the path and result
 * lay under glibc's frame).  Writes "bad=B direct=1 shim=S libc=L" (bytes)
 * to OUT; "direct=0" where realpath() is not the shim's (a sanitizer's).
 */
typedef char *realpath_fn(const char *, char *);

enum { PAINT = 64 * 1024 };

static __attribute__((noinline)) void stack_paint(void)
{
	char *p = alloca(PAINT);

	memset(p, 0x5a, PAINT);
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* How far below its caller's frame the stack was written since
 * stack_paint() ran from the same frame. */
static __attribute__((noinline)) size_t stack_written(void)
{
	char *a = alloca(PAINT);
	volatile char *p;
	size_t i = 0;

	__asm__ volatile("" : "+r"(a)); /* what stack_paint() left there */
	p = a;
	while (i < PAINT && p[i] == 0x5a)
		i++;
	return PAINT - i;
}

static __attribute__((noinline)) size_t realpath_depth(realpath_fn *fn, const char *path)
{
	char buf[PATH_MAX];

	stack_paint();
	if (!fn(path, buf))
		return 0;
	return stack_written();
}

/* One name through both, into a fresh buffer of each (NULL: a malloc'd
 * answer); 1 if they differ. */
static int realpath_same(realpath_fn *libc, const char *path, char *b1, char *b2)
{
	char *r1, *r2;
	int e1, e2, bad;

	if (b1) {
		memset(b1, 0x77, PATH_MAX);
		memset(b2, 0x77, PATH_MAX);
	}
	errno = 0;
	r1 = realpath(path, b1);
	e1 = errno;
	errno = 0;
	r2 = libc(path, b2);
	e2 = errno;
	bad = (r1 == NULL) != (r2 == NULL) || e1 != e2 || (r1 && strcmp(r1, r2) != 0) ||
	      (b1 && memcmp(b1, b2, PATH_MAX) != 0) || (r1 && b1 && r1 != b1);
	if (bad)
		fprintf(stderr, "realpath(%s, %s): shim %s errno %d, glibc %s errno %d\n", path,
			b1 ? "buf" : "NULL", r1 ? r1 : "NULL", e1, r2 ? r2 : "NULL", e2);
	if (!b1) {
		free(r1);
		free(r2);
	}
	return bad;
}

static int realpath_probe_main(char **argv)
{
	char f[PLEN], link[PLEN], absent[PLEN], stackbuf[2][PATH_MAX], line[128];
	const char *names[] = { f, link, absent, argv[2], "", "/", ".", "f/..", NULL };
	void *libc_h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	realpath_fn *libc = libc_h ? (realpath_fn *)dlsym(libc_h, "realpath") : NULL;
	long pg = sysconf(_SC_PAGESIZE);
	char *heap[2] = { malloc(PATH_MAX), malloc(PATH_MAX) }, *m, *r;
	size_t shim, glibc;
	Dl_info info;
	int bad = 0;

	if (!libc || !heap[0] || !heap[1] || chdir(argv[2]) != 0)
		return 2;
	join(f, argv[2], "f");
	join(link, argv[2], "l");
	join(absent, argv[2], "n/x");
	if (syscall(SYS_symlinkat, "f", AT_FDCWD, link) != 0)
		return 2;
	for (int i = 0; names[i]; i++) {
		bad += realpath_same(libc, names[i], NULL, NULL);
		bad += realpath_same(libc, names[i], heap[0], heap[1]);
		bad += realpath_same(libc, names[i], stackbuf[0], stackbuf[1]);
	}
	/* A sanitizer's realpath, first in the process, reads the path itself
	 * and calls the shim's below its own frames: the rest is the shim's. */
	if (!dladdr(dlsym(RTLD_DEFAULT, "realpath"), &info) || !info.dli_fname ||
	    !strstr(info.dli_fname, "librcuwalk")) {
		snprintf(line, sizeof(line), "bad=%d direct=0 shim=0 libc=0\n", bad);
		return write_result(argv[3], line) == 0 ? 0 : 2;
	}
	/* a readable page, a PROT_NONE page, a read-only page */
	m = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + pg, (size_t)pg, PROT_NONE) != 0 ||
	    mprotect(m + 2 * pg, (size_t)pg, PROT_READ) != 0)
		return 2;
	errno = 0;
	r = realpath(m + pg, NULL);
	bad += r != NULL || errno != EFAULT;
	memset(m + pg - 16, 'a', 16); /* no NUL before the PROT_NONE page */
	errno = 0;
	r = realpath(m + pg - 16, heap[0]);
	bad += r != NULL || errno != EFAULT;
	memcpy(m + pg - strlen(f) - 1, f, strlen(f) + 1); /* its NUL the page's last byte */
	bad += realpath_same(libc, m + pg - strlen(f) - 1, heap[0], heap[1]);
	errno = 0;
	r = realpath(f, m + 2 * pg);
	bad += r != NULL || errno != EFAULT || m[2 * pg] != 0;
	shim = realpath_depth(realpath, f);
	glibc = realpath_depth(libc, f);
	free(heap[0]);
	free(heap[1]);
	snprintf(line, sizeof(line), "bad=%d direct=1 shim=%zu libc=%zu\n", bad, shim, glibc);
	return write_result(argv[3], line) == 0 ? 0 : 2;
}

/*
 * --depth-probe DIR OUT, in a warm-up that never ends: the stack that each
 * lookup wrapper writes below its caller, beside what glibc's own function
 * (libc.so.6's definition) writes, each measured at its second call (the
 * first finds the real function).  In the warm-up a wrapper makes no copy
 * of the path (preload/shim.c, path_passes); before, a stat() wrote 6 KiB
 * below its caller and a readlink() 16 KiB, pages of stack a program does
 * not otherwise reach.  Writes "worst=W name=N" to OUT: the largest excess
 * over glibc's, in bytes, and whose; "worst=-1" where a wrapper is not the
 * shim's (a sanitizer's interceptor in front).
 */
#define DEPTH(label, shim_call, libc_call, after)                                  \
	do {                                                                       \
		size_t s_, l_;                                                     \
		shim_call;                                                         \
		after;                                                             \
		libc_call;                                                         \
		after;                                                             \
		stack_paint();                                                     \
		shim_call;                                                         \
		s_ = stack_written();                                              \
		after;                                                             \
		stack_paint();                                                     \
		libc_call;                                                         \
		l_ = stack_written();                                              \
		after;                                                             \
		fprintf(stderr, "%-10s shim %5zu, glibc %5zu\n", label, s_, l_);   \
		if (!shim_defines_here(label))                                     \
			worst = -1, worst_name = label;                            \
		else if (worst >= 0 && (long)s_ - (long)l_ > worst)                \
			worst = (long)s_ - (long)l_, worst_name = label;           \
	} while (0)

static int shim_defines_here(const char *name)
{
	Dl_info info;
	void *f = dlsym(RTLD_DEFAULT, name);

	return f && dladdr(f, &info) && info.dli_fname && strstr(info.dli_fname, "librcuwalk");
}

static int depth_probe_main(char **argv)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	char f[PLEN], link[PLEN], target[PLEN], line[128];
	const char *worst_name = "none";
	long worst = 0;
	struct stat st;
	struct statx stx;
	DIR *d = NULL;
	int fd = -1;

	if (!h)
		return 2;
	int (*l_stat)(const char *, struct stat *) = dlsym(h, "stat");
	int (*l_lstat)(const char *, struct stat *) = dlsym(h, "lstat");
	int (*l_fstatat)(int, const char *, struct stat *, int) = dlsym(h, "fstatat");
	int (*l_statx)(int, const char *, int, unsigned int, struct statx *) = dlsym(h, "statx");
	int (*l_access)(const char *, int) = dlsym(h, "access");
	int (*l_open)(const char *, int, ...) = dlsym(h, "open");
	int (*l_openat)(int, const char *, int, ...) = dlsym(h, "openat");
	ssize_t (*l_readlink)(const char *, char *, size_t) = dlsym(h, "readlink");
	DIR *(*l_opendir)(const char *) = dlsym(h, "opendir");

	if (!l_stat || !l_lstat || !l_fstatat || !l_statx || !l_access || !l_open || !l_openat ||
	    !l_readlink || !l_opendir)
		return 2;
	join(f, argv[2], "f");
	join(link, argv[2], "l");
	if (syscall(SYS_symlinkat, "f", AT_FDCWD, link) != 0)
		return 2;
	DEPTH("stat", stat(f, &st), l_stat(f, &st), (void)0);
	DEPTH("lstat", lstat(link, &st), l_lstat(link, &st), (void)0);
	DEPTH("fstatat", fstatat(AT_FDCWD, f, &st, 0), l_fstatat(AT_FDCWD, f, &st, 0), (void)0);
	DEPTH("statx", statx(AT_FDCWD, f, 0, STATX_BASIC_STATS, &stx),
	      l_statx(AT_FDCWD, f, 0, STATX_BASIC_STATS, &stx), (void)0);
	DEPTH("access", access(f, R_OK), l_access(f, R_OK), (void)0);
	DEPTH("open", fd = open(f, O_RDONLY), fd = l_open(f, O_RDONLY), close(fd));
	DEPTH("openat", fd = openat(AT_FDCWD, f, O_RDONLY), fd = l_openat(AT_FDCWD, f, O_RDONLY),
	      close(fd));
	DEPTH("readlink", readlink(link, target, sizeof(target)),
	      l_readlink(link, target, sizeof(target)), (void)0);
	DEPTH("opendir", d = opendir(argv[2]), d = l_opendir(argv[2]), (d ? closedir(d) : 0));
	snprintf(line, sizeof(line), "worst=%ld name=%s\n", worst, worst_name);
	return write_result(argv[3], line) == 0 ? 0 : 2;
}

struct probe_result {
	int mismatches, before, after;
	long long pass_warmup, saved, lookups, watches;
};

/* Run a probe with RCUWALK_WARMUP=warmup (NULL: unset, the default), and
 * a second RCUWALK_WARMUP=warmup2 entry after it if warmup2 is not NULL
 * (the first one is the one that counts, as for getenv()); `more`: one more
 * NAME=VALUE entry, or NULL. */
static void run_probe4(const char *mode, const char *name, const char *warmup, const char *warmup2,
		       const char *more, long a, long b, struct probe_result *res)
{
	char dir[PLEN], f[PLEN], result[PLEN], stats[PLEN], se[PLEN + 16], we[64], we2[64];
	char as[32], bs[32], buf[128] = "";
	const char *extra[6] = { se, "RCUWALK_RACY_MS=0" };
	const char *args[] = { mode, dir, as, bs, result, NULL };
	char **env;
	size_t j = 0, k;

	join(dir, g_scratch, name);
	assert_int_equal(raw_mkdir(dir), 0);
	join(f, dir, "f");
	assert_int_equal(raw_write_file(f, 3, 0), 0);
	join(result, dir, "result");
	join(stats, dir, "stats");
	snprintf(se, sizeof(se), "RCUWALK_STATS=%s", stats);
	k = 2; /* extra: NULL-terminated, with only the entries asked for */
	if (more)
		extra[k++] = more;
	if (warmup)
		snprintf(we, sizeof(we), "RCUWALK_WARMUP=%s", warmup), extra[k++] = we;
	if (warmup2)
		snprintf(we2, sizeof(we2), "RCUWALK_WARMUP=%s", warmup2), extra[k++] = we2;
	snprintf(as, sizeof(as), "%ld", a);
	snprintf(bs, sizeof(bs), "%ld", b);
	env = env_with(extra);
	for (size_t i = 0; env[i]; i++) /* ours only: not one from the test's environment */
		if (strncmp(env[i], "RCUWALK_WARMUP=", 15) != 0 || env[i] == we || env[i] == we2)
			env[j++] = env[i];
	env[j] = NULL;
	assert_int_equal(spawn_self_wait("test_warmup", args, env, 120), 0);
	assert_true(read_result(result, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "mismatches=%d before=%d after=%d", &res->mismatches,
				&res->before, &res->after),
			 3);
	res->pass_warmup = stats_field(stats, "pass_warmup");
	res->saved = stats_field(stats, "saved");
	res->lookups = stats_field(stats, "lookups");
	res->watches = stats_field(stats, "watches");
	print_message("RCUWALK_WARMUP=%s%s%s, %ld + %ld lookups: %d mismatches, inotify instances %d "
		      "then %d; pass_warmup %lld, saved %lld, lookups %lld, watches %lld\n",
		      warmup ? warmup : "(default)", more ? " " : "", more ? more : "", a, b,
		      res->mismatches, res->before, res->after, res->pass_warmup, res->saved,
		      res->lookups, res->watches);
}

static void run_probe3(const char *name, const char *warmup, const char *warmup2, const char *more,
		       long a, long b, struct probe_result *res)
{
	run_probe4("--probe", name, warmup, warmup2, more, a, b, res);
}

static void run_probe2(const char *name, const char *warmup, const char *warmup2, long a, long b,
		       struct probe_result *res)
{
	run_probe3(name, warmup, warmup2, NULL, a, b, res);
}

static void run_probe(const char *name, const char *warmup, long a, long b, struct probe_result *res)
{
	run_probe2(name, warmup, NULL, a, b, res);
}

static void test_warmup_first_n_lookups_pass_through_and_start_nothing(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe("ten", "10", 10, 20, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 0); /* ten lookups made: still nothing started */
	assert_int_equal(r.after, 1);
	assert_int_equal(r.pass_warmup, 10);
	assert_int_equal(r.lookups, 30);
	/* after the warm-up each name is asked of the kernel once (twice at
	 * most: a directory's attributes), then answered from the cache */
	assert_true(r.saved >= 20 - 4);
	assert_true(r.watches > 0);
}

static void test_warmup_zero_uses_the_cache_from_the_first_lookup(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe("zero", "0", 1, 20, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 1);
	assert_int_equal(r.after, 1);
	assert_int_equal(r.pass_warmup, 0);
	assert_true(r.saved >= 20 - 4);
}

/* A time budget: nothing starts while the lookups' real calls have taken
 * less than it (here 100 s: never, in this test). */
static void test_warmup_time_budget_passes_lookups_through_while_unspent(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe("unspent", "100000ms", 20, 40, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 0);
	assert_int_equal(r.after, 0);
	assert_int_equal(r.pass_warmup, 60);
	assert_int_equal(r.saved, 0);
}

/* Two RCUWALK_WARMUP entries: the first one counts, as getenv() would
 * answer (the constructor reads the environment in one pass, by hand:
 * preload/config.c, read_env), whichever of the two it is. */
static void test_warmup_first_of_two_entries_is_the_one_read(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe2("twice-unspent", "100000ms", "0", 5, 5, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.after, 0);
	assert_int_equal(r.pass_warmup, 10);
	run_probe2("twice-zero", "0", "100000ms", 1, 5, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 1);
	assert_int_equal(r.pass_warmup, 0);
}

/* A budget of 1 us is spent by the first few real calls (each a syscall):
 * then the cache starts and answers the rest. */
static void test_warmup_time_budget_ends_once_the_lookups_took_it(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe("spent", "1us", 50, 20, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 1);
	assert_int_equal(r.after, 1);
	assert_true(r.pass_warmup >= 1);
	assert_true(r.pass_warmup < 50);
	assert_int_equal(r.lookups, 70);
	assert_true(r.saved >= 20 - 4);
}

/* RCUWALK_TSC_KHZ, the TSC's rate as the launcher measures it
 * (preload/rcuwalk.c, "The TSC's rate"): the warm-up times its real calls by
 * the TSC at that rate instead of CLOCK_MONOTONIC (preload/shim.h,
 * preload_warm_ns1).  Given 100 MHz, the slowest rate accepted and 10 times
 * or more below any x86-64 TSC's, each call counts 10 times its time or
 * more: 200 lookups (a microsecond or more each) spend a 1 ms budget, which
 * CLOCK_MONOTONIC counts as ~0.2-0.5 ms.  With a 100 s budget the same rate
 * starts nothing: the ticks are counted as time, not as more.  A value that
 * is not digits is refused; all the last run can show is that it neither
 * kills the probe nor spends a 100 s budget (whichever clock then counts,
 * 30 lookups stay far below it): a weak check, kept for the crash.
 * x86-64 only. */
static void test_warmup_time_budget_counts_tsc_ticks_at_the_launchers_rate(void **state)
{
	struct probe_result r;

	(void)state;
#if !defined(__x86_64__)
	skip();
#endif
	run_probe3("tsc-slow", "1ms", NULL, "RCUWALK_TSC_KHZ=100000", 200, 10, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 1); /* spent within the 200 */
	assert_true(r.pass_warmup >= 1);
	assert_true(r.pass_warmup < 200);
	assert_int_equal(r.lookups, 210);
	run_probe3("tsc-unspent", "100000ms", NULL, "RCUWALK_TSC_KHZ=100000", 200, 10, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 0);
	assert_int_equal(r.after, 0);
	assert_int_equal(r.pass_warmup, 210);
	run_probe3("tsc-refused", "100000ms", NULL, "RCUWALK_TSC_KHZ=2GHz", 20, 10, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.after, 0);
	assert_int_equal(r.pass_warmup, 30);
}

#if defined(__x86_64__)
/* Whether rdtsc faults here once PR_SET_TSC turned it off: in a fork()ed
 * child, which dies by SIGSEGV if so.  Some hypervisors run it anyway
 * (this project's Firecracker VM: prctl says PR_TSC_SIGSEGV, rdtsc works). */
static int tsc_can_be_turned_off(void)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		uint32_t lo, hi;

		signal(SIGSEGV, SIG_DFL);
		if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0)
			_exit(1);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		_exit(lo == 0 && hi == 0 ? 2 : 0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}
#endif

/* A process that turned its TSC off (prctl PR_SET_TSC, PR_TSC_SIGSEGV: rdtsc
 * raises SIGSEGV) under a launcher that gave the rate: the warm-up's first
 * read faults in the shim's guarded rdtsc (preload/fault.c), which turns the
 * TSC off for the process, and the warm-up goes on by CLOCK_MONOTONIC.  The
 * probe lives (a plain rdtsc would kill it) and every answer is the
 * kernel's, in the warm-up and after it (the 1 us budget ends it).  Skipped
 * where the CPU runs rdtsc anyway (then nothing can fault). */
static void test_warmup_tsc_turned_off_by_the_program_falls_back_to_the_clock(void **state)
{
	struct probe_result r;

	(void)state;
#if !defined(__x86_64__)
	skip();
#else
	if (!tsc_can_be_turned_off()) {
		print_message("rdtsc does not fault here with PR_TSC_SIGSEGV: skipped\n");
		skip();
	}
#endif
	run_probe4("--probe-notsc", "notsc", "1us", NULL, "RCUWALK_TSC_KHZ=2000000", 50, 20, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.after, 1);
	assert_true(r.pass_warmup >= 1);
	assert_true(r.pass_warmup < 50);
	assert_int_equal(r.lookups, 70);
}

/* The documented default (README, rcuwalk(1), preload/config.c): 1ms of
 * lookups pass through.  The first lookup always does (the budget is checked
 * after a call); a process that makes many (20,000 here: 1 ms is spent by
 * then on any machine whose syscall takes 50 ns or more) ends up answered
 * from the cache.  How many of a few lookups pass is not asserted: the time
 * is wall time, and a probe preempted in a syscall (ctest -j2) spends a
 * quarter of the 1 ms at once (the most one call counts). */
static void test_warmup_default_is_1ms_of_lookups(void **state)
{
	struct probe_result r;

	(void)state;
	run_probe("default_few", NULL, 4, 4, &r);
	assert_int_equal(r.mismatches, 0);
	assert_true(r.pass_warmup >= 1);
	run_probe("default_many", NULL, 20000, 40, &r);
	assert_int_equal(r.mismatches, 0);
	assert_int_equal(r.before, 1);
	assert_int_equal(r.after, 1);
	assert_true(r.pass_warmup >= 1);
	assert_true(r.pass_warmup < 20000);
	assert_true(r.saved >= 40 - 4);
}

/* Run this binary's mode `mode` with RCUWALK_WARMUP=warmup and
 * RCUWALK_RACY_MS=0; the directory DIR (made, with a file f) is args[0]. */
static void run_mode(const char *name, const char *warmup, const char *const *args)
{
	char we[64];
	const char *extra[] = { "RCUWALK_RACY_MS=0", we, NULL };
	char **env;
	size_t j = 0;

	snprintf(we, sizeof(we), "RCUWALK_WARMUP=%s", warmup);
	env = env_with(extra);
	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], "RCUWALK_WARMUP=", 15) != 0 || env[i] == we)
			env[j++] = env[i];
	env[j] = NULL;
	assert_int_equal(spawn_self_wait(name, args, env, 120), 0);
}

static void make_dir_with_f(const char *name, char *dir)
{
	char f[PLEN];

	join(dir, g_scratch, name);
	assert_int_equal(raw_mkdir(dir), 0);
	join(f, dir, "f");
	assert_int_equal(raw_write_file(f, 3, 0), 0);
}

/* A fork() during the warm-up (which takes none of the cache's locks) is
 * followed, in the parent and in the child, by the warm-up's end and a
 * working cache; every answer the kernel's. */
static void test_warmup_fork_during_the_warm_up_then_both_use_the_cache(void **state)
{
	char dir[PLEN], out[PLEN], child[PLEN + 8], buf[128];
	const char *args[] = { "--fork-probe", dir, "4", "30", out, NULL };
	int bad, inst;

	(void)state;
	make_dir_with_f("fork", dir);
	join(out, dir, "result");
	run_mode("test_warmup", "10", args);
	assert_true(read_result(out, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
	assert_int_equal(bad, 0);
	assert_int_equal(inst, 1);
	snprintf(child, sizeof(child), "%s.child", out);
	assert_true(read_result(child, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
	assert_int_equal(bad, 0);
	assert_int_equal(inst, 1); /* the child's own cache started */
}

/* A fork() child of a process whose cache runs (its warm-up of 10 spent by
 * 20 lookups) warms up again (preload/shim.c, preload_fork_child_rewarm):
 * its first 8 lookups start nothing; 30 start its own cache.  Every answer
 * the kernel's; the parent's cache runs on. */
static void test_warmup_fork_child_of_a_running_cache_warms_up_again(void **state)
{
	char dir[PLEN], out[PLEN], child[PLEN + 8], buf[128];
	const char *few[] = { "--fork-probe", dir, "20", "8", out, NULL };
	const char *many[] = { "--fork-probe", dir, "20", "30", out, NULL };
	int bad, inst;

	(void)state;
	make_dir_with_f("rewarm", dir);
	join(out, dir, "result");
	snprintf(child, sizeof(child), "%s.child", out);
	for (int k = 0; k < 2; k++) {
		run_mode("test_warmup", "10", k ? many : few);
		assert_true(read_result(child, buf, sizeof(buf)) > 0);
		assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
		assert_int_equal(bad, 0);
		assert_int_equal(inst, k); /* 8 lookups: none; 30: the child's own */
		assert_true(read_result(out, buf, sizeof(buf)) > 0);
		assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
		assert_int_equal(bad, 0);
		assert_int_equal(inst, 1);
	}
}

/* A lookup held up in the kernel (an open of a FIFO, ~20 ms: as a call
 * preempted on a loaded machine) counts a quarter of a 1 ms budget: one
 * leaves the warm-up on, five end it. */
static void test_warmup_one_slow_call_does_not_spend_the_time_budget(void **state)
{
	char dir[PLEN], out[PLEN], buf[128];
	const char *one[] = { "--slow-probe", dir, "1", out, NULL };
	const char *five[] = { "--slow-probe", dir, "5", out, NULL };
	int bad, inst;

	(void)state;
	for (int k = 0; k < 2; k++) {
		make_dir_with_f(k ? "slow5" : "slow1", dir);
		join(out, dir, "result");
		run_mode("test_warmup", "1ms", k ? five : one);
		assert_true(read_result(out, buf, sizeof(buf)) > 0);
		assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
		assert_int_equal(bad, 0);
		assert_int_equal(inst, k); /* one slow call: nothing started; five: the cache */
	}
}

/* A process that forks between few lookups (a shell running a configure
 * script) stays in its warm-up, where fork() is plain: 300 rounds of one
 * lookup and a fork() never spend a 20 us budget, since each fork() adds
 * 5 us (a quarter of it, plus 1 ns) to it, though 300 lookups spend it
 * before one fork, and 40 lookups a fork do.  Not a race: a lookup also
 * counts at most 5 us, so one lookup a fork cannot outrun the debt however
 * slow the machine (a fork takes more than 5 us), nor can the probe's 3
 * lookups after its last fork (15 us).  Every answer the kernel's. */
static void test_warmup_forks_between_few_lookups_keep_the_warm_up_on(void **state)
{
	char dir[PLEN], out[PLEN], buf[128];
	const char *few[] = { "--fork-debt-probe", dir, "300", "1", out, NULL };
	const char *once[] = { "--fork-debt-probe", dir, "1", "300", out, NULL };
	const char *many[] = { "--fork-debt-probe", dir, "30", "40", out, NULL };
	const char *const *modes[] = { few, once, many };
	int bad, inst;

	(void)state;
	make_dir_with_f("forkdebt", dir);
	join(out, dir, "result");
	for (int k = 0; k < 3; k++) {
		run_mode("test_warmup", "20us", modes[k]);
		assert_true(read_result(out, buf, sizeof(buf)) > 0);
		assert_int_equal(sscanf(buf, "mismatches=%d inst=%d", &bad, &inst), 2);
		print_message("%s rounds of %s lookups and a fork: %d mismatches, %d instances\n",
			      modes[k][2], modes[k][3], bad, inst);
		assert_int_equal(bad, 0);
		assert_int_equal(inst, k ? 1 : 0); /* forking between few: nothing started */
	}
}

/* Forks racing the warm-up's end in another thread: no hang, no wrong
 * answer, and the cache starts. */
static void test_warmup_forks_racing_the_warm_up_end_neither_hang_nor_err(void **state)
{
	char dir[PLEN], out[PLEN], buf[128];
	const char *args[] = { "--fork-race", dir, out, NULL };
	int bad, childfail, inst;

	(void)state;
	make_dir_with_f("forkrace", dir);
	join(out, dir, "result");
	run_mode("test_warmup", "200", args);
	assert_true(read_result(out, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "mismatches=%d childfail=%d inst=%d", &bad, &childfail, &inst), 3);
	assert_int_equal(bad, 0);
	assert_int_equal(childfail, 0);
	assert_int_equal(inst, 1);
}

/* Run `mode DIR OUT` (DIR made with a file f) in a warm-up that never ends
 * (100000ms); its result line into buf. */
static void run_unending_warmup_probe(const char *name, const char *mode, char *buf, size_t n)
{
	char dir[PLEN], out[PLEN];
	const char *args[] = { mode, dir, out, NULL };

	make_dir_with_f(name, dir);
	join(out, dir, "out");
	run_mode("test_warmup", "100000ms", args);
	assert_true(read_result(out, buf, n) > 0);
}

/* realpath() in the warm-up: glibc's answers, EFAULT where glibc would
 * crash, and no deeper stack than glibc's own plus the wrapper's frames
 * (--realpath-probe).  Before, the path's copy and a result buffer, 8 KiB,
 * lay below glibc's frame. */
static void test_warmup_realpath_is_glibcs_with_its_stack_depth(void **state)
{
	char buf[128];
	size_t shim, glibc;
	int bad, direct;

	(void)state;
	run_unending_warmup_probe("realpath", "--realpath-probe", buf, sizeof(buf));
	assert_int_equal(sscanf(buf, "bad=%d direct=%d shim=%zu libc=%zu", &bad, &direct, &shim,
				&glibc),
			 4);
	print_message("realpath in the warm-up: %d differences; stack written %zu bytes "
		      "through the shim, %zu by glibc's own\n", bad, shim, glibc);
	assert_int_equal(bad, 0);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	assert_int_equal(direct, 1); /* else nothing below was measured */
	assert_true(glibc > 0);
	assert_true(shim <= glibc + 1024);
#endif
}

/* Every lookup wrapper in the warm-up writes no deeper below its caller
 * than glibc's own function plus 1 KiB (--depth-probe). */
static void test_warmup_lookups_write_no_deeper_stack_than_glibc(void **state)
{
	char buf[128], name[32];
	long worst;

	(void)state;
	run_unending_warmup_probe("depth", "--depth-probe", buf, sizeof(buf));
	assert_int_equal(sscanf(buf, "worst=%ld name=%31s", &worst, name), 2);
	print_message("warm-up lookups: at most %ld bytes of stack deeper than glibc's (%s)\n",
		      worst, name);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	assert_true(worst >= 0); /* else a wrapper was not the shim's */
	assert_true(worst <= 1024);
#endif
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "--probe"))
		return probe_main(argv);
#if defined(__x86_64__)
	/* The probe in a process that turned its TSC off: rdtsc faults. */
	if (argc == 6 && !strcmp(argv[1], "--probe-notsc"))
		return prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) == 0 ? probe_main(argv) : 2;
#endif
	if (argc == 6 && !strcmp(argv[1], "--fork-probe"))
		return fork_probe_main(argv);
	if (argc == 4 && !strcmp(argv[1], "--fork-race"))
		return fork_race_main(argv);
	if (argc == 6 && !strcmp(argv[1], "--fork-debt-probe"))
		return fork_debt_probe_main(argv);
	if (argc == 4 && !strcmp(argv[1], "--depth-probe"))
		return depth_probe_main(argv);
	if (argc == 4 && !strcmp(argv[1], "--realpath-probe"))
		return realpath_probe_main(argv);
	if (argc == 5 && !strcmp(argv[1], "--slow-probe"))
		return slow_probe_main(argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warmup_first_n_lookups_pass_through_and_start_nothing),
		cmocka_unit_test(test_warmup_zero_uses_the_cache_from_the_first_lookup),
		cmocka_unit_test(test_warmup_time_budget_passes_lookups_through_while_unspent),
		cmocka_unit_test(test_warmup_first_of_two_entries_is_the_one_read),
		cmocka_unit_test(test_warmup_time_budget_ends_once_the_lookups_took_it),
		cmocka_unit_test(test_warmup_time_budget_counts_tsc_ticks_at_the_launchers_rate),
		cmocka_unit_test(test_warmup_tsc_turned_off_by_the_program_falls_back_to_the_clock),
		cmocka_unit_test(test_warmup_default_is_1ms_of_lookups),
		cmocka_unit_test(test_warmup_fork_during_the_warm_up_then_both_use_the_cache),
		cmocka_unit_test(test_warmup_fork_child_of_a_running_cache_warms_up_again),
		cmocka_unit_test(test_warmup_one_slow_call_does_not_spend_the_time_budget),
		cmocka_unit_test(test_warmup_forks_racing_the_warm_up_end_neither_hang_nor_err),
		cmocka_unit_test(test_warmup_forks_between_few_lookups_keep_the_warm_up_on),
		cmocka_unit_test(test_warmup_realpath_is_glibcs_with_its_stack_depth),
		cmocka_unit_test(test_warmup_lookups_write_no_deeper_stack_than_glibc),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
