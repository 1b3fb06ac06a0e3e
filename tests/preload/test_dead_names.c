/* SPDX-License-Identifier: MIT */
/*
 * test_dead_names.c - changes that inotify reports under a name the file no
 * longer has (preloaded; run with RCUWALK_RACY_MS=0 so that the attributes of
 * the files made here are cached).
 *
 * A write or fchmod through a descriptor opened under name b is reported as
 * IN_MODIFY/IN_ATTRIB "b" even after b was unlinked or renamed over while the
 * inode lives on as c; an O_TMPFILE given a name is reported as "#<ino>"; a
 * hard link made and removed before the shim's event reader looked at it
 * changes c's st_nlink/st_ctime with no event about c.  In every case the
 * cached answer for c must still be the kernel's after the sync point.
 * Mutations by helpers are raw syscalls in a fork()ed child, then waitpid().
 */
#define _GNU_SOURCE
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static char root[64];
static char pbuf[4][PATH_MAX];

static const char *P(int slot, const char *rel)
{
	snprintf(pbuf[slot], sizeof(pbuf[slot]), "%s/%s", root, rel);
	return pbuf[slot];
}

static int setup(void **state)
{
	(void)state;
	strcpy(root, "/tmp/rcuwalk-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	if (syscall(SYS_mkdirat, AT_FDCWD, P(0, "d1"), 0755) != 0 ||
	    syscall(SYS_mkdirat, AT_FDCWD, P(0, "d2"), 0755) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The coarse clock the kernel stamps ctime with must move between the
 * states compared. */
static void tick(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static void raw_stat(const char *path, struct stat *st)
{
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW), 0);
}

/* lstat through the shim equals the kernel's, field by field (never atime). */
static void assert_lstat_exact(const char *path)
{
	struct stat s, k;

	memset(&s, 0, sizeof(s));
	assert_int_equal(lstat(path, &s), 0);
	raw_stat(path, &k);
	assert_int_equal(s.st_ino, k.st_ino);
	assert_int_equal(s.st_mode, k.st_mode);
	assert_int_equal(s.st_nlink, k.st_nlink);
	assert_int_equal(s.st_size, k.st_size);
	assert_int_equal(s.st_blocks, k.st_blocks);
	assert_int_equal(s.st_mtim.tv_sec, k.st_mtim.tv_sec);
	assert_int_equal(s.st_mtim.tv_nsec, k.st_mtim.tv_nsec);
	assert_int_equal(s.st_ctim.tv_sec, k.st_ctim.tv_sec);
	assert_int_equal(s.st_ctim.tv_nsec, k.st_ctim.tv_nsec);
}

/* Cache path's attributes: two lookups, the second answered from the cache. */
static void cache_attrs(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(lstat(path, &st), 0);
}

static void make_file(const char *path, mode_t mode)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_EXCL | O_WRONLY, mode);

	assert_true(fd >= 0);
	syscall(SYS_fchmod, fd, mode);
	syscall(SYS_close, fd);
}

enum helper_op { H_LINK, H_UNLINK, H_RENAME };
struct hop {
	enum helper_op op;
	const char *a, *b;
};

