/* SPDX-License-Identifier: MIT */
/*
 * test_own_fds.c - the shim's own fds (its inotify instance, io_uring and
 * mountinfo numbers, all above 511) stay out of a listing of the process's
 * fd table through readdir (preload/shim.c, hidden_entry): /proc/self/fd,
 * /dev/fd, /proc/<pid>/fd, /proc/self/task/<tid>/fd, /proc/self/fdinfo.
 * A raw getdents64 still shows them: the tests use it to know they exist,
 * so that a listing that hides nothing because there was nothing to hide
 * cannot pass.
 *
 * Beyond listings (issue 23, item 7): fstat, fcntl, statx, lseek, close...
 * on the shim's numbers answer as on a closed fd, close_range/closefrom
 * leave them, dup2 onto one gives the program that number, and under
 * RLIMIT_NOFILE = N a program opens as many files as without the shim, in
 * every mode: plain LD_PRELOAD, `rcuwalk --no-session --` and `rcuwalk --`
 * (a helper mode of this binary, run under each; RCUWALK_LAUNCHER).
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"
#include "../unit/raw_listdir.h"

#define MAXFD 4096

struct fdset {
	unsigned char has[MAXFD];
};

static int add_fd(void *arg, const char *name, size_t len)
{
	struct fdset *s = arg;
	int fd = atoi(name);

	(void)len;
	if (fd >= 0 && fd < MAXFD)
		s->has[fd] = 1;
	return 0;
}

/* The listing through readdir (the shim's); without the listing's own fd
 * when it lists this process's table (own). */
static void list_readdir(const char *path, struct fdset *s, int use64, int own)
{
	DIR *d = opendir(path);

	memset(s, 0, sizeof(*s));
	assert_non_null(d);
	for (;;) {
		const char *name;

		if (use64) {
			struct dirent64 *e = readdir64(d);

			name = e ? e->d_name : NULL;
		} else {
			struct dirent *e = readdir(d);

			name = e ? e->d_name : NULL;
		}
		if (!name)
			break;
		if (name[0] != '.')
			add_fd(s, name, strlen(name));
	}
	if (own)
		s->has[dirfd(d)] = 0;
	closedir(d);
}

/* Is fd one of the shim's (by what it is: nothing the test opened is)? */
static int is_shim_fd(int fd)
{
	char link[64], t[256];
	long n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, link, t, sizeof(t) - 1);
	if (n <= 0)
		return 0;
	t[n] = '\0';
	return !strcmp(t, "anon_inode:inotify") || !strcmp(t, "anon_inode:[io_uring]") ||
	       strstr(t, "/mountinfo") != NULL;
}

static int program_fd = -1;

/* Start the shim's cache (a miss, then hits) and give the program an fd of
 * its own next to the shim's numbers. */
static int setup(void **state)
{
	struct stat st;
	char f[PLEN];

	if (scratch_setup(state) != 0)
		return -1;
	join(f, g_scratch, "f");
	if (raw_write_file(f, 1, 0) != 0)
		return -1;
	for (int i = 0; i < 3; i++)
		stat(f, &st);
	program_fd = open(f, O_RDONLY);
	if (program_fd < 0 || dup2(program_fd, 600) != 600)
		return -1;
	return 0;
}

static void check_listing(const char *path, int use64)
{
	struct fdset raw, shim;
	int hidden = 0;

	memset(&raw, 0, sizeof(raw));
	assert_true(raw_listdir(path, MAXFD, add_fd, &raw) >= 0);
	list_readdir(path, &shim, use64, 1);
	for (int fd = 0; fd < MAXFD; fd++) {
		if (shim.has[fd] && !raw.has[fd])
			fail_msg("%s: readdir shows fd %d that getdents64 does not", path, fd);
		if (raw.has[fd] && !shim.has[fd]) {
			if (!is_shim_fd(fd) && fcntl(fd, F_GETFD) >= 0)
				fail_msg("%s: readdir hides the program's fd %d", path, fd);
			hidden += is_shim_fd(fd);
		}
		if (raw.has[fd] && shim.has[fd] && is_shim_fd(fd))
			fail_msg("%s: readdir shows the shim's fd %d", path, fd);
	}
	assert_true(shim.has[0] && shim.has[program_fd] && shim.has[600]);
	/* There was something to hide: the shim had started. */
	assert_true(hidden >= 1);
}

