/* SPDX-License-Identifier: MIT */
/*
 * coh_helpers.h - small helpers shared by the preloaded tests (test_strict,
 * test_mounts, test_watch_budget: coherence clauses 5, 7 and 8; test_warmup,
 * test_host_urcu, test_coherence, test_safety): raw syscalls that bypass the
 * shim, observations to compare with the kernel's, spawning this binary as a
 * helper and reading what it wrote, RCUWALK_STATS records, times, and the
 * scratch directory.  Everything is static inline: each test uses a part of
 * it, and a test keeps in its own file only what is its own.
 */
#ifndef RCUWALK_COH_HELPERS_H
#define RCUWALK_COH_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PLEN 512

extern char **environ;

/* snprintf that never truncates silently (and keeps -Wformat-truncation quiet). */
__attribute__((format(printf, 3, 4)))
static inline void xfmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= n)
		abort();
}

/* errno's name ("0" for none). */
static inline const char *ename(int e)
{
	const char *s;

	if (e == 0)
		return "0";
	s = strerrorname_np(e);
	return s ? s : "?";
}

/* write(2) of a string, raw: for signal handlers. */
static inline void raw_puts(int fd, const char *s)
{
	syscall(SYS_write, fd, s, strlen(s));
}

static inline long raw_stat(const char *p, struct stat *st, int flags)
{
	return syscall(SYS_newfstatat, AT_FDCWD, p, st, flags);
}

/* Read fd to EOF into buf (NUL-terminated, at most size - 1 bytes; EINTR
 * retried): a child's output, whether it wrote it at once or piece by piece
 * (Python's print() under PYTHONUNBUFFERED).  Returns the length. */
