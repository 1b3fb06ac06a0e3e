/* SPDX-License-Identifier: MIT */
/*
 * test_verify.c - verify mode (RCUWALK_VERIFY=1, issue 5 part 4), by fault
 * injection: preloaded with librcuwalk-faulty.so, the shim built with
 * RCUWALK_FAULT_INJECTION, whose RCUWALK_TEST_CORRUPT=KIND corrupts the
 * cache's answers (preload/verify.c).  Each test runs this program again as
 * a workload child with the variables set (the library reads them at start);
 * the child makes its lookups through libc, compares each answer with the raw
 * system call, and exits with the number that differed.
 *   - corruption with verify off: the child sees it (the injection works);
 *   - corruption with verify on: the child gets the kernel's answers, the
 *     log has one line per corrupted answer naming call, path and both
 *     answers, and the stats record counts them in `mismatches`;
 *   - no corruption: a workload with changes logs nothing, counts 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

extern char **environ;

static char g_self[PATH_MAX];
static char g_dir[64];

/* ------------------------------------------------------------------------ */
/* The workload child */

static int g_diffs;

static void diff(const char *what, const char *path, long a, long b)
{
	if (a != b) {
		fprintf(stderr, "workload: %s(%s): shim %ld, kernel %ld\n", what, path, a, b);
		g_diffs++;
	}
}

static void w_stat(const char *p, int nofollow)
{
	struct stat s, k;
	int e1, e2, r1, r2;

	memset(&s, 0, sizeof(s));
	errno = 0;
	r1 = nofollow ? lstat(p, &s) : stat(p, &s);
	e1 = errno;
	errno = 0;
	r2 = (int)syscall(SYS_newfstatat, AT_FDCWD, p, &k, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
	e2 = errno;
	diff("stat ret", p, r1, r2);
	diff("stat errno", p, e1, e2);
	if (r1 == 0 && r2 == 0) {
		diff("stat size", p, (long)s.st_size, (long)k.st_size);
		diff("stat ino", p, (long)s.st_ino, (long)k.st_ino);
		diff("stat mode", p, (long)s.st_mode, (long)k.st_mode);
		diff("stat mtime", p, (long)s.st_mtim.tv_nsec, (long)k.st_mtim.tv_nsec);
	}
}

static void w_access(const char *p, int mode)
{
	int r1, r2, e1, e2;

	errno = 0;
	r1 = access(p, mode);
	e1 = errno;
	errno = 0;
	r2 = (int)syscall(SYS_faccessat2, AT_FDCWD, p, mode, 0);
	e2 = errno;
	diff("access ret", p, r1, r2);
	diff("access errno", p, e1, e2);
}

static void w_open(const char *p)
{
	int fd, e1, e2;
	long k;

	errno = 0;
	fd = open(p, O_RDONLY);
	e1 = errno;
	errno = 0;
	k = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);
	e2 = errno;
	diff("open ok", p, fd >= 0, k >= 0);
	if (fd < 0 || k < 0)
		diff("open errno", p, e1, e2);
	if (fd >= 0)
		close(fd);
	if (k >= 0)
		syscall(SYS_close, k);
}

static void w_readlink(const char *p)
{
	char a[256], b[256];
	long r1, r2;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	r1 = readlink(p, a, sizeof(a));
	r2 = syscall(SYS_readlinkat, AT_FDCWD, p, b, sizeof(b));
	diff("readlink ret", p, r1, r2);
	diff("readlink bytes", p, memcmp(a, b, sizeof(a)) != 0, 0);
}

/* The canonical name of p by raw syscalls: the kernel's name of an O_PATH fd. */
static void canonical(const char *p, char *out, size_t size)
{
	char link[64];
	long fd = syscall(SYS_openat, AT_FDCWD, p, O_PATH | O_CLOEXEC), n = -1;

	out[0] = '\0';
	if (fd < 0)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, link, out, size - 1);
	syscall(SYS_close, fd);
	out[n > 0 ? n : 0] = '\0';
}

static void w_realpath(const char *p)
{
	char want[PATH_MAX], got[PATH_MAX];
	char *r = realpath(p, got);

	canonical(p, want, sizeof(want));
	diff("realpath ok", p, r != NULL, want[0] != '\0');
	if (r && want[0])
		diff("realpath name", p, strcmp(got, want) != 0, 0);
}

static void w_statx(const char *p)
{
	struct statx a, b;
	int r1, r2;

	memset(&a, 0, sizeof(a));
	r1 = statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &a);
	r2 = (int)syscall(SYS_statx, AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &b);
	diff("statx ret", p, r1, r2);
	if (r1 == 0 && r2 == 0)
		diff("statx size", p, (long)a.stx_size, (long)b.stx_size);
}