static void test_own_fds_proc_self_fd_lists_only_the_programs(void **state)
{
	(void)state;
	check_listing("/proc/self/fd", 0);
	check_listing("/proc/self/fd", 1);
}

static void test_own_fds_dev_fd_and_pid_and_task_dirs_list_only_the_programs(void **state)
{
	char p[128];

	(void)state;
	check_listing("/dev/fd", 0);
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)getpid());
	check_listing(p, 0);
	snprintf(p, sizeof(p), "/proc/self/task/%d/fd", (int)syscall(SYS_gettid));
	check_listing(p, 0);
	check_listing("/proc/self/fdinfo", 1);
}

/* Another process's fd directory is not ours to edit: listed whole. */
static void test_own_fds_parents_fd_dir_listed_whole_by_child(void **state)
{
	int pfd[2];
	pid_t pid;
	char p[64];
	struct fdset raw, shim;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)getpid());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		memset(&raw, 0, sizeof(raw));
		if (raw_listdir(p, MAXFD, add_fd, &raw) < 0)
			_exit(2);
		list_readdir(p, &shim, 0, 0);
		_exit(memcmp(raw.has, shim.has, sizeof(raw.has)) ? 1 : 0);
	}
	/* closed after the child's two listings, not while it makes them: a
	 * close between them was a difference (failed once under ctest -j2) */
	assert_int_equal(wait_bounded(pid, 30), 0);
	close(pfd[0]);
	close(pfd[1]);
}

/* Issue 16's report: Python's subprocess with pass_fds; the child lists
 * /proc/self/fd and must find 0, 1, 2, the fd it was given and the one
 * os.listdir opened, nothing else. */
static void test_own_fds_python_pass_fds_child_sees_only_given_fds(void **state)
{
	const char *py = "/usr/bin/python3";
	char out[512] = "";
	int pfd[2], given = -1, listed[16], n = 0, extra = 0;
	pid_t pid;
	long len;
	char *tok, *save;

	(void)state;
	if (access(py, X_OK) != 0) {
		print_message("no %s: skipped\n", py);
		skip();
	}
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		execl(py, py, "-c",
		      "import os, subprocess, sys\n"
		      "r, w = os.pipe()\n"
		      "o = subprocess.check_output([sys.executable, '-c', "
		      "'import os; print(\",\".join(sorted(os.listdir(\"/proc/self/fd\"), key=int)))'], "
		      "pass_fds=(w,))\n"
		      "print(w, o.decode().strip())\n",
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	len = (long)read_to_eof(pfd[0], out, sizeof(out));
	close(pfd[0]);
	assert_int_equal(wait_bounded(pid, 60), 0);
	assert_true(len > 0);
	print_message("python child: %s", out);
	assert_int_equal(sscanf(out, "%d", &given), 1);
	tok = strchr(out, ' ');
	assert_non_null(tok);
	for (tok = strtok_r(tok + 1, ",\n", &save); tok && n < 16; tok = strtok_r(NULL, ",\n", &save))
		listed[n++] = atoi(tok);
	for (int i = 0; i < n; i++)
		if (listed[i] > 2 && listed[i] != given)
			extra++;
	/* The one extra: os.listdir's own fd, a low number. */
	assert_int_equal(extra, 1);
	for (int i = 0; i < n; i++)
		assert_true(listed[i] < 256);
}

/* ---------------------------------------------------------------------- */
/* fstat, fcntl and the rest; the numbers and the limit (issue 23, item 7) */

/* The shim's numbers as the kernel shows them (raw syscalls, no fd of its
 * own: the table may be full). */
static int shim_fds(int *out, int max)
{
	int n = 0;

	for (int fd = 0; fd < MAXFD; fd++)
		if (syscall(SYS_fcntl, fd, F_GETFD) >= 0 && is_shim_fd(fd) && n < max)
			out[n++] = fd;
	return n;
}

/* fd_status.py's probe in C: fstat, then fcntl(F_GETFD), on every number
 * below the limit; "0,1,2,..." into buf. */
static void probe_visible(char *buf, size_t size)
{
	struct rlimit rl;
	struct stat st;
	size_t len = 0;

	buf[0] = '\0';
	getrlimit(RLIMIT_NOFILE, &rl);
	for (int fd = 0; fd < (int)(rl.rlim_cur < MAXFD ? rl.rlim_cur : MAXFD); fd++) {
		int a = fstat(fd, &st) == 0, b = fcntl(fd, F_GETFD) >= 0;

		if (a != b)
			len += (size_t)snprintf(buf + len, size - len, "%s!%d", len ? "," : "", fd);
		else if (a)
			len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? "," : "", fd);
		if (len >= size)
			break;
	}
}