static inline size_t read_to_eof(int fd, char *buf, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t k = read(fd, buf + len, size - 1 - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	buf[len] = '\0';
	return len;
}

/* The number of threads of this process (/proc/self/status), or -1. */
static inline int threads_now(void)
{
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	long n;
	char *p;

	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

/* CLOCK_MONOTONIC in microseconds. */
static inline long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static inline void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

/* b - a, in seconds. */
static inline double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* One stat-like answer: return value, errno, and the attributes. */
struct sres {
	int rc, err;
	struct stat st;
};

/* 0 if the shim's `s` equals the kernel's `k` (every field the contract
 * keeps exact: all but st_atim); else 1 and a description in buf. */
static inline int sres_diff(const char *call, const struct sres *s, const struct sres *k, char *buf,
			    size_t n)
{
	if (s->rc != k->rc || s->err != k->err) {
		snprintf(buf, n, "%s: shim rc=%d errno=%s, kernel rc=%d errno=%s", call, s->rc,
			 ename(s->err), k->rc, ename(k->err));
		return 1;
	}
	if (s->rc != 0)
		return 0;
#define SRES_CMPF(f)                                                                \
	if (s->st.f != k->st.f) {                                                   \
		snprintf(buf, n, "%s: " #f " shim=%lld (0%llo) kernel=%lld (0%llo)", call, \
			 (long long)s->st.f, (unsigned long long)s->st.f,           \
			 (long long)k->st.f, (unsigned long long)k->st.f);          \
		return 1;                                                           \
	}
	SRES_CMPF(st_dev)
	SRES_CMPF(st_ino)
	SRES_CMPF(st_mode)
	SRES_CMPF(st_nlink)
	SRES_CMPF(st_uid)
	SRES_CMPF(st_gid)
	SRES_CMPF(st_rdev)
	SRES_CMPF(st_size)
	SRES_CMPF(st_blksize)
	SRES_CMPF(st_blocks)
	SRES_CMPF(st_mtim.tv_sec)
	SRES_CMPF(st_mtim.tv_nsec)
	SRES_CMPF(st_ctim.tv_sec)
	SRES_CMPF(st_ctim.tv_nsec)
#undef SRES_CMPF
	return 0;
}

/* 0 if a call's (return value, errno) through the shim equals the kernel's;
 * else 1 and a description in buf. */
static inline int rc_diff(const char *call, int src, int serr, int krc, int kerr, char *buf, size_t n)
{
	if (src == krc && serr == kerr)
		return 0;
	snprintf(buf, n, "%s: shim rc=%d errno=%s, kernel rc=%d errno=%s", call, src, ename(serr), krc,
		 ename(kerr));
	return 1;
}

/* What a stat answers: return value, errno, and the attributes that the
 * contract keeps exact (all but st_atim). */
struct obs {
	int rc, err;
	struct stat st;
};

static inline void observe_raw(const char *p, struct obs *o)
{
	memset(o, 0, sizeof(*o));
	errno = 0;
	o->rc = (int)syscall(SYS_newfstatat, AT_FDCWD, p, &o->st, 0);
	o->err = o->rc ? errno : 0;
}

static inline void observe_shim(const char *p, struct obs *o)
{
	memset(o, 0, sizeof(*o));
	errno = 0;
	o->rc = stat(p, &o->st);
	o->err = o->rc ? errno : 0;
}

/* Non-zero (and why, in buf) if the two observations differ. */
static inline int obs_diff(const struct obs *a, const struct obs *b, char *buf, size_t n)
{
	if (a->rc != b->rc || a->err != b->err) {
		snprintf(buf, n, "shim rc=%d (%s), kernel rc=%d (%s)", a->rc, strerror(a->err), b->rc,
			 strerror(b->err));
		return 1;
	}
	if (a->rc)
		return 0;
	if (a->st.st_ino != b->st.st_ino || a->st.st_dev != b->st.st_dev ||
	    a->st.st_mode != b->st.st_mode || a->st.st_size != b->st.st_size ||
	    a->st.st_nlink != b->st.st_nlink || a->st.st_mtim.tv_sec != b->st.st_mtim.tv_sec ||
	    a->st.st_mtim.tv_nsec != b->st.st_mtim.tv_nsec ||
	    a->st.st_ctim.tv_sec != b->st.st_ctim.tv_sec ||
	    a->st.st_ctim.tv_nsec != b->st.st_ctim.tv_nsec) {
		snprintf(buf, n, "shim dev/ino %lu/%lu size %lld mtime %lld.%09ld, kernel %lu/%lu size %lld mtime %lld.%09ld",
			 (unsigned long)a->st.st_dev, (unsigned long)a->st.st_ino, (long long)a->st.st_size,
			 (long long)a->st.st_mtim.tv_sec, a->st.st_mtim.tv_nsec,
			 (unsigned long)b->st.st_dev, (unsigned long)b->st.st_ino, (long long)b->st.st_size,
			 (long long)b->st.st_mtim.tv_sec, b->st.st_mtim.tv_nsec);
		return 1;
	}
	return 0;
}

static inline double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Observe paths[0..n) through the shim until every answer equals exp[] (the
 * kernel's), or until mono_now() passes `end`.  Returns 1 if they all did. */
static inline int obs_poll_exact(const char *const *paths, size_t n, const struct obs *exp, double end)
{
	char why[512];
	int exact = 0;

	while (!exact && mono_now() < end) {
		exact = 1;
		for (size_t j = 0; j < n; j++) {
			struct obs got;

			observe_shim(paths[j], &got);
			if (obs_diff(&got, &exp[j], why, sizeof(why)))
				exact = 0;
		}
	}
	return exact;
}

/* dir + "/" + rel. */
static inline void join(char *out, const char *dir, const char *rel)
{
	int n = snprintf(out, PLEN, "%s/%s", dir, rel);

	if (n <= 0 || n >= PLEN)
		abort();
}

static inline int raw_mkdir(const char *p)
{
	return (int)syscall(SYS_mkdirat, AT_FDCWD, p, 0755);
}

/* Create (or truncate) p with `len` bytes, raw syscalls only. */
static inline int raw_write_file(const char *p, size_t len, int append)
{
	char buf[256];
	long fd = syscall(SYS_openat, AT_FDCWD, p,
			  O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);

	if (fd < 0)
		return -1;
	memset(buf, 'x', sizeof(buf));
	while (len > 0) {
		size_t k = len < sizeof(buf) ? len : sizeof(buf);

		if (syscall(SYS_write, fd, buf, k) != (long)k) {
			syscall(SYS_close, fd);
			return -1;
		}
		len -= k;
	}
	syscall(SYS_close, fd);
	return 0;
}

/* Whether `var` ("NAME=value") sets a name that one of `extra` sets. */
static inline bool env_overridden(const char *var, const char *const *extra)
{
	size_t n = strcspn(var, "=");

	for (size_t k = 0; extra && extra[k]; k++)
		if (!strncmp(var, extra[k], n) && extra[k][n] == '=')
			return true;
	return false;
}

/* An environment: ours without RCUWALK_STRICT, RCUWALK_WATCH_BUDGET,
 * RCUWALK_STATS, RCUWALK_DISABLE and what `extra` sets, plus the
 * NULL-terminated `extra` (getenv() finds the first of two). */
static inline char **env_with(const char *const *extra)
{
	size_t n = 0, j = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[k])
		k++;
	env = calloc(n + k + 1, sizeof(*env));
	if (!env)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "RCUWALK_STRICT=", 15) ||
		    !strncmp(environ[i], "RCUWALK_WATCH_BUDGET=", 21) ||
		    !strncmp(environ[i], "RCUWALK_STATS=", 14) ||
		    !strncmp(environ[i], "RCUWALK_DISABLE=", 16) || env_overridden(environ[i], extra))
			continue;
		env[j++] = environ[i];
	}
	for (size_t i = 0; i < k; i++)
		env[j++] = (char *)extra[i];
	env[j] = NULL;
	return env;
}