static char wp[8][PATH_MAX];

static const char *W(int slot, const char *dir, const char *rel)
{
	snprintf(wp[slot], sizeof(wp[slot]), "%s/%s", dir, rel);
	return wp[slot];
}

static void raw_file(const char *p, const char *data, mode_t mode)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_TRUNC | O_WRONLY, mode);

	if (fd >= 0) {
		(void)!syscall(SYS_write, fd, data, strlen(data));
		syscall(SYS_fchmod, fd, mode);
		syscall(SYS_close, fd);
	}
}

static int workload(const char *kind, const char *dir)
{
	const char *f = W(0, dir, "f"), *l = W(1, dir, "l"), *miss = W(2, dir, "missing");

	raw_file(f, "12345", 0644);
	syscall(SYS_symlinkat, "f", AT_FDCWD, l);
	for (int i = 0; i < 3; i++) {
		if (!strcmp(kind, "size") || !strcmp(kind, "all")) {
			w_stat(f, 0);
			w_stat(f, 1);
			w_statx(f);
		}
		if (!strcmp(kind, "errno") || !strcmp(kind, "all")) {
			w_stat(miss, 0);
			w_open(miss);
			w_access(miss, F_OK);
		}
		if (!strcmp(kind, "access") || !strcmp(kind, "all"))
			w_access(f, R_OK);
		if (!strcmp(kind, "link") || !strcmp(kind, "all")) {
			w_readlink(l);
			w_realpath(l);
		}
	}
	if (!strcmp(kind, "all")) {
		/* Changes through libc between lookups, then everything again. */
		const char *g = W(3, dir, "g"), *sub = W(4, dir, "sub"), *sf = W(5, dir, "sub/x");

		for (int i = 0; i < 40; i++) {
			int fd;

			switch (i % 5) {
			case 0:
				fd = open(f, O_WRONLY | O_APPEND);
				if (fd >= 0) {
					(void)!write(fd, "more", 4);
					close(fd);
				}
				break;
			case 1:
				rename(f, g);
				rename(g, f);
				break;
			case 2:
				chmod(f, (i & 8) ? 0600 : 0644);
				break;
			case 3:
				mkdir(sub, 0755);
				close(open(sf, O_CREAT | O_WRONLY, 0644));
				break;
			default:
				unlink(sf);
				rmdir(sub);
				break;
			}
			w_stat(f, 0);
			w_stat(g, 0);
			w_stat(sub, 0);
			w_stat(sf, 1);
			w_open(sf);
			w_access(f, R_OK | W_OK);
			w_access(sf, F_OK);
			w_readlink(l);
			w_realpath(l);
			w_realpath(sf);
			w_statx(f);
			{
				DIR *d = opendir(sf);

				diff("opendir", sf, d != NULL, 0); /* a file or nothing */
				if (d)
					closedir(d);
			}
		}
	}
	return g_diffs > 100 ? 100 : g_diffs;
}

/* ------------------------------------------------------------------------ */
/* The tests */

static char pbuf[4][PATH_MAX];

static const char *P(int slot, const char *rel)
{
	snprintf(pbuf[slot], sizeof(pbuf[slot]), "%s/%s", g_dir, rel);
	return pbuf[slot];
}

/* Run the workload `kind` in a fresh directory with `env` (NAME=VALUE,
 * NULL-terminated) added; returns its exit status (-1: not an exit). */