/* Make the shim start (a miss, then hits, in dir). */
static void warm_in(const char *dir)
{
	char f[PLEN], m[PLEN];
	struct stat st;

	join(f, dir, "f");
	join(m, dir, "missing");
	for (int i = 0; i < 200; i++) {
		stat(f, &st);
		stat(m, &st);
	}
}

/* Helper "fds DIR": the probe, after the shim started. */
static int helper_fds(const char *dir)
{
	int own[16], n;
	char vis[1024];

	warm_in(dir);
	n = shim_fds(own, 16);
	probe_visible(vis, sizeof(vis));
	printf("shim=%d visible=%s\n", n, vis);
	return 0;
}

/* Helper "limit N DIR": with RLIMIT_NOFILE = N, open /dev/null until it
 * fails; each number must be the lowest one the program does not hold. */
static int helper_limit(const char *nstr, const char *dir)
{
	struct rlimit rl = { (rlim_t)atoi(nstr), (rlim_t)atoi(nstr) };
	unsigned char held[MAXFD];
	int own[16], n, opened = 0, exact = 1, fd, err;
	struct stat st;
	char f[PLEN];

	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 2;
	warm_in(dir);
	n = shim_fds(own, 16);
	memset(held, 0, sizeof(held));
	for (fd = 0; fd < (int)rl.rlim_cur; fd++) {
		int shim = 0;

		for (int i = 0; i < n; i++)
			shim |= own[i] == fd;
		held[fd] = !shim && syscall(SYS_fcntl, fd, F_GETFD) >= 0;
	}
	for (;;) {
		int want = 0;

		while (want < (int)rl.rlim_cur && held[want])
			want++;
		fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		if (fd != want)
			exact = 0;
		held[fd] = 1;
		opened++;
	}
	err = errno;
	/* Lookups still exact once the shim gave its fds back. */
	join(f, dir, "f");
	if (stat(f, &st) != 0)
		exact = 0;
	printf("shim=%d opened=%d exact=%d errno=%s\n", n, opened, exact, strerror(err));
	return 0;
}

enum { MODE_NONE, MODE_PLAIN, MODE_NO_SESSION, MODE_SESSION };
static const char *const mode_name[] = { "no shim", "LD_PRELOAD", "rcuwalk --no-session", "rcuwalk" };

/* Run argv under `mode` with only fds 0, 1 (a pipe) and 2; its stdout into
 * out.  Exit status, or -1. */
static int run_in_mode(int mode, char *const argv[], char *out, size_t size)
{
	const char *launcher = getenv("RCUWALK_LAUNCHER");
	int p[2], st;
	pid_t pid;

	out[0] = '\0';
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *args[16];
		int k = 0;

		dup2(p[1], 1);
		syscall(SYS_close_range, 3, ~0U, 0); /* raw: nothing of ours */
		if (mode == MODE_NONE) {
			unsetenv("LD_PRELOAD");
		} else if (mode == MODE_NO_SESSION || mode == MODE_SESSION) {
			/* The launcher adds the shim; a sanitizer runtime ahead
			 * of it (the ASan build's libasan) must stay first. */
			const char *lp = getenv("LD_PRELOAD");
			char keep[4096] = "";
			size_t n = 0;

			while (lp && *lp) {
				size_t len = strcspn(lp, ": ");

				if (len && len < sizeof(keep) - n - 1 &&
				    !memmem(lp, len, "librcuwalk", 10)) {
					if (n)
						keep[n++] = ':';
					memcpy(keep + n, lp, len);
					n += len;
					keep[n] = '\0';
				}
				lp += len;
				lp += strspn(lp, ": ");
			}
			if (n)
				setenv("LD_PRELOAD", keep, 1);
			else
				unsetenv("LD_PRELOAD");
		}
		setenv("RCUWALK_WARMUP", "0", 1);
		setenv("XDG_RUNTIME_DIR", g_scratch, 1);
		if (mode == MODE_NO_SESSION || mode == MODE_SESSION) {
			args[k++] = (char *)launcher;
			if (mode == MODE_NO_SESSION)
				args[k++] = "--no-session";
			args[k++] = "--";
		}
		for (int i = 0; argv[i] && k < 15; i++)
			args[k++] = argv[i];
		args[k] = NULL;
		execv(args[0], args);
		_exit(127);
	}
	close(p[1]);
	read_to_eof(p[0], out, size);
	close(p[0]);
	st = wait_bounded(pid, 120);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int modes_available(void)
{
	const char *l = getenv("RCUWALK_LAUNCHER");

	if (l && access(l, X_OK) == 0)
		return MODE_SESSION;
	print_message("no RCUWALK_LAUNCHER: the launcher's modes are skipped\n");
	return MODE_PLAIN;
}