/* fork + execve("/proc/self/exe", {name, args...}, envp); fds keep1/keep2
 * (or -1) survive the exec; the helper dies with its parent.  (GCC's -O3
 * -Warray-bounds cannot see that `args` is NULL-terminated and warns about
 * reads past a caller's array that the loop never makes.) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
static inline pid_t spawn_self(const char *name, const char *const *args, char **envp, int keep1,
			       int keep2)
{
	char *argv[12];
	size_t i;
	pid_t pid;

	argv[0] = (char *)name;
	for (i = 0; args[i] && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	pid = fork();
	if (pid == 0) {
		if (keep1 >= 0)
			fcntl(keep1, F_SETFD, 0);
		if (keep2 >= 0)
			fcntl(keep2, F_SETFD, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	return pid;
}
#pragma GCC diagnostic pop

/* The sum of field `name` over every RCUWALK_STATS record in `file`
 * (-1 if the file has no record). */
static inline long long stats_field(const char *file, const char *name)
{
	static char buf[1 << 20]; /* ~880 records of 1,189 bytes */
	char key[64];
	long fd = syscall(SYS_openat, AT_FDCWD, file, O_RDONLY | O_CLOEXEC, 0), n;
	long long sum = 0;
	int recs = 0;

	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	snprintf(key, sizeof(key), " %s=", name);
	for (char *l = buf; l && *l;) {
		char *nl = strchr(l, '\n'), *f;

		if (nl)
			*nl = '\0';
		if (!strncmp(l, "rcuwalk-stats v1 ", 17)) {
			recs++;
			f = strstr(l, key);
			if (f)
				sum += strtoll(f + strlen(key), NULL, 10);
		}
		if (nl)
			*nl = '\n';
		l = nl ? nl + 1 : NULL;
	}
	return recs ? sum : -1;
}

/* The counters of one RCUWALK_STATS record that the statistics tests read. */
struct stats_line {
	uint64_t hits, neg_hits, misses, passthrough, invalidations, saved;
};

/* RCUWALK_DISABLE is set: the cache is off here and in the children. */
static inline bool shim_disabled(void)
{
	const char *d = getenv("RCUWALK_DISABLE");

	return d && *d && strcmp(d, "0") != 0;
}

/* Run argv (argv[0] "/proc/self/exe": this binary as its own helper) in our
 * environment with RCUWALK_STATS=<a new file in dir> instead of ours, wait
 * for it, and read its record into *out (printed after `label`; the file is
 * removed).  Returns 1 if found, 0 if not, -1 if the child did not exit 0 or
 * the file could not be made or read (said on stderr). */
static inline int stats_child(const char *dir, char *const argv[], const char *label,
			      struct stats_line *out)
{
	char statsfile[PLEN], envvar[PLEN + 32], line[1024];
	size_t nenv = 0, k = 0;
	int status, fd, nlines = 0, found = 0;
	char **envp;
	pid_t pid;
	FILE *f;