static int run_child(const char *kind, const char *wdir, const char *const *env)
{
	char *argv[] = { g_self, (char *)"--workload", (char *)kind, (char *)wdir, NULL };
	const char *drop[] = { "RCUWALK_VERIFY=", "RCUWALK_VERIFY_LOG=", "RCUWALK_TEST_CORRUPT=",
			       "RCUWALK_STATS=", "RCUWALK_RACY_MS=", "TMPDIR=", "XDG_RUNTIME_DIR=" };
	char *envp[256];
	int n = 0, status;
	pid_t pid;

	for (char **e = environ; *e && n < 200; e++) {
		int keep = 1;

		for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
			if (!strncmp(*e, drop[i], strlen(drop[i])))
				keep = 0;
		if (keep)
			envp[n++] = *e;
	}
	envp[n++] = (char *)"RCUWALK_RACY_MS=0";
	for (; *env && n < 254; env++)
		envp[n++] = (char *)*env;
	envp[n] = NULL;
	assert_int_equal(syscall(SYS_mkdirat, AT_FDCWD, wdir, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execve(g_self, argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
	static char buf[1 << 18];
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY), n = 0, r;

	buf[0] = '\0';
	if (fd < 0)
		return NULL;
	while (n < (long)sizeof(buf) - 1 && (r = syscall(SYS_read, fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n] = '\0';
	return buf;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *l = s; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);

		if (memmem(l, len, needle, strlen(needle)))
			n++;
		l = e ? e + 1 : NULL;
	}
	return n;
}

/* The sum of field `name` over the records in `path`. */
static long long record_sum(const char *path, const char *name)
{
	char key[64];
	char *s = slurp(path);
	long long sum = 0;

	assert_non_null(s);
	snprintf(key, sizeof(key), " %s=", name);
	for (char *p = s; (p = strstr(p, key)); p += strlen(key))
		sum += strtoll(p + strlen(key), NULL, 10);
	return sum;
}

static void test_verify_injected_corruption_reaches_the_program_without_verify(void **state)
{
	const char *env[] = { "RCUWALK_TEST_CORRUPT=size", NULL };

	(void)state;
	/* Control: the fault injection is real (without it the other tests
	 * could not fail). */
	assert_true(run_child("size", P(0, "control"), env) > 0);
}

static void test_verify_corrupted_size_is_logged_and_the_program_gets_the_kernels(void **state)
{
	char logenv[PATH_MAX + 32], recenv[PATH_MAX + 32];
	const char *env[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=size", logenv, recenv, NULL };
	char *log;
	int lines;

	(void)state;
	snprintf(logenv, sizeof(logenv), "RCUWALK_VERIFY_LOG=%s", P(1, "size.log"));
	snprintf(recenv, sizeof(recenv), "RCUWALK_STATS=%s", P(2, "size.rec"));
	assert_int_equal(run_child("size", P(0, "size"), env), 0);
	log = slurp(P(1, "size.log"));
	assert_non_null(log);
	/* stat, lstat and statx of f, 3 times each: every answer was a cached
	 * one (its first lookup too, once the cache had filled the gap). */
	lines = count_lines(log, "rcuwalk-verify pid=");
	assert_int_equal(count_lines(log, "call=stat path=\""), 3);
	assert_int_equal(count_lines(log, "call=lstat path=\""), 3);
	assert_int_equal(count_lines(log, "call=statx(mask=0x7ff,flags=0x100) path=\""), 3);
	assert_int_equal(lines, 9);
	assert_int_equal(count_lines(log, "/size/f\" cache: ret=0"), 9);
	assert_int_equal(count_lines(log, "cache: ret=0 "), 9);
	assert_int_equal(count_lines(log, " size=6 "), 9); /* the corrupted answers */
	assert_int_equal(count_lines(log, "kernel: ret=0 "), 9);
	assert_int_equal(count_lines(log, " size=5 "), 9); /* the kernel's */
	assert_int_equal(record_sum(P(2, "size.rec"), "mismatches"), lines);
}

static void test_verify_corrupted_errors_are_logged_for_stat_open_and_access(void **state)
{
	char logenv[PATH_MAX + 32], recenv[PATH_MAX + 32];
	const char *env[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=errno", logenv, recenv, NULL };
	char *log;

	(void)state;
	snprintf(logenv, sizeof(logenv), "RCUWALK_VERIFY_LOG=%s", P(1, "errno.log"));
	snprintf(recenv, sizeof(recenv), "RCUWALK_STATS=%s", P(2, "errno.rec"));
	assert_int_equal(run_child("errno", P(0, "errno"), env), 0);
	log = slurp(P(1, "errno.log"));
	assert_non_null(log);
	assert_int_equal(count_lines(log, "call=stat path=\""), 3);
	assert_int_equal(count_lines(log, "call=open path=\""), 3);
	assert_int_equal(count_lines(log, "call=faccessat(mode=0) path=\""), 3);
	assert_int_equal(count_lines(log, "cache: ret=-1 errno=ENOTDIR kernel: ret=-1 errno=ENOENT"), 9);
	assert_int_equal(record_sum(P(2, "errno.rec"), "mismatches"), 9);
}

static void test_verify_corrupted_access_and_names_are_logged(void **state)
{
	char logenv[PATH_MAX + 32];
	const char *env1[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=access", logenv, NULL };
	const char *env2[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=link", logenv, NULL };
	char *log;

	(void)state;
	snprintf(logenv, sizeof(logenv), "RCUWALK_VERIFY_LOG=%s", P(1, "names.log"));
	assert_int_equal(run_child("access", P(0, "access"), env1), 0);
	assert_int_equal(run_child("link", P(0, "link"), env2), 0);
	log = slurp(P(1, "names.log"));
	assert_non_null(log);
	assert_int_equal(count_lines(log, "call=faccessat(mode=4) path=\""), 3);
	assert_int_equal(count_lines(log, "cache: ret=-1 errno=EACCES kernel: ret=0"), 3);
	/* readlink's "f" became "g"; realpath's leading '/' became '.' */
	assert_int_equal(count_lines(log, "call=readlink path=\""), 3);
	assert_int_equal(count_lines(log, "cache: ret=1 \"g\" kernel: ret=1 \"f\""), 3);
	assert_int_equal(count_lines(log, "call=realpath path=\""), 3);
}

static void test_verify_default_log_is_per_process_in_tmpdir(void **state)
{
	char tmpenv[PATH_MAX + 16];
	const char *env[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=size", tmpenv, NULL };
	char cmd[PATH_MAX + 64];
	FILE *ls;
	char name[PATH_MAX];
	int found = 0;
	struct stat st;
	char dir[PATH_MAX + 32], file[2 * PATH_MAX + 64];

	(void)state;
	/* Like /tmp: sticky, writable by all. */
	assert_int_equal(syscall(SYS_mkdirat, AT_FDCWD, P(1, "tmpdir"), 0755), 0);
	assert_int_equal(chmod(P(1, "tmpdir"), 01777), 0);
	snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", P(1, "tmpdir"));
	assert_int_equal(run_child("size", P(0, "deflog"), env), 0);
	/* In a directory of the user's own: <TMPDIR>/rcuwalk-<euid>, 0700;
	 * the log 0600 (issue 23: it was 0644, in TMPDIR itself). */
	snprintf(dir, sizeof(dir), "%s/rcuwalk-%u", P(1, "tmpdir"), (unsigned)geteuid());
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(cmd, sizeof(cmd), "ls %s", dir);
	ls = popen(cmd, "r");
	assert_non_null(ls);
	while (fgets(name, sizeof(name), ls)) {
		int pid = 0;
		char tail[16] = "";

		if (sscanf(name, "rcuwalk-verify.%d.%15s", &pid, tail) == 2 && pid > 0 &&
		    !strcmp(tail, "log")) {
			found++;
			snprintf(file, sizeof(file), "%s/%s", dir, strtok(name, "\n"));
			assert_int_equal(lstat(file, &st), 0);
			assert_int_equal(st.st_mode & 07777, 0600);
		}
	}
	pclose(ls);
	assert_int_equal(found, 1);
}

/* Files of another user for the tests below: root only (chown).  Says
 * whether the kernel's own protections are on (then the case is also the
 * kernel's to refuse, and the test cannot fail without the shim's rule). */
static int foreign_ok(void)
{
	char b[8] = "";
	FILE *f;

	if (geteuid() != 0) {
		print_message("not root: no file of another user to plant: skipping\n");
		return 0;
	}
	for (int i = 0; i < 2; i++) {
		f = fopen(i ? "/proc/sys/fs/protected_symlinks" : "/proc/sys/fs/protected_regular", "r");
		if (f && fgets(b, sizeof(b), f) && atoi(b) != 0)
			print_message("note: fs.%s=%d here: the kernel refuses the plant too\n",
				      i ? "protected_symlinks" : "protected_regular", atoi(b));
		if (f)
			fclose(f);
	}
	return 1;
}

static long file_size(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* TMPDIR/rcuwalk-<euid> made first by another user: no log in it (nor
 * anywhere); the program still gets the kernel's answers. */
static void test_verify_default_log_not_written_in_a_directory_of_another_user(void **state)
{
	char tmpenv[PATH_MAX + 16], dir[PATH_MAX + 32];
	const char *env[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=size", tmpenv, NULL };
	DIR *d;
	int n = 0;

	(void)state;
	if (!foreign_ok())
		skip();
	assert_int_equal(syscall(SYS_mkdirat, AT_FDCWD, P(1, "tmpdir2"), 0755), 0);
	assert_int_equal(chmod(P(1, "tmpdir2"), 01777), 0);
	snprintf(dir, sizeof(dir), "%s/rcuwalk-%u", P(1, "tmpdir2"), (unsigned)geteuid());
	assert_int_equal(mkdir(dir, 0777), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0);
	snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", P(1, "tmpdir2"));
	assert_int_equal(run_child("size", P(0, "foreigndir"), env), 0);
	d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 0);
	/* Nor in TMPDIR itself (where it was before). */
	d = opendir(P(1, "tmpdir2"));
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 1); /* rcuwalk-<euid> alone */
}

/* RCUWALK_STATS and RCUWALK_VERIFY_LOG naming a symlink that another user
 * planted in a sticky directory writable by all: not followed (the target
 * stays empty); naming a file another user planted there: not written. */
static void test_verify_and_stats_files_planted_by_another_user_not_written(void **state)
{
	char statsenv[PATH_MAX + 32], logenv[PATH_MAX + 32], target[PATH_MAX];
	const char *env[] = { "RCUWALK_VERIFY=1", "RCUWALK_TEST_CORRUPT=size", statsenv, logenv,
			      NULL };
	int fd;

	(void)state;
	if (!foreign_ok())
		skip();
	assert_int_equal(syscall(SYS_mkdirat, AT_FDCWD, P(1, "sticky"), 0755), 0);
	assert_int_equal(chmod(P(1, "sticky"), 01777), 0);
	snprintf(target, sizeof(target), "%s", P(0, "victim"));
	fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	close(fd);
	/* Symlinks of uid 65534. */
	assert_int_equal(symlink(target, P(1, "sticky/rec")), 0);
	assert_int_equal(lchown(P(1, "sticky/rec"), 65534, 65534), 0);
	assert_int_equal(symlink(target, P(1, "sticky/log")), 0);
	assert_int_equal(lchown(P(1, "sticky/log"), 65534, 65534), 0);
	snprintf(statsenv, sizeof(statsenv), "RCUWALK_STATS=%s", P(1, "sticky/rec"));
	snprintf(logenv, sizeof(logenv), "RCUWALK_VERIFY_LOG=%s", P(1, "sticky/log"));
	assert_int_equal(run_child("size", P(0, "plantlink"), env), 0);
	assert_int_equal(file_size(target), 0);
	/* Regular files of uid 65534, 0666. */
	assert_int_equal(unlink(P(1, "sticky/rec")), 0);
	assert_int_equal(unlink(P(1, "sticky/log")), 0);
	for (int i = 0; i < 2; i++) {
		const char *p = P(1, i ? "sticky/log" : "sticky/rec");

		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, 0666), 0);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		close(fd);
	}
	assert_int_equal(run_child("size", P(0, "plantfile"), env), 0);
	assert_int_equal(file_size(P(1, "sticky/rec")), 0);
	assert_int_equal(file_size(P(1, "sticky/log")), 0);
	/* The user's own symlink there is followed (the user's choice). */
	assert_int_equal(unlink(P(1, "sticky/rec")), 0);
	assert_int_equal(symlink(target, P(1, "sticky/rec")), 0);
	assert_int_equal(run_child("size", P(0, "ownlink"), env), 0);
	assert_true(file_size(target) > 0);
}

static void test_verify_without_injection_logs_nothing_and_counts_zero(void **state)
{
	char logenv[PATH_MAX + 32], recenv[PATH_MAX + 32];
	const char *env[] = { "RCUWALK_VERIFY=1", logenv, recenv, NULL };
	struct stat st;

	(void)state;
	snprintf(logenv, sizeof(logenv), "RCUWALK_VERIFY_LOG=%s", P(1, "clean.log"));
	snprintf(recenv, sizeof(recenv), "RCUWALK_STATS=%s", P(2, "clean.rec"));
	assert_int_equal(run_child("all", P(0, "clean"), env), 0);
	errno = 0;
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, P(1, "clean.log"), &st, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(record_sum(P(2, "clean.rec"), "mismatches"), 0);
	/* Answers were served from the cache, and so verified. */
	assert_true(record_sum(P(2, "clean.rec"), "hits") > 100);
	assert_true(record_sum(P(2, "clean.rec"), "neg_hits") > 20);
}

static int setup(void **state)
{
	long n;

	(void)state;
	strcpy(g_dir, "/tmp/rcuwalk-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", g_self, sizeof(g_self) - 1);
	if (n <= 0)
		return -1;
	g_self[n] = '\0';
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_injected_corruption_reaches_the_program_without_verify),
		cmocka_unit_test(test_verify_corrupted_size_is_logged_and_the_program_gets_the_kernels),
		cmocka_unit_test(test_verify_corrupted_errors_are_logged_for_stat_open_and_access),
		cmocka_unit_test(test_verify_corrupted_access_and_names_are_logged),
		cmocka_unit_test(test_verify_default_log_is_per_process_in_tmpdir),
		cmocka_unit_test(test_verify_default_log_not_written_in_a_directory_of_another_user),
		cmocka_unit_test(test_verify_and_stats_files_planted_by_another_user_not_written),
		cmocka_unit_test(test_verify_without_injection_logs_nothing_and_counts_zero),
	};

	if (argc == 4 && !strcmp(argv[1], "--workload"))
		return workload(argv[2], argv[3]);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;
	return cmocka_run_group_tests(tests, setup, teardown);
}
