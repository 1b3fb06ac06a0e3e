/* SPDX-License-Identifier: MIT */
/*
 * test_inode_flags.c - a process's own inode-flag changes are seen at once
 * (coherence contract, clause 1).  FS_IOC_SETFLAGS (chattr) and
 * FS_IOC_FSSETXATTR change stx_attributes and st_ctime, and the kernel sends
 * no inotify event for them: the shim's ioctl() forgets the inode's cached
 * attributes after a successful one (preload/shim.c, changes_inode).
 *
 * Each test caches statx and stat answers of a file or directory (hits:
 * asked twice, RCUWALK_RACY_MS=0), changes a flag through ioctl(), and
 * compares statx and stat through the shim with the raw system calls.  A
 * filesystem that refuses the flag ioctls (tmpfs before 6.0, overlayfs on
 * some kernels) makes the test skip, saying so.
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/fs.h>

#include <cmocka.h>

#include "coh_helpers.h"

/* statx through the shim and raw agree on what the flags show. */
static void assert_statx_exact(const char *p, uint64_t attr, int set)
{
	struct statx a, b;
	struct stat sa, sb;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &a), 0);
	assert_int_equal(syscall(SYS_statx, AT_FDCWD, p, 0, STATX_BASIC_STATS, &b), 0);
	assert_true(b.stx_attributes_mask & attr);
	if (set)
		assert_true(b.stx_attributes & attr);
	else
		assert_false(b.stx_attributes & attr);
	assert_int_equal(a.stx_attributes, b.stx_attributes);
	assert_int_equal(a.stx_ctime.tv_sec, b.stx_ctime.tv_sec);
	assert_int_equal(a.stx_ctime.tv_nsec, b.stx_ctime.tv_nsec);
	assert_int_equal(stat(p, &sa), 0);
	assert_int_equal(syscall(SYS_newfstatat, AT_FDCWD, p, &sb, 0), 0);
	assert_int_equal(sa.st_ctim.tv_sec, sb.st_ctim.tv_sec);
	assert_int_equal(sa.st_ctim.tv_nsec, sb.st_ctim.tv_nsec);
}

static void cache(const char *p)
{
	struct statx x;
	struct stat st;

	for (int i = 0; i < 2; i++) {
		statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &x);
		stat(p, &st);
	}
}

/* The filesystem under the scratch directory refuses flag ioctls. */
static void skip_msg_(int err, const char *p)
{
	print_message("flag ioctls refused on %s (%s): skipped\n", p, strerror(err));
	skip();
}

/* Flip `flag` with FS_IOC_GETFLAGS/SETFLAGS; -1 (skip) if refused. */
static int setflags(int fd, long flag, int on)
{
	long fl = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) != 0)
		return -1;
	fl = on ? fl | flag : fl & ~flag;
	return ioctl(fd, FS_IOC_SETFLAGS, &fl);
}

static void flags_case(const char *name, int dir)
{
	char p[PLEN];
	int fd;

	join(p, g_scratch, name);
	if (dir)
		assert_int_equal(raw_mkdir(p), 0);
	else
		assert_int_equal(raw_write_file(p, 10, 0), 0);
	fd = open(p, O_RDONLY | (dir ? O_DIRECTORY : 0));
	assert_true(fd >= 0);
	cache(p);
	if (setflags(fd, FS_NODUMP_FL, 1) != 0) {
		int err = errno;

		close(fd);
		skip_msg_(err, p);
		return;
	}
	assert_statx_exact(p, STATX_ATTR_NODUMP, 1);
	cache(p);
	assert_int_equal(setflags(fd, FS_NODUMP_FL, 0), 0);
	assert_statx_exact(p, STATX_ATTR_NODUMP, 0);
	/* chattr +a needs CAP_LINUX_IMMUTABLE: tried, and checked when granted. */
	cache(p);
	if (setflags(fd, FS_APPEND_FL, 1) == 0) {
		assert_statx_exact(p, STATX_ATTR_APPEND, 1);
		cache(p);
		assert_int_equal(setflags(fd, FS_APPEND_FL, 0), 0);
		assert_statx_exact(p, STATX_ATTR_APPEND, 0);
	}
	close(fd);
}

static void test_inode_flags_setflags_on_file_seen_by_next_statx(void **state)
{
	(void)state;
	flags_case("file", 0);
}

static void test_inode_flags_setflags_on_directory_seen_by_next_statx(void **state)
{
	(void)state;
	flags_case("dir", 1);
}

static void test_inode_flags_fssetxattr_seen_by_next_statx(void **state)
{
	char p[PLEN];
	struct fsxattr fa;
	int fd;

	(void)state;
	join(p, g_scratch, "xfile");
	assert_int_equal(raw_write_file(p, 10, 0), 0);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	cache(p);
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) != 0) {
		int err = errno;

		close(fd);
		skip_msg_(err, p);
		return;
	}
	fa.fsx_xflags |= FS_XFLAG_NODUMP;
	assert_int_equal(ioctl(fd, FS_IOC_FSSETXATTR, &fa), 0);
	assert_statx_exact(p, STATX_ATTR_NODUMP, 1);
	cache(p);
	fa.fsx_xflags &= ~(unsigned int)FS_XFLAG_NODUMP;
	assert_int_equal(ioctl(fd, FS_IOC_FSSETXATTR, &fa), 0);
	assert_statx_exact(p, STATX_ATTR_NODUMP, 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inode_flags_setflags_on_file_seen_by_next_statx),
		cmocka_unit_test(test_inode_flags_setflags_on_directory_seen_by_next_statx),
		cmocka_unit_test(test_inode_flags_fssetxattr_seen_by_next_statx),
	};

	if (!getenv("RCUWALK_TEST_SHIM")) {
		fprintf(stderr, "test_inode_flags: run with librcuwalk.so preloaded (ctest does)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