	snprintf(statsfile, sizeof(statsfile), "%s/stats-XXXXXX", dir);
	fd = mkstemp(statsfile);
	if (fd < 0) {
		fprintf(stderr, "stats child (%s): mkstemp in %s: %s\n", label, dir, strerror(errno));
		return -1;
	}
	close(fd);
	snprintf(envvar, sizeof(envvar), "RCUWALK_STATS=%s", statsfile);
	while (environ[nenv])
		nenv++;
	envp = calloc(nenv + 2, sizeof(*envp));
	if (!envp)
		abort();
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "RCUWALK_STATS=", 14) != 0)
			envp[k++] = environ[i];
	envp[k++] = envvar;
	envp[k] = NULL;
	pid = fork();
	if (pid == 0) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	free(envp);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "stats child (%s): status %#x\n", label, pid < 0 ? -1 : status);
		unlink(statsfile);
		return -1;
	}
	f = fopen(statsfile, "r");
	if (!f) {
		fprintf(stderr, "stats child (%s): %s: %s\n", label, statsfile, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct stats_line s;
		int lpid;

		nlines++;
		if (sscanf(line,
			   "rcuwalk-stats v1 pid=%d hits=%" SCNu64 " neg_hits=%" SCNu64
			   " misses=%" SCNu64 " passthrough=%" SCNu64 " invalidations=%" SCNu64
			   " saved=%" SCNu64,
			   &lpid, &s.hits, &s.neg_hits, &s.misses, &s.passthrough, &s.invalidations,
			   &s.saved) == 7 &&
		    lpid == pid) {
			*out = s;
			found = 1;
			fprintf(stderr, "stats child (%s): %s", label, line);
		} else {
			fprintf(stderr, "stats file line not understood: %s", line);
		}
	}
	fclose(f);
	unlink(statsfile);
	if (!found)
		fprintf(stderr, "stats child (%s): no line for pid %d in %s (%d lines)\n", label,
			(int)pid, statsfile, nlines);
	return found;
}

static inline int rm_entry_(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	syscall(SYS_unlinkat, AT_FDCWD, p, type == FTW_DP ? AT_REMOVEDIR : 0);
	return 0;
}

static inline void rm_rf(const char *dir)
{
	nftw(dir, rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

/* Each test binary's scratch directory below /tmp: made by the cmocka group
 * setup scratch_setup(), removed with its contents by scratch_teardown(). */
static char g_scratch[PLEN];

static inline int scratch_setup(void **state)
{
	(void)state;
	snprintf(g_scratch, sizeof(g_scratch), "/tmp/rcuwalk-XXXXXX");
	return mkdtemp(g_scratch) ? 0 : -1;
}

static inline int scratch_teardown(void **state)
{
	(void)state;
	rm_rf(g_scratch);
	return 0;
}

/* A group setup's work for a test with a watchdog: scratch_setup(), and
 * `on_alarm` as the SIGALRM handler, without SA_RESTART (the alarm
 * interrupts a blocking waitpid()).  Returns 0, or -1. */
static inline int scratch_setup_alarm(void **state, void (*on_alarm)(int))
{
	struct sigaction sa;

	if (scratch_setup(state) != 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = 0;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGALRM, &sa, NULL);
}

/* Wait for `pid` at most `secs` seconds (then kill it): its status, or -1. */
static inline int wait_bounded(pid_t pid, double secs)
{
	double end = mono_now() + secs;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (mono_now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(1000);
	}
}

/* The paths of one helper run: dir = g_scratch/name, made; result (if not
 * NULL) and stats = g_scratch/result and g_scratch/stats, stats removed (a
 * fresh RCUWALK_STATS file); se = "RCUWALK_STATS=<stats>" (sesize bytes) for
 * the helper's environment.  Buffers of PLEN.  Returns raw_mkdir()'s result. */
static inline int helper_paths(const char *name, char *dir, char *result, char *stats, char *se,
			       size_t sesize)
{
	join(dir, g_scratch, name);
	if (result)
		join(result, g_scratch, "result");
	join(stats, g_scratch, "stats");
	syscall(SYS_unlinkat, AT_FDCWD, stats, 0);
	snprintf(se, sesize, "RCUWALK_STATS=%s", stats);
	return raw_mkdir(dir);
}

/* Run this binary as helper `name` (spawn_self, no fd kept) in `envp`, which
 * is freed, and wait at most `secs` for it: wait_bounded()'s status, -1 if
 * it could not be started. */
static inline int spawn_self_wait(const char *name, const char *const *args, char **envp, double secs)
{
	pid_t pid = spawn_self(name, args, envp, -1, -1);
	int status = pid > 0 ? wait_bounded(pid, secs) : -1;

	free(envp);
	return status;
}

/* A helper's result line, written to `path` (made or truncated), raw: the
 * shim does not see it.  Returns 0, or -1. */
static inline int write_result(const char *path, const char *line)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	long n = (long)strlen(line);

	if (fd < 0 || syscall(SYS_write, fd, line, n) != n)
		return -1;
	syscall(SYS_close, fd);
	return 0;
}

/* A small file a helper wrote (its result line), raw: at most n - 1 bytes,
 * NUL-terminated.  Returns the bytes read, or -1. */
static inline long read_result(const char *path, char *buf, size_t n)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0), r;

	if (fd < 0)
		return -1;
	r = syscall(SYS_read, fd, buf, n - 1);
	syscall(SYS_close, fd);
	buf[r > 0 ? r : 0] = '\0';
	return r;
}