static const char *self_exe(void)
{
	static char self[PATH_MAX];
	long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = '\0';
	return self;
}

static void test_own_fds_fstat_probe_sees_only_the_programs_in_every_mode(void **state)
{
	char self[PATH_MAX], out[2048];
	char *argv[] = { self, "--probe", "fds", g_scratch, NULL };

	(void)state;
	strcpy(self, self_exe());
	for (int mode = MODE_PLAIN; mode <= modes_available(); mode++) {
		int shim = -1;
		char vis[1024] = "";

		assert_int_equal(run_in_mode(mode, argv, out, sizeof(out)), 0);
		print_message("%s: %s", mode_name[mode], out);
		assert_int_equal(sscanf(out, "shim=%d visible=%1023s", &shim, vis), 2);
		assert_true(shim >= 1); /* there was something to hide */
		assert_string_equal(vis, "0,1,2");
	}
}

static void test_own_fds_under_rlimit_opens_as_many_files_as_without_shim(void **state)
{
	static const char *const limits[] = { "6", "10", "20", "64", "1024" };
	char self[PATH_MAX], out[512];

	(void)state;
	strcpy(self, self_exe());
	for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		char *argv[] = { self, "--probe", "limit", (char *)limits[l], g_scratch, NULL };
		int base = -1, shim, opened, exact;

		for (int mode = MODE_NONE; mode <= modes_available(); mode++) {
			assert_int_equal(run_in_mode(mode, argv, out, sizeof(out)), 0);
			print_message("RLIMIT_NOFILE %s, %s: %s", limits[l], mode_name[mode], out);
			assert_int_equal(sscanf(out, "shim=%d opened=%d exact=%d", &shim, &opened, &exact), 3);
			if (mode == MODE_NONE)
				base = opened;
			assert_int_equal(opened, base);
			assert_int_equal(opened, atoi(limits[l]) - 3);
			assert_int_equal(exact, 1);
			if (mode == MODE_PLAIN)
				assert_true(shim >= 1); /* the shim held fds before it gave them back */
		}
	}
}

/* Every call the probes use answers on the shim's numbers as on a closed fd,
 * and they stay open (and the shim's). */