/* Run ops as raw syscalls in a child, then reap it (the sync point). */
static void helper(const struct hop *ops, int n)
{
	pid_t pid = fork();
	int status = -1;

	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < n; i++) {
			long r = -1;

			if (ops[i].op == H_LINK)
				r = syscall(SYS_linkat, AT_FDCWD, ops[i].a, AT_FDCWD, ops[i].b, 0);
			else if (ops[i].op == H_UNLINK)
				r = syscall(SYS_unlinkat, AT_FDCWD, ops[i].a, 0);
			else
				r = syscall(SYS_renameat2, AT_FDCWD, ops[i].a, AT_FDCWD, ops[i].b, 0);
			if (r != 0)
				syscall(SYS_exit_group, 10 + i);
		}
		syscall(SYS_exit_group, 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* open b; ln b c; rm b (helper); cache c; write through the fd: the event says
 * "b" only. */
static void dead_name_write(const char *b, const char *c)
{
	char buf[100];
	int fd;
	struct hop ops[] = { { H_LINK, b, c }, { H_UNLINK, b, NULL } };

	make_file(b, 0644);
	fd = open(b, O_RDWR);
	assert_true(fd >= 0);
	helper(ops, 2);
	cache_attrs(c);
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	assert_lstat_exact(c);
	assert_int_equal(ftruncate(fd, 7), 0);
	assert_lstat_exact(c);
	close(fd);
	unlink(c);
}

static void test_dead_names_write_through_unlinked_name_same_dir(void **state)
{
	(void)state;
	dead_name_write(P(0, "d1/b"), P(1, "d1/c"));
}

static void test_dead_names_write_through_unlinked_name_other_dir(void **state)
{
	(void)state;
	dead_name_write(P(0, "d1/b2"), P(1, "d2/c2"));
}

/* open b; ln b c; mv x b (over it); the fd's events say "b", now another file. */
static void test_dead_names_write_through_renamed_over_name(void **state)
{
	const char *b = P(0, "d1/rb"), *c = P(1, "d2/rc"), *x = P(2, "d1/rx");
	struct hop ops[] = { { H_LINK, b, c }, { H_RENAME, x, b } };
	int fd;

	(void)state;
	make_file(b, 0644);
	make_file(x, 0644);
	fd = open(b, O_RDWR);
	assert_true(fd >= 0);
	helper(ops, 2);
	cache_attrs(c);
	cache_attrs(b);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	assert_lstat_exact(c);
	assert_lstat_exact(b);
	close(fd);
	unlink(c);
	unlink(b);
}

/* fchmod through the dead name: c's cached access facts must go too. */
static void test_dead_names_fchmod_through_unlinked_name_drops_access(void **state)
{
	const char *b = P(0, "d1/xb"), *c = P(1, "d2/xc");
	struct hop ops[] = { { H_LINK, b, c }, { H_UNLINK, b, NULL } };
	int fd;

	(void)state;
	make_file(b, 0755);
	fd = open(b, O_RDONLY);
	assert_true(fd >= 0);
	helper(ops, 2);
	assert_int_equal(access(c, X_OK), 0);
	assert_int_equal(access(c, X_OK), 0);
	cache_attrs(c);
	assert_int_equal(fchmod(fd, 0644), 0);
	errno = 0;
	assert_int_equal(access(c, X_OK), syscall(SYS_faccessat2, AT_FDCWD, c, X_OK, 0));
	assert_lstat_exact(c);
	close(fd);
	unlink(c);
}

/* An O_TMPFILE given a name: its events say "#<inode number>". */
static void test_dead_names_write_through_linked_tmpfile(void **state)
{
	const char *c = P(1, "d1/tc");
	char proc[64];
	int fd;

	(void)state;
	fd = open(P(0, "d1"), O_TMPFILE | O_RDWR, 0644);
	if (fd < 0)
		skip(); /* the filesystem has no O_TMPFILE */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	assert_int_equal(linkat(AT_FDCWD, proc, AT_FDCWD, c, AT_SYMLINK_FOLLOW), 0);
	cache_attrs(c);
	assert_int_equal(write(fd, "abc", 3), 3);
	assert_lstat_exact(c);
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_lstat_exact(c);
	close(fd);
	unlink(c);
}

/* ln c b; rm b before the reader looked: c's ctime moved, no event names c. */
static void test_dead_names_link_made_and_removed_moves_ctime(void **state)
{
	const char *c = P(0, "d1/lc"), *b = P(1, "d2/lb");
	struct hop ops[] = { { H_LINK, c, b }, { H_UNLINK, b, NULL } };
	struct stat before, after;

	(void)state;
	make_file(c, 0644);
	cache_attrs(c);
	raw_stat(c, &before);
	tick();
	helper(ops, 2);
	raw_stat(c, &after);
	assert_true(after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
		    after.st_ctim.tv_nsec != before.st_ctim.tv_nsec); /* the test can fail */
	assert_lstat_exact(c);
	unlink(c);
}

/* ln c b; mv x b: the reader's look at b sees x's inode, not c's. */
static void test_dead_names_link_made_and_renamed_over_moves_ctime(void **state)
{
	const char *c = P(0, "d1/mc"), *b = P(1, "d1/mb"), *x = P(2, "d1/mx");
	struct hop ops[] = { { H_LINK, c, b }, { H_RENAME, x, b } };
	struct stat before, after;

	(void)state;
	make_file(c, 0644);
	make_file(x, 0644);
	cache_attrs(c);
	raw_stat(c, &before);
	tick();
	helper(ops, 2);
	raw_stat(c, &after);
	assert_true(after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
		    after.st_ctim.tv_nsec != before.st_ctim.tv_nsec);
	assert_lstat_exact(c);
	assert_lstat_exact(b);
	unlink(c);
	unlink(b);
}

/* Control: writes under a live name of a file with one link are still
 * dropped by name, and the cache still answers afterwards. */
static void test_dead_names_plain_write_still_exact(void **state)
{
	const char *c = P(0, "d2/pc");
	int fd;

	(void)state;
	make_file(c, 0644);
	fd = open(c, O_WRONLY);
	assert_true(fd >= 0);
	cache_attrs(c);
	assert_int_equal(write(fd, "abcd", 4), 4);
	assert_lstat_exact(c);
	assert_lstat_exact(c);
	close(fd);
	unlink(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dead_names_write_through_unlinked_name_same_dir),
		cmocka_unit_test(test_dead_names_write_through_unlinked_name_other_dir),
		cmocka_unit_test(test_dead_names_write_through_renamed_over_name),
		cmocka_unit_test(test_dead_names_fchmod_through_unlinked_name_drops_access),
		cmocka_unit_test(test_dead_names_write_through_linked_tmpfile),
		cmocka_unit_test(test_dead_names_link_made_and_removed_moves_ctime),
		cmocka_unit_test(test_dead_names_link_made_and_renamed_over_moves_ctime),
		cmocka_unit_test(test_dead_names_plain_write_still_exact),
	};

	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;
	return cmocka_run_group_tests(tests, setup, teardown);
}
