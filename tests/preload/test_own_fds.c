/*
 * test_own_fds.c - the shim's own fds (its inotify instance, io_uring and
 * mountinfo numbers, all above 511) stay out of a listing of the process's
 * fd table through readdir (preload/shim.c, hidden_entry): /proc/self/fd,
 * /dev/fd, /proc/<pid>/fd, /proc/self/task/<tid>/fd, /proc/self/fdinfo.
 * A raw getdents64 still shows them: the tests use it to know they exist,
 * so that a listing that hides nothing because there was nothing to hide
 * cannot pass.
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
	return fd >= 256 && (!strcmp(t, "anon_inode:inotify") || !strcmp(t, "anon_inode:[io_uring]") ||
			     strstr(t, "/mountinfo") != NULL);
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
	close(pfd[0]);
	close(pfd[1]);
	assert_int_equal(wait_bounded(pid, 30), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_fds_proc_self_fd_lists_only_the_programs),
		cmocka_unit_test(test_own_fds_dev_fd_and_pid_and_task_dirs_list_only_the_programs),
		cmocka_unit_test(test_own_fds_parents_fd_dir_listed_whole_by_child),
		cmocka_unit_test(test_own_fds_python_pass_fds_child_sees_only_given_fds),
	};

	if (!getenv("RCUWALK_TEST_SHIM")) {
		fprintf(stderr, "test_own_fds: run with librcuwalk.so preloaded (ctest does)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, scratch_teardown);
}