static void test_own_fds_calls_on_shim_fds_answer_as_on_closed_fd(void **state)
{
	int own[16], n = shim_fds(own, 16);
	char vis[4096], want[64];
	struct stat st;
	struct statx sx;

	(void)state;
	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		int fd = own[i];

#define EBADF_CALL(call)                                                                   \
	do {                                                                               \
		errno = 0;                                                                 \
		if ((long)(call) != -1 || errno != EBADF)                                  \
			fail_msg("fd %d: %s: not EBADF (errno %d)", fd, #call, errno);     \
	} while (0)
		EBADF_CALL(fstat(fd, &st));
		EBADF_CALL(fstatat(fd, "", &st, AT_EMPTY_PATH));
		EBADF_CALL(fstatat(fd, "rel", &st, 0));
		EBADF_CALL(statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
		EBADF_CALL(fcntl(fd, F_GETFD));
		EBADF_CALL(fcntl(fd, F_GETFL));
		EBADF_CALL(fcntl(fd, F_DUPFD_CLOEXEC, 0));
		EBADF_CALL(dup(fd));
		EBADF_CALL(dup2(fd, 700));
		EBADF_CALL(dup2(fd, fd));
		EBADF_CALL(lseek(fd, 0, SEEK_CUR));
		EBADF_CALL(ioctl(fd, FIONREAD, &(int){ 0 }));
		EBADF_CALL(openat(fd, "rel", O_RDONLY));
		EBADF_CALL(faccessat(fd, "rel", F_OK, 0));
		EBADF_CALL(close(fd));
		/* an absolute path ignores the dirfd, as the kernel does */
		assert_int_equal(fstatat(fd, "/", &st, 0), 0);
		errno = 0;
		assert_int_equal(fstatat(fd, "", &st, 0), -1); /* no AT_EMPTY_PATH: ENOENT first */
		assert_int_equal(errno, ENOENT);
		assert_true(is_shim_fd(fd)); /* nothing closed, nothing replaced */
	}
	vis[0] = ',';
	probe_visible(vis + 1, sizeof(vis) - 2);
	strcat(vis, ",");
	assert_true(strncmp(vis, ",0,1,2,", 7) == 0);
	snprintf(want, sizeof(want), ",%d,", program_fd);
	assert_non_null(strstr(vis, want));
	assert_non_null(strstr(vis, ",600,"));
	for (int i = 0; i < n; i++) {
		snprintf(want, sizeof(want), ",%d,", own[i]);
		if (strstr(vis, want))
			fail_msg("the probe shows the shim's fd %d: %s", own[i], vis);
	}
}

/* In a child: a foreign create (a grandchild's raw syscalls) is seen by
 * stat within 2 s, as the shim's instance works. */
static int foreign_create_seen(const char *dir, const char *name)
{
	char p[PLEN];
	struct stat st;
	pid_t pid;

	join(p, dir, name);
	for (int i = 0; i < 3; i++)
		if (stat(p, &st) == 0)
			return 0;
	pid = fork();
	if (pid == 0) {
		raw_write_file(p, 1, 0);
		_exit(0);
	}
	for (int i = 0; i < 2000; i++) {
		if (stat(p, &st) == 0) {
			waitpid(pid, NULL, 0);
			return 1;
		}
		usleep(1000);
	}
	waitpid(pid, NULL, 0);
	return 0;
}

static void run_child(void (*fn)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(wait_bounded(pid, 60), 0);
}

#define CHILD_CHECK(c)                                                          \
	do {                                                                    \
		if (!(c)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                               \
		}                                                               \
	} while (0)

static void close_range_child(void)
{
	int before[16], after[16], n, m, mine[3], hi;

	warm_in(g_scratch);
	n = shim_fds(before, 16);
	CHILD_CHECK(n >= 1);
	hi = before[n - 1] + 1;
	mine[0] = open("/dev/null", O_RDONLY);
	mine[1] = dup2(mine[0], 600);
	mine[2] = dup2(mine[0], hi); /* above the shim's */
	CHILD_CHECK(mine[0] >= 3 && mine[1] == 600 && mine[2] == hi);
	CHILD_CHECK(close_range(3, ~0U, 0) == 0);
	for (int i = 0; i < 3; i++)
		CHILD_CHECK(syscall(SYS_fcntl, mine[i], F_GETFD) == -1);
	m = shim_fds(after, 16);
	CHILD_CHECK(m == n && !memcmp(before, after, (size_t)n * sizeof(int)));
	CHILD_CHECK(foreign_create_seen(g_scratch, "by-other-cr"));
	CHILD_CHECK(shim_fds(after, 16) == n);
	/* closefrom the same way */
	mine[0] = open("/dev/null", O_RDONLY);
	CHILD_CHECK(dup2(mine[0], hi) == hi);
	closefrom(3);
	CHILD_CHECK(syscall(SYS_fcntl, mine[0], F_GETFD) == -1 && syscall(SYS_fcntl, hi, F_GETFD) == -1);
	m = shim_fds(after, 16);
	CHILD_CHECK(m == n && !memcmp(before, after, (size_t)n * sizeof(int)));
	CHILD_CHECK(foreign_create_seen(g_scratch, "by-other-cf"));
}

static void test_own_fds_close_range_closes_the_programs_and_keeps_the_shims(void **state)
{
	(void)state;
	run_child(close_range_child);
}

static void dup2_child(void)
{
	int own[16], n, p[2], s;
	struct stat st;
	char buf[8];

	warm_in(g_scratch);
	n = shim_fds(own, 16);
	CHILD_CHECK(n >= 1);
	s = own[n - 1];
	CHILD_CHECK(pipe(p) == 0);
	CHILD_CHECK(dup2(p[0], s) == s); /* the program takes the number */
	CHILD_CHECK(fstat(s, &st) == 0 && S_ISFIFO(st.st_mode));
	CHILD_CHECK(fcntl(s, F_GETFD) == 0); /* dup2 clears FD_CLOEXEC */
	CHILD_CHECK(write(p[1], "abc", 3) == 3);
	CHILD_CHECK(read(s, buf, sizeof(buf)) == 3 && !memcmp(buf, "abc", 3));
	CHILD_CHECK(!is_shim_fd(s));
	/* The shim answers exactly, with a new instance whose fds hide again. */
	CHILD_CHECK(foreign_create_seen(g_scratch, "by-other-dup2"));
	warm_in(g_scratch);
	n = shim_fds(own, 16);
	CHILD_CHECK(n >= 1);
	for (int i = 0; i < n; i++)
		CHILD_CHECK(fstat(own[i], &st) == -1 && errno == EBADF);
	CHILD_CHECK(fstat(s, &st) == 0 && S_ISFIFO(st.st_mode));
}

static void test_own_fds_dup2_onto_shim_number_gives_program_that_fd(void **state)
{
	(void)state;
	run_child(dup2_child);
}

/* CPython's test_subprocess test_pass_fds: the child runs fd_status.py's
 * logic (fstat on every number below SC_OPEN_MAX) and must print 0, 1, 2
 * and the fd it was given, in every mode. */
static void test_own_fds_python_fd_status_in_pass_fds_child(void **state)
{
	const char *py = "/usr/bin/python3";
	static const char script[] =
		"import os, subprocess, sys\n"
		"status = ('import errno, os\\n'\n"
		"  'fds = []\\n'\n"
		"  'for fd in range(0, os.sysconf(\"SC_OPEN_MAX\")):\\n'\n"
		"  '    try:\\n'\n"
		"  '        os.fstat(fd)\\n'\n"
		"  '    except OSError as e:\\n'\n"
		"  '        if e.errno == errno.EBADF: continue\\n'\n"
		"  '        raise\\n'\n"
		"  '    fds.append(fd)\\n'\n"
		"  'print(\",\".join(map(str, fds)))\\n')\n"
		"for i in range(50): os.path.exists(os.path.join(sys.argv[1], 'missing'))\n"
		"r, w = os.pipe()\n"
		"o = subprocess.check_output([sys.executable, '-c', status], pass_fds=(w,))\n"
		"print(w, o.decode().strip())\n";
	char out[1024];
	char *argv[] = { (char *)py, "-c", (char *)script, g_scratch, NULL };

	(void)state;
	if (access(py, X_OK) != 0) {
		print_message("no %s: skipped\n", py);
		skip();
	}
	for (int mode = MODE_PLAIN; mode <= modes_available(); mode++) {
		int w = -1;
		char got[512] = "", want[64];

		assert_int_equal(run_in_mode(mode, argv, out, sizeof(out)), 0);
		print_message("%s: python child: %s", mode_name[mode], out);
		assert_int_equal(sscanf(out, "%d %511s", &w, got), 2);
		snprintf(want, sizeof(want), "0,1,2,%d", w);
		assert_string_equal(got, want);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_fds_proc_self_fd_lists_only_the_programs),
		cmocka_unit_test(test_own_fds_dev_fd_and_pid_and_task_dirs_list_only_the_programs),
		cmocka_unit_test(test_own_fds_parents_fd_dir_listed_whole_by_child),
		cmocka_unit_test(test_own_fds_python_pass_fds_child_sees_only_given_fds),
		cmocka_unit_test(test_own_fds_calls_on_shim_fds_answer_as_on_closed_fd),
		cmocka_unit_test(test_own_fds_fstat_probe_sees_only_the_programs_in_every_mode),
		cmocka_unit_test(test_own_fds_under_rlimit_opens_as_many_files_as_without_shim),
		cmocka_unit_test(test_own_fds_close_range_closes_the_programs_and_keeps_the_shims),
		cmocka_unit_test(test_own_fds_dup2_onto_shim_number_gives_program_that_fd),
		cmocka_unit_test(test_own_fds_python_fd_status_in_pass_fds_child),
	};

	if (argc >= 4 && !strcmp(argv[1], "--probe"))
		return !strcmp(argv[2], "fds") ? helper_fds(argv[3])
		       : argc >= 5 && !strcmp(argv[2], "limit") ? helper_limit(argv[3], argv[4])
								  : 2;

	if (!getenv("RCUWALK_TEST_SHIM")) {
		fprintf(stderr, "test_own_fds: run with librcuwalk.so preloaded (ctest does)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, scratch_teardown);
}