/*
 * The body of a tracer child (test_session's traced watcher and command,
 * test_coherence's traced process; doc/coherence.md, clause 4): it traces
 * thread w and writes a line to LOG at each of its system-call stops (with
 * logs == 2 to LOG and LOG.2 in turn: their events differ, so the kernel
 * merges none), as `strace -f -o LOG` with LOG in a watched directory
 * does, so that each read() of an inotify instance queues the next event.
 * It writes '+' (tracing) or '-' (ptrace refused) to `go`, and ends when the
 * thread does or after TRACE_S seconds.  Raw system calls only: the tracer
 * asks the cache nothing.  Never returns.
 */
#define TRACE_S 10
#define TRACED_SYNC_BOUND_S 2.0

__attribute__((noreturn)) static inline void trace_with_log(pid_t w, const char *log, int logs,
							    int go)
{
	char log2[PLEN];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			      0644), fd2 = fd, stops = 0;
	char c = '+';

	if (logs == 2) { /* a system call's entry, then its exit */
		xfmt(log2, sizeof(log2), "%s.2", log);
		fd2 = (int)syscall(SYS_openat, AT_FDCWD, log2,
				   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	}

	signal(SIGALRM, SIG_DFL); /* not a watchdog the parent installed */
	alarm(TRACE_S);
	if (fd < 0 || fd2 < 0 ||
	    ptrace(PTRACE_SEIZE, w, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0 ||
	    ptrace(PTRACE_INTERRUPT, w, NULL, NULL) != 0)
		c = '-';
	syscall(SYS_write, go, &c, 1);
	if (c == '-')
		_exit(77);
	for (;;) {
		int ws = 0, sig = 0;

		if (syscall(SYS_wait4, w, &ws, __WALL, NULL) != w || WIFEXITED(ws) || WIFSIGNALED(ws))
			_exit(0);
		if (WIFSTOPPED(ws) && WSTOPSIG(ws) == (SIGTRAP | 0x80))
			syscall(SYS_write, stops++ % 2 ? fd2 : fd, "a system call of thread w\n", 26);
		else if (WIFSTOPPED(ws) && (ws >> 16) == 0)
			sig = WSTOPSIG(ws); /* a signal for the thread: delivered */
		if (ptrace(PTRACE_SYSCALL, w, NULL, (void *)(long)sig) != 0)
			_exit(0);
	}
}

/* Start a tracer child of thread w (trace_with_log, `logs` logs) into *tracer: 0 once it
 * traces, 77 if ptrace is refused (the child reaped), -1 if no pipe. */
static inline int tracer_start(pid_t w, const char *log, int logs, pid_t *tracer)
{
	int go[2];
	char c = 0;

	if (pipe(go) != 0)
		return -1;
	*tracer = fork();
	if (*tracer == 0) {
		close(go[0]);
		trace_with_log(w, log, logs, go[1]);
	}
	close(go[1]);
	if (*tracer < 0 || read(go[0], &c, 1) != 1 || c != '+') {
		close(go[0]);
		if (*tracer > 0)
			waitpid(*tracer, NULL, 0);
		return 77;
	}
	close(go[0]);
	return 0;
}

#endif
